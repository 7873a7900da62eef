"""``platform.allocation: paper`` of the ``shared_vms`` platform: paper 001's one-pass CPU split.

* A worked case by hand (3 machines x 2 VMs of shares 1 and 3, three jobs): the one-pass
  rates, the schedule with exact finish times and the efficiency eta as the platform's
  statistics define it, against ``fixed_point`` on the same case (higher, work-conserving).
* The paper's figures 3 and 4 under ``paper``: the same numbers as ``fixed_point`` where the
  paper gives them, but not everywhere (figure 4's job B): equal shares alone do not make the
  two allocations agree.
* Properties under hypothesis, against an independent entitlement computation: ``paper``
  keeps the platform's invariants and never gives a job more than ``fixed_point``; serial
  jobs alone get the same rates under both; with equal shares (no caps, no guarantees) the
  jobs on the most crowded machines get the same rate under both, so a cluster whose
  occupied machines all hold the same number of tasks is allocated identically.
* Spec: the key, its default (``fixed_point``), its error; the reproduction configs use ``paper``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from test_shared_vms import FixedPlacement, assert_fair
from tiersweep.core.engine import Engine
from tiersweep.core.errors import SpecError
from tiersweep.core.jobs import Job
from tiersweep.core.platforms import SharedVms
from tiersweep.core.platforms.shared_vms import ALLOCATIONS, OnePassAllocator
from tiersweep.core.spec import validate_spec

TOL = 1e-12
ROOT = Path(__file__).resolve().parents[1]


def job(index: int, size: int, runtime: float = 100.0, submit: float = 0.0) -> Job:
    return Job(index, index + 1, submit, size, runtime)


# -- the worked case ----------------------------------------------------------------------------
#
# 3 machines x 2 VMs, shares (1, 3) by position, min 0, max 1; VM v is on machine v // 2.
#   J0, 2 tasks, runtime 5:  VM 1 (machine 0, share 3) and VM 2 (machine 1, share 1)
#   J1, 1 task,  runtime 12: VM 0 (machine 0, share 1)
#   J2, 2 tasks, runtime 24: VM 3 (machine 1, share 3) and VM 4 (machine 2, share 1); VM 5 idle
#
# paper (one pass). Entitlements: machines 0 and 1 have both VMs active, so share 1 gets 1/4 and
# share 3 gets 3/4; on machine 2 VM 4 is alone and gets 1. Each job runs at its smallest:
#   J0 = min(3/4, 1/4) = 1/4,  J1 = 1/4,  J2 = min(3/4, 1) = 3/4.
# Use: machine 0 = 1/4 + 1/4 = 1/2 (J0's VM 1 leaves 3/4 - 1/4 = 1/2 idle, J1 may not take it),
# machine 1 = 1/4 + 3/4 = 1, machine 2 = 3/4: 9/4 on 3 occupied machines, eta now 3/4.
# Schedule: J0 ends at 5 / (1/4) = 20; then J1 (7 left) is alone on machine 0 and J2 (9 left)
# alone on machines 1 and 2, both at 1: J1 ends at 27, J2 at 29.
#   CPU-seconds: 20 x 9/4 + 7 x 3 + 2 x 2 = 70 (= 2 x 5 + 12 + 2 x 24, the work)
#   occupied-machine-seconds: 20 x 3 + 7 x 3 + 2 x 2 = 85          eta = 70 / 85 = 14/17
#
# fixed_point (work-conserving). Machine 1 binds J0 and J2 at equal share-weighted levels:
# J0 = 1/4, J2 = 3/4 (J0 / 1 = J2 / 3, J0 + J2 = 1). On machine 0, J1 takes what J0 leaves:
# J1 = 3/4. Use 1, 1, 3/4: eta now 11/12.
# Schedule: J1 ends at 12 / (3/4) = 16; J0 (1 left) still at 1/4 (machine 1 unchanged) ends at
# 20; J2 (24 - 20 x 3/4 = 9 left) alone at 1 ends at 29.
#   CPU-seconds: 16 x 11/4 + 4 x 2 + 9 x 2 = 70
#   occupied-machine-seconds: 20 x 3 + 9 x 2 = 78                  eta = 70 / 78 = 35/39

WORKED_PLACEMENT = {0: [1, 2], 1: [0], 2: [3, 4]}


def worked_case(allocation: str) -> tuple[SharedVms, list[Job]]:
    platform = SharedVms(3, 2, shares=[1, 3], allocation=allocation)
    jobs = [job(0, 2, 5), job(1, 1, 12), job(2, 2, 24)]
    for j in jobs:
        platform.start(j, 0, WORKED_PLACEMENT[j.index])
    return platform, jobs


def test_worked_case_one_pass_rates_and_efficiency():
    paper, jobs = worked_case("paper")
    assert isinstance(paper.allocator, OnePassAllocator)
    assert [paper.job_rate(j.index) for j in jobs] == pytest.approx([1 / 4, 1 / 4, 3 / 4], abs=TOL)
    assert [paper.machine_usage(m) for m in range(3)] == pytest.approx([1 / 2, 1, 3 / 4], abs=TOL)
    assert paper.free_capacity(0) == pytest.approx(1 / 2, abs=TOL)  # left idle: not work-conserving
    assert paper.utilization() * 3 / paper.occupied_machines() == pytest.approx(3 / 4, abs=TOL)
    paper.check_invariants()

    fixed, jobs = worked_case("fixed_point")
    assert [fixed.job_rate(j.index) for j in jobs] == pytest.approx([1 / 4, 3 / 4, 3 / 4], abs=TOL)
    assert [fixed.machine_usage(m) for m in range(3)] == pytest.approx([1, 1, 3 / 4], abs=TOL)
    assert fixed.utilization() * 3 / fixed.occupied_machines() == pytest.approx(11 / 12, abs=TOL)
    fixed.check_invariants()
    # J1 gets more under the fixed point, nobody gets less.
    assert all(paper.job_rate(j.index) <= fixed.job_rate(j.index) + TOL for j in jobs)


@pytest.mark.parametrize(
    "allocation, finish, occupied, eta",
    [("paper", [20, 27, 29], 85, 14 / 17), ("fixed_point", [20, 16, 29], 78, 35 / 39)],
)
def test_worked_case_as_a_schedule(allocation, finish, occupied, eta):
    platform = SharedVms(3, 2, shares=[1, 3], allocation=allocation)
    jobs = [job(0, 2, 5), job(1, 1, 12), job(2, 2, 24)]
    Engine(jobs, platform, FixedPlacement(WORKED_PLACEMENT)).run()
    assert [j.finish_time for j in jobs] == pytest.approx(finish, abs=1e-9)
    assert platform.stats.busy_integral == pytest.approx(70, abs=1e-9)  # the work, either way
    assert platform.stats.occupied_integral == pytest.approx(occupied, abs=1e-9)
    # eta as the run metric defines it: CPU-seconds over occupied-machine-seconds.
    assert platform.stats.totals(29.0)["efficiency"] == pytest.approx(eta, abs=1e-12)
    assert platform.allocation_fallbacks == 0


# -- the paper's figures under the one pass ------------------------------------------------------


def test_figure_3_caps_give_the_same_numbers():
    # Figure 3(a): caps 0.5 and 0.4 on one machine: 0.9 used.
    platform = SharedVms(1, 2, max=[0.5, 0.4], allocation="paper")
    platform.start(job(0, 1), 0, [0])
    platform.start(job(1, 1), 0, [1])
    assert [platform.job_rate(0), platform.job_rate(1)] == pytest.approx([0.5, 0.4], abs=TOL)
    # Figure 3(b): C on PM_2..PM_4, D on PM_3 and PM_4, E (cap 0.4) on PM_2: C and D at 0.5,
    # E at 0.4; PM_2 used to 0.9 (C's entitlement there is 0.6, of which it uses 0.5).
    platform = SharedVms(3, 3, max=[1.0, 1.0, 0.4], allocation="paper")
    c, d, e = job(0, 3), job(1, 2), job(2, 1)
    platform.start(c, 0, [0, 3, 6])
    platform.start(d, 0, [4, 7])
    platform.start(e, 0, [2])
    assert [platform.job_rate(j.index) for j in (c, d, e)] == pytest.approx([0.5, 0.5, 0.4], abs=TOL)
    assert [platform.machine_usage(m) for m in range(3)] == pytest.approx([0.9, 1.0, 1.0], abs=TOL)
    platform.check_invariants()


def test_figure_4_equal_shares_do_not_make_the_allocations_agree():
    # Left: A on PM_2..PM_4, B on PM_1, C on PM_3 and PM_4 (three VMs per machine, equal
    # shares): 7/8 under both, as the paper says.
    platforms = {kind: SharedVms(4, 3, allocation=kind) for kind in ALLOCATIONS}
    a, b, c, d = job(0, 3), job(1, 1), job(2, 2), job(3, 3)
    for p in platforms.values():
        p.start(a, 0, [3, 6, 9])
        p.start(b, 0, [0])
        p.start(c, 0, [7, 10])
        assert [p.job_rate(j.index) for j in (a, b, c)] == pytest.approx([0.5, 1.0, 0.5], abs=TOL)
        assert p.utilization() == pytest.approx(7 / 8, abs=TOL)
    # Right: D on PM_1, PM_2 and PM_3. A, C and D at 1/3 and PM_2 and PM_4 at 2/3 under both
    # (the numbers the paper gives); the paper does not say what B gets. The one pass leaves B
    # its entitlement on PM_1, 1/2 (D uses 1/3 of its 1/2); the fixed point lets B take the
    # rest, 2/3. Cluster use: 19/24 against 5/6.
    expected = {"paper": (1 / 2, 19 / 24), "fixed_point": (2 / 3, 5 / 6)}
    for kind, p in platforms.items():
        p.start(d, 0, [1, 4, 8])
        rate_b, use = expected[kind]
        assert [p.job_rate(j.index) for j in (a, b, c, d)] == pytest.approx([1 / 3, rate_b, 1 / 3, 1 / 3], abs=TOL)
        assert [p.machine_usage(m) for m in (1, 2, 3)] == pytest.approx([2 / 3, 1, 2 / 3], abs=TOL)
        assert p.utilization() == pytest.approx(use, abs=TOL)
        p.check_invariants()
        p.release(d)  # back to the left-hand side
        assert [p.job_rate(j.index) for j in (a, b, c)] == pytest.approx([0.5, 1.0, 0.5], abs=TOL)


def test_a_job_with_two_vms_of_one_machine_runs_at_the_smaller_entitlement():
    # One job alone on VMs of shares 1 and 4: entitlements 1/5 and 4/5, so it runs at 1/5 and
    # the machine is used to 2/5; the fixed point gives both tasks 1/2.
    paper = SharedVms(1, 2, shares=[1, 4], allocation="paper")
    fixed = SharedVms(1, 2, shares=[1, 4])
    for p in (paper, fixed):
        p.start(job(0, 2), 0, [0, 1])
    assert paper.job_rate(0) == pytest.approx(1 / 5, abs=TOL)
    assert paper.machine_usage(0) == pytest.approx(2 / 5, abs=TOL)
    assert fixed.job_rate(0) == pytest.approx(1 / 2, abs=TOL)


def test_guarantees_are_held_and_an_idle_vm_keeps_only_its_min():
    # Machine of 3 VMs, min (0.25, 0, 0), equal shares. A alone on VM 1: VM 0's guarantee is
    # reserved, so A gets 0.75; B on VM 2 too: 0.375 each.
    platform = SharedVms(1, 3, min=[0.25, 0, 0], allocation="paper")
    platform.start(job(0, 1), 0, [1])
    assert platform.job_rate(0) == pytest.approx(0.75, abs=TOL)
    platform.start(job(1, 1), 0, [2])
    assert [platform.job_rate(0), platform.job_rate(1)] == pytest.approx([0.375, 0.375], abs=TOL)
    assert platform.allocation(0) == pytest.approx(0.25)
    platform.check_invariants()


# -- properties against an independent computation -------------------------------------------------


def one_pass_entitlements(shares, lows, highs, active) -> list[float]:
    """One machine's one-pass split, by bisection on the level (independent of the platform's
    water-filling): active VMs in [low, high] by share, idle VMs at their low."""
    hi = [h if on else lo for lo, h, on in zip(lows, highs, active)]
    if sum(hi) <= 1.0:
        return hi
    below, above = 0.0, max(h / s for h, s in zip(hi, shares))
    for _ in range(200):
        mid = 0.5 * (below + above)
        if sum(min(h, max(lo, mid * s)) for s, lo, h in zip(shares, lows, hi)) > 1.0:
            above = mid
        else:
            below = mid
    return [min(h, max(lo, below * s)) for s, lo, h in zip(shares, lows, hi)]


def assert_one_pass(platform: SharedVms, tolerance: float = 1e-9) -> None:
    """Every job at the smallest entitlement of its VMs; no machine above capacity; every
    active VM within [min, max]."""
    V = platform.vms
    for m in range(platform.machines):
        vms = range(m * V, (m + 1) * V)
        alloc = [platform.allocation(v) for v in vms]
        assert sum(alloc) <= 1 + tolerance, f"machine {m} over capacity"
        for v, a in zip(vms, alloc):
            assert platform.vm_min[v] - tolerance <= a
            if platform.vm_job[v] >= 0:
                assert a <= platform.vm_max[v] + tolerance
    entitled = []
    for m in range(platform.machines):
        vms = range(m * V, (m + 1) * V)
        entitled += one_pass_entitlements(
            [platform.share[v] for v in vms],
            [platform.vm_min[v] for v in vms],
            [platform.vm_max[v] for v in vms],
            [platform.vm_job[v] >= 0 for v in vms],
        )
    smallest: dict[int, float] = {}
    for v, index in enumerate(platform.vm_job):
        if index >= 0:
            smallest[index] = min(smallest.get(index, 1.0), entitled[v])
    for index, expected in smallest.items():
        assert platform.job_rate(index) == pytest.approx(expected, abs=tolerance), f"job {index}"


@st.composite
def twin_scenarios(draw, *, equal_shares=False, bounds=True, serial=False):
    """The same random sharing parameters under both allocations, and a sequence of operations:
    ('start', size, VM picks) or ('release', k)."""
    machines = draw(st.integers(1, 5))
    vms = draw(st.integers(1, 4))
    shares = (
        [1.0] * vms
        if equal_shares
        else draw(st.lists(st.sampled_from([1.0, 1.0, 2.0, 3.0, 4.0]), min_size=vms, max_size=vms))
    )
    caps, mins = [1.0] * vms, [0.0] * vms
    if bounds:
        caps = draw(st.lists(st.sampled_from([1.0, 1.0, 1.0, 0.8, 0.5, 0.4]), min_size=vms, max_size=vms))
        if draw(st.booleans()):
            mins = draw(st.lists(st.sampled_from([0.0, 0.0, 0.1, 0.2]), min_size=vms, max_size=vms))
            mins = [min(lo, hi) for lo, hi in zip(mins, caps)]
            if sum(mins) - min(mins) >= 1.0:
                mins = [0.0] * vms
    twins = {
        kind: SharedVms(machines, vms, shares=shares, max=caps, min=mins, allocation=kind, strict_allocation=True)
        for kind in ALLOCATIONS
    }
    n = machines * vms
    ops = []
    for _ in range(draw(st.integers(1, 30))):
        if draw(st.integers(0, 4)) == 0:
            ops.append(("release", draw(st.integers(0, 100))))
        else:
            size = 1 if serial else draw(st.one_of(st.integers(1, min(n, 3)), st.integers(1, n)))
            ops.append(("start", size, draw(st.permutations(range(n)))))
    return twins, ops


def replay_twins(twins: dict[str, SharedVms], ops, check) -> None:
    """Apply the operations to both platforms alike (same jobs on the same VMs); ``check`` after each."""
    running: list[int] = []
    any_platform = next(iter(twins.values()))
    count = 0
    for op in ops:
        if op[0] == "release":
            if not running:
                continue
            index = running.pop(op[1] % len(running))
            for p in twins.values():
                p.release(p.allocator.jobs[index])
        else:
            _, size, order = op
            free = [v for v in order if any_platform.vm_job[v] < 0][:size]
            if len(free) < size:
                continue
            for p in twins.values():
                p.start(job(count, size), 0, free)
            running.append(count)
            count += 1
        check(twins, running)


SETTINGS = settings(
    max_examples=200, deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow]
)


@SETTINGS
@given(twin_scenarios())
def test_paper_keeps_the_invariants_and_never_beats_the_fixed_point(scenario):
    twins, ops = scenario

    def check(twins, running):
        paper, fixed = twins["paper"], twins["fixed_point"]
        assert_one_pass(paper)
        paper.check_invariants()  # the platform's own check agrees
        assert_fair(fixed)
        for index in running:
            assert paper.job_rate(index) <= fixed.job_rate(index) + 1e-9, f"job {index}"

    replay_twins(twins, ops, check)
    assert twins["fixed_point"].allocation_fallbacks == 0 and twins["paper"].allocation_fallbacks == 0


@SETTINGS
@given(twin_scenarios(serial=True))
def test_serial_jobs_alone_get_the_same_rates_under_both(scenario):
    # One task per job: nothing ripples, every task uses its whole entitlement, and that split
    # is the fixed point too (any shares, caps and guarantees).
    twins, ops = scenario

    def check(twins, running):
        for index in running:
            assert twins["paper"].job_rate(index) == pytest.approx(twins["fixed_point"].job_rate(index), abs=1e-9)

    replay_twins(twins, ops, check)


@SETTINGS
@given(twin_scenarios(equal_shares=True, bounds=False))
def test_equal_shares_agree_on_the_most_crowded_machines(scenario):
    # Equal shares, no caps or guarantees: the one pass gives a job 1 / (the most active VMs on
    # any of its machines); progressive filling (the fixed point here) freezes first the jobs on
    # the most crowded machines, at that same rate. So those jobs agree, and when every occupied
    # machine holds the same number of tasks (the paper's homogeneous runs under load) so does
    # every job. Elsewhere the one pass may be lower (figure 4's job B).
    twins, ops = scenario

    def check(twins, running):
        paper, fixed = twins["paper"], twins["fixed_point"]
        counts = [paper.active_count(m) for m in range(paper.machines)]
        crowd = max(counts)
        for index in running:
            worst = max(counts[m] for m in paper.allocator.groups[index])
            assert paper.job_rate(index) == pytest.approx(1 / worst, abs=1e-12)
            if worst == crowd:
                assert fixed.job_rate(index) == pytest.approx(1 / crowd, abs=1e-9)
        if len({c for c in counts if c}) == 1:
            for index in running:
                assert paper.job_rate(index) == pytest.approx(fixed.job_rate(index), abs=1e-9)

    replay_twins(twins, ops, check)


# -- spec ----------------------------------------------------------------------------------------


def test_spec_key_default_and_error():
    base = {"workload": {"model": "lublin03", "jobs": 10}}
    spec = validate_spec({**base, "platform": {"kind": "shared_vms"}})
    assert spec["platform"]["allocation"] == "fixed_point"  # results before the key existed stand
    spec = validate_spec({**base, "platform": {"kind": "shared_vms", "allocation": "paper"}})
    assert spec["platform"]["allocation"] == "paper"
    with pytest.raises(
        SpecError, match=r"platform\.allocation: unknown value 'one_pass'; valid choices: fixed_point, paper"
    ):
        validate_spec({**base, "platform": {"kind": "shared_vms", "allocation": "one_pass"}})
    with pytest.raises(SpecError, match=r"platform\.allocation"):
        SharedVms(2, 2, allocation="greedy")


@pytest.mark.parametrize(
    "name", ["delgado_vms.yaml", "paper001_ctc.yaml", "paper001_table1.yaml", "paper001_table2.yaml"]
)
def test_the_reproduction_configs_use_the_paper_allocation(name):
    config = yaml.safe_load((ROOT / "configs" / name).read_text())
    spec = config.get("base", config)
    assert spec["platform"]["allocation"] == "paper"


@pytest.mark.benchmark
@pytest.mark.parametrize("shares", ["homogeneous", "heterogeneous"])
def test_speed_ctc_10000_jobs_one_pass(shares):
    import time

    from conftest import trace_path
    from tiersweep.core.simulate import simulate

    spec = {
        "workload": {"trace": str(trace_path("CTC-SP2-1996-3.1-cln.swf.gz")), "jobs": 10000},
        "platform": {"kind": "shared_vms", "machines": 64, "vms": 4, "shares": shares, "allocation": "paper"},
        "policy": {"name": "vm_backfill", "selector": "pc-sg"},
    }
    started = time.process_time()
    simulate(spec)
    assert time.process_time() - started <= 10.0
