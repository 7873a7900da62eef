"""Summary statistics of a workload, the figures ``tiersweep workload describe`` prints."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..jobs import Job
from .offered_load import offered_load

__all__ = ["describe_jobs"]


def describe_jobs(jobs: Sequence[Job], nodes: int) -> dict[str, float]:
    """Statistics of ``jobs`` on a machine of ``nodes``.

    Returns:
        ``jobs``, ``nodes``, ``serial_share`` (size 1), ``pow2_share`` (powers of two among
        parallel jobs), ``under20_share`` (size < 20), ``mean_size``, ``median_size``,
        ``max_size``, ``mean_runtime``, ``median_runtime``, ``runtime_cv``,
        ``mean_interarrival``, ``median_interarrival``, ``span`` and ``offered_load``.
    """
    n = len(jobs)
    size = np.fromiter((j.size for j in jobs), np.int64, n)
    runtime = np.fromiter((j.runtime for j in jobs), np.float64, n)
    submit = np.fromiter((j.submit_time for j in jobs), np.float64, n)
    if n == 0:
        return {"jobs": 0, "nodes": nodes}
    parallel = size[size > 1]
    pow2 = (parallel & (parallel - 1)) == 0
    gaps = np.diff(submit)
    mean_runtime = float(runtime.mean())
    return {
        "jobs": n,
        "nodes": nodes,
        "serial_share": float(np.mean(size == 1)),
        "pow2_share": float(pow2.mean()) if len(parallel) else float("nan"),
        "under20_share": float(np.mean(size < 20)),
        "mean_size": float(size.mean()),
        "median_size": float(np.median(size)),
        "max_size": int(size.max()),
        "mean_runtime": mean_runtime,
        "median_runtime": float(np.median(runtime)),
        "runtime_cv": float(runtime.std() / mean_runtime) if mean_runtime > 0 else float("nan"),
        "mean_interarrival": float(gaps.mean()) if len(gaps) else float("nan"),
        "median_interarrival": float(np.median(gaps)) if len(gaps) else float("nan"),
        "span": float(submit[-1] - submit[0]),
        "offered_load": offered_load(submit, size, runtime, nodes),
    }
