"""Virtual-cluster embedders for the ``fat_tree`` platform (paper 004, sections 4.1 and 5.3.1).

Each embedder is a function ``embed(state, request) -> Placement | None`` of a
:class:`tiersweep.core.platforms.fat_tree.FatTreeState` (read, never changed) and a
:class:`tiersweep.core.platforms.fat_tree.Request`. None means it found no placement. A placement never
oversubscribes a slot or a link: every embedder builds it with the same exact checks that
:meth:`FatTree.check_start` applies, and the engine checks it again.

Every embedder follows the platform's ``bandwidth_check`` (``state.topo.check``; see
:mod:`tiersweep.core.platforms.fat_tree`): the loads it weighs or checks are
:func:`~tiersweep.core.platforms.fat_tree.link_loads`.

Shared building block (Algorithm 1, lines 8-20): :func:`fill` places the VMs on the servers
below a chosen root switch, in a given server order, each server taking as many VMs as the
check allows on every link of its path to the root. Under ``hose`` that depends on the VMs
already placed (a link's load depends only on how many of the job's VMs lie below it, and
every time a server below a link takes VMs the link is checked with the new count, so the last
check of each link is against its final load: the result is valid as a whole). Under
``per_server`` each server is checked on its own against its path's residuals (equation 6), so
the order of the servers decides only who gets the VMs.

========== =====================================================================================
``adaba``  Algorithm 1: server weight ``-0.5 a^2 + L (B / Bmax) a`` (``a`` its free slots,
           ``L`` slots per server, ``Bmax`` the largest demand seen so far, this one
           included); roots tried from the edge level up to the core, each level's switches in
           index order, the first success returned; below a root, servers by weight
           descending (ties by server id).
``bestfit`` The same search with the fixed weight ``-a``: servers with the fewest free slots
           first (paper 004, 5.3.1: "best fit ... is designed to compare the performance of
           different settings of weight function").
``oktopus`` Locality-aware (Ballani et al. 2011): the smallest subtree that can hold the
           request: first a single server (the first, by id, with enough free slots: no link
           is used), then edge, aggregation and core subtrees as above, servers by id.
``greedy`` Minimise the maximum link occupation (Yu et al. 2018; Biran et al. 2012): a single
           server if one can hold the request (nothing loaded), else, for every root with
           enough free slots below it, fill its servers least-occupied path first (occupation
           of a path: its most used link, ties by id) and keep the placement whose most
           occupied loaded link is least occupied afterwards (ties: the lower level, then the
           lower switch index).
``firstfit`` No locality search: servers by id, each taking as many VMs as its own link allows
           (paper 004, figure 3: "first fit strategy arranges the VMs to the servers in
           sequence"); the root is the lowest switch above all of them, the first such switch
           by index whose links carry the load.
========== =====================================================================================
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .fat_tree import AGGREGATION, CORE, EDGE, PER_SERVER, FatTreeState, Placement, Request, link_loads

__all__ = ["EMBEDDERS", "Embedder", "fill", "adaba", "bestfit", "oktopus", "greedy", "firstfit"]

Embedder = Callable[[FatTreeState, Request], "Placement | None"]


def _most(room: float, bandwidth: float) -> int:
    """The largest ``t`` with ``t * bandwidth <= room`` (``bandwidth > 0``): a link with ``room``
    left can separate at most ``t`` of a job's VMs from the rest (or leave at most ``t`` out)."""
    t = int(room // bandwidth)
    if (t + 1) * bandwidth <= room:
        t += 1
    elif t * bandwidth > room:
        t -= 1
    return t


def fill(
    state: FatTreeState, size: int, bandwidth: float, level: int, switch: int, servers: Sequence[int]
) -> Placement | None:
    """Place ``size`` VMs on ``servers`` (in this order, all below the root) under the root
    ``switch`` at ``level``; each server takes the most VMs its path allows. None if they do
    not all fit.

    ``hose``: a link with ``c`` of the job's VMs already below it and room for ``t`` separated
    VMs accepts ``m`` more when ``c + m <= t`` or ``c + m >= size - t``; when ``m`` fails a
    link, no count between ``t - c`` and ``m`` passes it, so the search jumps there.
    ``per_server``: a server takes ``m`` when ``min(m, size - m) * B`` fits the least residual
    of its path; when ``m`` fails, every count between ``t`` and ``m`` fails too (both
    ``m' > t`` and ``size - m' >= size - m > t``), so it takes ``t``."""
    topo = state.topo
    h = topo.h
    free, residual = state.free, state.residual
    left = size
    counts: list[tuple[int, int]] = []
    i = switch % h if level == AGGREGATION else switch // h
    j = switch % h
    edge_base, agg_base = topo.edge_base, topo.agg_base
    if level == EDGE or topo.check == PER_SERVER:
        # Each server on its own: at the edge a server's path is its own link (both checks
        # agree there); per_server checks each server's whole path.
        for server in servers:
            a = free[server]
            if not a:
                continue
            m = a if a < left else left
            if bandwidth:
                room = residual[server]
                if level != EDGE:
                    edge = server // h
                    room = min(room, residual[edge_base + edge * h + i])
                    if level == CORE:
                        room = min(room, residual[agg_base + ((edge // h) * h + i) * h + j])
                if min(m, size - m) * bandwidth > room:
                    # Fails: t < m < size - t, so the most is t itself.
                    m = _most(room, bandwidth)
            if m > 0:
                counts.append((server, m))
                left -= m
                if not left:
                    return Placement(counts, level, switch)
        return None
    per_edge: dict[int, int] = {}
    per_pod: dict[int, int] = {}
    for server in servers:
        a = free[server]
        if not a:
            continue
        edge = server // h
        below_edge = per_edge.get(edge, 0)
        if level == CORE:
            pod = edge // h
            below_pod = per_pod.get(pod, 0)
        m = a if a < left else left
        if bandwidth:
            room = residual[server]
            edge_room = residual[edge_base + edge * h + i]
            pod_room = residual[agg_base + (pod * h + i) * h + j] if level == CORE else 0.0
            while m > 0:
                if min(m, size - m) * bandwidth > room:
                    m = min(m - 1, _most(room, bandwidth))
                    continue
                x = below_edge + m
                if min(x, size - x) * bandwidth > edge_room:
                    m = min(m - 1, _most(edge_room, bandwidth) - below_edge)
                    continue
                if level == CORE:
                    y = below_pod + m
                    if min(y, size - y) * bandwidth > pod_room:
                        m = min(m - 1, _most(pod_room, bandwidth) - below_pod)
                        continue
                break
        if m > 0:
            counts.append((server, m))
            per_edge[edge] = below_edge + m
            if level == CORE:
                per_pod[pod] = below_pod + m
            left -= m
            if not left:
                return Placement(counts, level, switch)
    return None


def _subtree_search(
    state: FatTreeState, request: Request, order: Callable[[Sequence[int]], list[int]]
) -> Placement | None:
    """Algorithm 1, lines 5-31: roots from the edge level up to the core, each level's switches
    in index order; below each root, :func:`fill` in ``order``; the first success."""
    size, bandwidth = request.size, request.bandwidth
    topo = state.topo
    if size > state.total_free:
        return None
    edge_free, pod_free, total = _room_below(state, size, bandwidth)
    if size > total:
        return None
    for edge in range(topo.edges):
        if edge_free[edge] >= size:
            placement = fill(state, size, bandwidth, EDGE, edge, order(topo.edge_servers[edge]))
            if placement is not None:
                return placement
    h = topo.h
    for pod in range(topo.pods):
        if pod_free[pod] >= size:
            servers = order(topo.pod_servers[pod])
            for i in range(h):
                placement = fill(state, size, bandwidth, AGGREGATION, pod * h + i, servers)
                if placement is not None:
                    return placement
    servers = order(topo.all_servers)
    for core in range(topo.cores):
        placement = fill(state, size, bandwidth, CORE, core, servers)
        if placement is not None:
            return placement
    return None


def _room_below(state: FatTreeState, size: int, bandwidth: float) -> tuple[list[int], list[int], int]:
    """Upper bounds on how many of the job's VMs :func:`fill` can place below each edge
    switch, in each pod and in all: per server, the most its own link allows (a path includes
    that link, and ``fill`` never gives a server more). A root whose bound is below ``size``
    cannot succeed, so the search skips it without changing its answer: under ``per_server``
    a job that fits nowhere otherwise costs a fill per switch of the tree."""
    if not bandwidth:
        return state.edge_free, state.pod_free, state.total_free
    topo = state.topo
    h = topo.h
    free, residual = state.free, state.residual
    edge_room = [0] * topo.edges
    for server in topo.all_servers:
        a = free[server]
        if a:
            m = a if a < size else size
            if (m if m < size - m else size - m) * bandwidth > residual[server]:
                m = _most(residual[server], bandwidth)
            edge_room[server // h] += m
    pod_room = [sum(edge_room[p * h : p * h + h]) for p in range(topo.pods)]
    return edge_room, pod_room, sum(pod_room)


def adaba(state: FatTreeState, request: Request) -> Placement | None:
    """AdaBa (paper 004, Algorithm 1, equation 7)."""
    slots = state.topo.slots
    bmax = max(request.bmax, request.bandwidth)
    peak = slots * request.bandwidth / bmax if bmax > 0 else 0.0
    # The weight depends on a server's free slots only: one value per possible count.
    rank = [-(-0.5 * a * a + peak * a) for a in range(slots + 1)]
    free = state.free

    def order(servers: Sequence[int]) -> list[int]:
        return sorted([s for s in servers if free[s]], key=lambda s: rank[free[s]])

    return _subtree_search(state, request, order)


def bestfit(state: FatTreeState, request: Request) -> Placement | None:
    """Best fit: AdaBa's search with servers by free slots ascending."""
    free = state.free

    def order(servers: Sequence[int]) -> list[int]:
        return sorted([s for s in servers if free[s]], key=free.__getitem__)

    return _subtree_search(state, request, order)


def _single_server(state: FatTreeState, size: int) -> Placement | None:
    """All VMs on the first server (by id) with ``size`` free slots: no link carries anything."""
    if size > max(state.edge_free):
        return None
    free, h = state.free, state.topo.h
    for server, a in enumerate(free):
        if a >= size:
            return Placement([(server, size)], EDGE, server // h)
    return None


def oktopus(state: FatTreeState, request: Request) -> Placement | None:
    """Oktopus's locality-aware allocation: the smallest subtree that holds the request."""
    if request.size > state.total_free:
        return None
    placement = _single_server(state, request.size)
    if placement is not None:
        return placement
    free = state.free
    return _subtree_search(state, request, lambda servers: [s for s in servers if free[s]])


def greedy(state: FatTreeState, request: Request) -> Placement | None:
    """Greedy: the placement that minimises the maximum occupation of the links it loads."""
    size, bandwidth = request.size, request.bandwidth
    if size > state.total_free:
        return None
    placement = _single_server(state, size)
    if placement is not None or bandwidth == 0:
        # Nothing to load: a single server, or (no demand) the locality search's first answer.
        free = state.free
        return placement or _subtree_search(state, request, lambda servers: [s for s in servers if free[s]])
    topo = state.topo
    h, capacity = topo.h, topo.link_mbps
    free, residual = state.free, state.residual
    edge_base, agg_base = topo.edge_base, topo.agg_base
    best: Placement | None = None
    best_score = 0.0

    def consider(placement: Placement | None) -> None:
        nonlocal best, best_score
        if placement is None:
            return
        used_after = max(
            capacity - residual[link] + amount
            for link, amount in link_loads(topo, placement.counts, size, bandwidth, placement.level, placement.switch)
        )
        if best is None or used_after < best_score:
            best, best_score = placement, used_after

    # Roots below which the servers' own links cannot take the job are skipped (no placement).
    edge_room, pod_room, total_room = _room_below(state, size, bandwidth)
    if size > total_room:
        return None
    for edge in range(topo.edges):
        if edge_room[edge] >= size:
            servers = sorted([s for s in topo.edge_servers[edge] if free[s]], key=lambda s: -residual[s])
            consider(fill(state, size, bandwidth, EDGE, edge, servers))
    for pod in range(topo.pods):
        if pod_room[pod] < size:
            continue
        candidates = [s for s in topo.pod_servers[pod] if free[s]]
        for i in range(h):
            # A path's room is its least residual link (its most occupied one).
            servers = sorted(candidates, key=lambda s: -min(residual[s], residual[edge_base + (s // h) * h + i]))
            consider(fill(state, size, bandwidth, AGGREGATION, pod * h + i, servers))
    candidates = [s for s in topo.all_servers if free[s]]
    for core in range(topo.cores):
        i, j = divmod(core, h)

        def room(s: int, i: int = i, j: int = j) -> float:
            edge = s // h
            return -min(
                residual[s], residual[edge_base + edge * h + i], residual[agg_base + ((edge // h) * h + i) * h + j]
            )

        consider(fill(state, size, bandwidth, CORE, core, sorted(candidates, key=room)))
    return best


def firstfit(state: FatTreeState, request: Request) -> Placement | None:
    """First fit: servers in id order, then the lowest root whose links carry the load."""
    size, bandwidth = request.size, request.bandwidth
    if size > state.total_free:
        return None
    topo = state.topo
    free, residual, h = state.free, state.residual, topo.h
    left = size
    counts: list[tuple[int, int]] = []
    for server in topo.all_servers:
        a = free[server]
        if not a:
            continue
        m = a if a < left else left
        while m and min(m, size - m) * bandwidth > residual[server]:
            m -= 1
        if m:
            counts.append((server, m))
            left -= m
            if not left:
                break
    if left:
        return None
    first, last = counts[0][0], counts[-1][0]
    if first // h == last // h:
        return Placement(counts, EDGE, first // h)  # below one edge switch: only server links
    if first // (h * h) == last // (h * h):
        level, roots = AGGREGATION, range((first // (h * h)) * h, (first // (h * h)) * h + h)
    else:
        level, roots = CORE, range(topo.cores)
    for switch in roots:
        if all(amount <= residual[link] for link, amount in link_loads(topo, counts, size, bandwidth, level, switch)):
            return Placement(counts, level, switch)
    return None


#: Embedders by name (``policy.embedder``).
EMBEDDERS: dict[str, Embedder] = {
    "adaba": adaba,
    "oktopus": oktopus,
    "greedy": greedy,
    "bestfit": bestfit,
    "firstfit": firstfit,
}
