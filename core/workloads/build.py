"""From the ``workload`` part of a spec to the jobs of a run.

A trace is read and put through the workload rules; a model is generated and put through the
same rules. Then the offered load is measured exactly and, if the spec asks for one, reached
by scaling inter-arrival gaps; last, the CPU-usage annotation. The result depends on the seed
and the workload spec alone (and the platform size), never on the policy.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import SpecError
from ..jobs import Job
from .bandwidth import annotate_bandwidth
from .cpu import annotate_cpu
from .models import CheckedModel, check_model, generate_checked
from .offered_load import gap_scale, offered_load, rescale_gaps, scale_for_load
from .rules import WorkloadReport, jobs_from_records
from .swf import SWF_FIELDS, SwfLog, header_int, read_swf

__all__ = ["Workload", "build_workload", "model_records", "MODEL_DEFAULT_NODES", "jobs_load", "no_jobs_reason"]

#: Platform size when a model workload's platform does not say (paper 000: 320 nodes).
MODEL_DEFAULT_NODES = 320


@dataclass
class Workload:
    """The jobs of a run and how they were obtained.

    Attributes:
        jobs: In queue order.
        report: What the workload rules did.
        nodes: The platform size the workload was prepared for.
        offered_load: ``sum(size * runtime) / (nodes * span of submits)`` of ``jobs``.
        load_scale: The factor applied to inter-arrival gaps (1 when none).
        header: The trace's or generator's SWF header.
    """

    jobs: list[Job]
    report: WorkloadReport
    nodes: int
    offered_load: float
    load_scale: float
    header: Mapping[str, str]


def jobs_load(jobs: list[Job], nodes: int) -> float:
    """Offered load of ``jobs`` on ``nodes`` nodes."""
    submit = np.fromiter((j.submit_time for j in jobs), np.float64, len(jobs))
    size = np.fromiter((j.size for j in jobs), np.float64, len(jobs))
    runtime = np.fromiter((j.runtime for j in jobs), np.float64, len(jobs))
    return offered_load(submit, size, runtime, nodes)


def _rescale(jobs: list[Job], factor: float) -> None:
    if not jobs or factor == 1.0:
        return
    first = jobs[0].submit_time
    for job in jobs:
        job.submit_time = first + (job.submit_time - first) * factor


def build_workload(
    workload: Mapping[str, Any],
    *,
    seed: int,
    nodes: int | None,
    trace_sha256: str | None = None,
    read_trace: Callable[..., SwfLog] = read_swf,
    model: CheckedModel | None = None,
) -> Workload:
    """Build the jobs of a validated ``workload`` spec.

    Args:
        workload: The ``workload`` section of a validated spec.
        seed: The run's seed.
        nodes: The platform size, or None for the default (the trace's MaxProcs, else
            MaxNodes; 320 for models).
        trace_sha256: The SHA-256 the trace file's bytes must have (see
            :func:`~tiersweep.core.workloads.swf.read_swf`).
        read_trace: Reads the trace; a caller that runs many cells of one trace passes a reader
            that parses each content once (it must take and check ``sha256`` as ``read_swf`` does).
        model: A model workload's parameters as its run plan checked them (see
            :attr:`~tiersweep.core.plan.RunPlan.model`); None checks them here.

    Raises:
        SpecError: The trace is missing, has no size header when one is needed, or the model
            rejects a parameter.
    """
    rules = {"overrun": workload["overrun"], "estimate": workload["estimate"]}
    target = workload["load"]
    if workload["trace"] is not None:
        path = workload["trace"]
        if not os.path.exists(path):
            raise SpecError(f"workload.trace: no such file {path!r} (relative paths are taken from {os.getcwd()})")
        log = read_trace(path, lenient=workload["lenient"], sha256=trace_sha256)
        capacity = "the platform spec"
        if nodes is None:
            nodes = header_int(log.header, "MaxProcs", "MaxNodes")
            key = "MaxProcs" if "MaxProcs" in log.header else "MaxNodes"
            capacity = f"the trace's {key} header, {log.header.get(key)!r}"
            if nodes is None:
                raise SpecError(f"platform.nodes: {path} has no MaxProcs or MaxNodes header; set platform.nodes")
            if nodes < 1:
                raise SpecError(
                    f"platform.nodes: {path} says its machine has {nodes} processors (MaxProcs); set platform.nodes"
                )
        report = WorkloadReport(malformed_skipped=log.malformed_skipped)
        jobs, report = jobs_from_records(
            log.records,
            capacity=nodes,
            jobs=workload["jobs"],
            size_field=workload["size_field"],
            report=report,
            **rules,
        )
        header = log.header
        scale = 1.0
        source = f"workload.trace: {path}"
    else:
        capacity = "the platform spec" if nodes else "the models' default"
        nodes = nodes or MODEL_DEFAULT_NODES
        records, header, scale = model_records(workload, seed=seed, nodes=nodes, model=model)
        jobs, report = jobs_from_records(records, capacity=nodes, **rules)
        source = f"workload.model: {workload['model']}"
    if not jobs:
        raise SpecError(f"{source}: {no_jobs_reason(report, nodes, capacity)}")
    if target is not None and workload["trace"] is not None:
        factor = _gap_scale(jobs_load(jobs, nodes), target, [job.submit_time for job in jobs])
        _rescale(jobs, factor)
        scale *= factor
    annotate_cpu(
        jobs,
        seed=seed,
        usage=tuple(workload["cpu_usage"]),
        accuracy=workload["cpu_accuracy"],
        prior=workload["cpu_prior"],
        guess=workload["cpu_guess"],
    )
    annotate_bandwidth(jobs, seed=seed, model=workload["bandwidth"])
    return Workload(jobs, report, nodes, jobs_load(jobs, nodes), scale, header)


def _gap_scale(load: float, target: float, submit: Any) -> float:
    """:func:`~.offered_load.gap_scale` with its refusal as the spec error naming ``workload.load``."""
    try:
        return gap_scale(load, target, submit)
    except ValueError as error:
        raise SpecError(
            f"workload.load: cannot reach an offered load of {target:g}: {error}; drop workload.load"
        ) from None


def no_jobs_reason(report: WorkloadReport, nodes: int, capacity: str) -> str:
    """Why the workload rules left no job to simulate, from their ``report``: every job line
    malformed (lenient), invalid or larger than the platform of ``nodes`` processors
    (``capacity``: where that size came from). A run of zero jobs is never meant, and would
    otherwise look like a run that went well."""
    reasons = []
    if report.malformed_skipped:
        reasons.append(f"{report.malformed_skipped} malformed (skipped, lenient)")
    if report.dropped_invalid:
        reasons.append(
            f"{report.dropped_invalid} invalid (size <= 0, runtime < 0 or submit time < 0; see workload.size_field)"
        )
    if report.dropped_too_large:
        reasons.append(f"{report.dropped_too_large} larger than the platform's {nodes} processors (from {capacity})")
    lines = report.records + report.malformed_skipped
    return f"no job left to simulate: of {lines} job line(s), {', '.join(reasons) or 'none kept'}"


def model_records(
    workload: Mapping[str, Any], *, seed: int, nodes: int, model: CheckedModel | None = None
) -> tuple[np.ndarray, dict[str, str], float]:
    """Generate a validated model ``workload`` as SWF records, at its target load if it has one.

    The model's parameters are checked once (or taken as ``model`` gives them, checked for a
    machine of ``nodes``), and each draw at another load scale reads them as they are.

    Returns:
        The records, the SWF header (with ``LoadScale`` and ``OfferedLoad`` updated) and the
        gap scale applied.
    """
    name = workload["model"]
    rules = {"overrun": workload["overrun"], "estimate": workload["estimate"]}
    if model is None or model.machine_size != nodes:
        try:
            model = check_model(
                name, workload["preset"], workload["params"], machine_size=nodes, max_size=workload["max_size"]
            )
        except (TypeError, ValueError) as error:
            raise SpecError(f"workload.params: {name}: {error}") from None
    checked = model

    def make(load_scale: float) -> tuple[np.ndarray, Mapping[str, str]]:
        out = generate_checked(checked, workload["jobs"], seed=seed, load_scale=load_scale)
        return out.records, out.header

    def load_of(records: np.ndarray) -> float:
        return jobs_load(jobs_from_records(records, capacity=nodes, **rules)[0], nodes)

    target = workload["load"]
    method = workload["load_method"]
    if method == "auto":
        method = "model" if name == "feitelson96" else "rescale"
    if target is None:
        scale = 1.0
        records, header = make(scale)
    elif method == "model":
        try:
            scale = scale_for_load(lambda f: load_of(make(f)[0]), target)
        except ValueError as error:  # the model's own arrival scaling cannot produce that load
            raise SpecError(
                f"workload.load: {name}'s arrivals cannot be scaled to an offered load of {target:g} "
                f"({error}); ask for a lower load or more jobs"
            ) from None
        records, header = make(scale)
    else:
        records, header = make(1.0)
        scale = _gap_scale(load_of(records), target, records[:, SWF_FIELDS.index("submit_time")])
        records = records.copy()
        records[:, SWF_FIELDS.index("submit_time")] = rescale_gaps(records[:, SWF_FIELDS.index("submit_time")], scale)
    header = {**header, "LoadScale": f"{scale:.6g}", "OfferedLoad": f"{load_of(records):.6g}"}
    return records, header, scale
