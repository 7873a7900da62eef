"""BufferedDraws: a batch of draws gives exactly the values, and leaves the stream exactly
where, the same draws taken one at a time give; and both match the plain buffered loop the
platform's factors were defined with (lists refilled from the stream when they run dry)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tiersweep.core.platforms.draws import BLOCK, BufferedDraws
from tiersweep.core.rng import stream

UNIFORM = (0.8, 1.0)
NORMAL = (0.428, 0.144, 0.2, 0.8)


class ReferenceDraws:
    """The definition: one list per kind, refilled with the stream's next block when empty."""

    def __init__(self, seed: int, purpose: str) -> None:
        self.rng = stream(seed, purpose)
        self.uniform_left: list[float] = []
        self.normal_left: list[float] = []

    def uniform(self, low: float, high: float) -> float:
        if not self.uniform_left:
            self.uniform_left = self.rng.random(BLOCK).tolist()[::-1]
        return low + (high - low) * self.uniform_left.pop()

    def truncated_normal(self, mean: float, sd: float, low: float, high: float) -> float:
        while True:
            if not self.normal_left:
                self.normal_left = self.rng.standard_normal(BLOCK).tolist()[::-1]
            value = mean + sd * self.normal_left.pop()
            if low <= value <= high:
                return value


# Batches long enough to cross refills of both buffers, in every interleaving.
BATCHES = st.lists(st.tuples(st.integers(0, 6000), st.floats(0.0, 1.0)), min_size=1, max_size=6)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**30), batches=BATCHES, single_first=st.booleans())
def test_batched_draws_equal_single_draws_and_the_reference(seed, batches, single_first):
    batched, single, reference = BufferedDraws(seed, "eff"), BufferedDraws(seed, "eff"), ReferenceDraws(seed, "eff")
    rng = np.random.default_rng(seed)
    for count, share in batches:
        is_uniform = rng.random(count) < share
        got = batched.mixed(is_uniform, UNIFORM, NORMAL)
        one_by_one = [single.uniform(*UNIFORM) if u else single.truncated_normal(*NORMAL) for u in is_uniform.tolist()]
        expected = [
            reference.uniform(*UNIFORM) if u else reference.truncated_normal(*NORMAL) for u in is_uniform.tolist()
        ]
        assert got.tolist() == one_by_one == expected
        # Uniform-only batches too (the foreground overheads).
        assert batched.uniforms(count // 3, 0.0, 0.037).tolist() == [
            reference.uniform(0.0, 0.037) for _ in range(count // 3)
        ]
        for _ in range(count // 3):
            single.uniform(0.0, 0.037)
    # Every truncated draw lies in its interval and the streams end in the same place.
    assert batched.truncated_normal(*NORMAL) == reference.truncated_normal(*NORMAL) == single.truncated_normal(*NORMAL)
    assert batched.uniform(*UNIFORM) == reference.uniform(*UNIFORM) == single.uniform(*UNIFORM)


def test_a_reader_of_the_refilled_uniform_buffer_sees_the_single_draws():
    single, read = BufferedDraws(7, "x"), BufferedDraws(7, "x")
    expected = [single.uniform(0.0, 1.0) for _ in range(2 * BLOCK + 5)]
    got = []
    for _ in range(2 * BLOCK + 5):
        read.refill_uniform()
        buffer = read._uniform
        got.append(float(buffer.values[buffer.position]))
        buffer.position += 1
    assert got == expected
    assert read.uniform(0.0, 1.0) == single.uniform(0.0, 1.0)  # both streams left in one place
