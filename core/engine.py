"""The discrete-event engine: clock, event heap, job state, decision checking.

Events live in a heap of ``(time, kind, sequence, job, version)``. ``kind`` orders events at one
timestamp (finishes, then restores, then arrivals); ``sequence`` is an insertion counter so ties
are broken by insertion order, never at random or by object identity. Arrivals are not pushed
into the heap: the workload is already sorted by (submit time, trace order), so the engine
merges it in with a cursor, as if every arrival had kind ``ARRIVAL``.

Progress is piecewise constant: each running job has a rate, and its finish event is computed
exactly from its remaining work. When its rate changes the job's progress is brought up to
date, its ``version`` is bumped (making the pending finish event stale, skipped on pop) and a
new finish event is pushed.

Policies propose and the engine checks (before applying anything): a decision on a job in the
wrong state, or one the platform refuses, raises ``PolicyError``. Platforms are trusted no more:
what a platform reports on the hot path is checked cheaply (a rate within [0, 1]; as many units
held as the job has processes) and a violation raises ``PlatformError`` naming the platform.

A suspended job keeps its progress and pays the migration cost when it starts again; a killed
one (``Kill``) loses its progress and starts again from zero, at no cost: the engine counts the
kills and the CPU-seconds they discarded (:attr:`Engine.kills`, :attr:`Engine.lost_work`).
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections import Counter
from collections.abc import Callable, Sequence

from .capabilities import pair_problem
from .collector import collector_paused
from .compiled_run import run_compiled
from .decisions import Kill, Move, Reject, Start, Suspend
from .errors import PlatformError, PolicyError, SpecError
from .jobs import FINISHED, QUEUED, REJECTED, RUNNING, Job
from .params import Param, non_negative_number
from .platforms.base import BasePlatform
from .policies.base import BasePolicy
from .segments import Segment

__all__ = ["Engine", "ENGINE_PARAMS", "PROGRESS_EVERY", "FINISH", "RESTORE", "ARRIVAL"]

#: The spec keys the engine takes (its constructor's keywords), given in the ``platform``
#: section: every platform kind accepts them, so that one sweep grid can cross platforms and
#: policies with them. ``migration_cost`` is the restore delay of a suspended or migrated job;
#: it changes nothing where no job is ever suspended or migrated.
ENGINE_PARAMS: dict[str, Param] = {
    "migration_cost": Param(
        non_negative_number,
        default=20.0,
        doc="seconds a suspended or migrated job holds its VMs on restart before it progresses (paper 000: 20)",
    ),
}

#: How many policy passes apart the engine calls its progress callback: rare enough to cost
#: nothing, often enough for a bar (a pass takes microseconds to milliseconds). The compiled
#: whole run calls it where it checks for signals, every 256 passes: the two must agree.
PROGRESS_EVERY = 256

# Event kinds: their order is the processing order at one timestamp.
FINISH = 0
RESTORE = 1
ARRIVAL = 2


class Engine:
    """Runs one simulation of ``jobs`` on ``platform`` under ``policy``.

    Args:
        jobs: The workload, sorted by (submit time, trace order), with ``job.index`` equal to
            the position in this list.
        platform: The resource model.
        policy: The scheduler.
        migration_cost: Seconds a restarted (previously suspended) or migrated job holds its
            resources before it progresses again.
        observer: Called with the engine after every timestamp's policy pass (for checking
            invariants or recording state; None costs nothing).
        record_segments: Keep every stay of a job on its VMs in :attr:`segments` (for Gantt
            charts; off by default, it costs memory).
        progress: Called every :data:`PROGRESS_EVERY` policy passes and once at the end with
            the jobs finished so far, the jobs in all and the seconds simulated since the first
            job arrived (for a progress bar). Unlike ``observer`` it is given no engine, so a
            run takes the same path, and gives the same results, with it or without.

    Attributes:
        now: The current simulated time.
        queue: Queued jobs by index, in queue order (index order).
        running: Running jobs by index.
        passes: Number of policy passes made.
        placed_processes: Processes put on units by starts, restarts, moves and swaps.
        kills: Number of kills (``Kill`` decisions applied).
        lost_work: CPU-seconds discarded by kills: for each kill, the killed run's progress
            times its job's ``cpu_sum`` (what the run had consumed, counted as utilisation
            counts it).
        kills_by_job: Kills per job index (only jobs killed at least once).
        lost_progress: Seconds of work (progress) discarded per job index (only killed jobs).
    """

    def __init__(
        self,
        jobs: Sequence[Job],
        platform: BasePlatform,
        policy: BasePolicy,
        *,
        migration_cost: float = 0.0,
        observer: Callable[[Engine], None] | None = None,
        record_segments: bool = False,
        progress: Callable[[int, int, float], None] | None = None,
    ) -> None:
        inf = math.inf
        for position, job in enumerate(jobs):
            if job.index != position:
                raise ValueError(f"job {job.job_id} has index {job.index}, expected {position}")
            # A not-a-number time never equals the clock, so the event loop would spin forever.
            if not (-inf < job.submit_time < inf and -inf < job.runtime < inf and -inf < job.estimate < inf):
                raise ValueError(
                    f"job {job.job_id}: times must be finite numbers, got submit_time={job.submit_time!r}, "
                    f"runtime={job.runtime!r}, estimate={job.estimate!r}"
                )
            if position and (job.submit_time < jobs[position - 1].submit_time):
                raise ValueError(f"jobs are not sorted by submit time at index {position}")
        if not 0 <= migration_cost < math.inf:
            raise ValueError(f"migration_cost must be a non-negative finite number, got {migration_cost}")
        problem = pair_problem(policy.name, policy.requires, repr(platform.kind), platform.capabilities)
        if problem is not None:
            raise SpecError(f"policy.name: {problem}")
        platform.prepare(policy.requires, record_segments)
        self.jobs = jobs
        self.platform = platform
        self.policy = policy
        self.migration_cost = float(migration_cost)
        self.observer = observer
        self.progress = progress
        #: With ``record_segments``: a :class:`~.segments.Segment` for every stay of a job on
        #: its VMs.
        self.segments: list[Segment] | None = [] if record_segments else None
        self.now = -math.inf
        self.queue: dict[int, Job] = {}
        self.running: dict[int, Job] = {}
        self.passes = 0
        #: (Each start or move of a job of n processes counts n: the work ``tiersweep bench
        #: --scale`` compares with the floor of a restart, ``core/platforms/_restart_floor.pyx``.)
        self.placed_processes = 0
        #: Jobs turned away by the policy (admission control).
        self.rejected = 0
        #: CPU-seconds used beyond the platform's capacity (integral of its overflow rate).
        self.overflow_seconds = 0.0
        self.kills = 0
        self.lost_work = 0.0
        self.kills_by_job: Counter[int] = Counter()
        self.lost_progress: dict[int, float] = {}
        self._heap: list[tuple[float, int, int, Job, int]] = []
        self._sequence = itertools.count()
        self._needs_restore: set[int] = set()
        self._restoring: dict[int, float] = {}  # job index -> rate it gets once restored
        #: The path :meth:`run` took: the compiled whole run, or the Python loop and why.
        self.path = "not run"

    # -- running -------------------------------------------------------------------------
    def run(self) -> None:
        """Process every event until all jobs have finished."""
        if run_compiled(self):  # the same run, compiled whole (see compiled_run), where it applies
            self._progress_at_end()
            return
        jobs = self.jobs
        n_jobs = len(jobs)
        # The loop compares the next submit time at every timestamp: a list of floats, not an
        # attribute look-up each time.
        submits = [job.submit_time for job in jobs]
        heap = self._heap
        heappop = heapq.heappop
        queue = self.queue
        policy = self.policy
        platform = self.platform
        decide = policy.decide
        apply = self._apply
        start = self._apply_start
        finish = self._finish
        observer = self.observer
        progress = self.progress
        advance = platform.advance if platform.tracks_time else None
        # A hook the policy does not override does nothing: skip the call (one per job).
        on_submit: Callable[[Job], None] | None = policy.on_submit
        if getattr(on_submit, "__func__", None) is BasePolicy.on_submit:
            on_submit = None
        cursor = 0
        next_arrival = submits[0] if n_jobs else math.inf
        last = math.nan
        tiers = platform.tiers
        if tiers != 1:  # (jobs are built with one tier's [0.0])
            with collector_paused():  # one new list per job, none of them garbage
                for job in jobs:
                    job.tier_time = [0.0] * tiers
        policy.setup(self)
        while True:
            while heap and heap[0][4] != heap[0][3].version:
                heappop(heap)  # superseded: never let the clock stop at a cancelled event
            if heap:
                now = heap[0][0]
                if next_arrival < now:
                    now = next_arrival
            elif cursor < n_jobs:
                now = next_arrival
            else:
                break
            if platform.overflow_rate:
                self.overflow_seconds += platform.overflow_rate * (now - last)
            last = now
            self.now = now
            if advance is not None:
                advance(now)
            happened = False
            while heap and heap[0][0] == now:
                _, kind, _, job, version = heappop(heap)
                if version != job.version:
                    continue  # superseded by a rate change or a suspension
                happened = True
                if kind == FINISH:
                    finish(job)
                else:
                    self._restored(job)
            while next_arrival == now:
                job = jobs[cursor]
                cursor += 1
                next_arrival = submits[cursor] if cursor < n_jobs else math.inf
                job.state = QUEUED
                queue[job.index] = job
                if on_submit is not None:
                    on_submit(job)
                happened = True
            if not happened:
                continue
            if platform.rates_dirty:
                self._apply_rate_changes()
            self.passes += 1
            for decision in decide(self):
                if type(decision) is Start:  # by far the most frequent: one call, not two
                    start(decision)
                else:
                    apply(decision)
            if platform.rates_dirty:
                self._apply_rate_changes()
            if observer is not None:
                observer(self)
            if progress is not None and not self.passes % PROGRESS_EVERY:
                # (Arrived jobs are queued, running, rejected or finished.)
                progress(cursor - len(queue) - len(self.running) - self.rejected, n_jobs, now - submits[0])
        self._progress_at_end()
        if queue or self.running:
            stuck = ", ".join(str(j.job_id) for j in itertools.islice(queue.values(), 5))
            raise PolicyError(
                f"policy {policy.name!r} stopped with {len(queue)} queued and "
                f"{len(self.running)} running jobs left (queued: {stuck}...) and no event pending"
            )

    def _progress_at_end(self) -> None:
        """The last call of the progress callback, once the run is over."""
        if self.progress is not None:
            jobs = self.jobs
            simulated = self.now - jobs[0].submit_time if jobs else 0.0
            self.progress(sum(job.state == FINISHED for job in jobs), len(jobs), simulated)

    # -- decisions -----------------------------------------------------------------------
    def _apply(self, decision: Start | Suspend | Kill | Move | Reject) -> None:
        if type(decision) is Start:
            self._apply_start(decision)
        elif type(decision) is Suspend:
            self._suspend(self._running_job(decision, "suspend"))
        elif type(decision) is Reject:
            job = decision.job
            if job.state != QUEUED or job.start_time == job.start_time:
                raise PolicyError(
                    f"policy {self.policy.name!r} at t={self.now:g}: cannot reject job "
                    f"{job.job_id}: only a queued job that never started can be rejected"
                )
            del self.queue[job.index]
            job.state = REJECTED
            self.rejected += 1
            self.policy.on_reject(job)
        elif type(decision) is Move:
            job = self._running_job(decision, "move")
            reason = self.platform.check_move(job, decision.tier, decision.nodes)
            if reason is not None:
                raise PolicyError(
                    f"policy {self.policy.name!r} at t={self.now:g}: cannot move job {job.job_id}: {reason}"
                )
            self._move(job, decision.tier, decision.nodes)
        elif type(decision) is Kill:
            self._kill(self._running_job(decision, "kill"))
        else:
            raise PolicyError(f"policy {self.policy.name!r} yielded {decision!r}, not a decision")

    def _running_job(self, decision: Suspend | Kill | Move, verb: str) -> Job:
        """The job of a decision that needs it running (a PolicyError if it is not)."""
        job = decision.job
        if job.state != RUNNING:
            raise PolicyError(
                f"policy {self.policy.name!r} at t={self.now:g}: cannot {verb} job "
                f"{job.job_id}: it is not running (state {job.state})"
            )
        return job

    def _platform_error(self, what: str) -> PlatformError:
        return PlatformError(f"platform {self.platform.kind!r} at t={self.now:g}: {what}")

    def _check_held(self, job: Job, held: Sequence[int], rate: float) -> None:
        """Raise PlatformError if the platform gave ``job`` the wrong number of units or a rate
        outside [0, 1]."""
        if len(held) != job.size:
            raise self._platform_error(f"job {job.job_id} of size {job.size} was given {len(held)} units")
        if not 0.0 <= rate <= 1.0:
            raise self._platform_error(f"job {job.job_id} was given rate {rate!r}, outside [0, 1]")

    def _apply_start(self, decision: Start) -> None:
        """Check and apply a Start (done for every job of every run: the checks of the
        platform's report are written out, the common case first)."""
        job, tier, nodes = decision.job, decision.tier, decision.nodes
        if job.state != QUEUED:
            raise PolicyError(
                f"policy {self.policy.name!r} at t={self.now:g}: cannot start job "
                f"{job.job_id}: it is not queued (state {job.state})"
            )
        platform = self.platform
        reason = platform.check_start(job, tier, nodes)
        if reason is not None:
            raise PolicyError(f"policy {self.policy.name!r} at t={self.now:g}: cannot start job {job.job_id}: {reason}")
        now = self.now
        held, rate = platform.start(job, tier, nodes)
        if len(held) != job.size or not 0.0 <= rate <= 1.0:
            self._check_held(job, held, rate)  # raises, saying which
        self.placed_processes += job.size
        index = job.index
        del self.queue[index]
        self.running[index] = job
        job.state = RUNNING
        job.nodes = held
        job.tier = tier
        if job.start_time != job.start_time:  # nan: first start
            job.start_time = now
        job.last_start_time = now
        job.updated_time = now
        job.segment_time = now
        if index in self._needs_restore:  # restarted after a suspension: a migration
            self._needs_restore.discard(index)
            job.migrations += 1
            if self.migration_cost > 0:
                job.rate = 0.0
                self._restoring[index] = rate
                heapq.heappush(self._heap, (now + self.migration_cost, RESTORE, next(self._sequence), job, job.version))
                self.policy.on_start(job)
                return
        job.rate = rate
        self._schedule_finish(job)
        self.policy.on_start(job)

    def _suspend(self, job: Job) -> None:
        self._bring_up_to_date(job)
        self._close_segment(job, "suspend")
        self._requeue(job)
        self._needs_restore.add(job.index)
        self.policy.on_suspend(job)
        job.nodes = []  # after the hook, which may want to know what was freed
        job.drop_cpu()  # drawn again if it restarts

    def _kill(self, job: Job) -> None:
        """Discard ``job``'s run: it frees its units and is queued again with no progress. A
        restart is a fresh start (nothing to restore), so it is not a migration."""
        self._bring_up_to_date(job)
        self._close_segment(job, "kill")
        self._requeue(job)
        index, lost = job.index, job.progress
        self.kills += 1
        self.kills_by_job[index] += 1
        self.lost_progress[index] = self.lost_progress.get(index, 0.0) + lost
        self.lost_work += lost * job.cpu_sum
        job.progress = 0.0
        self.policy.on_suspend(job)  # for the policy's indexes, a kill is a suspension
        job.nodes = []
        job.drop_cpu()

    def _requeue(self, job: Job) -> None:
        """Release ``job``'s units and put it back in the queue at its place by arrival."""
        self.platform.release(job)
        del self.running[job.index]
        self._restoring.pop(job.index, None)
        job.state = QUEUED
        job.rate = 0.0
        job.version += 1  # cancels the pending finish or restore event
        queue = self.queue
        if queue and job.index < next(reversed(queue)):
            # Back to its place by arrival order; rare, so an O(Q log Q) rebuild is fine.
            items = sorted([*queue.items(), (job.index, job)])
            queue.clear()
            queue.update(items)
        else:
            queue[job.index] = job

    def _move(self, job: Job, tier: int, nodes: Sequence[int]) -> None:
        old_tier, old_nodes = job.tier, job.nodes
        swap = self.platform.same_units(nodes, old_nodes)  # same node per process: a priority swap
        self._bring_up_to_date(job)
        self._close_segment(job, "move")
        held, rate = self.platform.move(job, tier, nodes)
        self._check_held(job, held, rate)
        self.placed_processes += job.size
        job.nodes = held
        job.tier = tier
        job.segment_time = self.now
        job.version += 1  # cancels the pending finish or restore event
        restoring = job.index in self._restoring
        if not swap:
            job.migrations += 1
        if (not swap and self.migration_cost > 0) or (swap and restoring):
            # A migration restores the job's state on its new VMs; a swap during a restore
            # leaves the restore running, restarted here for its full length (rare).
            job.rate = 0.0
            self._restoring[job.index] = rate
            heapq.heappush(
                self._heap, (self.now + self.migration_cost, RESTORE, next(self._sequence), job, job.version)
            )
        else:
            self._restoring.pop(job.index, None)
            job.rate = rate
            self._schedule_finish(job)
        self.policy.on_move(job, old_tier, old_nodes)

    # -- events --------------------------------------------------------------------------
    def _finish(self, job: Job) -> None:
        job.progress = job.runtime
        job.updated_time = self.now
        self._close_segment(job, "finish")
        job.finish_time = self.now
        job.state = FINISHED
        job.rate = 0.0
        self.platform.release(job)
        del self.running[job.index]
        self.policy.on_finish(job)
        job.nodes = ()  # after the hook; a finished job's units are kept only in its segments
        job.drop_cpu()  # only running jobs hold per-process values

    def _restored(self, job: Job) -> None:
        job.rate = self._restoring.pop(job.index)
        job.updated_time = self.now
        self._schedule_finish(job)

    # -- progress ------------------------------------------------------------------------
    def _close_segment(self, job: Job, how: str) -> None:
        job.tier_time[job.tier] += self.now - job.segment_time
        if self.segments is not None:
            self.segments.append(
                Segment(job.job_id, job.tier, job.segment_time, self.now, tuple(map(int, job.nodes)), how)
            )
        job.segment_time = math.nan

    def _bring_up_to_date(self, job: Job) -> None:
        job.progress = min(job.runtime, job.progress + job.rate * (self.now - job.updated_time))
        job.updated_time = self.now

    def _schedule_finish(self, job: Job) -> None:
        if job.rate > 0:
            finish = self.now + (job.runtime - job.progress) / job.rate
            heapq.heappush(self._heap, (finish, FINISH, next(self._sequence), job, job.version))

    def _apply_rate_changes(self) -> None:
        for job, rate in self.platform.rate_changes():
            if not 0.0 <= rate <= 1.0:
                raise self._platform_error(f"job {job.job_id} was given rate {rate!r}, outside [0, 1]")
            if job.index in self._restoring:
                self._restoring[job.index] = rate  # takes effect when the restore completes
                continue
            if rate == job.rate:
                continue
            self._bring_up_to_date(job)
            job.rate = rate
            job.version += 1
            self._schedule_finish(job)
