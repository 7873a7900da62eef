"""A set of node ids ranked by a per-node key, for "the n best nodes" without sorting all."""

from __future__ import annotations

import numpy as np

__all__ = ["RankedSet"]

#: The key of a non-member.
_ABSENT = np.inf
#: Id spaces up to this size are sorted whole by :meth:`RankedSet.smallest`; larger ones use
#: a linear selection.
_SORT_BELOW = 2048


class RankedSet:
    """Node ids ``0 .. nodes-1`` ordered by ``(key, node)``; membership and keys change in
    batches.

    The keys live in one array (``inf`` marks a non-member), so a batch of changes is one
    vectorised assignment, whatever its size: the consolidation policies re-rank every node a
    start or an end touched, thousands at a time on a large machine. :meth:`smallest` selects
    with ``numpy.partition`` (linear, in C) and sorts only the selected nodes. A sorted Python
    index was tried first: its per-node upkeep (a bisect and a memmove per changed node, in
    Python) cost more than this selection at every size measured, from 320 to 10,000 nodes.

    Args:
        nodes: Size of the id space.
        members: Ids that start as members, all with key ``key``.
        key: Their initial key.
    """

    __slots__ = ("_keys", "_count")

    def __init__(self, nodes: int, members: np.ndarray | range = range(0), key: float = 0.0) -> None:
        self._keys = np.full(nodes, _ABSENT)
        self._keys[np.asarray(members, dtype=np.int64)] = key
        self._count = len(members)

    def __len__(self) -> int:
        return self._count

    def __contains__(self, node: int) -> bool:
        return bool(self._keys[node] != _ABSENT)

    def update(self, nodes: np.ndarray, keys: np.ndarray) -> None:
        """Set the keys of ``nodes`` (distinct ids) to ``keys``; ``inf`` removes a node."""
        old = self._keys[nodes]
        self._count += int(np.count_nonzero(old == _ABSENT)) - int(np.count_nonzero(keys == _ABSENT))
        self._keys[nodes] = keys

    def smallest(self, count: int, skip: np.ndarray | None = None) -> np.ndarray:
        """The first ``count`` members by ``(key, node)`` (fewer if there are fewer), leaving
        out the ids in ``skip``."""
        keys, members = self._keys, self._count
        if skip is not None and len(skip):
            keys = keys.copy()
            keys[skip] = _ABSENT
            members = int(np.count_nonzero(keys != _ABSENT))
        count = min(count, members)
        if count <= 0:
            return np.empty(0, dtype=np.int64)
        if len(keys) <= _SORT_BELOW:
            # A stable sort orders by (key, node) at once: on a small id space one call is
            # cheaper than the selection's several.
            return np.argsort(keys, kind="stable")[:count]
        # The count-th smallest key; every member below it is in, and of the members equal
        # to it the lowest ids fill the rest.
        kth = np.partition(keys, count - 1)[count - 1]
        below = np.flatnonzero(keys < kth)
        ties = np.flatnonzero(keys == kth)[: count - len(below)]
        chosen = np.concatenate((below, ties))
        return chosen[np.lexsort((chosen, keys[chosen]))]
