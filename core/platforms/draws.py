"""Buffered random draws from one named stream, one at a time or many at once, in one sequence.

The ``nodes`` platform draws a random factor per process and placement epoch (the foreground
overhead, the background efficiency). A start of a 5,000-process job draws thousands of them,
so they are drawn as arrays; but the values must be the very ones a one-at-a-time loop over the
same processes would draw, so that a schedule never depends on how the draws were batched.

The stream is generated in blocks of :data:`BLOCK` values. Uniform and standard-normal draws
come from two buffers, each refilled with the stream's next block when it runs dry; a request
for many values therefore refills the buffers in the same order as the equivalent sequence of
single requests would, which :meth:`BufferedDraws.mixed` reproduces exactly.
"""

from __future__ import annotations

import numpy as np

from ..rng import stream

__all__ = ["BufferedDraws", "BLOCK"]

#: Values generated per refill of a buffer.
BLOCK = 4096


class _Buffer:
    """The unread values of one kind, as an array (for batches) and, made when a single draw
    first needs it, the same values as a list (a scalar read from a list is several times
    cheaper than from an array), with a read position shared by both."""

    __slots__ = ("values", "_items", "position")

    def __init__(self) -> None:
        self.values = np.empty(0)
        self._items: list[float] | None = []
        self.position = 0

    def remaining(self) -> np.ndarray:
        return self.values[self.position :]

    def append(self, block: np.ndarray) -> None:
        self.values = np.concatenate((self.values[self.position :], block))
        self._items = None  # rebuilt only if a single draw reads it
        self.position = 0


class BufferedDraws:
    """Uniform and truncated-normal draws from the named stream ``purpose`` of ``seed``.

    ``uniform`` and ``truncated_normal`` take one value; ``uniforms`` and ``mixed`` take many,
    giving exactly the values (and leaving the stream exactly where) the corresponding
    sequence of single calls would.
    """

    __slots__ = ("_rng", "_uniform", "_normal")

    def __init__(self, seed: int, purpose: str) -> None:
        self._rng = stream(seed, purpose)
        self._uniform = _Buffer()
        self._normal = _Buffer()

    def uniform(self, low: float, high: float) -> float:
        """One draw of U(low, high)."""
        buffer = self._uniform
        if buffer.position == len(buffer.values):
            buffer.append(self._rng.random(BLOCK))
        items = buffer._items  # (read inline, not through a property: one draw per process)
        if items is None:
            items = buffer._items = buffer.values.tolist()
        value = items[buffer.position]
        buffer.position += 1
        return low + (high - low) * value

    def refill_uniform(self) -> None:
        """Take the stream's next block into the uniform buffer if every value was read, as
        :meth:`uniform` does before a draw (for a reader of the buffer's ``values`` array)."""
        buffer = self._uniform
        if buffer.position == len(buffer.values):
            buffer.append(self._rng.random(BLOCK))

    def truncated_normal(self, mean: float, sd: float, low: float, high: float) -> float:
        """One draw of Normal(mean, sd) truncated to [low, high] (by rejection)."""
        buffer = self._normal
        while True:
            if buffer.position == len(buffer.values):
                buffer.append(self._rng.standard_normal(BLOCK))
            items = buffer._items
            if items is None:
                items = buffer._items = buffer.values.tolist()
            value = mean + sd * items[buffer.position]
            buffer.position += 1
            if low <= value <= high:
                return value

    def uniforms(self, count: int, low: float, high: float) -> np.ndarray:
        """``count`` draws of U(low, high)."""
        buffer = self._uniform
        while len(buffer.values) - buffer.position < count:
            buffer.append(self._rng.random(BLOCK))
        taken = buffer.values[buffer.position : buffer.position + count]
        buffer.position += count
        return low + (high - low) * taken

    def mixed(
        self,
        is_uniform: np.ndarray,
        uniform: tuple[float, float],
        normal: tuple[float, float, float, float],
    ) -> np.ndarray:
        """One draw per element of ``is_uniform``, in order: U(``uniform``) where it is true,
        the truncated Normal(``normal`` = mean, sd, low, high) where it is false.

        Both kinds share the stream: a buffer that runs dry takes the stream's next block at
        the request that found it dry, so the blocks are assigned to the buffers in the order
        the requests reach them. That order is replayed here, one refill at a time.
        """
        mean, sd, low, high = normal
        n_uniform = int(np.count_nonzero(is_uniform))
        n_normal = len(is_uniform) - n_uniform
        ubuf, nbuf = self._uniform, self._normal
        accepted = self._accepted(nbuf.remaining(), normal)
        while True:
            u_short = n_uniform > len(ubuf.values) - ubuf.position
            n_short = n_normal > len(accepted)
            if not (u_short or n_short):
                break
            # The request that first finds its buffer dry, by position in the sequence.
            u_at = np.flatnonzero(is_uniform)[len(ubuf.values) - ubuf.position] if u_short else len(is_uniform)
            n_at = np.flatnonzero(~is_uniform)[len(accepted)] if n_short else len(is_uniform)
            if u_at < n_at:
                ubuf.append(self._rng.random(BLOCK))
            else:
                nbuf.append(self._rng.standard_normal(BLOCK))
                accepted = self._accepted(nbuf.remaining(), normal)
        out = np.empty(len(is_uniform))
        ulow, uhigh = uniform
        out[is_uniform] = ulow + (uhigh - ulow) * ubuf.values[ubuf.position : ubuf.position + n_uniform]
        ubuf.position += n_uniform
        if n_normal:
            used = accepted[:n_normal]
            out[~is_uniform] = mean + sd * nbuf.values[nbuf.position + used]
            # Rejected values after the last accepted one stay for the next request.
            nbuf.position += int(used[-1]) + 1
        return out

    @staticmethod
    def _accepted(z: np.ndarray, normal: tuple[float, float, float, float]) -> np.ndarray:
        """Positions in ``z`` whose value lies in the truncation interval."""
        mean, sd, low, high = normal
        value = mean + sd * z
        return np.flatnonzero((low <= value) & (value <= high))
