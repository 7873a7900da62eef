"""Paper 004's own modes: the per-server bandwidth check, size-dependent demands, SDF by
exact duration, and the paper-004 configs that ask for them.

* ``platform.bandwidth_check: per_server`` (paper 004, equation 6 and Algorithm 1): each
  server's VMs against its own path, hand-computed on k = 4 trees where it accepts what the
  hose bound refuses, and where (most of a job below one link) it refuses what ``hose``
  accepts;
* ``workload.bandwidth: {formula: paper}``: MaxB = R S / N as printed (capped at R), the
  min/max typo corrected; with ``whole_vms: true`` every job of 1..432 VMs fits the empty
  paper tree under ``per_server``, for every embedder; as printed, some do not (55 VMs above
  500 Mbps);
* determinism of a per-server run, and both checks seeing the same workload;
* ``sdf`` and ``bgmbfsdf`` with ``duration: exact | estimate`` on a hand-computed schedule;
* the paper-004 configs: every cell per_server, SDF orders by the exact runtime.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from tiersweep.contract.audit import counting_policy
from tiersweep.core.engine import Engine
from tiersweep.core.jobs import FINISHED, REJECTED, Job
from tiersweep.core.metrics import job_records, run_metrics
from tiersweep.core.platforms.embedders import EMBEDDERS
from tiersweep.core.platforms.fat_tree import (
    FatTree,
    FatTreeState,
    Placement,
    Request,
    could_ever_fit,
    hose_loads,
    per_server_loads,
    quantize,
)
from tiersweep.core.simulate import simulate
from tiersweep.core.spec import validate_spec
from tiersweep.core.workloads.bandwidth import annotate_bandwidth, check_bandwidth, demand_bounds
from tiersweep.sweep.config import expand, load_sweep_config
from tiersweep.sweep.specfile import load_spec_file

ROOT = Path(__file__).resolve().parents[1]
EMBEDDER_NAMES = sorted(EMBEDDERS)


def job(index: int, size: int, bandwidth: float, *, submit: float = 0.0, runtime: float = 100.0, estimate=None) -> Job:
    j = Job(index, index + 1, submit, size, runtime, estimate=runtime if estimate is None else estimate)
    j.bandwidth = bandwidth
    return j


# -- per_server against hose, by hand ----------------------------------------------------------


def test_per_server_places_a_spread_job_the_hose_bound_refuses():
    # k = 4: 16 servers of 2 slots; server s under edge s // 2, in pod s // 4; 100 Mbps links.
    # Job: 5 VMs of 100 Mbps.
    # hose: a server can hold at most 1 of them (2 VMs: min(2, 3) x 100 = 200 > 100; 4 or more
    # do not fit 2 slots), so 5 servers; a pod has only 4, so the root is a core and some pod
    # holds 2 of the 5: its aggregation-core link carries min(2, 3) x 100 = 200 > 100. No
    # placement exists.
    # per_server (eq. 6): each server's own amount, min(1, 4) x 100 = 100, against each link
    # of its path: 100 <= 100 everywhere. Servers 0-4 under core 0: 100 Mbps reserved on each
    # of the 5 server links, on edges 0, 1, 2 -> aggregation 0 (the largest per-server amount
    # below each: 100), and on the links of pods 0 and 1 to core 0.
    hose = FatTree(k=4, slots=2, link_mbps=100)
    per_server = FatTree(k=4, slots=2, link_mbps=100, bandwidth_check="per_server")
    assert not could_ever_fit(hose.topo, 5, 100.0) and could_ever_fit(per_server.topo, 5, 100.0)
    expected = Placement([(0, 1), (1, 1), (2, 1), (3, 1), (4, 1)], 3, 0)
    for name in EMBEDDER_NAMES:
        assert EMBEDDERS[name](hose.state, Request(5, 100.0, 100.0)) is None, name
        placement = EMBEDDERS[name](per_server.state, Request(5, 100.0, 100.0))
        assert placement is not None and sorted(set(placement)) == sorted(placement), name  # one VM per server
        assert per_server.check_start(job(0, 5, 100.0), 0, placement) is None, name
    topo = per_server.topo
    loads = dict(per_server_loads(topo, expected.counts, 5, 100.0, 3, 0))
    assert loads == {
        0: 100.0, 1: 100.0, 2: 100.0, 3: 100.0, 4: 100.0,
        topo.edge_link(0, 0): 100.0, topo.edge_link(1, 0): 100.0, topo.edge_link(2, 0): 100.0,
        topo.agg_link(0, 0): 100.0, topo.agg_link(2, 0): 100.0,
    }  # fmt: skip
    # The same placement under hose: edge 0 holds 2 of the 5 VMs.
    assert dict(hose_loads(topo, expected.counts, 5, 100.0, 3, 0))[topo.edge_link(0, 0)] == 200.0
    assert hose.check_start(job(0, 5, 100.0), 0, expected) == (
        "link edge 0 - aggregation 0 would need 200 Mbps with 100 Mbps left"
    )
    # Through the engine, reject mode: accepted under per_server, turned away under hose.
    for check, state in (("per_server", FINISHED), ("hose", REJECTED)):
        jobs = [job(0, 5, 100.0)]
        Engine(jobs, FatTree(k=4, slots=2, link_mbps=100, bandwidth_check=check), counting_policy("bw_reject")).run()
        assert jobs[0].state == state, check


def test_per_server_refuses_what_hose_accepts_when_most_of_a_job_is_below_one_link():
    # k = 4, 4 slots per server, 100 Mbps links; pod 0 is servers 0-3 (edge 0: 0, 1; edge 1:
    # 2, 3). J1: 2 VMs of 50 Mbps on servers 0 and 2 below aggregation switch 0: 50 Mbps on
    # server links 0 and 2 and on edges 0 and 1 -> aggregation 0, under both checks (one VM
    # per server: min(1, 1) x 50 everywhere).
    # J2: 7 VMs of 25 Mbps, 2 on server 0, 3 on server 1, 2 on server 3, also below
    # aggregation 0. Server links: min(2, 5) x 25 = 50 <= 50 left (server 0), min(3, 4) x 25 =
    # 75 <= 100, 50 <= 100. Edge 0 -> aggregation 0 has 50 left:
    #   hose: 5 of the 7 VMs below it: min(5, 2) x 25 = 50 <= 50: accepted;
    #   per_server: server 1's own amount, 75, must fit every link of its path: 75 > 50.
    # (The embedders find other placements for J2 under per_server: this is about the check.)
    j1 = Placement([(0, 1), (2, 1)], 2, 0)
    j2 = Placement([(0, 2), (1, 3), (3, 2)], 2, 0)
    verdicts = {}
    for check in ("hose", "per_server"):
        tree = FatTree(k=4, slots=4, link_mbps=100, bandwidth_check=check)
        tree.start(job(0, 2, 50.0), 0, j1)
        assert tree.state.residual[tree.topo.edge_link(0, 0)] == 50.0
        verdicts[check] = tree.check_start(job(1, 7, 25.0), 0, j2)
    assert verdicts == {"hose": None, "per_server": "link edge 0 - aggregation 0 would need 75 Mbps with 50 Mbps left"}


# -- size-dependent demands and the empty machine ------------------------------------------------


def test_the_paper_formula_depends_on_size_as_printed():
    sizes = np.array([1, 8, 54, 55, 100, 108, 162, 216, 432])
    low, avg, high = demand_bounds(sizes, check_bandwidth({"formula": "paper"}))
    # MaxB = 1000 x 54 / N capped at 1000; MinB = MaxB / 10; AvgB = (MinB + MaxB) / 2.
    printed = np.minimum(1000 * 54 / sizes, 1000)
    assert np.array_equal(high, printed) and np.allclose(low, printed / 10) and np.allclose(avg, 0.55 * printed)
    # whole_vms: MaxB = 1000 / ceil(N / 54), on the 1/1024 Mbps grid (at most the exact bound).
    _, _, whole = demand_bounds(sizes, check_bandwidth({"formula": "paper", "whole_vms": True}))
    exact = 1000 / np.ceil(sizes / 54)
    assert (
        np.all(whole <= exact) and np.all(exact - whole < 1 / 1024) and np.all(whole * 1024 == np.floor(whole * 1024))
    )
    assert list(whole[:3]) == [1000.0] * 3 and whole[3] == 500.0 and whole[5] == 500.0 and whole[-1] == 125.0
    # The clamp with min and max the right way round (as printed it would always be MaxB):
    # demands spread around AvgB = 0.55 MaxB, within [MinB, MaxB].
    jobs = [job(i, 20 + i % 30, 0.0) for i in range(5000)]
    annotate_bandwidth(jobs, seed=2, model={"formula": "paper"})
    demand = np.array([j.bandwidth for j in jobs])
    assert (
        demand.min() >= 100 and demand.max() <= 1000 and abs(demand.mean() - 550) < 3 and (demand < 1000).mean() > 0.99
    )


def test_every_job_fits_the_empty_paper_tree_under_per_server_with_whole_vm_demands():
    # Every size 1..432 (the paper tree's slots), twice with drawn demands and once at the
    # largest demand the formula allows (the worst case): placed alone on the empty tree by
    # every embedder. Under per_server all five are complete on an idle tree (a server's path
    # is as wide as its own link); under hose first fit is not (it fills servers by id, each
    # up to what its own link allows, without regard to the uplinks).
    tree = FatTree(k=6, slots=8, bandwidth_check="per_server")
    empty = FatTreeState(tree.topo)
    model = {"formula": "paper", "whole_vms": True}
    sizes = np.arange(1, 433)
    _, _, worst = demand_bounds(sizes, check_bandwidth(model))
    drawn = []
    for seed in (1, 2):
        jobs = [job(i, int(n), 0.0) for i, n in enumerate(sizes)]
        annotate_bandwidth(jobs, seed=seed, model=model)
        drawn.append([j.bandwidth for j in jobs])
    for size, *demands in zip(sizes.tolist(), worst.tolist(), *drawn):
        for bandwidth in demands:
            assert quantize(bandwidth) == bandwidth
            assert could_ever_fit(tree.topo, size, bandwidth), (size, bandwidth)
            for name in EMBEDDER_NAMES:
                placement = EMBEDDERS[name](empty, Request(size, bandwidth, bandwidth))
                assert placement is not None and len(placement) == size, (name, size, bandwidth)
    # As printed (R S / N, whole VMs ignored) a job of 55 VMs may draw up to 981.8 Mbps; above
    # 500 some server holds 2 of its VMs: 2 x 501 > 1000 on that server's link. No placement.
    _, _, printed = demand_bounds(np.array([55]), check_bandwidth({"formula": "paper"}))
    assert printed[0] > 981
    assert could_ever_fit(tree.topo, 55, 500.0) and not could_ever_fit(tree.topo, 55, quantize(500.001))
    assert all(EMBEDDERS[name](empty, Request(55, 600.0, 600.0)) is None for name in EMBEDDER_NAMES)


# -- determinism ---------------------------------------------------------------------------


def _same(a, b) -> bool:
    return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))


def test_per_server_runs_are_deterministic_and_share_the_workload_with_hose(kth_path):
    spec = {
        "seed": 7,
        "workload": {
            "trace": str(kth_path),
            "jobs": 300,
            "load": 0.9,
            "bandwidth": {"formula": "paper", "whole_vms": True},
        },
        "platform": {"kind": "fat_tree", "bandwidth_check": "per_server"},
        "policy": {"name": "bgmbfsdf", "duration": "exact"},
    }
    first, again = simulate(spec), simulate(spec)
    for column in ("start_time", "finish_time", "bandwidth", "servers", "migrations"):
        assert np.array_equal(first.jobs[column], again.jobs[column], equal_nan=True), column
    assert first.metrics.keys() == again.metrics.keys()
    assert all(_same(first.metrics[key], again.metrics[key]) for key in first.metrics)
    assert first.metrics["accept_rate"] == 1.0  # whole-VM demands: every job can be placed
    hose = simulate({**spec, "platform": {"kind": "fat_tree", "bandwidth_check": "hose"}})
    assert np.array_equal(first.jobs["bandwidth"], hose.jobs["bandwidth"])  # common random numbers
    assert hose.metrics["accept_rate"] < 1.0


# -- SDF and BgMBFSDF: exact duration or estimate -------------------------------------------------


def test_sdf_orders_by_exact_runtime_or_by_estimate():
    # k = 2: two servers of 4 slots, 100 Mbps, no demands. A (8 VMs, 10 s) holds both servers
    # from 0. At 1 X (8 VMs, runtime 100, estimate 50) and Y (8 VMs, runtime 60, estimate 200)
    # queue. When A ends at 10:
    #   exact: Y (60 s) first, 10-70, then X 70-170: waits Y 9, X 69; mean over 3 jobs 26;
    #   estimate: X (estimate 50) first, 10-110, then Y 110-170: waits X 9, Y 109; mean 39.33.
    rows = [(0, 8, 10, 10), (1, 8, 100, 50), (1, 8, 60, 200)]
    results = {}
    for duration in ("exact", "estimate"):
        jobs = [job(i, size, 0.0, submit=s, runtime=r, estimate=e) for i, (s, size, r, e) in enumerate(rows)]
        policy = counting_policy("sdf", embedder="adaba", duration=duration)
        Engine(jobs, FatTree(k=2, slots=4, link_mbps=100), policy).run()
        results[duration] = ([j.start_time for j in jobs], run_metrics(job_records(jobs), 8)["mean_wait"])
    assert results["exact"] == ([0, 70, 10], 26.0)
    assert results["estimate"][0] == [0, 10, 110] and results["estimate"][1] == pytest.approx(118 / 3)


def test_bgmbfsdf_backfills_by_exact_runtime_or_by_estimate():
    # k = 2: two servers of 4 slots. A (4 VMs, 100 s) runs from 0 on one server. At 1: B (8
    # VMs, 100 s) is the head, blocked by A; C (4 VMs, runtime 500, estimate 40) and D (4 VMs,
    # runtime 50, estimate 400) are backfill candidates for the free server.
    #   exact: D (50) at 1, done at 51; C backfilled at 51. At 100 A ends; B preempts C (49 s
    #   done) and runs 100-200; C restarts at 200, pays 20 s, ends 220 + 451 = 671.
    #   estimate: C (estimate 40) at 1; D waits. At 100 B preempts C (99 s done), runs
    #   100-200; then C (the head again) and D start at 200: D ends 250, C 220 + 401 = 621.
    rows = [(0, 4, 100, 100), (1, 8, 100, 100), (1, 4, 500, 40), (1, 4, 50, 400)]
    seen = {}
    for duration in ("exact", "estimate"):
        jobs = [job(i, size, 0.0, submit=s, runtime=r, estimate=e) for i, (s, size, r, e) in enumerate(rows)]
        policy = counting_policy("bgmbfsdf", embedder="adaba", duration=duration)
        Engine(jobs, FatTree(k=2, slots=4, link_mbps=100), policy, migration_cost=20.0).run()
        assert all(j.state == FINISHED for j in jobs)
        seen[duration] = ([j.start_time for j in jobs], [j.finish_time for j in jobs], [j.migrations for j in jobs])
    assert seen["exact"] == ([0, 100, 51, 1], [100, 200, 671, 51], [0, 0, 1, 0])
    assert seen["estimate"] == ([0, 100, 1, 200], [100, 200, 621, 250], [0, 0, 1, 0])


# -- the paper-004 configs -------------------------------------------------------------------------


PAPER004_SWEEPS = ["li2018_accept.yaml", "li2018_sched.yaml", "paper004_fig5_accept_traces.yaml"]
PAPER004_RUNS = ["paper004_bgmbf_kth.yaml", "paper004_reject_mode.yaml"]


def test_the_paper004_configs_check_per_server_and_order_by_exact_duration(monkeypatch, kth_path):
    monkeypatch.chdir(ROOT)  # the configs name the traces relative to the project root
    names = [p.name for p in (ROOT / "configs").glob("paper004_*.yaml")] + ["li2018_accept.yaml", "li2018_sched.yaml"]
    assert sorted(names) == sorted(PAPER004_SWEEPS + PAPER004_RUNS)
    cells = {
        name: [cell.spec for cell in expand(load_sweep_config(ROOT / "configs" / name))] for name in PAPER004_SWEEPS
    }
    assert {name: len(specs) for name, specs in cells.items()} == {
        "li2018_accept.yaml": 200, "li2018_sched.yaml": 500, "paper004_fig5_accept_traces.yaml": 500
    }  # fmt: skip
    specs = [spec for specs in cells.values() for spec in specs]
    specs += [validate_spec(load_spec_file(ROOT / "configs" / name)) for name in PAPER004_RUNS]
    assert all(spec["platform"]["bandwidth_check"] == "per_server" for spec in specs)
    ordered = [spec for spec in specs if spec["policy"]["name"] in ("sdf", "bgmbfsdf")]
    assert len(ordered) == 200 and all(spec["policy"]["duration"] == "exact" for spec in ordered)
