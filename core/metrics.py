"""Per-job records and per-run metrics (DESIGN section 3)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence

import numpy as np

from .jobs import Job
from .metric_catalogue import STAT_COLUMNS, job_columns, metric_names
from .sums import reproducible_dot

__all__ = ["BSLD_BOUND", "bounded_slowdown", "job_records", "run_metrics", "metric_names", "job_columns"]

#: The runtime floor of bounded slowdown and expansion factor, in seconds.
BSLD_BOUND = 10.0


def bounded_slowdown(response: float, runtime: float) -> float:
    """``max(1, response / max(10 s, runtime))``: the standard bounded slowdown.

    (Paper 000 prints ``max(1, t_a)`` in the denominator, a known typo.)
    """
    return max(1.0, response / max(BSLD_BOUND, runtime))


def job_records(jobs: Sequence[Job], kills_by_job: Mapping[int, int] | None = None) -> dict[str, np.ndarray]:
    """One column per field, one row per job, in workload order.

    Columns: ``job_id``, ``submit_time``, ``start_time`` (first start), ``finish_time``,
    ``size``, ``runtime`` (work at rate 1, after the overrun rule), ``requested_time`` (nan when
    the trace has none), ``estimate``, ``wait``, ``response``, ``bsld``, ``xf``,
    ``migrations``, ``kills`` (times it was killed and requeued, from ``kills_by_job``, the
    engine's :attr:`~tiersweep.core.engine.Engine.kills_by_job`; 0 without it), ``cpu_mean``
    (mean true CPU usage of its processes) and ``tier<t>_duration`` for each tier t (seconds
    it held VMs there). Times are in the trace's own time base.
    """
    submit = np.fromiter((j.submit_time for j in jobs), np.float64, len(jobs))
    start = np.fromiter((j.start_time for j in jobs), np.float64, len(jobs))
    finish = np.fromiter((j.finish_time for j in jobs), np.float64, len(jobs))
    runtime = np.fromiter((j.runtime for j in jobs), np.float64, len(jobs))
    response = finish - submit
    xf = response / np.maximum(BSLD_BOUND, runtime)
    tiers = len(jobs[0].tier_time) if jobs else 1
    if tiers == 1:  # dedicated nodes: a flat read, a third of the time of a list of lists
        tier_time = np.fromiter((j.tier_time[0] for j in jobs), np.float64, len(jobs)).reshape(len(jobs), 1)
    else:
        flat = itertools.chain.from_iterable([j.tier_time for j in jobs])
        tier_time = np.fromiter(flat, np.float64, len(jobs) * tiers).reshape(len(jobs), tiers)
    size = np.fromiter((j.size for j in jobs), np.int64, len(jobs))
    records = {
        "job_id": np.fromiter((j.job_id for j in jobs), np.int64, len(jobs)),  # order: job_columns()
        "submit_time": submit,
        "start_time": start,
        "finish_time": finish,
        "size": size,
        "runtime": runtime,
        "requested_time": np.fromiter((j.requested_time for j in jobs), np.float64, len(jobs)),
        "estimate": np.fromiter((j.estimate for j in jobs), np.float64, len(jobs)),
        "wait": start - submit,
        "response": response,
        "bsld": np.maximum(1.0, xf),
        "xf": xf,
        "migrations": np.fromiter((j.migrations for j in jobs), np.int64, len(jobs)),
        "kills": np.zeros(len(jobs), np.int64),
        "cpu_mean": np.fromiter((j.cpu_sum for j in jobs), np.float64, len(jobs)) / np.maximum(size, 1),
    }
    if kills_by_job:  # (only policies that kill: KEASY)
        kills = records["kills"]
        for index, count in kills_by_job.items():
            kills[index] = count
    for tier in range(tiers):
        records[f"tier{tier}_duration"] = tier_time[:, tier]
    return records


# np.median and np.percentile import numpy.ma on first use (to check for masked arrays), about
# 10 ms: a tenth of what a whole small run may take. The two helpers below compute the same
# values the same way (the same floating-point operations, in the same order) on the plain
# float arrays the metrics have; tests/test_metrics.py checks them against numpy.


def _median(values: np.ndarray) -> float:
    """``np.median(values)`` of a non-empty 1-d float array: the middle value, or the mean of
    the two middle values computed as ``np.mean`` does, ``(a + b) / 2``; nan if any is nan."""
    if np.isnan(values).any():
        return float("nan")
    half = values.size // 2
    if values.size % 2:
        return float(np.partition(values, half)[half])
    part = np.partition(values, (half - 1, half))
    return float((part[half - 1] + part[half]) / 2)


def _percentile(values: np.ndarray, q: float) -> float:
    """``np.percentile(values, q)`` (the default ``linear`` method) of a non-empty 1-d float
    array: numpy's index ``(n - 1) * (q / 100)`` and its two-sided interpolation between the
    neighbouring order statistics; nan if any value is nan."""
    if np.isnan(values).any():
        return float("nan")
    n = values.size
    index = (n - 1) * (q / 100)
    below = math.floor(index)
    if index >= n - 1:
        return float(values.max())
    part = np.partition(values, (below, below + 1))
    a, b = part[below], part[below + 1]
    t = index - below
    diff = b - a
    # numpy's _lerp: from the nearer neighbour, so that t = 0 and t = 1 give a and b exactly.
    return float(b - diff * (1 - t)) if t >= 0.5 else float(a + diff * t)


def _stats(prefix: str, values: np.ndarray) -> dict[str, float]:
    if values.size == 0:
        return {f"mean_{prefix}": float("nan"), f"median_{prefix}": float("nan"), f"p90_{prefix}": float("nan")}
    return {
        f"mean_{prefix}": float(values.mean()),
        f"median_{prefix}": _median(values),
        f"p90_{prefix}": _percentile(values, 90),
    }


def run_metrics(
    records: dict[str, np.ndarray],
    capacity: int,
    overflow_seconds: float = 0.0,
    *,
    kills: int = 0,
    lost_work: float = 0.0,
) -> dict[str, float]:
    """Aggregate per-job records into run metrics.

    Utilisation is busy CPU-seconds over ``capacity x span`` (capacity in nodes; the span
    runs from the first submission to the last completion). A process consumes its true CPU
    usage times its job's rate, so whatever rates a job ran at, its busy CPU-seconds are
    ``runtime x sum of its processes' CPU usage``: the work it carried, however it was
    spread over tiers. ``overflow_seconds`` (CPU time a node's processes used beyond its
    whole CPU, possible under the paper's 4 % idle floor) is subtracted, so that no node counts
    more than fully busy. ``lost_work`` (CPU-seconds of runs that were killed and started
    again from zero; the engine's :attr:`~tiersweep.core.engine.Engine.lost_work`) kept the
    CPUs busy too, so it is added: utilisation says how busy the machine was, and
    ``utilization - lost_work / (capacity x makespan)`` how much of it was useful.

    Args:
        records: Per-job records (:func:`job_records`).
        capacity: Nodes (or the platform's units) of the utilisation denominator.
        overflow_seconds: The engine's :attr:`~tiersweep.core.engine.Engine.overflow_seconds`.
        kills: The engine's :attr:`~tiersweep.core.engine.Engine.kills` (0 where no policy
            kills).
        lost_work: The engine's :attr:`~tiersweep.core.engine.Engine.lost_work`.

    Returns:
        ``jobs``, mean/median/p90 of ``wait``, ``response``, ``bsld`` and ``xf``, ``p95_wait``,
        ``migrations_per_job``, ``kills_per_job``, ``lost_work`` (CPU-seconds discarded by
        kills), ``utilization``, ``makespan``, ``span_start_time``, ``accept_rate`` (share of
        jobs not turned away; the other metrics are over the accepted jobs) and
        ``tier<t>_share``: the share of VM-seconds held in tier t.
    """
    n = len(records["job_id"])
    metrics: dict[str, float] = {"jobs": n}
    # Jobs turned away at admission (no finish time) count only in the accept rate.
    accepted = np.isfinite(records["finish_time"])
    if not accepted.all():
        records = {key: values[accepted] for key, values in records.items()}
    for name in STAT_COLUMNS:
        metrics.update(_stats(name, records[name]))
    # The tail a user waits in: 1 job in 20 waits longer.
    metrics["p95_wait"] = _percentile(records["wait"], 95) if len(records["wait"]) else float("nan")
    metrics["accept_rate"] = float(accepted.mean()) if n else float("nan")
    # A killed job ran again, so it was accepted: kills are counted per accepted job.
    metrics["kills_per_job"] = kills / int(accepted.sum()) if accepted.any() else float("nan")
    metrics["lost_work"] = float(lost_work)
    if not accepted.any():
        metrics.update(
            migrations_per_job=float("nan"), utilization=float("nan"), makespan=0.0, span_start_time=float("nan")
        )
        return metrics
    first = float(records["submit_time"].min())
    last = float(records["finish_time"].max())
    busy = reproducible_dot(records["size"] * records["cpu_mean"], records["runtime"]) + lost_work - overflow_seconds
    span = last - first
    metrics["migrations_per_job"] = float(records["migrations"].mean())
    metrics["utilization"] = busy / (capacity * span) if span > 0 else float("nan")
    metrics["makespan"] = span
    metrics["span_start_time"] = first
    held = {k: reproducible_dot(records["size"], v) for k, v in records.items() if k.endswith("_duration")}
    total = sum(held.values())
    for key, seconds in held.items():
        metrics[f"{key.removesuffix('_duration')}_share"] = seconds / total if total > 0 else float("nan")
    return metrics
