"""Migration- and consolidation-supported backfilling (paper 000; papers 002 and 003).

One family, five members, differing in who may preempt and whether background tiers are used:

=========  ==============  =====================================================================
name       background      who may preempt later-arrived foreground jobs
=========  ==============  =====================================================================
``cmbf``   no              every queued job (Algorithm 1)
``ambf``   no              only the head of the queue (section 4.1.2)
``cmcbf``  yes             every queued or background job (Algorithms 2-4)
``amcbf``  yes             only the head of the queue and the background jobs (Q u J_bg)
``smcbf``  yes             a job whose XFactor has reached the starvation threshold (paper 002)
=========  ==============  =====================================================================

Runtimes are never used (the paper's jobs have unknown execution times); SMCBF's XFactor uses
the requested time. Each pass, at one timestamp:

1. **Foreground phase** (Algorithms 1 and 2). Queued and background jobs are taken in arrival
   order. A job starts in (or, from the background, moves up to) the foreground when enough
   foreground VMs are idle. Otherwise, if it may preempt and idle foreground VMs plus those
   held by later-arrived jobs suffice, those later jobs are displaced, latest arrival first,
   until it fits: each is switched down to a background tier of its own nodes when those VMs
   are all idle (a free priority swap), else suspended back to the queue. This is the CMBF
   property: a job is dispatched as soon as idle nodes plus nodes of later arrivals suffice.
2. **Background phase** (Algorithms 3 and 4; consolidating members only). Queued jobs, in
   arrival order, start in tier 1 (then 2, ...) when enough nodes have that VM idle and an
   estimated load of the tiers above below ``bg_threshold``.

``dispatch`` matchmaking (Algorithm 2, lines 18-30): processes sorted by estimated CPU usage,
descending, onto nodes sorted by the estimated load of the other tiers, ascending. Placing a
foreground process whose node then reaches the threshold evicts (suspends) the background
jobs there (line 25). A background job moving up keeps its own nodes where their foreground VM
is idle (a priority swap); if any process must change node the move is a migration.

The head, where only the head may preempt, is the first job of ``Q u J_bg`` by arrival
(Algorithm 2, line 2: "get the first job in Q u J_bg"), not of the queue alone: a background
job that arrived before every queued job is the head, and may displace later foreground jobs
to move up; the queue's first job then waits behind it.

Choices where the paper is silent are documented on the methods below.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Protocol, cast

import numpy as np

from ..capabilities import MOVES, NODE_VMS, TIERS
from ..compiled_path import nodes_kernels
from ..decisions import Decision, Move, Start, Suspend
from ..fenwick import Fenwick
from ..jobs import QUEUED, RUNNING
from ..params import Param, unit_interval
from ..platforms.nodes import sorted_distinct
from ..ranked import RankedSet
from .base import BasePolicy, Simulation
from .starvation import XFACTOR_THRESHOLD, StarvationThreshold

if TYPE_CHECKING:
    from ..jobs import Job
    from ..platforms.nodes import Nodes

__all__ = [
    "Consolidation",
    "ResourceModel",
    "NodeVms",
    "Cmbf",
    "Ambf",
    "Cmcbf",
    "Amcbf",
    "Smcbf",
    "DEFAULT_BG_THRESHOLD",
    "BG_THRESHOLD",
    "ArrivalOrder",
    "ScanOrder",
]

#: Paper 000, section 3: above 96 % foreground utilisation a background VM gains nothing.
DEFAULT_BG_THRESHOLD = 0.96

_ALL, _HEAD, _STARVED = "all", "head", "starved"

#: The ``bg_threshold`` spec key of the consolidating members.
BG_THRESHOLD = Param(
    unit_interval,
    default=DEFAULT_BG_THRESHOLD,
    doc="background processes only on nodes whose higher tiers are estimated below this",
)


class ScanOrder(Protocol):
    """The order in which the foreground phase examines jobs: job indices, each once, and a job
    pushed back during the scan (displaced in this pass) examined again in its place."""

    def __iter__(self) -> ScanOrder: ...

    def __next__(self) -> int: ...

    def push(self, index: int) -> None:
        """Examine ``index`` again, in its place."""


class ArrivalOrder:
    """The foreground phase's scan: job indices by arrival (ascending), each once; a job pushed
    back during the scan (displaced in this pass) is examined again in its place."""

    __slots__ = ("_heap", "_previous")

    def __init__(self, indices: list[int]) -> None:
        heapq.heapify(indices)
        self._heap = indices
        self._previous = -1

    def __iter__(self) -> ArrivalOrder:
        return self

    def __next__(self) -> int:
        heap = self._heap
        while heap:
            index = heapq.heappop(heap)
            if index != self._previous:
                self._previous = index
                return index
        raise StopIteration

    def push(self, index: int) -> None:
        """Examine ``index`` again, in its place by arrival."""
        heapq.heappush(self._heap, index)


class ResourceModel:
    """What the migration-backfilling skeleton asks of the resources: a collaborator, so that the
    same skeleton (:class:`Consolidation`) serves nodes with tiers and, as BgMBF, fat-tree
    embeddings (:class:`tiersweep.core.policies.embedding.Embeddings`).

    The skeleton calls :meth:`setup` once, the lifecycle hooks as the engine reports changes,
    :meth:`admit` at the start of each pass, and the planning methods during its foreground
    phase. A *plan* is whatever the model needs to remember between planning and dispatching
    (anything but None).

    Args:
        policy: The policy that owns this model (for its parameters and indexes).
    """

    #: Whether the model has background tiers for the skeleton's background phase.
    has_background: bool = False

    def __init__(self, policy: Consolidation) -> None:
        self.policy = policy

    def setup(self, sim: Simulation) -> None:
        """Called once, from the policy's ``setup``."""
        self.sim = sim

    def on_submit(self, job: Job) -> None:
        """``job`` has joined the queue."""

    def on_start(self, job: Job) -> None:
        """``job`` has started."""

    def on_end(self, job: Job, tier: int, nodes: Sequence[int]) -> None:
        """``job`` has left ``nodes`` in ``tier`` (finished, suspended, or moved away)."""

    def admit(self, sim: Simulation) -> Iterator[Decision]:
        """Decisions taken before each pass (e.g. rejecting jobs that could never run)."""
        return iter(())

    def scan_order(self, sim: Simulation, background: list[int]) -> ScanOrder:
        """The jobs the foreground phase examines, in order (default: queued and background
        jobs by arrival)."""
        return ArrivalOrder([*sim.queue, *background])

    def idle_units(self) -> int:
        """Units a job can take without displacing anyone."""
        raise NotImplementedError

    def plan_now(self, job: Job, idle: int) -> object | None:
        """How ``job`` can be dispatched now, or None."""
        raise NotImplementedError

    def plan_displacing(self, job: Job, idle: int, later: int) -> object | None:
        """How ``job`` could be dispatched once the running jobs that arrived after it (holding
        ``later`` units; :meth:`Consolidation.later_jobs` lists them) make way, or None."""
        raise NotImplementedError

    def dispatch(self, job: Job, plan: object) -> Iterator[Decision]:
        """Dispatch ``job`` as planned."""
        raise NotImplementedError

    def displace(self, job: Job, plan: object, displaced: list[int]) -> Iterator[Decision]:
        """Make way for ``job`` as planned (among the later jobs); append the displaced indices."""
        raise NotImplementedError

    def background_phase(self, sim: Simulation) -> Iterator[Decision]:
        """Start queued jobs in background tiers (only if :attr:`has_background`)."""
        return iter(())


class NodeVms(ResourceModel):
    """The resource model of the ``nodes`` platform (capability ``node_vms``): foreground and
    background VMs per node, the paper's matchmaking, evictions and priority swaps."""

    def setup(self, sim: Simulation) -> None:
        super().setup(sim)
        policy = self.policy
        self.platform = cast("Nodes", sim.platform)  # node_vms is the nodes platform's capability
        self.tiers = self.platform.tiers if policy.consolidates else 1
        self.has_background = self.tiers > 1
        self._kernels = nodes_kernels()  # compiled node-index kernels, or None (the Python reference)
        n = self.platform.capacity
        # Nodes with an idle foreground VM, by the estimated load of their lower tiers (the
        # matchmaking order of a foreground dispatch), and per background tier the eligible
        # nodes (that VM idle, the tiers above estimated below the threshold) by the load of
        # the tiers above. Both are kept up to date on the nodes each start or end touches,
        # so a dispatch selects its nodes instead of sorting the machine. On an empty machine
        # every load is 0: eligible iff 0 < threshold.
        self._fg_idle = RankedSet(n, range(n), 0.0)
        self._touched: list[Sequence[int]] = []  # node lists changed since the last _fresh
        self._eligible = [
            RankedSet(n, range(n) if t > 0 and policy.bg_threshold > 0 else range(0), 0.0)
            for t in range(self.platform.tiers)
        ]

    def _load(self, base: np.ndarray, first: int, end: int) -> np.ndarray:
        """Estimated CPU usage of tiers ``first .. end - 1`` on the nodes whose first VM is
        ``base``, summed tier by tier (the same bits as summing each node's list)."""
        vm_est = self.platform.vm_est_view
        total = np.zeros(len(base))
        for tier in range(first, end):
            total = total + vm_est[base + tier]
        return total

    def _refresh(self, nodes: Sequence[int] | np.ndarray) -> None:
        """Re-rank ``nodes`` and re-judge their background eligibility (their occupancy just
        changed)."""
        platform, threshold = self.platform, self.policy.bg_threshold
        if len(nodes) < platform.bulk_from and platform.tiers == 2:
            # The paper's setting on a few nodes: the keys one node at a time (the same
            # values as the general computation below).
            vm_job, vm_est = platform.vm_job, platform.vm_est
            if self._kernels is not None and type(vm_job) is list:  # (its compiled twin)
                ids, idle_keys, eligible_keys = self._kernels.two_tier_node_keys(nodes, vm_job, vm_est, threshold)
                self._fg_idle.update(ids, idle_keys)
                if self.tiers == 2:
                    self._eligible[1].update(ids, eligible_keys)
                return
            idle, eligible = [], []
            for node in nodes:
                fg, bg = 2 * node, 2 * node + 1
                idle.append(np.inf if vm_job[fg] >= 0 else vm_est[bg])
                above = vm_est[fg]
                eligible.append(above if vm_job[bg] < 0 and above < threshold else np.inf)
            ids = np.array(nodes, dtype=np.int64)
            self._fg_idle.update(ids, np.array(idle))
            if self.tiers == 2:
                self._eligible[1].update(ids, np.array(eligible))
            return
        node_ids = np.asarray(nodes, dtype=np.int64)
        base = node_ids * platform.tiers
        vm_job = platform.vm_job_view
        lower = self._load(base, 1, platform.tiers)
        self._fg_idle.update(node_ids, np.where(vm_job[base] >= 0, np.inf, lower))
        for tier in range(1, self.tiers):
            loads = self._load(base, 0, tier)  # of the tiers above
            eligible = (vm_job[base + tier] < 0) & (loads < threshold)
            self._eligible[tier].update(node_ids, np.where(eligible, loads, np.inf))

    # The indexes are brought up to date lazily, just before they are read: the nodes of a
    # move's end and start, of the evictions and the start that caused them, and of the
    # finishes of one instant are re-ranked once, not once per change.
    def on_start(self, job: Job) -> None:
        self._touched.append(job.nodes)

    def on_end(self, job: Job, tier: int, nodes: Sequence[int]) -> None:
        self._touched.append(nodes)

    def _fresh(self) -> None:
        """Re-rank every node touched since the indexes were last read."""
        touched = self._touched
        if not touched:
            return
        self._touched = []
        if len(touched) == 1:
            self._refresh(touched[0])
        elif all(len(nodes) < self.platform.bulk_from for nodes in touched):
            self._refresh(list(dict.fromkeys(node for nodes in touched for node in nodes)))
        else:
            self._refresh(sorted_distinct(np.concatenate([np.asarray(nodes, dtype=np.int64) for nodes in touched])))

    # -- the foreground phase ---------------------------------------------------------------------
    def idle_units(self) -> int:
        """The idle foreground VMs."""
        return self.platform.free_count(0)

    def plan_now(self, job: Job, idle: int) -> object | None:
        return True if job.size <= idle else None

    def plan_displacing(self, job: Job, idle: int, later: int) -> object | None:
        """How many of the later jobs' foreground VMs ``job`` needs."""
        return job.size - idle if job.size <= idle + later else None

    def dispatch(self, job: Job, plan: object) -> Iterator[Decision]:
        return self._dispatch_foreground(job)

    def displace(self, job: Job, plan: object, displaced: list[int]) -> Iterator[Decision]:
        """Free ``plan`` foreground VMs held by jobs that arrived after ``job``.

        As in paper 000's example (section 4.1.1: "First, collect the nodes used by J6, then
        J5, but only evicting J5 is enough for J4, thus, J6 remains"): later jobs are
        collected latest arrival first until their VMs suffice, then any collected job whose
        VMs turn out not to be needed is left running. A displaced job is switched down to a
        background tier of its own nodes when those VMs are all idle (a priority swap,
        Algorithm 2 line 9), else suspended. The paper speaks of "backfilled" jobs; every
        later-arrived foreground job counts here, as its stated policy does ("nodes ...
        occupied by jobs with a later arrival time").
        """
        needed = cast(int, plan)  # plan_displacing's plan: how many VMs are needed
        jobs = self.sim.jobs
        collected: list[Job] = []
        total = 0
        for index in self.policy.later_jobs(job):
            if total >= needed:
                break
            collected.append(jobs[index])
            total += jobs[index].size
        for victim in list(collected):
            if total - victim.size >= needed:
                collected.remove(victim)
                total -= victim.size
        for victim in collected:
            tier = self._free_lower_tier(victim.nodes)
            displaced.append(victim.index)
            if tier is None:
                yield Suspend(victim)
            else:
                yield Move(victim, tier, victim.nodes)

    def _free_lower_tier(self, nodes: Sequence[int]) -> int | None:
        """The highest background tier idle on all ``nodes`` once their foreground leaves it."""
        platform, threshold = self.platform, self.policy.bg_threshold
        if len(nodes) < platform.bulk_from:
            for tier in range(1, self.tiers):
                if all(platform.occupant(n, tier) < 0 and platform.est_load(n, 1, tier) < threshold for n in nodes):
                    return tier
            return None
        base = cast(np.ndarray, nodes) * platform.tiers  # the platform holds a large job's nodes as an array
        for tier in range(1, self.tiers):
            if ((platform.vm_job_view[base + tier] < 0) & (self._load(base, 1, tier) < threshold)).all():
                return tier
        return None

    def _dispatch_foreground(self, job: Job) -> Iterator[Decision]:
        platform = self.platform
        moving = job.state == RUNNING
        keep: list[int] = []
        kept: list[int] = []
        if moving:
            # Keep the processes whose own node has an idle foreground VM (priority swap).
            own, k = job.nodes, platform.tiers
            if len(own) < platform.bulk_from:
                vm_job = platform.vm_job
                keep = [p for p, node in enumerate(own) if vm_job[node * k] < 0]
                kept = [own[p] for p in keep]
            else:
                own_ids = cast(np.ndarray, own)  # the platform holds a large job's nodes as an array
                keep = np.flatnonzero(platform.vm_job_view[own_ids * k] < 0).tolist()
                kept = own_ids[keep].tolist()
        # Idle foreground VMs by the estimated load of the lower tiers, ascending; ties by
        # node id.
        self._fresh()
        free = self._fg_idle.smallest(job.size - len(kept), np.array(kept, dtype=np.int64) if kept else None)
        placement = self._place(job, free, keep, kept)
        yield from self._evictions(job, 0, placement)
        if moving:
            yield Move(job, 0, placement)
        else:
            yield Start(job, 0, placement)

    def _place(self, job: Job, nodes: np.ndarray, keep: Sequence[int] = (), kept: Sequence[int] = ()) -> Sequence[int]:
        """The placement of ``job``: processes ``keep`` on nodes ``kept``, the others on
        ``nodes`` by estimated CPU usage, descending (ties keep process order): the paper's
        matchmaking of the heaviest processes onto the least loaded nodes. A list for a
        small job, an array for a large one (see the platform's ``bulk_from``)."""
        if job.size < self.platform.bulk_from:
            placement = [-1] * job.size
            for p, node in zip(keep, kept):
                placement[p] = node
            order = sorted(range(job.size), key=job.cpu_est.__getitem__, reverse=True)  # stable
            for p, node in zip((p for p in order if placement[p] < 0), nodes.tolist()):
                placement[p] = node
            return placement
        placed = np.full(job.size, -1, dtype=np.int64)
        if keep:
            placed[list(keep)] = kept
        ranked = np.argsort(-np.asarray(job.cpu_est, dtype=float), kind="stable")  # stable: ties keep process order
        placed[ranked[placed[ranked] < 0]] = nodes
        return cast(Sequence[int], placed)  # an array of node ids, which the platform takes as such

    def _evictions(self, job: Job, tier: int, placement: Sequence[int]) -> Iterator[Decision]:
        """Suspend the lower-tier jobs that placing ``job`` in ``tier`` on ``placement`` pushes
        to or above the threshold (paper 000, Algorithm 2, line 25: "evict the background job
        if the utilization of j_i is above the threshold"; with k tiers, every tier below the
        placement is judged by the estimated load of the tiers above it), latest arrival first."""
        platform, threshold = self.platform, self.policy.bg_threshold
        k = platform.tiers
        if tier + 1 >= k:
            return
        if len(placement) < platform.bulk_from:
            victims = self._victims_few(job, tier, placement, threshold)
        else:
            # _place makes an array for a large job.
            victims = self._victims_many(job, tier, cast(np.ndarray, placement), threshold)
        jobs = self.sim.jobs
        for index in sorted(victims, reverse=True):
            self.policy.evicted.append(index)
            yield Suspend(jobs[index])

    def _victims_few(self, job: Job, tier: int, placement: Sequence[int], threshold: float) -> set[int]:
        """:meth:`_evictions`' victims, one process at a time."""
        platform = self.platform
        vm_job, vm_est, k = platform.vm_job, platform.vm_est, platform.tiers
        victims: set[int] = set()
        for p, node in enumerate(placement):
            base = node * k
            # Estimated load of the tiers down to ``tier`` once the job is placed (its own
            # VMs elsewhere on this node are vacated by the move).
            above = job.cpu_est[p] + sum(vm_est[base + t] for t in range(tier) if vm_job[base + t] != job.index)
            for lower in range(tier + 1, k):
                occupant = vm_job[base + lower]
                if occupant < 0 or occupant == job.index:
                    continue  # idle, or vacated by this very move
                if above >= threshold:
                    victims.add(occupant)
                else:
                    above += vm_est[base + lower]
        return victims

    def _victims_many(self, job: Job, tier: int, placement: np.ndarray, threshold: float) -> set[int]:
        """:meth:`_victims_few`, vectorised over the processes (the same sums, tier by tier)."""
        platform = self.platform
        vm_job, vm_est, k = platform.vm_job_view, platform.vm_est_view, platform.tiers
        base = placement * k
        others = np.zeros(len(base))
        for t in range(tier):
            others = others + np.where(vm_job[base + t] != job.index, vm_est[base + t], 0.0)
        above = np.asarray(job.cpu_est, dtype=float) + others
        victims: list[np.ndarray] = []
        for lower in range(tier + 1, k):
            occupant = vm_job[base + lower]
            present = (occupant >= 0) & (occupant != job.index)
            over = above >= threshold
            victims.append(occupant[present & over])
            above = np.where(present & ~over, above + vm_est[base + lower], above)
        return set(np.concatenate(victims).tolist())

    # -- the background phase ---------------------------------------------------------------------
    def background_phase(self, sim: Simulation) -> Iterator[Decision]:
        self._fresh()
        eligible = self._eligible
        tiers = range(1, self.tiers)
        room = max(len(eligible[t]) for t in tiers)
        if room == 0:
            return
        for job in list(sim.queue.values()):
            if job.size > room:
                continue
            for tier in tiers:
                if job.size <= len(eligible[tier]):
                    yield from self._dispatch_background(job, tier)
                    self._fresh()
                    room = max(len(eligible[t]) for t in tiers)
                    if room == 0:
                        return
                    break

    def _dispatch_background(self, job: Job, tier: int) -> Iterator[Decision]:
        # Nodes by the estimated load of the tiers above, ascending; ties by node id (the
        # background phase has brought the index up to date).
        placement = self._place(job, self._eligible[tier].smallest(job.size))
        yield from self._evictions(job, tier, placement)
        yield Start(job, tier, placement)


class Consolidation(BasePolicy):
    """The shared skeleton. Subclasses set :attr:`consolidates`, :attr:`preemption` and, for
    other resources than nodes, :attr:`resource_model`.

    Args:
        bg_threshold: A node takes a background process only while the estimated CPU usage of
            its higher tiers is below this.
        xfactor_threshold: SMCBF's starvation threshold: a number, or ``"adaptive"``.
    """

    #: Per-node VM queries for placement, and moves for priority swaps and migrations.
    requires = frozenset({NODE_VMS, MOVES})
    #: Measured 7-14x EASY on 20,000 FWorkload jobs (paper 000's loads) and CTC-SP2.
    relative_cost = 10.0
    #: Without background tiers, less grows with a job's size (per process, compiled: 0.008 of
    #: EASY's per job on Lublin's jobs on 93,312 nodes, 0.002 on CEA-Curie; see
    #: CONSOLIDATING_PROCESS_COST); compiled, the cost per job is EASY's (FWorkload, 320 nodes).
    process_cost = 0.04
    compiled_costs = (1.0, 0.003)
    #: Whether background tiers are used.
    consolidates: bool = False
    #: Who may preempt: ``"all"``, ``"head"`` or ``"starved"``.
    preemption: str = _ALL
    #: The resources' collaborator class (built with the policy in ``setup``).
    resource_model: type[ResourceModel] = NodeVms

    def __init__(self, bg_threshold: float = DEFAULT_BG_THRESHOLD, xfactor_threshold: float | str = "adaptive") -> None:
        self.bg_threshold = float(bg_threshold)
        self.starvation = StarvationThreshold(xfactor_threshold)
        self.resources = self.resource_model(self)

    # -- indexes, kept up to date by the engine's hooks -----------------------------------------
    def setup(self, sim: Simulation) -> None:
        self.sim = sim
        self._fg_later = Fenwick(len(sim.jobs))  # foreground units held, by arrival rank
        self._fg: list[int] = []  # indices of foreground jobs, sorted
        self._bg: list[int] = []  # indices of background jobs, sorted
        #: Jobs evicted from a background tier in the latest pass (for auditing).
        self.evicted: list[int] = []
        self.resources.setup(sim)

    def _enter(self, job: Job) -> None:
        if job.tier == 0:
            self._fg_later.add(job.index, job.size)
            bisect.insort(self._fg, job.index)
        else:
            bisect.insort(self._bg, job.index)

    def _leave(self, job: Job, tier: int) -> None:
        if tier == 0:
            self._fg_later.add(job.index, -job.size)
            del self._fg[bisect.bisect_left(self._fg, job.index)]
        else:
            del self._bg[bisect.bisect_left(self._bg, job.index)]

    def on_submit(self, job: Job) -> None:
        self.resources.on_submit(job)

    def on_start(self, job: Job) -> None:
        self._enter(job)
        self.resources.on_start(job)

    def on_finish(self, job: Job) -> None:
        self._leave(job, job.tier)
        self.resources.on_end(job, job.tier, job.nodes)
        self.starvation.completed(job)

    def on_suspend(self, job: Job) -> None:
        self._leave(job, job.tier)
        self.resources.on_end(job, job.tier, job.nodes)

    def on_move(self, job: Job, tier: int, nodes: Sequence[int]) -> None:
        self._leave(job, tier)
        self._enter(job)
        self.resources.on_end(job, tier, nodes)
        self.resources.on_start(job)

    # -- who may preempt ------------------------------------------------------------------------
    def head(self) -> int | None:
        """The head of ``Q u J_bg``: the earliest-arrived job that is queued or running in a
        background tier (paper 000, Algorithm 2, line 2), or None."""
        queue = self.sim.queue
        first = next(iter(queue)) if queue else None
        if self._bg and (first is None or self._bg[0] < first):
            return self._bg[0]
        return first

    def may_preempt(self, job: Job, now: float) -> bool:
        """Whether ``job`` may displace later-arrived foreground jobs now."""
        if self.preemption == _ALL:
            return True
        if self.preemption == _HEAD:
            return job.index == self.head()
        return self.starvation.starved(job, now)

    def later_jobs(self, job: Job) -> Iterator[int]:
        """Indices of the running foreground jobs that arrived after ``job``, latest first
        (lazily: callers usually need only the latest few)."""
        for index in reversed(self._fg):
            if index <= job.index:
                return
            yield index

    # -- the pass ---------------------------------------------------------------------------------
    def decide(self, sim: Simulation) -> Iterator[Decision]:
        yield from self.resources.admit(sim)
        queue = sim.queue
        if not queue and not self._bg:
            return
        self.evicted = []
        background = self.resources.has_background
        while True:
            yield from self._foreground_phase(sim)
            if not background or not queue:
                return
            head = self.head()
            yield from self.resources.background_phase(sim)
            # Where only the head may preempt, a new head gets its turn in this pass. (A head
            # the background phase starts stays the head, in J_bg; the loop is kept for
            # resource models whose background phase could change it. The head's arrival
            # rank only grows, so this ends.)
            if self.preemption != _HEAD or not queue or self.head() == head:
                return

    def _foreground_phase(self, sim: Simulation) -> Iterator[Decision]:
        """Queued and background jobs in the resource model's order (by arrival on nodes);
        displaced jobs rejoin the scan, since they arrived after the job that displaced them
        (paper 000, Algorithm 1, line 14)."""
        jobs, now = sim.jobs, sim.now
        head_only = self.preemption == _HEAD
        resources = self.resources
        order = resources.scan_order(sim, self._bg)
        idle_units, plan_now, dispatch = resources.idle_units, resources.plan_now, resources.dispatch
        for index in order:
            job = jobs[index]
            if not (job.state == QUEUED or (job.state == RUNNING and job.tier > 0)):
                continue  # moved up or displaced earlier in this pass
            idle = idle_units()
            plan = plan_now(job, idle)
            if plan is not None:
                yield from dispatch(job, plan)
                continue
            if head_only and index != self.head():
                if idle == 0:
                    return  # past the head nobody may preempt, and nothing is idle
                continue
            later = self._fg_later.after(index)
            if idle + later == 0:
                return  # nothing later in arrival order can reach the foreground either
            plan = resources.plan_displacing(job, idle, later)
            if plan is not None and (head_only or self.may_preempt(job, now)):  # (the head: checked above)
                displaced: list[int] = []
                yield from resources.displace(job, plan, displaced)
                yield from dispatch(job, plan)
                for victim in displaced:
                    order.push(victim)


#: The costs of the policies with background tiers: each restart of a suspended background
#: job places all its processes again. Per process, against EASY's per job, compiled: 0.1 on
#: 20,000 Lublin jobs on 93,312 nodes at load 0.8 (restarts of wide jobs make 79 % of the
#: placements), 0.03 on 1,000 of them, 0.007 on the first 50,000 CEA-Curie jobs. No one figure
#: fits every workload; this one, nearer the real log's, is within 2x of the last two. The
#: Python path's is some 14 times the compiled one's. Per job, compiled: 1-1.5x EASY on 320
#: nodes.
CONSOLIDATING_PROCESS_COST = 0.2
CONSOLIDATING_COMPILED_COSTS = (1.2, 0.015)


class Cmbf(Consolidation):
    """Conservative migration-supported backfilling (paper 000, Algorithm 1)."""

    name = "cmbf"


class Ambf(Consolidation):
    """Aggressive migration-supported backfilling: only the queue head may preempt."""

    name = "ambf"
    preemption = _HEAD


class Cmcbf(Consolidation):
    """CMBF with background tiers (paper 000, Algorithms 2-4)."""

    name = "cmcbf"
    params = {"bg_threshold": BG_THRESHOLD}
    requires = Consolidation.requires | {TIERS}
    consolidates = True
    process_cost = CONSOLIDATING_PROCESS_COST
    compiled_costs = CONSOLIDATING_COMPILED_COSTS


class Amcbf(Consolidation):
    """AMBF with background tiers: only the queue head may preempt."""

    name = "amcbf"
    params = {"bg_threshold": BG_THRESHOLD}
    requires = Consolidation.requires | {TIERS}
    consolidates = True
    process_cost = CONSOLIDATING_PROCESS_COST
    compiled_costs = CONSOLIDATING_COMPILED_COSTS
    preemption = _HEAD


class Smcbf(Consolidation):
    """Consolidation where a job may preempt once its XFactor reaches the starvation threshold."""

    name = "smcbf"
    params = {"bg_threshold": BG_THRESHOLD, "xfactor_threshold": XFACTOR_THRESHOLD}
    requires = Consolidation.requires | {TIERS}
    consolidates = True
    process_cost = CONSOLIDATING_PROCESS_COST
    compiled_costs = CONSOLIDATING_COMPILED_COSTS
    preemption = _STARVED
