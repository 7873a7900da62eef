"""``simulate(spec) -> RunResult``: the unit of work everything else fans out."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from .engine import Engine
from .metrics import job_records, run_metrics
from .plan import RunPlan
from .platforms import platform_class
from .platforms.base import BasePlatform
from .policies import policy_class
from .policies.base import BasePolicy
from .segments import segment_columns
from .spec import plan_run
from .version import MODEL_VERSION
from .workloads.build import Workload, build_workload
from .workloads.swf import SwfLog, read_swf

__all__ = ["RunResult", "Assembly", "assemble", "run_plan", "simulate"]


@dataclass(frozen=True)
class RunResult:
    """Everything one run produced; it describes itself.

    Attributes:
        spec: The validated spec, every default filled in (``platform.nodes`` resolved).
        metrics: Run metrics (see :func:`tiersweep.core.metrics.run_metrics`), plus ``dropped``.
        report: What the workload rules dropped or changed (see
            :class:`tiersweep.core.workloads.rules.WorkloadReport`).
        jobs: Per-job records, one numpy array per column (see :func:`tiersweep.core.metrics.job_records`).
        end_time: The simulated time of the last event.
        wall_seconds: Wall-clock seconds the run took, workload loading included.
        model_version: :data:`tiersweep.core.version.MODEL_VERSION` of the code that ran it.
        segments: With ``record_segments``: one row per stay of a job on its VMs, as columns
            (:func:`~tiersweep.core.segments.segment_columns`); else None.
        path: How the engine ran (``Engine.path``): the compiled whole run, or ``python loop
            (<why>)``. The results are the same on both; only the speed differs.
    """

    spec: dict[str, Any]
    metrics: dict[str, float]
    report: dict[str, int]
    jobs: dict[str, np.ndarray] = field(repr=False)
    end_time: float
    wall_seconds: float
    model_version: str = MODEL_VERSION
    segments: dict[str, list] | None = field(default=None, repr=False)
    path: str = ""


@dataclass(frozen=True)
class Assembly:
    """A run built from its plan, ready for its engine.

    Attributes:
        plan: The plan, the machine size resolved (from the trace when the spec left it unset).
        workload: The built workload (its jobs, report and offered load).
        platform: The platform, idle.
        policy: The policy.
    """

    plan: RunPlan
    workload: Workload
    platform: BasePlatform
    policy: BasePolicy

    def engine(
        self,
        *,
        observer: Callable[[Engine], None] | None = None,
        record_segments: bool = False,
        progress: Callable[[int, int, float], None] | None = None,
    ) -> Engine:
        """The engine of this run, with the engine's keys of the plan (not yet run)."""
        keys = {**self.plan.engine, "observer": observer, "record_segments": record_segments, "progress": progress}
        return Engine(self.workload.jobs, self.platform, self.policy, **keys)

    def records(self, engine: Engine) -> dict[str, np.ndarray]:
        """Per-job records of the run ``engine`` made, the platform's own columns included."""
        jobs = self.workload.jobs
        records = job_records(jobs, engine.kills_by_job)
        records.update(self.platform.extra_job_records(jobs))
        return records


def assemble(
    plan: RunPlan,
    *,
    trace_sha256: str | None = None,
    policy_factory: Callable[..., BasePolicy] | None = None,
    read_trace: Callable[..., SwfLog] = read_swf,
) -> Assembly:
    """Build the workload, the platform and the policy of ``plan``: the one assembly of a run.

    Args:
        plan: A run plan (see :func:`tiersweep.core.spec.plan_run`); its sections are not checked again.
        trace_sha256: The SHA-256 the trace's bytes must have (None reads the trace as it is).
        policy_factory: Builds the policy from the plan's policy parameters (keywords); default:
            the registered class (an instrumented subclass, say, for contract checks).
        read_trace: Reads the trace (see :func:`~tiersweep.core.workloads.build.build_workload`).
    """
    platform_cls = platform_class(plan.platform_kind)
    capacity = platform_cls.job_capacity(plan.platform)
    built = build_workload(
        plan.workload,
        seed=plan.seed,
        nodes=capacity,
        trace_sha256=trace_sha256,
        read_trace=read_trace,
        model=plan.model,
    )
    plan = plan.with_nodes(built.nodes)  # resolved from the trace when not given
    platform = platform_cls(**plan.platform, seed=plan.seed)
    policy = (policy_factory or policy_class(plan.policy_name))(**plan.policy)
    return Assembly(plan, built, platform, policy)


def run_plan(
    plan: RunPlan,
    *,
    record_segments: bool = False,
    trace_sha256: str | None = None,
    read_trace: Callable[..., SwfLog] = read_swf,
    progress: Callable[[int, int, float], None] | None = None,
) -> RunResult:
    """Run ``plan`` (see :func:`simulate`, which plans a spec and runs it here; ``read_trace``:
    see :func:`~tiersweep.core.workloads.build.build_workload`)."""
    started = time.perf_counter()
    run = assemble(plan, trace_sha256=trace_sha256, read_trace=read_trace)
    engine = run.engine(record_segments=record_segments, progress=progress)
    engine.run()

    built, platform = run.workload, run.platform
    records = run.records(engine)
    metrics = run_metrics(
        records, platform.capacity, engine.overflow_seconds, kills=engine.kills, lost_work=engine.lost_work
    )
    finished = records["finish_time"][records["finish_time"] == records["finish_time"]]
    span_end = float(finished.max()) if len(finished) else float("nan")
    metrics.update(platform.extra_metrics(records, metrics["span_start_time"], span_end))
    metrics["dropped"] = built.report.dropped
    metrics["offered_load"] = built.offered_load
    metrics["load_scale"] = built.load_scale
    return RunResult(
        spec=run.plan.spec,
        metrics=metrics,
        report=built.report.as_dict(),
        jobs=records,
        end_time=engine.now if built.jobs else 0.0,
        wall_seconds=time.perf_counter() - started,
        # (the engine keeps segments exactly when asked to record them)
        segments=segment_columns(engine.segments) if engine.segments is not None else None,
        path=engine.path,
    )


def simulate(
    spec: Mapping[str, Any],
    *,
    record_segments: bool = False,
    trace_sha256: str | None = None,
    progress: Callable[[int, int, float], None] | None = None,
) -> RunResult:
    """Run one simulation: plan ``spec`` (:func:`~tiersweep.core.spec.plan_run`) and run the plan.

    Args:
        spec: A run spec (see :mod:`tiersweep.core.spec`).
        record_segments: Also return every stay of every job on its VMs (for Gantt charts).
        trace_sha256: The SHA-256 the trace's bytes must have (a sweep cell's, whose id names
            that content); None reads the trace as it is.
        progress: Called now and then with the jobs finished, the jobs in all and the seconds
            simulated (see :class:`~tiersweep.core.engine.Engine`); it changes nothing in the run.

    Raises:
        SpecError: The spec is invalid or names a trace that cannot be used.
        TraceFormatError: The trace has a malformed line (and ``workload.lenient`` is false).
        TraceChangedError: The trace's bytes do not have the digest ``trace_sha256``.
    """
    started = time.perf_counter()
    plan = plan_run(spec)
    result = run_plan(plan, record_segments=record_segments, trace_sha256=trace_sha256, progress=progress)
    # (the time taken includes planning, as it did the validation)
    return replace(result, wall_seconds=time.perf_counter() - started)
