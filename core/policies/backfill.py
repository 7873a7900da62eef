"""The backfilling family: FCFS, EASY, conservative and selective backfilling.

All four share one skeleton: the queue is ordered by (submit time, trace order); queue heads
start while they fit; then the rest of the queue is scanned and a job may jump ahead
("backfill") if it delays no job that holds a reservation. They differ only in which queued
jobs hold reservations:

=================  ===========================================================================
``fcfs``           no backfilling at all: the scan stops at the first job that does not fit
``easy``           the first job that does not fit (Lifka 1995; Mu'alem & Feitelson 2001)
``conservative``   every queued job, in queue order
``selective``      jobs whose XFactor ``(wait + estimate) / estimate`` has reached a starvation
                   threshold (Srinivasan et al. 2002; paper 002), fixed or adaptive
=================  ===========================================================================

Reservations are kept in an availability profile (free processors over future time, from the
running jobs' estimated ends), rebuilt at each pass where it is needed, so a reservation never
moves later. EASY, with a single reservation, uses the equivalent textbook shadow-time /
extra-processors form, which is O(1) per candidate; a test checks the two forms agree.

Estimated ends come from the jobs' ``estimate`` (set by the workload's ``estimate`` rule); a
running job past its estimated end (possible with ``overrun: extend`` or ``factor:<f>`` below
1) is expected to end at the next representable instant after now.
"""

from __future__ import annotations

import bisect
import math
from typing import TYPE_CHECKING, Iterator, Sequence

from ..capabilities import PLACEMENT
from ..decisions import Decision, Start
from .base import BasePolicy
from .starvation import XFACTOR_THRESHOLD, StarvationThreshold, xfactor

if TYPE_CHECKING:
    from ..engine import Engine
    from ..jobs import Job

__all__ = ["Backfill", "Fcfs", "Easy", "Conservative", "Selective", "Profile", "xfactor"]


class Profile:
    """Free processors over future time, as a step function.

    ``free[i]`` processors are free from ``times[i]`` until ``times[i + 1]`` (the last step
    lasts forever).

    Args:
        now: The current time (first breakpoint).
        free: Processors free now.
        ends: ``(estimated end, size)`` of running jobs, sorted by end.
    """

    __slots__ = ("times", "free")

    def __init__(self, now: float, free: int, ends: list[tuple[float, int]]) -> None:
        times = [now]
        frees = [free]
        soon = math.nextafter(now, math.inf)
        for end, size in ends:
            # A job past its estimated end still holds its processors now; expect it next.
            end = end if end > now else soon
            if end <= times[-1]:
                frees[-1] += size
            else:
                times.append(end)
                frees.append(frees[-1] + size)
        self.times = times
        self.free = frees

    def earliest(self, size: int, duration: float) -> float:
        """The earliest breakpoint from which ``size`` processors stay free for ``duration``."""
        times, free = self.times, self.free
        n = len(times)
        i = 0
        while i < n:
            if free[i] < size:
                i += 1
                continue
            end = times[i] + duration
            j = i + 1
            while j < n and times[j] < end and free[j] >= size:
                j += 1
            if j == n or times[j] >= end:
                return times[i]
            i = j + 1  # step j is too low: no start before it can work
        return math.inf  # larger than the machine

    def fits_now(self, size: int, duration: float) -> bool:
        """Whether ``size`` processors stay free from now for ``duration``."""
        times, free = self.times, self.free
        if free[0] < size:
            return False
        end = times[0] + duration
        for j in range(1, len(times)):
            if times[j] >= end:
                return True
            if free[j] < size:
                return False
        return True

    def _split(self, t: float) -> int:
        """Make ``t`` a breakpoint; return its position."""
        i = bisect.bisect_left(self.times, t)
        if i < len(self.times) and self.times[i] == t:
            return i
        self.times.insert(i, t)
        self.free.insert(i, self.free[i - 1])
        return i

    def reserve(self, start: float, duration: float, size: int) -> None:
        """Take ``size`` processors from ``start`` for ``duration``.

        A zero-length reservation still holds its processors for an instant, as a running job
        whose estimated end has come does.
        """
        end = start + duration
        if end <= start:
            end = math.nextafter(start, math.inf)
        i = self._split(start)
        j = self._split(end)
        for k in range(i, j):
            self.free[k] -= size


class Backfill(BasePolicy):
    """The shared skeleton; subclasses say which queued jobs hold reservations.

    The policy keeps the running jobs sorted by estimated end (an index updated by the start,
    finish and suspend hooks) so that a pass never scans the whole machine.

    Three hooks make a variant a configuration rather than a copy (pybatsim's backfiller takes
    the same as arguments):

    * :meth:`place`: the ``Start`` of a job, i.e. which units it gets (default: the platform
      chooses). A policy that chooses sets :attr:`places` so the pass asks before it decides.
    * :meth:`speed`: the rate a job is guaranteed on given units, so that its estimated
      duration there is ``estimate / speed`` (default 1: dedicated units); :meth:`best_speed`
      bounds it over the idle units, to skip candidates that cannot end in time anywhere.
    * :meth:`candidates`: the backfill candidates in the order they are tried (default: queue
      order).
    """

    #: Jobs are started with ``Start(job)``: the platform picks the units.
    requires = frozenset({PLACEMENT})
    #: False for FCFS: the scan stops at the first job that does not fit.
    backfills: bool = True
    #: True when :meth:`place` chooses units (then the pass places a candidate before judging
    #: it, since its estimated duration depends on where it runs).
    places: bool = False

    def __init__(self) -> None:
        self._ends: list[tuple[float, int, Job]] = []
        self._end_key: dict[int, tuple[float, int, Job]] = {}
        #: Bumped whenever the running jobs change (a start, finish or suspension): what a
        #: subclass derives from them stays valid while this stays the same (see Easy).
        self._epoch = 0

    # -- hooks ----------------------------------------------------------------------------
    def place(self, job: Job) -> Start:
        """The ``Start`` decision of ``job`` now (default: the platform chooses its units)."""
        return Start(job)

    def speed(self, units: Sequence[int] | None) -> float:
        """The rate a job is guaranteed on ``units`` (None: not chosen yet), in (0, 1]."""
        return 1.0

    def best_speed(self) -> float:
        """An upper bound of :meth:`speed` over the idle units (used to skip candidates)."""
        return 1.0

    def candidates(self, waiting: list[Job]) -> list[Job]:
        """The backfill candidates (``waiting``: queued jobs after the head, in queue order)
        in the order they are tried."""
        return waiting

    # -- index of running jobs by estimated end -------------------------------------------
    def on_start(self, job: Job) -> None:
        remaining = job.estimate - job.progress
        if remaining < 0.0:  # past its estimate (a restarted job): expected to end any moment
            remaining = 0.0
        if self.places:  # dedicated units run at speed 1: no call on every start
            remaining /= self.speed(job.nodes)
        key = (job.last_start_time + remaining, job.index, job)
        self._end_key[job.index] = key
        bisect.insort(self._ends, key)
        self._epoch += 1

    def on_finish(self, job: Job) -> None:
        key = self._end_key.pop(job.index)
        del self._ends[bisect.bisect_left(self._ends, key)]
        self._epoch += 1

    on_suspend = on_finish

    # -- reservations ---------------------------------------------------------------------
    def reserves(self, job: Job, now: float, reserved: int) -> bool:
        """Whether ``job`` holds a reservation, ``reserved`` jobs ahead of it already holding one."""
        raise NotImplementedError

    def decide(self, sim: Engine) -> Iterator[Decision]:
        queue = sim.queue
        if not queue:
            return
        free = sim.platform.free_count()
        if free == 0:
            return
        yield from self._full_pass(sim, free)

    def _full_pass(self, sim: Engine, free: int) -> Iterator[Decision]:
        queue = sim.queue
        # Start queue heads while they fit: O(1) per head, however long the queue.
        place = self.place
        while queue:
            job = next(iter(queue.values()))
            if job.size > free:
                break
            yield place(job)
            free -= job.size
        if not queue or free == 0 or not self.backfills:
            return
        yield from self._backfill(sim.now, free, list(queue.values()), 0)

    def _backfill(self, now: float, free: int, waiting: list[Job], first: int) -> Iterator[Decision]:
        """Scan ``waiting[first:]`` with an availability profile (any reservation rule)."""
        profile = Profile(now, free, [(end, job.size) for end, _, job in self._ends])
        reserved = 0
        place = self.place
        for job in self.candidates(waiting[first:]):
            if profile.free[0] == 0:
                return  # nothing else can start now; later reservations constrain nobody
            if self.reserves(job, now, reserved):
                reserved += 1
                # Where it will run is not known yet: reserve for its duration at full speed
                # (placing policies with reservations for all would need a per-unit profile).
                start = profile.earliest(job.size, job.estimate)
                profile.reserve(start, job.estimate, job.size)
                if start == now:
                    yield place(job)
            else:
                if self.places:
                    decision = place(job)
                    duration = job.estimate / self.speed(decision.nodes)
                else:
                    decision, duration = None, job.estimate  # built only if it starts
                if profile.fits_now(job.size, duration):
                    profile.reserve(now, duration, job.size)
                    yield decision if decision is not None else Start(job)


class Fcfs(Backfill):
    """First come, first served: jobs start strictly in queue order."""

    name = "fcfs"
    backfills = False


class Easy(Backfill):
    """EASY (aggressive) backfilling: only the first job that does not fit holds a reservation.

    After a full pass the policy remembers the head's shadow time and the extra processors
    left. Until a job starts, finishes or is suspended, or the clock reaches the shadow time,
    a pass only has to look at the jobs that arrived since: every job already scanned was
    rejected with the same free processors and extra, and ``now + estimate <= shadow`` only
    gets harder as time passes. This keeps arrival-only passes from rescanning the queue.
    (A placing variant's choices and speeds depend only on the platform's state, which only
    starts and ends change, so the memo holds for it too.)
    """

    name = "easy"

    def __init__(self) -> None:
        super().__init__()
        # (shadow, extra, last queue index scanned, epoch of the running jobs), or None.
        self._memo: tuple[float, int, int, int] | None = None

    def reserves(self, job: Job, now: float, reserved: int) -> bool:
        return reserved == 0

    def decide(self, sim: Engine) -> Iterator[Decision]:
        # Backfill.decide with both of EASY's passes written in: two fewer nested generators
        # on every pass (their creation and every yield through them add up on a long trace).
        queue = sim.queue
        if not queue:
            return
        free = sim.platform.free_count()
        if free == 0:
            return
        now = sim.now
        memo = self._memo
        if memo is not None and memo[3] == self._epoch and now < memo[0]:
            # Nothing started or ended since the last full pass, whose shadow is still ahead:
            # only the jobs that arrived since need a look.
            shadow, extra, last, _ = memo
            arrived = []
            for index in reversed(queue):
                if index <= last:
                    break
                arrived.append(queue[index])
            if arrived:
                arrived.reverse()
                extra = yield from self._scan(now, free, shadow, extra, self.candidates(arrived))
                self._memo = (shadow, extra, next(reversed(queue)), self._epoch)
            return
        # A full pass: start the queue heads while they fit (as Backfill._full_pass) ...
        place = self.place
        while queue:
            job = next(iter(queue.values()))
            if job.size > free:
                break
            yield place(job)
            free -= job.size
        if not queue or free == 0:
            return
        # ... then backfill behind the first job that does not fit.
        yield from self._backfill(now, free, list(queue.values()), 0)

    def _backfill(self, now: float, free: int, waiting: list[Job], first: int) -> Iterator[Decision]:
        # The head's shadow time: the earliest estimated end at which enough processors are
        # free for it; extra: processors free then (counting every job ending at or before
        # it) beyond the head's need.
        head_size = waiting[first].size
        available = free
        clamped = False
        ends = iter(self._ends)
        shadow = math.inf
        for end, _, job in ends:
            available += job.size
            if available >= head_size:
                clamped = end <= now
                shadow = math.nextafter(now, math.inf) if clamped else end
                break
        for end, _, job in ends:  # the rest of the jobs ending by the shadow
            if end > shadow:
                break
            available += job.size
        extra = available - head_size
        extra = yield from self._scan(now, free, shadow, extra, self.candidates(waiting[first + 1 :]))
        # A shadow clamped to "now" moves with the clock: no memo then.
        self._memo = None if clamped else (shadow, extra, waiting[-1].index, self._epoch)

    def _scan(self, now: float, free: int, shadow: float, extra: int, candidates: list[Job]) -> Iterator[Decision]:
        """Start the candidates that fit now and end by the shadow or fit in the extra
        processors; return the extra processors left."""
        places = self.places
        best = self.best_speed() if places else 1.0
        for job in candidates:
            size = job.size
            if size > free:
                continue
            if places:
                if size > extra and now + job.estimate / best > shadow:
                    continue  # cannot end by the shadow on any idle units
                decision = self.place(job)
                end = now + job.estimate / self.speed(decision.nodes)
            else:
                decision = None  # the platform places it: no need to build it unless it starts
                end = now + job.estimate
            if end <= shadow:
                free -= size
            elif size <= extra:
                free -= size
                extra -= size
            else:
                continue
            yield decision if decision is not None else Start(job)
            if free == 0:
                break
            if places:
                best = self.best_speed()
        return extra


class Conservative(Backfill):
    """Conservative backfilling: every queued job holds a reservation; none is ever delayed."""

    name = "conservative"
    #: Every queued job's reservation is recomputed at each event.
    relative_cost = 3.0

    def reserves(self, job: Job, now: float, reserved: int) -> bool:
        return True


class Selective(Backfill):
    """Selective backfilling: a job holds a reservation once its XFactor reaches a threshold.

    Args:
        xfactor_threshold: A fixed starvation threshold, or ``"adaptive"`` for
            ``max(10, mean bounded slowdown of the jobs completed so far)`` (paper 002, eq. 3).
    """

    name = "selective"
    params = {"xfactor_threshold": XFACTOR_THRESHOLD}

    def __init__(self, xfactor_threshold: float | str = "adaptive") -> None:
        super().__init__()
        self.starvation = StarvationThreshold(xfactor_threshold)

    @property
    def threshold(self) -> float:
        """The starvation threshold in force now."""
        return self.starvation.value

    def on_finish(self, job: Job) -> None:
        super().on_finish(job)
        self.starvation.completed(job)

    def reserves(self, job: Job, now: float, reserved: int) -> bool:
        return self.starvation.starved(job, now)
