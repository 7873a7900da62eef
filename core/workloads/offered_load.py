"""Offered load: measuring it exactly and reaching a target (MODELS.md sections 1.2-1.3).

``offered_load = sum(runtime_i * size_i) / (P * T)`` with T the span of submit times
(last - first, as DESIGN section 5 defines it). It is a property of the workload, not the
achieved utilisation, and can exceed 1. Never approximate it by mean(size) * mean(runtime) /
(P * mean gap): size and runtime are correlated.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..sums import reproducible_dot
from .swf import SWF_FIELDS

__all__ = ["offered_load", "rescale_gaps", "scale_for_load", "gap_scale"]

_SUBMIT = SWF_FIELDS.index("submit_time")
_RUNTIME = SWF_FIELDS.index("run_time")
_ALLOCATED = SWF_FIELDS.index("allocated_processors")
_REQUESTED = SWF_FIELDS.index("requested_processors")


def offered_load(submit: np.ndarray, size: np.ndarray, runtime: np.ndarray, machine_size: int) -> float:
    """Exact offered load of jobs with these submit times, sizes and runtimes on P nodes."""
    if len(submit) < 2:
        return math.nan
    span = float(np.max(submit) - np.min(submit))
    if span <= 0:
        return math.inf
    work = reproducible_dot(size, runtime)
    return work / (machine_size * span)


def gap_scale(load: float, target: float, submit: np.ndarray) -> float:
    """The factor by which to multiply every inter-arrival gap of jobs with submit times
    ``submit`` and offered load ``load`` for their offered load to be ``target``.

    Raises:
        ValueError: The load is not a positive finite number, so no factor reaches the target:
            fewer than two jobs or every job submitted at once (a span of zero; scaling it would
            give not-a-number submit times), or jobs with no work. The message says which.
    """
    if math.isfinite(load) and load > 0:
        return load / target
    submit = np.asarray(submit, dtype=np.float64)
    if len(submit) < 2:
        why = f"it has {len(submit)} job, and an offered load needs a span of submit times"
    elif float(np.max(submit) - np.min(submit)) <= 0:
        why = (
            f"all its {len(submit)} jobs are submitted at once (time {float(submit[0]):g}): "
            "the span of submit times is zero"
        )
    else:
        why = "its jobs hold no work (every runtime is 0)"
    raise ValueError(f"an offered load cannot be set on this workload: {why}")


def rescale_gaps(submit: np.ndarray, factor: float) -> np.ndarray:
    """Submit times with every inter-arrival gap multiplied by ``factor`` (first submit kept)."""
    submit = np.asarray(submit, dtype=np.float64)
    if len(submit) == 0:
        return submit.copy()
    first = submit.min()
    return first + (submit - first) * factor


def scale_for_load(load_of: Callable[[float], float], target: float, *, tolerance: float = 1e-3) -> float:
    """Find the gap scale f with ``load_of(f)`` within ``tolerance`` (relative) of ``target``.

    ``load_of`` must decrease with f (longer gaps, lower load), as it does for a generator whose
    draws do not depend on f. Secant steps on log load against log f, safeguarded by
    bisection; a generator with pure gap scaling (load proportional to 1/f) converges in one
    step.
    """
    if not target > 0:
        raise ValueError(f"load: expected a positive target, got {target}")
    f = 1.0
    load = load_of(f)
    low, high = 0.0, math.inf  # bracket on f
    for _ in range(60):
        if abs(load / target - 1) <= tolerance:
            return f
        if load > target:
            low = f
        else:
            high = f
        step = f * load / target  # exact when load is proportional to 1/f
        if not low < step < high:
            step = (low + high) / 2 if math.isfinite(high) else f * 2
        f = step
        load = load_of(f)
    raise ValueError(f"load: could not reach {target} (last: f = {f:g}, load = {load:g})")
