"""Capabilities: what a platform offers and a policy needs, checked before a run starts.

A platform declares the capabilities it offers (:attr:`BasePlatform.CAPABILITIES
<tiersweep.core.platforms.base.BasePlatform.CAPABILITIES>`, narrowed by its parameters in
:meth:`~tiersweep.core.platforms.base.BasePlatform.capabilities_of`), a policy the ones it needs
(:attr:`BasePolicy.requires <tiersweep.core.policies.base.BasePolicy.requires>`). The spec
validator refuses a pair where the platform lacks one, naming the policy, the platform and the
missing capability, so that a bad pair is a spec error and never an ``AttributeError`` mid-run.

Each capability stands for a set of platform methods; a platform that offers it implements
them (the conformance suite in :mod:`tiersweep.core.testing` checks that it does).
"""

from __future__ import annotations

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
#: ``est_load(node, first, end)``, and the flat read-only sequences ``vm_job`` and ``vm_est``
#: (indexed ``node * tiers + tier``) for policies' inner loops (a platform may also offer
#: numpy views of them, as ``nodes`` does on large machines, for vectorised policies).
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


#: The members (methods or attributes) a platform offering a capability provides; the
#: conformance suite checks them on an instance.
MEMBERS: dict[str, tuple[str, ...]] = {
    PLACEMENT: (),
    MOVES: ("check_move", "move"),
    TIERS: (),
    TIME_TRACKING: ("advance",),
    NODE_VMS: ("idle_nodes", "occupant", "est_load", "vm_job", "vm_est"),
    EMBEDDING: ("state", "topo", "demand", "request", "reservation"),
    VM_CAPACITIES: ("ec", "vms", "share", "idle_vms", "potential_capacities", "idle_potential_capacities", "free_capacity", "active_count"),
    ROWS: ("rows", "busy_rows", "rate_with", "guaranteed_rate", "idle_columns"),
}


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
