"""Scheduling policies, registered by name.

A policy is a :class:`BasePolicy` subclass declaring its ``name``, its ``params`` and the platform
capabilities it ``requires``; :func:`register_policy` adds it (the built-ins below are registered
the same way as a plug-in would be), and the spec validator and ``--help`` pick it up from there.
:func:`make_policy` is the one checked way to build one from spec parameters.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..decisions import Decision, Move, Reject, Start, Suspend
from ..params import validate_params
from ..registry import Registry, lazy_exports
from .backfill import Backfill, Conservative, Easy, Fcfs, Selective
from .base import BasePolicy

if TYPE_CHECKING:
    from .consolidation import Consolidation
    from .vm_backfill import VmBackfill

__all__ = [
    "POLICIES",
    "register_policy",
    "policy_class",
    "make_policy",
    "BasePolicy",
    "Decision",
    "Start",
    "Suspend",
    "Move",
    "Reject",
    "Backfill",
    "Consolidation",
    "VmBackfill",
]

#: Policy classes by registry name (``policy.name``), in registration order.
POLICIES: Registry[type[BasePolicy]] = Registry("policy", BasePolicy, "name", ("name",))
#: Register a policy class (usable as a class decorator); see :meth:`Registry.register`.
register_policy = POLICIES.register
#: The policy class registered as a name, or a SpecError listing the valid ones.
policy_class = POLICIES.lookup


def make_policy(name: str, **params: Any) -> BasePolicy:
    """Build the policy registered as ``name`` from its spec parameters, outside a run plan
    (a run builds its policy from its :class:`~tiersweep.core.plan.RunPlan`, checked once).

    ``params`` are checked against the class's declared ``params`` (unknown keys and bad values
    raise :class:`~tiersweep.core.errors.SpecError` naming ``policy.KEY``) and defaults are
    filled in.
    """
    cls = policy_class(name)
    return cls(**validate_params("policy", params, cls.params))


# The built-ins, in the order --help lists them. The backfilling family is imported with the
# package (EASY is the default); the others only when a spec names them (see Registry).
for _cls in (Fcfs, Easy, Conservative, Selective):
    register_policy(_cls)
for _name, _module, _qualname in (
    ("cmbf", "consolidation", "Cmbf"),
    ("ambf", "consolidation", "Ambf"),
    ("cmcbf", "consolidation", "Cmcbf"),
    ("amcbf", "consolidation", "Amcbf"),
    ("smcbf", "consolidation", "Smcbf"),
    ("bw_fcfs", "embedding", "BwFcfs"),
    ("sbf", "embedding", "Sbf"),
    ("sdf", "embedding", "Sdf"),
    ("bgmbf", "embedding", "Bgmbf"),
    ("bgmbfsdf", "embedding", "Bgmbfsdf"),
    ("bw_reject", "embedding", "BwReject"),
    ("vm_backfill", "vm_backfill", "VmBackfill"),
    ("keasy", "two_tier_easy", "Keasy"),
    ("reasy", "two_tier_easy", "Reasy"),
    ("gs", "gang", "Gs"),
    ("bgs", "gang", "Bgs"),
    ("mgs", "gang", "Mgs"),
):
    POLICIES.register_lazy(_name, f"{__name__}.{_module}", _qualname)

# Classes re-exported here but defined in a lazily imported module (PEP 562).
__getattr__ = lazy_exports(__name__, {"Consolidation": "consolidation", "VmBackfill": "vm_backfill"})
