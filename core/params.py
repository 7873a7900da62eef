"""Declared parameters: how a spec key is checked, and its default.

Policies and platforms declare their parameters with :class:`Param`, so that the spec
validator can reject unknown keys and bad values with the key path, and fill in defaults.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .errors import SpecError, refuse_unknown_keys

__all__ = [
    "Param",
    "Section",
    "validate_params",
    "validate_sections",
    "positive_int",
    "non_negative_int",
    "non_negative_number",
    "positive_number",
    "unit_interval",
    "positive_fraction",
    "cpu_range",
    "number_or",
    "number_in",
    "number_at_least",
    "one_of",
    "boolean",
    "any_string",
]

Checker = Callable[[Any], Any]


@dataclass(frozen=True)
class Param:
    """One spec key.

    Attributes:
        check: Returns the normalised value, or raises ValueError with what was expected.
        default: The value when the key is absent (None: no default; the key may stay None).
        doc: One line for ``--help`` and error messages.
    """

    check: Checker
    default: Any = None
    doc: str = ""

    def validate(self, path: str, value: Any) -> Any:
        """Check ``value`` for key ``path``; raise SpecError naming the path."""
        try:
            return self.check(value)
        except (TypeError, ValueError) as error:
            raise SpecError(f"{path}: {error}") from None


def validate_params(
    path: str, given: Any, params: Mapping[str, Param], fixed: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Check the section ``given`` (a mapping) at key path ``path`` against declared ``params``.

    The one validation path of spec sections, policies' and platforms' parameters: unknown keys
    and bad values raise :class:`SpecError` naming ``path.key`` (and the valid keys or the
    expected value); absent keys get their defaults. ``fixed`` keys (such as ``kind`` or
    ``name``) are copied as given and not checked here.

    Returns:
        A new dict: the fixed keys, then every declared key, normalised.
    """
    if not isinstance(given, Mapping):
        raise SpecError(f"{path}: expected a mapping, got {given!r}")
    fixed = fixed or {}
    out = dict(fixed)
    refuse_unknown_keys(given, sorted([*fixed, *params]), path)
    for key, param in params.items():
        value = given.get(key)
        out[key] = param.default if value is None else param.validate(f"{path}.{key}", value)
    return out


#: A check across a section's keys, once each key is checked: it takes the checked section and
#: the section as given, raises SpecError naming the key path, and may fill in the keys whose
#: defaults depend on the others.
SectionRule = Callable[[dict[str, Any], Mapping[str, Any]], None]


@dataclass(frozen=True)
class Section:
    """A part of a spec to check: what is given at ``path`` against what is declared there.

    Attributes:
        path: The key path (``seed``, ``workload``...).
        given: What the spec gives there.
        params: The section's declared keys; or one :class:`Param`, which checks ``given`` as a
            single value.
        fixed: Keys copied as given (see :func:`validate_params`).
        rule: The check across the section's keys (see :data:`SectionRule`).
    """

    path: str
    given: Any
    params: Mapping[str, Param] | Param
    fixed: Mapping[str, Any] = field(default_factory=dict)
    rule: SectionRule | None = None


def validate_sections(sections: Iterable[Section]) -> list[Any]:
    """Check ``sections`` in order, each wholly (its keys, then its rule) before the next.

    Returns:
        The checked sections, in order: a single value as its :class:`Param` normalises it, a
        section as :func:`validate_params` returns it, completed by its rule.

    Raises:
        SpecError: The first bad key, value or broken rule, naming its key path.
    """
    checked: list[Any] = []
    for section in sections:
        if isinstance(section.params, Param):
            checked.append(section.params.validate(section.path, section.given))
            continue
        out = validate_params(section.path, section.given, section.params, section.fixed)
        if section.rule is not None:
            section.rule(out, section.given)
        checked.append(out)
    return checked


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_whole(value: Any) -> bool:
    """Whether ``value`` is a finite number with no fractional part (not a bool; ``.inf``
    and ``.nan`` are not whole)."""
    return _is_number(value) and math.isfinite(value) and value == int(value)


def positive_int(value: Any) -> int:
    """An integer >= 1 (floats with no fractional part are accepted)."""
    if is_whole(value) and value >= 1:
        return int(value)
    raise ValueError(f"expected a positive integer, got {value!r}")


def int_in(low: int, high: int, why: str) -> Checker:
    """An integer from ``low`` to ``high``; ``why`` says what the upper bound protects (a
    number past it would exhaust memory or overflow a stored column long after validation)."""

    def check(value: Any) -> int:
        if is_whole(value) and low <= value <= high:
            return int(value)
        raise ValueError(f"expected an integer from {low:,} to {high:,} ({why}), got {value!r}")

    return check


def number_in(low: float, high: float, why: str) -> Checker:
    """A number from ``low`` to ``high``; ``why`` says what lies beyond the bounds (a denormal
    or a huge factor that scales to infinity, or to nothing, long after validation)."""

    def check(value: Any) -> float:
        if _is_number(value) and low <= value <= high:
            return float(value)
        raise ValueError(f"expected a number from {low:g} to {high:g} ({why}), got {value!r}")

    return check


#: The largest seed: seeds are stored in 64-bit integer columns.
MAX_SEED = 2**63 - 1
#: A seed, from 0 to :data:`MAX_SEED`.
seed_value = int_in(0, MAX_SEED, "seeds are stored as 64-bit integers")


def non_negative_int(value: Any) -> int:
    """An integer >= 0."""
    if is_whole(value) and value >= 0:
        return int(value)
    raise ValueError(f"expected a non-negative integer, got {value!r}")


def non_negative_number(value: Any) -> float:
    """A finite number >= 0."""
    if _is_number(value) and math.isfinite(value) and value >= 0:
        return float(value)
    raise ValueError(f"expected a non-negative number, got {value!r}")


def unit_interval(value: Any) -> float:
    """A number in [0, 1]."""
    if _is_number(value) and 0 <= value <= 1:
        return float(value)
    raise ValueError(f"expected a number in [0, 1], got {value!r}")


def positive_fraction(value: Any) -> float:
    """A number in (0, 1]."""
    if _is_number(value) and 0 < value <= 1:
        return float(value)
    raise ValueError(f"expected a number in (0, 1], got {value!r}")


def cpu_range(value: Any) -> list[float]:
    """``[low, high]`` with ``0 < low <= high <= 1``, or one number c for ``[c, c]``."""
    if _is_number(value):
        value = [value, value]
    if (
        isinstance(value, (list, tuple))
        and len(value) == 2
        and all(_is_number(v) for v in value)
        and 0 < value[0] <= value[1] <= 1
    ):
        return [float(value[0]), float(value[1])]
    raise ValueError(f"expected [low, high] with 0 < low <= high <= 1 (or one such number), got {value!r}")


def positive_number(value: Any) -> float:
    """A finite number > 0."""
    if _is_number(value) and math.isfinite(value) and value > 0:
        return float(value)
    raise ValueError(f"expected a positive number, got {value!r}")


def number_at_least(minimum: float) -> Checker:
    """A finite number >= ``minimum``."""

    def check(value: Any) -> float:
        if _is_number(value) and math.isfinite(value) and value >= minimum:
            return float(value)
        raise ValueError(f"expected a number >= {minimum:g}, got {value!r}")

    return check


def boolean(value: Any) -> bool:
    """true or false."""
    if isinstance(value, bool):
        return value
    raise ValueError(f"expected true or false, got {value!r}")


def any_string(value: Any) -> str:
    """A non-empty string."""
    if isinstance(value, str) and value:
        return value
    raise ValueError(f"expected a non-empty string, got {value!r}")


def one_of(*choices: Any) -> Checker:
    """One of ``choices``."""

    def check(value: Any) -> str:
        if value in choices:
            return value
        raise ValueError(f"unknown value {value!r}; valid choices: {', '.join(map(str, choices))}")

    return check


def number_or(word: str, minimum: float = 0.0) -> Checker:
    """A finite number >= ``minimum``, or the string ``word``."""

    def check(value: Any) -> float | str:
        if value == word:
            return word
        if _is_number(value) and math.isfinite(value) and value >= minimum:
            return float(value)
        raise ValueError(f"expected {word!r} or a number >= {minimum:g}, got {value!r}")

    return check
