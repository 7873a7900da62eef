"""The contract suite's workloads: small hand-made SWF corner cases, the rules they run under,
their writer, and where the shared KTH-SP2 log is."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from ..core.platforms import platform_class
from ..core.spec import validate_platform
from ..core.workloads.swf import SWF_FIELDS

__all__ = [
    "SMALL_CAPACITY",
    "SMALL_WORKLOADS",
    "RULES",
    "KTH_TRACE",
    "DEFAULT_TRACES",
    "trace_path",
    "scaled_rows",
    "small_workload_spec",
]

#: The units the rows of :data:`SMALL_WORKLOADS` are written for.
SMALL_CAPACITY = 10

#: Small corner cases on :data:`SMALL_CAPACITY` units, ``(submit, runtime, size, requested)``
#: rows (requested -1: none): backfilling chances, equal submit times, zero runtimes, jobs
#: running past their request, jobs that take the whole machine.
SMALL_WORKLOADS: dict[str, list[tuple[float, float, int, float]]] = {
    "backfill-mix": [(0, 100, 6, 100), (1, 100, 8, 100), (2, 50, 4, 1000), (2, 30, 2, 40), (3, 300, 2, 300)],
    "same-submit": [(0, 50, 4, 50), (0, 100, 8, 100), (0, 100, 6, 100), (0, 10, 10, 20), (0, 5, 1, 5)],
    "zero-runtimes": [(0, 0, 10, 10), (0, 100, 10, 100), (0, 0, 3, 5), (100, 0, 10, 1), (100, 7, 4, 9)],
    "overruns": [(0, 200, 10, 100), (10, 50, 5, 20), (10, 80, 5, 200), (20, 10, 1, 5), (20, 40, 9, 60)],
    "whole-machine": [(0, 10, 10, 10), (0, 10, 10, 10), (5, 1, 1, 1), (30, 10, 10, 10)],
}

#: Workload rules the small workloads and the trace slice are run under: the overrun rules and
#: exact estimates (where zero-length reservations and early finishes differ).
RULES: dict[str, dict[str, str]] = {
    "kill": {"overrun": "kill"},
    "extend": {"overrun": "extend"},
    "exact": {"estimate": "exact"},
    "extend-exact": {"overrun": "extend", "estimate": "exact"},
}

#: The Parallel Workloads Archive log the trace slices come from (100 nodes).
KTH_TRACE = "KTH-SP2-1996-2.1-cln.swf.gz"
#: Where the shared traces are when neither the test class nor ``TIERSWEEP_TRACES`` says:
#: ``../shared/traces`` from the current directory (the project's tests run from its root, with
#: the shared folder beside it; the installed package cannot know where a checkout is).
DEFAULT_TRACES = Path("..") / "shared" / "traces"


# -- locating the trace ------------------------------------------------------------------------


def trace_path(name: str = KTH_TRACE, where: str | os.PathLike | None = None) -> Path:
    """The path of trace ``name``: ``where`` itself when it is a file, else in folder ``where``,
    ``$TIERSWEEP_TRACES`` or :data:`DEFAULT_TRACES`.

    Skips the calling test, naming what was looked for, when the file is absent (fails
    instead under ``CI=true``, where the traces must be there).
    """
    folder = Path(where or os.environ.get("TIERSWEEP_TRACES") or DEFAULT_TRACES)
    path = folder if folder.is_file() else folder / name
    if not path.exists():
        message = f"trace {name} not found at {path} (set TIERSWEEP_TRACES to the folder of the traces)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return path


def _swf_text(rows: Iterable[Sequence[float]], capacity: int) -> str:
    lines = [f"; MaxProcs: {capacity}", f"; MaxNodes: {capacity}"]
    for number, (submit, runtime, size, requested) in enumerate(rows, 1):
        fields = [-1.0] * len(SWF_FIELDS)
        fields[0], fields[1], fields[3], fields[4] = number, submit, runtime, size
        fields[7], fields[8] = size, requested
        lines.append(" ".join(f"{v:g}" for v in fields))
    return "\n".join(lines) + "\n"


def scaled_rows(rows: Iterable[Sequence[float]], capacity: int) -> list[tuple[float, float, int, float]]:
    """``rows`` written for :data:`SMALL_CAPACITY` units with sizes scaled to ``capacity`` units
    (at least 1; a whole-machine job stays whole-machine)."""
    return [
        (submit, runtime, max(1, min(capacity, round(size * capacity / SMALL_CAPACITY))), requested)
        for submit, runtime, size, requested in rows
    ]


def small_workload_spec(
    folder: Path,
    name: str,
    rows: Sequence[Sequence[float]],
    platform: Mapping[str, Any],
    policy: Mapping[str, Any],
    workload: Mapping[str, Any] | None = None,
    *,
    scale: bool = True,
    seed: int = 1,
) -> dict[str, Any]:
    """A spec running ``rows`` (written for :data:`SMALL_CAPACITY` units) as an SWF file in
    ``folder``, sizes scaled to the platform's job capacity when it has one (else the file's
    header gives the platform :data:`SMALL_CAPACITY` units)."""
    checked = validate_platform(platform)
    capacity = platform_class(checked["kind"]).job_capacity(checked)
    if capacity is None:
        capacity = SMALL_CAPACITY
    if scale:
        rows = scaled_rows(rows, capacity)
    text = _swf_text(rows, capacity)
    path = Path(folder) / f"{name}-{hashlib.sha256(text.encode()).hexdigest()[:16]}.swf"
    if not path.exists():
        path.write_text(text)
    workload = {**(workload or {}), "trace": str(path)}
    return {"seed": seed, "workload": workload, "platform": dict(platform), "policy": dict(policy)}
