"""The ``fat_tree`` platform of paper 004 (Li et al., "Bandwidth-Guaranteed Resource Allocation
and Scheduling for Parallel Jobs in Cloud Data Center", Symmetry 2018): topology, hose-model
bandwidth on hand-computed placements, placement checking, the embedders on the paper's
figure 3 case, the bandwidth demand models, the spec and the CLI.

Figure 3 (reconstructed)
========================

The figure is lost in the text copy; the text says: a TVC request j_i = (3 VMs, 10 Mbps,
100 s, 120 s) arrives while two jobs ("red" and "green") run; "as the requested bandwidth
demand is relatively small, AdaBa firstly tries to arrange the VMs ... to the servers with the
least idle slots, and three idle servers are left"; best fit gives the same; greedy "obtains the
minimum value of maximum link occupation but only one idle server is reserved"; first fit
"arranges the VMs to the servers in sequence and two idle servers are reserved". Then three
identical requests (2 VMs, 60 Mbps, 110 s, 150 s) arrive at 110 and "only AdaBa and best fit can
accept the whole request immediately".

The smallest fat-tree, k = 4 (16 servers; pod p holds servers 4p..4p+3, edge switch e servers
2e and 2e+1), with 2 slots per server and 100 Mbps links, in this state:

========  ======================================  ==========================================
job       placement (server: VMs), root           why
========  ======================================  ==========================================
red       s1 s2 s3 s9 s10 s11 s13 s14 s15: 2 each  fills every server but the three idle ones
          (18 VMs, 15 Mbps), core 0                (s0, s8, s12) and pod 1; its pods' links to
                                                   core 0 carry 6 x 15 = 90 of 100 Mbps
green     s4 s5 s6: 1 each, s7: 2 (5 VMs,          leaves one free slot on s4, s5 and s6 whose
          50 Mbps), aggregation switch 2           links keep 50 Mbps: enough for j_i's
          (pod 1, position 0)                      10 Mbps, not for a 60 Mbps VM
========  ======================================  ==========================================

Every edge switch then has at most 2 free slots, so no embedder fits j_i below one edge
switch; pod 1 is the only pod with 3 free slots (s4, s5, s6). B_max = 50 (green's demand), so
AdaBa's weights for 10 Mbps prefer servers with one free slot. The outcomes the text states
follow: AdaBa and best fit take s4, s5, s6 (below aggregation switch 3: green holds position
0's edge links) and keep s0, s8, s12 idle; first fit takes s0 (2) and s4 (1) and keeps s8,
s12; greedy takes s0 (2) and s8 (1) through core 2 (its busiest link ends at 10 Mbps of 100,
against 60 on s4's link in pod 1) and keeps only s12. Each 60 Mbps request then needs a whole
idle server (a split over two servers puts 60 Mbps on a server link, and the links with free
slots left have 50): three idle servers accept all three at once, two accept two, one accepts
one.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tiersweep.core.decisions import Reject, Start
from tiersweep.core.engine import Engine
from tiersweep.core.errors import SpecError
from tiersweep.core.jobs import Job
from tiersweep.core.platforms.embedders import EMBEDDERS, adaba, bestfit, fill, firstfit, greedy, oktopus
from tiersweep.core.platforms.fat_tree import (
    AGGREGATION,
    CORE,
    EDGE,
    FatTree,
    FatTreeState,
    Placement,
    Request,
    Topology,
    hose_loads,
    quantize,
)
from tiersweep.core.policies.embedding import BwReject
from tiersweep.core.simulate import simulate
from tiersweep.core.spec import validate_spec
from tiersweep.core.workloads.bandwidth import annotate_bandwidth, check_bandwidth

PROJECT_ROOT = Path(__file__).resolve().parents[1]


def job(index: int, size: int, bandwidth: float, *, submit: float = 0.0, runtime: float = 100.0) -> Job:
    out = Job(index, index + 1, submit, size, runtime)
    out.bandwidth = bandwidth
    return out


# -- topology ----------------------------------------------------------------------------------


def test_the_papers_fat_tree_has_54_servers_and_432_slots():
    tree = FatTree()  # k = 6, 8 slots, 1000 Mbps: paper 004, 5.1
    topo = tree.topo
    assert (topo.servers, topo.edges, topo.aggs, topo.cores, topo.pods) == (54, 18, 18, 9, 6)
    assert tree.capacity == 432 == FatTree.job_capacity({"k": 6, "slots": 8})
    # 54 server links, 18 x 3 edge-aggregation and 18 x 3 aggregation-core links.
    assert topo.links == 54 + 54 + 54
    assert tree.state.residual == [1000.0] * 162


def test_wiring_of_paths_and_subtrees():
    topo = Topology(4, 2, 100.0)
    # Server 5 hangs off edge 2 in pod 1.
    assert topo.subtree(EDGE, 2) == (4, 5)
    assert topo.subtree(AGGREGATION, 3) == (4, 5, 6, 7)  # aggregation 3 = pod 1, position 1
    assert len(topo.subtree(CORE, 0)) == 16
    # Below core 3 (position i = 1, j = 1): server link, edge 2 -> aggregation position 1 of
    # pod 1, aggregation 3 -> core 3.
    assert topo.path_links(5, CORE, 3) == [5, topo.edge_link(2, 1), topo.agg_link(3, 1)]
    assert [topo.describe_link(link) for link in topo.path_links(5, CORE, 3)] == [
        "server 5 - edge 2",
        "edge 2 - aggregation 3",
        "aggregation 3 - core 3",
    ]
    with pytest.raises(ValueError, match="even integer"):
        Topology(5, 2, 100.0)


# -- hose-model bandwidth on hand-computed placements -------------------------------------------


def test_hose_loads_below_an_edge_switch():
    topo = Topology(6, 8, 1000.0)
    # 10 VMs of 100 Mbps: 8 on server 0, 2 on server 1. Server 0's link separates 8 from 2:
    # min(8, 2) x 100 = 200; server 1's link 2 from 8: 200.
    assert hose_loads(topo, [(0, 8), (1, 2)], 10, 100.0, EDGE, 0) == [(0, 200.0), (1, 200.0)]
    # All on one server: loopback, nothing on any link.
    assert hose_loads(topo, [(7, 5)], 5, 999.0, EDGE, 2) == []


def test_hose_loads_below_an_aggregation_and_a_core_switch():
    topo = Topology(6, 8, 1000.0)
    # 12 VMs of 50 Mbps in pod 0 below aggregation switch 1 (position 1): servers 0 (4),
    # 1 (4) under edge 0 and server 3 (4) under edge 1.
    loads = dict(hose_loads(topo, [(0, 4), (1, 4), (3, 4)], 12, 50.0, AGGREGATION, 1))
    assert loads == {
        0: 4 * 50.0,  # min(4, 8)
        1: 4 * 50.0,
        3: 4 * 50.0,
        topo.edge_link(0, 1): 4 * 50.0,  # edge 0 has 8 below: min(8, 4)
        topo.edge_link(1, 1): 4 * 50.0,  # edge 1 has 4: min(4, 8)
    }
    # The same VMs plus 3 in pod 1 (server 9, edge 3) below core 5 = (i 1, j 2): 15 VMs.
    loads = dict(hose_loads(topo, [(0, 4), (1, 4), (3, 4), (9, 3)], 15, 50.0, CORE, 5))
    assert loads == {
        0: 4 * 50.0,
        1: 4 * 50.0,
        3: 4 * 50.0,
        9: 3 * 50.0,  # min(3, 12)
        topo.edge_link(0, 1): 7 * 50.0,  # 8 below: min(8, 7)
        topo.edge_link(1, 1): 4 * 50.0,
        topo.edge_link(3, 1): 3 * 50.0,
        topo.agg_link(1, 2): 3 * 50.0,  # pod 0 (aggregation 0*3+1) holds 12: min(12, 3)
        topo.agg_link(4, 2): 3 * 50.0,  # pod 1 (aggregation 1*3+1) holds 3
    }


def test_a_started_job_reserves_its_hose_loads_and_gives_them_back():
    tree = FatTree(k=6, slots=8, link_mbps=1000.0)
    j = job(0, 15, 50.0)
    placement = Placement([(0, 4), (1, 4), (3, 4), (9, 3)], CORE, 5)
    assert tree.check_start(j, 0, placement) is None
    held, rate = tree.start(j, 0, placement)
    assert rate == 1.0 and list(held) == [0] * 4 + [1] * 4 + [3] * 4 + [9] * 3
    state, topo = tree.state, tree.topo
    assert state.free[0] == 4 and state.free[9] == 5 and state.total_free == 432 - 15
    assert state.edge_free[0] == 24 - 8 and state.pod_free[0] == 72 - 12
    assert state.residual[topo.edge_link(0, 1)] == 1000 - 350
    assert state.residual[topo.agg_link(4, 2)] == 1000 - 150
    j.nodes = held
    tree.release(j)
    assert state.is_idle() and state.residual == [1000.0] * topo.links


@pytest.mark.parametrize(
    ("placement", "bandwidth", "message"),
    [
        (Placement([(0, 9), (1, 1)], EDGE, 0), 0.0, "9 VMs on server 0, which has 8 free slots"),
        (Placement([(0, 8), (1, 2)], EDGE, 0), 600.0, "link server 0 - edge 0 would need 1200 Mbps"),
        (Placement([(0, 5), (3, 5)], EDGE, 0), 0.0, "server 3 is not below edge switch 0"),
        (Placement([(0, 10)], 4, 0), 0.0, "no switch 0 at level 4"),
        (Placement([(0, 4)], EDGE, 0), 0.0, "the placement has 4 VMs for a job of size 10"),
        ((0,) * 10, 0.0, "needs a Placement"),
    ],
)
def test_check_start_names_what_is_wrong(placement, bandwidth, message):
    tree = FatTree()
    assert message in tree.check_start(job(0, 10, bandwidth), 0, placement)
    no_placement = tree.check_start(job(0, 10, 0.0), 0, None)
    assert no_placement == "the fat_tree platform needs a placement from an embedder, got none"


def test_a_link_is_never_promised_more_than_it_has_left():
    tree = FatTree(k=4, slots=4, link_mbps=100.0)
    first = job(0, 4, 30.0)
    # 2 VMs on each of servers 0 and 1: each server link carries min(2, 2) x 30 = 60.
    tree.start(first, 0, Placement([(0, 2), (1, 2)], EDGE, 0))
    second = job(1, 2, 20.0)
    # 1 VM on server 0 and 1 on server 2 (pod 0, below aggregation 0): server 0's link has
    # 40 left and needs 20: fine; with 41 Mbps it would not be.
    assert tree.check_start(second, 0, Placement([(0, 1), (2, 1)], AGGREGATION, 0)) is None
    second.bandwidth = 41.0
    assert "link server 0 - edge 0 would need 41 Mbps with 40 Mbps left" in tree.check_start(
        second, 0, Placement([(0, 1), (2, 1)], AGGREGATION, 0)
    )


def test_demands_are_kept_in_exact_binary_steps():
    assert quantize(10.0) == 10.0 and quantize(0.1) == 103 / 1024
    tree = FatTree()
    state = tree.state
    jobs = [job(i, 3, 0.1 * (i + 1)) for i in range(20)]
    for i, j in enumerate(jobs):
        # Servers i (pods 0-2) and i + 27 (pods 3-5): server, edge and core links all loaded.
        j.nodes = tree.start(j, 0, Placement([(i, 1), (i + 27, 2)], CORE, i % 9))[0]
    assert state.residual != [1000.0] * tree.topo.links
    for j in jobs[::3] + jobs[1::3] + jobs[2::3]:
        tree.release(j)
    # Back to exactly the capacity, not within rounding of it.
    assert state.residual == [1000.0] * tree.topo.links and state.is_idle()


# -- the embedders -----------------------------------------------------------------------------


def test_fill_gives_each_server_the_most_vms_its_links_allow():
    state = FatTreeState(Topology(6, 8, 1000.0))
    # 10 VMs of 300 Mbps below edge 0: server 0 can take 8? min(8, 2) x 300 = 600: yes. Then
    # server 1 takes the last 2: min(2, 8) x 300 = 600.
    assert fill(state, 10, 300.0, EDGE, 0, [0, 1, 2]).counts == ((0, 8), (1, 2))
    # 12 VMs of 300: 8 on one server would leave 4 outside: 1200 > 1000; 7 -> 5 outside: 1500;
    # ... the most is 3 (900), or 9 and more (impossible): 3 + 3 + 3 = 9 < 12 below one edge.
    assert fill(state, 12, 300.0, EDGE, 0, [0, 1, 2]) is None


def test_adaba_weights_follow_equation_7():
    # Paper 004, figure 2: Bmax = 800 and L = 8: for B = 10 and B = 110 the server with one
    # idle slot has the largest weight; the peak L B / Bmax moves right as B grows. (k = 8:
    # servers 0-3 hang off edge switch 0, so AdaBa's first subtree holds all four.)
    topo = Topology(8, 8, 1000.0)
    state = FatTreeState(topo)
    state.take([(0, 7), (1, 4), (3, 1)], [])  # free: 1, 4, 8, 7
    order = lambda b: list(adaba(state, Request(1, b, 800.0)).counts)  # noqa: E731
    assert order(10.0) == [(0, 1)]  # weights 1: -0.4, 4: -7.6, ...
    assert order(110.0) == [(0, 1)]  # peak 1.1
    assert order(410.0) == [(1, 1)]  # peak 4.1: the server with 4 free slots
    assert order(800.0) == [(2, 1)]  # peak 8: the idle server
    assert order(2000.0) == [(2, 1)]  # B above Bmax: B_max becomes B (Algorithm 1, line 1)


def test_best_fit_prefers_the_fullest_server_and_oktopus_the_first_one():
    state = FatTreeState(Topology(4, 8, 1000.0))
    state.take([(0, 2), (1, 6), (3, 5)], [])  # free: 6, 2, 8, 3
    assert bestfit(state, Request(2, 100.0)).counts == ((1, 2),)
    assert oktopus(state, Request(2, 100.0)).counts == ((0, 2),)
    assert firstfit(state, Request(2, 100.0)).counts == ((0, 2),)
    assert greedy(state, Request(2, 100.0)).counts == ((0, 2),)  # one server: nothing loaded


def figure3_state() -> tuple[FatTree, list[Job]]:
    """The state before j_i arrives (see the module docstring)."""
    tree = FatTree(k=4, slots=2, link_mbps=100.0)
    red = job(0, 18, 15.0)
    green = job(1, 5, 50.0)
    full = [1, 2, 3, 9, 10, 11, 13, 14, 15]
    for j, placement in (
        (red, Placement([(s, 2) for s in full], CORE, 0)),
        (green, Placement([(4, 1), (5, 1), (6, 1), (7, 2)], AGGREGATION, 2)),
    ):
        assert tree.check_start(j, 0, placement) is None
        j.nodes = tree.start(j, 0, placement)[0]
    return tree, [red, green]


def idle_servers(tree: FatTree) -> list[int]:
    return [s for s, a in enumerate(tree.state.free) if a == tree.topo.slots]


@pytest.mark.parametrize(
    ("name", "placed", "idle_left", "accepted"),
    [
        ("adaba", ((4, 1), (5, 1), (6, 1)), [0, 8, 12], 3),
        ("bestfit", ((4, 1), (5, 1), (6, 1)), [0, 8, 12], 3),
        ("firstfit", ((0, 2), (4, 1)), [8, 12], 2),
        ("greedy", ((0, 2), (8, 1)), [12], 1),
        ("oktopus", ((4, 1), (5, 1), (6, 1)), [0, 8, 12], 3),  # not in the figure: locality
    ],
)
def test_figure_3_embeddings(name, placed, idle_left, accepted):
    tree, _ = figure3_state()
    state = tree.state
    residual = state.residual
    # The reconstruction: three idle servers, one free slot on each of s4-s6 with 50 Mbps left
    # on their links, at most 2 free slots below any edge switch.
    assert idle_servers(tree) == [0, 8, 12]
    assert [residual[s] for s in (4, 5, 6)] == [50.0, 50.0, 50.0]
    assert max(state.edge_free) == 2 and state.pod_free == [2, 3, 2, 2]
    embed = EMBEDDERS[name]
    j_i = job(2, 3, 10.0, submit=100, runtime=20)
    placement = embed(state, tree.request(j_i, bmax=50.0))  # B_max: green's 50 Mbps
    assert placement is not None and placement.counts == placed
    assert tree.check_start(j_i, 0, placement) is None
    tree.start(j_i, 0, placement)
    assert idle_servers(tree) == idle_left
    # At 110 (j_i, red and green still running) three requests (2 VMs, 60 Mbps) arrive.
    taken = 0
    for index in range(3):
        request = job(3 + index, 2, 60.0, submit=110, runtime=40)
        placement = embed(state, tree.request(request, bmax=60.0))
        if placement is not None:
            assert tree.check_start(request, 0, placement) is None
            assert len(set(placement)) == 1  # a whole idle server: loopback only
            tree.start(request, 0, placement)
            taken += 1
    assert taken == accepted


def test_figure_3_greedy_keeps_the_busiest_link_least_busy():
    tree, _ = figure3_state()
    placement = greedy(tree.state, Request(3, 10.0, 50.0))
    assert (placement.level, placement.switch) == (CORE, 2)
    loads = hose_loads(tree.topo, placement.counts, 3, 10.0, placement.level, placement.switch)
    # Every loaded link ends at 10 of 100 Mbps (they were unused); AdaBa's s4-s6 would take
    # s4's link from 50 to 60 used.
    assert max(100.0 - tree.state.residual[link] + amount for link, amount in loads) == 10.0


class FigureThree(BwReject):
    """Reject mode, with red and green put where the figure draws them when they arrive."""

    def __init__(self, placements, **params):
        super().__init__(**params)
        self.placements = placements

    def decide(self, sim):
        for j in self.embedding.take_arrived():
            if j.index in self.placements:
                yield Start(j, 0, self.placements[j.index])
            else:  # as reject mode does
                placement = self.embed(j)
                yield Reject(j) if placement is None else Start(j, 0, placement)


@pytest.mark.parametrize(("name", "accepted"), [("adaba", 3), ("bestfit", 3), ("firstfit", 2), ("greedy", 1)])
def test_figure_3_through_the_engine(name, accepted):
    # The whole story in time: red and green from 0 to 1000, j_i = (3, 10 Mbps) from 100 to
    # 120, three (2, 60 Mbps) requests at 110 (until 150) in reject mode.
    jobs = [
        job(0, 18, 15.0, runtime=1000),
        job(1, 5, 50.0, runtime=1000),
        job(2, 3, 10.0, submit=100, runtime=20),
        *(job(3 + i, 2, 60.0, submit=110, runtime=40) for i in range(3)),
    ]
    full = [1, 2, 3, 9, 10, 11, 13, 14, 15]
    placements = {
        0: Placement([(s, 2) for s in full], CORE, 0),
        1: Placement([(4, 1), (5, 1), (6, 1), (7, 2)], AGGREGATION, 2),
    }
    tree = FatTree(k=4, slots=2, link_mbps=100.0)
    Engine(jobs, tree, FigureThree(placements, embedder=name)).run()
    assert jobs[2].start_time == 100 and jobs[2].finish_time == 120
    started = [j for j in jobs[3:] if j.start_time == 110]
    assert len(started) == accepted
    assert all(j.finish_time == 150 for j in started)
    assert all(math.isnan(j.start_time) for j in jobs[3:] if j not in started)  # rejected
    assert tree.state.is_idle()


# -- bandwidth demand models -------------------------------------------------------------------


def test_bandwidth_spec_forms():
    assert check_bandwidth("none") == "none"
    assert check_bandwidth({"mean": 250}) == {"mean": 250.0, "max_mbps": 1000.0}
    paper = {"formula": "paper", "link_mbps": 1000.0, "servers": 54, "whole_vms": False}
    assert check_bandwidth({"formula": "paper"}) == paper
    assert check_bandwidth({"formula": "paper", "whole_vms": True})["whole_vms"] is True
    for bad, message in [
        ("huge", "unknown value 'huge'"),
        ({"mean": 250, "formula": "paper"}, "exactly one of mean or formula"),
        ({"mean": -1}, "mean: expected a positive number"),
        ({"mean": 1200}, "cannot be reached"),
        ({"mean": 250, "servers": 3}, "unknown key 'servers' with mean"),
        ({"formula": "other"}, "formula: unknown value 'other'"),
        ({"formula": "paper", "whole_vms": "yes"}, "whole_vms: expected true or false"),
        ({"mean": 250, "whole_vms": True}, "unknown key 'whole_vms' with mean"),
        (250, "expected none"),
    ]:
        with pytest.raises(ValueError, match=message):
            check_bandwidth(bad)
    with pytest.raises(SpecError, match=r"^workload.bandwidth: give exactly one"):
        validate_spec({"workload": {"model": "jann97", "bandwidth": {"mean": 1, "formula": "paper"}}})


def test_mean_model_is_paper_004s_clamped_normal_around_the_target():
    jobs = [job(i, 1 + i % 64, 0.0) for i in range(20000)]
    annotate_bandwidth(jobs, seed=3, model={"mean": 250})
    demand = np.array([j.bandwidth for j in jobs])
    # AvgB = 250, MaxB = 250 / 0.55, MinB = MaxB / 10; sd 0.2 AvgB.
    assert demand.min() >= 250 / 0.55 / 10 and demand.max() <= 250 / 0.55 + 1 / 1024
    assert abs(demand.mean() - 250) < 1.0 and abs(demand.std() - 50) < 1.0
    assert np.all(demand * 1024 == np.round(demand * 1024))  # in the platform's unit
    # Capped at the link rate: at a mean of 700 the cap (1000) binds above 2.1 sd.
    annotate_bandwidth(jobs, seed=3, model={"mean": 700})
    demand = np.array([j.bandwidth for j in jobs])
    assert demand.max() == 1000.0 and 695 < demand.mean() < 700


def test_formula_model_as_printed_with_the_link_rate_as_a_cap():
    jobs = [job(0, 1, 0.0), job(1, 54, 0.0), job(2, 108, 0.0), job(3, 400, 0.0)]
    annotate_bandwidth(jobs, seed=0, model={"formula": "paper"})
    # MaxB = 1000 x 54 / N, capped at 1000: 1000, 1000, 500, 135.
    for j, high in zip(jobs, [1000, 1000, 500, 135]):
        assert high / 10 <= j.bandwidth <= high


def test_bandwidth_draws_come_from_their_own_stream():
    from tiersweep.core.workloads.build import build_workload

    def build(seed, **extra):
        spec = validate_spec({"seed": seed, "workload": {"model": "jann97", "jobs": 300, **extra}})
        return build_workload(spec["workload"], seed=seed, nodes=None).jobs

    demands = {"bandwidth": {"mean": 100}}
    plain, with_bw, again, other = build(5), build(5, **demands), build(5, **demands), build(6, **demands)
    # Adding demands changes nothing else (CPU usage, arrivals, sizes).
    fields = lambda jobs: [(j.submit_time, j.size, list(j.cpu_true)) for j in jobs]  # noqa: E731
    assert fields(plain) == fields(with_bw)
    assert all(j.bandwidth == 0 for j in plain) and all(j.bandwidth > 0 for j in with_bw)
    assert [j.bandwidth for j in with_bw] == [j.bandwidth for j in again]
    assert [j.bandwidth for j in with_bw] != [j.bandwidth for j in other]


# -- spec, simulate and the CLI ------------------------------------------------------------------


def test_spec_keys_and_policy_platform_pairing():
    workload, fat_tree = {"model": "jann97"}, {"kind": "fat_tree"}
    spec = validate_spec({"workload": workload, "platform": fat_tree, "policy": {"name": "bgmbf"}})
    assert spec["platform"] == {
        "kind": "fat_tree",
        "migration_cost": 20.0,
        "k": 6,
        "slots": 8,
        "link_mbps": 1000.0,
        "bandwidth_check": "hose",
    }
    assert spec["policy"] == {"name": "bgmbf", "embedder": "adaba"}
    sdf = validate_spec({"workload": workload, "platform": fat_tree, "policy": {"name": "bgmbfsdf"}})
    assert sdf["policy"] == {"name": "bgmbfsdf", "embedder": "adaba", "duration": "estimate"}
    with pytest.raises(
        SpecError, match=r"^platform.bandwidth_check: unknown value 'pipe'; valid choices: hose, per_server"
    ):
        validate_spec(
            {"workload": workload, "platform": {**fat_tree, "bandwidth_check": "pipe"}, "policy": {"name": "sbf"}}
        )
    with pytest.raises(SpecError, match=r"^policy.duration: unknown value 'oracle'; valid choices: estimate, exact"):
        validate_spec({"workload": workload, "platform": fat_tree, "policy": {"name": "sdf", "duration": "oracle"}})
    with pytest.raises(SpecError, match=r"^policy.duration: unknown key; valid keys: embedder, name"):
        validate_spec({"workload": workload, "platform": fat_tree, "policy": {"name": "bgmbf", "duration": "exact"}})
    with pytest.raises(SpecError, match=r"^policy.embedder: unknown value 'tetris'; valid choices: adaba, oktopus"):
        validate_spec({"workload": workload, "platform": fat_tree, "policy": {"name": "sbf", "embedder": "tetris"}})
    with pytest.raises(SpecError, match=r"^platform.k: expected an even integer from 2 to 128, got 5"):
        validate_spec({"workload": workload, "platform": {**fat_tree, "k": 5}, "policy": {"name": "sbf"}})
    # Policies and platforms pair up: the default policy (easy) needs nodes; bgmbf a fat-tree.
    message = (
        r"^policy.name: policy 'easy' needs 'placement' \(chooses a job's units itself when a start names none\), "
        r"which platform 'fat_tree' does not offer; policies for this platform: bw_fcfs, sbf"
    )
    with pytest.raises(SpecError, match=message):
        validate_spec({"workload": workload, "platform": fat_tree})
    with pytest.raises(
        SpecError, match=r"^policy.name: policy 'bgmbf' needs 'embedding' .* platform 'nodes' with tiers: 1"
    ):
        validate_spec({"workload": workload, "policy": {"name": "bgmbf"}})


def test_simulate_reports_the_fat_tree_metrics(kth_path):
    spec = {
        "seed": 2,
        "workload": {"trace": str(kth_path), "jobs": 300, "load": 0.7, "bandwidth": {"mean": 50}},
        "platform": {"kind": "fat_tree"},
        "policy": {"name": "bgmbf"},
    }
    result = simulate(spec)
    m, records = result.metrics, result.jobs
    assert m["accept_rate"] == 1.0  # 50 Mbps: every KTH job of the first 300 can be placed
    assert m["mean_bandwidth"] == pytest.approx(records["bandwidth"].mean())
    assert 0 < m["link_utilization"] < 1 and 0 < m["single_server_fraction"] <= 1
    assert (records["servers"] >= 1).all() and (records["servers"] <= records["size"]).all()
    # Slot-seconds held (runtime plus the restores of suspended jobs) over 432 slots;
    # ``utilization`` weighs the work by the CPU annotation.
    held = records["tier0_duration"]
    # (A restore cut short by another suspension holds its slots for less than the 20 s.)
    assert (held >= records["runtime"]).all() and (held <= records["runtime"] + 20 * records["migrations"] + 1e-6).all()
    assert m["slot_utilization"] == pytest.approx(float(np.dot(records["size"], held)) / (432 * m["makespan"]))
    assert m["utilization"] == pytest.approx(
        float(np.dot(records["size"] * records["cpu_mean"], records["runtime"])) / (432 * m["makespan"])
    )


def test_tiersweep_run_on_the_fat_tree(tmp_path, kth_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        f"seed: 1\nworkload: {{trace: {kth_path}, jobs: 200, load: 0.5, bandwidth: {{mean: 250}}}}\n"
        "platform: {kind: fat_tree, k: 6, slots: 8, link_mbps: 1000}\n"
        "policy: {name: bgmbf, embedder: adaba}\n"
    )

    def tiersweep(*args):
        command = [sys.executable, "-m", "tiersweep", *args]
        return subprocess.run(command, cwd=PROJECT_ROOT, capture_output=True, text=True)

    done = tiersweep("run", str(spec), "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["jobs"] == 200 and 0 < out["accept_rate"] <= 1 and out["spec"]["policy"]["embedder"] == "adaba"
    table = tiersweep("run", str(spec))
    assert table.returncode == 0, table.stderr
    assert "fat_tree" in table.stdout
