"""The tiered-node progress model (DESIGN 4.1; paper 000, section 5.1) and the ``nodes`` platform.

Rates are driven through the real :class:`tiersweep.core.engine.Engine` by a tiny scripted policy
(:class:`Placed`) that starts every job on the VMs the test chose, so each expectation is a
finish time computed by hand from piecewise-constant rates. With ``fg_overhead=0`` and a fixed
``bg_efficiency`` nothing is random:

* a foreground process runs at ``1 - o`` (``o = 0`` here; ``o = 0`` too whenever the lower
  tiers of its node are idle, whatever ``fg_overhead``);
* a background process runs at 1 while every higher tier of its node is idle, else at
  ``eff * min(1, cpu_idle / cpu_req)``, ``cpu_idle = max(0.04, 1 - consumption above)``;
* a process consumes ``cpu_true * (its job's rate)``; a job runs at its slowest process's rate.

Then: three tiers (tier 2 sees what tiers 0 and 1 leave, tier 1 rated first); the generic
k-tier path agrees bit for bit with the unrolled two-tier path; the paper's random factors
have the stated ranges and means and come from their own streams; determinism by seed; and the
utilisation and tier-share metrics against an independent integration over the schedule.

The 4 % idle floor lets a background process consume CPU that its foreground already uses; no
node counts more than fully busy, so run utilisation never exceeds 1.
"""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import make_jobs
from test_contract import audit, counting_policy, kth_jobs
from tiersweep.core import compiled_path
from tiersweep.core.capabilities import NODE_VMS, TIERS
from tiersweep.core.decisions import Start
from tiersweep.core.engine import Engine
from tiersweep.core.metrics import job_records, run_metrics
from tiersweep.core.platforms import Nodes
from tiersweep.core.policies import make_policy
from tiersweep.core.policies.base import BasePolicy
from tiersweep.core.simulate import simulate
from tiersweep.core.workloads.cpu import annotate_cpu

EFF = 0.9  # the fixed background efficiency of the deterministic cases


# -- instruments -----------------------------------------------------------------------------


class Placed(BasePolicy):
    """Starts every queued job at once where the test says: ``plan(job) -> (tier, nodes)``
    (``nodes[p]`` is the node of process ``p``). The test makes sure those VMs are idle."""

    name = "placed"
    requires = frozenset({NODE_VMS, TIERS})

    def __init__(self, plan) -> None:
        self.plan = plan if callable(plan) else (lambda job: plan[job.index])

    def decide(self, sim):
        for job in list(sim.queue.values()):
            tier, nodes = self.plan(job)
            yield Start(job, tier, nodes)


def set_cpu(job, cpus) -> None:
    """Give ``job`` these true CPU usages, known exactly by the scheduler."""
    job.cpu_true = list(cpus)
    job.cpu_est = list(cpus)
    job.cpu_sum = float(sum(cpus))


def placed_run(
    rows, cpus, plan, *, nodes, tiers=2, fg_overhead=0.0, bg_efficiency=EFF, seed=0, observer=None, scope="job"
):
    """Run ``rows`` ((submit, runtime, size, requested)) with per-job CPU usages ``cpus`` under
    :class:`Placed`; return ``(jobs, platform)``."""
    jobs = make_jobs(rows, nodes)
    assert len(jobs) == len(rows)
    for job, cpu in zip(jobs, cpus):
        set_cpu(job, cpu)
    platform = Nodes(
        nodes, tiers, fg_overhead=fg_overhead, bg_efficiency=bg_efficiency, bg_efficiency_scope=scope, seed=seed
    )
    Engine(jobs, platform, Placed(plan), observer=observer).run()
    return jobs, platform


class RateLog:
    """Observer: the rate of every running job after each pass, ``log[t][job index]``."""

    def __init__(self) -> None:
        self.at: dict[float, dict[int, float]] = {}

    def __call__(self, sim) -> None:
        self.at[sim.now] = {job.index: job.rate for job in sim.running.values()}


def approx(value):
    return pytest.approx(value, rel=1e-12, abs=1e-12)


# -- deterministic rates, two tiers ------------------------------------------------------------


@pytest.mark.parametrize("fg_overhead", [0.0, 0.037, 0.5])
def test_a_foreground_job_alone_runs_at_one(fg_overhead):
    # Nothing in the background tier: o is 0 whatever fg_overhead, so A (100 s, 2 processes)
    # finishes at exactly 100 and B (submitted at 10, 30 s) at exactly 40.
    jobs, _ = placed_run(
        [(0, 100, 2, 100), (10, 30, 1, 30)],
        [[0.7, 0.4], [1.0]],
        {0: (0, [0, 1]), 1: (0, [2])},
        nodes=3,
        fg_overhead=fg_overhead,
    )
    assert [j.finish_time for j in jobs] == [100.0, 40.0]
    assert [j.tier_time for j in jobs] == [[100.0, 0.0], [30.0, 0.0]]


@pytest.mark.parametrize(
    ("fg_cpu", "bg_cpu", "rate"),
    [
        (0.7, 0.5, EFF * 0.3 / 0.5),  # idle 0.3 < 0.5: 0.9 * 0.6 = 0.54
        (0.4, 0.5, EFF),  # idle 0.6 >= 0.5: eff
        (0.5, 0.5, EFF),  # idle 0.5 == 0.5: still eff (min(1, 1))
        (1.0, 0.5, EFF * 0.04 / 0.5),  # idle 0 -> floor 0.04: 0.9 * 0.08 = 0.072
        (0.98, 0.5, EFF * 0.04 / 0.5),  # idle 0.02 -> floor 0.04: 0.072
        (1.0, 1.0, EFF * 0.04),  # floor, a whole-CPU process: 0.036
        (0.95, 1.0, EFF * 0.05),  # idle 0.05 above the floor: 0.045
    ],
)
def test_background_rate_under_a_busy_foreground(fg_cpu, bg_cpu, rate):
    # Node 0: A in the foreground (1000 s, outlives B), B in the background with runtime
    # rate * 100, so B finishes at 100 (its rate is constant: nothing else changes on node 0).
    log = RateLog()
    jobs, _ = placed_run(
        [(0, 1000, 1, 1000), (0, rate * 100, 1, 1000)],
        [[fg_cpu], [bg_cpu]],
        {0: (0, [0]), 1: (1, [0])},
        nodes=1,
        observer=log,
    )
    assert log.at[0.0] == {0: 1.0, 1: approx(rate)}
    a, b = jobs
    assert b.finish_time == approx(100.0)
    assert b.tier_time == [0.0, approx(100.0)]
    assert a.finish_time == 1000.0  # fg_overhead 0: the foreground runs at 1 throughout


def test_background_rate_rises_to_one_when_its_foreground_leaves():
    # A: fg, CPU 0.7, 50 s. B: bg under A, CPU 0.5, 100 s.
    # [0, 50): B at 0.9 * 0.3/0.5 = 0.54 -> 27 s of work; then alone on the node: rate 1,
    # 73 s left -> B finishes at 123 (still in the background VM: this policy never moves it).
    log = RateLog()
    jobs, _ = placed_run(
        [(0, 50, 1, 50), (0, 100, 1, 100)],
        [[0.7], [0.5]],
        {0: (0, [0]), 1: (1, [0])},
        nodes=1,
        observer=log,
    )
    assert jobs[0].finish_time == 50.0
    assert jobs[1].finish_time == approx(123.0)
    assert log.at[50.0] == {1: 1.0}
    assert jobs[1].tier_time == [0.0, approx(123.0)]


def test_a_job_runs_at_its_slowest_processs_rate():
    # A0: fg node 0, CPU 0.7, 50 s. A1: fg node 1, CPU 0.4, 1000 s.
    # B: bg on nodes [0, 1], CPU [0.5, 0.5], 72 s.
    # [0, 50): process 0 at 0.9 * 0.3/0.5 = 0.54, process 1 at 0.9 (idle 0.6 >= 0.5): B at 0.54,
    #          27 s done.
    # [50, ..): process 0 alone on node 0 -> 1, process 1 still 0.9: B at 0.9, 45 s left -> +50.
    # B finishes at 100.
    log = RateLog()
    jobs, _ = placed_run(
        [(0, 50, 1, 50), (0, 1000, 1, 1000), (0, 72, 2, 100)],
        [[0.7], [0.4], [0.5, 0.5]],
        {0: (0, [0]), 1: (0, [1]), 2: (1, [0, 1])},
        nodes=2,
        observer=log,
    )
    assert log.at[0.0][2] == approx(0.54)
    assert log.at[50.0][2] == approx(0.9)
    assert jobs[2].finish_time == approx(100.0)
    assert jobs[1].finish_time == 1000.0


def test_a_background_process_with_its_own_cpu_need_met_runs_at_eff_on_each_node():
    # B's processes need 0.5 and 0.25 under foregrounds of CPU 0.7 each (idle 0.3):
    # process 0 at 0.9 * 0.3/0.5 = 0.54, process 1 at 0.9 * min(1, 0.3/0.25) = 0.9 -> B at 0.54.
    # B (54 s) finishes at 100.
    jobs, _ = placed_run(
        [(0, 1000, 2, 1000), (0, 54, 2, 100)],
        [[0.7, 0.7], [0.5, 0.25]],
        {0: (0, [0, 1]), 1: (1, [0, 1])},
        nodes=2,
    )
    assert jobs[1].finish_time == approx(100.0)


def test_consumption_uses_the_foreground_jobs_rate_not_its_cpu_alone():
    # A: fg on nodes [0, 1], CPU [0.8, 0.8], 1000 s. B: bg node 0, C: bg node 1, CPU 0.5 each,
    # 10 s each. fg_overhead 0.5: each of A's processes draws its own o in U(0, 0.5); A runs at
    # r = its slowest process's rate < 1. Each background process sees idle 1 - 0.8 * r (A's
    # *job* rate on both nodes), so B and C run at the same rate 0.9 * min(1, (1 - 0.8 r)/0.5),
    # strictly above 0.9 * 0.2/0.5 = 0.36 (what A at full speed would leave).
    log = RateLog()
    jobs, _ = placed_run(
        [(0, 1000, 2, 1000), (0, 10, 1, 10), (0, 10, 1, 10)],
        [[0.8, 0.8], [0.5], [0.5]],
        {0: (0, [0, 1]), 1: (1, [0]), 2: (1, [1])},
        nodes=2,
        fg_overhead=0.5,
        observer=log,
    )
    r, rb, rc = log.at[0.0][0], log.at[0.0][1], log.at[0.0][2]
    assert 0.5 <= r < 1.0
    expected = EFF * min(1.0, (1.0 - 0.8 * r) / 0.5)
    assert rb == approx(expected) and rc == approx(expected)
    assert rb == rc  # one job rate on both nodes, though the two o's differ
    assert rb > 0.36 + 1e-6
    # B and C finish together at 10 / rb; A then has its node pairs to itself (o = 0, rate 1):
    # it finishes at t1 + (1000 - r * t1).
    t1 = 10 / rb
    assert jobs[1].finish_time == approx(t1) and jobs[2].finish_time == approx(t1)
    assert log.at[jobs[1].finish_time] == {0: 1.0}
    assert jobs[0].finish_time == pytest.approx(t1 + (1000 - r * t1), rel=1e-12)


# -- three tiers -------------------------------------------------------------------------------


def test_three_tiers_tier_two_sees_what_tiers_zero_and_one_leave():
    # 2 nodes, 3 tiers, fg_overhead 0, eff 0.9.
    # A: tier 0 node 0, CPU 0.3, 1000 s.   D: tier 0 node 1, CPU 0.9, 100 s.
    # B: tier 1 nodes [0, 1], CPU [0.5, 0.5], 108 s.   C: tier 2 node 0, CPU 0.5, 180 s.
    # [0, 100):  B node 0: idle 0.7 -> 0.9; node 1: 0.9 * 0.1/0.5 = 0.18 -> B at 0.18 (tier 1 is
    #            rated first, across nodes). C: idle = 1 - 0.3*1 - 0.5*0.18 = 0.61 >= 0.5 -> 0.9.
    #            (Had B's consumption used its node-0 process rate 0.9, C would get 0.45.)
    #            Work at 100: B 18, C 90.
    # [100, 200): D gone: B node 1 alone -> 1, node 0 0.9 -> B at 0.9; C: idle 1 - 0.3 - 0.45
    #            = 0.25 -> 0.9 * 0.5 = 0.45. B: 90 more -> done at 200; C: 45 more -> 135.
    # [200, ..): C: idle 0.7 -> 0.9; 45 left -> finishes at 250.
    log = RateLog()
    jobs, _ = placed_run(
        [(0, 1000, 1, 1000), (0, 100, 1, 100), (0, 108, 2, 200), (0, 180, 1, 300)],
        [[0.3], [0.9], [0.5, 0.5], [0.5]],
        {0: (0, [0]), 1: (0, [1]), 2: (1, [0, 1]), 3: (2, [0])},
        nodes=2,
        tiers=3,
        observer=log,
    )
    assert log.at[0.0] == {0: 1.0, 1: 1.0, 2: approx(0.18), 3: approx(0.9)}
    assert log.at[100.0] == {0: 1.0, 2: approx(0.9), 3: approx(0.45)}
    assert log.at[200.0] == {0: 1.0, 3: approx(0.9)}
    assert [j.finish_time for j in jobs] == [1000.0, 100.0, approx(200.0), approx(250.0)]
    assert jobs[3].tier_time == [0.0, 0.0, approx(250.0)]


@pytest.mark.parametrize(
    ("above", "rate"),
    [
        # Only tier 1 busy (CPU 0.8, rate 1: nothing above it): idle 0.2 -> 0.9 * 0.2/0.5 = 0.36.
        ({1: 0.8}, EFF * 0.2 / 0.5),
        # Only tier 0 busy (CPU 0.4): idle 0.6 -> eff.
        ({0: 0.4}, EFF),
        # Tier 0 CPU 0.6 (rate 1) and tier 1 CPU 1.0 at 0.9 * 0.4/1.0 = 0.36: 1 - 0.6 - 0.36 = 0.04.
        ({0: 0.6, 1: 1.0}, EFF * 0.04 / 0.5),
        # Tier 0 CPU 1.0 and tier 1 CPU 1.0 at the floor rate 0.036: 1 - 1.036 < 0.04 -> floor.
        ({0: 1.0, 1: 1.0}, EFF * 0.04 / 0.5),
    ],
)
def test_three_tiers_background_rate_of_the_lowest_tier(above, rate):
    # One node, 3 tiers: the jobs in ``above`` run (1000 s) in their tiers; C (CPU 0.5) in tier 2
    # with runtime rate * 100 finishes at 100.
    rows = [(0, 1000, 1, 1000) for _ in above] + [(0, rate * 100, 1, 1000)]
    cpus = [[c] for c in above.values()] + [[0.5]]
    plan = {i: (tier, [0]) for i, tier in enumerate(above)}
    plan[len(above)] = (2, [0])
    jobs, _ = placed_run(rows, cpus, plan, nodes=1, tiers=3)
    assert jobs[-1].finish_time == approx(100.0)


# -- the generic k-tier path versus the unrolled two-tier path -----------------------------------


class GenericNodes(Nodes):
    """Two-tier nodes handling every job and every event with the vectorised code that large
    machines use (small two-tier machines use scalar loops)."""

    vector_vms = 0
    vector_from = 1


class SpyNodes(Nodes):
    """Counts calls of the scalar two-tier path."""

    unrolled_calls = 0

    def _two_tier_rate_changes(self, dirty):
        self.unrolled_calls += 1
        return super()._two_tier_rate_changes(dirty)


def run_on(platform_cls, jobs, capacity, policy, seed, migration_cost=20.0, bg_threshold=0.96, scope="job"):
    platform = platform_cls(capacity, 2, seed=seed, bg_efficiency_scope=scope)
    policy = make_policy(policy, bg_threshold=bg_threshold)
    Engine(jobs, platform, policy, migration_cost=migration_cost).run()
    return job_records(jobs), platform


def assert_records_bitwise_equal(a: dict, b: dict, label: str = "") -> None:
    assert sorted(a) == sorted(b)
    for column in a:
        x, y = np.asarray(a[column]), np.asarray(b[column])
        assert x.dtype == y.dtype and x.shape == y.shape, f"{label}: {column}"
        assert x.tobytes() == y.tobytes(), f"{label}: column {column} differs"


GAPS = st.sampled_from([0, 0, 0, 1, 7, 60, 300])


@st.composite
def tier_workloads(draw):
    """``(nodes, rows)``: 1-20 jobs on 1-8 nodes, rows (submit, runtime, size, requested)."""
    nodes = draw(st.integers(1, 8))
    rows, submit = [], 0
    for _ in range(draw(st.integers(1, 20))):
        submit += draw(GAPS)
        runtime = draw(st.integers(0, 600))
        requested = max(1, runtime + draw(st.integers(-100, 300)))
        rows.append((submit, runtime, draw(st.integers(1, nodes)), requested))
    return nodes, rows


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    case=tier_workloads(),
    seed=st.integers(0, 2**20),
    policy=st.sampled_from(["cmcbf", "amcbf", "smcbf"]),
    accuracy=st.sampled_from([1.0, 0.0]),  # 0: busy nodes get background work, the floor binds
    bg_threshold=st.sampled_from([0.96, 1.0]),
    scope=st.sampled_from(["job", "process"]),
)
def test_generic_path_equals_two_tier_path_on_random_workloads(case, seed, policy, accuracy, bg_threshold, scope):
    nodes, rows = case
    runs = []
    for cls in (SpyNodes, GenericNodes):
        jobs = make_jobs(rows, nodes)
        annotate_cpu(jobs, seed=seed, accuracy=accuracy)
        runs.append(run_on(cls, jobs, nodes, policy, seed, bg_threshold=bg_threshold, scope=scope))
    (unrolled, _), (generic, _) = runs
    assert_records_bitwise_equal(unrolled, generic, f"{policy} seed {seed}")


@pytest.mark.slow
@pytest.mark.parametrize("compiled", [False, True], ids=["python", "compiled"])
@pytest.mark.parametrize(
    ("policy", "accuracy", "scope"), [("cmcbf", 1.0, "job"), ("amcbf", 0.0, "job"), ("amcbf", 0.0, "process")]
)
def test_generic_path_equals_two_tier_path_on_kth(kth_path, monkeypatch, policy, accuracy, scope, compiled):
    # The unrolled two-tier loops in Python, and (where built) their compiled twins.
    if compiled and not compiled_path.compiled_available():
        pytest.skip(f"the compiled extension is not built: {compiled_path.why_python()}")
    if not compiled:
        monkeypatch.setenv(compiled_path.PURE_PYTHON_ENV, "1")
    runs = []
    for cls in (SpyNodes, GenericNodes):
        jobs, capacity = kth_jobs(kth_path)
        annotate_cpu(jobs, seed=3, accuracy=accuracy)
        runs.append(run_on(cls, jobs, capacity, policy, seed=3, scope=scope))
    (unrolled, spy), (generic, _) = runs
    if compiled:
        assert spy._kernels is not None and spy.unrolled_calls == 0  # the kernels ran instead
    else:
        assert spy.unrolled_calls > 1000  # the plain platform really took the unrolled path
    assert (unrolled["tier1_duration"] > 0).sum() > 100  # and the background tier was busy
    assert_records_bitwise_equal(unrolled, generic, policy)


def test_the_generic_path_reproduces_the_hand_computed_two_tier_case():
    # The slowest-process case above, through the generic path: B finishes at 100.
    jobs = make_jobs([(0, 50, 1, 50), (0, 1000, 1, 1000), (0, 72, 2, 100)], 2)
    for job, cpu in zip(jobs, [[0.7], [0.4], [0.5, 0.5]]):
        set_cpu(job, cpu)
    plan = {0: (0, [0]), 1: (0, [1]), 2: (1, [0, 1])}
    Engine(jobs, GenericNodes(2, 2, fg_overhead=0.0, bg_efficiency=EFF), Placed(plan)).run()
    assert jobs[2].finish_time == approx(100.0)


# -- the paper's random factors -----------------------------------------------------------------


def truncated_normal_moments(mean, sd, low, high):
    """Mean and standard deviation of Normal(mean, sd) truncated to [low, high]."""
    pdf = lambda x: math.exp(-x * x / 2) / math.sqrt(2 * math.pi)  # noqa: E731
    cdf = lambda x: 0.5 * (1 + math.erf(x / math.sqrt(2)))  # noqa: E731
    a, b = (low - mean) / sd, (high - mean) / sd
    z = cdf(b) - cdf(a)
    m = mean + sd * (pdf(a) - pdf(b)) / z
    var = sd * sd * (1 + (a * pdf(a) - b * pdf(b)) / z - ((pdf(a) - pdf(b)) / z) ** 2)
    return m, math.sqrt(var)


EPOCHS = 4000


def factor_samples(
    size: int, *, seed: int = 11, fg_overhead: float = 0.037, bg_efficiency="paper", scope="job", under=1
):
    """Observe ``EPOCHS`` placement epochs on a two-tier machine.

    F (CPU 0.01, forever) holds node 0's foreground VM. Every 10 s a 1-second background job of
    ``size`` processes (CPU 0.5 each) starts on nodes 0 .. size-1: a new epoch on node 0, with
    a fresh o for F and a fresh eff for the process under F. Idle CPU is >= 0.99 > 0.5, and the
    job's other processes (nodes without a foreground) run at 1, so the job's rate is exactly
    that eff; F's rate is 1 - o. Returns (o's, eff's, background jobs, F's rates after each
    background finish).
    """
    rows = [(0, 1e9, under, 1e9)] + [(10 * i, 1, size, 1) for i in range(1, EPOCHS + 1)]
    cpus = [[0.01] * under] + [[0.5] * size] * EPOCHS
    overheads, effs, alone = [], [], []

    def observe(sim):
        fg = sim.jobs[0]
        background = [j for j in sim.running.values() if j.index]
        if background:
            (job,) = background
            assert sim.now == job.submit_time
            overheads.append(1.0 - fg.rate)
            effs.append(job.rate)
        elif sim.now > 0 and 0 in sim.running:
            alone.append(fg.rate)

    plan = lambda job: (0, list(range(under))) if job.index == 0 else (1, list(range(size)))  # noqa: E731
    jobs, _ = placed_run(
        rows,
        cpus,
        plan,
        nodes=max(size, under),
        fg_overhead=fg_overhead,
        bg_efficiency=bg_efficiency,
        seed=seed,
        observer=observe,
        scope=scope,
    )
    return np.array(overheads), np.array(effs), jobs[1:], alone


def test_foreground_overhead_is_uniform_on_0_to_0037():
    overheads, _, _, alone = factor_samples(1)
    assert len(overheads) == EPOCHS
    assert overheads.min() >= -1e-15 and overheads.max() <= 0.037 + 1e-15
    # U(0, 0.037): mean 0.0185, sd 0.037/sqrt(12) = 0.0107; the mean of 4000 is within 0.0006.
    assert overheads.mean() == pytest.approx(0.0185, abs=0.0006)
    assert overheads.std() == pytest.approx(0.037 / math.sqrt(12), rel=0.05)
    assert len(set(overheads.tolist())) > EPOCHS * 0.99  # a fresh draw per epoch
    # Whenever the background job has left, F is alone again: o = 0, rate exactly 1.
    assert len(alone) == EPOCHS and set(alone) == {1.0}


def test_single_process_efficiency_is_uniform_on_08_to_1():
    _, effs, jobs, _ = factor_samples(1)
    assert effs.min() >= 0.8 and effs.max() < 1.0
    # U(0.8, 1): mean 0.9, sd 0.0577; the mean of 4000 is within 0.003.
    assert effs.mean() == pytest.approx(0.9, abs=0.003)
    assert effs.std() == pytest.approx(0.2 / math.sqrt(12), rel=0.05)
    # Each quarter of the range holds about a quarter of the draws.
    counts = np.histogram(effs, bins=4, range=(0.8, 1.0))[0]
    assert (np.abs(counts - EPOCHS / 4) < 0.1 * EPOCHS / 4).all()
    # The rate is constant within its epoch: each 1-second job finishes at submit + 1 / eff.
    for job, eff in zip(jobs, effs):
        assert job.finish_time == approx(job.submit_time + 1.0 / eff)


def test_multi_process_efficiency_is_a_truncated_normal():
    _, effs, _, _ = factor_samples(2)
    assert effs.min() >= 0.2 and effs.max() <= 0.8
    mean, sd = truncated_normal_moments(0.428, 0.144, 0.2, 0.8)
    assert 0.44 < mean < 0.45  # the truncation at 0.2 cuts more of the left tail
    # sd ~0.13: the mean of 4000 is within 0.008 (> 3.5 standard errors).
    assert effs.mean() == pytest.approx(mean, abs=0.008)
    assert effs.std() == pytest.approx(sd, rel=0.06)
    # Against the truncated normal's CDF at a few points (Kolmogorov-Smirnov-style bound).
    cdf = lambda x: 0.5 * (1 + math.erf((x - 0.428) / (0.144 * math.sqrt(2))))  # noqa: E731
    z = cdf(0.8) - cdf(0.2)
    for x in (0.3, 0.4, 0.428, 0.5, 0.6, 0.7):
        expected = (cdf(x) - cdf(0.2)) / z
        assert (effs <= x).mean() == pytest.approx(expected, abs=0.03)


def test_overhead_and_efficiency_come_from_separate_streams():
    # Switching one factor off (or fixing it) must not shift the other's draws.
    o_paper, eff_paper, _, _ = factor_samples(1, seed=5)
    _, eff_no_overhead, _, _ = factor_samples(1, seed=5, fg_overhead=0.0)
    o_fixed_eff, fixed, _, _ = factor_samples(1, seed=5, bg_efficiency=0.9)
    assert eff_no_overhead.tobytes() == eff_paper.tobytes()
    assert o_fixed_eff.tobytes() == o_paper.tobytes()
    assert set(fixed.tolist()) == {0.9}
    # And a different seed gives different draws.
    o_other, eff_other, _, _ = factor_samples(1, seed=6)
    assert not np.array_equal(o_other, o_paper) and not np.array_equal(eff_other, eff_paper)


# -- determinism ---------------------------------------------------------------------------------


def tier_spec(kth_path, seed, **platform):
    return {
        "seed": seed,
        "workload": {"trace": str(kth_path), "jobs": 2000, "cpu_usage": 0.8},
        "platform": {"tiers": 2, **platform},
        "policy": {"name": "cmcbf"},
    }


def test_same_seed_same_records_other_seed_other_rates(kth_path):
    # CPU usage is constant (0.8), so with one seed or another the workload is the same and
    # only the platform's random factors differ.
    first = simulate(tier_spec(kth_path, 1)).jobs
    again = simulate(tier_spec(kth_path, 1)).jobs
    other = simulate(tier_spec(kth_path, 2)).jobs
    assert_records_bitwise_equal(first, again, "seed 1 twice")
    assert (first["tier1_duration"] > 0).sum() > 50  # background placement happened
    assert not np.array_equal(first["finish_time"], other["finish_time"])


def test_without_random_factors_the_seed_changes_nothing(kth_path):
    fixed = {"fg_overhead": 0.0, "bg_efficiency": 0.9}
    first = simulate(tier_spec(kth_path, 1, **fixed)).jobs
    other = simulate(tier_spec(kth_path, 2, **fixed)).jobs
    assert_records_bitwise_equal(first, other, "seeds 1 and 2 with fixed factors")


# -- utilisation and tier shares -----------------------------------------------------------------


class Integrator:
    """Observer integrating, between consecutive passes (rates and holdings are constant there),
    each job's CPU consumption (cpu_sum x rate) and the seconds it held VMs in each tier."""

    def __init__(self, tiers: int) -> None:
        self.tiers = tiers
        self.last = None
        self.snapshot: list[tuple[int, int, float, float]] = []
        self.consumed = defaultdict(float)
        self.held = defaultdict(lambda: [0.0] * tiers)

    def __call__(self, sim) -> None:
        audit(sim)
        if self.last is not None:
            dt = sim.now - self.last
            for index, tier, rate, cpu_sum in self.snapshot:
                self.consumed[index] += cpu_sum * rate * dt
                self.held[index][tier] += dt
        self.last = sim.now
        self.snapshot = [(j.index, j.tier, j.rate, j.cpu_sum) for j in sim.running.values()]


@pytest.fixture(scope="module")
def kth_consolidated(request):
    """KTH-SP2's first 3000 jobs under cmcbf on two tiers, integrated pass by pass."""
    from conftest import trace_path

    jobs, capacity = kth_jobs(trace_path("KTH-SP2-1996-2.1-cln.swf.gz"))
    annotate_cpu(jobs, seed=4)
    policy = counting_policy("cmcbf")
    integrator = Integrator(2)
    Engine(jobs, Nodes(capacity, 2, seed=4), policy, migration_cost=20.0, observer=integrator).run()
    return jobs, capacity, policy, integrator


def test_busy_cpu_seconds_are_runtime_times_cpu_whatever_the_rates(kth_consolidated):
    jobs, capacity, _, integrator = kth_consolidated
    records = job_records(jobs)
    # Each job's integral of cpu_sum x rate over the schedule is cpu_sum x runtime.
    for job in jobs:
        assert integrator.consumed[job.index] == pytest.approx(job.runtime * job.cpu_sum, rel=1e-8, abs=1e-6)
    busy = sum(integrator.consumed.values())
    assert busy == pytest.approx(sum(j.runtime * sum(j.cpu_true) for j in jobs), rel=1e-9)
    metrics = run_metrics(records, capacity)
    span = max(j.finish_time for j in jobs) - min(j.submit_time for j in jobs)
    assert metrics["utilization"] == pytest.approx(busy / (capacity * span), rel=1e-9)
    assert 0 < metrics["utilization"] <= 1


def test_tier_durations_are_the_time_each_job_held_vms(kth_consolidated):
    jobs, capacity, policy, integrator = kth_consolidated
    records = job_records(jobs)
    total = records["tier0_duration"] + records["tier1_duration"]
    for job in jobs:
        for tier in (0, 1):
            assert job.tier_time[tier] == pytest.approx(integrator.held[job.index][tier], rel=1e-9, abs=1e-6)
    never_suspended = np.array([policy.suspensions[j.index] == 0 for j in jobs])
    held = records["finish_time"] - records["start_time"]
    assert np.allclose(total[never_suspended], held[never_suspended], rtol=1e-12, atol=1e-6)
    # A suspended job held VMs for less than its first-start-to-finish span.
    assert (total[~never_suspended] <= held[~never_suspended] + 1e-6).all()
    assert never_suspended.sum() > 1000 and (~never_suspended).sum() > 10  # both cases occur
    # The run metrics' shares: VM-seconds held in each tier over all VM-seconds held.
    metrics = run_metrics(records, capacity)
    vm_seconds = [sum(j.size * integrator.held[j.index][t] for j in jobs) for t in (0, 1)]
    for tier in (0, 1):
        assert metrics[f"tier{tier}_share"] == pytest.approx(vm_seconds[tier] / sum(vm_seconds), rel=1e-9)
    assert 0 < metrics["tier1_share"] < metrics["tier0_share"]


def test_utilisation_never_exceeds_one_even_under_the_idle_floor(tmp_path):
    # One node, two tiers, fixed factors (o = 0, eff 0.9), no CPU information with the fixed
    # prior (cpu_accuracy 0, cpu_guess prior: every estimate is 0.7 < 0.96). A (1 process, true
    # CPU 1.0, 100 s) runs in the foreground; B (1 process, true CPU 1.0, 10 s) is placed in the background under A and
    # progresses at 0.9 * 0.04 (floor) = 0.036 while consuming 0.036 of a node A fully uses.
    # After A ends at 100, B (3.6 s done) moves up and finishes at 106.4.
    # Node 0 is never more than fully busy, so utilisation <= 1; summing runtime x CPU gives
    # (100 + 10) / 106.4 = 1.034.
    trace = tmp_path / "two.swf"
    trace.write_text(
        "; MaxProcs: 1\n"
        "1 0 -1 100 1 -1 -1 1 100 -1 1 1 1 -1 -1 -1 -1 -1\n"
        "2 0 -1 10 1 -1 -1 1 100 -1 1 1 1 -1 -1 -1 -1 -1\n"
    )
    result = simulate(
        {
            "workload": {"trace": str(trace), "cpu_accuracy": 0.0, "cpu_guess": "prior"},
            "platform": {"tiers": 2, "fg_overhead": 0.0, "bg_efficiency": 0.9},
            "policy": {"name": "cmcbf"},
        }
    )
    assert result.jobs["finish_time"].tolist() == [100.0, approx(106.4)]
    assert result.metrics["utilization"] <= 1.0


@pytest.mark.parametrize("size", [16, 64])
def test_job_scope_gives_a_wide_background_job_the_papers_job_level_efficiency(size):
    # Paper 000 reports the job-level mean efficiency of multi-process background jobs (0.428,
    # truncated to [0.2, 0.8]: mean ~0.445). With one eff per job and placement (the default),
    # a wide job under a busy foreground on every node runs at that eff; with one per process
    # it runs at the slowest of ``size`` draws, about half of it.
    effs = {}
    for scope in ("job", "process"):
        _, observed, _, _ = factor_samples(size, scope=scope, fg_overhead=0.0, under=size)
        effs[scope] = observed[:400]
    mean, _ = truncated_normal_moments(0.428, 0.144, 0.2, 0.8)
    assert effs["job"].mean() == pytest.approx(mean, abs=0.02)  # sd 0.13 / sqrt(400): 0.0065
    assert effs["process"].mean() < 0.3 and effs["process"].min() >= 0.2
    assert effs["process"].mean() < 0.7 * effs["job"].mean()


def test_in_job_scope_every_process_of_a_background_job_shares_one_eff():
    # One placement of a 4-process background job under a busy foreground on all 4 nodes: in
    # job scope every process gets the job's eff, in process scope each its own; either way
    # the job runs at its slowest process (idle CPU 0.99 >= its need 0.5, so rate = eff).
    for scope in ("job", "process"):
        jobs = make_jobs([(0, 100, 4, 100), (0, 10, 4, 10)], 4)
        set_cpu(jobs[0], [0.01] * 4)
        set_cpu(jobs[1], [0.5] * 4)
        nodes = Nodes(4, 2, fg_overhead=0.0, bg_efficiency="paper", bg_efficiency_scope=scope, seed=7)
        factors: list[list[float]] = []

        def observe(sim, nodes=nodes, factors=factors):
            if 1 in sim.running:
                factors.append([nodes._factor[2 * n + 1] for n in range(4)])

        Engine(jobs, nodes, Placed({0: (0, [0, 1, 2, 3]), 1: (1, [0, 1, 2, 3])}), observer=observe).run()
        assert factors, "the background job never ran"
        assert len(set(factors[0])) == (1 if scope == "job" else 4), (scope, factors[0])
        assert jobs[1].finish_time == approx(10 / min(factors[0]))
