"""A set of node ids ordered by a per-node key, for "the n best nodes" without sorting all."""

from __future__ import annotations

from bisect import bisect_left, insort
from typing import Container, Iterable

__all__ = ["RankedSet"]


class RankedSet:
    """Node ids ordered by ``(key, node)``, with O(log n) search and O(n) memmove updates
    (a plain sorted list: at 10,000 nodes a move costs microseconds, while sorting the idle
    nodes at every dispatch cost milliseconds).

    Args:
        nodes: The initial members.
        key: Their common initial key.
    """

    __slots__ = ("_entries", "_keys")

    def __init__(self, nodes: Iterable[int] = (), key: float = 0.0) -> None:
        members = sorted(nodes)
        self._entries = [(key, node) for node in members]
        self._keys = dict.fromkeys(members, key)

    def __len__(self) -> int:
        return len(self._keys)

    def __contains__(self, node: object) -> bool:
        return node in self._keys

    def update(self, changes: dict[int, float | None]) -> None:
        """Apply many changes at once: ``node -> key`` (make it a member ranked by ``key``) or
        ``node -> None`` (remove it). A batch larger than a small fraction of the set is merged
        in one pass (O(n + b log b)) instead of b memmoves of the whole list."""
        keys, entries = self._keys, self._entries
        if len(changes) * 16 < len(entries):
            for node, key in changes.items():  # one change at a time: a memmove each (the hot path)
                old = keys.get(node)
                if old == key:
                    continue
                if old is not None:
                    del entries[bisect_left(entries, (old, node))]
                if key is None:
                    del keys[node]
                else:
                    keys[node] = key
                    insort(entries, (key, node))
            return
        kept = [entry for entry in self._entries if entry[1] not in changes]
        added = []
        for node, key in changes.items():
            if key is None:
                keys.pop(node, None)
            else:
                keys[node] = key
                added.append((key, node))
        added.sort()
        kept += added
        kept.sort()  # two sorted runs: a linear merge
        self._entries = kept

    def smallest(self, count: int, skip: Container[int] = ()) -> list[int]:
        """The first ``count`` members by ``(key, node)``, leaving out those in ``skip``."""
        out: list[int] = []
        if count <= 0:
            return out
        for _, node in self._entries:
            if node in skip:
                continue
            out.append(node)
            if len(out) == count:
                break
        return out
