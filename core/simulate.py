"""``simulate(spec) -> RunResult``: the unit of work everything else fans out."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from .engine import Engine
from .metrics import job_records, run_metrics
from .platforms import make_platform, platform_class
from .policies import make_policy
from .segments import segment_columns
from .spec import validate_spec
from .version import MODEL_VERSION
from .workloads.build import build_workload

__all__ = ["RunResult", "simulate"]


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
    """

    spec: dict[str, Any]
    metrics: dict[str, float]
    report: dict[str, int]
    jobs: dict[str, np.ndarray] = field(repr=False)
    end_time: float
    wall_seconds: float
    model_version: str = MODEL_VERSION
    segments: dict[str, list] | None = field(default=None, repr=False)


def simulate(spec: Mapping[str, Any], *, record_segments: bool = False, trace_sha256: str | None = None) -> RunResult:
    """Run one simulation.

    Args:
        spec: A run spec (see :mod:`tiersweep.core.spec`).
        record_segments: Also return every stay of every job on its VMs (for Gantt charts).
        trace_sha256: The SHA-256 the trace's bytes must have (a sweep cell's, whose id names
            that content); None reads the trace as it is.

    Raises:
        SpecError: The spec is invalid or names a trace that cannot be used.
        TraceFormatError: The trace has a malformed line (and ``workload.lenient`` is false).
        TraceChangedError: The trace's bytes do not have the digest ``trace_sha256``.
    """
    started = time.perf_counter()
    spec = validate_spec(spec)
    workload, platform_spec, policy_spec = spec["workload"], spec["platform"], spec["policy"]

    platform_cls = platform_class(platform_spec["kind"])
    capacity = platform_cls.job_capacity(platform_spec)
    built = build_workload(workload, seed=spec["seed"], nodes=capacity, trace_sha256=trace_sha256)
    if "nodes" in platform_spec:
        platform_spec["nodes"] = built.nodes  # resolved from the trace when not given
    platform = make_platform(platform_spec["kind"], platform_spec, seed=spec["seed"])
    jobs, report = built.jobs, built.report
    policy = make_policy(policy_spec["name"], **{k: v for k, v in policy_spec.items() if k != "name"})
    engine = Engine(jobs, platform, policy, migration_cost=platform_spec["migration_cost"], record_segments=record_segments)
    engine.run()

    records = job_records(jobs, engine.kills_by_job)
    records.update(platform.extra_job_records(jobs))
    metrics = run_metrics(records, platform.capacity, engine.overflow_seconds, kills=engine.kills, lost_work=engine.lost_work)
    finished = records["finish_time"][records["finish_time"] == records["finish_time"]]
    span_end = float(finished.max()) if len(finished) else float("nan")
    metrics.update(platform.extra_metrics(records, metrics["span_start_time"], span_end))
    metrics["dropped"] = report.dropped
    metrics["offered_load"] = built.offered_load
    metrics["load_scale"] = built.load_scale
    return RunResult(
        spec=spec,
        metrics=metrics,
        report=report.as_dict(),
        jobs=records,
        end_time=engine.now if jobs else 0.0,
        wall_seconds=time.perf_counter() - started,
        segments=segment_columns(engine.segments) if record_segments else None,
    )
