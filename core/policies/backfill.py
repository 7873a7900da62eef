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
from typing import TYPE_CHECKING, Iterator

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
    """

    #: Jobs are started with ``Start(job)``: the platform picks the units.
    requires = frozenset({PLACEMENT})
    #: False for FCFS: the scan stops at the first job that does not fit.
    backfills: bool = True

    def __init__(self) -> None:
        self._ends: list[tuple[float, int, Job]] = []
        self._end_key: dict[int, tuple[float, int, Job]] = {}

    # -- index of running jobs by estimated end -------------------------------------------
    def on_start(self, job: Job) -> None:
        key = (job.last_start_time + max(job.estimate - job.progress, 0.0), job.index, job)
        self._end_key[job.index] = key
        bisect.insort(self._ends, key)

    def on_finish(self, job: Job) -> None:
        key = self._end_key.pop(job.index)
        del self._ends[bisect.bisect_left(self._ends, key)]

    on_suspend = on_finish

    # -- reservations ---------------------------------------------------------------------
    def reserves(self, job: Job, now: float, reserved: int) -> bool:
        """Whether ``job`` holds a reservation, ``reserved`` jobs ahead of it already holding one."""
        raise NotImplementedError

    def decide(self, sim: Engine) -> Iterator[Decision]:
        queue = sim.queue
        if not queue:
            return
        platform = sim.platform
        free = platform.free_count()
        if free == 0:
            return
        # Start queue heads while they fit: O(1) per head, however long the queue.
        while queue:
            job = next(iter(queue.values()))
            if job.size > free:
                break
            yield Start(job)
            free -= job.size
        if not queue or free == 0 or not self.backfills:
            return
        yield from self._backfill(sim.now, free, list(queue.values()), 0)

    def _backfill(self, now: float, free: int, waiting: list[Job], first: int) -> Iterator[Decision]:
        """Scan ``waiting[first:]`` with an availability profile (any reservation rule)."""
        profile = Profile(now, free, [(end, job.size) for end, _, job in self._ends])
        reserved = 0
        for job in waiting[first:]:
            if profile.free[0] == 0:
                return  # nothing else can start now; later reservations constrain nobody
            if self.reserves(job, now, reserved):
                reserved += 1
                start = profile.earliest(job.size, job.estimate)
                profile.reserve(start, job.estimate, job.size)
                if start == now:
                    yield Start(job)
            elif profile.fits_now(job.size, job.estimate):
                profile.reserve(now, job.estimate, job.size)
                yield Start(job)


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
    """

    name = "easy"

    def __init__(self) -> None:
        super().__init__()
        # (shadow, extra, last queue index scanned), or None when a full pass is needed.
        self._memo: tuple[float, int, int] | None = None

    def on_start(self, job: Job) -> None:
        super().on_start(job)
        self._memo = None

    def on_finish(self, job: Job) -> None:
        super().on_finish(job)
        self._memo = None

    def on_suspend(self, job: Job) -> None:
        super().on_suspend(job)
        self._memo = None

    def reserves(self, job: Job, now: float, reserved: int) -> bool:
        return reserved == 0

    def decide(self, sim: Engine) -> Iterator[Decision]:
        queue = sim.queue
        if not queue:
            return
        free = sim.platform.free_count()
        if free == 0:
            return
        if (yield from self._arrivals_only(sim, free)):
            return
        yield from super().decide(sim)

    def _arrivals_only(self, sim: Engine, free: int) -> Iterator[Decision]:
        """With a valid memo, scan only the jobs that arrived since the last full pass and
        return True; else return False (a full pass is needed)."""
        memo = self._memo
        if memo is None or sim.now >= memo[0]:
            return False
        shadow, extra, last = memo
        queue = sim.queue
        arrived = []
        for index in reversed(queue):
            if index <= last:
                break
            arrived.append(queue[index])
        if arrived:
            arrived.reverse()
            extra = yield from self._scan(sim.now, free, shadow, extra, arrived)
            self._memo = (shadow, extra, next(reversed(queue)))
        return True

    def _backfill(self, now: float, free: int, waiting: list[Job], first: int) -> Iterator[Decision]:
        # The head's shadow time: the earliest estimated end at which enough processors are
        # free for it; extra: processors free then (counting every job ending at or before
        # it) beyond the head's need.
        head_size = waiting[first].size
        shadow = math.inf
        available = free
        clamped = False
        for end, _, job in self._ends:
            if shadow < math.inf and end > shadow:
                break
            available += job.size
            if shadow == math.inf and available >= head_size:
                clamped = end <= now
                shadow = math.nextafter(now, math.inf) if clamped else end
        extra = available - head_size
        extra = yield from self._scan(now, free, shadow, extra, waiting[first + 1 :])
        # A shadow clamped to "now" moves with the clock: no memo then.
        self._memo = None if clamped else (shadow, extra, waiting[-1].index)

    @staticmethod
    def _scan(now: float, free: int, shadow: float, extra: int, candidates: list[Job]) -> Iterator[Decision]:
        """Start the candidates that fit now and end by the shadow or fit in the extra
        processors; return the extra processors left."""
        for job in candidates:
            size = job.size
            if size > free:
                continue
            if now + job.estimate <= shadow:
                yield Start(job)
                free -= size
            elif size <= extra:
                yield Start(job)
                free -= size
                extra -= size
            else:
                continue
            if free == 0:
                break
        return extra


class Conservative(Backfill):
    """Conservative backfilling: every queued job holds a reservation; none is ever delayed."""

    name = "conservative"

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
