"""Scheduling policies, registered by name.

A policy is a :class:`BasePolicy` subclass declaring its ``name``, its ``params`` and the platform
capabilities it ``requires``; :func:`register_policy` adds it (the built-ins below are registered
the same way as a plug-in would be), and the spec validator and ``--help`` pick it up from there.
:func:`make_policy` is the one checked way to build one from spec parameters.
"""

from __future__ import annotations

from typing import Any

from ..decisions import Decision, Move, Reject, Start, Suspend
from ..errors import SpecError
from ..params import Param, validate_params
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

#: Policy classes by registry name.
POLICIES: dict[str, type[BasePolicy]] = {}


def register_policy(cls: type[BasePolicy]) -> type[BasePolicy]:
    """Register policy class ``cls`` under ``cls.name`` (usable as a class decorator).

    Raises:
        TypeError: ``cls`` is not a policy, declares no name, reuses a registered name, or
            declares parameters that are not :class:`~tiersweep.core.params.Param`.
    """
    if not (isinstance(cls, type) and issubclass(cls, BasePolicy)):
        raise TypeError(f"{cls!r} is not a BasePolicy subclass")
    if not cls.name:
        raise TypeError(f"policy class {cls.__name__} declares no name")
    if cls.name in POLICIES and POLICIES[cls.name] is not cls:
        raise TypeError(f"policy name {cls.name!r} is already registered ({POLICIES[cls.name].__name__})")
    for key, param in cls.params.items():
        if not isinstance(param, Param):
            raise TypeError(f"policy {cls.name!r}: parameter {key!r} is not a Param")
        if key == "name":
            raise TypeError(f"policy {cls.name!r}: 'name' is not a parameter")
    POLICIES[cls.name] = cls
    return cls


def policy_class(name: Any) -> type[BasePolicy]:
    """The policy class registered as ``name``.

    Raises:
        SpecError: No policy has that name; the message lists the valid ones.
    """
    try:
        return POLICIES[name]
    except (KeyError, TypeError):
        raise SpecError(f"policy.name: unknown value {name!r}; valid choices: {', '.join(POLICIES)}") from None


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
