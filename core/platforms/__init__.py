"""Platforms, registered by ``platform.kind``.

Add a platform by writing its module, importing it here and adding it to :data:`PLATFORMS`
with the parameters it accepts. Every platform class takes its parameters as keywords plus
``seed`` (the run's seed, for its own random streams).
"""

from __future__ import annotations

from ..params import Param, positive_int
from .nodes import FG_OVERHEAD_MAX
from .base import BasePlatform
from .nodes import Nodes
from .shared_vms import SHARED_VMS_PARAMS, SharedVms

__all__ = ["BasePlatform", "Nodes", "PLATFORMS", "PLATFORM_PARAMS"]

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
        "fg_overhead": Param(
            _overhead,
            default=FG_OVERHEAD_MAX,
            doc="foreground slowdown o ~ U(0, fg_overhead) while a lower tier is busy",
        ),
        "bg_efficiency": Param(
            _efficiency,
            default="paper",
            doc="eff of background processes: paper (U(0.8,1) serial, N(0.428,0.144) in [0.2,0.8] parallel) or a fixed number",
        ),
    },
}

# -- fat_tree: VM slots in a fat-tree network with guaranteed bandwidth (paper 004) ------------
from .fat_tree import FAT_TREE_PARAMS, FatTree  # noqa: E402

PLATFORMS["fat_tree"] = FatTree
PLATFORM_PARAMS["fat_tree"] = FAT_TREE_PARAMS
__all__ += ["FatTree"]

# Paper 001's shared VMs (its parameter checks live in its module).
__all__ += ["SharedVms"]
PLATFORMS["shared_vms"] = SharedVms
PLATFORM_PARAMS["shared_vms"] = SHARED_VMS_PARAMS
