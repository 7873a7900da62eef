"""The records that cross the process boundary of a sweep: a :class:`Task` from the driver to a
worker and an :class:`Outcome` back.

Both are frozen and picklable (plain fields), so that every backend (in-process, a process
pool, Ray) carries them as they are; a task says everything a worker needs to run one cell,
an outcome everything the store writes of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.plan import RunPlan

__all__ = ["Task", "Outcome"]


@dataclass(frozen=True, slots=True)
class Task:
    """One cell as a worker receives it.

    Attributes:
        index: The cell's place in its sweep's grid order.
        cell_id: The cell's id.
        sweep: The sweep (or study) name its row carries.
        spec: The cell's validated spec, as stored (a relative trace path as given).
        plan: The run plan the worker runs: ``spec``'s, with the trace path made absolute,
            since workers may start in another folder.
        replicate: The cell's replicate number.
        trace_sha256: The digest of the trace content the cell id names (None without a trace):
            the worker computes from exactly these bytes or fails.
        time_limit: Seconds after which the worker stops the cell and stores it as failed
            (None: no limit).
    """

    index: int
    cell_id: str
    sweep: str
    spec: Mapping[str, Any]
    plan: RunPlan
    replicate: int
    trace_sha256: str | None = None
    time_limit: float | None = None


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a worker returns of one task.

    Attributes:
        row: The cell's ``runs`` row: column name -> value (the fixed columns, the flattened
            spec, ``report.*`` counts and the run metrics; see
            :func:`~tiersweep.sweep.batch.run_batch`).
        jobs: Per-job records, one array per column with ``cell_id`` first (only when asked for
            and the cell succeeded).
        segments: The cell's segments, one list per :data:`~tiersweep.core.segments.SEGMENT_FIELDS`
            field with ``cell_id`` first (as ``jobs``).
        code: The folder of the simulator source the worker imported and its numpy release
            (:func:`~tiersweep.core.version.code_origin`), so that a driver refusing the
            worker's code digest can say where it came from (not stored).
        path: How the worker ran the cell (:attr:`~tiersweep.core.simulate.RunResult.path`;
            "" if it failed), for the sweep's summary: a cell that fell back to the Python loop
            is slower, never different, so it is said rather than stored.
    """

    row: dict[str, Any]
    jobs: dict[str, np.ndarray] | None = None
    segments: dict[str, list] | None = None
    code: str = ""
    path: str = ""

    @property
    def cell_id(self) -> str:
        """The cell's id."""
        return self.row["cell_id"]

    @property
    def cell_index(self) -> int:
        """The cell's place in its sweep's grid order."""
        return self.row["cell_index"]

    @property
    def status(self) -> str:
        """``ok`` or ``failed``."""
        return self.row["status"]
