"""Loading run specs from YAML files, with ``--set key=value`` overrides.

A spec file whose name ends in ``.json`` is read with the standard library's JSON parser, and
PyYAML is imported only for YAML (it costs a tenth of a small run's start-up): benchmarks and
scripts write JSON specs. JSON is YAML, so a ``.json`` file that is not valid JSON (a comment, a
YAML-only form) is read as YAML.

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

**Relative trace paths** (``workload.trace``) in a file are taken from the file's folder, so a
spec or config runs the same from any working directory: :func:`load_run_spec` and the sweep and
tuning config loaders rewrite them to absolute paths as they read the file. Paths given on the
command line (``--set workload.trace=...``) and in mappings built in Python are taken from the
current directory.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

from ..core.errors import SpecError
from ..core.spec import MODEL_ONLY_KEYS, TRACE_ONLY_KEYS, canonical_key, set_key
from .paths import not_a_file

__all__ = [
    "load_spec_file",
    "read_spec_file",
    "load_run_spec",
    "apply_overrides",
    "parse_override",
    "resolve_path",
    "resolve_spec_traces",
    "resolve_key_traces",
    "file_folder",
    "config_kind",
    "check_kind",
    "MAX_DEPTH",
    "MAX_VALUES",
    "MAX_DIGITS",
]

#: Deepest nesting of mappings and lists a spec file may have (a real sweep config has five).
MAX_DEPTH = 64
#: Most values (mapping entries and list items, aliases expanded) a spec file may hold.
MAX_VALUES = 200_000
#: The most digits an integer in a spec may have: one of more is larger than the largest
#: float (1.8e308), so no spec key takes it.
MAX_DIGITS = 309


def load_spec_file(path: str | Path) -> dict[str, Any]:
    """Read a YAML spec with the safe loader (a ``.json`` file with the JSON parser), as
    written: trace paths are not resolved (see :func:`load_run_spec`).

    Raises:
        SpecError: The file is missing, is not UTF-8, is not YAML, repeats a key, is too deep
            or too large, or is not a mapping; the message names the file (and the line, where
            one is at fault).
    """
    return read_spec_file(path)[0]


def read_spec_file(path: str | Path) -> tuple[dict[str, Any], str]:
    """The mapping a spec or config file holds (as :func:`load_spec_file` reads it) and the
    file's text as read (kept so that results can show the config as its author wrote it).

    Raises:
        SpecError: As :func:`load_spec_file`.
    """
    path = Path(path)
    kind = not_a_file(path)
    if kind is not None:
        raise SpecError(f"{path}: is {kind}, not a spec file")
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
    return spec, text


def load_run_spec(path: str | Path) -> dict[str, Any]:
    """Read a run spec file: :func:`load_spec_file`, then a relative ``workload.trace`` made
    absolute against the file's folder.

    Raises:
        SpecError: As :func:`load_spec_file`; or the file is a sweep or tuning config (the
            message names the command to use).
    """
    spec = load_spec_file(path)
    check_kind(spec, "run", str(path))
    return resolve_spec_traces(spec, file_folder(path))


# -- relative trace paths ----------------------------------------------------------------------

#: The dotted keys whose values are trace paths, and the section whose mapping holds one.
_TRACE_KEY = "workload.trace"
_WORKLOAD_KEY = "workload"


def file_folder(path: str | Path) -> str:
    """The absolute folder of file ``path``: where its relative trace paths are taken from."""
    return os.path.dirname(os.path.abspath(path))


def resolve_path(value: Any, folder: str | Path) -> Any:
    """``value`` made absolute against ``folder`` when it is a relative path; anything else
    (an absolute path, None, a value of the wrong type for validation to report) unchanged.

    ``..`` is folded away for readable specs and messages, except where a symbolic link on the
    way makes the folded path another file than the file system's reading of it.
    """
    if not isinstance(value, str) or not value or os.path.isabs(value):
        return value
    joined = os.path.join(os.fspath(folder), value)
    tidy = os.path.normpath(joined)
    if tidy == joined:
        return tidy
    exists = os.path.exists(joined)
    if exists != os.path.exists(tidy) or (exists and not os.path.samefile(joined, tidy)):
        return joined
    return tidy


def resolve_spec_traces(spec: Any, folder: str | Path) -> Any:
    """A copy of run spec ``spec`` with a relative ``workload.trace`` made absolute against
    ``folder`` (``spec`` itself when it holds none, or is not a spec's shape)."""
    if not isinstance(spec, Mapping) or not isinstance(spec.get("workload"), Mapping):
        return spec
    workload = spec["workload"]
    trace = resolve_path(workload.get("trace"), folder)
    if trace is workload.get("trace"):
        return spec
    return {**spec, "workload": {**workload, "trace": trace}}


def resolve_key_traces(key: Any, value: Any, folder: str | Path) -> Any:
    """The value of dotted spec key ``key`` (as a grid axis, a zip group, an exclusion rule or a
    variant gives it: one value or a list of values) with relative trace paths made absolute
    against ``folder``. Keys other than ``workload.trace`` and ``workload`` are unchanged."""
    if not isinstance(key, str) or canonical_key(key.strip()) not in (_TRACE_KEY, _WORKLOAD_KEY):
        return value

    def one(item: Any) -> Any:
        if canonical_key(key.strip()) == _TRACE_KEY:
            return resolve_path(item, folder)
        return resolve_spec_traces({"workload": item}, folder)["workload"]

    return [one(item) for item in value] if isinstance(value, list) else one(value)


# -- which kind of file ------------------------------------------------------------------------

#: Keys only a tuning config has, and keys only a sweep config has (both have name and base).
_TUNE_ONLY = ("params", "objective", "variants", "trials", "parallel", "sampler", "study")
_SWEEP_ONLY = ("grid", "grids", "zip", "exclude", "sample")
_KINDS = {"run": ("a run spec", "run"), "sweep": ("a sweep config", "sweep"), "tune": ("a tuning config", "tune")}


def config_kind(raw: Any) -> str | None:
    """``"run"``, ``"sweep"`` or ``"tune"``: what a file's mapping evidently is; None when it
    does not say (then validation reports what is wrong with it as what it was given as).

    A run spec has a ``workload`` and no ``base``; sweep and tuning configs have a ``base``
    and keys only one of them has.
    """
    if not isinstance(raw, Mapping):
        return None
    if "base" not in raw:
        return "run" if "workload" in raw else None
    if any(key in raw for key in _TUNE_ONLY):
        return "tune"
    if any(key in raw for key in _SWEEP_ONLY):
        return "sweep"
    return None


def check_kind(raw: Any, expected: str, where: str) -> None:
    """Refuse a file that is evidently another kind than ``expected`` (``run``, ``sweep`` or
    ``tune``), naming the command that takes it.

    Raises:
        SpecError: E.g. ``c.yaml: this is a sweep config, not a run spec: use tiersweep sweep c.yaml``.
    """
    kind = config_kind(raw)
    if kind is not None and kind != expected:
        raise SpecError(
            f"{where}: this is {_KINDS[kind][0]}, not {_KINDS[expected][0]}: use tiersweep {_KINDS[kind][1]} {where}"
        )


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


#: The loader's own refusals (of a file that is valid YAML): reported as they are, not as
#: "not valid YAML".
_OWN_ERRORS = ("RepeatedKeyError", "LongNumberError")


def _load_yaml(where: str, text: str) -> Any:
    import yaml

    try:
        return yaml.load(text, Loader=_spec_loader())  # noqa: S506 (a SafeLoader subclass)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        at = f"{where}:{mark.line + 1}" if mark is not None else where
        problem = getattr(error, "problem", None) or str(error)
        if type(error).__name__ in _OWN_ERRORS:
            raise SpecError(f"{at}: {problem}") from None
        raise SpecError(f"{at}: not valid YAML: {problem}") from None
    except RecursionError:
        raise SpecError(f"{where}: nested too deeply (at most {MAX_DEPTH} levels of mappings and lists)") from None


@cache
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

    class LongNumberError(ConstructorError):
        """An integer of more digits than any spec key takes."""

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
                        f"the key {key_node.value!r} is given twice (first on line {first[identity]}); "
                        "give each key once",
                        key_node.start_mark,
                    )
                first[identity] = key_node.start_mark.line + 1
            return super().construct_mapping(node, deep=deep)

        def construct_decimal_int(self, node: Any) -> int:
            text = self.construct_scalar(node)
            digits = len(text.lstrip("+-").lstrip("0"))
            if digits > MAX_DIGITS:  # (int() refuses more than 4,300 digits, with a traceback)
                raise LongNumberError(
                    None,
                    None,
                    f"a number of {digits:,} digits, larger than any spec key takes (at most {MAX_DIGITS} digits)",
                    node.start_mark,
                )
            return int(text)  # decimal only: 010 is ten, as in YAML 1.2

    SpecLoader.yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag not in replaced]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    SpecLoader.add_implicit_resolver(
        "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
    )
    SpecLoader.add_implicit_resolver("tag:yaml.org,2002:int", re.compile(r"^[-+]?[0-9]+$"), list("-+0123456789"))
    SpecLoader.add_implicit_resolver(
        "tag:yaml.org,2002:float",
        re.compile(
            r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
        ),
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
    if not raw.strip():
        # (Read as YAML, nothing is null, which validation takes for "not given": the default
        # would run in place of the value the user meant to write.)
        raise SpecError(f"--set {key.strip()}: expected a value after '=' (null to clear the key)")
    import yaml

    try:
        value = yaml.load(raw, Loader=_spec_loader())  # noqa: S506
    except yaml.YAMLError as error:
        if type(error).__name__ in _OWN_ERRORS:
            raise SpecError(f"--set {key.strip()}: {error.problem}") from None
        value = raw
    except RecursionError:
        raise SpecError(f"--set {text[:60]!r}: nested too deeply") from None
    _check_size(value, f"--set {key.strip()}")
    return key.strip(), value


#: Workload keys that only a model workload takes, and those only a trace takes (as
#: :func:`tiersweep.core.spec.validate_spec` enforces): dropped when an override switches the
#: workload from one kind to the other.
_MODEL_ONLY = ("model", *MODEL_ONLY_KEYS)
_TRACE_ONLY = ("trace", *TRACE_ONLY_KEYS)


def apply_overrides(spec: dict[str, Any], overrides: Iterable[str], folder: str | Path | None = None) -> dict[str, Any]:
    """Apply each ``KEY=VALUE`` of ``overrides`` to ``spec``, in order.

    Setting ``workload.model`` on a spec whose workload is a trace replaces the trace (and its
    trace-only keys), and setting ``workload.trace`` on a model workload replaces the model: a
    spec's workload is one or the other, and the override says which is wanted.

    Args:
        folder: Where relative trace paths of ``overrides`` are taken from (the command line
            passes the current directory); None: left as given.
    """
    for text in overrides:
        key, value = parse_override(text)
        if folder is not None:
            value = resolve_key_traces(key, value, folder)
        spec = _switch_workload_kind(spec, canonical_key(key), value)
        spec = set_key(spec, key, value)
    return spec


def _switch_workload_kind(spec: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    """``spec`` without the workload keys of the other kind when ``key`` sets the workload's
    model or trace (see :func:`apply_overrides`)."""
    workload = spec.get("workload") if isinstance(spec, Mapping) else None
    if value is None or not isinstance(workload, Mapping):
        return spec
    if key == "workload.model" and workload.get("trace") is not None:
        dropped = _TRACE_ONLY
    elif key == "workload.trace" and workload.get("model") is not None:
        dropped = _MODEL_ONLY
    else:
        return spec
    kept = {k: v for k, v in workload.items() if k not in dropped}
    if dropped is _MODEL_ONLY and kept.get("load_method") == "model":
        del kept["load_method"]  # only a model has its own arrival scaling
    return {**spec, "workload": kept}
