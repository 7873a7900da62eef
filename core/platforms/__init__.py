"""Platforms (resource models), registered by ``platform.kind``.

A platform is a :class:`BasePlatform` subclass declaring its ``kind``, its ``params`` and its
``CAPABILITIES``; :func:`register_platform` adds it (the built-ins below are registered the same
way as a plug-in would be), and the spec validator and ``--help`` pick it up from there.
:func:`make_platform` is the one checked way to build one from spec parameters.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..params import validate_params
from ..registry import Registry, lazy_exports
from .base import BasePlatform
from .nodes import Nodes

if TYPE_CHECKING:
    from .fat_tree import FatTree
    from .shared_vms import SharedVms

__all__ = [
    "BasePlatform",
    "Nodes",
    "SharedVms",
    "FatTree",
    "PLATFORMS",
    "register_platform",
    "platform_class",
    "make_platform",
]


#: Platform classes by ``platform.kind``, in registration order.
PLATFORMS: Registry[type[BasePlatform]] = Registry("platform", BasePlatform, "kind", ("kind",))
#: Register a platform class (usable as a class decorator); see :meth:`Registry.register`.
register_platform = PLATFORMS.register
#: The platform class registered as a kind, or a SpecError listing the valid ones.
platform_class = PLATFORMS.lookup


def make_platform(kind: str, params: Mapping[str, Any] | None = None, *, seed: int = 0) -> BasePlatform:
    """Build the platform registered as ``kind`` from its own parameters, outside a run plan
    (a run builds its platform from its :class:`~tiersweep.core.plan.RunPlan`, checked once).

    ``params`` are checked against the class's declared ``params`` (unknown keys and bad values
    raise :class:`~tiersweep.core.errors.SpecError` naming ``platform.KEY``) and defaults are
    filled in.
    """
    cls = platform_class(kind)
    given = {k: v for k, v in (params or {}).items() if k != "kind"}
    own = validate_params("platform", given, cls.params)
    cls.check_params(own)
    return cls(**own, seed=seed)


# The built-ins: ``nodes`` (the default) is imported with the package, the others only when a
# spec names them (see Registry); the order is the one --help lists.
register_platform(Nodes)
PLATFORMS.register_lazy("shared_vms", f"{__name__}.shared_vms", "SharedVms")
PLATFORMS.register_lazy("fat_tree", f"{__name__}.fat_tree", "FatTree")
PLATFORMS.register_lazy("gang", f"{__name__}.gang", "Gang")

# Classes re-exported here but defined in a lazily imported module (PEP 562).
__getattr__ = lazy_exports(__name__, {"SharedVms": "shared_vms", "FatTree": "fat_tree"})
