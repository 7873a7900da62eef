"""Loading run specs from YAML files, with ``--set key=value`` overrides."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

import yaml

from ..core.errors import SpecError
from ..core.spec import set_key

__all__ = ["load_spec_file", "apply_overrides", "parse_override"]


def load_spec_file(path: str | Path) -> dict[str, Any]:
    """Read a YAML spec with the safe loader.

    Raises:
        SpecError: The file is missing, is not YAML, or is not a mapping; the message names the
            file (and the line, for syntax errors).
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise SpecError(f"{path}: cannot read the spec: {error.strerror}") from None
    try:
        spec = yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        problem = getattr(error, "problem", None) or str(error)
        raise SpecError(f"{where}: not valid YAML: {problem}") from None
    if not isinstance(spec, dict):
        raise SpecError(f"{path}: expected a mapping of spec keys, got {type(spec).__name__}")
    return spec


def parse_override(text: str) -> tuple[str, Any]:
    """Split ``a.b=value``; the value is read as YAML (``1`` is a number, ``kill`` a string)."""
    key, sep, raw = text.partition("=")
    if not sep or not key:
        raise SpecError(f"--set {text!r}: expected KEY=VALUE, such as policy.name=fcfs")
    try:
        value = yaml.safe_load(raw) if raw else None
    except yaml.YAMLError:
        value = raw
    return key.strip(), value


def apply_overrides(spec: dict[str, Any], overrides: Iterable[str]) -> dict[str, Any]:
    """Apply each ``KEY=VALUE`` of ``overrides`` to ``spec``, in order."""
    for text in overrides:
        key, value = parse_override(text)
        spec = set_key(spec, key, value)
    return spec
