"""A set of node ids ranked by a per-node key, for "the n best nodes" without sorting all."""

from __future__ import annotations

import numpy as np

__all__ = ["RankedSet"]

#: The key of a non-member.
_ABSENT = np.inf
#: Id spaces up to this size are sorted whole by :meth:`RankedSet.smallest`; larger ones are
#: cut into blocks and only the blocks that can hold a winner are read.
_SORT_BELOW = 2048
#: Ids per block on large id spaces, as a power of two.
_BLOCK_SHIFT = 7


class RankedSet:
    """Node ids ``0 .. nodes-1`` ordered by ``(key, node)``; membership and keys change in
    batches.

    The keys live in one array (``inf`` marks a non-member), so a batch of changes is one
    vectorised assignment, whatever its size: the consolidation policies re-rank every node a
    start or an end touched, thousands at a time on a large machine. A sorted Python index was
    tried first: its per-node upkeep (a bisect and a memmove per changed node, in Python) cost
    more than any selection measured, from 320 to 10,000 nodes.

    A small id space is sorted whole by :meth:`smallest`. A large one is cut into blocks of
    ``2 ** _BLOCK_SHIFT`` consecutive ids, each with its smallest key and its number of
    members, brought up to date for the blocks a batch touches. To pick ``n`` nodes,
    :meth:`smallest` selects the first ``n`` blocks by ``(smallest key, block)`` (one key per
    block; the winners lie in them) and reads only those of them that can hold a winner. It
    thus reads one key per block and about ``n`` blocks at most, not every node's key (a
    selection over every key cost 80 % of AMCBF's time on 93,312 nodes); the ties of an idle
    machine (every key 0) take the lowest blocks, the fewest that hold ``n`` members.

    Args:
        nodes: Size of the id space.
        members: Ids that start as members, all with key ``key``.
        key: Their initial key.
    """

    __slots__ = ("_keys", "_count", "_grid", "_block_min", "_block_count")

    def __init__(self, nodes: int, members: np.ndarray | range = range(0), key: float = 0.0) -> None:
        blocked = nodes > _SORT_BELOW
        width = 1 << _BLOCK_SHIFT
        padded = np.full(-(-nodes // width) * width if blocked else nodes, _ABSENT)
        self._keys = padded[:nodes]
        self._keys[np.asarray(members, dtype=np.int64)] = key
        self._count = len(members)
        #: The keys as one row per block (a view), with each block's smallest key and member
        #: count; None on a small id space.
        grid = padded.reshape(-1, width) if blocked else None
        self._grid: np.ndarray | None = grid
        self._block_min = grid.min(axis=1) if grid is not None else None
        self._block_count = np.count_nonzero(grid != _ABSENT, axis=1) if grid is not None else None

    def __len__(self) -> int:
        return self._count

    def __contains__(self, node: int) -> bool:
        return bool(self._keys[node] != _ABSENT)

    def update(self, nodes: np.ndarray, keys: np.ndarray) -> None:
        """Set the keys of ``nodes`` (distinct ids) to ``keys``; ``inf`` removes a node."""
        old = self._keys[nodes]
        self._count += int(np.count_nonzero(old == _ABSENT)) - int(np.count_nonzero(keys == _ABSENT))
        self._keys[nodes] = keys
        if self._grid is not None:
            blocks = nodes >> _BLOCK_SHIFT
            if len(blocks) > 64:
                # (A block named twice is measured twice, to the same values: cheaper than
                # making them distinct for a few nodes.)
                blocks = np.unique(blocks)
            rows = self._grid[blocks]
            block_min, block_count = self._block_min, self._block_count
            assert block_min is not None and block_count is not None  # made with the grid
            block_min[blocks] = rows.min(axis=1)
            block_count[blocks] = np.count_nonzero(rows != _ABSENT, axis=1)

    def smallest(self, count: int, skip: np.ndarray | None = None) -> np.ndarray:
        """The first ``count`` members by ``(key, node)`` (fewer if there are fewer), leaving
        out the ids in ``skip``."""
        if self._grid is not None:
            if skip is None or not len(skip):
                return self._select(count)
            # Leave the skipped ids out for this selection only.
            saved = self._keys[skip]
            self.update(skip, np.full(len(skip), _ABSENT))
            try:
                return self._select(count)
            finally:
                self.update(skip, saved)
        keys, members = self._keys, self._count
        if skip is not None and len(skip):
            keys = keys.copy()
            keys[skip] = _ABSENT
            members = int(np.count_nonzero(keys != _ABSENT))
        count = min(count, members)
        if count <= 0:
            return np.empty(0, dtype=np.int64)
        # A stable sort orders by (key, node) at once.
        return np.argsort(keys, kind="stable")[:count]

    def _select(self, count: int) -> np.ndarray:
        """:meth:`smallest` on a blocked id space."""
        count = min(count, self._count)
        if count <= 0:
            return np.empty(0, dtype=np.int64)
        minima, members = self._block_min, self._block_count
        assert minima is not None and members is not None  # only called on a blocked id space
        # The first ``count`` blocks by (smallest key, block): each holds a member, so the
        # winners lie in them (a block after them has a larger minimum, or the same and
        # higher ids). Selected over one key per block, then sorted among themselves.
        first = min(count, int(np.count_nonzero(members)))
        cut = np.partition(minima, first - 1)[first - 1]
        below = np.flatnonzero(minima < cut)
        blocks = np.concatenate((below, np.flatnonzero(minima == cut)[: first - len(below)]))
        blocks = blocks[np.lexsort((blocks, minima[blocks]))]
        # Their shortest prefix holding ``count`` members usually has the winners (every idle
        # node of an idle machine has key 0: the lowest blocks); the other blocks are read
        # only where their smallest key precedes its last winner's (key, block).
        enough = int(np.searchsorted(np.cumsum(members[blocks]), count)) + 1
        read, rest = blocks[:enough], blocks[enough:]
        chosen = self._best(read, count)
        last = int(chosen[-1])
        key, block = self._keys[last], last >> _BLOCK_SHIFT
        smallest = minima[rest]
        more = rest[(smallest < key) | ((smallest == key) & (rest < block))]
        if len(more):
            chosen = self._best(np.concatenate((read, more)), count)
        return chosen

    def _best(self, blocks: np.ndarray, count: int) -> np.ndarray:
        """The first ``count`` members of ``blocks`` by ``(key, node)`` (they hold at least
        ``count``)."""
        if len(blocks) << _BLOCK_SHIFT > len(self._keys) // 2:
            # Most of the machine: one selection over every key is cheaper.
            keys = self._keys
            kth = np.partition(keys, count - 1)[count - 1]
            below = np.flatnonzero(keys < kth)
            chosen = np.concatenate((below, np.flatnonzero(keys == kth)[: count - len(below)]))
            return chosen[np.lexsort((chosen, keys[chosen]))]
        blocks = np.sort(blocks)  # ids ascending, so that a stable sort breaks ties by id
        grid = self._grid
        assert grid is not None  # only called on a blocked id space
        first = np.argsort(grid[blocks].ravel(), kind="stable")[:count]
        return (blocks[first >> _BLOCK_SHIFT] << _BLOCK_SHIFT) | (first & ((1 << _BLOCK_SHIFT) - 1))
