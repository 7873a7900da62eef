"""Platform ``nodes``: N identical nodes with ``tiers`` VMs each (paper 000, section 5.1).

Tier 0 is the foreground VM (highest CPU priority); tiers 1 .. k-1 are background VMs of
decreasing priority. One process per VM; all processes of a job run in one tier. With
``tiers: 1`` the nodes are dedicated and every job progresses at rate 1.

Progress model (DESIGN 4.1), per process, piecewise constant between events:

* foreground: rate 1 while the lower tiers of its node are idle, else ``1 - o`` with
  ``o ~ U(0, 0.037)`` (context-switch overhead);
* background in tier t: rate 1 while every higher tier of its node is idle, else
  ``eff * min(1, cpu_idle / cpu_req)``, where ``cpu_req`` is the process's true CPU usage and
  ``cpu_idle = max(0.04, 1 - what the higher tiers consume)`` (the paper's 4 % lower bound);
  ``eff ~ U(0.8, 1)`` for a single-process job and Normal(0.428, 0.144) truncated to
  [0.2, 0.8] for a multi-process job;
* a process consumes ``cpu_true * (its job's rate)`` of its node, and a job progresses at the
  rate of its slowest process.

The paper draws its random factors per time slice; here they are drawn per placement epoch,
each time a process's co-location changes (a process arrives on or leaves its node), from
their own named streams, so rates stay piecewise constant and finish times exact.

A change is propagated tier by tier: the processes on the nodes it touched are re-rated, and a
job whose rate changed re-rates the lower tiers on all of its nodes, since its consumption
changed there. Work is proportional to the jobs affected, never to the machine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator, Mapping, Sequence

from ..capabilities import MOVES, NODE_VMS, PLACEMENT, TIERS
from ..errors import PolicyError
from ..params import Param, positive_int
from ..rng import stream
from .base import BasePlatform

if TYPE_CHECKING:
    from ..jobs import Job

__all__ = ["Nodes", "IdleSet", "FG_OVERHEAD_MAX", "CPU_IDLE_FLOOR"]

#: Foreground overhead while a lower tier is busy: ``o ~ U(0, FG_OVERHEAD_MAX)``.
FG_OVERHEAD_MAX = 0.037
#: The paper's lower bound of a background process's idle CPU share.
CPU_IDLE_FLOOR = 0.04
_EFF_SINGLE = (0.8, 1.0)
_EFF_MULTI = (0.428, 0.144, 0.2, 0.8)  # mean, sd, truncated to [low, high]
_BLOCK = 4096


def _overhead(value: object) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < 1:
        return float(value)
    raise ValueError(f"expected a number in [0, 1), got {value!r}")


def _efficiency(value: object) -> float | str:
    if value == "paper":
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value <= 1:
        return float(value)
    raise ValueError(f"expected 'paper' or a number in (0, 1], got {value!r}")


class IdleSet:
    """A set of node ids in ``0 .. nodes-1`` with O(1) add, remove and membership, and O(size)
    bulk take; it starts full (every node) or empty.

    Iteration order is deterministic (it depends only on the sequence of operations).
    """

    __slots__ = ("_items", "_pos")

    def __init__(self, nodes: int, full: bool = True) -> None:
        # Reversed so that an empty machine hands out node 0, 1, 2, ... first.
        self._items = list(range(nodes - 1, -1, -1)) if full else []
        self._pos = [nodes - 1 - n for n in range(nodes)] if full else [-1] * nodes

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, node: int) -> bool:
        return self._pos[node] >= 0

    def __iter__(self) -> Iterator[int]:
        return iter(self._items)

    def add(self, node: int) -> None:
        """Mark ``node`` idle."""
        self._pos[node] = len(self._items)
        self._items.append(node)

    def extend(self, nodes: list[int]) -> None:
        """Mark all ``nodes`` idle."""
        pos = self._pos
        for i, node in enumerate(nodes, len(self._items)):
            pos[node] = i
        self._items.extend(nodes)

    def remove(self, node: int) -> None:
        """Mark ``node`` busy."""
        items, pos = self._items, self._pos
        i = pos[node]
        last = items.pop()
        if last != node:
            items[i] = last
            pos[last] = i
        pos[node] = -1

    def take(self, count: int) -> list[int]:
        """Remove and return ``count`` nodes (the most recently added first)."""
        items, pos = self._items, self._pos
        taken = items[-count:] if count else []
        del items[len(items) - count :]
        for node in taken:
            pos[node] = -1
        return taken[::-1]


class _Draws:
    """Buffered draws from one named stream: numpy in blocks, consumed one at a time."""

    __slots__ = ("_rng", "_uniform", "_normal")

    def __init__(self, seed: int, purpose: str) -> None:
        self._rng = stream(seed, purpose)
        self._uniform: list[float] = []
        self._normal: list[float] = []

    def uniform(self, low: float, high: float) -> float:
        if not self._uniform:
            self._uniform = self._rng.random(_BLOCK).tolist()[::-1]
        return low + (high - low) * self._uniform.pop()

    def truncated_normal(self, mean: float, sd: float, low: float, high: float) -> float:
        while True:
            if not self._normal:
                self._normal = self._rng.standard_normal(_BLOCK).tolist()[::-1]
            value = mean + sd * self._normal.pop()
            if low <= value <= high:
                return value


class Nodes(BasePlatform):
    """``nodes`` nodes with ``tiers`` VMs each.

    Args:
        nodes: Number of nodes, at least 1.
        tiers: VMs per node: 1 = dedicated nodes, 2 = foreground/background, k > 2 = one
            foreground and k-1 background VMs of decreasing priority.
        fg_overhead: The upper end of the foreground overhead ``o ~ U(0, fg_overhead)``
            (paper: 0.037; 0 models a perfect priority scheduler).
        bg_efficiency: ``"paper"`` for the paper's ``eff`` distributions, or a fixed ``eff``
            in (0, 1] for every background process (1 with ample idle CPU gives rate 1, as
            the paper's worked examples assume).
        seed: The run's seed, for the overhead and efficiency streams.

    Arguments are trusted: :func:`tiersweep.core.platforms.make_platform` checks them against
    :attr:`params` (the one validation path, raising ``SpecError``).
    """

    kind = "nodes"
    params = {
        "nodes": Param(positive_int, default=None, doc="number of nodes (default: the trace's MaxProcs)"),
        "tiers": Param(
            positive_int,
            default=1,
            doc="VMs per node: 1 = dedicated, 2 = foreground/background, k = one foreground and k-1 background",
        ),
        "fg_overhead": Param(
            _overhead,
            default=FG_OVERHEAD_MAX,
            doc="foreground slowdown o ~ U(0, fg_overhead) while a lower tier is busy",
        ),
        "bg_efficiency": Param(
            _efficiency,
            default="paper",
            doc="eff of background processes: paper (U(0.8,1) serial, N(0.428,0.144) in [0.2,0.8] parallel) or a fixed number",
        ),
    }
    CAPABILITIES = frozenset({PLACEMENT, MOVES, TIERS, NODE_VMS})

    def __init__(
        self,
        nodes: int,
        tiers: int = 1,
        *,
        fg_overhead: float = FG_OVERHEAD_MAX,
        bg_efficiency: float | str = "paper",
        seed: int = 0,
    ) -> None:
        self.fg_overhead = float(fg_overhead)
        self.bg_efficiency = bg_efficiency
        self.capacity = nodes
        self.tiers = tiers
        vms = nodes * tiers
        #: Job index per VM (``vm = node * tiers + tier``), -1 when idle. Read-only for callers.
        self.vm_job = [-1] * vms
        #: Estimated CPU usage of each VM's process (0 when idle). Read-only for callers.
        self.vm_est = [0.0] * vms
        self._occ = self.vm_job
        self._est = self.vm_est
        self._proc = [0] * vms  # process index within that job
        self._cpu = [0.0] * vms  # the process's true CPU usage
        self._factor = [0.0] * vms  # o (foreground) or eff (background) of this epoch
        self._prate = [1.0] * vms  # the process's rate in this epoch
        self._vms: dict[int, list[int]] = {}  # running job index -> its VMs
        self._overflow = [0.0] * nodes  # per node: CPU use beyond 1 (see overflow_rate)
        #: CPU use beyond each node's capacity, summed over nodes. The paper's 4 % lower bound
        #: of a background process's idle CPU lets a node's processes use more than the whole
        #: CPU when the scheduler's estimates are wrong; utilisation counts at most 1 per node,
        #: so the engine integrates this over time and subtracts it from the busy CPU time.
        self.overflow_rate = 0.0
        self._idle = [IdleSet(nodes) for _ in range(tiers)]
        #: Free nodes, when only counts are kept (see :meth:`prepare`); None while ids are tracked.
        self._free: int | None = None
        self._running: dict[int, Job] = {}
        self._rate: dict[int, float] = {}
        self._dirty: set[int] = set()
        self._overhead = _Draws(seed, "fg_overhead")
        self._eff = _Draws(seed, "bg_eff")

    @classmethod
    def job_capacity(cls, params: Mapping[str, Any]) -> int | None:
        return params.get("nodes")

    @classmethod
    def capabilities_of(cls, params: Mapping[str, Any]) -> frozenset[str]:
        # Dedicated nodes (one tier) have no background tier to offer.
        return cls.CAPABILITIES if params.get("tiers", 1) > 1 else cls.CAPABILITIES - {TIERS}

    @classmethod
    def label(cls, params: Mapping[str, Any]) -> str:
        return f"{cls.kind!r} with tiers: {params.get('tiers', 1)}"

    @property
    def capabilities(self) -> frozenset[str]:
        offered = type(self).capabilities_of({"tiers": self.tiers})
        return offered - {NODE_VMS, MOVES} if self._free is not None else offered

    def prepare(self, requires: frozenset[str], record_units: bool) -> None:
        """With one tier, a policy that never names nodes nor moves jobs, and no record of
        which nodes a job held, keep a count of free nodes instead of node ids: a start or a
        release is then O(1), not O(size) (on a 93,312-processor log, hundreds of millions of
        node ids fewer). Schedules are the same either way (a test checks it)."""
        if self.tiers == 1 and not requires & {NODE_VMS, MOVES} and not record_units:
            self._free = len(self._idle[0])
            self._idle = []  # never read again

    # -- queries for policies ----------------------------------------------------------------
    def free_count(self, tier: int = 0) -> int:
        if self._free is not None:
            return self._free
        return len(self._idle[tier])

    def idle_nodes(self, tier: int = 0) -> IdleSet:
        """The nodes whose VM in ``tier`` is idle (read-only for callers)."""
        if self._free is not None:
            raise PolicyError("idle_nodes: the policy does not require node_vms, so only free nodes are counted")
        return self._idle[tier]

    def occupant(self, node: int, tier: int) -> int:
        """Index of the job whose process runs in VM (``node``, ``tier``), or -1."""
        return self._occ[node * self.tiers + tier]

    def est_load(self, node: int, first_tier: int, end_tier: int) -> float:
        """Estimated CPU usage of the processes in tiers ``first_tier .. end_tier - 1`` of ``node``."""
        base = node * self.tiers
        return sum(self._est[base + first_tier : base + end_tier])

    # -- resources -------------------------------------------------------------------------
    def _check_vms(self, job: Job, tier: int, nodes: Sequence[int], owner: int) -> str | None:
        if len(nodes) != job.size:
            return f"names {len(nodes)} nodes for a job of size {job.size}"
        if len(set(nodes)) != len(nodes):
            return "names a node twice (one process per VM, all in one tier)"
        k = self.tiers
        for node in nodes:
            if not 0 <= node < self.capacity:
                return f"node {node} does not exist (0..{self.capacity - 1})"
            occupant = self._occ[node * k + tier]
            if occupant != -1 and occupant != owner:
                return f"node {node} is busy" if k == 1 else f"VM (node {node}, tier {tier}) is busy"
        return None

    def check_start(self, job: Job, tier: int, nodes: Sequence[int] | None) -> str | None:
        if not 0 <= tier < self.tiers:
            return f"tier {tier} does not exist on a platform with {self.tiers} tier(s)"
        if nodes is not None and self._free is not None:
            return "names nodes, but the policy does not require node_vms (only free nodes are counted)"
        if nodes is None:
            free = self.free_count(tier)
            if job.size <= free:
                return None
            where = "nodes" if self.tiers == 1 else f"VMs in tier {tier}"
            return f"needs {job.size} {where}, {free} free"
        return self._check_vms(job, tier, nodes, -1)

    def check_move(self, job: Job, tier: int, nodes: Sequence[int]) -> str | None:
        if not 0 <= tier < self.tiers:
            return f"tier {tier} does not exist on a platform with {self.tiers} tier(s)"
        return self._check_vms(job, tier, nodes, job.index if tier == job.tier else -1)

    def start(self, job: Job, tier: int, nodes: Sequence[int] | None) -> tuple[Sequence[int], float]:
        if self._free is not None:
            self._free -= job.size
            return range(job.size), 1.0  # as many units as processes; which ones, nobody asks
        idle = self._idle[tier]
        if nodes is None:
            held = idle.take(job.size)
        else:
            held = list(nodes)
            for node in held:
                idle.remove(node)
        k = self.tiers
        occ, index = self._occ, job.index
        if k == 1:
            for node in held:
                occ[node] = index
            return held, 1.0
        proc, cpu, est = self._proc, self._cpu, self._est
        cpu_true, cpu_est = job.cpu_true, job.cpu_est
        vms = [node * k + tier for node in held]
        for p, vm in enumerate(vms):
            occ[vm] = index
            proc[vm] = p
            cpu[vm] = cpu_true[p]
            est[vm] = cpu_est[p]
        self._vms[index] = vms
        self._running[index] = job
        self._rate[index] = 0.0  # the real rate is reported by rate_changes()
        self._dirty.update(held)
        self.rates_dirty = True
        return held, 0.0

    def release(self, job: Job) -> None:
        if self._free is not None:
            self._free += job.size
            return
        k = self.tiers
        occ = self._occ
        idle = self._idle[job.tier]
        if k == 1:
            for node in job.nodes:
                occ[node] = -1
            idle.extend(job.nodes)
            return
        est = self._est
        for node in job.nodes:
            vm = node * k + job.tier
            occ[vm] = -1
            est[vm] = 0.0
            idle.add(node)
        del self._running[job.index]
        del self._rate[job.index]
        del self._vms[job.index]
        self._dirty.update(job.nodes)
        self.rates_dirty = True

    def move(self, job: Job, tier: int, nodes: Sequence[int]) -> tuple[list[int], float]:
        self.release(job)
        return self.start(job, tier, nodes)

    # -- rates -----------------------------------------------------------------------------
    def _draw_overhead(self) -> float:
        return self._overhead.uniform(0.0, self.fg_overhead) if self.fg_overhead else 0.0

    def _draw_eff(self, size: int) -> float:
        if self.bg_efficiency != "paper":
            return self.bg_efficiency
        if size == 1:
            return self._eff.uniform(*_EFF_SINGLE)
        return self._eff.truncated_normal(*_EFF_MULTI)

    def rate_changes(self) -> list[tuple[Job, float]]:
        self.rates_dirty = False
        if not self._dirty:
            return []
        dirty = sorted(self._dirty)
        self._dirty = set()
        if self.tiers == 2:
            changes = self._two_tier_rate_changes(dirty)
        else:
            changes = self._generic_rate_changes(dirty)
        self._update_overflow(dirty, changes)
        return changes

    def _update_overflow(self, dirty: list[int], changes: list[tuple[Job, float]]) -> None:
        """Re-measure how far the touched nodes' CPU use exceeds 1 (see :attr:`overflow_rate`)."""
        nodes = set(dirty)
        for job, _ in changes:
            nodes.update(job.nodes)
        k, occ, cpu, rates, overflow = self.tiers, self._occ, self._cpu, self._rate, self._overflow
        total = self.overflow_rate
        if k == 2:
            # A node with one process cannot exceed 1 (its use is cpu x rate <= 1): only nodes
            # with both VMs busy are measured; the others just lose any excess they had. The
            # additions to the total are the same, in the same order, as the general loop's.
            for node in nodes:
                fg, bg = occ[2 * node], occ[2 * node + 1]
                if fg < 0 or bg < 0:
                    old = overflow[node]
                    if old:
                        total += 0.0 - old
                        overflow[node] = 0.0
                    continue
                used = cpu[2 * node] * rates[fg] + cpu[2 * node + 1] * rates[bg]
                excess = used - 1.0 if used > 1.0 else 0.0
                total += excess - overflow[node]
                overflow[node] = excess
            self.overflow_rate = total if total > 1e-12 else 0.0
            return
        for node in nodes:
            base = node * k
            used = 0.0
            for vm in range(base, base + k):
                index = occ[vm]
                if index >= 0:
                    used += cpu[vm] * rates[index]
            excess = used - 1.0 if used > 1.0 else 0.0
            total += excess - overflow[node]
            overflow[node] = excess
        self.overflow_rate = total if total > 1e-12 else 0.0  # no drift below zero

    def _generic_rate_changes(self, dirty: list[int]) -> list[tuple[Job, float]]:
        """:meth:`rate_changes` for any number of tiers."""
        k = self.tiers
        occ, factor, running = self._occ, self._factor, self._running
        # New placement epoch for every process on a touched node: draw its random factor.
        for node in dirty:
            base = node * k
            busy = [occ[base + t] >= 0 for t in range(k)]
            for t in range(k):
                if not busy[t]:
                    continue
                if t == 0:
                    factor[base] = self._draw_overhead() if any(busy[1:]) else 0.0
                elif any(busy[:t]):
                    factor[base + t] = self._draw_eff(running[occ[base + t]].size)
        changes: list[tuple[Job, float]] = []
        prate, rates, vms_of, cpu = self._prate, self._rate, self._vms, self._cpu
        stale = set(dirty)
        for t in range(k):
            # Re-rate the tier-t processes on stale nodes, then their jobs (slowest process).
            affected = set()
            for node in stale:
                vm = node * k + t
                index = occ[vm]
                if index < 0:
                    continue
                affected.add(index)
                if t == 0:
                    prate[vm] = 1.0 - factor[vm]
                    continue
                base = vm - t
                used = 0.0
                higher_busy = False
                for s in range(t):
                    other = occ[base + s]
                    if other >= 0:
                        higher_busy = True
                        used += cpu[base + s] * rates[other]
                if higher_busy:
                    idle = 1.0 - used
                    if idle < CPU_IDLE_FLOOR:
                        idle = CPU_IDLE_FLOOR
                    need = cpu[vm]
                    prate[vm] = factor[vm] * (1.0 if idle >= need else idle / need)
                else:
                    prate[vm] = 1.0
            for index in sorted(affected):
                rate = min(map(prate.__getitem__, vms_of[index]))
                if rate != rates[index]:
                    rates[index] = rate
                    job = running[index]
                    changes.append((job, rate))
                    if t < k - 1:
                        stale.update(job.nodes)  # its consumption changed on all its nodes
        return changes

    def _two_tier_rate_changes(self, dirty: list[int]) -> list[tuple[Job, float]]:
        """:meth:`rate_changes` for ``tiers: 2``, the paper's setting, with the loops unrolled."""
        occ, factor, running, cpu = self._occ, self._factor, self._running, self._cpu
        prate, rates, vms_of = self._prate, self._rate, self._vms
        draw_overhead, draw_eff = self._draw_overhead, self._draw_eff
        affected_fg = set()
        affected_bg = set()
        for node in dirty:
            fg, bg = occ[2 * node], occ[2 * node + 1]
            if fg >= 0:
                affected_fg.add(fg)
                factor[2 * node] = draw_overhead() if bg >= 0 else 0.0
                prate[2 * node] = 1.0 - factor[2 * node]
            if bg >= 0:
                affected_bg.add(bg)
                if fg >= 0:
                    factor[2 * node + 1] = draw_eff(running[bg].size)
        changes: list[tuple[Job, float]] = []
        stale = set(dirty)
        for index in sorted(affected_fg):
            rate = min(map(prate.__getitem__, vms_of[index]))
            if rate != rates[index]:
                rates[index] = rate
                job = running[index]
                changes.append((job, rate))
                for node in job.nodes:
                    bg = occ[2 * node + 1]
                    if bg >= 0:
                        affected_bg.add(bg)
                        stale.add(node)
        for node in stale:
            bg = occ[2 * node + 1]
            if bg < 0:
                continue
            fg = occ[2 * node]
            vm = 2 * node + 1
            if fg < 0:
                prate[vm] = 1.0
                continue
            idle = 1.0 - cpu[2 * node] * rates[fg]
            if idle < CPU_IDLE_FLOOR:
                idle = CPU_IDLE_FLOOR
            need = cpu[vm]
            prate[vm] = factor[vm] * (1.0 if idle >= need else idle / need)
        for index in sorted(affected_bg):
            rate = min(map(prate.__getitem__, vms_of[index]))
            if rate != rates[index]:
                rates[index] = rate
                changes.append((running[index], rate))
        return changes
