"""FWorkload: Feitelson's 1996 model with the calibrated constants of MODELS.md section 4.

The structure is published (Feitelson, "Packing schemes for gang scheduling", JSSPP 1996,
LNCS 1162; PWA ``m_feitelson96``); the constants are a **calibration**, not the paper's: they
reproduce the only published FWorkload numbers (mean runtime ~2,500 s, P = 320, sizes 1-256;
Liu et al. 2013). Label every use "calibrated". The preset ``calibrated`` is the one
MODELS.md calls ``feitelson96_calibrated``.

Model (MODELS.md 4.2-4.4):

* **Size** n on 1..``max_size`` (default 256, the calibrated range) with weight
  ``w(n) = n**-size_exponent``, powers of two n >= 2 multiplied by ``b2``, ``w(1) = b1``,
  normalised: :func:`size_pmf`.
* **Runtime** hyperexponential given n: with probability ``p(n) = c0 + c1*(n-1)/255`` an
  exponential of mean ``m_l``, else of mean ``m_s``; stored as ``max(1, round(S))``.
  The denominator stays 255 for any ``max_size`` (p depends on n, not on the range); a
  ``max_size`` or override that takes p(n) outside [0, 1] is rejected.
* **Repetitions** R on 1..``r_max`` with ``P(R = r) ∝ r**-zipf_exponent``: :func:`repeat_pmf`.
  A repeat keeps its job's size and runtime.
* **Arrivals**: first runs are Poisson with mean gap ``mean_gap * load_scale``; the first one
  comes after one gap. ``load_scale`` applies to first-run gaps only (rescaling every submit
  would break the repeat timing).
* **Repeat mode** ``open_approx`` (the only one implemented): run j+1 is submitted at
  ``submit_j + runtime_j`` with think time 0, runs are emitted in submit order by a
  time-ordered merge (4.3) and generation stops after ``jobs`` runs, pending repeats dropped.
  ``on_completion`` (release run j+1 when run j actually finishes) needs simulator support
  and is rejected with a ValueError.

**Overrides** (keyword arguments of :func:`generate`): ``b1``, ``b2``, ``size_exponent``,
``m_s``, ``m_l``, ``c0``, ``c1``, ``r_max``, ``zipf_exponent``, ``mean_gap``, ``repeat_mode``.
Nothing is re-solved: ``c0 = 0.189365`` was solved for E[S] = 2,500 s with the calibrated
``m_s``, ``m_l``, ``c1`` and size pmf, so overriding any of those (or ``b1``, ``b2``,
``size_exponent``, ``max_size``) without also giving ``c0`` keeps ``c0 = 0.189365`` and the
mean runtime moves away from 2,500 s (:func:`mean_runtime` gives the new value). Likewise
``mean_gap`` (130 s, set for an offered load of ~0.8 at P = 320) is not re-derived.

**Randomness** (MODELS.md 1.4, 4.4): one named stream per purpose (``feitelson96/sizes``,
``/runtimes``, ``/repeats``, ``/arrivals``), each consumed by inverse transform of uniforms,
``jobs`` values per stream (first runs can never outnumber runs, so no top-up is needed).
Job i's size, runtime and repeat count therefore depend only on the seed and i: they are the
same for every ``load_scale`` (so :func:`tiersweep.core.workloads.offered_load.scale_for_load` sees a load
that falls smoothly with f) and for every ``jobs`` count.

**Rounding:** first-run submit times are rounded to whole seconds before the merge and
runtimes are whole seconds, so the repeat chains are exact integer arithmetic: every field-17
reference is an earlier line with the same size and runtime whose submit + runtime equals
this submit, and the records equal their SWF round trip.

Depends on numpy and the standard library only.
"""

from __future__ import annotations

import heapq
import math
import numbers
from collections.abc import Mapping
from typing import Any

import numpy as np

from ...rng import stream
from ...sums import reproducible_dot
from . import CheckedModel, ModelOutput, check_model

__all__ = [
    "NAME",
    "PRESETS",
    "DEFAULT_PRESET",
    "DEFAULT_MAX_SIZE",
    "REPEAT_MODES",
    "generate",
    "parameters",
    "size_pmf",
    "long_probability",
    "repeat_pmf",
    "mean_runtime",
    "checked",
    "draw",
]

NAME = "feitelson96"

#: Sizes 1..256: the range the calibration was made for (MODELS.md 4.2).
DEFAULT_MAX_SIZE = 256

#: ``(n - 1) / 255`` in p(n): fixed, whatever ``max_size`` is.
_P_SPAN = 255

#: ``open_approx`` is implemented; ``on_completion`` needs simulator support.
REPEAT_MODES = ("open_approx", "on_completion")

PRESETS: dict[str, dict[str, Any]] = {
    # MODELS.md 4.2, "feitelson96_calibrated". Calibration, not the paper's constants.
    "calibrated": {
        "b1": 2.54247,  # w(1): sets P(n=1) = 0.26
        "b2": 11.5137,  # boost of powers of two >= 2: P(power of 2 | n>1) = 0.87
        "size_exponent": 1.5,  # w(n) = n**-1.5
        "m_s": 200.0,  # mean of the short runtime branch (s)
        "m_l": 12000.0,  # mean of the long runtime branch (s)
        "c0": 0.189365,  # p(n) = c0 + c1*(n-1)/255, solved for E[S] = 2500 s
        "c1": 0.3,
        "r_max": 100,  # repetition cap
        "zipf_exponent": 2.5,  # P(R = r) ∝ r**-2.5
        "mean_gap": 130.0,  # mean first-run gap (s) at load_scale 1: load ~0.8 at P = 320
        "repeat_mode": "open_approx",
    },
}

DEFAULT_PRESET = "calibrated"

_FIELDS = 18
_SUBMIT, _RUNTIME, _ALLOCATED, _REQUESTED = 1, 3, 4, 7
_STATUS, _QUEUE, _PRECEDING, _THINK = 10, 14, 16, 17


def parameters(preset: str = DEFAULT_PRESET, **overrides: Any) -> dict[str, Any]:
    """The validated parameter dict of ``preset`` with ``overrides`` applied.

    Raises:
        ValueError: Unknown preset or override key (the message lists the valid ones), or a
            value out of range.
    """
    if preset not in PRESETS:
        raise ValueError(f"{NAME}: unknown preset {preset!r}; valid presets: {', '.join(PRESETS)}")
    params = dict(PRESETS[preset])
    for key, value in overrides.items():
        if key not in params:
            raise ValueError(f"{NAME}: unknown parameter {key!r}; valid parameters: {', '.join(sorted(params))}")
        params[key] = value
    return _validate(params)


def _positive(params: dict[str, Any], key: str) -> None:
    value = params[key]
    if (
        isinstance(value, bool) or not isinstance(value, numbers.Real) or not (math.isfinite(value) and value > 0)  # type: ignore[operator]  # typeshed: Real has no > int
    ):
        raise ValueError(f"{NAME}: {key} must be a positive finite number, got {value!r}")
    params[key] = float(value)


def _finite(params: dict[str, Any], key: str) -> None:
    value = params[key]
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise ValueError(f"{NAME}: {key} must be a finite number, got {value!r}")
    params[key] = float(value)


#: The bounds of the parameters given in seconds (``m_s``, ``m_l``, ``mean_gap``): times are
#: whole seconds, so a shorter mean rounds every gap or runtime to the same value (all jobs
#: submitted at once), and a longer one (three years) leaves a workload no run can finish.
SECONDS = (1.0, 1e8)
#: The largest ``r_max``: the repeat distribution is tabulated up to it.
MAX_REPEATS = 1_000_000


def _seconds(params: dict[str, Any], key: str) -> None:
    _positive(params, key)
    low, high = SECONDS
    if not low <= params[key] <= high:
        raise ValueError(
            f"{NAME}: {key} must be from {low:g} to {high:g} seconds (times are whole seconds), got {params[key]!r}"
        )


def _validate(params: dict[str, Any]) -> dict[str, Any]:
    for key in ("b1", "b2", "zipf_exponent"):
        _positive(params, key)
    for key in ("m_s", "m_l", "mean_gap"):
        _seconds(params, key)
    for key in ("size_exponent", "c0", "c1"):
        _finite(params, key)
    r_max = params["r_max"]
    if isinstance(r_max, numbers.Real) and not isinstance(r_max, bool) and float(r_max).is_integer():
        r_max = int(r_max)  # type: ignore[call-overload]  # typeshed's numbers.Real has no __int__
    if not isinstance(r_max, int) or isinstance(r_max, bool) or not 1 <= r_max <= MAX_REPEATS:
        raise ValueError(f"{NAME}: r_max must be an integer from 1 to {MAX_REPEATS:,}, got {params['r_max']!r}")
    params["r_max"] = int(r_max)
    mode = params["repeat_mode"]
    if mode == "on_completion":
        raise ValueError(
            f"{NAME}: repeat_mode 'on_completion' (release run j+1 when run j actually "
            "finishes) needs simulator support and is not implemented; use 'open_approx' "
            "(run j+1 submitted at submit_j + runtime_j, MODELS.md 4.3)"
        )
    if mode not in REPEAT_MODES:
        raise ValueError(f"{NAME}: unknown repeat_mode {mode!r}; valid choices: {', '.join(REPEAT_MODES)}")
    return params


def checked(
    preset: str, overrides: Mapping[str, Any], *, machine_size: int, max_size: int | None = None
) -> tuple[dict[str, Any], int]:
    """The validated parameters and the size range of a workload on ``machine_size`` nodes:
    the checks :func:`generate` makes of its parameters.

    Raises:
        ValueError: A parameter the model does not take, a bad value, or a size range that does
            not fit the machine.
    """
    if max_size is None:
        # The calibrated range, cut to the machine (a job never exceeds the machine).
        max_size = (
            min(DEFAULT_MAX_SIZE, machine_size) if isinstance(machine_size, numbers.Integral) else DEFAULT_MAX_SIZE
        )
    if isinstance(max_size, bool) or not isinstance(max_size, numbers.Integral) or max_size < 1:
        raise ValueError(f"{NAME}: max_size must be a positive integer, got {max_size!r}")
    if machine_size is not None and max_size > machine_size:
        raise ValueError(
            f"{NAME}: max_size {max_size} exceeds machine_size {machine_size}; pass max_size <= "
            f"{machine_size} (the calibrated range is 1..{DEFAULT_MAX_SIZE})"
        )
    params = parameters(preset, **overrides)
    _check_p_range(params, int(max_size))
    return params, int(max_size)


def _check_p_range(params: Mapping[str, Any], max_size: int) -> None:
    low, high = (float(long_probability(params, n)) for n in (1, max_size))
    if not (0.0 <= low <= 1.0 and 0.0 <= high <= 1.0):
        raise ValueError(
            f"{NAME}: p(n) = c0 + c1*(n-1)/{_P_SPAN} must lie in [0, 1] for n in 1..{max_size}; "
            f"got p(1) = {low:.6g}, p({max_size}) = {high:.6g} (c0 = {params['c0']}, c1 = {params['c1']})"
        )


def size_pmf(params: Mapping[str, Any] | None = None, max_size: int = DEFAULT_MAX_SIZE) -> np.ndarray:
    """P(n) for n = 1..max_size (element n-1): ``n**-size_exponent``, powers of two >= 2
    times ``b2``, ``w(1) = b1``, normalised. ``params`` defaults to the calibrated preset."""
    params = PRESETS[DEFAULT_PRESET] if params is None else params
    n = np.arange(1, max_size + 1, dtype=np.int64)
    weights = n.astype(np.float64) ** -float(params["size_exponent"])
    pow2 = (n >= 2) & ((n & (n - 1)) == 0)
    weights[pow2] *= float(params["b2"])
    weights[0] = float(params["b1"])
    return weights / weights.sum()


def long_probability(params: Mapping[str, Any] | None, n: Any) -> Any:
    """p(n) = c0 + c1*(n-1)/255: the probability of the long runtime branch for size n."""
    params = PRESETS[DEFAULT_PRESET] if params is None else params
    return float(params["c0"]) + float(params["c1"]) * (np.asarray(n, dtype=np.float64) - 1) / _P_SPAN


def repeat_pmf(params: Mapping[str, Any] | None = None) -> np.ndarray:
    """P(R = r) for r = 1..r_max (element r-1), ∝ ``r**-zipf_exponent``."""
    params = PRESETS[DEFAULT_PRESET] if params is None else params
    r = np.arange(1, int(params["r_max"]) + 1, dtype=np.float64)
    weights = r ** -float(params["zipf_exponent"])
    return weights / weights.sum()


def mean_runtime(params: Mapping[str, Any] | None = None, max_size: int = DEFAULT_MAX_SIZE) -> float:
    """E[S] per job (before rounding): m_s + (m_l - m_s) * E[p(n)] under :func:`size_pmf`."""
    params = PRESETS[DEFAULT_PRESET] if params is None else params
    pmf = size_pmf(params, max_size)
    p_mean = reproducible_dot(pmf, long_probability(params, np.arange(1, max_size + 1)))
    return float(params["m_s"]) + (float(params["m_l"]) - float(params["m_s"])) * p_mean


def _inverse_cdf(cdf: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Values 1..len(cdf) drawn by inverse transform of uniforms ``u`` in [0, 1)."""
    index = np.searchsorted(cdf, u, side="right")
    return np.minimum(index, len(cdf) - 1) + 1  # guard against cdf[-1] rounding below 1


def _draw_jobs(params: Mapping[str, Any], seed: int, count: int, max_size: int) -> tuple[np.ndarray, ...]:
    """Sizes, integer runtimes, repeat counts and unit-mean exponential gaps of ``count``
    jobs. Each value of job i depends only on (seed, i): uniforms by inverse transform."""
    size_u = stream(seed, f"{NAME}/sizes").random(count)
    runtime_u = stream(seed, f"{NAME}/runtimes").random((count, 2))  # (branch, value) per job
    repeat_u = stream(seed, f"{NAME}/repeats").random(count)
    gap_u = stream(seed, f"{NAME}/arrivals").random(count)

    sizes = _inverse_cdf(np.cumsum(size_pmf(params, max_size)), size_u)
    long = runtime_u[:, 0] < long_probability(params, sizes)
    mean = np.where(long, float(params["m_l"]), float(params["m_s"]))
    runtimes = np.maximum(1.0, np.rint(-mean * np.log1p(-runtime_u[:, 1]))).astype(np.int64)
    repeats = _inverse_cdf(np.cumsum(repeat_pmf(params)), repeat_u)
    gaps = -np.log1p(-gap_u)
    return sizes.astype(np.int64), runtimes, repeats.astype(np.int64), gaps


def _merge(jobs: int, first_submit: list[int], runtimes: list[int], repeats: list[int]) -> tuple[list[int], ...]:
    """The time-ordered merge of MODELS.md 4.3 (``open_approx``).

    Returns, per emitted run in submit order: its first-run index, submit time, and the job
    number (1-based) of the previous run of its chain (0 for first runs).
    """
    first_of: list[int] = []
    submit_of: list[int] = []
    previous_of: list[int] = []
    heap: list[tuple[int, int, int, int]] = []  # (time, first-run index, run index, previous job)
    push, pop = heapq.heappush, heapq.heappop
    inf = math.inf
    count = len(first_submit)
    i = 0
    t_next = first_submit[0] if count else inf
    for number in range(1, jobs + 1):
        if heap and heap[0][0] <= t_next:
            time, k, run, previous = pop(heap)
            if run < repeats[k]:
                push(heap, (time + runtimes[k], k, run + 1, number))
        else:
            # t_next itself: each emitted run is at most one first run, so i < count (never inf)
            k, time, previous = i, first_submit[i], 0
            i += 1
            t_next = first_submit[i] if i < count else inf
            if repeats[k] > 1:
                push(heap, (time + runtimes[k], k, 2, number))
        first_of.append(k)
        submit_of.append(time)
        previous_of.append(previous)
    return first_of, submit_of, previous_of


def generate(
    jobs: int,
    *,
    seed: int,
    machine_size: int,
    preset: str = DEFAULT_PRESET,
    load_scale: float = 1.0,
    max_size: int | None = None,
    **overrides: Any,
) -> ModelOutput:
    """Generate ``jobs`` runs (first runs and repeats) of the calibrated Feitelson model.

    Args:
        jobs: Number of runs (SWF lines); repeats count, as in Liu et al.'s 20,000 jobs.
        seed: Non-negative integer seed.
        machine_size: P, written as ``MaxNodes``; ``max_size`` may not exceed it.
        preset: A key of :data:`PRESETS`.
        load_scale: f > 0, multiplies first-run gaps only (load ~ 1/f); the jobs drawn do
            not depend on it.
        max_size: Largest size; None means 256, the calibrated range (the constants are not
            re-solved for another range).
        **overrides: Parameters replacing the preset's (see the module docstring).

    Returns:
        :class:`ModelOutput` with ``(jobs, 18)`` float64 records in submit order.

    Raises:
        ValueError: Bad arguments, unknown preset or parameter, or ``repeat_mode``
            ``on_completion`` (needs simulator support).
    """
    if isinstance(jobs, bool) or not isinstance(jobs, numbers.Integral) or jobs < 0:
        raise ValueError(f"{NAME}: jobs must be a non-negative integer, got {jobs!r}")
    if isinstance(machine_size, bool) or not isinstance(machine_size, numbers.Integral) or machine_size < 1:
        raise ValueError(f"{NAME}: machine_size must be a positive integer, got {machine_size!r}")
    if (
        isinstance(load_scale, bool)
        or not isinstance(load_scale, numbers.Real)
        or not (math.isfinite(load_scale) and load_scale > 0)
    ):
        raise ValueError(f"{NAME}: load_scale must be a positive finite number, got {load_scale!r}")
    model = check_model(NAME, preset, overrides, machine_size=int(machine_size), max_size=max_size)
    return draw(model, int(jobs), seed=seed, load_scale=float(load_scale))


def draw(model: CheckedModel, jobs: int, *, seed: int, load_scale: float) -> ModelOutput:
    """:func:`generate`'s records from parameters it has checked (``model``, see
    :func:`~tiersweep.core.workloads.models.check_model`)."""
    params, max_size = model.params
    machine_size, preset, overrides = model.machine_size, model.preset, model.overrides
    sizes, runtimes, repeats, gaps = _draw_jobs(params, seed, jobs, max_size)
    # First-run times in whole seconds before the merge: the chains are integer arithmetic.
    first_submit = np.rint(np.cumsum(gaps) * (params["mean_gap"] * load_scale)).astype(np.int64)
    first_of, submit_of, previous_of = _merge(jobs, first_submit.tolist(), runtimes.tolist(), repeats.tolist())

    first = np.asarray(first_of, dtype=np.int64)
    previous = np.asarray(previous_of, dtype=np.float64)
    is_repeat = previous > 0
    records = np.full((jobs, _FIELDS), -1.0)
    records[:, 0] = np.arange(1, jobs + 1)
    records[:, _SUBMIT] = submit_of
    records[:, _RUNTIME] = runtimes[first]
    records[:, _ALLOCATED] = sizes[first]
    records[:, _REQUESTED] = sizes[first]
    records[:, _STATUS] = 1
    records[:, _PRECEDING] = np.where(is_repeat, previous, -1.0)
    records[:, _THINK] = np.where(is_repeat, 0.0, -1.0)

    header: dict[str, str] = {
        "Version": "2",
        "Acknowledge": "D. G. Feitelson, Packing schemes for gang scheduling, JSSPP 1996 (PWA m_feitelson96)",
        "Information": (
            "synthetic FWorkload generated by tiersweep; constants calibrated (MODELS.md 4.2), not the paper's"
        ),
        "MaxJobs": str(jobs),
        "MaxRecords": str(jobs),
        "MaxNodes": str(machine_size),
        "Model": NAME,
        "Preset": preset,
        "Seed": str(seed),
        "LoadScale": repr(load_scale),
        "MaxSize": str(max_size),
        "RepeatMode": params["repeat_mode"],
    }
    if overrides:
        header["Overrides"] = ", ".join(f"{key}={overrides[key]!r}" for key in sorted(overrides))
    return ModelOutput(records=records, header=header)
