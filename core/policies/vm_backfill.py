"""FCFS with EASY backfilling on shared VMs, combined with paper 001's resource selectors.

Registered as ``vm_backfill`` (``policy: {name: vm_backfill, selector: pc-sg}``): ``backfill``
would read as the whole backfilling family of :mod:`tiersweep.core.policies.backfill`, whose base class
has that name.

Job ordering (paper 001, section III): first come, first served, "complemented with backfill":
the job at the front of the queue that cannot run "will reserve VM(s) at a future time", and
jobs behind it may start on idle VMs "if their execution does not interfere with the job's
reservation". That is EASY backfilling (one reservation, the head's), here in the textbook
shadow-time / extra-VMs form of :class:`tiersweep.core.policies.backfill.Easy`, with VMs as the unit.

Runtime estimates: "we use EC, which represents the worst-case utilization of a VM, to estimate
the runtime of a queued job conservatively". A job placed on VMs ``vms`` progresses at least at
``min(EC(v) for v in vms)`` (the equilibrium capacity is what a VM gets when every VM of its
machine contends, and contention elsewhere cannot push a job below its slowest task's EC), so
its run takes at most ``estimate / min EC``. That bound is used for backfill candidates (a
candidate starts if it ends by the head's shadow time on the VMs the selector picks for it, or
fits in the extra VMs) and, the paper being silent on it, also for the running jobs whose ends
make the head's reservation: every job's estimated end is ``start + estimate / min EC`` of its
VMs. With estimates that bound the runtime (requested times and ``overrun: kill``) the head
then never starts after its first shadow time, as under EASY on dedicated nodes (unless the
platform had to fall back to a non-fair allocation, counted in ``allocation_fallbacks``). The
reservation counts VMs, not particular VMs: any idle VMs will do for the head.

Resource selectors (section III), choosing the VMs of a job among the idle ones:

===========  ==================================================================================
``pc-g``     greedy: the VMs with the highest PC
``pc-sg``    semi-greedy: let p be the PC of the N-th VM ``pc-g`` would pick (N = job size);
             among the VMs with PC >= p, the N with the smallest PC (figure 6: D2 and E1
             instead of A1 and B1), leaving the large capacities to later jobs; the job's rate
             is bounded by p either way (if the small picks spoil larger ones on their
             machines, the last tasks are placed greedily)
``pcfc-sg``  ``pc-sg``, except that a serial job goes to the highest-PC VM among those whose PC
             is at most its machine's free capacity FC (it then takes nothing from a neighbour:
             no ripple), or to the highest-PC VM when there is none
``ec``       the VMs with the highest EC, "no secondary sort criteria": ties in VM order, so
             a job's tasks are packed on few machines under equal shares
``pmvm``     the machines with the fewest active VMs first, the larger share as tie-breaker
===========  ==================================================================================

PC is instantaneous, so PC-based selectors place a job task by task: a VM whose machine
already got one of the job's tasks is re-ranked with that task contending (up to its max).
Otherwise a job would pile all its tasks onto the first empty machine, which is what the paper
says only EC does. PMVM likewise counts the tasks it has placed. Ties: PC-based rankings
break ties by the higher EC, then the lower VM id (the semi-greedy pick: lower PC, then lower
EC, then lower VM id); PC values are compared to 12 decimals so that equal capacities computed
along different paths tie.

On a platform without VMs (``nodes``) every free node is a VM with EC = PC = 1: the policy is
then EASY backfilling, and the selector has nothing to choose (the platform picks the nodes).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, cast

from ..capabilities import PLACEMENT, VM_CAPACITIES
from ..decisions import Start
from ..params import Param, one_of
from .backfill import Easy

if TYPE_CHECKING:
    from ..jobs import Job
    from ..platforms.shared_vms import SharedVms
    from .base import Simulation

__all__ = ["VmBackfill", "SELECTORS", "VM_BACKFILL_PARAMS", "select_vms"]

_QUANTUM = 1e12  # PC values are ranked to 12 decimals (equal capacities tie)
_TOLERANCE = 1e-12

Key = Callable[[int, Sequence[int]], tuple]


def _sequential(
    platform: SharedVms,
    size: int,
    key: Key,
    *,
    eligible: Callable[[int, Sequence[int]], bool] | None = None,
    placed: dict[int, list[int]] | None = None,
    taken: list[int] | None = None,
) -> tuple[list[int], list[tuple]]:
    """Pick up to ``size`` idle VMs one at a time, each the smallest ``key`` at that moment.

    ``key(vm, group)`` ranks idle ``vm`` given ``group``, the VMs of its machine already picked
    for this job; after a pick, only the picked machine's VMs are re-ranked. ``eligible``
    filters VMs (re-checked after each re-ranking). ``placed`` and ``taken`` continue an earlier
    partial pick. Returns the VMs in pick order and their keys at pick time.
    """
    V = platform.vms
    idle = platform.idle_vms()
    placed = {} if placed is None else placed
    chosen = [] if taken is None else taken
    if size == 1 and not chosen and not placed:
        # One pick: no re-ranking, just the best key.
        best = None
        for v in idle:
            if eligible is None or eligible(v, ()):
                k = key(v, ())
                if best is None or k < best:
                    best = k
                    pick = v
        return ([pick], [best]) if best is not None else ([], [])
    done = set(chosen)
    keys: list[tuple] = []
    stamp: dict[int, int] = {}
    heap = []
    for v in sorted(idle):
        if v in done:
            continue
        group = placed.get(v // V, ())
        if eligible is None or eligible(v, group):
            heap.append((key(v, group), v, 0))
    heapq.heapify(heap)
    want = len(chosen) + size
    while len(chosen) < want and heap:
        k, v, version = heapq.heappop(heap)
        m = v // V
        if v in done or version != stamp.get(m, 0):
            continue
        chosen.append(v)
        keys.append(k)
        done.add(v)
        group = placed.setdefault(m, [])
        group.append(v)
        version = stamp[m] = stamp.get(m, 0) + 1
        for w in range(m * V, (m + 1) * V):
            if w in idle and w not in done and (eligible is None or eligible(w, group)):
                heapq.heappush(heap, (key(w, group), w, version))
    return chosen, keys


def _pc_pick(
    platform: SharedVms,
    size: int,
    *,
    smallest: bool = False,
    threshold: int | None = None,
    placed: dict[int, list[int]] | None = None,
    taken: list[int] | None = None,
    base: dict[int, float] | None = None,
) -> tuple[list[int], int | None]:
    """:func:`_sequential` specialised to PC (the hot path of the PC-based selectors).

    Picks the highest PC first (ties: higher EC, then lower VM id), or with ``smallest`` the
    lowest PC at or above ``threshold`` (ties: lower EC, then lower VM id). PCs are compared
    quantised to 12 decimals. ``base``: the idle VMs' PCs, if the caller has them. Returns the
    picks and the quantised PC of the last one.
    """
    V = platform.vms
    idle = platform.idle_vms()
    pc = platform.potential_capacities()
    if base is None:
        base = platform.idle_potential_capacities()
    ec = platform.ec
    placed = {} if placed is None else placed
    chosen = [] if taken is None else taken
    done = set(chosen)
    sign = 1 if smallest else -1
    heap = []
    for v, value in base.items():
        if v in done:
            continue
        group = placed.get(v // V)
        q = int((pc(v, group) if group else value) * _QUANTUM + 0.5)
        if threshold is None or q >= threshold:
            heap.append((sign * q, sign * ec[v], v, 0))
    if not heap:
        return chosen, None
    if size == 1 and not chosen:
        best = min(heap)
        return [best[2]], sign * best[0]
    heapq.heapify(heap)
    stamp: dict[int, int] = {}
    want = len(chosen) + size
    last = None
    while len(chosen) < want and heap:
        k, _, v, version = heapq.heappop(heap)
        m = v // V
        if v in done or version != stamp.get(m, 0):
            continue
        chosen.append(v)
        done.add(v)
        last = sign * k
        group = placed.setdefault(m, [])
        group.append(v)
        version = stamp[m] = stamp.get(m, 0) + 1
        for w in range(m * V, (m + 1) * V):
            if w in idle and w not in done:
                q = int(pc(w, group) * _QUANTUM + 0.5)
                if threshold is None or q >= threshold:
                    heapq.heappush(heap, (sign * q, sign * ec[w], w, version))
    return chosen, last


def select_pc_greedy(platform: SharedVms, size: int) -> list[int]:
    """``pc-g``: the highest PC first, task by task."""
    return _pc_pick(platform, size)[0]


def select_pc_semi_greedy(platform: SharedVms, size: int) -> list[int]:
    """``pc-sg``: among the VMs at least as good as the N-th best, the N smallest."""
    base = platform.idle_potential_capacities()
    _, threshold = _pc_pick(platform, size, base=base)  # the N-th best PC (picks come in decreasing PC)
    placed: dict[int, list[int]] = {}
    chosen, _ = _pc_pick(platform, size, smallest=True, threshold=threshold, placed=placed, base=base)
    if len(chosen) < size:  # the small picks spoiled some large ones: complete greedily
        chosen, _ = _pc_pick(platform, size - len(chosen), placed=placed, taken=chosen, base=base)
    return chosen


def select_pcfc_semi_greedy(platform: SharedVms, size: int) -> list[int]:
    """``pcfc-sg``: ``pc-sg``, but a serial job first tries the VMs whose PC is within their FC."""
    if size > 1:
        return select_pc_semi_greedy(platform, size)
    V = platform.vms
    ec = platform.ec
    free: dict[int, float] = {}
    best = None
    for v, value in platform.idle_potential_capacities().items():
        m = v // V
        fc = free.get(m)
        if fc is None:
            fc = free[m] = platform.free_capacity(m)
        if value <= fc + _TOLERANCE:
            key = (-int(value * _QUANTUM + 0.5), -ec[v], v)
            if best is None or key < best[0]:
                best = (key, v)
    if best is not None:
        return [best[1]]
    return select_pc_greedy(platform, 1)


def select_ec(platform: SharedVms, size: int) -> list[int]:
    """``ec``: the highest EC first; ties in VM order (no secondary criterion)."""
    ec = platform.ec
    return sorted(platform.idle_vms(), key=lambda v: (-ec[v], v))[:size]


def select_pmvm(platform: SharedVms, size: int) -> list[int]:
    """``pmvm``: machines with the fewest active VMs first, then the larger share, then VM id."""
    V, share, active = platform.vms, platform.share, platform.active_count
    return _sequential(platform, size, lambda v, group: (active(v // V) + len(group), -share[v], v))[0]


#: Resource selectors by name: ``(platform, job size) -> VMs``.
SELECTORS: dict[str, Callable[[SharedVms, int], list[int]]] = {
    "pc-g": select_pc_greedy,
    "pc-sg": select_pc_semi_greedy,
    "pcfc-sg": select_pcfc_semi_greedy,
    "ec": select_ec,
    "pmvm": select_pmvm,
}


#: The spec keys of ``policy: {name: vm_backfill}``.
VM_BACKFILL_PARAMS: dict[str, Param] = {
    "selector": Param(
        one_of(*SELECTORS),
        default="pc-sg",
        doc=f"shared_vms resource selector (paper 001): {' | '.join(SELECTORS)}",
    ),
}


def select_vms(platform: SharedVms, selector: str, size: int) -> list[int]:
    """The idle VMs ``selector`` picks for a job of ``size`` tasks (``size`` <= idle VMs)."""
    choose = SELECTORS[VM_BACKFILL_PARAMS["selector"].validate("policy.selector", selector)]
    if size > platform.free_count():
        raise ValueError(f"a job of {size} tasks does not fit in {platform.free_count()} idle VMs")
    return choose(platform, size)


class VmBackfill(Easy):
    """FCFS with EASY backfilling and EC-based runtime estimates, placing jobs with a selector.

    A configuration of :class:`~tiersweep.core.policies.backfill.Easy` through its hooks: on a
    platform with ``vm_capacities`` it places each job with the selector (:meth:`place`) and
    estimates its duration at the smallest EC of its VMs (:meth:`speed`); elsewhere it is EASY.

    Args:
        selector: One of :data:`SELECTORS`.
    """

    name = "vm_backfill"
    params = VM_BACKFILL_PARAMS
    #: Runs wherever the platform can place a job; with ``vm_capacities`` (shared VMs) it
    #: chooses the VMs itself, elsewhere it is EASY (see the module docstring).
    requires = frozenset({PLACEMENT})

    def __init__(self, selector: str = "pc-sg") -> None:
        super().__init__()
        self.selector = selector
        self._choose = SELECTORS[selector]
        self._vms: SharedVms | None = None
        # Within a pass a selection depends only on the job size and the platform's state:
        # VMs chosen per size since the last start or end (cleared then).
        self._chosen: dict[int, list[int]] = {}

    def setup(self, sim: Simulation) -> None:
        super().setup(sim)
        # A platform offering VM capacities has the shared-VM machine's members (capabilities.py).
        self._vms = cast("SharedVms", sim.platform) if VM_CAPACITIES in sim.platform.capabilities else None
        self.places = self._vms is not None

    # -- the hooks of the backfilling skeleton -------------------------------------------------
    def place(self, job: Job) -> Start:
        if self._vms is None:
            return Start(job)
        vms = self._chosen.get(job.size)
        if vms is None:
            vms = self._chosen[job.size] = self._choose(self._vms, job.size)
        return Start(job, 0, list(vms))

    def speed(self, units: Sequence[int] | None) -> float:
        """The smallest EC among ``units``: a job there progresses at least that fast."""
        if self._vms is None or units is None:
            return 1.0
        ec = self._vms.ec
        return min(ec[v] for v in units)

    def best_speed(self) -> float:
        """The largest EC among the idle VMs."""
        if self._vms is None:
            return 1.0
        ec = self._vms.ec
        return max((ec[v] for v in self._vms.idle_vms()), default=1.0)

    # -- the selection memo ----------------------------------------------------------------------
    def on_start(self, job: Job) -> None:
        super().on_start(job)
        self._chosen.clear()

    def on_finish(self, job: Job) -> None:
        super().on_finish(job)
        self._chosen.clear()

    def on_suspend(self, job: Job) -> None:
        super().on_suspend(job)
        self._chosen.clear()
