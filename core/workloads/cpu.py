"""CPU-usage annotation: what each process really uses, and what the scheduler believes.

Paper 000, section 5.2: a single-process job's process uses 100 % of a CPU; each process of a
multi-process job uses ``U(0.4, 1.0)``. The range is a parameter so that the paper's "average
CPU usage" study is one spec key. DESIGN 4.1: with accuracy ``a`` in [0, 1], the scheduler
sees ``cpu_est = a * cpu_true + (1 - a) * prior``, ``prior`` being a fixed uninformed guess
(default 0.7, the mean of U(0.4, 1.0)); ``a = 1`` is exact knowledge, ``a = 0`` no information.
"""

from __future__ import annotations

from typing import Sequence

from ..jobs import Job
from ..rng import stream

__all__ = ["annotate_cpu", "DEFAULT_CPU_USAGE", "DEFAULT_CPU_PRIOR"]

#: The U(low, high) range of a multi-process job's per-process CPU usage.
DEFAULT_CPU_USAGE = (0.4, 1.0)
#: The scheduler's uninformed guess of a process's CPU usage.
DEFAULT_CPU_PRIOR = 0.7


def annotate_cpu(
    jobs: Sequence[Job],
    *,
    seed: int,
    usage: tuple[float, float] = DEFAULT_CPU_USAGE,
    accuracy: float = 1.0,
    prior: float = DEFAULT_CPU_PRIOR,
) -> None:
    """Set ``cpu_true``, ``cpu_est`` and ``cpu_sum`` of every job, in place.

    The draws come from the ``"cpu_usage"`` stream of ``seed`` in workload order, so they
    depend on the seed and the workload alone (never on the policy or platform): every policy
    of a replicate sees the same CPU usage.

    Args:
        jobs: The workload, in queue order.
        seed: The run's seed.
        usage: ``(low, high)`` with ``0 < low <= high <= 1``.
        accuracy: ``a`` in [0, 1].
        prior: The uninformed guess, in (0, 1].
    """
    low, high = usage
    if not 0 < low <= high <= 1:
        raise ValueError(f"cpu_usage: expected 0 < low <= high <= 1, got {list(usage)}")
    if not 0 <= accuracy <= 1:
        raise ValueError(f"cpu_accuracy: expected a number in [0, 1], got {accuracy}")
    if not 0 < prior <= 1:
        raise ValueError(f"cpu_prior: expected a number in (0, 1], got {prior}")
    multi_sizes = [job.size for job in jobs if job.size > 1]
    draws = stream(seed, "cpu_usage").uniform(low, high, sum(multi_sizes)).tolist()
    guess = (1.0 - accuracy) * prior
    position = 0
    for job in jobs:
        if job.size == 1:
            true = [1.0]
        else:
            true = draws[position : position + job.size]
            position += job.size
        job.cpu_true = true
        job.cpu_est = true if accuracy == 1.0 else [accuracy * c + guess for c in true]
        job.cpu_sum = sum(true)
