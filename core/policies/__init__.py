"""Scheduling policies, registered by name.

A policy is a :class:`BasePolicy` subclass declaring its ``name``, its ``params`` and the platform
capabilities it ``requires``; :func:`register_policy` adds it (the built-ins below are registered
the same way as a plug-in would be), and the spec validator and ``--help`` pick it up from there.
:func:`make_policy` is the one checked way to build one from spec parameters.
"""

from __future__ import annotations

from typing import Any

from ..decisions import Decision, Move, Reject, Start, Suspend
from ..params import validate_params
from ..registry import Registry
from .backfill import Backfill, Conservative, Easy, Fcfs, Selective
from .base import BasePolicy
from .consolidation import Ambf, Amcbf, Cmbf, Cmcbf, Consolidation, Smcbf
from .embedding import Bgmbf, Bgmbfsdf, BwFcfs, BwReject, Sbf, Sdf
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
POLICIES: Registry[type[BasePolicy]] = Registry("policy", BasePolicy, "name", ("name", "migration_cost"))
#: Register a policy class (usable as a class decorator); see :meth:`Registry.register`.
register_policy = POLICIES.register
#: The policy class registered as a name, or a SpecError listing the valid ones.
policy_class = POLICIES.lookup


def make_policy(name: str, **params: Any) -> BasePolicy:
    """Build the policy registered as ``name`` from its spec parameters.

    ``params`` are checked against the class's declared ``params`` (unknown keys and bad values
    raise :class:`~tiersweep.core.errors.SpecError` naming ``policy.KEY``) and defaults are
    filled in. ``migration_cost``, which older specs give here, belongs to the platform
    (:data:`tiersweep.core.platforms.COMMON_PLATFORM_PARAMS`) and is ignored.
    """
    cls = policy_class(name)
    params.pop("migration_cost", None)
    return cls(**validate_params("policy", params, cls.params))


for _cls in (
    Fcfs,
    Easy,
    Conservative,
    Selective,
    Cmbf,
    Ambf,
    Cmcbf,
    Amcbf,
    Smcbf,
    BwFcfs,
    Sbf,
    Sdf,
    Bgmbf,
    Bgmbfsdf,
    BwReject,
    VmBackfill,
):
    register_policy(_cls)
