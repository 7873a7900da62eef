"""Named random streams derived from one seed.

Every stream is ``default_rng(SeedSequence(seed, spawn_key=(crc32(purpose),)))``: it depends
only on the seed and on the name of its purpose, never on how many other streams exist or the
order they were asked for, so adding a random component never shifts the others (common random
numbers across policies). ``crc32`` rather than ``hash()`` because string hashing is salted per
interpreter and the streams must be identical in every process.
"""

from __future__ import annotations

import zlib

import numpy as np

__all__ = ["stream"]


def stream(seed: int, purpose: str) -> np.random.Generator:
    """Return the generator for ``purpose`` (e.g. ``"workload"``, ``"eff"``) under ``seed``.

    Args:
        seed: The run's seed, a non-negative integer.
        purpose: A stable name of what the stream is for.
    """
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    key = zlib.crc32(purpose.encode("utf-8"))
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(key,)))
