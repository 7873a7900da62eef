"""The gang scheduling family on the ``gang`` platform's Ousterhout matrix: ``gs``, ``bgs``, ``mgs``.

All three keep one queue ordered by (submit time, trace order) and start its head while it
fits in some row: among the rows that already hold a job, the first one with enough free
columns (``packing: first``) or the fullest such row (``best``), else an idle row. Busy rows
come first because the number of busy rows divides every job's rate: a job that fits beside
others should not open a new time slot. When the head fits in no row, the members differ
(Zhang, Franke, Moreira and Sivasubramaniam 2003):

=======  ======================================================================================
``gs``   it waits: plain gang scheduling (Feitelson and Jette 1997), FCFS over the matrix
``bgs``  each row is a virtual machine and runs EASY backfilling behind it: one
         :class:`~tiersweep.core.policies.backfill.Easy` per row, configured through its hooks
``mgs``  running jobs move between rows to make room for it; and a row whose jobs all fit in
         the other busy rows is emptied into them, so that every job gets a larger share
=======  ======================================================================================

With ``mpl: 1`` there is one row and nothing to move: ``gs`` is ``fcfs`` and ``bgs`` is
``easy``, start for start (a test checks it on real logs).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, cast

from ..capabilities import MOVES, PLACEMENT, ROWS
from ..decisions import Decision, Move, Start
from ..params import Param, boolean, one_of
from .backfill import Easy
from .base import BasePolicy, Simulation

if TYPE_CHECKING:
    from ..jobs import Job
    from ..platforms.gang import Gang

__all__ = ["GangScheduling", "Gs", "Bgs", "Mgs", "RowEasy", "PACKINGS"]

#: How a job chooses among the busy rows it fits in.
PACKINGS = ("first", "best")

PACKING = Param(
    one_of(*PACKINGS),
    default="first",
    doc="row for a job: first (lowest busy row that fits) or best (fullest busy row that fits); "
    "an idle row only if none",
)


def _gang_platform(sim: Simulation) -> Gang:
    """The platform of ``sim``, which offers rows (every policy here requires :data:`ROWS`)."""
    return cast("Gang", sim.platform)


class GangScheduling(BasePolicy):
    """The shared skeleton: an FCFS queue whose heads are packed into rows.

    It keeps the running jobs of each row (from the lifecycle hooks), so that placing a job
    reads one free count per row, never the columns. Subclasses add what happens when the
    head fits nowhere: :meth:`make_room` (``mgs``) or backfilling (``bgs``).

    Args:
        packing: One of :data:`PACKINGS`.
    """

    requires = frozenset({PLACEMENT, ROWS})
    params = {"packing": PACKING}

    def __init__(self, packing: str = "first") -> None:
        self.packing = packing
        #: Running jobs of each row, by index (read-only for callers).
        self.row_jobs: list[dict[int, Job]] = []

    def setup(self, sim: Simulation) -> None:
        self.row_jobs = [{} for _ in range(_gang_platform(sim).rows)]

    # -- the running jobs of each row -------------------------------------------------------
    def on_start(self, job: Job) -> None:
        self.row_jobs[job.tier][job.index] = job

    def on_finish(self, job: Job) -> None:
        del self.row_jobs[job.tier][job.index]

    on_suspend = on_finish

    def on_move(self, job: Job, tier: int, nodes: Sequence[int]) -> None:
        del self.row_jobs[tier][job.index]
        self.row_jobs[job.tier][job.index] = job

    # -- placing --------------------------------------------------------------------------
    def choose_row(self, free: Sequence[int], size: int, exclude: int = -1) -> int:
        """The row for a job of ``size`` processes given each row's ``free`` columns (never
        row ``exclude``): a busy row that fits it by :attr:`packing`, else the first idle row
        that does, else -1."""
        row_jobs = self.row_jobs
        best = idle = -1
        for row, spare in enumerate(free):
            if row == exclude or spare < size:
                continue
            if not row_jobs[row]:
                if idle < 0:
                    idle = row
            elif self.packing == "first":
                return row
            elif best < 0 or spare < free[best]:
                best = row
        return best if best >= 0 else idle

    def make_room(self, sim: Simulation, job: Job) -> tuple[int, list[tuple[Job, int]]] | None:
        """Called when the queue's head ``job`` fits in no row: a row to start it in and the
        moves (running job, destination row), in order, that free enough columns there; or
        None to let it wait (the default)."""
        return None

    def decide(self, sim: Simulation) -> Iterator[Decision]:
        queue = sim.queue
        platform = _gang_platform(sim)
        rows = range(platform.rows)
        while queue:
            job = next(iter(queue.values()))
            row = self.choose_row([platform.free_count(r) for r in rows], job.size)
            if row < 0:
                plan = self.make_room(sim, job)
                if plan is None:
                    return
                row, moves = plan
                for other, destination in moves:
                    yield move_to(platform, other, destination)
            yield Start(job, row)


def move_to(platform: Gang, job: Job, row: int) -> Move:
    """The move of running ``job`` to ``row``: on its own columns when they are all idle
    there (a change of time slot only: the engine's swap, free and not a migration), else on
    the columns a start would take (a migration: the job holds its new cells for the spec's
    ``platform.migration_cost`` before it progresses again)."""
    idle = platform.idle_columns(row)
    if all(column in idle for column in job.nodes):
        return Move(job, row, list(job.nodes))
    return Move(job, row, list(idle)[: -job.size - 1 : -1])


class Gs(GangScheduling):
    """Plain gang scheduling: queue heads packed into rows; the first that fits nowhere waits."""

    name = "gs"


# -- backfilling gang scheduling ---------------------------------------------------------------------


class RowEasy(Easy):
    """EASY backfilling in one row of the matrix, seen as a virtual machine (Zhang et al. 2003).

    A configuration of :class:`~tiersweep.core.policies.backfill.Easy` through its hooks: it
    starts jobs in its row (:meth:`place`), and a job there progresses at least at the
    matrix's guaranteed rate (every row busy), so its estimated duration is the estimate
    divided by that rate (:meth:`speed`). Whatever the other rows do, a job then ends by its
    estimated end in the row (when its estimate bounds its runtime), so the row's
    reservations hold as on a dedicated machine.

    Args:
        row: Its row.
        speed: The guaranteed rate (1 in a matrix of one row).
    """

    def __init__(self, row: int, speed: float) -> None:
        super().__init__()
        self.row = row
        self.row_speed = speed
        # A plain Start is row 0, so other rows place their jobs; in a matrix of one row this
        # is EASY exactly, built the same way.
        self.places = row != 0 or speed != 1.0

    def place(self, job: Job) -> Start:
        return Start(job, self.row)

    def speed(self, units: Sequence[int] | None) -> float:
        return self.row_speed

    def best_speed(self) -> float:
        return self.row_speed

    def queue_head_started(self) -> None:
        """The queue's head started in another row: what this row derived from it (the
        head's shadow time and extra columns here) is stale."""
        self.invalidate()


class _RowPlatform:
    """The platform as one row's scheduler sees it: that row is the whole machine."""

    __slots__ = ("_platform", "_row")

    def __init__(self, platform: Gang, row: int) -> None:
        self._platform = platform
        self._row = row

    def free_count(self, tier: int = 0) -> int:
        return self._platform.free_count(self._row)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._platform, name)


class _RowView:
    """The engine as one row's scheduler sees it: the same clock, queue and jobs, and the row
    as its platform."""

    __slots__ = ("_sim", "platform")

    def __init__(self, sim: Simulation, row: int) -> None:
        self._sim = sim
        self.platform = _RowPlatform(_gang_platform(sim), row)

    @property
    def now(self) -> float:
        return self._sim.now

    @property
    def queue(self) -> dict[int, Job]:
        return self._sim.queue

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sim, name)


class Bgs(GangScheduling):
    """Backfilling gang scheduling: queue heads packed into rows, then EASY in every row.

    The first job that fits in no row holds a reservation in each row (each row's EASY sees
    the one queue, so its head is theirs); a later job backfills into the first row, in row
    order, whose EASY admits it: it fits there now and ends, at the guaranteed rate, by the
    head's shadow time in that row or uses only that row's extra columns. The lifecycle hooks
    of a job are passed on to its row's EASY.

    The rows plan with the jobs' estimates, in queue order, as Zhang et al. do. EASY++'s
    predictions and shortest-first order (``easy``'s ``prediction`` and ``order``) are not
    offered here: a predictor learns from every completion and the order indexes every queued
    job, state of the one queue that a per-row EASY would each keep a stale copy of.
    """

    name = "bgs"
    #: One EASY pass per row.
    relative_cost = 1.5

    def __init__(self, packing: str = "first") -> None:
        super().__init__(packing)
        self.members: list[RowEasy] = []
        #: Each row's view of the engine (a Simulation by forwarding, which the checker cannot follow).
        self._views: list[Simulation] = []

    def setup(self, sim: Simulation) -> None:
        super().setup(sim)
        platform = _gang_platform(sim)
        speed = platform.guaranteed_rate
        self.members = [RowEasy(row, speed) for row in range(platform.rows)]
        self._views = [cast(Simulation, _RowView(sim, row)) for row in range(platform.rows)]
        for member, view in zip(self.members, self._views):
            member.setup(view)

    def on_start(self, job: Job) -> None:
        super().on_start(job)
        self.members[job.tier].on_start(job)

    def on_finish(self, job: Job) -> None:
        super().on_finish(job)
        self.members[job.tier].on_finish(job)

    def on_suspend(self, job: Job) -> None:
        super().on_suspend(job)
        self.members[job.tier].on_suspend(job)

    def decide(self, sim: Simulation) -> Iterator[Decision]:
        started = False
        for decision in super().decide(sim):
            yield decision
            started = True
        if started:
            for member in self.members:
                member.queue_head_started()
        queue = sim.queue
        for member, view in zip(self.members, self._views):
            if not queue:
                return
            yield from member.decide(view)


# -- migration gang scheduling ---------------------------------------------------------------------


class Mgs(Gs):
    """Migration gang scheduling: plain gang scheduling whose jobs may change rows.

    * When the queue's head fits in no row, the rows are tried from the most free columns
      down: a row's jobs, largest first, are planned into other rows with room (by
      :attr:`packing`) until the head fits; the first row where that works gets it, after the
      moves.
    * After placing, a busy row whose jobs all fit in the other busy rows is emptied into
      them (``compact``; the emptiest row first, never a row that a job entered in this pass),
      so that one time slot fewer divides every job's rate.

    A job that moves onto its own columns in another row only changes time slot (free); onto
    other columns it migrates, holding its new cells for ``platform.migration_cost`` before
    it progresses again (``migrations`` counts it).

    Args:
        packing: One of :data:`PACKINGS`.
        compact: Whether rows are emptied into the others when their jobs fit there.
    """

    name = "mgs"
    requires = GangScheduling.requires | {MOVES}
    params = {
        "packing": PACKING,
        "compact": Param(boolean, default=True, doc="empty a busy row into the others when all its jobs fit there"),
    }
    #: Plans moves over the running jobs of each row.
    relative_cost = 2.0

    def __init__(self, packing: str = "first", compact: bool = True) -> None:
        super().__init__(packing)
        self.compact = compact
        self._entered: set[int] = set()  # jobs started or moved in this pass
        # Plans depend only on the running jobs' rows and the head: a count of the changes to
        # the first, the (count, head) of the last head no plan made room for, and the count at
        # which no row could be emptied. Arrival-only passes then plan nothing again.
        self._changes = 0
        self._stuck: tuple[int, int] | None = None
        self._settled = -1

    def on_start(self, job: Job) -> None:
        super().on_start(job)
        self._entered.add(job.index)
        self._changes += 1

    def on_finish(self, job: Job) -> None:
        super().on_finish(job)
        self._changes += 1

    def on_suspend(self, job: Job) -> None:
        super().on_suspend(job)
        self._changes += 1

    def on_move(self, job: Job, tier: int, nodes: Sequence[int]) -> None:
        super().on_move(job, tier, nodes)
        self._entered.add(job.index)
        self._changes += 1

    def _evict(self, free: list[int], row: int, need: int) -> list[tuple[Job, int]] | None:
        """Moves of jobs out of ``row`` (largest first) into other rows with room until
        ``need`` columns are freed there, or None if they cannot be. ``free`` is updated."""
        plan: list[tuple[Job, int]] = []
        for job in sorted(self.row_jobs[row].values(), key=lambda j: (-j.size, j.index)):
            if need <= 0:
                break
            destination = self.choose_row(free, job.size, exclude=row)
            if destination < 0 or not self.row_jobs[destination]:
                continue  # into an idle row only if the head fitted there, which it does not
            free[destination] -= job.size
            free[row] += job.size
            need -= job.size
            plan.append((job, destination))
        return plan if need <= 0 else None

    def make_room(self, sim: Simulation, job: Job) -> tuple[int, list[tuple[Job, int]]] | None:
        if self._stuck == (self._changes, job.index):
            return None
        platform = _gang_platform(sim)
        free = [platform.free_count(r) for r in range(platform.rows)]
        room = sum(free)  # every row is busy, or the head would fit in an idle one
        for row in sorted(range(len(free)), key=lambda r: (-free[r], r)):
            need = job.size - free[row]
            if need > room - free[row]:
                continue  # the other rows cannot take that many processes
            plan = self._evict(list(free), row, need)
            if plan is not None:
                return row, plan
        self._stuck = (self._changes, job.index)
        return None

    def decide(self, sim: Simulation) -> Iterator[Decision]:
        self._entered = set()
        yield from super().decide(sim)
        if self.compact:
            yield from self._compact(sim)

    def _compact(self, sim: Simulation) -> Iterator[Decision]:
        """Empty busy rows into the others while one's jobs all fit there."""
        platform = _gang_platform(sim)
        rows, capacity = platform.rows, platform.capacity
        while self._settled != self._changes:
            busy = [r for r in range(rows) if self.row_jobs[r]]
            if len(busy) < 2:
                self._settled = self._changes
                return
            free = [platform.free_count(r) for r in range(rows)]
            room = sum(free[r] for r in busy)
            deferred = False  # a row left alone only because a job entered it in this pass
            for row in sorted(busy, key=lambda r: (capacity - free[r], r)):  # fewest processes first
                held = capacity - free[row]
                if held > room - free[row]:
                    continue
                if not self._entered.isdisjoint(self.row_jobs[row]):
                    deferred = True
                    continue
                plan = self._evict(list(free), row, held)
                if plan is not None:
                    for job, destination in plan:
                        yield move_to(platform, job, destination)
                    break
            else:
                if not deferred:  # (else the next pass looks again)
                    self._settled = self._changes
                return
