"""The project's exception hierarchy: one base class, messages that name the bad value."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "TiersweepError",
    "SpecError",
    "TraceFormatError",
    "TraceChangedError",
    "PolicyError",
    "PlatformError",
    "first_line",
    "refuse_unknown_keys",
]


def first_line(error: BaseException) -> str:
    """An exception from a library, in one line for a one-line error message: the first line
    of its message, or its class name when the message is empty."""
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


class TiersweepError(Exception):
    """Base class of every error tiersweep raises on purpose."""


class SpecError(TiersweepError, ValueError):
    """A run spec has an unknown key or a bad value; the message names the key path."""


class TraceFormatError(TiersweepError, ValueError):
    """A workload file is malformed; the message names the file, the line and what was expected."""


class TraceChangedError(TiersweepError):
    """A trace's content is not the content a run was planned with (the file changed since its
    digest was taken); the message names the file and both digests."""


class PolicyError(TiersweepError, RuntimeError):
    """A policy proposed a decision the engine cannot apply (a bug in the policy)."""


class PlatformError(TiersweepError, RuntimeError):
    """A platform reported something impossible (a rate outside [0, 1], the wrong number of
    units held): a bug in the platform; the message names it."""


def refuse_unknown_keys(given: Mapping[str, Any], valid: Sequence[str], path: str = "") -> None:
    """Raise :class:`SpecError` for the first key of ``given`` not in ``valid``, naming its key
    path (``path.key``, or ``key`` at the top) and listing ``valid`` in the order given."""
    for key in given:
        if key not in valid:
            raise SpecError(f"{path + '.' if path else ''}{key}: unknown key; valid keys: {', '.join(valid)}")
