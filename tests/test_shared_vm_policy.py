"""FCFS + EASY backfilling on shared VMs (paper 001, section III) and its resource selectors.

* Each selector's choice on small hand-built states, including the paper's figure 6 (the
  semi-greedy selector takes D2 and E1 instead of A1 and B1);
* backfill candidates judged at the EC of the VMs chosen for them; the head's reservation
  from EC-based ends, which is never broken when estimates bound the runtimes;
* the contract on shared VMs (random workloads, every selector): each job starts and ends
  once, no VM holds two tasks, the allocation invariants after every pass;
* on dedicated nodes the policy is EASY; runs through ``tiersweep run``; determinism across
  interpreters.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import make_jobs
from test_shared_vms import assert_fair
from tiersweep.cli import main
from tiersweep.core.engine import Engine
from tiersweep.core.errors import SpecError
from tiersweep.core.jobs import Job
from tiersweep.core.metrics import job_records
from tiersweep.core.platforms import Nodes, SharedVms
from tiersweep.core.policies import make_policy
from tiersweep.core.policies.vm_backfill import SELECTORS, VmBackfill, select_vms
from tiersweep.core.simulate import simulate
from tiersweep.core.spec import policy_runs_on, validate_spec

# -- a platform with given PCs: the paper's figure 6 ------------------------------------------


class RankedVms:
    """Just what the selectors read, with fixed PC, EC and share per idle VM (the figure's
    ranking; a placed task of the same job does not change the others' PCs here)."""

    def __init__(self, machines: int, vms: int, pc: dict[int, float], ec: float = 0.25) -> None:
        self.machines, self.vms = machines, vms
        self._pc = pc
        self.ec = [ec] * (machines * vms)
        self.share = [1.0] * (machines * vms)

    def idle_vms(self):
        return set(self._pc)

    def free_count(self, tier: int = 0) -> int:
        return len(self._pc)

    def idle_potential_capacities(self):
        return dict(self._pc)

    def potential_capacities(self):
        return lambda vm, placed=(): self._pc[vm]

    def free_capacity(self, machine: int) -> float:
        return 1.0

    def active_count(self, machine: int) -> int:
        return self.vms - sum(1 for v in self._pc if v // self.vms == machine)


def vm(name: str) -> int:
    """``A1`` = the first VM of machine A, on 7 machines (A..G) of 4 VMs."""
    return (ord(name[0]) - ord("A")) * 4 + int(name[1]) - 1


def test_figure_6_semi_greedy_leaves_the_large_capacities():
    # 9 available VMs on machines A..G ranked by PC: A1, B1 above four equal ones (C1, C3,
    # D2, E1) and three below. A 4-task job runs at the rate of its slowest task either way;
    # greedy takes A1, B1, C1, C3; semi-greedy takes the four equal ones, leaving A1 and B1.
    pcs = {"A1": 1.0, "B1": 0.8, "C1": 0.5, "C3": 0.5, "D2": 0.5, "E1": 0.5, "F1": 0.3, "G1": 0.25, "G2": 0.25}
    platform = RankedVms(7, 4, {vm(k): v for k, v in pcs.items()})
    greedy = sorted(select_vms(platform, "pc-g", 4))
    semi = sorted(select_vms(platform, "pc-sg", 4))
    assert greedy == sorted(vm(k) for k in ("A1", "B1", "C1", "C3"))
    assert semi == sorted(vm(k) for k in ("C1", "C3", "D2", "E1"))
    assert set(semi) - set(greedy) == {vm("D2"), vm("E1")}
    assert set(greedy) - set(semi) == {vm("A1"), vm("B1")}
    # The slowest chosen VM is as good in both: the job's rate is the same.
    assert min(pcs[k] for k in ("C1", "C3", "D2", "E1")) == min(pcs[k] for k in ("A1", "B1", "C1", "C3"))
    # PCFC-sg is PC-sg for parallel jobs.
    assert sorted(select_vms(platform, "pcfc-sg", 4)) == semi


# -- every selector on real hand-built states -----------------------------------------------


def job(index: int, size: int, runtime: float = 100.0) -> Job:
    return Job(index, index + 1, 0.0, size, runtime)


def test_on_an_empty_homogeneous_cluster_ec_packs_and_the_others_spread():
    platform = SharedVms(4, 4)
    assert select_vms(platform, "ec", 4) == [0, 1, 2, 3]  # "sequentially": one machine
    for name in ("pc-g", "pc-sg", "pcfc-sg", "pmvm"):
        chosen = select_vms(platform, name, 4)
        assert sorted(v // 4 for v in chosen) == [0, 1, 2, 3], name  # one task per machine


def test_semi_greedy_packs_a_large_job_where_it_runs_as_fast_anyway():
    # 6 tasks on 4 empty machines: greedy spreads 4 then doubles 2 machines (rate 1/2); the
    # semi-greedy threshold is 1/2, so it pairs tasks on 3 machines and leaves one machine free.
    platform = SharedVms(4, 4)
    greedy = select_vms(platform, "pc-g", 6)
    semi = select_vms(platform, "pc-sg", 6)
    assert len({v // 4 for v in greedy}) == 4
    assert len({v // 4 for v in semi}) == 3


def test_serial_choices_on_an_empty_heterogeneous_machine():
    platform = SharedVms(2, 4, shares="heterogeneous")  # EC 1/8, 1/8, 1/4, 1/2
    assert select_vms(platform, "pc-g", 1) == [3]  # every PC is 1: the higher EC
    assert select_vms(platform, "ec", 1) == [3]
    assert select_vms(platform, "pmvm", 1) == [3]  # no active VM anywhere: the larger share
    assert select_vms(platform, "pc-sg", 1) == [0]  # the smallest of the best: lower EC
    # PMVM counts active VMs: with machine 0 busy it goes to machine 1.
    platform.start(job(0, 1), 0, [3])
    assert select_vms(platform, "pmvm", 1) == [7]


def test_pcfc_sends_a_serial_job_where_it_takes_nothing_from_a_neighbour():
    # Two VMs per machine, shares 1 and 4. Machine 0: A alone on VM 0 uses all of it, so the
    # idle VM 1 would squeeze A to 1/5 (PC 0.8 > FC 0). Machine 1: K on VM 3 is held to 0.2 by
    # its other task on machine 2 (against L), so the idle VM 2 gets 0.8 = FC.
    platform = SharedVms(3, 2, shares=[1, 4])
    platform.start(job(0, 1), 0, [0])  # A
    platform.start(job(1, 2), 0, [3, 4])  # K: VM 3 (machine 1), VM 4 (machine 2, share 1)
    platform.start(job(2, 1), 0, [5])  # L: VM 5 (machine 2, share 4)
    assert platform.job_rate(1) == pytest.approx(0.2)
    assert platform.potential_capacity(1) == pytest.approx(0.8) and platform.free_capacity(0) == pytest.approx(0.0)
    assert platform.potential_capacity(2) == pytest.approx(0.8) and platform.free_capacity(1) == pytest.approx(0.8)
    assert select_vms(platform, "pc-g", 1) == [1]  # equal PC: the higher EC
    assert select_vms(platform, "pcfc-sg", 1) == [2]  # PC within FC


def test_selectors_registry_and_errors():
    assert set(SELECTORS) == {"pc-g", "pc-sg", "pcfc-sg", "ec", "pmvm"}
    with pytest.raises(SpecError, match="policy.selector: unknown value 'best'; valid choices"):
        make_policy("vm_backfill", selector="best")
    with pytest.raises(SpecError, match="policy.selector"):
        validate_spec(
            {
                "workload": {"model": "lublin03"},
                "platform": {"kind": "shared_vms"},
                "policy": {"name": "vm_backfill", "selector": "x"},
            }
        )
    assert policy_runs_on("vm_backfill", "shared_vms") and policy_runs_on("vm_backfill", "nodes")
    assert not policy_runs_on("vm_backfill", "fat_tree")


# -- backfilling with EC-based estimates --------------------------------------------------------


def run(rows, platform, selector="ec", **rules):
    jobs = make_jobs(rows, platform.machines * platform.vms, **rules)
    Engine(jobs, platform, make_policy("vm_backfill", selector=selector)).run()
    return jobs


def test_backfill_candidates_are_judged_at_the_ec_of_their_vms():
    # 2 machines x 2 homogeneous VMs (EC 1/2). A (3 tasks, 100 s) runs at 1/2 (two tasks on
    # machine 0): EC-based end 200 = its real end. B (4 tasks) is the head: shadow 200, no
    # extra VM. D (1 task, 150 s, EC estimate 300) would end at 302 > 200: it waits. C (1
    # task, 50 s, EC estimate 100) ends by 103 <= 200: it is backfilled at 3.
    rows = [(0, 100, 3, 100), (1, 10, 4, 10), (2, 150, 1, 150), (3, 50, 1, 50)]
    a, b, d, c = run(rows, SharedVms(2, 2), estimate="exact")
    assert (a.start_time, a.finish_time) == (0, 200)
    assert c.start_time == 3 and c.finish_time == pytest.approx(103)
    assert b.start_time == 200 and b.finish_time == pytest.approx(220)  # 4 tasks on 2 machines: 1/2
    assert d.start_time == pytest.approx(220)


def test_plain_runtime_estimates_would_backfill_more():
    # The same jobs on dedicated nodes (EC 1): D's 150 s fit before A's end at 100? No: 152 >
    # 100. C: 53 <= 100, backfilled. The EC factor is what doubles every estimate above.
    rows = [(0, 100, 3, 100), (1, 10, 4, 10), (2, 150, 1, 150), (3, 50, 1, 50)]
    jobs = make_jobs(rows, 4, estimate="exact")
    Engine(jobs, Nodes(4), make_policy("vm_backfill")).run()
    assert [j.start_time for j in jobs] == [0, 100, 110, 3]


class ShadowRecordingVmBackfill(VmBackfill):
    """Records, for each job, the EC-based shadow of the first pass it was the blocked head,
    computed independently from the running jobs' start times, estimates and VMs."""

    def setup(self, sim):
        super().setup(sim)
        self.sim = sim
        self.first_shadow: dict[int, float] = {}

    def _backfill(self, now, free, waiting, first):
        head = waiting[first]
        if head.index not in self.first_shadow:
            platform = self.sim.platform
            ends = sorted(
                (max(now, j.last_start_time + j.estimate / min(platform.ec[v] for v in j.nodes)), j.size)
                for j in self.sim.running.values()
            )
            shadow, available = math.inf, platform.free_count()
            for end, size in ends:
                available += size
                if available >= head.size:
                    shadow = end
                    break
            self.first_shadow[head.index] = shadow
        yield from super()._backfill(now, free, waiting, first)


WORKLOAD = st.lists(
    st.tuples(st.sampled_from([0, 0, 1, 5, 50, 200]), st.integers(1, 400), st.integers(1, 8), st.integers(0, 300)),
    min_size=1,
    max_size=18,
)


def rows_from(draw_rows):
    submit, rows = 0, []
    for gap, runtime, size, slack in draw_rows:
        submit += gap
        rows.append((submit, runtime, size, runtime + slack))  # requested >= runtime
    return rows


@st.composite
def shared_platforms(draw):
    machines = draw(st.integers(1, 3))
    vms = draw(st.integers(1, 4))
    shares = draw(st.sampled_from(["homogeneous", "list"]))
    if shares == "list":
        shares = draw(st.lists(st.sampled_from([1.0, 2.0, 4.0]), min_size=vms, max_size=vms))
    caps = draw(st.sampled_from([1.0, 0.5, [1.0] * (vms - 1) + [0.5]]))
    return dict(machines=machines, vms=vms, shares=shares, max=caps, strict_allocation=True)


@settings(
    max_examples=120, deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(shared_platforms(), WORKLOAD, st.sampled_from(sorted(SELECTORS)))
def test_the_head_never_starts_after_its_first_shadow_when_estimates_bound_runtimes(params, draw_rows, selector):
    # Every job runs at least at the EC of its slowest VM, so with requested times that bound
    # the runtimes every EC-based end is an upper bound: EASY's guarantee holds.
    platform = SharedVms(**params)
    n = platform.machines * platform.vms
    rows = [(s, r, min(size, n), req) for s, r, size, req in rows_from(draw_rows)]
    jobs = make_jobs(rows, n, estimate="requested", overrun="kill")
    policy = ShadowRecordingVmBackfill(selector=selector)
    Engine(jobs, platform, policy).run()
    late = [
        (jobs[i].job_id, s, jobs[i].start_time) for i, s in policy.first_shadow.items() if jobs[i].start_time > s + 1e-6
    ]
    assert not late


# -- the contract on shared VMs ----------------------------------------------------------------


def audit(sim):
    owner = {}
    for j in sim.running.values():
        assert len(j.nodes) == j.size
        for v in j.nodes:
            assert v not in owner, f"VM {v} holds two tasks"
            owner[v] = j.index
        assert 0 < j.rate <= 1
    assert_fair(sim.platform)


@settings(
    max_examples=120, deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(shared_platforms(), WORKLOAD, st.sampled_from(sorted(SELECTORS)), st.sampled_from(["requested", "exact"]))
def test_contract_on_shared_vms(params, draw_rows, selector, estimate):
    platform = SharedVms(**params)
    n = platform.machines * platform.vms
    rows = [(s, r, min(size, n), req) for s, r, size, req in rows_from(draw_rows)]
    jobs = make_jobs(rows, n, estimate=estimate)
    Engine(jobs, platform, make_policy("vm_backfill", selector=selector), observer=audit).run()
    records = job_records(jobs)
    assert np.isfinite(records["finish_time"]).all()
    assert (records["start_time"] >= records["submit_time"]).all()
    # No task runs faster than on a dedicated machine.
    assert (records["finish_time"] - records["start_time"] >= records["runtime"] * (1 - 1e-9)).all()
    assert platform.free_count() == n and platform.utilization() == 0.0


# -- dedicated nodes, the CLI, determinism ------------------------------------------------------


@pytest.mark.parametrize("estimate", ["requested", "exact"])
def test_on_dedicated_nodes_the_policy_is_easy(kth_path, estimate):
    specs = [
        {"workload": {"trace": str(kth_path), "jobs": 2000, "estimate": estimate}, "policy": {"name": name}}
        for name in ("easy", "vm_backfill")
    ]
    easy, vm = (simulate(s).jobs for s in specs)
    for column in ("start_time", "finish_time"):
        assert np.array_equal(easy[column], vm[column])


def test_one_vm_per_machine_vm_backfill_is_easy(kth_path):
    base = {"workload": {"trace": str(kth_path), "jobs": 1500}}
    easy = simulate({**base, "platform": {"kind": "nodes", "nodes": 100}, "policy": {"name": "easy"}}).jobs
    for selector in sorted(SELECTORS):
        vm = simulate(
            {
                **base,
                "platform": {"kind": "shared_vms", "machines": 100, "vms": 1},
                "policy": {"name": "vm_backfill", "selector": selector},
            }
        ).jobs
        assert np.array_equal(easy["start_time"], vm["start_time"]), selector
        assert np.array_equal(easy["finish_time"], vm["finish_time"]), selector


def test_tiersweep_run_with_the_paper_configs(capsys):
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    for name in ("paper001_table1.yaml", "paper001_table2.yaml", "paper001_ctc.yaml"):
        assert (
            main(
                [
                    "run",
                    str(root / "configs" / name),
                    "--json",
                    "--set",
                    "workload.jobs=300",
                    "--set",
                    "policy.selector=pcfc-sg",
                ]
            )
            == 0
        )
        out = json.loads(capsys.readouterr().out)
        for key in (
            "utilization",
            "efficiency",
            "median_xf",
            "median_xf_c",
            "p90_xf",
            "makespan",
            "util_at_occ_100",
            "allocation_fallbacks",
        ):
            assert key in out["metrics"] if "metrics" in out else key in out, (name, key)


def test_runs_are_identical_in_a_fresh_interpreter(tmp_path):
    from conftest import trace_path
    from test_determinism import CHILD_SIMULATE, assert_records_identical, run_child

    ctc = trace_path("CTC-SP2-1996-3.1-cln.swf.gz")
    specs = {
        f"{shares}-{selector}": {
            "workload": {"trace": str(ctc), "jobs": 800},
            "platform": {"kind": "shared_vms", "machines": 16, "vms": 4, "shares": shares},
            "policy": {"name": "vm_backfill", "selector": selector},
        }
        for shares in ("homogeneous", "heterogeneous")
        for selector in ("pc-sg", "pcfc-sg")
    }
    out = tmp_path / "child.npz"
    run_child(CHILD_SIMULATE, json.dumps(specs), str(out))
    with np.load(out) as child:
        theirs = {key: child[key] for key in child.files}
    for label, spec in specs.items():
        mine = simulate(spec).jobs
        child_records = {k.split("/", 1)[1]: v for k, v in theirs.items() if k.startswith(f"{label}/")}
        assert_records_identical(mine, child_records, label)


@pytest.mark.benchmark
@pytest.mark.parametrize("shares", ["homogeneous", "heterogeneous"])
@pytest.mark.parametrize("selector", sorted(SELECTORS))
def test_speed_ctc_10000_jobs_on_64_machines_by_4_vms(selector, shares):
    import time

    from conftest import trace_path

    spec = {
        "workload": {"trace": str(trace_path("CTC-SP2-1996-3.1-cln.swf.gz")), "jobs": 10000},
        "platform": {"kind": "shared_vms", "machines": 64, "vms": 4, "shares": shares},
        "policy": {"name": "vm_backfill", "selector": selector},
    }
    started = time.process_time()
    simulate(spec)
    assert time.process_time() - started <= 10.0
