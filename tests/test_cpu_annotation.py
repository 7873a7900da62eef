"""CPU-usage annotation drawn lazily: the values are exactly those of one eager draw of the
stream in workload order, ``cpu_sum`` is their left-to-right sum, and nothing per process is
held until a run reads it."""

from __future__ import annotations

import numpy as np
import pytest

from tiersweep.core.jobs import Job
from tiersweep.core.rng import stream
from tiersweep.core.workloads.cpu import _sequential_sums, annotate_cpu


def workload(sizes):
    return [Job(i, i + 1, float(i), size, 100.0) for i, size in enumerate(sizes)]


@pytest.mark.parametrize("accuracy", [1.0, 0.5, 0.0])
def test_lazy_values_equal_one_eager_draw_in_workload_order(accuracy):
    sizes = [1, 5, 1, 64, 2, 3, 1, 300, 7]
    jobs = workload(sizes)
    annotate_cpu(jobs, seed=11, usage=(0.2, 0.9), accuracy=accuracy, prior=0.6)
    assert all(job._cpu_true is None for job in jobs if job.size > 1)  # nothing held yet
    eager = stream(11, "cpu_usage").uniform(0.2, 0.9, sum(s for s in sizes if s > 1)).tolist()
    position = 0
    # Read out of order (the cursor must rewind) and in order.
    for job in [jobs[7], jobs[1], *jobs]:
        if job.size == 1:
            assert job.cpu_true == [1.0] and job.cpu_sum == 1.0
            assert job.cpu_est == [accuracy + (1 - accuracy) * 0.6]
    for job in jobs:
        if job.size == 1:
            continue
        expected = eager[position : position + job.size]
        position += job.size
        assert job.cpu_true == expected
        assert job.cpu_sum == sum(expected)  # the same bits as summing the list
        assert job.cpu_est == [accuracy * c + (1 - accuracy) * 0.6 for c in expected]


def test_sequential_sums_are_left_to_right_even_across_blocks():
    rng = np.random.default_rng(3)
    sizes = np.array([1, 1000, 3, 129, 2, 1, 4096, 17])
    draws = rng.random(int(sizes.sum())) * 1e3
    sums = _sequential_sums(draws, sizes)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    for total, start, size in zip(sums, starts, sizes):
        assert total == sum(draws[start : start + size].tolist())


def test_a_job_assigned_its_usage_by_hand_keeps_it():
    (job,) = workload([3])
    annotate_cpu([job], seed=0)
    job.cpu_true = [0.5, 0.6, 0.7]
    job.cpu_est = [0.5, 0.5, 0.5]
    assert job.cpu_true == [0.5, 0.6, 0.7] and job.cpu_est == [0.5, 0.5, 0.5]
