"""KEASY and REASY: EASY backfilling in the foreground of tiered nodes, with a background tier
for the jobs EASY does not start.

Liu, Chen, Qiu, Cai and Huang, "Scheduling parallel jobs using migration and consolidation in
the cloud", Mathematical Problems in Engineering 2012 (Algorithms 1-3); surveyed by paper 002,
sections II.F and II.G. Each pass, at one timestamp, over the queued and background jobs in
arrival order (``Q u J_bg``):

1. **FCFS.** Jobs are deployed to the foreground in arrival order while enough foreground VMs
   are idle. Deploying a background job switches it up on its own nodes when all of their
   foreground VMs are idle (a free priority swap, ``Move`` with unchanged nodes); otherwise
   KEASY kills it (``Kill``: its progress is lost) and starts it again, from zero, on idle
   foreground VMs elsewhere, while REASY cannot deploy it: "once a job is deployed onto
   background VMs of a set of processors, its run is pinned onto this set of processors. Only
   all the foreground VMs of this set of processors are available can this job run in the
   foreground" (paper 002, II.G).
2. **Reservation and backfilling.** The first job not deployed holds EASY's reservation: the
   shadow time and the extra foreground VMs. A later job is deployed when enough foreground
   VMs are idle and it is estimated to end by the shadow or fits in the extra VMs (which it
   then uses up). For REASY's head running in the background, paper 002's wording: "the
   shadow time is the last termination time of the jobs running in its foreground VMs; the
   extra foreground VMs are the ones now idle and no process of the job is running in their
   background VMs"; a job using them is placed on them.
3. **Background.** Queued jobs, shortest estimate first, start in a background tier when
   enough nodes have that VM idle and the tiers above estimated below ``bg_threshold`` (paper
   000's 96 %), placed by paper 000's matchmaking (heaviest processes onto the least loaded
   nodes); tier 1 first, then 2, ... with more tiers.

The family: EASY's reservation rule and its index of the running jobs by estimated end
(:class:`~tiersweep.core.policies.backfill.Easy`, subclassed), with the consolidation policies'
resource model (:class:`~tiersweep.core.policies.consolidation.NodeVms`: the ranked indexes of
idle foreground and eligible background VMs and the matchmaking) for where jobs go. Unlike
the consolidation policies, nothing here suspends or displaces a foreground job, and a
background job is never evicted: it runs on at the rate the progress model gives it.

Choices where the sources are silent:

* FCFS stops at the first job that cannot be deployed, REASY's pinned background job
  included (the source's loop breaks only on too few idle VMs; going past a job that then
  holds the reservation would let the jobs behind it take its VMs unchecked).
* A job is estimated to last its ``estimate``, a background job switched up on its own nodes
  what its estimate leaves after its progress, a KEASY job started again its whole estimate.
* A job past its estimated end holds its VMs until the next instant (as in EASY).
* REASY's extra VMs are paper 002's (idle foreground VMs of nodes other than the head's);
  the source's count, ``idle + N_s - N_j`` with ``N_s`` the size of the jobs on the head's
  foreground VMs, is the same number when those jobs run on the head's nodes only, and
  larger (counting VMs that are not idle now) when they spread beyond them.
* A backfilled job that ends by the shadow is placed by the matchmaking on any idle
  foreground VMs; one that uses REASY's extra VMs only on them.
* Under KEASY the head's reservation is EASY's on any foreground VMs even while it runs in the
  background: it can always be killed and started elsewhere.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Generator, Iterator, Sequence
from typing import TYPE_CHECKING, ClassVar, NamedTuple, cast

import numpy as np

from ..capabilities import MOVES, NODE_VMS, TIERS
from ..decisions import Decision, Kill, Move, Start
from ..jobs import QUEUED
from .backfill import Easy
from .base import Simulation
from .consolidation import BG_THRESHOLD, DEFAULT_BG_THRESHOLD, NodeVms

if TYPE_CHECKING:
    from ..jobs import Job

__all__ = ["TwoTierEasy", "Keasy", "Reasy", "Reservation", "TieredVms"]


class Reservation(NamedTuple):
    """The reservation of the latest pass (for auditing and tests).

    Attributes:
        job: Index of the job holding it.
        shadow: The shadow time.
        extra: The extra foreground VMs when it was made (before backfilling).
        pinned: REASY, head running in the background: its nodes (their foreground VMs are
            the reserved ones); None otherwise (any foreground VMs will do).
    """

    job: int
    shadow: float
    extra: int
    pinned: tuple[int, ...] | None


class TieredVms(NodeVms):
    """:class:`NodeVms` for KEASY and REASY: the same ranked indexes and matchmaking, asked for
    placements only (no evictions, no displacement)."""

    def foreground(self, job: Job, skip: np.ndarray | None = None) -> Sequence[int]:
        """The placement of ``job`` on idle foreground VMs, by the estimated load of their
        lower tiers (ascending, ties by node id), leaving out the nodes in ``skip``."""
        self._fresh()
        return self._place(job, self._fg_idle.smallest(job.size, skip))

    def own_foreground_idle(self, job: Job) -> bool:
        """Whether every foreground VM of the nodes ``job`` runs on is idle."""
        platform = self.platform
        nodes, k = job.nodes, platform.tiers
        if len(nodes) < platform.bulk_from:
            vm_job = platform.vm_job
            if self._kernels is not None and type(vm_job) is list:  # (its compiled twin)
                return self._kernels.idle_in_tier(vm_job, nodes, k, True)
            return all(vm_job[node * k] < 0 for node in nodes)
        ids = cast(np.ndarray, nodes)  # the platform holds a large job's nodes as an array
        return bool((platform.vm_job_view[ids * k] < 0).all())

    def idle_foreground_among(self, nodes: Sequence[int]) -> int:
        """How many of ``nodes`` have an idle foreground VM."""
        platform = self.platform
        k = platform.tiers
        if len(nodes) < platform.bulk_from:
            vm_job = platform.vm_job
            if self._kernels is not None and type(vm_job) is list:  # (its compiled twin)
                return self._kernels.idle_in_tier(vm_job, nodes, k, False)
            return sum(vm_job[node * k] < 0 for node in nodes)
        return int(np.count_nonzero(platform.vm_job_view[np.asarray(nodes) * k] < 0))

    def foreground_jobs_on(self, nodes: Sequence[int]) -> set[int]:
        """Indices of the jobs running in the foreground VMs of ``nodes``."""
        platform = self.platform
        k = platform.tiers
        if len(nodes) < platform.bulk_from:
            vm_job = platform.vm_job
            return {vm_job[node * k] for node in nodes} - {-1}
        occupants = platform.vm_job_view[np.asarray(nodes) * k]
        return set(occupants[occupants >= 0].tolist())

    def background_tier(self, job: Job) -> int | None:
        """The first background tier with enough eligible nodes for ``job``, or None."""
        self._fresh()
        for tier in range(1, self.tiers):
            if job.size <= len(self._eligible[tier]):
                return tier
        return None

    def background_room(self) -> int:
        """The most eligible nodes of any background tier (0: no background start possible)."""
        self._fresh()
        return max((len(self._eligible[t]) for t in range(1, self.tiers)), default=0)

    def background(self, job: Job, tier: int) -> Sequence[int]:
        """The placement of ``job`` in background ``tier``: eligible nodes by the estimated
        load of the tiers above (ascending, ties by node id)."""
        self._fresh()
        return self._place(job, self._eligible[tier].smallest(job.size))


class TwoTierEasy(Easy):
    """The shared skeleton of KEASY and REASY; subclasses set :attr:`may_kill`.

    Args:
        bg_threshold: A node takes a background process only while the estimated CPU usage of
            its higher tiers is below this.

    Attributes:
        reservation: The reservation made in the latest pass (None when nothing was blocked).
    """

    params = {"bg_threshold": BG_THRESHOLD}
    #: Node VMs to place on and query, moves for priority swaps, and background tiers.
    requires = frozenset({NODE_VMS, MOVES, TIERS})
    #: Measured 6-11x EASY on 20,000 CTC-SP2 and FWorkload jobs on 320 nodes x 2 tiers.
    relative_cost = 8.0
    #: Whether a background job that must run in the foreground elsewhere is killed (KEASY)
    #: rather than left pinned to its nodes (REASY).
    may_kill: ClassVar[bool] = False
    #: Read by the resource model: background tiers are used.
    consolidates = True

    def __init__(self, bg_threshold: float = DEFAULT_BG_THRESHOLD) -> None:
        super().__init__()
        self.bg_threshold = float(bg_threshold)
        # NodeVms reads only bg_threshold and consolidates of its policy here (no displacing, no evictions).
        self.resources = TieredVms(self)  # type: ignore[arg-type]
        self.reservation: Reservation | None = None

    def setup(self, sim: Simulation) -> None:
        self.sim = sim
        self._bg: list[int] = []  # indices of the jobs running in a background tier, sorted
        self.resources.setup(sim)

    # -- indexes --------------------------------------------------------------------------
    # EASY's index of running jobs by estimated end holds the foreground jobs only: the
    # reservation is made on foreground VMs.
    def on_start(self, job: Job) -> None:
        if job.tier == 0:
            super().on_start(job)
        else:
            bisect.insort(self._bg, job.index)
        self.resources.on_start(job)

    def on_finish(self, job: Job) -> None:
        self._leave(job, job.tier, job.nodes)

    def on_suspend(self, job: Job) -> None:
        """A kill (nothing here suspends): the job left its VMs."""
        self._leave(job, job.tier, job.nodes)

    def on_move(self, job: Job, tier: int, nodes: Sequence[int]) -> None:
        self._leave(job, tier, nodes)
        if job.tier == 0:
            # A background job switched up: expected to end when what its estimate leaves
            # after its progress has run (its start time says nothing about that).
            remaining = max(0.0, job.estimate - job.progress)
            key = (self.sim.now + remaining, job.index, job)
            self._end_key[job.index] = key
            bisect.insort(self._ends, key)
            self.invalidate()
        else:
            bisect.insort(self._bg, job.index)
        self.resources.on_start(job)

    def _leave(self, job: Job, tier: int, nodes: Sequence[int]) -> None:
        if tier == 0:
            super().on_finish(job)
        else:
            del self._bg[bisect.bisect_left(self._bg, job.index)]
        self.resources.on_end(job, tier, nodes)

    # -- the pass -------------------------------------------------------------------------
    def decide(self, sim: Simulation) -> Iterator[Decision]:
        queue = sim.queue
        self.reservation = None
        if not queue and not self._bg:
            return
        jobs = sim.jobs
        platform = sim.platform
        order = sorted([*queue, *self._bg])  # Q u J_bg by arrival
        # Step 1: deploy in arrival order while the foreground has room.
        first = 0
        while first < len(order):
            job = jobs[order[first]]
            if job.size > platform.free_count(0):
                break
            deployed = yield from self._deploy(job)
            if not deployed:
                break
            first += 1
        # Step 2: the first job not deployed holds the reservation; the later ones backfill.
        if first < len(order):
            yield from self._reserve(sim, jobs[order[first]], [jobs[i] for i in order[first + 1 :]])
        # Step 3: the queued jobs in background VMs, shortest estimate first.
        if queue and self.resources.background_room():
            yield from self._background(list(queue.values()))

    def _deploy(self, job: Job, skip: np.ndarray | None = None) -> Generator[Decision, None, bool]:
        """Deploy ``job`` to the foreground (the source's ``Deploy``); return whether it was.
        A new placement leaves out the nodes in ``skip``."""
        resources = self.resources
        if job.state == QUEUED:
            yield Start(job, 0, resources.foreground(job, skip))
            return True
        if resources.own_foreground_idle(job):
            yield Move(job, 0, job.nodes)  # a priority swap on its own nodes
            return True
        if not self.may_kill:
            return False  # pinned to its nodes
        yield Kill(job)
        yield Start(job, 0, resources.foreground(job, skip))
        return True

    def _reserve(self, sim: Simulation, head: Job, waiting: list[Job]) -> Iterator[Decision]:
        """Make the reservation of ``head`` and deploy the ``waiting`` jobs that keep it."""
        now = sim.now
        platform = sim.platform
        resources = self.resources
        free = platform.free_count(0)
        pinned: np.ndarray | None = None
        if head.state != QUEUED and not self.may_kill:
            pinned = np.array(head.nodes, dtype=np.int64)
            shadow = self._pinned_shadow(now, head)
            extra = free - resources.idle_foreground_among(head.nodes)
        else:
            shadow, extra, _ = self.shadow(now, free, head.size)
        self.reservation = Reservation(head.index, shadow, extra, None if pinned is None else tuple(pinned.tolist()))
        for job in waiting:
            if free == 0:
                break
            if job.size > free:
                continue
            if job.state == QUEUED:
                duration = job.estimate
            elif resources.own_foreground_idle(job):
                duration = max(0.0, job.estimate - job.progress)
                if pinned is not None and now + duration > shadow and np.isin(job.nodes, pinned).any():
                    continue  # would keep the head's VMs past the shadow
            elif self.may_kill:
                duration = job.estimate
            else:
                continue  # pinned to nodes whose foreground is busy
            by_shadow = now + duration <= shadow
            if not by_shadow and job.size > extra:
                continue
            yield from self._deploy(job, None if by_shadow else pinned)
            free = platform.free_count(0)
            if pinned is not None:
                extra = free - resources.idle_foreground_among(head.nodes)
            elif not by_shadow:
                extra -= job.size

    def _pinned_shadow(self, now: float, head: Job) -> float:
        """REASY's shadow for ``head`` running in the background: the last estimated end of
        the jobs in the foreground VMs of its nodes."""
        ends = [self._end_key[index][0] for index in self.resources.foreground_jobs_on(head.nodes)]
        shadow = max(ends) if ends else now
        return shadow if shadow > now else math.nextafter(now, math.inf)

    def _background(self, queued: list[Job]) -> Iterator[Decision]:
        """Start queued jobs in background tiers, shortest estimate first (ties by arrival)."""
        resources = self.resources
        room = resources.background_room()
        for job in sorted(queued, key=lambda j: (j.estimate, j.index)):
            if job.size > room:
                continue
            tier = resources.background_tier(job)
            if tier is None:
                continue
            yield Start(job, tier, resources.background(job, tier))
            room = resources.background_room()
            if room == 0:
                return


class Keasy(TwoTierEasy):
    """KEASY: a background job that must run in the foreground elsewhere is killed and
    started again there, from zero."""

    name = "keasy"
    may_kill = True
    #: Per process against EASY's per job, compiled: 0.027 on 20,000 Lublin jobs on 93,312 nodes
    #: at load 0.8, 0.004 on the first 50,000 CEA-Curie jobs; these figures lie between, as the
    #: consolidation policies' do. Per job, compiled: about EASY's on 320 nodes.
    process_cost = 0.1
    compiled_costs = (1.1, 0.008)


class Reasy(TwoTierEasy):
    """REASY: no kill; a background job moves up only on its own nodes, and a reservation for
    it is made on their foreground VMs."""

    name = "reasy"
    may_kill = False
    #: Per process, compiled: 0.065 on the same Lublin jobs, 0.005 on CEA-Curie (as KEASY's).
    process_cost = 0.17
    compiled_costs = (1.0, 0.012)
