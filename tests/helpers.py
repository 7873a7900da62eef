"""Building tiny workloads and running them in-process, for tests."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from tiersweep.core.engine import Engine
from tiersweep.core.jobs import Job
from tiersweep.core.platforms import Nodes
from tiersweep.core.policies import make_policy
from tiersweep.core.workloads.rules import jobs_from_records
from tiersweep.core.workloads.swf import SWF_FIELDS


def swf_rows(rows: Iterable[Sequence[float]]) -> np.ndarray:
    """SWF records from ``(submit, runtime, size, requested)`` tuples (job numbers 1, 2, ...)."""
    rows = list(rows)
    table = np.full((len(rows), len(SWF_FIELDS)), -1.0)
    for i, (submit, runtime, size, requested) in enumerate(rows):
        table[i, 0] = i + 1
        table[i, 1] = submit
        table[i, 3] = runtime
        table[i, 4] = size
        table[i, 7] = size
        table[i, 8] = requested
    return table


def make_jobs(rows: Iterable[Sequence[float]], nodes: int, **rules: str) -> list[Job]:
    """Jobs from ``(submit, runtime, size, requested)`` tuples through the workload rules."""
    jobs, _ = jobs_from_records(swf_rows(rows), capacity=nodes, **rules)
    return jobs


def run_jobs(
    rows: Iterable[Sequence[float]], nodes: int, policy: str, *, rules: dict | None = None, **params
) -> list[Job]:
    """Simulate ``rows`` on ``nodes`` dedicated nodes under ``policy``; return the finished jobs."""
    jobs = make_jobs(rows, nodes, **(rules or {}))
    Engine(jobs, Nodes(nodes), make_policy(policy, **params)).run()
    return jobs


def starts(jobs: Sequence[Job]) -> list[float]:
    """Start times in workload order."""
    return [j.start_time for j in jobs]
