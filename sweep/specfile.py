"""Loading run specs from YAML files, with ``--set key=value`` overrides.

A spec file whose name ends in ``.json`` is read with the standard library's JSON parser, and
PyYAML is imported only for YAML (it costs a tenth of a small run's start-up): benchmarks and
scripts write JSON specs. JSON is YAML, so a ``.json`` file that is not valid JSON (a comment, a
YAML-only form) is still read as YAML, as it always was.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

from ..core.errors import SpecError
from ..core.spec import set_key

__all__ = ["load_spec_file", "apply_overrides", "parse_override"]


def load_spec_file(path: str | Path) -> dict[str, Any]:
    """Read a YAML spec with the safe loader (a ``.json`` file with the JSON parser).

    Raises:
        SpecError: The file is missing, is not YAML, or is not a mapping; the message names the
            file (and the line, for syntax errors).
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise SpecError(f"{path}: cannot read the spec: {error.strerror}") from None
    spec = _load_json(text) if path.suffix.lower() == ".json" else None
    if spec is None:
        spec = _load_yaml(path, text)
    if not isinstance(spec, dict):
        raise SpecError(f"{path}: expected a mapping of spec keys, got {type(spec).__name__}")
    return spec


def _load_json(text: str) -> dict[str, Any] | None:
    """The JSON object ``text`` holds, or None when it holds something else (then YAML decides)."""
    try:
        spec = json.loads(text)
    except ValueError:
        return None
    return spec if isinstance(spec, dict) else None


def _load_yaml(path: Path, text: str) -> Any:
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        problem = getattr(error, "problem", None) or str(error)
        raise SpecError(f"{where}: not valid YAML: {problem}") from None


def parse_override(text: str) -> tuple[str, Any]:
    """Split ``a.b=value``; the value is read as YAML (``1`` is a number, ``kill`` a string)."""
    key, sep, raw = text.partition("=")
    if not sep or not key:
        raise SpecError(f"--set {text!r}: expected KEY=VALUE, such as policy.name=fcfs")
    import yaml

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
