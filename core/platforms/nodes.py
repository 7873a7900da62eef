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
from their own named streams, so rates stay piecewise constant and finish times exact. The
foreground overhead is drawn per process each time its co-location changes (a process arrives
on or leaves its node). The background ``eff`` has two scopes (``bg_efficiency_scope``):

* ``job`` (default, the paper's reading): one ``eff`` per job and placement epoch, drawn when
  the job starts (or moves) in a background tier and shared by all its processes. The paper's
  0.428 is the job-level mean efficiency it measured for multi-process background jobs.
* ``process``: an independent ``eff`` per process, redrawn whenever its node's co-location
  changes. The job then runs at its slowest process, so a wide job's efficiency is the
  minimum of many draws (0.21-0.25 measured for wide jobs): about half the paper's figure.

A change is propagated tier by tier: the processes on the nodes it touched are re-rated, and a
job whose rate changed re-rates the lower tiers on all of its nodes, since its consumption
changed there. Work is proportional to the jobs affected, never to the machine.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Iterator, Mapping, MutableSequence, Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from ..capabilities import MOVES, NODE_VMS, PLACEMENT, TIERS
from ..compiled_path import nodes_kernels
from ..errors import PolicyError
from ..params import Param, int_in, one_of
from .base import BasePlatform
from .draws import BufferedDraws

if TYPE_CHECKING:
    from ..jobs import Job

__all__ = ["Nodes", "IdleSet", "sorted_distinct", "VECTOR_FROM", "VECTOR_VMS", "FG_OVERHEAD_MAX", "CPU_IDLE_FLOOR"]

#: Foreground overhead while a lower tier is busy: ``o ~ U(0, FG_OVERHEAD_MAX)``.
FG_OVERHEAD_MAX = 0.037
#: The paper's lower bound of a background process's idle CPU share.
CPU_IDLE_FLOOR = 0.04
_EFF_SINGLE = (0.8, 1.0)
_EFF_MULTI = (0.428, 0.144, 0.2, 0.8)  # mean, sd, truncated to [low, high]
#: Jobs of this many processes, and batches of this many touched nodes, are handled with
#: vectorised operations; smaller ones with scalar loops, whose cost per node is higher but
#: which skip numpy's fixed cost per call (measured on CTC-SP2 at 320 nodes: vectorising
#: every event made consolidation twice as slow; on 10,000 nodes scalar loops made it 3x).
VECTOR_FROM = 48
#: Two-tier machines with fewer VMs than this keep their per-VM state in plain lists and
#: handle every job with scalar loops (a list is read faster than a typed array, and on such
#: a machine no job is wide enough for vectorising to pay: CTC-SP2 on 320 nodes x 2 runs
#: 30 % faster so). Larger machines, and other numbers of tiers, use typed arrays with numpy
#: views.
VECTOR_VMS = 4096
#: What one background ``eff`` draw covers (``bg_efficiency_scope``; see the module docstring).
BG_EFFICIENCY_SCOPES = ("job", "process")
#: The largest machine and the most tiers a spec may ask for (a value past them would exhaust
#: memory when the run starts, long after the spec was accepted).
MAX_NODES = 10_000_000
MAX_TIERS = 64


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


def sorted_distinct(values: np.ndarray) -> np.ndarray:
    """The distinct values of a non-negative integer array, ascending. A few values go through
    a Python set (numpy's fixed cost per call dominates there); many dense ones (node ids,
    job indices of one event) through a bitmap, linear; sparse ones through a sort."""
    if len(values) <= 64:
        return np.array(sorted(set(values.tolist())), dtype=np.int64)
    top = int(values.max()) + 1
    if top <= 16 * len(values):
        seen = np.zeros(top, dtype=bool)
        seen[values] = True
        return np.flatnonzero(seen)
    ordered = np.sort(values)
    return ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))]


def _view(values: MutableSequence[Any], dtype: type) -> np.ndarray:
    """A numpy view of per-VM or per-job state: only a vectorised machine takes views, and it
    keeps that state in typed arrays (see :data:`VECTOR_VMS`)."""
    return np.frombuffer(cast(array, values), dtype=dtype)


class _ListCopy:
    """A numpy copy of a per-VM list, for a machine that keeps its per-VM state in lists: it
    has no views, yet the ``node_vms`` boundary promises them (see
    :class:`~tiersweep.core.capabilities.NodeVms`). A machine with typed arrays sets the view
    as an instance attribute, which takes precedence over this descriptor."""

    def __init__(self, name: str, dtype: type) -> None:
        self.name, self.dtype = name, dtype

    def __get__(self, platform: Any, owner: type | None = None) -> Any:
        if platform is None:
            return self
        return np.array(getattr(platform, self.name), dtype=self.dtype)


class IdleSet:
    """A set of node ids in ``0 .. nodes-1``, kept as a stack so that a start that names no
    nodes takes the most recently freed ones; it starts full (every node) or empty.

    Every operation takes an array of nodes and is vectorised, so starting or releasing a
    job of thousands of processes costs a few array operations, not a Python loop per node.
    Iteration order is deterministic (it depends only on the sequence of operations).
    """

    __slots__ = ("_items", "_pos", "_count", "_kernels")

    def __init__(self, nodes: int, full: bool = True) -> None:
        # Reversed so that an empty machine hands out node 0, 1, 2, ... first.
        self._items = np.arange(nodes - 1, -1, -1, dtype=np.int64)
        self._pos = np.arange(nodes - 1, -1, -1, dtype=np.int64) if full else np.full(nodes, -1, dtype=np.int64)
        self._count = nodes if full else 0
        # The compiled twins of extend and remove (None: the Python reference below).
        self._kernels = nodes_kernels()

    def __len__(self) -> int:
        return self._count

    def __contains__(self, node: int) -> bool:
        return bool(self._pos[node] >= 0)

    def __iter__(self) -> Iterator[int]:
        return iter(self._items[: self._count].tolist())

    def extend(self, nodes: np.ndarray) -> None:
        """Mark all ``nodes`` (busy, distinct) idle, in this order."""
        if self._kernels is not None and nodes.dtype == np.int64:
            self._count = self._kernels.idle_extend(self._items, self._pos, self._count, nodes)
            return
        first, last = self._count, self._count + len(nodes)
        self._items[first:last] = nodes
        self._pos[nodes] = np.arange(first, last)
        self._count = last

    def remove(self, nodes: np.ndarray) -> None:
        """Mark ``nodes`` (idle, distinct) busy. The entries left above the new top fill the
        holes, in stack order (one vectorised step for the whole batch)."""
        if self._kernels is not None and nodes.dtype == np.int64:
            self._count = self._kernels.idle_remove(self._items, self._pos, self._count, nodes)
            return
        items, pos = self._items, self._pos
        top = self._count - len(nodes)
        holes = pos[nodes]
        pos[nodes] = -1
        holes = np.sort(holes[holes < top])
        tail = items[top : self._count]
        movers = tail[pos[tail] >= 0]
        items[holes] = movers
        pos[movers] = holes
        self._count = top

    def take(self, count: int) -> np.ndarray:
        """Remove and return ``count`` nodes (the most recently added first)."""
        top = self._count - count
        taken = self._items[top : self._count][::-1].copy()
        self._pos[taken] = -1
        self._count = top
        return taken

    def claim(self, count: int, nodes: Sequence[int] | None) -> np.ndarray:
        """Mark busy and return the named ``nodes`` (as a new array: the caller's list stays
        the caller's), or, when None, ``count`` nodes as :meth:`take` picks them."""
        if nodes is None:
            return self.take(count)
        held = np.array(nodes, dtype=np.int64)
        self.remove(held)
        return held


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
        bg_efficiency_scope: ``"job"``: one ``eff`` per background job and placement, shared
            by its processes (the paper's job-level figures); ``"process"``: one per process
            and co-location change (see the module docstring).
        seed: The run's seed, for the overhead and efficiency streams.

    Arguments are trusted: :func:`tiersweep.core.platforms.make_platform` checks them against
    :attr:`params` (the one validation path, raising ``SpecError``).
    """

    kind = "nodes"
    params = {
        "nodes": Param(
            int_in(1, MAX_NODES, "each node's VMs take memory"),
            default=None,
            doc="number of nodes (default: the trace's MaxProcs)",
        ),
        "tiers": Param(
            int_in(1, MAX_TIERS, "one priority level per tier"),
            default=1,
            doc="VMs per node: 1 = dedicated, 2 = foreground/background, k = one foreground and k-1 background",
        ),
        "fg_overhead": Param(
            _overhead,
            default=FG_OVERHEAD_MAX,
            doc="foreground slowdown o ~ U(0, fg_overhead) while a lower tier is busy",
        ),
        "bg_efficiency_scope": Param(
            one_of(*BG_EFFICIENCY_SCOPES),
            default="job",
            doc="what one background eff draw covers: job (all its processes, per placement; the paper's job-level "
            "0.428) or process (each process, per co-location change; a wide job runs at its slowest)",
        ),
        "bg_efficiency": Param(
            _efficiency,
            default="paper",
            doc="eff of background processes: paper (U(0.8,1) serial, N(0.428,0.144) in [0.2,0.8] parallel) "
            "or a fixed number",
        ),
    }
    CAPABILITIES = frozenset({PLACEMENT, MOVES, TIERS, NODE_VMS})
    #: See :data:`VECTOR_VMS` and :data:`VECTOR_FROM` (class attributes so that tests can force
    #: either path and compare them).
    vector_vms = VECTOR_VMS
    vector_from = VECTOR_FROM
    #: numpy arrays of :attr:`vm_job` and :attr:`vm_est` (read-only for callers): views when
    #: :attr:`vectorised`, else copies (no policy needs them on such a machine's hot path).
    vm_job_view = _ListCopy("vm_job", np.int64)
    vm_est_view = _ListCopy("vm_est", np.float64)

    def __init__(
        self,
        nodes: int,
        tiers: int = 1,
        *,
        fg_overhead: float = FG_OVERHEAD_MAX,
        bg_efficiency: float | str = "paper",
        bg_efficiency_scope: str = "job",
        seed: int = 0,
    ) -> None:
        self.fg_overhead = float(fg_overhead)
        self.bg_efficiency = bg_efficiency
        #: Whether one background eff covers a whole job (see the module docstring).
        self.eff_per_job = bg_efficiency_scope == "job"
        self.capacity = nodes
        self.tiers = tiers
        vms = nodes * tiers
        # Per-VM state (``vm = node * tiers + tier``) in typed arrays with a numpy view of
        # each: a change on a few nodes is a few scalar reads and writes, a change on
        # thousands is a few vectorised operations on the views (see VECTOR_FROM). Both see
        # the same memory. Small two-tier machines use plain lists (see VECTOR_VMS).
        #: Whether per-VM state has numpy views and wide jobs are handled vectorised.
        self.vectorised = tiers != 2 or vms >= self.vector_vms
        #: Jobs of at least this many processes are handled vectorised.
        self.bulk_from = self.vector_from if self.vectorised else sys.maxsize

        def store(code: str, value: float) -> MutableSequence[Any]:
            return array(code, [value]) * vms if self.vectorised else [value] * vms

        #: Job index per VM, -1 when idle. Read-only for callers.
        self.vm_job: MutableSequence[int] = store("q", -1)
        #: Estimated CPU usage of each VM's process (0 when idle). Read-only for callers.
        self.vm_est: MutableSequence[float] = store("d", 0.0)
        self._cpu: MutableSequence[float] = store("d", 0.0)  # the process's true CPU usage
        self._factor: MutableSequence[float] = store("d", 0.0)  # o (foreground) or eff (background) of this epoch
        self._prate: MutableSequence[float] = store("d", 1.0)  # the process's rate in this epoch
        # Per node: CPU use beyond 1.
        self._overflow: MutableSequence[float] = array("d", [0.0]) * nodes if self.vectorised else [0.0] * nodes
        if self.vectorised:
            self.vm_job_view = _view(self.vm_job, np.int64)
            self.vm_est_view = _view(self.vm_est, np.float64)
            self._cpu_view = _view(self._cpu, np.float64)
            self._factor_view = _view(self._factor, np.float64)
            self._prate_view = _view(self._prate, np.float64)
            self._overflow_view = _view(self._overflow, np.float64)
        self._vms: dict[int, list[int] | np.ndarray] = {}  # running job index -> its VMs
        self._running: dict[int, Job] = {}
        # Per job index (grown on demand): the current rate and the size, for look-ups of the
        # jobs occupying a batch of VMs.
        self._rate: MutableSequence[float] = array("d") if self.vectorised else []
        self._size: MutableSequence[int] = array("q") if self.vectorised else []
        # This placement's eff (job scope).
        self._job_eff: MutableSequence[float] = array("d") if self.vectorised else []
        self._rate_view = np.zeros(0)
        self._size_view = np.zeros(0, dtype=np.int64)
        self._job_eff_view = np.zeros(0)
        #: CPU use beyond each node's capacity, summed over nodes. The paper's 4 % lower bound
        #: of a background process's idle CPU lets a node's processes use more than the whole
        #: CPU when the scheduler's estimates are wrong; utilisation counts at most 1 per node,
        #: so the engine integrates this over time and subtracts it from the busy CPU time.
        self.overflow_rate = 0.0
        self._idle = [IdleSet(nodes) for _ in range(tiers)]
        #: Free nodes, when only counts are kept (see :meth:`prepare`); None while ids are tracked.
        self._free: int | None = None
        self._dirty: set[int] = set()  # nodes whose occupancy changed, from small jobs
        self._dirty_bulk: list[np.ndarray] = []  # ... and from large ones
        self._overhead = BufferedDraws(seed, "fg_overhead")
        self._eff = BufferedDraws(seed, "bg_eff")
        #: The compiled twins of the list-based two-tier rate loops, or None for the Python
        #: reference (see :mod:`tiersweep.core.compiled_path`).
        self._kernels = nodes_kernels() if not self.vectorised else None

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
        return offered - {NODE_VMS, MOVES, TIERS} if self._free is not None else offered

    def prepare(self, requires: frozenset[str], record_units: bool) -> None:
        """For a policy that never names nodes, moves jobs or uses a background tier, and no
        record of which nodes a job held, keep a count of free nodes instead of node ids: a
        start or a release is then O(1), not O(size) (on a 93,312-processor log, hundreds of
        millions of node ids fewer). With only the foreground used, every lower tier stays
        idle, so every job runs at rate 1 whatever the number of tiers. Schedules are the
        same either way (a test checks it)."""
        if not requires & {NODE_VMS, MOVES, TIERS} and not record_units:
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
        return self.vm_job[node * self.tiers + tier]

    def est_load(self, node: int, first_tier: int, end_tier: int) -> float:
        """Estimated CPU usage of the processes in tiers ``first_tier .. end_tier - 1`` of ``node``."""
        base = node * self.tiers
        return sum(self.vm_est[base + first_tier : base + end_tier])

    # -- resources -------------------------------------------------------------------------
    def _check_vms(self, job: Job, tier: int, nodes: Sequence[int], owner: int) -> str | None:
        if len(nodes) != job.size:
            return f"names {len(nodes)} nodes for a job of size {job.size}"
        ids = np.asarray(nodes)
        if ids.dtype.kind not in "iu":
            return f"names nodes that are not integers ({ids.dtype})"
        if len(ids) < self.bulk_from:
            ids = ids.tolist()
            if len(set(ids)) != len(ids):
                return "names a node twice (one process per VM, all in one tier)"
            k, occ = self.tiers, self.vm_job
            for node in ids:
                if not 0 <= node < self.capacity:
                    return f"node {node} does not exist (0..{self.capacity - 1})"
                occupant = occ[node * k + tier]
                if occupant != -1 and occupant != owner:
                    return f"node {node} is busy" if k == 1 else f"VM (node {node}, tier {tier}) is busy"
            return None
        outside = (ids < 0) | (ids >= self.capacity)
        if outside.any():
            return f"node {ids[outside.argmax()]} does not exist (0..{self.capacity - 1})"
        if len(sorted_distinct(ids)) != len(ids):
            return "names a node twice (one process per VM, all in one tier)"
        occupants = self.vm_job_view[ids * self.tiers + tier]
        busy = (occupants != -1) & (occupants != owner)
        if busy.any():
            node = ids[busy.argmax()]
            return f"node {node} is busy" if self.tiers == 1 else f"VM (node {node}, tier {tier}) is busy"
        return None

    def check_start(self, job: Job, tier: int, nodes: Sequence[int] | None) -> str | None:
        if not 0 <= tier < self.tiers:
            return f"tier {tier} does not exist on a platform with {self.tiers} tier(s)"
        if self._free is not None:
            if nodes is not None:
                return "names nodes, but the policy does not require node_vms (only free nodes are counted)"
            if tier != 0:
                return f"starts in tier {tier}, but the policy does not require tiers (only the foreground is used)"
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

    def _grow_job_arrays(self, index: int) -> None:
        grown = max(2 * len(self._rate), index + 1, 1024)
        self._size.extend([0] * (grown - len(self._size)))  # no view is alive here
        self._job_eff.extend([0.0] * (grown - len(self._job_eff)))
        self._rate.extend([0.0] * (grown - len(self._rate)))
        if self.vectorised:
            self._rate_view = _view(self._rate, np.float64)
            self._size_view = _view(self._size, np.int64)
            self._job_eff_view = _view(self._job_eff, np.float64)

    def start(self, job: Job, tier: int, nodes: Sequence[int] | None) -> tuple[Sequence[int], float]:
        if self._free is not None:
            self._free -= job.size
            return range(job.size), 1.0  # as many units as processes; which ones, nobody asks
        held = self._idle[tier].claim(job.size, nodes)
        k, index = self.tiers, job.index
        if job.size < self.bulk_from:
            held = held.tolist()
            vms: list[int] | np.ndarray = [node * k + tier for node in held]
            occ = self.vm_job
            for vm in vms:
                occ[vm] = index
            if k == 1:
                return cast(Sequence[int], held), 1.0  # a list of node ids, or an array of them
            cpu, est = self._cpu, self.vm_est
            for vm, true, estimate in zip(vms, job.cpu_true, job.cpu_est):
                cpu[vm] = true
                est[vm] = estimate
            self._dirty.update(held)
        else:
            vms = held * k + tier
            self.vm_job_view[vms] = index
            if k == 1:
                return cast(Sequence[int], held), 1.0  # a list of node ids, or an array of them
            self._cpu_view[vms] = job.cpu_true
            self.vm_est_view[vms] = job.cpu_est
            self._dirty_bulk.append(held)
        self._vms[index] = vms
        self._running[index] = job
        if index >= len(self._rate):
            # Release the views so the arrays can grow (_grow_job_arrays makes new ones).
            self._rate_view = self._size_view = self._job_eff_view = None  # type: ignore[assignment]
            self._grow_job_arrays(index)
        self._rate[index] = 0.0  # the real rate is reported by rate_changes()
        self._size[index] = job.size
        if tier and self.eff_per_job:
            self._job_eff[index] = self._draw_eff(job.size)  # a new placement epoch of the job
        self.rates_dirty = True
        return cast(Sequence[int], held), 0.0  # a list of node ids, or an array of them

    def release(self, job: Job) -> None:
        if self._free is not None:
            self._free += job.size
            return
        k, tier, nodes = self.tiers, job.tier, job.nodes
        if type(nodes) is list:
            occ, est = self.vm_job, self.vm_est
            for node in nodes:
                vm = node * k + tier
                occ[vm] = -1
                est[vm] = 0.0
            self._idle[tier].extend(np.array(nodes, dtype=np.int64))
        else:
            ids = cast(np.ndarray, nodes)  # start holds a large job's nodes as an array
            vms = ids * k + tier
            self.vm_job_view[vms] = -1
            self.vm_est_view[vms] = 0.0
            self._idle[tier].extend(ids)
        if k == 1:
            return
        if type(nodes) is list:
            self._dirty.update(nodes)
        else:
            self._dirty_bulk.append(cast(np.ndarray, nodes))
        del self._running[job.index]
        del self._vms[job.index]
        self.rates_dirty = True

    def move(self, job: Job, tier: int, nodes: Sequence[int]) -> tuple[Sequence[int], float]:
        self.release(job)
        return self.start(job, tier, nodes)

    # -- rates -----------------------------------------------------------------------------
    def _draw_overhead(self) -> float:
        return self._overhead.uniform(0.0, self.fg_overhead) if self.fg_overhead else 0.0

    def _draw_eff(self, size: int) -> float:
        if self.bg_efficiency != "paper":
            return cast(float, self.bg_efficiency)  # a number (see _efficiency)
        if size == 1:
            return self._eff.uniform(*_EFF_SINGLE)
        return self._eff.truncated_normal(*_EFF_MULTI)

    def _process_eff(self, index: int) -> float:
        """A fresh eff for a process of job ``index`` whose co-location changed (process scope)."""
        return self._draw_eff(self._size[index])

    def rate_changes(self) -> list[tuple[Job, float]]:
        """Re-rate the processes on the nodes whose occupancy changed, tier by tier: a job
        whose rate changed re-rates the lower tiers on all of its nodes, since its consumption
        changed there. Few touched nodes on two tiers take the scalar loop
        (:meth:`_two_tier_rate_changes`); otherwise every step is vectorised over the nodes
        it touches (:meth:`_bulk_rate_changes`). Both give the same bits (a test checks it)."""
        self.rates_dirty = False
        if not self._dirty and not self._dirty_bulk:
            return []
        if self.tiers == 2 and not self._dirty_bulk and len(self._dirty) < self.bulk_from:
            dirty = sorted(self._dirty)
            self._dirty = set()
            if self._kernels is not None:
                changes = self._kernels.two_tier_rate_changes(self, dirty, CPU_IDLE_FLOOR)
                self._kernels.update_overflow(self, dirty, changes)
                return changes
            changes = self._two_tier_rate_changes(dirty)
            if self.vectorised and any(type(job.nodes) is not list for job, _ in changes):
                # A wide job's rate changed: measure its nodes vectorised.
                touched = [np.array(dirty, dtype=np.int64), *(np.asarray(job.nodes) for job, _ in changes)]
                self._update_overflow_bulk(sorted_distinct(np.concatenate(touched)))
            else:
                self._update_overflow(dirty, changes)
            return changes
        chunks = [*self._dirty_bulk, np.fromiter(self._dirty, np.int64, len(self._dirty))]
        self._dirty, self._dirty_bulk = set(), []
        return self._bulk_rate_changes(sorted_distinct(np.concatenate(chunks)))

    def _two_tier_rate_changes(self, dirty: list[int]) -> list[tuple[Job, float]]:
        """:meth:`rate_changes` for ``tiers: 2`` and a few touched nodes, one node at a time."""
        occ, factor, running, cpu = self.vm_job, self._factor, self._running, self._cpu
        prate, rates, vms_of = self._prate, self._rate, self._vms
        draw_overhead = self._draw_overhead
        eff_of = self._job_eff.__getitem__ if self.eff_per_job else self._process_eff
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
                    factor[2 * node + 1] = eff_of(bg)
        changes: list[tuple[Job, float]] = []
        stale = set(dirty)
        for index in sorted(affected_fg):
            vms = vms_of[index]
            rate = min(map(prate.__getitem__, vms)) if type(vms) is list else float(self._prate_view[vms].min())
            if rate != rates[index]:
                rates[index] = rate
                job = running[index]
                changes.append((job, rate))
                for node in job.nodes:
                    bg = occ[2 * node + 1]
                    if bg >= 0:
                        affected_bg.add(bg)
                        stale.add(int(node))
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
            vms = vms_of[index]
            rate = min(map(prate.__getitem__, vms)) if type(vms) is list else float(self._prate_view[vms].min())
            if rate != rates[index]:
                rates[index] = rate
                changes.append((running[index], rate))
        return changes

    def _update_overflow(self, dirty: list[int], changes: list[tuple[Job, float]]) -> None:
        """Re-measure how far the touched nodes' CPU use exceeds 1 (see :attr:`overflow_rate`),
        for two tiers, one node at a time."""
        nodes = set(dirty)
        for job, _ in changes:
            nodes.update(cast(np.ndarray, job.nodes).tolist() if type(job.nodes) is not list else job.nodes)
        occ, cpu, rates, overflow = self.vm_job, self._cpu, self._rate, self._overflow
        total = self.overflow_rate
        # A node with one process cannot exceed 1 (its use is cpu x rate <= 1): only nodes
        # with both VMs busy are measured; the others just lose any excess they had.
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
        self.overflow_rate = total if total > 1e-12 else 0.0  # no drift below zero

    def _draw_factors(self, dirty: np.ndarray, occupants: np.ndarray) -> None:
        """A new placement epoch for every process on the ``dirty`` nodes (``occupants``: their
        VMs' jobs, one row per node): draw the foreground overheads and the background
        efficiencies, node by node and tier by tier, as a loop over the nodes would."""
        k, factor = self.tiers, self._factor_view
        busy = occupants >= 0
        # Whether some higher tier of the same node is busy (the processes that share a CPU).
        higher_busy = np.zeros_like(busy)
        higher_busy[:, 1:] = np.logical_or.accumulate(busy, axis=1)[:, :-1]
        fg = busy[:, 0]
        overhead = np.zeros(len(dirty))
        drawn = fg & busy[:, 1:].any(axis=1)
        if self.fg_overhead:
            overhead[drawn] = self._overhead.uniforms(int(np.count_nonzero(drawn)), 0.0, self.fg_overhead)
        factor[dirty[fg] * k] = overhead[fg]
        sharing = busy & higher_busy
        if not sharing.any():
            return
        vms = (dirty * k)[:, None] + np.arange(k)
        if self.bg_efficiency != "paper":
            factor[vms[sharing]] = self.bg_efficiency
            return
        if self.eff_per_job:
            factor[vms[sharing]] = self._job_eff_view[occupants[sharing]]
            return
        single = self._size_view[occupants[sharing]] == 1
        factor[vms[sharing]] = self._eff.mixed(single, _EFF_SINGLE, _EFF_MULTI)

    def _job_rates(self, indices: np.ndarray) -> np.ndarray:
        """Each job's rate: the rate of its slowest process."""
        prate, vms_of = self._prate_view, self._vms
        if len(indices) == 1:
            return prate[vms_of[int(indices[0])]].min(keepdims=True)
        groups = [vms_of[index] for index in indices.tolist()]
        starts = np.cumsum([0] + [len(g) for g in groups[:-1]])
        return np.minimum.reduceat(prate[np.concatenate(groups)], starts)

    def _bulk_rate_changes(self, dirty: np.ndarray) -> list[tuple[Job, float]]:
        """:meth:`rate_changes` for any number of tiers, vectorised over the touched nodes."""
        k, occ, cpu, prate, factor = self.tiers, self.vm_job_view, self._cpu_view, self._prate_view, self._factor_view
        rate, running = self._rate_view, self._running
        self._draw_factors(dirty, occ[(dirty * k)[:, None] + np.arange(k)])
        changes: list[tuple[Job, float]] = []
        moved: list[np.ndarray] = [dirty]  # every node whose use may have changed
        stale = dirty
        for t in range(k):
            vms = stale * k + t
            occupants = occ[vms]
            present = occupants >= 0
            vms, occupants = vms[present], occupants[present]
            if not len(vms):
                continue
            if t == 0:
                prate[vms] = 1.0 - factor[vms]
            else:
                # The CPU the higher tiers consume, summed tier by tier (as a loop would).
                used = np.zeros(len(vms))
                higher_busy = np.zeros(len(vms), dtype=bool)
                for s in range(t, 0, -1):
                    above = occ[vms - s]
                    busy = above >= 0
                    used = used + np.where(busy, cpu[vms - s] * rate[above], 0.0)
                    higher_busy |= busy
                idle = np.maximum(1.0 - used, CPU_IDLE_FLOOR)
                need = cpu[vms]
                prate[vms] = np.where(higher_busy, factor[vms] * np.where(idle >= need, 1.0, idle / need), 1.0)
            affected = sorted_distinct(occupants)
            new = self._job_rates(affected)
            changed = new != rate[affected]
            if not changed.any():
                continue
            rate[affected[changed]] = new[changed]
            spread: list[np.ndarray] = []
            for index, value in zip(affected[changed].tolist(), new[changed].tolist()):
                job = running[index]
                changes.append((job, value))
                spread.append(np.asarray(job.nodes))
            moved.extend(spread)
            if t < k - 1:  # its consumption changed on all its nodes: re-rate the tiers below
                stale = sorted_distinct(np.concatenate([stale, *spread]))
        self._update_overflow_bulk(sorted_distinct(np.concatenate(moved)) if len(moved) > 1 else dirty)
        return changes

    def _update_overflow_bulk(self, nodes: np.ndarray) -> None:
        """:meth:`_update_overflow` for any number of tiers, vectorised over ``nodes``."""
        k, occ, cpu, rate = self.tiers, self.vm_job_view, self._cpu_view, self._rate_view
        base = nodes * k
        used = np.zeros(len(nodes))
        for t in range(k):
            occupants = occ[base + t]
            used = used + np.where(occupants >= 0, cpu[base + t] * rate[occupants], 0.0)
        excess = np.where(used > 1.0, used - 1.0, 0.0)
        delta = excess - self._overflow_view[nodes]
        self._overflow_view[nodes] = excess
        delta = delta[delta != 0.0]
        if len(delta):
            # Summed one node at a time, in node order (numpy's sum would pair them up).
            total = float(np.cumsum(np.concatenate(([self.overflow_rate], delta)))[-1])
            self.overflow_rate = total if total > 1e-12 else 0.0  # no drift below zero
