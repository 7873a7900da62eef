"""Capabilities: what a platform offers and a policy needs, checked before a run starts.

A platform declares the capabilities it offers (:attr:`BasePlatform.CAPABILITIES
<tiersweep.core.platforms.base.BasePlatform.CAPABILITIES>`, narrowed by its parameters in
:meth:`~tiersweep.core.platforms.base.BasePlatform.capabilities_of`), a policy the ones it needs
(:attr:`BasePolicy.requires <tiersweep.core.policies.base.BasePolicy.requires>`). The spec
validator refuses a pair where the platform lacks one, naming the policy, the platform and the
missing capability, so that a bad pair is a spec error and never an ``AttributeError`` mid-run.

Each capability is a protocol listing the platform members a policy may use (:data:`PROTOCOLS`);
a platform that offers it implements them (the conformance suite in
:mod:`tiersweep.contract` checks that it does), and a policy uses nothing else.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import numpy as np

    from .jobs import Job

__all__ = [
    "PLACEMENT",
    "MOVES",
    "TIERS",
    "TIME_TRACKING",
    "NODE_VMS",
    "EMBEDDING",
    "VM_CAPACITIES",
    "ROWS",
    "CAPABILITIES",
    "MEMBERS",
    "PLATFORM_MEMBERS",
    "PROTOCOLS",
    "Platform",
    "members_of",
    "missing_members",
    "describe",
    "pair_problem",
]

#: The platform chooses the units of a job itself when a ``Start`` names none. Platforms
#: without it (``fat_tree``: a placement is an embedding with a virtual switch) need a policy
#: that names the units.
PLACEMENT = "placement"
#: Running jobs can be moved to other VMs (``Move``): ``check_move`` and ``move``.
MOVES = "moves"
#: Background tiers: more than one VM per node, of decreasing priority.
TIERS = "tiers"
#: The engine calls ``advance`` at every new timestamp (time-weighted statistics).
TIME_TRACKING = "time_tracking"
#: Per-node VM state for placement decisions: ``idle_nodes(tier)``, ``occupant(node, tier)``,
#: ``est_load(node, first, end)``, the flat read-only sequences ``vm_job`` and ``vm_est``
#: (indexed ``node * tiers + tier``) for policies' inner loops, numpy arrays of them for
#: vectorised ones, and ``bulk_from``, the job size from which units are arrays (see
#: :class:`NodeVms`).
NODE_VMS = "node_vms"
#: Virtual-cluster embeddings in a fat-tree network with guaranteed bandwidth: ``state``,
#: ``topo``, ``demand``, ``request``, ``reservation``.
EMBEDDING = "embedding"
#: Shared VMs with equilibrium and potential capacities (paper 001): ``ec``,
#: ``potential_capacities``, ``idle_vms``, ``free_capacity``, ...
VM_CAPACITIES = "vm_capacities"
#: Gang scheduling on an Ousterhout matrix: ``rows`` time slots of the machine's columns that
#: take turns (peers in round robin, not priority tiers); a job runs in one row, named by the
#: tier of its ``Start``. ``busy_rows``, ``rate_with(busy_rows)`` and ``guaranteed_rate`` say
#: how fast jobs progress; ``idle_columns(row)`` names a row's idle columns for moves (column
#: ids are kept only for a policy that also requires ``moves``, or when units are recorded).
ROWS = "rows"

#: Every capability with one line of meaning (for error messages and ``--help``).
CAPABILITIES: dict[str, str] = {
    PLACEMENT: "chooses a job's units itself when a start names none",
    MOVES: "moves running jobs between VMs",
    TIERS: "background tiers (more than one VM per node)",
    TIME_TRACKING: "time-weighted statistics advanced at every timestamp",
    NODE_VMS: "per-node VM occupancy and load queries",
    EMBEDDING: "virtual-cluster embeddings in a fat-tree network",
    VM_CAPACITIES: "shared VMs with equilibrium and potential capacities",
    ROWS: "gang scheduling: rows of the machine's columns that take turns in time slices",
}


# -- the boundary: what a policy may read or call of a platform, per capability ---------------------
#
# Each capability is a protocol listing every member a policy may use, fast-path views included;
# :data:`MEMBERS` is derived from them, and the contract suite checks that a platform offering a
# capability has all of its members (:func:`missing_members`). A policy uses nothing else.


class Platform(Protocol):
    """What every platform offers the engine and every policy (see
    :class:`~tiersweep.core.platforms.base.BasePlatform` for when each is called)."""

    kind: str
    capacity: int
    tiers: int
    rates_dirty: bool
    overflow_rate: float
    capabilities: frozenset[str]
    tracks_time: bool

    def prepare(self, requires: frozenset[str], record_units: bool) -> None: ...
    def free_count(self, tier: int = 0) -> int: ...
    def check_start(self, job: Job, tier: int, nodes: Sequence[int] | None) -> str | None: ...
    def start(self, job: Job, tier: int, nodes: Sequence[int] | None) -> tuple[Sequence[int], float]: ...
    def release(self, job: Job) -> None: ...
    def same_units(self, units: Sequence[int], other: Sequence[int]) -> bool: ...
    def rate_changes(self) -> Iterable[tuple[Job, float]]: ...
    def extra_metrics(self, records: Mapping[str, Any], span_start: float, span_end: float) -> dict[str, float]: ...
    def extra_job_records(self, jobs: Sequence[Job]) -> dict[str, Any]: ...


class Placement(Protocol):
    """:data:`PLACEMENT`: ``start`` with no units named picks them (nothing more to call)."""


class Moves(Protocol):
    """:data:`MOVES`."""

    def check_move(self, job: Job, tier: int, nodes: Sequence[int]) -> str | None: ...
    def move(self, job: Job, tier: int, nodes: Sequence[int]) -> tuple[Sequence[int], float]: ...


class Tiers(Protocol):
    """:data:`TIERS`: ``tiers`` above 1 (a member of every platform)."""


class TimeTracking(Protocol):
    """:data:`TIME_TRACKING`."""

    def advance(self, now: float) -> None: ...


class NodeVms(Protocol):
    """:data:`NODE_VMS`: per-VM state, indexed ``node * tiers + tier``.

    A job's units (``job.nodes``) and the placements a policy builds are a list of ints when
    the job has fewer than ``bulk_from`` processes, else an int64 numpy array: a policy picks
    its scalar or its vectorised path by comparing a size with ``bulk_from``, never by a
    type. ``vm_job_view`` and ``vm_est_view`` are numpy arrays of ``vm_job`` and ``vm_est``
    (views on a machine that keeps typed arrays, copies on one that keeps lists, where
    ``bulk_from`` is so large that no policy needs them on the hot path).
    """

    bulk_from: int
    vm_job: Sequence[int]
    vm_est: Sequence[float]
    vm_job_view: np.ndarray
    vm_est_view: np.ndarray

    def idle_nodes(self, tier: int = 0) -> Collection[int]: ...
    def occupant(self, node: int, tier: int) -> int: ...
    def est_load(self, node: int, first_tier: int, end_tier: int) -> float: ...


class Embedding(Protocol):
    """:data:`EMBEDDING`."""

    state: Any
    topo: Any
    demand: Any
    request: Any
    reservation: Any


class VmCapacities(Protocol):
    """:data:`VM_CAPACITIES`."""

    ec: Any
    vms: Any
    share: Any
    idle_vms: Any
    potential_capacities: Any
    idle_potential_capacities: Any
    free_capacity: Any
    active_count: Any


class Rows(Protocol):
    """:data:`ROWS`."""

    rows: int
    busy_rows: Any
    rate_with: Any
    guaranteed_rate: Any
    idle_columns: Any


def members_of(protocol: type) -> tuple[str, ...]:
    """The members a protocol declares: its annotated attributes, then its methods."""
    methods = [name for name, value in vars(protocol).items() if callable(value) and not name.startswith("_")]
    return tuple(dict.fromkeys([*vars(protocol).get("__annotations__", {}), *methods]))


#: Each capability's protocol.
PROTOCOLS: dict[str, type] = {
    PLACEMENT: Placement,
    MOVES: Moves,
    TIERS: Tiers,
    TIME_TRACKING: TimeTracking,
    NODE_VMS: NodeVms,
    EMBEDDING: Embedding,
    VM_CAPACITIES: VmCapacities,
    ROWS: Rows,
}
#: The members every platform has (:class:`Platform`).
PLATFORM_MEMBERS: tuple[str, ...] = members_of(Platform)
#: The members (methods or attributes) a platform offering a capability provides.
MEMBERS: dict[str, tuple[str, ...]] = {capability: members_of(protocol) for capability, protocol in PROTOCOLS.items()}


def missing_members(platform: object) -> list[tuple[str, str]]:
    """The ``(capability, member)`` pairs that ``platform`` offers but lacks, and the
    ``("", member)`` of :class:`Platform` it lacks: empty for a conforming platform."""
    missing = [("", m) for m in PLATFORM_MEMBERS if not hasattr(platform, m)]
    offered: frozenset[str] = getattr(platform, "capabilities", frozenset())
    return missing + [(c, m) for c in sorted(offered) for m in MEMBERS.get(c, ()) if not hasattr(platform, m)]


def describe(capability: str) -> str:
    """``capability`` with its meaning, e.g. ``'tiers' (background tiers ...)``."""
    return f"{capability!r} ({CAPABILITIES.get(capability, 'undeclared capability')})"


def pair_problem(policy: str, requires: frozenset[str], platform: str, offers: frozenset[str]) -> str | None:
    """Why policy ``policy`` (needing ``requires``) cannot run on ``platform`` (offering
    ``offers``), in one line naming both and every missing capability; None if it can."""
    missing = sorted(requires - offers)
    if not missing:
        return None
    what = ", ".join(describe(c) for c in missing)
    return f"policy {policy!r} needs {what}, which platform {platform} does not offer"
