"""Pausing Python's cyclic garbage collector while bulk-allocating objects that form no cycles.

Building a workload allocates a few container objects per job (the :class:`~tiersweep.core.jobs.Job`
and its lists), hundreds of thousands at once on a large log, none of them garbage and none in a
reference cycle. The collector does not know that: every 700 allocations it runs, and as the
survivors pile up its full passes walk all of them again, which made building CEA-Curie's jobs
four times slower than the construction itself (1.4 s instead of 0.3 s). Reference counting still
frees everything as usual while the collector is paused; only cycle detection waits.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["collector_paused"]


@contextmanager
def collector_paused() -> Iterator[None]:
    """Disable the cyclic collector inside the block (if it was enabled), then enable it again."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
