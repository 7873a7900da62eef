"""Platforms, registered by ``platform.kind``.

Add a platform by writing its module, importing it here and adding it to :data:`PLATFORMS`
with the parameters it accepts. Every platform class takes its parameters as keywords plus
``seed`` (the run's seed, for its own random streams).
"""

from __future__ import annotations

from ..params import Param, positive_int
from .base import BasePlatform
from .nodes import Nodes

__all__ = ["BasePlatform", "Nodes", "PLATFORMS", "PLATFORM_PARAMS"]

#: Platform classes by ``platform.kind``.
PLATFORMS: dict[str, type[BasePlatform]] = {"nodes": Nodes}

#: The spec keys each platform kind accepts besides ``kind``.
PLATFORM_PARAMS: dict[str, dict[str, Param]] = {
    "nodes": {
        "nodes": Param(positive_int, default=None, doc="number of nodes (default: the trace's MaxProcs)"),
        "tiers": Param(
            positive_int,
            default=1,
            doc="VMs per node: 1 = dedicated, 2 = foreground/background, k = one foreground and k-1 background",
        ),
    },
}
