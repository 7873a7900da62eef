"""Platform ``gang``: gang scheduling on an Ousterhout matrix (Feitelson and Jette 1997; Zhang,
Franke, Moreira and Sivasubramaniam 2003).

The machine's ``nodes`` processors are the columns of the matrix and its ``mpl`` rows (the
multiprogramming level) are time slots. A job occupies one row, on as many columns as it has
processes: one process per (column, row) cell. The rows that hold a job take turns on the
whole machine, one time slice of ``quantum`` seconds each, and each switch to the next row
costs ``switch_cost`` seconds of the slice; a row that holds nothing is skipped.

Progress is modelled as a rate (a fluid approximation of the round robin). With ``R`` rows
holding a job, every running job progresses at

* 1 when ``R`` is 1 (its row has the machine to itself: nothing to switch), and
* ``(1 - switch_cost / quantum) / R`` otherwise: a row gets one slice in every ``R``, and the
  switch into it takes ``switch_cost`` of that slice.

so rates change only when a row becomes busy or idle, and stay piecewise constant with exact
finish times. Why a rate rather than the slices themselves:

* The error is bounded and small where it matters. Under exact round robin a job's progress
  is a staircase (``quantum - switch_cost`` of work every ``R`` quanta) whose average slope is
  the fluid rate, so its finish time differs from the fluid one by less than one cycle of
  ``R x quantum`` seconds (4 x 10 s at ``mpl: 4`` with the default quantum), against runtimes
  of minutes to hours (CTC-SP2: median 21 minutes, mean 3.1 hours).
* The exact model is not better defined. Which row runs first after a change is a phase no
  trace records and no paper fixes; a slice-exact run would move finish times by up to a
  cycle on that arbitrary choice.
* Slices would cost an event per row per quantum for the whole run (hundreds of thousands
  per month of trace at 10 s slices), and rates would no longer be constant between the
  events that matter.

Where the approximation is coarse: a job shorter than a slice. The fluid model gives it
``runtime x R / (1 - switch_cost / quantum)``; round robin would give its runtime plus a wait
of up to ``(R - 1)`` quanta for its row's turn. Keep ``quantum`` small against the runtimes
studied (the default 10 s is), or read the short jobs' slowdowns with this in mind.

Bookkeeping reuses the ``nodes`` platform's building blocks: each row's idle columns are an
:class:`~tiersweep.core.platforms.nodes.IdleSet` (a start that names no columns takes the most
recently freed ones), and a ``(row, column)`` occupancy array answers the checks of named
columns. A policy that never names columns nor moves jobs, in a run that does not record them,
gets per-row counts instead (as ``nodes`` does): a start or release is then O(1).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..capabilities import MOVES, PLACEMENT, ROWS
from ..errors import PolicyError, SpecError
from ..params import Param, int_in, non_negative_number, positive_number
from .base import BasePlatform
from .nodes import MAX_NODES, IdleSet, sorted_distinct

if TYPE_CHECKING:
    from ..jobs import Job

__all__ = ["Gang", "DEFAULT_QUANTUM", "DEFAULT_SWITCH_COST", "MAX_ROWS"]

#: The default time slice, seconds: small against the runtimes of the archive's logs, so
#: that the fluid model's error (under one cycle of ``mpl`` slices) stays small (see above).
DEFAULT_QUANTUM = 10.0
#: The default cost of a switch between rows, seconds (1 % of the default slice).
DEFAULT_SWITCH_COST = 0.1
#: The most rows a matrix may have: gang schedulers ran a handful (memory bounds the
#: multiprogramming level), and each row is a tier of the records (as ``nodes`` allows 64).
MAX_ROWS = 64


class Gang(BasePlatform):
    """An Ousterhout matrix of ``mpl`` rows by ``nodes`` columns; rows take turns.

    Row ``r`` is tier ``r`` for the engine (``Start(job, tier=r)``, ``job.tier``, the per-tier
    records), but the rows are peers in round robin, not priority tiers: this platform does not
    offer ``tiers``.

    Args:
        nodes: Columns (processors), at least 1; None only for a platform that is inspected
            but never run (a run takes the size from the workload, as ``nodes`` does).
        mpl: Rows (the multiprogramming level); 1 is a dedicated machine.
        quantum: The time slice, seconds.
        switch_cost: Seconds of each slice lost to the switch into its row; less than
            ``quantum``.
        seed: The run's seed (unused: nothing here is random).

    Arguments are trusted: :func:`tiersweep.core.platforms.make_platform` checks them against
    :attr:`params` and :meth:`check_params` (the one validation path, raising ``SpecError``).
    """

    kind = "gang"
    params = {
        "nodes": Param(
            int_in(1, MAX_NODES, "each cell of the matrix takes memory"),
            default=None,
            doc="columns of the matrix: processors (default: the trace's MaxProcs)",
        ),
        "mpl": Param(
            int_in(1, MAX_ROWS, "each row is a tier of the records"),
            default=2,
            doc="rows of the matrix (multiprogramming level): jobs in different rows take turns",
        ),
        "quantum": Param(positive_number, default=DEFAULT_QUANTUM, doc="time slice of a row, seconds"),
        "switch_cost": Param(
            non_negative_number,
            default=DEFAULT_SWITCH_COST,
            doc="seconds of each slice lost to the switch between rows (less than quantum)",
        ),
    }
    CAPABILITIES = frozenset({PLACEMENT, MOVES, ROWS})

    @classmethod
    def tiers_of(cls, params: Mapping[str, Any]) -> int:
        """Row r is tier r, so the engine's per-tier records and metrics cover the rows: a
        run has ``mpl`` tiers of records."""
        return int(params.get("mpl") or cls.params["mpl"].default)

    def __init__(
        self,
        nodes: int | None,
        mpl: int = 2,
        *,
        quantum: float = DEFAULT_QUANTUM,
        switch_cost: float = DEFAULT_SWITCH_COST,
        seed: int = 0,
    ) -> None:
        self.capacity = 0 if nodes is None else nodes
        self.tiers = mpl
        self.quantum = float(quantum)
        self.switch_cost = float(switch_cost)
        #: The share of a busy row's slices that is work (the rest is switching).
        self.slice_efficiency = 1.0 - self.switch_cost / self.quantum
        # The rate of every running job by the number of busy rows (0 and 1: nothing to switch).
        self._rates = [1.0, 1.0] + [self.slice_efficiency / busy for busy in range(2, mpl + 1)]
        self._sized = nodes is not None
        self._idle = [IdleSet(self.capacity) for _ in range(mpl)]
        #: Job index per cell (row, column), -1 when idle (None while only counts are kept).
        self._occupancy: np.ndarray | None = np.full((mpl, self.capacity), -1, dtype=np.int64)
        #: Free columns per row, when only counts are kept (see :meth:`prepare`); else None.
        self._free: list[int] | None = None
        self._row_jobs = [0] * mpl  # running jobs per row
        self._busy = 0  # rows holding a job
        self._running: dict[int, Job] = {}
        # The number of busy rows the running jobs were last rated for, and the jobs started
        # since at another number (their start rate is stale if it changed back meanwhile).
        self._rated = 0
        self._fresh: list[Job] = []

    @classmethod
    def job_capacity(cls, params: Mapping[str, Any]) -> int | None:
        return params.get("nodes")

    @classmethod
    def check_params(cls, params: Mapping[str, Any]) -> None:
        if params["switch_cost"] >= params["quantum"]:
            raise SpecError(
                f"platform.switch_cost: {params['switch_cost']:g} s is not less than the quantum "
                f"({params['quantum']:g} s): a row's slice would do no work"
            )

    @property
    def capabilities(self) -> frozenset[str]:
        return self.CAPABILITIES - {MOVES} if self._free is not None else self.CAPABILITIES

    def prepare(self, requires: frozenset[str], record_units: bool) -> None:
        """Keep per-row counts of free columns instead of column ids when the policy never
        moves a job (so never names columns) and no record of the columns is kept: a start or
        a release is then O(1). Schedules are the same either way (a test checks it)."""
        if not self._sized:
            raise SpecError("platform.nodes: the gang platform was built without a size; give platform.nodes")
        if MOVES not in requires and not record_units:
            self._free = [len(idle) for idle in self._idle]
            self._idle = []
            self._occupancy = None

    # -- the rows --------------------------------------------------------------------------
    @property
    def rows(self) -> int:
        """Rows of the matrix (the multiprogramming level; :attr:`tiers` too)."""
        return self.tiers

    @property
    def busy_rows(self) -> int:
        """Rows holding at least one job now (the ``R`` of the rate)."""
        return self._busy

    def rate_with(self, busy_rows: int) -> float:
        """The rate of every running job while ``busy_rows`` rows hold a job."""
        return 1.0 if busy_rows <= 1 else self.slice_efficiency / busy_rows

    @property
    def guaranteed_rate(self) -> float:
        """The slowest a running job ever progresses: the rate with every row busy."""
        return self._rates[self.tiers]

    def idle_columns(self, row: int) -> IdleSet:
        """The idle columns of ``row`` (read-only for callers; iteration order is the reverse
        of the order a start that names no columns takes them in)."""
        if self._free is not None:
            raise PolicyError("idle_columns: the policy does not require moves, so only free columns are counted")
        return self._idle[row]

    def occupant(self, column: int, row: int) -> int:
        """Index of the job whose process holds cell (``row``, ``column``), or -1."""
        if self._occupancy is None:
            raise PolicyError("occupant: the policy does not require moves, so only free columns are counted")
        return int(self._occupancy[row, column])

    # -- resources -------------------------------------------------------------------------
    def free_count(self, tier: int = 0) -> int:
        if self._free is not None:
            return self._free[tier]
        return len(self._idle[tier])

    def _check_row(self, row: int) -> str | None:
        if not 0 <= row < self.tiers:
            return f"row {row} does not exist in a matrix of {self.tiers} row(s)"
        return None

    def _check_columns(self, job: Job, row: int, nodes: Sequence[int], owner: int) -> str | None:
        """Why ``job`` cannot hold columns ``nodes`` of ``row``, cells held by job ``owner``
        counting as free (a job moving within its own row), or None."""
        if len(nodes) != job.size:
            return f"names {len(nodes)} columns for a job of size {job.size}"
        ids = np.asarray(nodes)
        if ids.dtype.kind not in "iu":
            return f"names columns that are not integers ({ids.dtype})"
        outside = (ids < 0) | (ids >= self.capacity)
        if outside.any():
            return f"column {ids[outside.argmax()]} does not exist (0..{self.capacity - 1})"
        if len(sorted_distinct(ids.astype(np.int64))) != len(ids):
            return "names a column twice (one process per cell)"
        occupancy = self._occupancy
        assert occupancy is not None  # kept whenever columns can be named (self._free is None)
        occupants = occupancy[row, ids]
        busy = (occupants != -1) & (occupants != owner)
        if busy.any():
            return f"cell (row {row}, column {ids[busy.argmax()]}) is busy"
        return None

    def check_start(self, job: Job, tier: int, nodes: Sequence[int] | None) -> str | None:
        problem = self._check_row(tier)
        if problem is not None:
            return problem
        if nodes is None:
            free = self.free_count(tier)
            return None if job.size <= free else f"needs {job.size} columns in row {tier}, {free} free"
        if self._free is not None:
            return "names columns, but the policy does not require moves (only free columns are counted)"
        return self._check_columns(job, tier, nodes, -1)

    def check_move(self, job: Job, tier: int, nodes: Sequence[int]) -> str | None:
        problem = self._check_row(tier)
        if problem is not None:
            return problem
        if self._free is not None:
            return f"the policy does not require {MOVES!r}, so only free columns are counted"
        return self._check_columns(job, tier, nodes, job.index if tier == job.tier else -1)

    def start(self, job: Job, tier: int, nodes: Sequence[int] | None) -> tuple[Sequence[int], float]:
        index = job.index
        if self._free is not None:
            self._free[tier] -= job.size
            held: Sequence[int] = range(job.size)  # as many units as processes; which ones, nobody asks
        else:
            occupancy = self._occupancy
            assert occupancy is not None  # kept whenever free columns are not just counted
            taken = self._idle[tier].claim(job.size, nodes)
            occupancy[tier, taken] = index
            held = taken.tolist()
        self._running[index] = job
        jobs_in_row = self._row_jobs[tier]
        self._row_jobs[tier] = jobs_in_row + 1
        if jobs_in_row == 0:
            self._busy += 1
            self.rates_dirty = True
        if self._busy != self._rated:
            # Rated for a number of busy rows that may change back before the next report.
            self._fresh.append(job)
            self.rates_dirty = True
        return held, self._rates[self._busy]

    def release(self, job: Job) -> None:
        row = job.tier
        if self._free is not None:
            self._free[row] += job.size
        else:
            occupancy = self._occupancy
            assert occupancy is not None  # kept whenever free columns are not just counted
            freed = np.array(job.nodes, dtype=np.int64)
            occupancy[row, freed] = -1
            self._idle[row].extend(freed)
        del self._running[job.index]
        self._row_jobs[row] -= 1
        if not self._row_jobs[row]:
            self._busy -= 1
            self.rates_dirty = True

    def move(self, job: Job, tier: int, nodes: Sequence[int]) -> tuple[Sequence[int], float]:
        self.release(job)
        return self.start(job, tier, nodes)

    # -- progress --------------------------------------------------------------------------
    def rate_changes(self) -> list[tuple[Job, float]]:
        """Every running job at the new rate when the number of busy rows changed since the
        last report; else only the jobs started meanwhile at another number (the engine
        skips a job whose rate is unchanged)."""
        self.rates_dirty = False
        fresh, self._fresh = self._fresh, []
        busy = self._busy
        rate = self._rates[busy]
        if busy != self._rated:
            self._rated = busy
            return [(job, rate) for job in self._running.values()]
        running = self._running
        return [(job, rate) for job in fresh if running.get(job.index) is job]
