"""The fat-tree platform's own promises, its embedders and its policies' particular guarantees.

Every policy that runs on ``fat_tree`` is crossed with every embedder, so a new policy or
embedder gets this suite by being registered. Everything is checked against an
independent, brute-force reckoning of the hose model (:func:`reference_usage`: for every link
of the network, which of a job's servers lie below it on the job's tree), never against the
platform's own bookkeeping; under both bandwidth checks (``platform.bandwidth_check``: ``hose``,
and ``per_server``, paper 004's equation 6, for which the reference takes, on each link, the
largest ``min(m_s, N - m_s) x B`` among the job's servers below it):

* embedders, on random request streams (hypothesis): a placement has one server per VM, is
  accepted by ``check_start``, and after it no slot and no link is oversubscribed;
* policies, on random workloads (hypothesis) and on KTH-SP2, audited after every pass: no slot
  or link oversubscribed, and the platform's residuals equal capacity minus what the running
  jobs hold, exactly: whatever a job held is released when it finishes or is suspended; at the
  end the platform is idle;
* lifecycle: the generic checks of :func:`tiersweep.contract.checks.assert_jobs_lifecycle` (every
  job finishes exactly once, or is rejected without ever starting; a job starts
  ``1 + suspensions`` times), and here: only BgMBF suspends; a queueing policy rejects only
  jobs its embedder cannot place even on the idle platform; work is conserved (rate 1);
* ``bw_fcfs`` starts jobs in arrival order; ``sbf`` and ``sdf`` leave their first job in
  priority order queued only when it cannot embed;
* ``bgmbf`` and ``bgmbfsdf`` never let later arrivals delay the head: after every pass the head
  cannot embed even with every job that arrived after it removed;
* ``bw_reject``: no job ever waits, and the accept rate counts exactly the jobs started.

The generic contract of every fat-tree policy with every embedder (capacity, lifecycle, work,
determinism in this and in a fresh interpreter, on small cases and KTH-SP2) runs from
``test_conformance.py`` (:mod:`tiersweep.contract`), which also audits every pass against
:func:`assert_state_matches` there.
"""

from __future__ import annotations

import time
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from tiersweep.contract.audit import counting_policy
from tiersweep.contract.checks import assert_jobs_lifecycle
from tiersweep.core.engine import Engine
from tiersweep.core.jobs import FINISHED, REJECTED, Job
from tiersweep.core.metrics import job_records, run_metrics
from tiersweep.core.platforms import embedders
from tiersweep.core.platforms.embedders import EMBEDDERS, fill
from tiersweep.core.platforms.fat_tree import (
    BANDWIDTH_CHECKS,
    FatTree,
    FatTreeState,
    Placement,
    Request,
    could_ever_fit,
    hose_loads,
    link_loads,
    per_server_loads,
    quantize,
)
from tiersweep.core.policies import POLICIES
from tiersweep.core.policies.embedding import Bgmbf, BwReject, _PriorityOrder
from tiersweep.core.simulate import simulate
from tiersweep.core.spec import policy_runs_on, validate_spec
from tiersweep.core.workloads.build import build_workload

FAT_TREE_POLICIES = sorted(name for name in POLICIES if policy_runs_on(name, "fat_tree"))
EMBEDDER_NAMES = sorted(EMBEDDERS)
#: Small trees for random tests: (k, slots, link Mbps).
TREES = [(2, 4, 100.0), (4, 2, 100.0), (4, 4, 100.0), (6, 8, 1000.0)]
#: The bandwidth checks, drawn per example by the random tests (one budget for both).
CHECKS = st.sampled_from(BANDWIDTH_CHECKS)


def test_every_fat_tree_policy_is_covered():
    assert FAT_TREE_POLICIES == ["bgmbf", "bgmbfsdf", "bw_fcfs", "bw_reject", "sbf", "sdf"]
    assert not any(policy_runs_on(name, "fat_tree") for name in POLICIES if policy_runs_on(name, "nodes"))


# -- the reference hose model ------------------------------------------------------------------


def servers_below(topo, link: int, level: int, switch: int) -> list[int] | None:
    """The servers below ``link`` on the tree of a job rooted at ``switch`` (``level``), or
    None when the link is not on that tree. Decoded from the link numbering directly."""
    h, servers = topo.h, topo.servers
    if level == 1:
        scope = range(switch * h, switch * h + h)
    elif level == 2:
        scope = range((switch // h) * h * h, (switch // h + 1) * h * h)
    else:
        scope = range(servers)
    if link < servers:
        return [link] if link in scope else None
    if link < servers + topo.edges * h:
        edge, i = divmod(link - servers, h)
        root_i = switch % h if level == 2 else switch // h
        if level == 1 or i != root_i or edge * h not in scope:
            return None
        return list(range(edge * h, edge * h + h))
    agg, j = divmod(link - servers - topo.edges * h, h)
    if level != 3 or (agg % h, j) != divmod(switch, h):
        return None
    pod = agg // h
    return list(range(pod * h * h, (pod + 1) * h * h))


def reference_usage(topo, held) -> tuple[list[float], list[int]]:
    """Mbps used on every link and slots used on every server by ``held``, a list of
    ``(placement, VMs, per-VM Mbps)``: each link carries, for every job whose tree it is on,
    min(m, N - m) x B with m the job's VMs below it (``hose``), or the largest
    min(m_s, N - m_s) x B among the job's servers s below it (``per_server``)."""
    used = [0.0] * topo.links
    slots = [0] * topo.servers
    for placement, size, bandwidth in held:
        counts = Counter(placement)
        assert sum(counts.values()) == size
        for server, m in counts.items():
            slots[server] += m
        for link in range(topo.links):
            below = servers_below(topo, link, placement.level, placement.switch)
            if below is not None:
                if topo.check == "per_server":
                    used[link] += max(min(counts.get(s, 0), size - counts.get(s, 0)) for s in below) * bandwidth
                else:
                    m = sum(counts.get(s, 0) for s in below)
                    used[link] += min(m, size - m) * bandwidth
            elif link < topo.servers:
                assert counts.get(link, 0) == 0, f"server {link} is not below the root of {placement!r}"
    return used, slots


def assert_state_matches(tree: FatTree, held) -> None:
    """Nothing oversubscribed, and the platform's residuals are exactly what ``held`` leaves."""
    topo, state = tree.topo, tree.state
    used, slots = reference_usage(topo, held)
    worst = max(range(topo.links), key=used.__getitem__)
    assert used[worst] <= topo.link_mbps, f"link {topo.describe_link(worst)} carries {used[worst]} Mbps"
    assert max(slots) <= topo.slots
    assert state.residual == [topo.link_mbps - u for u in used]
    assert state.free == [topo.slots - s for s in slots]
    assert state.total_free == topo.servers * topo.slots - sum(slots)


def test_the_reference_agrees_with_hand_computed_loads():
    tree = FatTree(k=6)
    topo = tree.topo
    placement = Placement([(0, 4), (1, 4), (3, 4), (9, 3)], 3, 5)
    used, _ = reference_usage(topo, [(placement, 15, 50.0)])
    assert {link: u for link, u in enumerate(used) if u} == dict(hose_loads(topo, placement.counts, 15, 50.0, 3, 5))
    assert sum(used) == 50.0 * (4 + 4 + 4 + 3 + 7 + 4 + 3 + 3 + 3)
    # per_server: the four server links as above (4, 4, 4, 3 VMs); edge 0 (servers 0 and 1)
    # carries max(4, 4) = 4, edge 1 (server 3) 4, edge 3 (server 9) 3; pod 0 (edges 0, 1)
    # max(4, 4) = 4, pod 1 (edge 3) 3.
    topo = FatTree(k=6, bandwidth_check="per_server").topo
    used, _ = reference_usage(topo, [(placement, 15, 50.0)])
    assert {link: u for link, u in enumerate(used) if u} == dict(
        per_server_loads(topo, placement.counts, 15, 50.0, 3, 5)
    )
    assert sum(used) == 50.0 * (4 + 4 + 4 + 3 + 4 + 4 + 3 + 4 + 3)


# -- embedders on random request streams ---------------------------------------------------------


@st.composite
def request_streams(draw):
    k, slots, link = draw(st.sampled_from(TREES))
    check = draw(CHECKS)
    capacity = (k**3 // 4) * slots
    bandwidth = st.one_of(
        st.just(0.0),
        st.floats(0.0, link * 1.2, allow_nan=False),
        st.sampled_from([link / 10, link / 4, link / 2, link]),
    )
    add = st.tuples(st.just("add"), st.integers(1, min(capacity, 3 * slots + 3)), bandwidth)
    remove = st.tuples(st.just("remove"), st.integers(0, 1000), st.just(0.0))
    ops = draw(st.lists(st.one_of(add, add, remove), min_size=1, max_size=40))
    return (k, slots, link, check), ops


@pytest.mark.parametrize("name", EMBEDDER_NAMES)
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=request_streams())
def test_embedders_never_oversubscribe(name, case):
    (k, slots, link, check), ops = case
    tree = FatTree(k=k, slots=slots, link_mbps=link, bandwidth_check=check)
    embed = EMBEDDERS[name]
    held: list[tuple[Job, Placement]] = []
    bmax = 0.0
    for index, (op, value, bandwidth) in enumerate(ops):
        if op == "remove":
            if held:
                job, _ = held.pop(value % len(held))
                tree.release(job)
        else:
            job = Job(index, index + 1, 0.0, value, 1.0)
            job.bandwidth = bandwidth
            bmax = max(bmax, quantize(bandwidth))
            placement = embed(tree.state, tree.request(job, bmax))
            if placement is not None:
                assert isinstance(placement, Placement) and len(placement) == value
                assert tree.check_start(job, 0, placement) is None
                job.nodes = tree.start(job, 0, placement)[0]
                held.append((job, placement))
        assert_state_matches(tree, [(p, j.size, quantize(j.bandwidth)) for j, p in held])
    for job, _ in held:
        tree.release(job)
    assert tree.state.is_idle() and tree.state.residual == [tree.topo.link_mbps] * tree.topo.links


@pytest.mark.parametrize("name", EMBEDDER_NAMES)
def test_embedders_place_what_fits_on_an_idle_tree(name):
    per_server = FatTreeState(FatTree(k=6, bandwidth_check="per_server").topo)
    # per_server: 54 VMs of 1000 Mbps, one per server (each path carries min(1, 53) x 1000).
    placement = EMBEDDERS[name](per_server, Request(54, 1000.0, 1000.0))
    assert placement is not None and len(set(placement)) == 54
    state = FatTreeState(FatTree(k=6).topo)
    embed = EMBEDDERS[name]
    # Anything up to a server's slots fits on one server, whatever the demand.
    assert len(set(embed(state, Request(8, 5000.0, 5000.0)))) == 1
    # No demand: only slots count.
    assert len(embed(state, Request(432, 0.0))) == 432
    assert embed(state, Request(433, 0.0)) is None
    # 16 VMs of 250 Mbps need a pod: 12 below one edge switch (4 per server) and 4 below
    # another (paper's hose model: every link separates at most 4 VMs from the rest).
    placement = embed(state, Request(16, 250.0, 250.0))
    assert placement is not None and placement.level >= 2


def reference_fill(state, size, bandwidth, level, switch, servers):
    """Algorithm 1, lines 12-19, literally: for each server, try every count and keep the
    largest whose path carries the job so far (``hose``: checked with the reference hose model)
    or the server's own VMs (``per_server``: equation 6)."""
    topo = state.topo
    counts: dict[int, int] = {}
    left = size
    for server in servers:
        best = 0
        for m in range(1, min(state.free[server], left) + 1):
            trial = {**counts, server: m}
            ok = True
            for link in topo.path_links(server, level, switch):
                below = servers_below(topo, link, level, switch)
                x = m if topo.check == "per_server" else sum(trial.get(s, 0) for s in below)
                if min(x, size - x) * bandwidth > state.residual[link]:
                    ok = False
            if ok:
                best = m
        if best:
            counts[server] = best
            left -= best
            if not left:
                return sorted(counts.items())
    return None


@st.composite
def busy_states(draw):
    k, slots, link = draw(st.sampled_from(TREES))
    tree = FatTree(k=k, slots=slots, link_mbps=link, bandwidth_check=draw(CHECKS))
    for index in range(draw(st.integers(0, 12))):
        job = Job(index, index + 1, 0.0, draw(st.integers(1, 2 * slots + 1)), 1.0)
        job.bandwidth = draw(st.sampled_from([0.0, link / 8, link / 3, link / 2]))
        placement = EMBEDDERS[draw(st.sampled_from(EMBEDDER_NAMES))](tree.state, tree.request(job, link))
        if placement is not None:
            tree.start(job, 0, placement)
    level = draw(st.sampled_from([1, 2, 3]))
    switch = draw(st.integers(0, tree.topo.switches(level) - 1))
    servers = list(tree.topo.subtree(level, switch))
    servers = draw(st.permutations(servers))
    size = draw(st.integers(1, 3 * slots + 2))
    bandwidth = draw(st.sampled_from([0.0, link / 10, link / 4, link / 3, link / 2, link, 1.5 * link]))
    return tree, size, quantize(bandwidth), level, switch, servers


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=busy_states())
def test_fill_takes_the_most_vms_each_server_allows(case):
    # fill() jumps over counts that cannot pass a link; the literal loop tries them all.
    tree, size, bandwidth, level, switch, servers = case
    placement = fill(tree.state, size, bandwidth, level, switch, servers)
    expected = reference_fill(tree.state, size, bandwidth, level, switch, servers)
    assert (None if placement is None else list(placement.counts)) == expected


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=busy_states(), name=st.sampled_from(EMBEDDER_NAMES))
def test_skipping_roots_the_server_links_rule_out_changes_no_answer(case, name):
    # The searches skip a root when its servers' own links cannot take the job
    # (embedders._room_below); with the bound replaced by plain free slots (no skipping) every
    # embedder gives the same answer.
    tree, size, bandwidth, _, _, _ = case
    request = Request(size, bandwidth, max(bandwidth, tree.topo.link_mbps / 2))
    fast = EMBEDDERS[name](tree.state, request)
    saved = embedders._room_below
    embedders._room_below = lambda state, size, bandwidth: (state.edge_free, state.pod_free, state.total_free)
    try:
        slow = EMBEDDERS[name](tree.state, request)
    finally:
        embedders._room_below = saved
    assert fast == slow and (fast is None or (fast.level, fast.switch) == (slow.level, slow.switch))


@pytest.mark.parametrize("check", BANDWIDTH_CHECKS)
@pytest.mark.parametrize(("k", "slots"), [(2, 4), (4, 2), (4, 4), (6, 8)])
def test_could_ever_fit_is_exact_on_the_idle_tree(k, slots, check):
    # No embedder ever places what it calls impossible; AdaBa, Oktopus, greedy and best fit
    # place everything it calls possible on an idle tree (the bound is reached); under
    # per_server first fit does too (on the idle tree a server's path is as wide as its link).
    tree = FatTree(k=k, slots=slots, link_mbps=1000.0, bandwidth_check=check)
    idle = FatTreeState(tree.topo)
    demands = [0.0, 7.5, 62.5, 125.0, 200.0, 250.0, 333.0, 400.0, 500.0, 999.0, 1000.0, 1500.0]
    sizes = [*range(1, 100), *range(100, tree.capacity + 2, 37), tree.capacity, tree.capacity + 1]
    for size in sorted(set(s for s in sizes if s <= tree.capacity + 1)):
        for bandwidth in demands:
            possible = could_ever_fit(tree.topo, size, bandwidth)
            for name, embed in EMBEDDERS.items():
                placed = embed(idle, Request(size, bandwidth, bandwidth)) is not None
                assert possible or not placed, (name, size, bandwidth)
                if name != "firstfit" or check == "per_server":
                    assert placed == possible, (name, size, bandwidth)
    topo = FatTree(bandwidth_check=check).topo
    if check == "hose":
        # Hand cases, k = 6: 16 VMs of 250 Mbps (t = 4): 12 below one edge switch + 4 = 16:
        # yes; 25 VMs: 12 + 4 < 25 and 6 pods x 4 = 24 < 25: no. 600 Mbps (t = 1): 8 + 1 = 9.
        assert (
            could_ever_fit(topo, 16, 250.0) and not could_ever_fit(topo, 25, 250.0) and could_ever_fit(topo, 24, 250.0)
        )
        assert could_ever_fit(topo, 9, 600.0) and not could_ever_fit(topo, 10, 600.0)
    else:
        # 54 servers, t VMs on each: 600 Mbps (t = 1): 54 VMs, not 55; 500 Mbps (t = 2): 108.
        assert could_ever_fit(topo, 54, 600.0) and not could_ever_fit(topo, 55, 600.0)
        assert could_ever_fit(topo, 108, 500.0) and not could_ever_fit(topo, 109, 500.0)
        # One full server and t elsewhere: 8 + 2 = 10 VMs of 500 Mbps on k = 2 (2 servers).
        small = FatTree(k=2, slots=8, bandwidth_check=check).topo
        assert could_ever_fit(small, 10, 500.0) and not could_ever_fit(small, 11, 500.0)


# -- policies on random workloads -----------------------------------------------------------------


def fat_tree_audit(sim: Engine) -> None:
    """Engine observer: after every pass, what the running jobs hold is exactly what the
    platform says is taken, within capacity; policy-specific promises hold."""
    tree = sim.platform
    running = list(sim.running.values())
    for job in running:
        assert isinstance(job.nodes, Placement) and len(job.nodes) == job.size
    assert_state_matches(tree, [(j.nodes, j.size, quantize(j.bandwidth)) for j in running])
    policy = sim.policy
    queue = sim.queue
    if isinstance(policy, BwReject):
        assert not queue, "reject mode keeps no queue"
    elif isinstance(policy, _PriorityOrder) and queue:
        first = min(queue.values(), key=lambda j: (*policy.key(j), j.index))
        assert policy.embedding.function(tree.state, tree.request(first, policy.bmax)) is None, (
            f"{policy.name}: job {first.job_id}, first in priority order, left queued though it embeds"
        )
    elif isinstance(policy, Bgmbf) and queue:
        head = next(iter(queue.values()))
        # Rebuilt from scratch with only the running jobs that arrived before the head.
        without = FatTreeState(tree.topo)
        for job in running:
            if job.index < head.index:
                p = job.nodes
                loads = link_loads(tree.topo, p.counts, job.size, quantize(job.bandwidth), p.level, p.switch)
                without.take(p.counts, loads)
        assert policy.embedding.function(without, tree.request(head, policy.bmax)) is None, (
            f"{policy.name}: head {head.job_id} left queued at t={sim.now:g} though it embeds without the "
            "jobs that arrived after it"
        )
        assert all(j.index in policy.backfilled for j in running if j.index > head.index)


@st.composite
def workloads(draw):
    k, slots, link = draw(st.sampled_from(TREES[:3]))
    check = draw(CHECKS)
    capacity = (k**3 // 4) * slots
    n = draw(st.integers(1, 25))
    jobs = []
    submit = 0.0
    for index in range(n):
        submit += draw(st.sampled_from([0.0, 0.0, 1.0, 5.0, 30.0, 200.0]))
        size = draw(st.integers(1, capacity))
        runtime = draw(st.sampled_from([0.0, 1.0, 10.0, 50.0, 100.0, 333.0, 1000.0]))
        estimate = runtime * draw(st.sampled_from([1.0, 1.0, 2.0, 0.5]))
        job = Job(index, index + 1, submit, size, runtime, estimate=estimate)
        some = st.sampled_from([link / 20, link / 5, link / 2])
        job.bandwidth = draw(st.one_of(st.just(0.0), some, st.floats(0.0, link, allow_nan=False)))
        jobs.append(job)
    migration_cost = draw(st.sampled_from([0.0, 20.0]))
    return (k, slots, link, check), jobs, migration_cost


def run_audited(name: str, embedder: str, tree: FatTree, jobs: list[Job], migration_cost: float = 20.0):
    policy = counting_policy(name, embedder=embedder)
    Engine(jobs, tree, policy, migration_cost=migration_cost, observer=fat_tree_audit).run()
    return policy


def assert_lifecycle(name: str, embedder: str, tree: FatTree, jobs: list[Job], policy) -> None:
    idle = FatTreeState(tree.topo)
    suspends = sum(policy.suspensions.values())
    if name not in ("bgmbf", "bgmbfsdf"):
        assert suspends == 0
    assert_jobs_lifecycle(jobs, policy, may_reject=True)
    for job in jobs:
        i = job.index
        if job.state == REJECTED:
            if name != "bw_reject":
                # Queueing policies turn away only what could never be placed.
                assert EMBEDDERS[embedder](idle, tree.request(job, quantize(job.bandwidth))) is None
            continue
        if policy.suspensions[i] == 0:
            assert job.finish_time == job.start_time + job.runtime  # guaranteed bandwidth: rate 1
    accepted = [j for j in jobs if j.state == FINISHED]
    if name == "bw_fcfs":
        starts = [j.start_time for j in accepted]
        assert starts == sorted(starts), "bw_fcfs started a job before one that arrived earlier"
    if name == "bw_reject":
        assert all(j.start_time == j.submit_time for j in accepted)
    records = job_records(jobs)
    metrics = run_metrics(records, tree.capacity)
    assert metrics["accept_rate"] == len(accepted) / len(jobs)
    assert tree.state.is_idle()


@pytest.mark.parametrize("embedder", EMBEDDER_NAMES)
@pytest.mark.parametrize("name", FAT_TREE_POLICIES)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=workloads())
def test_policies_keep_the_contract_on_random_workloads(name, embedder, case):
    (k, slots, link, check), jobs, migration_cost = case
    tree = FatTree(k=k, slots=slots, link_mbps=link, bandwidth_check=check)
    policy = run_audited(name, embedder, tree, jobs, migration_cost)
    assert_lifecycle(name, embedder, tree, jobs, policy)


@pytest.mark.parametrize("name", ["bgmbf", "bgmbfsdf"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=workloads(), embedder=st.sampled_from(EMBEDDER_NAMES))
def test_bgmbf_never_lets_later_arrivals_delay_the_head(name, embedder, case):
    # After every pass: if the head is still queued, it cannot embed even in the state rebuilt
    # from scratch without every running job that arrived after it (the audit's check), so no
    # backfilled job ever holds it back past the moment it could start without them.
    (k, slots, link, check), jobs, migration_cost = case

    def audit(sim):
        fat_tree_audit(sim)
        if sim.queue and any(j.index > next(iter(sim.queue)) for j in sim.running.values()):
            event("a head waited while later arrivals ran")  # the check had teeth (--hypothesis-show-statistics)

    policy = counting_policy(name, embedder=embedder)
    tree = FatTree(k=k, slots=slots, link_mbps=link, bandwidth_check=check)
    Engine(jobs, tree, policy, migration_cost=migration_cost, observer=audit).run()
    assert_lifecycle(name, embedder, tree, jobs, policy)


def test_the_head_check_is_not_vacuous():
    # The hand case below: at 2 the head B waits while C (a later arrival) runs.
    jobs = tiny_jobs([(0, 4, 100, 0), (1, 8, 100, 0), (2, 4, 1000, 0)])
    seen = []

    def audit(sim):
        fat_tree_audit(sim)
        if sim.queue and any(j.index > next(iter(sim.queue)) for j in sim.running.values()):
            seen.append(sim.now)

    Engine(jobs, FatTree(k=2, slots=4, link_mbps=100), counting_policy("bgmbf"), observer=audit).run()
    assert seen == [2]


def test_everything_is_released_on_finish_and_on_suspension():
    # The preemption case: after each pass the servers in use are exactly those of the
    # running jobs; C's slots are free the moment it is suspended (t = 100), and everything is
    # free at the end.
    jobs = tiny_jobs([(0, 4, 100, 30), (1, 8, 100, 10), (2, 4, 1000, 20)])
    used = {}

    def audit(sim):
        fat_tree_audit(sim)
        busy_servers = [s for s, a in enumerate(sim.platform.state.free) if a < 4]
        used[sim.now] = (busy_servers, sorted(j.job_id for j in sim.running.values()))

    tree = FatTree(k=2, slots=4, link_mbps=100)
    Engine(jobs, tree, counting_policy("bgmbf"), migration_cost=20.0, observer=audit).run()
    assert used[2] == ([0, 1], [1, 3])  # A on one server, C backfilled on the other
    assert used[100] == ([0, 1], [2])  # A finished and C suspended: B alone holds both
    assert used[200] == ([0], [3])  # B finished: C restored on one server
    assert tree.state.is_idle() and tree.state.residual == [100.0] * tree.topo.links


@pytest.mark.slow  # (a KTH-SP2 slice per policy and check: about 25 s; the random workloads stay in the default run)
@pytest.mark.parametrize(("check", "mean"), [("hose", 50), ("per_server", 250)])
@pytest.mark.parametrize("name", FAT_TREE_POLICIES)
def test_policies_keep_the_contract_on_kth(kth_path, name, check, mean):
    spec = validate_spec(
        {
            "seed": 4,
            "workload": {"trace": str(kth_path), "jobs": 400, "load": 0.9, "bandwidth": {"mean": mean}},
            "platform": {"kind": "fat_tree", "bandwidth_check": check},
            "policy": {"name": name},
        }
    )
    jobs = build_workload(spec["workload"], seed=4, nodes=432).jobs
    tree = FatTree(bandwidth_check=check)
    passes = []

    def sampled_audit(sim):
        passes.append(sim.now)
        if len(passes) % 7 == 0 or not sim.queue:
            fat_tree_audit(sim)

    policy = counting_policy(name, embedder="adaba")
    Engine(jobs, tree, policy, migration_cost=20.0, observer=sampled_audit).run()
    assert_lifecycle(name, "adaba", tree, jobs, policy)
    # The same run through simulate: the same schedule.
    records = simulate(spec).jobs
    assert np.array_equal(records["start_time"], job_records(jobs)["start_time"], equal_nan=True)
    if name in ("bgmbf", "bgmbfsdf"):
        assert sum(policy.suspensions.values()) > 0  # the check is not vacuous


# -- hand-checked cases ---------------------------------------------------------------------------


def tiny_jobs(rows):
    """Jobs from ``(submit, size, runtime, Mbps)`` rows (estimate = runtime)."""
    jobs = []
    for index, (submit, size, runtime, bandwidth) in enumerate(rows):
        job = Job(index, index + 1, submit, size, runtime)
        job.bandwidth = bandwidth
        jobs.append(job)
    return jobs


#: (submit, size, runtime, Mbps) on k = 2 (two servers of 4 slots), 100 Mbps links.
SEVEN_ROWS = [(0, 4, 100, 10), (0, 4, 100, 10), (0, 4, 100, 10), (50, 2, 10, 0), (100, 4, 10, 0)]
SEVEN_ROWS += [(200, 5, 10, 60), (300, 5, 10, 120)]


def test_reject_mode_accept_rate_is_counted_exactly():
    # k = 2: two servers of 4 slots (8 slots), 100 Mbps links. A and B fill them at 0; C finds
    # nothing and is rejected; D (at 50) too; A and B finish at 100 before E arrives at 100:
    # E is accepted. F (5 VMs of 60 Mbps) needs both servers: 4 + 1 puts 60 on each server
    # link: fine at 200; G (5 x 120) cannot be split (120 > 100): rejected even on an idle tree.
    jobs = tiny_jobs(SEVEN_ROWS)
    tree = FatTree(k=2, slots=4, link_mbps=100)
    policy = run_audited("bw_reject", "adaba", tree, jobs)
    assert [j.state == FINISHED for j in jobs] == [True, True, False, False, True, True, False]
    assert [j.start_time for j in jobs if j.state == FINISHED] == [0, 0, 100, 200]
    records = job_records(jobs)
    metrics = run_metrics(records, tree.capacity)
    assert metrics["accept_rate"] == 4 / 7 and metrics["jobs"] == 7
    assert metrics["mean_wait"] == 0.0  # over the accepted jobs only
    assert sum(policy.starts.values()) == 4


def test_queueing_policies_wait_where_reject_mode_turns_away():
    jobs = tiny_jobs(SEVEN_ROWS)
    tree = FatTree(k=2, slots=4, link_mbps=100)
    run_audited("bw_fcfs", "adaba", tree, jobs)
    # C waits for A and B (100); D (arrived at 50) starts beside it then; E (4 VMs) waits for
    # D's end (110); F follows at 200. G can never be placed: rejected on arrival.
    assert [j.start_time for j in jobs[:6]] == [0, 0, 100, 100, 110, 200]
    assert jobs[6].state == REJECTED


def test_bgmbf_backfills_and_the_head_preempts_later_arrivals():
    # k = 2: two servers of 4 slots, 100 Mbps. A (4 VMs) runs 0-100 on one server. B (8 VMs)
    # arrives at 1 and needs both servers: it waits. C (4 VMs, 1000 s) arrives at 2 and is
    # backfilled on the free server. At 100 A ends: B, the head, cannot embed (C holds a
    # server) but could without C, which arrived after it: C is suspended and B starts. C
    # restarts when B ends (at 200) and pays the 20 s migration cost.
    jobs = tiny_jobs([(0, 4, 100, 0), (1, 8, 100, 0), (2, 4, 1000, 0)])
    tree = FatTree(k=2, slots=4, link_mbps=100)
    policy = run_audited("bgmbf", "adaba", tree, jobs)
    a, b, c = jobs
    assert (a.start_time, b.start_time, c.start_time) == (0, 100, 2)
    assert policy.suspensions[2] == 1 and c.migrations == 1
    assert c.finish_time == 200 + 20 + (1000 - 98)
    # Without the backfill C would have started at 200 and ended at 1200: BgMBF gains 78 s.
    fcfs = tiny_jobs([(0, 4, 100, 0), (1, 8, 100, 0), (2, 4, 1000, 0)])
    run_audited("bw_fcfs", "adaba", FatTree(k=2, slots=4, link_mbps=100), fcfs)
    assert [j.start_time for j in fcfs] == [0, 100, 200]


def test_bgmbf_does_not_suspend_for_a_head_that_still_cannot_embed():
    # B (8 VMs of 60 Mbps) could never be split over the two servers (4 + 4 puts
    # min(4, 4) x 60 = 240 on a 100 Mbps link): it is rejected on arrival, and C, backfilled
    # or not, is never suspended.
    jobs = tiny_jobs([(0, 4, 100, 0), (1, 8, 100, 60), (2, 4, 1000, 0)])
    policy = run_audited("bgmbf", "adaba", FatTree(k=2, slots=4, link_mbps=100), jobs)
    assert jobs[1].state == REJECTED and sum(policy.suspensions.values()) == 0
    assert jobs[2].start_time == 2


def test_bgmbfsdf_backfills_the_shortest_first_and_keeps_the_head_first():
    # Two servers of 4. A (4 VMs) runs 0-100. At 1: B (8 VMs, the head: blocked by A), then C
    # (4 VMs, 500 s), D (50 s), E (60 s) as backfill candidates for the free server.
    # bgmbf backfills C (arrival order); at 100 B preempts C; at 200 C (now the head) and D
    # start, E follows D at 250. bgmbfsdf backfills D (shortest) at 1, then E when D ends at
    # 51; at 100 B preempts E; at 200 C, the head, starts first, whatever its length.
    rows = [(0, 4, 100, 0), (1, 8, 100, 0), (1, 4, 500, 0), (1, 4, 50, 0), (1, 4, 60, 0)]
    plain, sdf = tiny_jobs(rows), tiny_jobs(rows)
    run_audited("bgmbf", "adaba", FatTree(k=2, slots=4, link_mbps=100), plain)
    run_audited("bgmbfsdf", "adaba", FatTree(k=2, slots=4, link_mbps=100), sdf)
    assert [j.start_time for j in plain] == [0, 100, 1, 200, 250]
    assert [j.migrations for j in plain] == [0, 0, 1, 0, 0]
    assert [j.start_time for j in sdf] == [0, 100, 200, 1, 51]
    assert [j.migrations for j in sdf] == [0, 0, 0, 0, 1]
    assert sdf[4].finish_time == 200 + 20 + (60 - 49)  # 49 s done before the preemption


def test_sbf_and_sdf_orders():
    # One server of 4 slots (k = 2 has two; the first job holds one all along). Queue at 10:
    # X (4 VMs, 90 Mbps, 30 s), Y (4, 10 Mbps, 50 s), Z (4, 50 Mbps, 10 s).
    rows = [(0, 4, 1000, 0), (0, 4, 10, 0), (1, 4, 30, 90), (2, 4, 50, 10), (3, 4, 10, 50)]
    by_bandwidth, by_duration = tiny_jobs(rows), tiny_jobs(rows)
    run_audited("sbf", "adaba", FatTree(k=2, slots=4, link_mbps=100), by_bandwidth)
    run_audited("sdf", "adaba", FatTree(k=2, slots=4, link_mbps=100), by_duration)
    assert [j.start_time for j in by_bandwidth[2:]] == [70, 10, 60]  # Y, Z, X
    assert [j.start_time for j in by_duration[2:]] == [20, 50, 10]  # Z, X, Y


# -- common random numbers ------------------------------------------------------------------------------------


def test_the_workload_is_the_same_whatever_the_policy(kth_path):
    # Common random numbers: demands depend on the seed and workload spec only.
    workload = {"trace": str(kth_path), "jobs": 200, "bandwidth": {"mean": 450}}
    base = {"seed": 3, "workload": workload, "platform": {"kind": "fat_tree"}}
    demands = {name: simulate({**base, "policy": {"name": name}}).jobs["bandwidth"] for name in FAT_TREE_POLICIES}
    first = demands.pop("bgmbf")
    assert all(np.array_equal(first, other) for other in demands.values())


# -- speed (paper 004's experiments must be cheap) ----------------------------------------------------


@pytest.mark.benchmark
@pytest.mark.parametrize("embedder", EMBEDDER_NAMES)
def test_reject_mode_over_1000_jobs_takes_well_under_a_second(embedder):
    spec = {
        "seed": 1,
        "workload": {"model": "lublin03", "jobs": 1000, "max_size": 96, "load": 0.5, "bandwidth": {"mean": 700}},
        "platform": {"kind": "fat_tree"},
        "policy": {"name": "bw_reject", "embedder": embedder},
    }
    started = time.perf_counter()
    simulate(spec)
    assert time.perf_counter() - started < 0.8


@pytest.mark.benchmark
def test_bgmbf_over_the_first_1000_kth_jobs_takes_under_5_seconds(kth_path):
    spec = {
        "seed": 1,
        "workload": {"trace": str(kth_path), "jobs": 1000, "load": 0.9, "bandwidth": {"mean": 250}},
        "platform": {"kind": "fat_tree"},
        "policy": {"name": "bgmbf"},
    }
    started = time.perf_counter()
    simulate(spec)
    assert time.perf_counter() - started < 5.0
