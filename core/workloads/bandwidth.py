"""Bandwidth annotation: each job's per-VM bandwidth demand, for network-aware platforms.

The hook every workload goes through, after the CPU annotation. ``none`` leaves every demand
at 0 (platforms without a network ignore it). The fat-tree platform of paper 004 adds its
demand model here, drawing from its own named stream so that other draws stay unchanged.
"""

from __future__ import annotations

from typing import Sequence

from ..jobs import Job

__all__ = ["BANDWIDTH_MODELS", "annotate_bandwidth"]

#: The bandwidth models a spec may name (``workload.bandwidth``).
BANDWIDTH_MODELS = ("none",)


def annotate_bandwidth(jobs: Sequence[Job], *, seed: int, model: str = "none") -> None:
    """Set ``job.bandwidth`` for every job, in place, according to ``model``."""
    if model not in BANDWIDTH_MODELS:
        raise ValueError(f"bandwidth: unknown model {model!r}; valid choices: {', '.join(BANDWIDTH_MODELS)}")
    for job in jobs:
        job.bandwidth = 0.0
