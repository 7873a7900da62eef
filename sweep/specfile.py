"""Loading run specs from YAML files, with ``--set key=value`` overrides.

A spec file whose name ends in ``.json`` is read with the standard library's JSON parser, and
PyYAML is imported only for YAML (it costs a tenth of a small run's start-up): benchmarks and
scripts write JSON specs. JSON is YAML, so a ``.json`` file that is not valid JSON (a comment, a
YAML-only form) is still read as YAML, as it always was.

What a spec file may hold is narrower than what YAML allows, because each of these has run a
study other than the one its author wrote:

* **Scalars follow YAML 1.2's core schema**, not PyYAML's YAML 1.1 defaults: ``yes``/``on``
  stay text (only ``true``/``false`` are booleans), ``1_000`` and ``1:30`` stay text (1.1
  reads them as 1000 and 90), ``010`` is ten (not octal eight), ``1e3`` is a number, and a
  date, ``0x10`` or ``0o17`` is text. Text
  where a number belongs is then refused by the spec's validation, naming the key.
* **A key given twice in one mapping is an error** naming both lines (YAML and JSON parsers
  keep the last silently: a spec ran with the second ``seed``). Keys merged in with ``<<:``
  may still be overridden, as YAML intends.
* **Size limits**: at most :data:`MAX_DEPTH` levels of nesting and :data:`MAX_VALUES` values
  once aliases are expanded (an alias "bomb" or a recursive alias is refused before anything
  walks it), and text that is not UTF-8 is refused, naming the byte.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable

from ..core.errors import SpecError
from ..core.spec import set_key

__all__ = ["load_spec_file", "apply_overrides", "parse_override", "MAX_DEPTH", "MAX_VALUES"]

#: Deepest nesting of mappings and lists a spec file may have (a real sweep config has five).
MAX_DEPTH = 64
#: Most values (mapping entries and list items, aliases expanded) a spec file may hold.
MAX_VALUES = 200_000


def load_spec_file(path: str | Path) -> dict[str, Any]:
    """Read a YAML spec with the safe loader (a ``.json`` file with the JSON parser).

    Raises:
        SpecError: The file is missing, is not UTF-8, is not YAML, repeats a key, is too deep
            or too large, or is not a mapping; the message names the file (and the line, where
            one is at fault).
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise SpecError(f"{path}: cannot read the spec: {error.strerror or error}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        raise SpecError(
            f"{path}:{line}: not UTF-8 text (byte 0x{raw[error.start]:02x}); save the file as UTF-8"
        ) from None
    spec = _load_json(text) if path.suffix.lower() == ".json" else None
    if spec is None:
        spec = _load_yaml(str(path), text)
    if not isinstance(spec, dict):
        raise SpecError(f"{path}: expected a mapping of spec keys, got {type(spec).__name__}")
    _check_size(spec, str(path))
    return spec


def _load_json(text: str) -> dict[str, Any] | None:
    """The JSON object ``text`` holds, or None when it holds something else, repeats a key or
    nests too deeply (then the YAML reader decides, and names the line at fault)."""
    try:
        spec = json.loads(text, object_pairs_hook=_unique_pairs)
    except (ValueError, RecursionError):
        return None
    return spec if isinstance(spec, dict) else None


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        raise ValueError("a repeated key")  # the YAML reader then reports it with its line
    return result


def _load_yaml(where: str, text: str) -> Any:
    import yaml

    try:
        return yaml.load(text, Loader=_spec_loader())  # noqa: S506 (a SafeLoader subclass)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        at = f"{where}:{mark.line + 1}" if mark is not None else where
        problem = getattr(error, "problem", None) or str(error)
        if type(error).__name__ == "RepeatedKeyError":
            raise SpecError(f"{at}: {problem}") from None
        raise SpecError(f"{at}: not valid YAML: {problem}") from None
    except RecursionError:
        raise SpecError(f"{where}: nested too deeply (at most {MAX_DEPTH} levels of mappings and lists)") from None


@lru_cache(maxsize=None)
def _spec_loader() -> type:
    """PyYAML's safe loader with YAML 1.2 core scalars and repeated keys refused (built on
    first use, so that JSON specs never import PyYAML)."""
    import re

    import yaml
    from yaml.constructor import ConstructorError, SafeConstructor

    # YAML 1.1's booleans, numbers and dates are replaced by YAML 1.2 core's booleans and
    # decimal numbers (a date is text: no spec key takes one).
    replaced = {f"tag:yaml.org,2002:{kind}" for kind in ("bool", "int", "float", "timestamp")}

    class RepeatedKeyError(ConstructorError):
        """A key given twice in one mapping."""

    class SpecLoader(yaml.SafeLoader):
        """Safe loading, YAML 1.2 core scalars, no repeated keys."""

        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            first: dict[tuple[str, str], int] = {}
            for key_node, _ in node.value:
                if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                identity = (key_node.tag, key_node.value)
                if identity in first:
                    raise RepeatedKeyError(
                        None,
                        None,
                        f"the key {key_node.value!r} is given twice (first on line {first[identity]}); give each key once",
                        key_node.start_mark,
                    )
                first[identity] = key_node.start_mark.line + 1
            return super().construct_mapping(node, deep=deep)

        def construct_decimal_int(self, node: Any) -> int:
            return int(self.construct_scalar(node))  # decimal only: 010 is ten, as in YAML 1.2

    SpecLoader.yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag not in replaced]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    SpecLoader.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))
    SpecLoader.add_implicit_resolver("tag:yaml.org,2002:int", re.compile(r"^[-+]?[0-9]+$"), list("-+0123456789"))
    SpecLoader.add_implicit_resolver(
        "tag:yaml.org,2002:float",
        re.compile(r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"),
        list("-+0123456789."),
    )
    SpecLoader.add_constructor("tag:yaml.org,2002:int", SpecLoader.construct_decimal_int)
    SpecLoader.add_constructor("tag:yaml.org,2002:float", SafeConstructor.construct_yaml_float)
    return SpecLoader


def _check_size(value: Any, where: str) -> None:
    """Refuse a spec deeper than :data:`MAX_DEPTH` or larger than :data:`MAX_VALUES` values.

    Walks without recursion, visiting a shared (aliased) value once per reference, so that an
    alias bomb or a recursive alias is stopped after :data:`MAX_VALUES` steps, not expanded.
    """
    stack: list[tuple[Any, int]] = [(value, 0)]
    count = 0
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise SpecError(f"{where}: nested too deeply (at most {MAX_DEPTH} levels of mappings and lists)")
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        for child in children:
            count += 1
            if count > MAX_VALUES:
                raise SpecError(
                    f"{where}: more than {MAX_VALUES:,} values once YAML aliases are expanded "
                    f"(an alias that repeats itself?); write the values out or split the study"
                )
            stack.append((child, depth + 1))


def parse_override(text: str) -> tuple[str, Any]:
    """Split ``a.b=value``; the value is read as YAML, as in a spec file (``1`` is a number,
    ``kill`` a string)."""
    key, sep, raw = text.partition("=")
    if not sep or not key:
        raise SpecError(f"--set {text!r}: expected KEY=VALUE, such as policy.name=fcfs")
    import yaml

    try:
        value = yaml.load(raw, Loader=_spec_loader()) if raw else None  # noqa: S506
    except yaml.YAMLError:
        value = raw
    except RecursionError:
        raise SpecError(f"--set {text[:60]!r}: nested too deeply") from None
    _check_size(value, f"--set {key.strip()}")
    return key.strip(), value


def apply_overrides(spec: dict[str, Any], overrides: Iterable[str]) -> dict[str, Any]:
    """Apply each ``KEY=VALUE`` of ``overrides`` to ``spec``, in order."""
    for text in overrides:
        key, value = parse_override(text)
        spec = set_key(spec, key, value)
    return spec
