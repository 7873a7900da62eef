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

EASY++ (Tsafrir, Etsion and Feitelson 2007; paper 003, section 2) is two parameters of the
family, taken by ``easy``, ``conservative`` and ``selective`` (not by ``fcfs``, which never
looks at an estimate):

* ``prediction: last2`` plans with system-generated predictions instead of the estimates (the
  mean of the user's last two completed runtimes, capped by the request; see
  :mod:`tiersweep.core.policies.prediction`): reservations, shadow times, backfill checks and
  the XFactor of ``selective`` all use them. Kill time is still the request (the workload's
  overrun rule). A running job that outlives its prediction has it corrected
  (``correction: request | increment``) at the first pass at or after its predicted end, and
  the reservations computed from it move accordingly. ``prediction: user`` (the default) plans
  with the estimates: the schedules of the family as it was.
* ``order: spf`` tries the jobs behind the head shortest predicted first (ties in queue
  order); the head, the first queued job that does not fit, keeps its place and, under EASY,
  its reservation. EASY with both is the paper's EASY++ (its SJBF order). Under ``conservative``
  every queued job still gets a reservation, in that order (the head first); under
  ``selective`` the starved jobs do. ``order: fcfs`` (the default) is queue order.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Generator, Iterator, Sequence
from typing import TYPE_CHECKING

from ..capabilities import PLACEMENT
from ..decisions import Decision, Start
from .base import BasePolicy, Simulation
from .prediction import CORRECTIONS, ORDERS, PREDICTION_PARAMS, PREDICTIONS, LastTwo
from .starvation import XFACTOR_THRESHOLD, StarvationThreshold, xfactor

if TYPE_CHECKING:
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
    * :meth:`candidates`: the backfill candidates in the order they are tried (default: as
      ``order`` says).

    Args:
        prediction: ``user`` plans with the jobs' estimates; ``last2`` with the predictions of
            :class:`~tiersweep.core.policies.prediction.LastTwo` (see the module docstring).
        order: ``fcfs`` tries the jobs behind the head in queue order; ``spf`` shortest
            predicted first.
        correction: How a ``last2`` prediction a running job outlives grows (``increment``, the
            default, or ``request``); unused with ``user``.
    """

    #: Jobs are started with ``Start(job)``: the platform picks the units.
    requires = frozenset({PLACEMENT})
    #: The spec keys of the members that plan with estimates (FCFS declares none).
    params = PREDICTION_PARAMS
    #: False for FCFS: the scan stops at the first job that does not fit.
    backfills: bool = True
    #: True when :meth:`place` chooses units (then the pass places a candidate before judging
    #: it, since its estimated duration depends on where it runs).
    places: bool = False

    def __init__(self, prediction: str = "user", order: str = "fcfs", correction: str = "increment") -> None:
        for key, value, choices in (
            ("prediction", prediction, PREDICTIONS),
            ("order", order, ORDERS),
            ("correction", correction, CORRECTIONS),
        ):
            if value not in choices:
                raise ValueError(f"{key}: unknown value {value!r}; valid choices: {', '.join(choices)}")
        self.prediction = prediction
        self.order = order
        self.correction = correction
        self._ends: list[tuple[float, int, Job]] = []
        self._end_key: dict[int, tuple[float, int, Job]] = {}
        #: Bumped whenever the running jobs or their estimated ends change (a start, finish,
        #: suspension or corrected prediction): what a subclass derives from them stays valid
        #: while this stays the same (see Easy).
        self._epoch = 0
        #: The predictor (``prediction: last2``), else None: the jobs' estimates are used as
        #: they are, on exactly the code paths of the family without predictions.
        self._predictor: LastTwo | None = LastTwo(correction) if prediction == "last2" else None
        #: ``order: spf``: the queued jobs as ``(prediction, index, job)``, sorted (their
        #: predictions do not change while they wait), else None.
        self._spf: list[tuple[float, int, Job]] | None = [] if order == "spf" else None
        #: The defaults (estimates, queue order): the hot paths then run without a look at
        #: predictions or order, as the family did before it had them (EASY's benchmark).
        self._plain = self._predictor is None and self._spf is None
        if self._plain and type(self).on_submit is Backfill.on_submit:
            # Nothing to note on arrival: the engine skips a hook that is BasePolicy's own,
            # which saves a call per job on the default path.
            self.on_submit = BasePolicy.on_submit.__get__(self, type(self))  # type: ignore[method-assign]

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
        """The backfill candidates (``waiting``: queued jobs, already in the order ``order``
        says) in the order they are tried (default: that order)."""
        return waiting

    # -- predictions ----------------------------------------------------------------------
    def planned(self, job: Job) -> float:
        """The runtime the policy plans ``job`` with: its estimate, or its prediction now."""
        predictor = self._predictor
        return job.estimate if predictor is None else predictor.predicted[job.index]

    def _correct(self, now: float) -> None:
        """Give every running job that has reached its predicted end a longer prediction (as
        long as its request allows), and move its end in the index."""
        ends = self._ends
        if not ends or ends[0][0] > now:
            return
        predictor = self._predictor
        assert predictor is not None  # corrections are only made with predictions
        grow = predictor.grow
        changed = False
        # (now, inf) sorts after every (end, index, job) with end <= now.
        for key in ends[: bisect.bisect_right(ends, (now, math.inf))]:
            end, index, job = key
            old = predictor.predicted[index]
            moved = end
            while moved <= now:
                new = grow(job)
                if new is None:
                    break  # at its request: expected to end at the next instant, as without predictions
                delta = new - old
                moved += delta / self.speed(job.nodes) if self.places else delta
                old = new
            if moved != end:
                del ends[bisect.bisect_left(ends, key)]
                moved_key = self._end_key[index] = (moved, index, job)
                bisect.insort(ends, moved_key)
                changed = True
        if changed:
            self._epoch += 1

    def _spf_key(self, job: Job) -> tuple[float, int]:
        return (self.planned(job), job.index)

    def _in_order(self, behind: list[Job], head: Job | None) -> list[Job]:
        """``behind`` (queued jobs behind ``head``, in queue order) in the order ``order`` says."""
        spf = self._spf
        if spf is None:
            return behind
        if head is not None and len(behind) == len(spf) - 1:
            # Every queued job but the head (a full pass): read the index rather than sort.
            return [job for _, _, job in spf if job is not head]
        return sorted(behind, key=self._spf_key)

    # -- index of running jobs by estimated end; predictions and the SPF index ----------------
    def on_submit(self, job: Job) -> None:
        predictor = self._predictor
        planned = job.estimate if predictor is None else predictor.submitted(job)
        if self._spf is not None:
            bisect.insort(self._spf, (planned, job.index, job))

    def on_start(self, job: Job) -> None:
        if self._plain:
            remaining = job.estimate - job.progress
        else:
            planned = self.planned(job)
            remaining = planned - job.progress
            spf = self._spf
            if spf is not None:
                del spf[bisect.bisect_left(spf, (planned, job.index))]
        if remaining < 0.0:  # past its estimate (a restarted job): expected to end any moment
            remaining = 0.0
        if self.places:  # dedicated units run at speed 1: no call on every start
            remaining /= self.speed(job.nodes)
        key = (job.last_start_time + remaining, job.index, job)
        self._end_key[job.index] = key
        bisect.insort(self._ends, key)
        self._epoch += 1

    def invalidate(self) -> None:
        """Forget the shadow time and extra units derived from the current state (they are
        recomputed at the next pass). The hooks call it whenever a job starts, finishes or
        leaves; a subclass calls it when something it alone knows changes the picture."""
        self._epoch += 1

    def on_finish(self, job: Job) -> None:
        key = self._end_key.pop(job.index)
        del self._ends[bisect.bisect_left(self._ends, key)]
        self._epoch += 1
        if self._predictor is not None:
            self._predictor.finished(job)

    def on_suspend(self, job: Job) -> None:
        key = self._end_key.pop(job.index)
        del self._ends[bisect.bisect_left(self._ends, key)]
        self._epoch += 1
        if self._spf is not None:  # back in the queue, with the prediction it has now
            bisect.insort(self._spf, (self.planned(job), job.index, job))

    # -- reservations ---------------------------------------------------------------------
    def reserves(self, job: Job, now: float, reserved: int) -> bool:
        """Whether ``job`` holds a reservation, ``reserved`` jobs ahead of it already holding one."""
        raise NotImplementedError

    def decide(self, sim: Simulation) -> Iterator[Decision]:
        queue = sim.queue
        if not queue:
            return
        free = sim.platform.free_count()
        if free == 0:
            return
        yield from self._full_pass(sim, free)

    def _full_pass(self, sim: Simulation, free: int) -> Iterator[Decision]:
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
        if self._predictor is not None:
            self._correct(now)  # only the planned ends need them: here, lazily
        profile = Profile(now, free, [(end, job.size) for end, _, job in self._ends])
        reserved = 0
        place = self.place
        if self._spf is None:
            scan = waiting[first:]
        else:  # the head keeps its place; the jobs behind it shortest predicted first
            head = waiting[first]
            scan = [head, *self._in_order(waiting[first + 1 :], head)]
        predictor = self._predictor
        predicted = None if predictor is None else predictor.predicted
        for job in self.candidates(scan):
            if profile.free[0] == 0:
                return  # nothing else can start now; later reservations constrain nobody
            estimate = job.estimate if predicted is None else predicted[job.index]
            if self.reserves(job, now, reserved):
                reserved += 1
                # Where it will run is not known yet: reserve for its duration at full speed
                # (placing policies with reservations for all would need a per-unit profile).
                start = profile.earliest(job.size, estimate)
                profile.reserve(start, estimate, job.size)
                if start == now:
                    yield place(job)
            else:
                if self.places:
                    decision = place(job)
                    duration = estimate / self.speed(decision.nodes)
                else:
                    decision, duration = None, estimate  # built only if it starts
                if profile.fits_now(job.size, duration):
                    profile.reserve(now, duration, job.size)
                    yield decision if decision is not None else Start(job)


class Fcfs(Backfill):
    """First come, first served: jobs start strictly in queue order.

    It takes no parameters: it never backfills, so it never reads an estimate or a prediction.
    """

    name = "fcfs"
    params = {}
    backfills = False

    def __init__(self) -> None:
        super().__init__()


class Easy(Backfill):
    """EASY (aggressive) backfilling: only the first job that does not fit holds a reservation.

    After a full pass the policy remembers the head's shadow time and the extra processors
    left. Until a job starts, finishes or is suspended, or the clock reaches the shadow time,
    a pass only has to look at the jobs that arrived since: every job already scanned was
    rejected with the same free processors and extra, and ``now + estimate <= shadow`` only
    gets harder as time passes. This keeps arrival-only passes from rescanning the queue.
    (A placing variant's choices and speeds depend only on the platform's state, which only
    starts and ends change, so the memo holds for it too. A queued job's prediction does not
    change while it waits, and a corrected prediction of a running job counts as a change of
    the running jobs.) With ``order: spf`` the arrivals are scanned shortest predicted first:
    the jobs scanned before are rejected again in any order, so this is the full pass's order.

    With ``prediction: last2`` and ``order: spf`` this is EASY++ (Tsafrir, Etsion and Feitelson
    2007; paper 003, section 2).
    """

    name = "easy"

    def __init__(self, prediction: str = "user", order: str = "fcfs", correction: str = "increment") -> None:
        super().__init__(prediction, order, correction)
        # (shadow, extra, last queue index scanned, epoch of the running jobs), or None.
        self._memo: tuple[float, int, int, int] | None = None

    def reserves(self, job: Job, now: float, reserved: int) -> bool:
        return reserved == 0

    def decide(self, sim: Simulation) -> Iterator[Decision]:
        # Backfill.decide with both of EASY's passes written in: two fewer nested generators
        # on every pass (their creation and every yield through them add up on a long trace).
        queue = sim.queue
        if not queue:
            return
        free = sim.platform.free_count()
        if free == 0:
            return
        now = sim.now
        if self._predictor is not None:
            self._correct(now)  # before the memo is read: a correction moves the shadow
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
                if self._plain:
                    extra = yield from self._scan(now, free, shadow, extra, self.candidates(arrived))
                else:
                    arrived = self.candidates(self._in_order(arrived, None))
                    extra = yield from self._scan_in_order(now, free, shadow, extra, arrived)
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

    def shadow(self, now: float, free: int, size: int) -> tuple[float, int, bool]:
        """EASY's reservation for a job of ``size`` processes with ``free`` free now: the
        shadow time (the earliest estimated end of the running jobs at which enough
        processors are free for it), the extra processors free then (counting every job
        ending at or before it) beyond its need, and whether the shadow was clamped to just
        after ``now`` (a job past its estimated end is expected to end at the next instant)."""
        available = free
        clamped = False
        ends = iter(self._ends)
        shadow = math.inf
        for end, _, job in ends:
            available += job.size
            if available >= size:
                clamped = end <= now
                shadow = math.nextafter(now, math.inf) if clamped else end
                break
        for end, _, job in ends:  # the rest of the jobs ending by the shadow
            if end > shadow:
                break
            available += job.size
        return shadow, available - size, clamped

    def _backfill(self, now: float, free: int, waiting: list[Job], first: int) -> Iterator[Decision]:
        shadow, extra, clamped = self.shadow(now, free, waiting[first].size)
        if self._plain:
            extra = yield from self._scan(now, free, shadow, extra, self.candidates(waiting[first + 1 :]))
        else:
            behind = self.candidates(self._in_order(waiting[first + 1 :], waiting[first]))
            extra = yield from self._scan_in_order(now, free, shadow, extra, behind)
        # A shadow clamped to "now" moves with the clock: no memo then.
        self._memo = None if clamped else (shadow, extra, waiting[-1].index, self._epoch)

    def _scan(
        self, now: float, free: int, shadow: float, extra: int, candidates: list[Job]
    ) -> Generator[Decision, None, int]:
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

    def _scan_in_order(
        self, now: float, free: int, shadow: float, extra: int, candidates: list[Job]
    ) -> Generator[Decision, None, int]:
        """:meth:`_scan` of candidates already in the ``order`` the policy says: on the
        estimates without predictions (``_scan`` does not care about order), else on them."""
        if self._predictor is None:
            return (yield from self._scan(now, free, shadow, extra, candidates))
        return (yield from self._scan_planned(now, free, shadow, extra, candidates))

    def _scan_planned(
        self, now: float, free: int, shadow: float, extra: int, candidates: list[Job]
    ) -> Generator[Decision, None, int]:
        """:meth:`_scan` on the predictions (``prediction: last2``).

        The same loop, kept apart so that the default path reads ``job.estimate`` directly:
        it runs for every candidate of every pass (over a million on CTC-SP2).
        """
        places = self.places
        best = self.best_speed() if places else 1.0
        predictor = self._predictor
        assert predictor is not None  # only called with predictions
        predicted = predictor.predicted
        for job in candidates:
            size = job.size
            if size > free:
                continue
            estimate = predicted[job.index]
            if places:
                if size > extra and now + estimate / best > shadow:
                    continue  # cannot end by the shadow on any idle units
                decision = self.place(job)
                end = now + estimate / self.speed(decision.nodes)
            else:
                decision = None
                end = now + estimate
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

    With ``prediction: last2`` the XFactor is ``(wait + prediction) / prediction``: the
    prediction is the runtime the scheduler expects, as the estimate is otherwise.

    Args:
        xfactor_threshold: A fixed starvation threshold, or ``"adaptive"`` for
            ``max(10, mean bounded slowdown of the jobs completed so far)`` (paper 002, eq. 3).
        prediction, order, correction: As for :class:`Backfill`.
    """

    name = "selective"
    params = {"xfactor_threshold": XFACTOR_THRESHOLD, **PREDICTION_PARAMS}

    def __init__(
        self,
        xfactor_threshold: float | str = "adaptive",
        prediction: str = "user",
        order: str = "fcfs",
        correction: str = "increment",
    ) -> None:
        super().__init__(prediction, order, correction)
        self.starvation = StarvationThreshold(xfactor_threshold)

    @property
    def threshold(self) -> float:
        """The starvation threshold in force now."""
        return self.starvation.value

    def on_finish(self, job: Job) -> None:
        super().on_finish(job)
        self.starvation.completed(job)

    def reserves(self, job: Job, now: float, reserved: int) -> bool:
        predictor = self._predictor
        return self.starvation.starved(job, now, None if predictor is None else predictor.predicted[job.index])
