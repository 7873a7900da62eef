"""Jobs: what the workload says about each job, plus the state the engine keeps for it."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import numpy as np

__all__ = ["Job", "CpuSource", "QUEUED", "RUNNING", "FINISHED", "PENDING", "REJECTED"]

# Job states (ints, compared in the hot path).
PENDING = 0  #: not yet submitted
QUEUED = 1  #: waiting in the queue (never started, or suspended)
RUNNING = 2  #: holding resources (progressing, or restoring after a migration)
FINISHED = 3  #: done
REJECTED = 4  #: turned away at admission (never runs)


_ONES: dict[int, tuple[float, ...]] = {}


class CpuSource(Protocol):
    """Where a job's per-process CPU usage is drawn lazily (the workload's annotation gives one,
    such as :class:`tiersweep.core.workloads.cpu.CpuDraws`)."""

    def materialize(self, offset: int, size: int) -> tuple[Sequence[float], Sequence[float]]:
        """The true and estimated usage of the ``size`` processes whose draws start at ``offset``."""
        ...

    def materialize_arrays(self, offset: int, size: int) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`materialize` as float64 arrays (the same values), for a compiled copy."""
        ...


class Job:
    """One rigid parallel job.

    The workload fields are set once when the workload is built; the engine owns the state
    fields and is the only writer. Policies read both and must not assign to either.

    Workload fields:
        index: Position in the workload, which is ordered by (submit time, trace order); the
            queue order key.
        job_id: The job number in the trace (SWF field 1).
        submit_time: Submission instant, in the trace's own time base (seconds).
        size: Number of processes (nodes, VMs or slots it needs).
        runtime: Seconds of work at rate 1 (after the overrun rule). It finishes when its
            progress reaches this.
        requested_time: The user's wall-time request, or ``math.nan`` if the trace has none.
        estimate: The runtime the scheduler believes (per the workload's ``estimate`` rule).
        cpu_true: True CPU usage of each process on a dedicated node, in (0, 1] (a list of
            ``size`` values; all 1.0 unless the workload's CPU annotation says otherwise).
            Materialised on first read when the annotation drew it lazily (see
            :mod:`tiersweep.core.workloads.cpu`), or when no annotation set it, and dropped
            again (:meth:`drop_cpu`) whenever the job stops holding resources.
        cpu_est: The per-process CPU usage the scheduler believes (list of ``size`` values).
        cpu_sum: ``sum(cpu_true)``: the CPU-seconds the job consumes per second of progress.
        bandwidth: Per-VM bandwidth demand in Mbps (0 unless a bandwidth annotation set it;
            used by network-aware platforms).
        user_id: The submitting user (SWF field 12), a number >= 0, or -1 when the trace does
            not say (every job of a synthetic model). Runtime predictors group jobs by it.

    State fields:
        state: PENDING, QUEUED, RUNNING, FINISHED or REJECTED.
        start_time: First start (``nan`` before). ``wait = start_time - submit_time``.
        last_start_time: Start of the current or latest run segment.
        finish_time: Completion instant (``nan`` before).
        progress: Seconds of work done as of ``updated_time``.
        rate: Current progress rate (work-seconds per second).
        updated_time: When ``progress`` was last brought up to date.
        version: Bumped whenever the pending finish event becomes stale.
        migrations: Number of suspend + restore cycles.
        tier: The tier it runs in (0 = foreground / dedicated).
        nodes: While running, ``nodes[p]`` is the node (or VM, slot) of process ``p``.
        tier_time: Seconds spent holding resources in each tier (a list indexed by tier).
        segment_time: When the current stay in ``tier`` began (nan when not running).
    """

    __slots__ = (
        "index",
        "job_id",
        "submit_time",
        "size",
        "runtime",
        "requested_time",
        "estimate",
        "_cpu_true",
        "_cpu_est",
        "_cpu_draws",
        "_cpu_offset",
        "cpu_sum",
        "bandwidth",
        "user_id",
        "state",
        "start_time",
        "last_start_time",
        "finish_time",
        "progress",
        "rate",
        "updated_time",
        "version",
        "migrations",
        "tier",
        "nodes",
        "tier_time",
        "segment_time",
    )

    def __init__(
        self,
        index: int,
        job_id: int,
        submit_time: float,
        size: int,
        runtime: float,
        requested_time: float = math.nan,
        estimate: float | None = None,
        cpu_true: Sequence[float] | None = None,
        cpu_est: Sequence[float] | None = None,
        user_id: int = -1,
    ) -> None:
        if size <= 0:
            raise ValueError(f"job {job_id}: size must be positive, got {size}")
        if runtime < 0:
            raise ValueError(f"job {job_id}: runtime must be non-negative, got {runtime}")
        self.index = index
        self.job_id = job_id
        self.submit_time = float(submit_time)
        self.size = int(size)
        self.runtime = float(runtime)
        self.requested_time = float(requested_time)
        self.estimate = float(runtime if estimate is None else estimate)
        self._cpu_draws: CpuSource | None = None
        self._cpu_offset = 0
        self._cpu_true: Sequence[float] | None
        self._cpu_est: Sequence[float] | None
        if cpu_true is None:
            # Dedicated use of every CPU, made on first read (_materialize_cpu): a workload's
            # CPU annotation replaces it anyway, and on a large log the lists of its widest
            # jobs alone would take a hundred megabytes.
            self._cpu_true = None
            self.cpu_sum = float(self.size)
        else:
            self._cpu_true = cpu_true
            self.cpu_sum = float(sum(cpu_true))
        self._cpu_est = self._cpu_true if cpu_est is None else cpu_est
        self.bandwidth = 0.0
        self.user_id = int(user_id)
        self.state = PENDING
        self.start_time = math.nan
        self.last_start_time = math.nan
        self.finish_time = math.nan
        self.progress = 0.0
        self.rate = 0.0
        self.updated_time = math.nan
        self.version = 0
        self.migrations = 0
        self.tier = 0
        self.nodes: Sequence[int] = []
        self.tier_time: list[float] = [0.0]
        self.segment_time = math.nan

    @classmethod
    def from_columns(
        cls,
        job_ids: Sequence[int],
        submit_times: Sequence[float],
        sizes: Sequence[int],
        runtimes: Sequence[float],
        requested_times: Sequence[float],
        estimates: Sequence[float],
        user_ids: Sequence[int] | None = None,
    ) -> list[Job]:
        """Jobs ``0 .. n-1`` from parallel sequences of values already checked and typed:
        ints for ``job_ids``, ``sizes`` (positive) and ``user_ids`` (-1 for none; all -1 when
        not given), floats for the rest (runtimes non-negative), as
        :func:`~tiersweep.core.workloads.rules.jobs_from_records` makes them.

        Each job is what ``Job(index, job_id, submit, size, runtime, requested, estimate,
        user_id=user)`` makes (tests/test_run_cost.py compares every field), without the
        per-job checks, conversions and call: a third less time on a log of hundreds of
        thousands of jobs.
        """
        new = object.__new__
        nan = math.nan
        jobs: list[Job] = []
        append = jobs.append
        users: Iterable[int] = itertools.repeat(-1) if user_ids is None else user_ids
        for index, (job_id, submit, size, runtime, requested, estimate, user_id) in enumerate(
            zip(job_ids, submit_times, sizes, runtimes, requested_times, estimates, users)
        ):
            job = new(cls)
            job.index = index
            job.job_id = job_id
            job.submit_time = submit
            job.size = size
            job.runtime = runtime
            job.requested_time = requested
            job.estimate = estimate
            job._cpu_draws = None
            job._cpu_offset = 0
            job._cpu_true = None
            job._cpu_est = None
            job.cpu_sum = float(size)
            job.bandwidth = 0.0
            job.user_id = user_id
            job.state = PENDING
            job.start_time = nan
            job.last_start_time = nan
            job.finish_time = nan
            job.progress = 0.0
            job.rate = 0.0
            job.updated_time = nan
            job.version = 0
            job.migrations = 0
            job.tier = 0
            job.nodes = []
            job.tier_time = [0.0]
            job.segment_time = nan
            append(job)
        return jobs

    # -- CPU usage: set by the workload's annotation, possibly drawn lazily -----------------------
    @property
    def cpu_true(self) -> Sequence[float]:
        if self._cpu_true is None:
            self._materialize_cpu()
        assert self._cpu_true is not None  # _materialize_cpu always sets both
        return self._cpu_true

    @cpu_true.setter
    def cpu_true(self, values: Sequence[float]) -> None:
        self._cpu_true = values
        self._cpu_draws = None

    @property
    def cpu_est(self) -> Sequence[float]:
        if self._cpu_est is None:
            self._materialize_cpu()
        assert self._cpu_est is not None  # _materialize_cpu always sets both
        return self._cpu_est

    @cpu_est.setter
    def cpu_est(self, values: Sequence[float]) -> None:
        if self._cpu_true is None:
            self._materialize_cpu()
        self._cpu_est = values
        self._cpu_draws = None  # set by hand: kept (see drop_cpu)

    def set_cpu(self, true: Sequence[float], est: Sequence[float] | None, total: float) -> None:
        """Set the per-process CPU usage now (``est`` None: the same as ``true``)."""
        self._cpu_true = true
        self._cpu_est = true if est is None else est
        self._cpu_draws = None
        self.cpu_sum = total

    def set_cpu_draws(self, draws: CpuSource, offset: int, total: float) -> None:
        """Let the per-process CPU usage be drawn from ``draws`` at ``offset`` on first read;
        ``total`` is their sum."""
        self._cpu_true = self._cpu_est = None
        self._cpu_draws = draws
        self._cpu_offset = offset
        self.cpu_sum = total

    def drop_cpu(self) -> None:
        """Forget the per-process CPU usage if it can be drawn again (the engine calls this when
        the job stops holding resources: finished, suspended or killed). The next read draws the
        same values from the stream, so only the running jobs' values are ever held: on a large
        log that is megabytes instead of gigabytes. Values set by hand are kept."""
        if self._cpu_draws is not None:
            self._cpu_true = self._cpu_est = None

    def cpu_values(self) -> tuple[Sequence[float] | np.ndarray, Sequence[float] | np.ndarray]:
        """``(cpu_true, cpu_est)`` for one read by a copier (the compiled run): values drawn
        lazily come as fresh float64 arrays and are not kept on the job; others as held."""
        if self._cpu_true is None and self._cpu_draws is not None:
            return self._cpu_draws.materialize_arrays(self._cpu_offset, self.size)
        return self.cpu_true, self.cpu_est

    def _materialize_cpu(self) -> None:
        if self._cpu_draws is not None:
            self._cpu_true, self._cpu_est = self._cpu_draws.materialize(self._cpu_offset, self.size)
            return
        # Never annotated: dedicated use of every CPU, one shared tuple per size.
        ones = _ONES.get(self.size)
        if ones is None:
            ones = _ONES[self.size] = (1.0,) * self.size
        if self._cpu_true is None:
            self._cpu_true = ones
        if self._cpu_est is None:
            self._cpu_est = ones

    def __repr__(self) -> str:
        return (
            f"Job(id={self.job_id}, submit={self.submit_time:g}, size={self.size}, "
            f"runtime={self.runtime:g}, estimate={self.estimate:g})"
        )
