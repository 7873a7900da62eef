"""A Fenwick (binary indexed) tree: prefix sums with point updates, both in O(log n)."""

from __future__ import annotations

__all__ = ["Fenwick"]


class Fenwick:
    """Counts over positions ``0 .. n-1``.

    Args:
        n: Number of positions.
    """

    __slots__ = ("_tree", "total")

    def __init__(self, n: int) -> None:
        self._tree = [0] * (n + 1)
        self.total = 0

    def add(self, position: int, amount: int) -> None:
        """Add ``amount`` at ``position``."""
        self.total += amount
        tree = self._tree
        i = position + 1
        n = len(tree)
        while i < n:
            tree[i] += amount
            i += i & -i

    def prefix(self, end: int) -> int:
        """Sum over positions ``0 .. end-1``."""
        tree = self._tree
        total = 0
        i = end
        while i > 0:
            total += tree[i]
            i -= i & -i
        return total

    def after(self, position: int) -> int:
        """Sum over positions strictly greater than ``position``."""
        return self.total - self.prefix(position + 1)
