"""Scheduling policies, registered by name.

Add a policy by writing its module, importing it here and adding it to :data:`POLICIES` with
the parameters it accepts; the spec validator and ``--help`` pick it up from there.
"""

from __future__ import annotations

from ..errors import SpecError
from ..params import Param, non_negative_number, number_or, unit_interval
from .backfill import Backfill, Conservative, Easy, Fcfs, Selective
from .base import BasePolicy, Decision, Move, Reject, Start, Suspend
from .consolidation import DEFAULT_BG_THRESHOLD, Ambf, Amcbf, Cmbf, Cmcbf, Consolidation, Smcbf
from .shared_vm import VM_BACKFILL_PARAMS, VmBackfill

__all__ = [
    "POLICIES",
    "POLICY_PARAMS",
    "COMMON_POLICY_PARAMS",
    "make_policy",
    "BasePolicy",
    "Decision",
    "Start",
    "Suspend",
    "Move",
    "Reject",
    "Backfill",
    "Consolidation",
]

#: Policy classes by registry name.
POLICIES: dict[str, type[BasePolicy]] = {
    "fcfs": Fcfs,
    "easy": Easy,
    "conservative": Conservative,
    "selective": Selective,
    "cmbf": Cmbf,
    "ambf": Ambf,
    "cmcbf": Cmcbf,
    "amcbf": Amcbf,
    "smcbf": Smcbf,
}

#: Keys every policy accepts. ``migration_cost`` is applied by the engine; it changes nothing
#: for policies that never preempt, and is accepted by all so that one sweep grid can cross
#: schedulers with migration costs.
COMMON_POLICY_PARAMS: dict[str, Param] = {
    "migration_cost": Param(
        non_negative_number,
        default=20.0,
        doc="seconds a suspended job holds its VMs on restart before it progresses (paper 000: 20)",
    ),
}

_XFACTOR = Param(
    number_or("adaptive", minimum=1.0),
    default="adaptive",
    doc="starvation threshold: a number >= 1, or adaptive = max(10, mean bounded slowdown)",
)
_BG_THRESHOLD = Param(
    unit_interval,
    default=DEFAULT_BG_THRESHOLD,
    doc="background processes only on nodes whose higher tiers are estimated below this",
)

#: The keys each policy accepts besides ``name`` and the common ones, passed to its constructor.
POLICY_PARAMS: dict[str, dict[str, Param]] = {
    "fcfs": {},
    "easy": {},
    "conservative": {},
    "selective": {"xfactor_threshold": _XFACTOR},
    "cmbf": {},
    "ambf": {},
    "cmcbf": {"bg_threshold": _BG_THRESHOLD},
    "amcbf": {"bg_threshold": _BG_THRESHOLD},
    "smcbf": {"bg_threshold": _BG_THRESHOLD, "xfactor_threshold": _XFACTOR},
}


def make_policy(name: str, **params: object) -> BasePolicy:
    """Instantiate the policy registered as ``name``.

    ``params`` are its own keys (see :data:`POLICY_PARAMS`); common keys such as
    ``migration_cost`` are accepted and ignored here, since the engine applies them.
    """
    try:
        cls = POLICIES[name]
    except KeyError:
        raise SpecError(f"policy.name: unknown policy {name!r}; valid choices: {', '.join(POLICIES)}") from None
    own = {k: v for k, v in params.items() if k not in COMMON_POLICY_PARAMS}
    return cls(**own)


# -- scheduling over fat-tree embeddings (paper 004) --------------------------------------------
from .bandwidth import BANDWIDTH_POLICIES, BANDWIDTH_POLICY_PARAMS  # noqa: E402

POLICIES.update(BANDWIDTH_POLICIES)
POLICY_PARAMS.update(BANDWIDTH_POLICY_PARAMS)


# Paper 001's FCFS with backfilling on shared VMs, with its resource selectors.
__all__ += ["VmBackfill"]
POLICIES["vm_backfill"] = VmBackfill
POLICY_PARAMS["vm_backfill"] = VM_BACKFILL_PARAMS
