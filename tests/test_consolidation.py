"""The consolidation family (``core/policies/consolidation.py``): cmbf, ambf, cmcbf, amcbf, smcbf.

* With one tier there is no background VM, so cmcbf is cmbf and amcbf is ambf, record for
  record (random workloads and the first 3000 jobs of KTH-SP2).
* Every registered policy keeps the contract of ``test_contract.py`` (its ``audit`` observer:
  one process per VM, one tier per job, no background process on a node estimated at or above
  the threshold, the CMBF property, progress <= runtime, every job finished once) on random
  workloads with random CPU usage, on 1, 2 and 3 tiers.
* CPU-estimate accuracy: decisions use the estimates, progress the true usage.
* Migration cost: a restart holds the VMs for exactly ``migration_cost``; moving up on the
  job's own nodes is a free priority swap, moving elsewhere is a migration.
* ``bg_threshold``: 0 forbids the background tier; higher thresholds allow more of it; the
  comparison is strict (a node at the threshold takes no background process, and a foreground
  placement reaching it evicts the background job there).
* ``smcbf``: a huge XFactor threshold leaves only evictions as suspensions (nobody may
  displace a foreground job); a threshold of 1 makes every job starved, i.e. cmcbf.
* k > 2 tiers: background dispatch tries tier 1 before tier 2.

Two minimal hand cases pin fixed defects: on k > 2 tiers a background start in tier 1 must not
leave an existing tier-2 process at or above the threshold; under amcbf a queue head created
by the background phase gets its turn to preempt in the same pass.

Hand cases use fixed progress factors (``fg_overhead=0``, ``bg_efficiency=0.9``) and CPU usages
set per job, and state their expected times in comments.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from helpers import make_jobs
from test_contract import POLICY_NAMES, assert_contract, audit, kth_jobs, run_counted
from tiersweep.core.capabilities import TIERS
from tiersweep.core.engine import Engine
from tiersweep.core.errors import SpecError
from tiersweep.core.metrics import job_records
from tiersweep.core.platforms import Nodes
from tiersweep.core.policies import POLICIES, make_policy
from tiersweep.core.simulate import simulate
from tiersweep.core.spec import validate_spec
from tiersweep.core.workloads.cpu import annotate_cpu

EFF = 0.9
KTH_JOBS = 3000
CONSOLIDATING = ("cmcbf", "amcbf", "smcbf")


def uses_background(name: str) -> bool:
    """Whether policy ``name`` may run jobs in background tiers (it needs them)."""
    return TIERS in POLICIES[name].requires


SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# -- helpers ---------------------------------------------------------------------------------


def assert_records_equal(a: dict, b: dict, label: str = "") -> None:
    """Same columns and bit-identical values."""
    assert sorted(a) == sorted(b), label
    for column in a:
        x, y = np.asarray(a[column]), np.asarray(b[column])
        assert x.dtype == y.dtype and x.shape == y.shape, f"{label}: {column}"
        assert x.tobytes() == y.tobytes(), f"{label}: column {column} differs"


def set_cpu(job, cpus) -> None:
    job.cpu_true = list(cpus)
    job.cpu_est = list(cpus)
    job.cpu_sum = float(sum(cpus))


def recording_policy(name: str, **params):
    """The policy registered as ``name``, also recording suspensions and moves (its decisions
    are the original's: every hook calls the original first)."""

    class Recording(POLICIES[name]):  # type: ignore[misc, valid-type]
        def setup(self, sim):
            super().setup(sim)
            self.sim = sim
            #: (time, job index, tier it was suspended from, whether it was an eviction)
            self.suspensions: list[tuple[float, int, int, bool]] = []
            #: (time, job index, old tier, new tier, stayed on its nodes)
            self.moves: list[tuple[float, int, int, int, bool]] = []

        def on_suspend(self, job):
            evicted = job.index in getattr(self, "evicted", ())
            super().on_suspend(job)
            self.suspensions.append((self.sim.now, job.index, job.tier, evicted))

        def on_move(self, job, tier, nodes):
            super().on_move(job, tier, nodes)
            self.moves.append((self.sim.now, job.index, tier, job.tier, list(nodes) == list(job.nodes)))

    return Recording(**params)


def hand_run(rows, cpus, policy, *, nodes, tiers=2, migration_cost=0.0, observer=audit, **params):
    """Run ``rows`` with CPU usages ``cpus`` (known exactly) under a recording ``policy`` on
    fixed factors; return ``(jobs, policy)``."""
    jobs = make_jobs(rows, nodes)
    assert len(jobs) == len(rows)
    for job, cpu in zip(jobs, cpus):
        set_cpu(job, cpu)
    instance = recording_policy(policy, **params)
    platform = Nodes(nodes, tiers, fg_overhead=0.0, bg_efficiency=EFF)
    Engine(jobs, platform, instance, migration_cost=migration_cost, observer=observer).run()
    return jobs, instance


class Placements:
    """Observer: ``at[t] = {job index: (tier, nodes)}`` after each pass, audited too."""

    def __init__(self) -> None:
        self.at: dict[float, dict[int, tuple[int, tuple[int, ...]]]] = {}

    def __call__(self, sim) -> None:
        audit(sim)
        self.at[sim.now] = {j.index: (j.tier, tuple(j.nodes)) for j in sim.running.values()}


def approx(value):
    return pytest.approx(value, rel=1e-12, abs=1e-9)


GAPS = st.sampled_from([0, 0, 0, 1, 5, 50, 300])


@st.composite
def workloads(draw, max_nodes: int = 8, max_jobs: int = 18):
    """``(nodes, rows)``: rows (submit, runtime, size, requested), submit-sorted; runtimes
    0..800 and requests over or under them (the kill rule trims the latter)."""
    nodes = draw(st.integers(1, max_nodes))
    rows, submit = [], 0
    for _ in range(draw(st.integers(1, max_jobs))):
        submit += draw(GAPS)
        runtime = draw(st.integers(0, 800))
        requested = max(1, runtime + draw(st.integers(-200, 400)))
        rows.append((submit, runtime, draw(st.integers(1, nodes)), requested))
    return nodes, rows


def kth_spec(kth_path, name: str, tiers: int, *, workload=None, **policy) -> dict:
    return {
        "workload": {"trace": str(kth_path), "jobs": KTH_JOBS, **(workload or {})},
        "platform": {"tiers": tiers},
        "policy": {"name": name, **policy},
    }


# -- no background: the consolidating members are their base policies --------------------------------


@pytest.mark.parametrize("name", CONSOLIDATING)
def test_consolidation_on_one_tier_is_a_spec_error_naming_the_missing_capability(name):
    # On one tier there is nothing to consolidate onto: running anyway would silently be EASY.
    spec = {"workload": {"model": "jann97", "jobs": 10}, "platform": {"tiers": 1}, "policy": {"name": name}}
    with pytest.raises(SpecError, match=rf"policy {name!r} needs 'tiers' .* 'nodes' with tiers: 1"):
        validate_spec(spec)
    with pytest.raises(SpecError, match="'tiers'"):
        Engine(make_jobs([(0, 10, 1, 10)], 2), Nodes(2, 1), make_policy(name))


@SETTINGS
@given(case=workloads(), seed=st.integers(0, 2**16), pair=st.sampled_from([("cmcbf", "cmbf"), ("amcbf", "ambf")]))
def test_consolidation_without_background_equals_its_base_policy(case, seed, pair):
    # bg_threshold 0 admits no background process: on two tiers the consolidating member
    # schedules exactly as its base policy on dedicated nodes.
    nodes, rows = case
    records = []
    for name, tiers, params in ((pair[0], 2, {"bg_threshold": 0.0}), (pair[1], 1, {})):
        jobs = make_jobs(rows, nodes)
        annotate_cpu(jobs, seed=seed)
        Engine(
            jobs, Nodes(nodes, tiers, seed=seed), make_policy(name, **params), migration_cost=20.0, observer=audit
        ).run()
        records.append({k: v for k, v in job_records(jobs).items() if k != "tier1_duration"})
    assert_records_equal(*records, label=f"{pair}")


@pytest.mark.parametrize(("consolidating", "base"), [("cmcbf", "cmbf"), ("amcbf", "ambf")])
def test_consolidation_without_background_equals_its_base_policy_on_kth(kth_path, consolidating, base):
    mine = simulate(kth_spec(kth_path, consolidating, 2, bg_threshold=0.0))
    theirs = simulate(kth_spec(kth_path, base, 1))
    mine_jobs = {k: v for k, v in mine.jobs.items() if k != "tier1_duration"}
    assert_records_equal(mine_jobs, theirs.jobs, f"{consolidating} vs {base}")
    assert mine.metrics["migrations_per_job"] > 0  # preemption happened: the check is not vacuous


# -- every policy keeps the contract on tiers ------------------------------------------------------


CONTRACT_CASES = dict(
    case=workloads(),
    seed=st.integers(0, 2**16),
    accuracy=st.sampled_from([1.0, 1.0, 0.5, 0.0]),
    usage=st.sampled_from([(0.4, 1.0), (0.1, 0.5), (1.0, 1.0)]),
    migration_cost=st.sampled_from([0.0, 20.0]),
    threshold=st.sampled_from([0.96, 0.96, 0.5, 1.0, 0.0]),
)


def check_contract_on_tiers(name, tiers, case, seed, accuracy, usage, migration_cost, threshold):
    nodes, rows = case
    jobs = make_jobs(rows, nodes)
    annotate_cpu(jobs, seed=seed, accuracy=accuracy, usage=usage)
    params = {"bg_threshold": threshold} if "bg_threshold" in POLICIES[name].params else {}
    policy = run_counted(jobs, nodes, name, tiers=tiers, migration_cost=migration_cost, **params)
    records = job_records(jobs)
    assert_contract(records, nodes, name, policy)
    # Each job held VMs for no longer than it was in the system.
    held = sum(records[f"tier{t}_duration"] for t in range(tiers))
    assert (held <= records["finish_time"] - records["start_time"] + 1e-6).all()
    if not uses_background(name) or tiers == 1:
        # Nothing but the policies that need tiers ever uses a background tier.
        assert all((records[f"tier{t}_duration"] == 0).all() for t in range(1, tiers))


def _contract_params():
    for name in POLICY_NAMES:
        for tiers in (1, 2, 3) if not uses_background(name) else (2, 3):
            yield pytest.param(name, tiers, id=f"{name}-{tiers}")


@pytest.mark.parametrize(("name", "tiers"), list(_contract_params()))
@settings(max_examples=20, deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(**CONTRACT_CASES)
def test_contract_on_tiers(name, tiers, case, seed, accuracy, usage, migration_cost, threshold):
    check_contract_on_tiers(name, tiers, case, seed, accuracy, usage, migration_cost, threshold)


@pytest.mark.parametrize("name", CONSOLIDATING)
@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    phases=[Phase.generate],  # no shrinking: the minimal case is the hand case below
    suppress_health_check=[HealthCheck.too_slow],
)
@given(**CONTRACT_CASES)
def test_contract_on_three_tiers(name, case, seed, accuracy, usage, migration_cost, threshold):
    check_contract_on_tiers(name, 3, case, seed, accuracy, usage, migration_cost, threshold)


def test_background_start_never_pushes_a_lower_tier_over_the_threshold():
    # One node, three tiers, cmcbf, threshold 0.96.
    # A (fg, CPU 0.5) at 0. B (CPU 0.3, 9 s) at 1 -> tier 1 (0.5 < 0.96), rate 0.9: ends at 11.
    # C (CPU 0.3) at 2 -> tier 2 (tier 1 busy; 0.5 + 0.3 = 0.8 < 0.96). B ends at 11; tier 1 is
    # free again. D (CPU 0.9) at 20: tier 1 alone would be fine (0.5 < 0.96), but below it C
    # would then sit under 0.5 + 0.9 = 1.4 >= 0.96. Correct: D does not go there (or C is
    # evicted); the audit observer checks that no background process ends up at or above the
    # threshold.
    jobs, _ = hand_run(
        [(0, 1000, 1, 1000), (1, 9, 1, 9), (2, 1000, 1, 1000), (20, 1000, 1, 1000)],
        [[0.5], [0.3], [0.3], [0.9]],
        "cmcbf",
        nodes=1,
        tiers=3,
    )
    assert jobs[1].finish_time == approx(11.0)


def test_amcbf_head_is_the_first_of_the_queue_and_the_background_jobs():
    # Paper 000, Algorithm 2, line 2: "j <- get the first job in Q u J_bg". Under AMCBF only
    # that head may preempt, and a background job that arrived first is the head.
    # Four nodes, two tiers, 1000 s jobs unless said otherwise.
    # t=0:    A (1 node, CPU 0.5) -> fg node 0; Z (2 nodes, CPU 1.0, 100 s) -> fg nodes 1, 2.
    # t=1:    H (4 nodes), N (3 nodes), J (1 node), all CPU 0.5. H is the head: 1 idle + 0
    #         later < 4. N is not the head. J fits: fg node 3. Background: only nodes 0 and 3
    #         are below the threshold (Z's 1.0 is not): room 2 fits neither H nor N.
    # t=100:  Z ends; K (1 node) arrives. H: 2 idle + J's 1 < 4, no. K fits: fg. Background:
    #         all 4 nodes open: H starts there, and stays the head (in J_bg, before N). N
    #         (1 idle + J's and K's 2 = 3 >= 3) may NOT preempt: it is not the head. (The
    #         queue-only reading let N displace J and K here.)
    # t=1000: A ends. H, the head in the background: 2 idle + J's and K's 2 = 4 >= 4, so it
    #         displaces K and J (their background VMs are H's: suspended) and moves up on its
    #         own nodes, a priority swap. (The queue-only reading never let a background job
    #         preempt: H stayed below until J and K ended.) N then takes the background VMs H left.
    # The audit observer checks the head's promise after every pass.
    jobs, policy = hand_run(
        [
            (0, 1000, 1, 1000),
            (0, 100, 2, 100),
            (1, 1000, 4, 1000),
            (1, 1000, 3, 1000),
            (1, 1000, 1, 1000),
            (100, 1000, 1, 1000),
        ],
        [[0.5], [1.0, 1.0], [0.5] * 4, [0.5] * 3, [0.5], [0.5]],
        "amcbf",
        nodes=4,
    )
    h, n, j, k = jobs[2], jobs[3], jobs[4], jobs[5]
    assert n.start_time >= 1000.0  # not at 100: N was never the head before H moved up
    assert (1000.0, h.index, 1, 0, True) in policy.moves
    suspended = {(t, index) for t, index, _, _ in policy.suspensions}
    assert {(1000.0, j.index), (1000.0, k.index)} <= suspended


def test_cmcbf_lets_a_later_queued_job_preempt_where_amcbf_does_not():
    # The same case under CMCBF (every queued or background job may preempt): at t=100 N
    # displaces J and K and starts in the foreground.
    jobs, _ = hand_run(
        [
            (0, 1000, 1, 1000),
            (0, 100, 2, 100),
            (1, 1000, 4, 1000),
            (1, 1000, 3, 1000),
            (1, 1000, 1, 1000),
            (100, 1000, 1, 1000),
        ],
        [[0.5], [1.0, 1.0], [0.5] * 4, [0.5] * 3, [0.5], [0.5]],
        "cmcbf",
        nodes=4,
    )
    assert jobs[3].start_time == 100.0


# -- CPU-estimate accuracy -------------------------------------------------------------------------


@pytest.mark.parametrize("accuracy", [1.0, 0.75, 0.0])
def test_cpu_estimates_follow_the_accuracy(accuracy):
    # With the fixed prior (cpu_guess: prior; the default draws guesses, tested in
    # test_cpu_annotation.py): a = 1: estimate = true usage; a = 0: every estimate is the
    # prior 0.7; in between the mix.
    jobs = make_jobs([(0, 10, s, 10) for s in (1, 2, 3, 5, 8)], 8)
    annotate_cpu(jobs, seed=9, accuracy=accuracy, guess="prior")
    for job in jobs:
        assert len(job.cpu_est) == job.size
        if accuracy == 1.0:
            assert job.cpu_est == job.cpu_true
        elif accuracy == 0.0:
            assert job.cpu_est == [0.7] * job.size
        else:
            assert job.cpu_est == pytest.approx([0.75 * c + 0.25 * 0.7 for c in job.cpu_true], abs=1e-15)
    assert jobs[0].cpu_true == [1.0]


def test_the_scheduler_sees_estimates_and_progress_uses_true_usage():
    # One node, two tiers, cmcbf. A (0 s submit, 100 s) and B (at 1, 10 s) are single-process:
    # true CPU 1.0. With the fixed prior guess (with drawn guesses a single-process job's whole
    # CPU is known whatever the accuracy).
    # a = 1: A's estimate 1.0 >= 0.96, so no background process goes under A: B waits and
    #        starts in the foreground at 100, finishing at 110.
    # a = 0: A's estimate 0.7 < 0.96: B starts in the background at 1. Its progress uses the
    #        true usage: idle 1 - 1.0 = 0 -> floor 0.04 -> rate 0.9 * 0.04 = 0.036; 99 * 0.036 =
    #        3.564 done at 100, then B swaps up (own node) at rate 1: finishes at 106.436.
    finish = {}
    for accuracy in (1.0, 0.0):
        jobs = make_jobs([(0, 100, 1, 100), (1, 10, 1, 100)], 1)
        annotate_cpu(jobs, seed=0, accuracy=accuracy, guess="prior")

        def sees_estimates(sim, platform_tiers=2):
            audit(sim)
            vm_est = sim.platform.vm_est
            for job in sim.running.values():
                for p, node in enumerate(job.nodes):
                    assert vm_est[node * platform_tiers + job.tier] == job.cpu_est[p]

        Engine(
            jobs, Nodes(1, 2, fg_overhead=0.0, bg_efficiency=EFF), make_policy("cmcbf"), observer=sees_estimates
        ).run()
        finish[accuracy] = jobs[1]
        assert jobs[0].finish_time == 100.0
    waited, consolidated = finish[1.0], finish[0.0]
    assert waited.start_time == 100.0 and waited.finish_time == 110.0 and waited.tier_time == [10.0, 0.0]
    assert consolidated.start_time == 1.0
    assert consolidated.finish_time == approx(106.436)
    assert consolidated.tier_time == [approx(6.436), 99.0]
    assert consolidated.migrations == 0


def test_cpu_accuracy_changes_an_amcbf_schedule_on_kth(kth_path):
    exact = simulate(kth_spec(kth_path, "amcbf", 2, workload={"cpu_accuracy": 1.0}))
    blind = simulate(kth_spec(kth_path, "amcbf", 2, workload={"cpu_accuracy": 0.0}))
    # The same jobs with the same true usage...
    assert np.array_equal(exact.jobs["cpu_mean"], blind.jobs["cpu_mean"])
    # ...scheduled differently.
    assert not np.array_equal(exact.jobs["start_time"], blind.jobs["start_time"])
    assert not np.array_equal(exact.jobs["tier1_duration"], blind.jobs["tier1_duration"])


# -- migration cost -------------------------------------------------------------------------------


@pytest.mark.parametrize("cost", [0.0, 20.0, 600.0])
def test_restart_holds_the_vms_for_exactly_the_migration_cost(cost):
    # 4 dedicated nodes, cmbf. J1 (3 nodes, 100 s) starts at 0. J2 (4 nodes, 50 s, at 1) waits.
    # J3 (1 node, 200 s, at 2) is backfilled at 2. At 100 J1 ends: J2 fits on the 3 idle nodes
    # plus J3's (a later arrival), so J3 is suspended with 98 s done, J2 runs [100, 150).
    # J3 restarts at 150, holds its node for ``cost``, then runs its last 102 s:
    # finish 252 + cost, one migration, held VMs 98 + cost + 102.
    jobs, policy = hand_run(
        [(0, 100, 3, 100), (1, 50, 4, 50), (2, 200, 1, 200)],
        [[1.0] * 3, [1.0] * 4, [1.0]],
        "cmbf",
        nodes=4,
        tiers=1,
        migration_cost=cost,
    )
    j1, j2, j3 = jobs
    assert (j1.finish_time, j2.start_time, j2.finish_time) == (100.0, 100.0, 150.0)
    assert policy.suspensions == [(100.0, 2, 0, False)]
    assert j3.start_time == 2.0 and j3.finish_time == 252.0 + cost
    assert j3.migrations == 1 and j2.migrations == 0
    assert j3.tier_time == [200.0 + cost]


def test_migration_cost_raises_response_times_on_kth(kth_path):
    cheap = simulate(kth_spec(kth_path, "amcbf", 2, migration_cost=0))
    dear = simulate(kth_spec(kth_path, "amcbf", 2, migration_cost=600))
    assert cheap.metrics["migrations_per_job"] > 0 and dear.metrics["migrations_per_job"] > 0
    assert dear.metrics["mean_response"] > cheap.metrics["mean_response"]


def test_moving_up_on_its_own_node_is_a_free_swap():
    # One node, two tiers, cmcbf, migration cost 600. A (fg, CPU 0.3, 100 s) at 0.
    # B (CPU 0.5, 200 s) at 1 goes to the background under A: idle 0.7 >= 0.5 -> rate 0.9.
    # At 100 A ends; B has 89.1 s done and moves up on its own node: a priority swap, no
    # migration and no restore delay; rate 1 -> finishes at 100 + 110.9 = 210.9.
    jobs, policy = hand_run(
        [(0, 100, 1, 100), (1, 200, 1, 200)], [[0.3], [0.5]], "cmcbf", nodes=1, migration_cost=600.0
    )
    b = jobs[1]
    assert policy.moves == [(100.0, 1, 1, 0, True)]
    assert policy.suspensions == []
    assert b.start_time == 1.0 and b.finish_time == approx(210.9)
    assert b.migrations == 0
    assert b.tier_time == [approx(110.9), 99.0]


@pytest.mark.parametrize("cost", [0.0, 600.0])
def test_moving_up_to_another_node_is_a_migration(cost):
    # Two nodes, two tiers, cmcbf. A (fg node 0, CPU 0.3, 1000 s) and C (fg node 1, CPU 0.5,
    # 100 s) at 0. B (CPU 0.5, 200 s) at 1: both nodes take a background process; B goes to the
    # one with the lower foreground estimate, node 0, at rate 0.9 (idle 0.7 >= 0.5).
    # At 100 C ends: B (89.1 s done) moves up, but node 0's foreground VM is A's: it moves to
    # node 1, one migration, holding the VM for ``cost`` before running its last 110.9 s:
    # finish 210.9 + cost.
    jobs, policy = hand_run(
        [(0, 1000, 1, 1000), (0, 100, 1, 100), (1, 200, 1, 200)],
        [[0.3], [0.5], [0.5]],
        "cmcbf",
        nodes=2,
        migration_cost=cost,
    )
    a, c, b = jobs
    assert a.finish_time == 1000.0 and c.finish_time == 100.0
    assert policy.moves == [(100.0, 2, 1, 0, False)]
    assert b.migrations == 1
    assert b.finish_time == approx(210.9 + cost)
    assert b.tier_time == [approx(110.9 + cost), 99.0]


def test_background_job_placed_on_the_node_with_the_lowest_foreground_estimate():
    # Two nodes; A (fg, CPU 0.5) on node 0, C (fg, CPU 0.3) on node 1; B goes under C.
    log = Placements()
    hand_run(
        [(0, 1000, 1, 1000), (0, 1000, 1, 1000), (1, 10, 1, 10)],
        [[0.5], [0.3], [0.5]],
        "cmcbf",
        nodes=2,
        observer=log,
    )
    assert log.at[1.0] == {0: (0, (0,)), 1: (0, (1,)), 2: (1, (1,))}


# -- bg_threshold ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("threshold", "b_start"), [(0.5, 100.0), (0.51, 1.0)])
def test_a_node_at_the_threshold_takes_no_background_process(threshold, b_start):
    # One node. A (fg, CPU 0.5, 100 s) at 0; B (CPU 0.5, 10 s) at 1. The background tier is
    # open only while the foreground estimate is *below* the threshold: at 0.5 B waits for A,
    # at 0.51 it starts at once underneath.
    jobs, _ = hand_run([(0, 100, 1, 100), (1, 10, 1, 10)], [[0.5], [0.5]], "cmcbf", nodes=1, bg_threshold=threshold)
    assert jobs[1].start_time == b_start


@pytest.mark.parametrize(("d_cpu", "evicted"), [(1.0, True), (0.96, True), (0.9, False)])
def test_a_foreground_placement_reaching_the_threshold_evicts_the_background(d_cpu, evicted):
    # Two nodes. A (fg node 0, CPU 0.3, 50 s), C (fg node 1, CPU 0.3, 1000 s) at 0.
    # B (2 processes, CPU 0.5 each, 1000 s) at 1 goes to the background of both nodes.
    # At 50 A ends: B cannot move up (2 processes, 1 idle foreground VM, nothing later to
    # displace). D (1 process, CPU d_cpu, 100 s) at 60 takes node 0's foreground VM: when its
    # estimate reaches 0.96, B is evicted (suspended) in that pass; below, B stays.
    jobs, policy = hand_run(
        [(0, 50, 1, 50), (0, 1000, 1, 1000), (1, 1000, 2, 1000), (60, 100, 1, 100)],
        [[0.3], [0.3], [0.5, 0.5], [d_cpu]],
        "cmcbf",
        nodes=2,
    )
    assert jobs[3].start_time == 60.0
    if evicted:
        assert policy.suspensions[0] == (60.0, 2, 1, True)
        assert jobs[2].migrations >= 1
    else:
        assert policy.suspensions == []
        assert jobs[2].migrations == 0


def test_background_share_grows_with_the_threshold_on_kth(kth_path):
    share = {}
    for threshold in (0.0, 0.5, 1.0):
        result = simulate(kth_spec(kth_path, "cmcbf", 2, bg_threshold=threshold))
        share[threshold] = result.metrics["tier1_share"]
        if threshold == 0.0:
            assert (result.jobs["tier1_duration"] == 0).all()
    assert share[0.0] == 0.0
    assert 0 < share[0.5] < share[1.0]


# -- smcbf ----------------------------------------------------------------------------------------


@pytest.mark.slow  # (the whole of KTH-SP2: about 15 s)
def test_smcbf_with_a_huge_threshold_only_evicts(kth_path):
    # Nobody is ever starved, so nobody may displace a later foreground job: no foreground job
    # is suspended or switched down. What remains: background jobs evicted by a foreground
    # placement that pushes their node to the threshold, and background jobs moving up.
    runs = {}
    for threshold in (1e12, 1.0):
        jobs, capacity = kth_jobs(kth_path)
        annotate_cpu(jobs, seed=0)
        policy = recording_policy("smcbf", xfactor_threshold=threshold)
        Engine(jobs, Nodes(capacity, 2), policy, migration_cost=20.0, observer=audit).run()
        runs[threshold] = policy
    never = runs[1e12]
    assert never.suspensions, "no eviction happened: the check would be vacuous"
    assert all(tier == 1 and evicted for _, _, tier, evicted in never.suspensions)
    assert all(old == 1 and new == 0 for _, _, old, new, _ in never.moves)
    # With threshold 1 foreground jobs are displaced: suspended from tier 0 or switched down.
    always = runs[1.0]
    assert any(tier == 0 for _, _, tier, _ in always.suspensions) or any(old == 0 for _, _, old, _, _ in always.moves)


def test_smcbf_with_a_huge_threshold_and_no_background_never_preempts(kth_path):
    result = simulate(kth_spec(kth_path, "smcbf", 2, xfactor_threshold=1e12, bg_threshold=0.0))
    assert (result.jobs["migrations"] == 0).all()


@SETTINGS
@given(case=workloads(), seed=st.integers(0, 2**16), tiers=st.sampled_from([2, 3]))
def test_smcbf_with_threshold_one_is_cmcbf(case, seed, tiers):
    # Every XFactor is >= 1, so every job is starved: every job may preempt, as in cmcbf.
    nodes, rows = case
    records = []
    for name, params in (("cmcbf", {}), ("smcbf", {"xfactor_threshold": 1.0})):
        jobs = make_jobs(rows, nodes)
        annotate_cpu(jobs, seed=seed)
        platform = Nodes(nodes, tiers, seed=seed)
        Engine(jobs, platform, make_policy(name, **params), migration_cost=20.0, observer=audit).run()
        records.append(job_records(jobs))
    assert_records_equal(*records, label=f"tiers {tiers}")


def test_smcbf_with_threshold_one_is_cmcbf_on_kth(kth_path):
    mine = simulate(kth_spec(kth_path, "smcbf", 2, xfactor_threshold=1.0))
    theirs = simulate(kth_spec(kth_path, "cmcbf", 2))
    assert_records_equal(mine.jobs, theirs.jobs)


# -- k > 2 tiers ----------------------------------------------------------------------------------


def test_background_dispatch_tries_tier_one_before_tier_two():
    # Two nodes, three tiers, cmcbf, all 1000 s. A (fg, CPU 0.1) on node 0 and E (fg, CPU 0.9)
    # on node 1 at 0.
    # B (CPU 0.1) at 1: tier 1 is open on both nodes (0.1 and 0.9 < 0.96): node 0, the lower.
    # C (CPU 0.1) at 2: tier 1 is still open on node 1 (0.9 < 0.96), so C goes there, though
    #   node 0's tier 2 has less above it (0.1 + 0.1 = 0.2).
    # F (CPU 0.1) at 3: no tier 1 left; tier 2 on node 0 (0.2 < 0.96; node 1 has 0.9 + 0.1 = 1.0).
    # G (CPU 0.1) at 4: nothing open: G waits.
    log = Placements()
    jobs, _ = hand_run(
        [
            (0, 1000, 1, 1000),
            (0, 1000, 1, 1000),
            (1, 1000, 1, 1000),
            (2, 1000, 1, 1000),
            (3, 1000, 1, 1000),
            (4, 10, 1, 10),
        ],
        [[0.1], [0.9], [0.1], [0.1], [0.1], [0.1]],
        "cmcbf",
        nodes=2,
        tiers=3,
        observer=log,
    )
    assert log.at[1.0][2] == (1, (0,))
    assert log.at[2.0][3] == (1, (1,))
    assert log.at[3.0][4] == (2, (0,))
    assert 5 not in log.at[4.0]
    assert jobs[5].start_time > 4.0
