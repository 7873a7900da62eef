"""Platform ``nodes``: N identical nodes, each running at most one process per tier."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from .base import BasePlatform

if TYPE_CHECKING:
    from ..jobs import Job

__all__ = ["Nodes"]


class Nodes(BasePlatform):
    """``N`` dedicated nodes (``tiers: 1``): a job holds ``size`` whole nodes at rate 1.

    Free nodes are kept on a stack, so starting a job that lets the platform choose its nodes
    costs O(size) and never scans the machine; the most recently freed nodes are reused first.
    The per-node owner table answers "is this node free?" in O(1) for policies that name their
    nodes.

    Args:
        nodes: Number of nodes, at least 1.
        tiers: VMs per node; only 1 (dedicated nodes) is modelled so far.
    """

    def __init__(self, nodes: int, tiers: int = 1) -> None:
        if nodes < 1:
            raise ValueError(f"nodes must be at least 1, got {nodes}")
        if tiers != 1:
            raise ValueError(f"tiers: only 1 is supported, got {tiers}")
        self.capacity = nodes
        self.tiers = 1
        self._owner: list[int] = [-1] * nodes
        # Reversed so that an empty machine hands out node 0, 1, 2, ... first.
        self._free: list[int] = list(range(nodes - 1, -1, -1))

    def free_count(self, tier: int = 0) -> int:
        return len(self._free)

    def check_start(self, job: Job, tier: int, nodes: Sequence[int] | None) -> str | None:
        if tier != 0:
            return f"tier {tier} does not exist on a platform with 1 tier"
        if nodes is None:
            if job.size > len(self._free):
                return f"needs {job.size} nodes, {len(self._free)} free"
            return None
        if len(nodes) != job.size:
            return f"names {len(nodes)} nodes for a job of size {job.size}"
        if len(set(nodes)) != len(nodes):
            return "names a node twice"
        for node in nodes:
            if not 0 <= node < self.capacity:
                return f"node {node} does not exist (0..{self.capacity - 1})"
            if self._owner[node] != -1:
                return f"node {node} is busy"
        return None

    def start(self, job: Job, tier: int, nodes: Sequence[int] | None) -> tuple[list[int], float]:
        free = self._free
        if nodes is None:
            held = free[-job.size :]
            del free[-job.size :]
        else:
            held = list(nodes)
            taken = set(held)
            free[:] = [n for n in free if n not in taken]
        owner = self._owner
        for node in held:
            owner[node] = job.index
        return held, 1.0

    def release(self, job: Job) -> None:
        owner = self._owner
        for node in job.nodes:
            owner[node] = -1
        self._free.extend(job.nodes)
