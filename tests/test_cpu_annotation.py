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
    annotate_cpu(jobs, seed=11, usage=(0.2, 0.9), accuracy=accuracy, prior=0.6, guess="prior")
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


# -- what the scheduler believes: accuracy with drawn guesses (the default) ---------------------


@pytest.mark.parametrize("accuracy", [1.0, 0.6, 0.0])
def test_drawn_guesses_mix_the_truth_with_a_draw_of_their_own_stream(accuracy):
    sizes = [1, 5, 1, 64, 2, 300, 7]
    jobs = workload(sizes)
    annotate_cpu(jobs, seed=11, usage=(0.2, 0.9), accuracy=accuracy)
    count = sum(s for s in sizes if s > 1)
    truth = stream(11, "cpu_usage").uniform(0.2, 0.9, count).tolist()
    guesses = stream(11, "cpu_guess").uniform(0.2, 0.9, count).tolist()
    position = 0
    for job in [jobs[5], jobs[1], *jobs]:  # out of order first: both cursors rewind
        if job.size == 1:
            assert job.cpu_est == [1.0]  # a single-process job's whole CPU is the workload's rule, known
    for job in jobs:
        if job.size == 1:
            continue
        true, guess = truth[position : position + job.size], guesses[position : position + job.size]
        position += job.size
        assert job.cpu_true == true
        assert job.cpu_est == [accuracy * c + (1 - accuracy) * g for c, g in zip(true, guess)]


def test_every_accuracy_moves_the_estimates_continuously():
    # est(a) = a * true + (1 - a) * guess: a line between the guess (a = 0) and the truth (a = 1),
    # so neighbouring accuracies give neighbouring, but different, estimates.
    estimates = {}
    for accuracy in np.linspace(0, 1, 11):
        jobs = workload([8] * 50)
        annotate_cpu(jobs, seed=3, accuracy=float(accuracy))
        estimates[round(float(accuracy), 1)] = np.array([e for job in jobs for e in job.cpu_est])
    true = estimates[1.0]
    guess = estimates[0.0]
    for accuracy, est in estimates.items():
        assert est == pytest.approx(accuracy * true + (1 - accuracy) * guess, abs=1e-12)
    steps = [np.abs(estimates[round(a + 0.1, 1)] - estimates[round(a, 1)]).max() for a in np.linspace(0, 0.9, 10)]
    assert all(0 < step <= 0.1 * 0.7 + 1e-12 for step in steps)  # |true - guess| <= 0.6 on U(0.4, 1.0)


def test_without_information_the_estimates_say_nothing_about_the_truth():
    jobs = workload([16] * 2000)
    annotate_cpu(jobs, seed=5, accuracy=0.0)
    true = np.array([c for job in jobs for c in job.cpu_true])
    est = np.array([e for job in jobs for e in job.cpu_est])
    # 32,000 pairs: an independent draw has |r| < 0.02 with overwhelming probability (sd 0.0056).
    assert abs(np.corrcoef(true, est)[0, 1]) < 0.02
    assert est.mean() == pytest.approx(0.7, abs=0.01) and est.min() >= 0.4 and est.max() <= 1.0


def _amcbf_records(accuracy, guess):
    from tiersweep.core.simulate import simulate

    spec = {
        "seed": 2,
        "workload": {"model": "feitelson96", "jobs": 1500, "load": 0.9, "cpu_accuracy": accuracy, "cpu_guess": guess},
        "platform": {"kind": "nodes", "nodes": 64, "tiers": 2},
        "policy": {"name": "amcbf"},
    }
    result = simulate(spec)
    return np.concatenate([np.asarray(result.jobs[c], dtype=float) for c in ("start_time", "finish_time")])


def test_neighbouring_accuracies_give_different_schedules():
    # With the fixed prior, accuracies 0.25, 0.5 and 0.75 give identical schedules (no
    # estimate crosses the 0.96 threshold and the order is the truth's), so the axis would
    # measure nothing. With drawn guesses each accuracy is its own experiment.
    accuracies = [0.0, 0.25, 0.5, 0.75, 1.0]
    schedules = [_amcbf_records(a, "draw") for a in accuracies]
    for a, b, x, y in zip(accuracies, accuracies[1:], schedules, schedules[1:]):
        assert not np.array_equal(x, y), f"accuracies {a} and {b} give the same schedule"
    # The first reading (cpu_guess: prior) is kept, and shows the coincidence.
    prior = [_amcbf_records(a, "prior") for a in (0.25, 0.5, 0.75)]
    assert np.array_equal(prior[0], prior[1]) and np.array_equal(prior[1], prior[2])


# -- memory: per-process values are held only while a job holds resources ----------------------


def test_a_finished_or_suspended_job_holds_no_per_process_values():
    # Kept for a job's whole life, the lists would hold every process slot of the log at once
    # (CEA-Curie, 100,000 jobs: 141 million slots, 5.56 GB). A job that is not running holds
    # none; a later read draws them again, the same values.
    from tiersweep.core.engine import Engine
    from tiersweep.core.platforms import Nodes
    from tiersweep.core.policies import make_policy

    sizes = [(3 * i) % 29 + 1 for i in range(400)]
    jobs = [Job(i, i + 1, 10.0 * i, size, 50.0 + (7 * i) % 300) for i, size in enumerate(sizes)]
    annotate_cpu(jobs, seed=4, accuracy=0.5)
    read_during_run = {}

    class Recording(type(make_policy("cmcbf"))):
        def on_start(self, job):
            read_during_run.setdefault(job.index, (list(job.cpu_true), list(job.cpu_est)))
            super().on_start(job)

        def on_suspend(self, job):
            super().on_suspend(job)
            suspended.append(job)

    suspended = []
    policy = Recording()
    engine = Engine(jobs, Nodes(32, 2, seed=4), policy, migration_cost=5.0)
    held_at_suspension = []
    original = engine._suspend

    def suspend(job):
        original(job)
        if job.size > 1:  # (single-process jobs share one list: nothing to drop)
            held_at_suspension.append(job._cpu_true is not None or job._cpu_est is not None)

    engine._suspend = suspend
    engine.run()
    assert held_at_suspension and not any(held_at_suspension)
    multi = [job for job in jobs if job.size > 1]
    assert all(job._cpu_true is None and job._cpu_est is None for job in multi)
    for job in multi:
        assert (job.cpu_true, job.cpu_est) == read_during_run[job.index]


def test_an_estimate_set_by_hand_survives_the_end_of_a_run_segment():
    (job,) = workload([4])
    annotate_cpu([job], seed=0)
    drawn = list(job.cpu_true)
    job.cpu_est = [0.5] * 4
    job.drop_cpu()
    assert job.cpu_est == [0.5] * 4 and job.cpu_true == drawn


@pytest.mark.parametrize(("accuracy", "guess"), [(1.0, "draw"), (0.6, "draw"), (0.3, "prior")])
def test_values_for_a_copier_are_the_lazy_lists_bit_for_bit_and_not_kept(accuracy, guess):
    sizes = [1, 5, 300, 2]
    jobs = workload(sizes)
    annotate_cpu(jobs, seed=5, accuracy=accuracy, guess=guess)
    for job in jobs:
        true, est = job.cpu_values()
        if job.size > 1:
            assert job._cpu_true is None  # drawn for the copier alone
        assert np.asarray(true).tobytes() == np.array(job.cpu_true).tobytes()
        assert np.asarray(est).tobytes() == np.array(job.cpu_est).tobytes()
