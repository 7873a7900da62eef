"""Platforms (resource models), registered by ``platform.kind``.

A platform is a :class:`BasePlatform` subclass declaring its ``kind``, its ``params`` and its
``CAPABILITIES``; :func:`register_platform` adds it (the built-ins below are registered the same
way as a plug-in would be), and the spec validator and ``--help`` pick it up from there.
:func:`make_platform` is the one checked way to build one from spec parameters.
"""

from __future__ import annotations

from typing import Any, Mapping

from ..errors import SpecError
from ..params import Param, non_negative_number, validate_params
from .base import BasePlatform
from .fat_tree import FatTree
from .nodes import Nodes
from .shared_vms import SharedVms

__all__ = [
    "BasePlatform",
    "Nodes",
    "SharedVms",
    "FatTree",
    "PLATFORMS",
    "COMMON_PLATFORM_PARAMS",
    "register_platform",
    "platform_class",
    "make_platform",
]

#: Platform classes by ``platform.kind``.
PLATFORMS: dict[str, type[BasePlatform]] = {}

#: Keys every platform accepts, applied by the engine rather than the platform's constructor.
#: ``migration_cost`` is the restore delay of a suspended or migrated job; it changes nothing
#: where no job is ever suspended or migrated, and every kind accepts it so that one sweep grid
#: can cross platforms and policies with migration costs.
COMMON_PLATFORM_PARAMS: dict[str, Param] = {
    "migration_cost": Param(
        non_negative_number,
        default=20.0,
        doc="seconds a suspended or migrated job holds its VMs on restart before it progresses (paper 000: 20)",
    ),
}


def register_platform(cls: type[BasePlatform]) -> type[BasePlatform]:
    """Register platform class ``cls`` under ``cls.kind`` (usable as a class decorator).

    Raises:
        TypeError: ``cls`` is not a platform, declares no ``kind``, reuses a registered kind, or
            declares parameters that are not :class:`~tiersweep.core.params.Param` or clash with
            the common keys.
    """
    if not (isinstance(cls, type) and issubclass(cls, BasePlatform)):
        raise TypeError(f"{cls!r} is not a BasePlatform subclass")
    if not cls.kind:
        raise TypeError(f"platform class {cls.__name__} declares no kind")
    if cls.kind in PLATFORMS and PLATFORMS[cls.kind] is not cls:
        raise TypeError(f"platform kind {cls.kind!r} is already registered ({PLATFORMS[cls.kind].__name__})")
    for key, param in cls.params.items():
        if not isinstance(param, Param):
            raise TypeError(f"platform {cls.kind!r}: parameter {key!r} is not a Param")
        if key in COMMON_PLATFORM_PARAMS or key == "kind":
            raise TypeError(f"platform {cls.kind!r}: parameter {key!r} clashes with a common key")
    PLATFORMS[cls.kind] = cls
    return cls


def platform_class(kind: Any) -> type[BasePlatform]:
    """The platform class registered as ``kind``.

    Raises:
        SpecError: No platform has that kind; the message lists the valid ones.
    """
    try:
        return PLATFORMS[kind]
    except (KeyError, TypeError):
        raise SpecError(f"platform.kind: unknown value {kind!r}; valid choices: {', '.join(PLATFORMS)}") from None


def make_platform(kind: str, params: Mapping[str, Any] | None = None, *, seed: int = 0) -> BasePlatform:
    """Build the platform registered as ``kind`` from its spec parameters.

    ``params`` are checked against the class's declared ``params`` (unknown keys and bad values
    raise :class:`~tiersweep.core.errors.SpecError` naming ``platform.KEY``), defaults are
    filled in, and the common keys (applied by the engine) are left out of the constructor call.
    """
    cls = platform_class(kind)
    given = {k: v for k, v in (params or {}).items() if k != "kind"}
    own = validate_params("platform", given, {**COMMON_PLATFORM_PARAMS, **cls.params})
    cls.check_params(own)
    for key in COMMON_PLATFORM_PARAMS:
        own.pop(key)
    return cls(**own, seed=seed)


for _cls in (Nodes, SharedVms, FatTree):
    register_platform(_cls)
