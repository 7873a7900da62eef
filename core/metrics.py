"""Per-job records and per-run metrics (DESIGN section 3)."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from .jobs import Job

__all__ = ["BSLD_BOUND", "bounded_slowdown", "job_records", "run_metrics"]

#: The runtime floor of bounded slowdown and expansion factor, in seconds.
BSLD_BOUND = 10.0


def bounded_slowdown(response: float, runtime: float) -> float:
    """``max(1, response / max(10 s, runtime))``: the standard bounded slowdown.

    (Paper 000 prints ``max(1, t_a)`` in the denominator, a known typo.)
    """
    return max(1.0, response / max(BSLD_BOUND, runtime))


def job_records(jobs: Sequence[Job]) -> dict[str, np.ndarray]:
    """One column per field, one row per job, in workload order.

    Columns: ``job_id``, ``submit_time``, ``start_time`` (first start), ``finish_time``,
    ``size``, ``runtime`` (work at rate 1, after the overrun rule), ``requested_time`` (nan when
    the trace has none), ``estimate``, ``wait``, ``response``, ``bsld``, ``xf`` and
    ``migrations``. Times are in the trace's own time base.
    """
    submit = np.fromiter((j.submit_time for j in jobs), np.float64, len(jobs))
    start = np.fromiter((j.start_time for j in jobs), np.float64, len(jobs))
    finish = np.fromiter((j.finish_time for j in jobs), np.float64, len(jobs))
    runtime = np.fromiter((j.runtime for j in jobs), np.float64, len(jobs))
    response = finish - submit
    xf = response / np.maximum(BSLD_BOUND, runtime)
    return {
        "job_id": np.fromiter((j.job_id for j in jobs), np.int64, len(jobs)),
        "submit_time": submit,
        "start_time": start,
        "finish_time": finish,
        "size": np.fromiter((j.size for j in jobs), np.int64, len(jobs)),
        "runtime": runtime,
        "requested_time": np.fromiter((j.requested_time for j in jobs), np.float64, len(jobs)),
        "estimate": np.fromiter((j.estimate for j in jobs), np.float64, len(jobs)),
        "wait": start - submit,
        "response": response,
        "bsld": np.maximum(1.0, xf),
        "xf": xf,
        "migrations": np.fromiter((j.migrations for j in jobs), np.int64, len(jobs)),
    }


def _stats(prefix: str, values: np.ndarray) -> dict[str, float]:
    if values.size == 0:
        return {f"mean_{prefix}": float("nan"), f"median_{prefix}": float("nan"), f"p90_{prefix}": float("nan")}
    return {
        f"mean_{prefix}": float(values.mean()),
        f"median_{prefix}": float(np.median(values)),
        f"p90_{prefix}": float(np.percentile(values, 90)),
    }


def run_metrics(records: dict[str, np.ndarray], capacity: int) -> dict[str, float]:
    """Aggregate per-job records into run metrics.

    Utilisation is busy processor-seconds over ``capacity x span``, where the span runs from
    the first submission to the last completion; since a process consumes its CPU share times
    its job's rate, the busy processor-seconds of a job are ``size x runtime`` (x its CPU usage
    on platforms that model it), whatever rates it ran at.

    Returns:
        ``jobs``, mean/median/p90 of ``wait``, ``response``, ``bsld`` and ``xf``,
        ``migrations_per_job``, ``utilization``, ``makespan`` and ``span_start_time``.
    """
    n = len(records["job_id"])
    metrics: dict[str, float] = {"jobs": n}
    for name in ("wait", "response", "bsld", "xf"):
        metrics.update(_stats(name, records[name]))
    if n == 0:
        metrics.update(migrations_per_job=float("nan"), utilization=float("nan"), makespan=0.0, span_start_time=float("nan"))
        return metrics
    first = float(records["submit_time"].min())
    last = float(records["finish_time"].max())
    busy = float(np.dot(records["size"].astype(np.float64), records["runtime"]))
    span = last - first
    metrics["migrations_per_job"] = float(records["migrations"].mean())
    metrics["utilization"] = busy / (capacity * span) if span > 0 else float("nan")
    metrics["makespan"] = span
    metrics["span_start_time"] = first
    return metrics
