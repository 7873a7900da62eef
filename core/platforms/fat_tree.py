"""Platform ``fat_tree``: VM slots in a k-ary fat-tree network with guaranteed bandwidth (paper 004).

The data centre (paper 004, section 3.1; DESIGN 4.3) is a fat-tree with parameter ``k`` (even):
``k`` pods, each of ``k/2`` edge and ``k/2`` aggregation switches; ``(k/2)^2`` core switches;
``k/2`` servers per edge switch, so ``k^3/4`` servers (54 for k = 6), each with ``slots`` VM
slots (default 8: 432 slots). Every link has the same capacity (default 1000 Mbps). The state
is the residual slots of each server and the residual bandwidth of each link.

A job asks for a time-aware virtual cluster: ``size`` VMs of ``bandwidth`` Mbps each (hose
model), for its duration. A :class:`Placement` puts ``m_s`` of its VMs on each server ``s``
and its virtual switch on one physical switch (paper 004, eq. 3-5); traffic runs on the tree
of paths from the servers up to that switch. On the tree rooted at the virtual switch the
links are:

* the server's link to its edge switch;
* below an aggregation or core root, the edge switch's link to aggregation switch ``i`` of
  its pod, where ``i`` is the root's position (aggregation switch ``i`` of its pod, or core
  switch ``i * k/2 + j``, which is wired to aggregation switch ``i`` of every pod);
* below a core root, the aggregation switch's link to that core.

VMs on one server talk over its loopback for free. What a link must carry is set by
``platform.bandwidth_check`` (:data:`BANDWIDTH_CHECKS`):

``hose`` (default)
    The hose-model bound on the link as a whole: a link that separates ``m`` of the job's VMs
    from the other ``N - m`` carries ``min(m, N - m) * B``, ``m`` counting every VM below it
    (on the server, under the edge switch, in the pod). :func:`hose_loads`.
``per_server``
    Paper 004's equation 6 as stated and as Algorithm 1 (lines 12-17) applies it: each server
    ``s`` on its own, ``min(m_s, N - m_s) * B`` (``m_s`` its VMs) must fit the residual of
    every link on its path to the virtual switch, with the residuals as they were before the
    job; the servers of one job are not added up. A link so carries the largest such amount
    of the job's servers below it, which is what is reserved (so the check and the
    reservation agree, and no link is ever promised more than its capacity).
    :func:`per_server_loads`. On a server's own link the two checks agree. Above it,
    ``per_server`` is looser when several servers below a link each hold a few of a large
    job's VMs (a job spread one VM per server over all 54 servers needs ``B`` on every link;
    the hose bound needs ``3 B`` on an edge switch's uplink and ``9 B`` on a pod's) and
    stricter when most of the job is below the link (a link with 6 of 7 VMs below it, 3 + 3 on
    two servers, carries ``B`` under ``hose``, ``3 B`` under ``per_server``). With
    ``per_server`` and the paper's size-dependent demands (``workload.bandwidth: {formula:
    paper, whole_vms: true}``) every job fits the idle tree, spread over its servers.

Bandwidths are kept as multiples of 1/1024 Mbps (a demand is rounded up to the next multiple,
the link capacity to the nearest): sums and differences of such numbers are exact in binary
floating point, so a link's residual never drifts, a fully released link is back at exactly
its capacity, and "fits" is an exact comparison, never a tolerance.

A job holds its slots and bandwidth from its start until it finishes or is suspended; it runs
at rate 1 all the while (its bandwidth is guaranteed). The platform never chooses a
placement: an embedder (:mod:`tiersweep.core.platforms.embedders`) proposes one and the engine has
:meth:`FatTree.check_start` verify it before anything is applied.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from ..capabilities import EMBEDDING, TIME_TRACKING
from ..params import Param, int_in, is_whole, number_at_least, one_of
from ..sums import reproducible_dot
from .base import BasePlatform

if TYPE_CHECKING:
    from ..jobs import Job

__all__ = [
    "FatTree",
    "FatTreeState",
    "Topology",
    "Placement",
    "Request",
    "hose_loads",
    "per_server_loads",
    "link_loads",
    "could_ever_fit",
    "quantize",
    "EDGE",
    "AGGREGATION",
    "CORE",
    "FAT_TREE_PARAMS",
    "BANDWIDTH_CHECKS",
    "HOSE",
    "PER_SERVER",
]

#: Levels of the switch that hosts a job's virtual switch.
EDGE, AGGREGATION, CORE = 1, 2, 3
_LEVEL_NAMES = {EDGE: "edge", AGGREGATION: "aggregation", CORE: "core"}
#: Bandwidth resolution: 1/1024 Mbps (about 1 kbit/s).
_STEPS_PER_MBPS = 1024
#: The values of ``platform.bandwidth_check``: what a job's placement must leave on each link
#: (see the module docstring).
HOSE, PER_SERVER = "hose", "per_server"
BANDWIDTH_CHECKS = (HOSE, PER_SERVER)
#: What a running job holds: ``(server, VMs)`` pairs and ``(link, Mbps)`` pairs.
_Reservation = tuple[tuple[tuple[int, int], ...], list[tuple[int, float]]]


def quantize(mbps: float) -> float:
    """``mbps`` rounded up to a multiple of 1/1024 Mbps (the platform's bandwidth unit)."""
    return math.ceil(mbps * _STEPS_PER_MBPS) / _STEPS_PER_MBPS


class Request(NamedTuple):
    """What an embedder is asked to place.

    Attributes:
        size: Number of VMs (N).
        bandwidth: Per-VM demand in Mbps (B), already quantized by :meth:`FatTree.demand`.
        bmax: The largest demand seen so far (AdaBa's ``B_max``); embedders use
            ``max(bmax, bandwidth)``, as Algorithm 1, line 1 does.
    """

    size: int
    bandwidth: float
    bmax: float = 0.0


class Placement(tuple):
    """Where a job runs: the server of each of its VMs (ascending), plus the switch that hosts
    its virtual switch.

    It is a tuple of server ids, one per VM, so the engine and the records treat it as any
    platform's node list; :meth:`FatTree.check_start` re-derives everything from those ids and
    the root, never trusting :attr:`counts`.

    Attributes:
        counts: ``(server, VMs there)`` pairs, ascending by server.
        level: 1 (edge), 2 (aggregation) or 3 (core): the level of the root switch.
        switch: The root's index within its level (edge ``e``; aggregation ``pod * k/2 + i``;
            core ``i * k/2 + j``).
    """

    counts: tuple[tuple[int, int], ...]
    level: int
    switch: int

    def __new__(cls, counts: Iterable[tuple[int, int]], level: int, switch: int) -> Placement:
        pairs = tuple(sorted(counts))
        self = super().__new__(cls, [server for server, m in pairs for _ in range(m)])
        self.counts = pairs
        self.level = level
        self.switch = switch
        return self

    def __reduce__(self):
        return (Placement, (self.counts, self.level, self.switch))

    def __repr__(self) -> str:
        return f"Placement({list(self.counts)}, level={self.level}, switch={self.switch})"


class Topology:
    """The fixed wiring of a k-ary fat-tree: ids of servers, switches and links, and the rule
    (:attr:`check`) by which a placement loads the links.

    Servers ``0 .. k^3/4 - 1``: server ``s`` hangs off edge switch ``s // (k/2)``, which is in
    pod ``s // (k/2)^2``. Links are numbered in one flat range: server links first (link ``s``
    joins server ``s`` to its edge switch), then edge-to-aggregation links (:meth:`edge_link`),
    then aggregation-to-core links (:meth:`agg_link`).

    The check lives here, with the wiring, because everything that reckons loads (the
    platform, every embedder, :func:`could_ever_fit`, a policy's "what if" copies of the
    state) already holds the topology: none of them can then disagree with the platform.
    """

    __slots__ = (
        "k",
        "h",
        "slots",
        "link_mbps",
        "check",
        "servers",
        "edges",
        "aggs",
        "cores",
        "pods",
        "links",
        "edge_base",
        "agg_base",
        "edge_servers",
        "pod_servers",
        "all_servers",
    )

    def __init__(self, k: int, slots: int, link_mbps: float, check: str = HOSE) -> None:
        if isinstance(k, bool) or not isinstance(k, int) or k < 2 or k % 2:
            raise ValueError(f"k must be an even integer >= 2, got {k!r}")
        if isinstance(slots, bool) or not isinstance(slots, int) or slots < 1:
            raise ValueError(f"slots must be a positive integer, got {slots!r}")
        capacity = round(link_mbps * _STEPS_PER_MBPS) / _STEPS_PER_MBPS
        if not capacity > 0 or not math.isfinite(capacity):
            raise ValueError(f"link_mbps must be a positive number (at least 1/1024), got {link_mbps!r}")
        if check not in BANDWIDTH_CHECKS:
            raise ValueError(f"bandwidth_check must be one of {', '.join(BANDWIDTH_CHECKS)}, got {check!r}")
        h = k // 2
        self.k, self.h, self.slots, self.link_mbps, self.check = k, h, slots, capacity, check
        self.servers = k * h * h
        self.edges = self.aggs = k * h
        self.cores = h * h
        self.pods = k
        self.edge_base = self.servers
        self.agg_base = self.servers + self.edges * h
        self.links = self.agg_base + self.aggs * h
        self.edge_servers = [tuple(range(e * h, e * h + h)) for e in range(self.edges)]
        self.pod_servers = [tuple(range(p * h * h, (p + 1) * h * h)) for p in range(k)]
        self.all_servers = tuple(range(self.servers))

    def edge_link(self, edge: int, i: int) -> int:
        """The link from edge switch ``edge`` to aggregation switch ``i`` of its pod."""
        return self.edge_base + edge * self.h + i

    def agg_link(self, agg: int, j: int) -> int:
        """The link from aggregation switch ``agg`` (``pod * k/2 + i``) to core ``i * k/2 + j``."""
        return self.agg_base + agg * self.h + j

    def switches(self, level: int) -> int:
        """How many switches there are at ``level``."""
        return {EDGE: self.edges, AGGREGATION: self.aggs, CORE: self.cores}[level]

    def subtree(self, level: int, switch: int) -> tuple[int, ...]:
        """The servers below ``switch`` at ``level``."""
        if level == EDGE:
            return self.edge_servers[switch]
        if level == AGGREGATION:
            return self.pod_servers[switch // self.h]
        return self.all_servers

    def path_links(self, server: int, level: int, switch: int) -> list[int]:
        """The links from ``server`` up to the root ``switch`` at ``level`` (which must cover it)."""
        h = self.h
        links = [server]
        if level >= AGGREGATION:
            i = switch % h if level == AGGREGATION else switch // h
            edge = server // h
            links.append(self.edge_link(edge, i))
            if level == CORE:
                links.append(self.agg_link((edge // h) * h + i, switch % h))
        return links

    def describe_link(self, link: int) -> str:
        """A readable name of ``link`` (for error messages)."""
        h = self.h
        if link < self.edge_base:
            return f"server {link} - edge {link // h}"
        if link < self.agg_base:
            edge, i = divmod(link - self.edge_base, h)
            return f"edge {edge} - aggregation {(edge // h) * h + i}"
        agg, j = divmod(link - self.agg_base, h)
        return f"aggregation {agg} - core {(agg % h) * h + j}"


def hose_loads(
    topo: Topology, counts: Sequence[tuple[int, int]], size: int, bandwidth: float, level: int, switch: int
) -> list[tuple[int, float]]:
    """The bandwidth a placement reserves: ``(link, Mbps)`` for every link it loads.

    Args:
        topo: The topology.
        counts: ``(server, VMs)`` pairs, distinct servers, all below the root.
        size: The job's number of VMs N (the sum of ``counts``).
        bandwidth: Per-VM demand B.
        level: The root's level (1 edge, 2 aggregation, 3 core).
        switch: The root's index within its level.

    Returns:
        ``min(m, N - m) * B`` for each link of the job's tree that separates ``m`` of its VMs
        from the rest, links carrying nothing left out.
    """
    h = topo.h
    loads = []
    for server, m in counts:
        amount = min(m, size - m) * bandwidth
        if amount > 0:
            loads.append((server, amount))
    if level == EDGE:
        return loads
    i = switch % h if level == AGGREGATION else switch // h
    per_edge: dict[int, int] = {}
    for server, m in counts:
        per_edge[server // h] = per_edge.get(server // h, 0) + m
    for edge, m in per_edge.items():
        amount = min(m, size - m) * bandwidth
        if amount > 0:
            loads.append((topo.edge_link(edge, i), amount))
    if level == CORE:
        j = switch % h
        per_pod: dict[int, int] = {}
        for edge, m in per_edge.items():
            per_pod[edge // h] = per_pod.get(edge // h, 0) + m
        for pod, m in per_pod.items():
            amount = min(m, size - m) * bandwidth
            if amount > 0:
                loads.append((topo.agg_link(pod * h + i, j), amount))
    return loads


def per_server_loads(
    topo: Topology, counts: Sequence[tuple[int, int]], size: int, bandwidth: float, level: int, switch: int
) -> list[tuple[int, float]]:
    """The bandwidth a placement reserves under ``per_server`` (paper 004, eq. 6).

    Arguments as for :func:`hose_loads`.

    Returns:
        ``(link, Mbps)`` for every loaded link of the job's tree: the largest
        ``min(m_s, N - m_s) * B`` among the job's servers ``s`` whose path to the root crosses
        the link (``m_s`` the VMs on ``s``), links carrying nothing left out. Server links
        first, then edge, then aggregation links, each by the order of ``counts``.
    """
    h = topo.h
    loads = []
    per_edge: dict[int, float] = {}
    for server, m in counts:
        amount = min(m, size - m) * bandwidth
        if amount > 0:
            loads.append((server, amount))
            # Equation 6 holds each server's amount against every link of its path on its
            # own: a link shared by several of the job's servers needs only the largest.
            edge = server // h
            if amount > per_edge.get(edge, 0.0):
                per_edge[edge] = amount
    if level == EDGE:
        return loads
    i = switch % h if level == AGGREGATION else switch // h
    for edge, amount in per_edge.items():
        loads.append((topo.edge_link(edge, i), amount))
    if level == CORE:
        j = switch % h
        per_pod: dict[int, float] = {}
        for edge, amount in per_edge.items():
            if amount > per_pod.get(edge // h, 0.0):
                per_pod[edge // h] = amount
        for pod, amount in per_pod.items():
            loads.append((topo.agg_link(pod * h + i, j), amount))
    return loads


def link_loads(
    topo: Topology, counts: Sequence[tuple[int, int]], size: int, bandwidth: float, level: int, switch: int
) -> list[tuple[int, float]]:
    """The bandwidth a placement reserves under the topology's check (:attr:`Topology.check`):
    :func:`hose_loads` or :func:`per_server_loads`."""
    loads = per_server_loads if topo.check == PER_SERVER else hose_loads
    return loads(topo, counts, size, bandwidth, level, switch)


def could_ever_fit(topo: Topology, size: int, bandwidth: float) -> bool:
    """Whether any placement holds ``size`` VMs of ``bandwidth`` Mbps on the idle fat-tree,
    under the topology's check.

    Exact, whatever the embedder. Let ``t`` be the most VMs a link can separate from the rest
    (``t * B <= capacity``). If ``size <= 2t`` every link is fine and only slots count.

    ``per_server``: every link has the same capacity, so a server's path is fine exactly when
    its own link is: each server holds at most ``t`` of the job's VMs, or at least
    ``size - t`` (at most one server can, when ``size > 2t``). So ``size <= S min(t, L)``
    (``S`` servers of ``L`` slots, a core root), or ``size <= L + t`` (one server full, the
    rest, at most ``t``, elsewhere).

    ``hose``: each link must have at most ``t`` of the job's VMs on one side; two subtrees
    cannot both hold more than ``t`` (together they would hold more than ``size``), so the
    "big" sides form one chain down from the root, and everything outside its deepest member
    ``D`` totals at most ``t``, while ``D``'s own children each hold at most ``t``. So
    ``size <= |D| + t`` with ``|D|`` at most: ``L`` (a server), ``h min(t, L)`` (an edge
    switch), ``h min(t, h L)`` (a pod); or, with ``D`` the root itself and nothing outside,
    the root's children each holding at most ``t``: ``k min(t, h^2 L)`` below a core.
    """
    slots, h, k = topo.slots, topo.h, topo.k
    if size > topo.servers * slots:
        return False
    if bandwidth <= 0 or size <= slots:
        return True
    t = int(topo.link_mbps // bandwidth)
    if (t + 1) * bandwidth <= topo.link_mbps:
        t += 1
    elif t * bandwidth > topo.link_mbps:
        t -= 1
    if size <= 2 * t:
        return True
    if topo.check == PER_SERVER:
        return size <= topo.servers * min(t, slots) or size <= slots + t
    deepest = max(slots, h * min(t, slots), h * min(t, h * slots))
    return size <= deepest + t or size <= k * min(t, h * h * slots)


class FatTreeState:
    """Residual resources: free slots per server and residual Mbps per link.

    Also keeps the free slots per edge switch, per pod and in total (for quick "cannot fit"
    answers), how many jobs hold bandwidth on each link, and a :attr:`version` bumped by every
    change (so a policy can tell that nothing changed since it last asked an embedder).
    Embedders read it; only :meth:`take` and :meth:`give` change it.
    """

    __slots__ = ("topo", "free", "edge_free", "pod_free", "total_free", "residual", "holders", "version")

    def __init__(self, topo: Topology) -> None:
        h, slots = topo.h, topo.slots
        self.topo = topo
        self.free = [slots] * topo.servers
        self.edge_free = [h * slots] * topo.edges
        self.pod_free = [h * h * slots] * topo.pods
        self.total_free = topo.servers * slots
        self.residual = [topo.link_mbps] * topo.links
        self.holders = [0] * topo.links
        self.version = 0

    def copy(self) -> FatTreeState:
        """An independent copy (for "what if these jobs were gone" questions)."""
        other = FatTreeState.__new__(FatTreeState)
        other.topo = self.topo
        other.free = self.free[:]
        other.edge_free = self.edge_free[:]
        other.pod_free = self.pod_free[:]
        other.total_free = self.total_free
        other.residual = self.residual[:]
        other.holders = self.holders[:]
        other.version = self.version
        return other

    def take(self, counts: Sequence[tuple[int, int]], loads: Sequence[tuple[int, float]]) -> None:
        """Reserve slots ``counts`` and bandwidth ``loads`` (already checked to fit)."""
        h = self.topo.h
        free, edge_free, pod_free = self.free, self.edge_free, self.pod_free
        for server, m in counts:
            free[server] -= m
            edge_free[server // h] -= m
            pod_free[server // (h * h)] -= m
            self.total_free -= m
        residual, holders = self.residual, self.holders
        for link, amount in loads:
            residual[link] -= amount
            holders[link] += 1
        self.version += 1

    def give(self, counts: Sequence[tuple[int, int]], loads: Sequence[tuple[int, float]]) -> None:
        """Return what :meth:`take` reserved."""
        h = self.topo.h
        free, edge_free, pod_free = self.free, self.edge_free, self.pod_free
        for server, m in counts:
            free[server] += m
            edge_free[server // h] += m
            pod_free[server // (h * h)] += m
            self.total_free += m
        residual, holders, capacity = self.residual, self.holders, self.topo.link_mbps
        for link, amount in loads:
            holders[link] -= 1
            # Exact arithmetic makes this equal anyway; the reset documents that an unused
            # link is exactly at capacity.
            residual[link] = capacity if holders[link] == 0 else residual[link] + amount
        self.version += 1

    def is_idle(self) -> bool:
        """Whether nothing is reserved."""
        return self.total_free == self.topo.servers * self.topo.slots and not any(self.holders)


#: The largest ``k`` a spec may ask for: 128 is 524,288 servers (a larger tree would exhaust
#: memory when the run starts, long after the spec was accepted).
MAX_K = 128


def _even_k(value: Any) -> int:
    if is_whole(value) and 2 <= value <= MAX_K:
        if int(value) % 2 == 0:
            return int(value)
    raise ValueError(f"expected an even integer from 2 to {MAX_K}, got {value!r}")


#: The spec keys of ``platform: {kind: fat_tree, ...}``.
FAT_TREE_PARAMS: dict[str, Param] = {
    "k": Param(_even_k, default=6, doc="fat-tree parameter (even): k pods, (k/2)^2 cores, k^3/4 servers (6: 54)"),
    "slots": Param(
        int_in(1, 4096, "each slot is a VM"), default=8, doc="VM slots per server (8: 432 slots with k = 6)"
    ),
    "link_mbps": Param(
        number_at_least(1 / _STEPS_PER_MBPS), default=1000.0, doc="capacity of every link, Mbps (at least 1/1024)"
    ),
    "bandwidth_check": Param(
        one_of(*BANDWIDTH_CHECKS),
        default=HOSE,
        doc="what a placement must leave on each link: hose (min(m, N-m) x B for all m VMs below it) "
        "| per_server (paper 004 eq. 6: each server's min(m_s, N-m_s) x B on its own path)",
    ),
}


class FatTree(BasePlatform):
    """A k-ary fat-tree of servers with ``slots`` VM slots each and ``link_mbps`` links.

    Args:
        k: The fat-tree parameter (even, >= 2): ``k^3/4`` servers.
        slots: VM slots per server (L).
        link_mbps: Capacity of every link, Mbps.
        bandwidth_check: ``hose`` or ``per_server``: how a placement loads the links (see the
            module docstring).
        seed: The run's seed (unused: nothing here is random).

    Attributes:
        topo: The :class:`Topology`.
        state: The residual resources (:class:`FatTreeState`); read-only for callers.
    """

    #: Per-job columns: the job's per-VM demand (Mbps) and the number of servers its last
    #: placement spans (0 if it never ran).
    EXTRA_JOB_COLUMNS = ("bandwidth", "servers")
    #: Run metrics: mean per-VM demand over all jobs (Mbps); time-averaged share of all link
    #: capacity reserved over the span; share of slot-seconds held over the span (restores
    #: included; ``utilization`` weighs by the CPU annotation instead); fraction of accepted
    #: jobs placed on a single server.
    EXTRA_METRICS = ("mean_bandwidth", "link_utilization", "slot_utilization", "single_server_fraction")
    kind = "fat_tree"
    params = FAT_TREE_PARAMS
    #: Time-weighted link statistics; the platform never chooses a placement itself (no
    #: ``placement``): only policies that embed virtual clusters run here.
    CAPABILITIES = frozenset({TIME_TRACKING, EMBEDDING})
    #: Slots are counted per server, not kept one by one: memory grows with the servers.
    STATE_PER_VM = False

    def __init__(
        self, k: int = 6, slots: int = 8, link_mbps: float = 1000.0, bandwidth_check: str = HOSE, *, seed: int = 0
    ) -> None:
        self.topo = Topology(k, slots, link_mbps, bandwidth_check)
        self.state = FatTreeState(self.topo)
        self.capacity = self.topo.servers * slots
        self.tiers = 1
        self._held: dict[int, _Reservation] = {}
        #: The last placement check_start accepted: (job index, placement, its reservation).
        self._checked: tuple[int, Sequence[int], _Reservation] | None = None
        self._servers: dict[int, int] = {}  # job index -> servers of its latest placement
        self._reserved = 0.0  # Mbps reserved on all links together
        self._reserved_seconds = 0.0  # its integral over time
        self._last_time: float | None = None

    @classmethod
    def job_capacity(cls, params: Mapping[str, Any]) -> int | None:
        k = params.get("k", 6)
        return (k**3 // 4) * params.get("slots", 8)

    # -- queries -------------------------------------------------------------------------
    def free_count(self, tier: int = 0) -> int:
        return self.state.total_free

    @staticmethod
    def demand(job: Job) -> float:
        """``job``'s per-VM demand in the platform's bandwidth unit (rounded up to 1/1024 Mbps)."""
        return quantize(job.bandwidth)

    def request(self, job: Job, bmax: float = 0.0) -> Request:
        """The embedding request of ``job``; ``bmax`` is the largest demand seen so far."""
        return Request(job.size, quantize(job.bandwidth), bmax)

    def reservation(self, index: int) -> _Reservation:
        """What running job ``index`` holds: ``(server, VMs)`` pairs and ``(link, Mbps)`` pairs."""
        return self._held[index]

    # -- resources -----------------------------------------------------------------------
    def _validate(self, job: Job, placement: Sequence[int]) -> tuple[str | None, Any]:
        topo, state = self.topo, self.state
        if not isinstance(placement, Placement):
            return (
                f"the fat_tree platform needs a Placement (server per VM plus the virtual "
                f"switch, from an embedder), got {type(placement).__name__}",
                None,
            )
        if len(placement) != job.size:
            return f"the placement has {len(placement)} VMs for a job of size {job.size}", None
        level, switch = placement.level, placement.switch
        if level not in _LEVEL_NAMES or not (isinstance(switch, int) and 0 <= switch < topo.switches(level)):
            return f"no switch {switch!r} at level {level!r} to host the virtual switch", None
        counts: dict[int, int] = {}
        for server in placement:
            counts[server] = counts.get(server, 0) + 1
        below = topo.subtree(level, switch)
        first, last = below[0], below[-1]
        for server, m in counts.items():
            if not (isinstance(server, int) and first <= server <= last):
                return (
                    f"server {server!r} is not below {_LEVEL_NAMES[level]} switch {switch} (servers {first}..{last})",
                    None,
                )
            if m > state.free[server]:
                return f"{m} VMs on server {server}, which has {state.free[server]} free slots", None
        pairs = sorted(counts.items())
        loads = link_loads(topo, pairs, job.size, self.demand(job), level, switch)
        residual = state.residual
        for link, amount in loads:
            if amount > residual[link]:
                return (
                    f"link {topo.describe_link(link)} would need {amount:g} Mbps with {residual[link]:g} Mbps left",
                    None,
                )
        return None, (tuple(pairs), loads)

    def check_start(self, job: Job, tier: int, nodes: Sequence[int] | None) -> str | None:
        if tier != 0:
            return f"tier {tier} does not exist on the fat_tree platform (one tier of VM slots)"
        if nodes is None:
            return "the fat_tree platform needs a placement from an embedder, got none"
        reason, reservation = self._validate(job, nodes)
        if reason is None:
            self._checked = (job.index, nodes, reservation)
        return reason

    def check_move(self, job: Job, tier: int, nodes: Sequence[int]) -> str | None:
        """Moving a running job is not modelled here: a policy suspends and restarts it."""
        return "the fat_tree platform does not move running jobs (suspend and restart them instead)"

    def start(self, job: Job, tier: int, nodes: Sequence[int] | None) -> tuple[Sequence[int], float]:
        checked = self._checked
        self._checked = None
        if nodes is None:  # check_start never accepts that
            raise ValueError(f"cannot start job {job.job_id}: no placement")
        if checked is not None and checked[0] == job.index and checked[1] is nodes:
            reservation = checked[2]
        else:  # called without check_start (tests): check now
            reason, reservation = self._validate(job, nodes)
            if reason is not None:
                raise ValueError(f"cannot start job {job.job_id}: {reason}")
        counts, loads = reservation
        self.state.take(counts, loads)
        self._held[job.index] = reservation
        self._reserved += sum(amount for _, amount in loads)
        return nodes, 1.0

    def release(self, job: Job) -> None:
        counts, loads = self._held.pop(job.index)
        self._servers[job.index] = len(counts)  # the records say how many its last placement spanned
        self.state.give(counts, loads)
        self._reserved -= sum(amount for _, amount in loads)
        if not self._held:
            self._reserved = 0.0

    # -- time-weighted statistics ------------------------------------------------------------
    def advance(self, now: float) -> None:
        if self._last_time is not None:
            self._reserved_seconds += self._reserved * (now - self._last_time)
        self._last_time = now

    def extra_job_records(self, jobs: Sequence[Job]) -> dict[str, Any]:
        return {
            "bandwidth": np.fromiter((j.bandwidth for j in jobs), np.float64, len(jobs)),
            "servers": np.fromiter((self._servers.get(j.index, 0) for j in jobs), np.int64, len(jobs)),
        }

    def extra_metrics(self, records: Mapping[str, Any], span_start: float, span_end: float) -> dict[str, float]:
        bandwidth = records["bandwidth"]
        servers = records["servers"]
        accepted = servers > 0
        span = span_end - span_start
        total = self.topo.link_mbps * self.topo.links
        return {
            "mean_bandwidth": float(bandwidth.mean()) if len(bandwidth) else math.nan,
            "link_utilization": self._reserved_seconds / (total * span) if span > 0 else math.nan,
            "slot_utilization": (
                reproducible_dot(records["size"], records["tier0_duration"]) / (self.capacity * span)
                if span > 0
                else math.nan
            ),
            "single_server_fraction": float((servers[accepted] == 1).mean()) if accepted.any() else math.nan,
        }
