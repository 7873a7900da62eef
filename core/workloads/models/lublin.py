"""LWorkload: the Lublin & Feitelson (2003) model of rigid parallel jobs (MODELS.md section 2).

Each job gets an arrival time from a gamma-distributed log-gap spread over a daily cycle, a
size from a two-stage uniform on log2(size) with extra serial jobs and powers of two, and a
runtime from a hyper-gamma on ln(runtime) whose mixing weight falls with the size. In *typed*
mode, batch and interactive jobs have their own parameter sets and arrival streams. The
reference is the C generator ``m_lublin99.c``; the goal is statistical equivalence with it,
not the same numbers.

Presets (:data:`PRESETS`):

* ``lublin99`` (default): typed, the reference parameters adapted to the machine (below).
* ``lublin99_typeless``: typeless (one class, type 0), adapted to the machine.
* ``lublin99_256``: typeless with UHI = 8 and UMED = 5.5 and no adaptation: the
  configuration of ``lublin_256.swf``.

Overrides (keyword arguments of :func:`generate`):

* ``typed`` (bool), ``start_hour`` (int 0-23: the hour of the day at time 0),
  ``compat_truncate_clock`` (bool: truncate the clock to whole seconds at every arrival as
  the C code does, to reproduce reference files; default a float clock), and
  ``adapt_to_machine`` (bool: adapt the size range to the machine, below).
* Model parameters, named like the reference constants in lower case: ``serial_prob``,
  ``pow2_prob``, ``ulow``, ``umed``, ``uhi``, ``uprob``, ``a1``, ``b1``, ``a2``, ``b2``,
  ``pa``, ``pb``, ``aarr``, ``barr``, ``anum``, ``bnum``, ``arar``. Prefix the name with the
  class it applies to: ``typeless_``, ``batch_`` or ``interactive_`` (``batch_uhi``). A bare
  name is short for ``typeless_``. Only the classes the run uses may be overridden: the
  typeless set in typeless mode, batch and interactive in typed mode; anything else would
  silently do nothing and is an error, as is an unknown name.

Adapting the sizes to the machine (MODELS.md 2.8). With a bound B, each class in use gets
UHI = log2 B (the interactive class keeps its UHI unless round(2^UHI) > B, i.e. 5.5 unless
B < 45), and UMED moves by the same amount as UHI, so it stays UHI - 2.5 for the typeless and
interactive sets. The batch set keeps its reference offset of 2 (UMED 5 at UHI 7): that makes
the adaptation the identity on the reference 128-node machine, which is what the published
typed targets (MODELS.md 2.10, 2.11 A) describe, where a literal UMED = UHI - 2.5 would not.
On very small machines ULOW and UMED are clamped into [0, UHI]. B is ``max_size`` when it is
given (whatever the preset), else the machine size when ``adapt_to_machine`` is on
(``lublin99`` and ``lublin99_typeless``), else there is no adaptation. A ``uhi`` or ``umed``
given as an override is used as given. Jobs larger than the machine (possible with an
unadapted preset on a smaller machine) are left in the records; the workload rules drop them.

Choices beyond the reference (all documented in MODELS.md unless noted):

* Float clock (MODELS.md 2.9 pitfall 1), submit times rounded to whole seconds at emission.
* ``load_scale`` f multiplies e^g before the bucket mapping (2.4 step 2): load about 1/f of
  the model's, day still 24 h. No draw depends on f.
* One random stream per purpose and class (``lublin03/arrivals/batch``,
  ``lublin03/sizes/batch``, ``lublin03/runtimes/batch``, ...): the k-th job of a class gets
  the same size and runtime whatever the job count, f or the other class's arrivals, and
  the first n jobs of a run are the run with n jobs. (In typed mode f can change the
  interleaving of the two classes, hence which class a given job number belongs to.)
* Not in MODELS.md: when log2 B has a fraction above one half, rounding a forced power of two
  could exceed B (the C code does); such a draw takes the largest power of two not above
  round(2^UHI), so that no size exceeds the bound.

The arrival process (2.4) is a time change: operational time runs at rate w_k in bucket k.
It is computed in bulk from the cumulative operational time rather than one bucket at a time;
the two agree to rounding error.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from functools import lru_cache
from typing import Any

import numpy as np

from ...errors import SpecError
from ...rng import stream
from ..swf import SWF_FIELDS
from . import CheckedModel, ModelOutput, check_model
from .distributions import gammainc

__all__ = [
    "NAME",
    "PRESETS",
    "DEFAULT_PRESET",
    "PARAMETERS",
    "REFERENCE",
    "ParamSet",
    "daily_weights",
    "generate",
    "checked",
    "draw",
]

#: The model's name in specs (``workload.model``).
NAME = "lublin03"

#: Reject ln(runtime) above this (runtime at most floor(e^12) = 162,754 s).
MAX_LOG_RUNTIME = 12.0
#: Reject log-gaps above this (a gap of at most e^13 s, about 5 days).
MAX_LOG_GAP = 13.0
#: The least probability of a log-gap within :data:`MAX_LOG_GAP` that parameters may give
#: (each arrival then takes a hundred draws at most, on average).
MIN_GAP_REACH = 0.01
#: Half-hour buckets of the daily cycle.
BUCKETS = 48
BUCKET_DURATION = 1800.0
#: The reference's ``CYCLIC_DAY_START``, used as a half-hour index (MODELS.md 2.3).
CYCLIC_DAY_START = 11
#: Runtimes are drawn in blocks of this many jobs of a class, so that the k-th job's draws
#: do not depend on how many jobs are generated.
_BLOCK = 2048
MAX_RUNTIME = math.floor(math.exp(MAX_LOG_RUNTIME))  # 162754


@dataclass(frozen=True)
class ParamSet:
    """One class's parameters, named like the reference constants (MODELS.md 2.2)."""

    serial_prob: float
    pow2_prob: float
    ulow: float
    umed: float
    uhi: float
    uprob: float
    a1: float
    b1: float
    a2: float
    b2: float
    pa: float
    pb: float
    aarr: float
    barr: float
    anum: float
    bnum: float
    arar: float


#: Names of the per-class parameters.
PARAMETERS: tuple[str, ...] = tuple(f.name for f in fields(ParamSet))

#: The reference parameter sets (``m_lublin99.c``, MODELS.md 2.2).
REFERENCE: Mapping[str, ParamSet] = {
    "typeless": ParamSet(
        0.244,
        0.576,
        0.8,
        4.5,
        7.0,
        0.86,
        4.2,
        0.94,
        312.0,
        0.03,
        -0.0054,
        0.78,
        10.2303,
        0.4871,
        8.1737,
        3.9631,
        1.0225,
    ),
    "batch": ParamSet(
        0.2927,
        0.6686,
        1.2,
        5.0,
        7.0,
        0.875,
        6.57,
        0.823,
        639.1,
        0.0156,
        -0.003,
        0.6986,
        6.0415,
        0.8531,
        6.1271,
        5.2740,
        1.0519,
    ),
    "interactive": ParamSet(
        0.1541,
        0.625,
        1.0,
        3.0,
        5.5,
        0.705,
        3.8351,
        0.6605,
        7.073,
        0.6856,
        -0.0118,
        0.9156,
        6.5510,
        0.6621,
        8.9186,
        3.6680,
        0.9797,
    ),
}
_CLASSES = ("typeless", "batch", "interactive")
_TYPE_FIELD = {"typeless": 0, "batch": 1, "interactive": 0}

_GLOBAL_DEFAULTS: Mapping[str, Any] = {
    "typed": True,
    "start_hour": 0,
    "compat_truncate_clock": False,
    "adapt_to_machine": True,
}

#: Preset name -> parameters (differences from the reference sets, same keys as overrides).
PRESETS: Mapping[str, Mapping[str, Any]] = {
    "lublin99": {"typed": True, "adapt_to_machine": True},
    "lublin99_typeless": {"typed": False, "adapt_to_machine": True},
    "lublin99_256": {"typed": False, "adapt_to_machine": False, "typeless_uhi": 8.0, "typeless_umed": 5.5},
}
DEFAULT_PRESET = "lublin99"

_COL = {name: i for i, name in enumerate(SWF_FIELDS)}


# --------------------------------------------------------------------------- parameters


@dataclass(frozen=True)
class _Config:
    typed: bool
    start_hour: int
    compat_truncate_clock: bool
    sets: Mapping[str, ParamSet]  # the classes in use only


def _valid_keys_message() -> str:
    names = ", ".join(PARAMETERS)
    globals_ = ", ".join(_GLOBAL_DEFAULTS)
    return f"valid: {globals_}; and <p>, typeless_<p>, batch_<p>, interactive_<p> for <p> in {names}"


def _split_key(key: str) -> tuple[str | None, str]:
    """(class, parameter) of an override key; class None for the global options."""
    if key in _GLOBAL_DEFAULTS:
        return None, key
    if key in PARAMETERS:
        return "typeless", key
    for cls in _CLASSES:
        prefix = cls + "_"
        if key.startswith(prefix) and key[len(prefix) :] in PARAMETERS:
            return cls, key[len(prefix) :]
    raise SpecError(f"{NAME}: unknown parameter {key!r}; {_valid_keys_message()}")


def _as_bool(key: str, value: Any) -> bool:
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise SpecError(f"{NAME}: {key} must be true or false, got {value!r}")


def _as_number(key: str, value: Any) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise SpecError(f"{NAME}: {key} must be a finite number, got {value!r}")
    return float(value)


def _as_int(key: str, value: Any, low: int, high: int | None = None) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise SpecError(f"{NAME}: {key} must be an integer, got {value!r}")
    value = int(value)
    if value < low or (high is not None and value > high):
        bound = f">= {low}" if high is None else f"in {low}..{high}"
        raise SpecError(f"{NAME}: {key} must be {bound}, got {value}")
    return value


def _adapt(cls: str, base: ParamSet, bound: int, explicit: set[str]) -> ParamSet:
    """The set with its size range adapted to at most ``bound`` processors (MODELS.md 2.8)."""
    if "uhi" in explicit:
        return base
    target = math.log2(bound)
    if cls == "interactive" and math.floor(2.0**base.uhi + 0.5) <= bound:
        uhi = base.uhi  # interactive keeps 5.5 unless the bound is below 45
    else:
        uhi = target
    ulow = base.ulow if "ulow" in explicit else min(base.ulow, uhi)
    umed = base.umed if "umed" in explicit else min(max(base.umed + (uhi - base.uhi), ulow), uhi)
    return replace(base, ulow=ulow, umed=umed, uhi=uhi)


def _check_set(cls: str, p: ParamSet, max_size: int | None) -> None:
    def fail(what: str) -> None:
        raise SpecError(f"{NAME}: {cls} parameters: {what}")

    for name in ("serial_prob", "pow2_prob", "uprob"):
        if not 0 <= getattr(p, name) <= 1:
            fail(f"{name} must be in [0, 1], got {getattr(p, name)}")
    if p.serial_prob + p.pow2_prob > 1 + 1e-12:  # 1 - serial_prob may round a hair up
        fail(f"serial_prob + pow2_prob must be at most 1, got {p.serial_prob} + {p.pow2_prob}")
    if not 0 <= p.ulow <= p.umed <= p.uhi:
        fail(f"need 0 <= ulow <= umed <= uhi, got {p.ulow}, {p.umed}, {p.uhi}")
    if p.uhi > 30:
        fail(f"uhi must be at most 30, got {p.uhi}")
    for name in ("a1", "b1", "a2", "b2", "aarr", "barr", "anum", "bnum", "arar"):
        if not getattr(p, name) > 0:
            fail(f"{name} must be positive, got {getattr(p, name)}")
    # Log-gaps above MAX_LOG_GAP are drawn again: gamma parameters that (almost) never give a
    # smaller one would make the generator draw for ever.
    reach = gammainc(p.aarr * p.arar, MAX_LOG_GAP / p.barr)
    if not reach >= MIN_GAP_REACH:
        fail(
            f"aarr*arar = {p.aarr * p.arar:g} and barr = {p.barr:g} give a log-gap of at most {MAX_LOG_GAP:g} "
            f"(the model's cap) with probability {reach:.2g}, below {MIN_GAP_REACH:g}: no arrivals could be drawn"
        )
    try:
        weights = _weights_tuple(float(p.anum), float(p.bnum))
    except ZeroDivisionError:
        weights = ()
    if not weights or not all(math.isfinite(w) for w in weights):
        fail(f"anum = {p.anum:g} and bnum = {p.bnum:g} give every half hour of the daily cycle a weight of 0")
    if max_size is not None and _size_bound(p) > max_size:
        fail(f"uhi {p.uhi} allows sizes up to {_size_bound(p)}, above max_size {max_size}")


def _size_bound(p: ParamSet) -> int:
    return math.floor(2.0**p.uhi + 0.5)


def checked(preset: str, overrides: Mapping[str, Any], *, machine_size: int, max_size: int | None = None) -> _Config:
    """The parameter sets of ``preset`` with ``overrides``, fitted to this machine: the checks
    :func:`generate` makes of its parameters.

    Raises:
        SpecError: An unknown preset or key, or a bad value; the message names it.
    """
    return _resolve(preset, machine_size, max_size, overrides)


def _resolve(preset: str, machine_size: int | None, max_size: int | None, overrides: Mapping[str, Any]) -> _Config:
    if preset not in PRESETS:
        raise SpecError(f"{NAME}: unknown preset {preset!r}; valid choices: {', '.join(PRESETS)}")
    options = dict(_GLOBAL_DEFAULTS)
    values: dict[str, dict[str, float]] = {cls: {} for cls in _CLASSES}
    explicit: dict[str, set[str]] = {cls: set() for cls in _CLASSES}
    user_keys: dict[tuple[str, str], str] = {}
    for source, entries in (("preset", PRESETS[preset]), ("override", overrides)):
        for key, value in entries.items():
            cls, name = _split_key(key)
            if cls is None:
                options[name] = value
                continue
            if source == "override":
                if (cls, name) in user_keys:
                    raise SpecError(f"{NAME}: {key!r} and {user_keys[cls, name]!r} set the same parameter")
                user_keys[cls, name] = key
                explicit[cls].add(name)
            values[cls][name] = _as_number(key, value)

    typed = _as_bool("typed", options["typed"])
    start_hour = _as_int("start_hour", options["start_hour"], 0, 23)
    compat = _as_bool("compat_truncate_clock", options["compat_truncate_clock"])
    adapt = _as_bool("adapt_to_machine", options["adapt_to_machine"])
    in_use = ("batch", "interactive") if typed else ("typeless",)
    for cls, name in user_keys:
        if cls not in in_use:
            mode = "typed" if typed else "typeless"
            raise SpecError(
                f"{NAME}: {user_keys[cls, name]!r} sets a {cls} parameter, unused in {mode} mode "
                f"(classes in use: {', '.join(in_use)})"
            )

    bound = max_size if max_size is not None else (machine_size if adapt else None)
    sets = {}
    for cls in in_use:
        params = replace(REFERENCE[cls], **values[cls])
        if bound is not None:
            params = _adapt(cls, params, bound, explicit[cls])
        _check_set(cls, params, max_size)
        sets[cls] = params
    return _Config(typed, start_hour, compat, sets)


# --------------------------------------------------------------------------- daily cycle


@lru_cache(maxsize=32)
def _weights_tuple(anum: float, bnum: float) -> tuple[float, ...]:
    raw = []
    for k in range(BUCKETS):
        # The code evaluates i = CYCLIC_DAY_START ... CYCLIC_DAY_START + 47 and stores the
        # value at index (i - 1) mod 48: bucket k holds i = k + 1 (k >= 10) or k + 49.
        j = k + 1 if k >= CYCLIC_DAY_START - 1 else k + BUCKETS + 1
        raw.append(gammainc(anum, (j + 0.5) / bnum) - gammainc(anum, (j - 0.5) / bnum))
    mean = sum(raw) / BUCKETS
    return tuple(r / mean for r in raw)


def daily_weights(anum: float, bnum: float) -> np.ndarray:
    """The 48 daily-cycle weights w_0..w_47 (mean 1) of a class (MODELS.md 2.3, Appendix A).

    Bucket k covers [1800k, 1800(k+1)) seconds after midnight.
    """
    return np.array(_weights_tuple(float(anum), float(bnum)))


# --------------------------------------------------------------------------- arrivals


def _log_gaps(rng: np.random.Generator, p: ParamSet, count: int) -> np.ndarray:
    """``count`` log-gaps g ~ Gamma(AARR*ARAR, BARR), redrawn while g > 13 (2.4 step 1).

    Filtering an i.i.d. sequence is the same as redrawing each rejected value in turn, and
    numpy draws a vector as it would draw the values one by one, so the first k values never
    depend on ``count``.
    """
    shape, scale = p.aarr * p.arar, p.barr
    parts: list[np.ndarray] = []
    have = 0
    while have < count:
        need = count - have
        draw = rng.gamma(shape, scale, size=need + need // 100 + 16)
        draw = draw[draw <= MAX_LOG_GAP]
        parts.append(draw)
        have += len(draw)
    return np.concatenate(parts)[:count] if parts else np.empty(0)


def _operational_clock(points: np.ndarray, weights: np.ndarray, start_bucket: int) -> tuple[np.ndarray, np.ndarray]:
    """Buckets crossed and remainder after each cumulative operational time (MODELS.md 2.4).

    ``points`` holds the cumulative sums of x/1800. The sequential process pays w[bucket]
    points per bucket while the points left exceed it; the state after an advance is (k
    buckets crossed, rem = points left / w[current bucket]) and the clock is 1800(k + rem).

    Returns:
        ``(k, rem)``: int64 buckets crossed and float remainders in [0, 1].
    """
    w = np.roll(np.asarray(weights, dtype=np.float64), -start_bucket)
    edges = np.concatenate(([0.0], np.cumsum(w)))
    day = edges[-1]
    days = np.floor(points / day)
    rest = points - days * day
    # Rounding can leave ``rest`` a hair outside [0, day).
    low = rest < 0
    days[low] -= 1
    rest[low] += day
    # Buckets fully paid for: the j >= 1 with edges[j] < rest (strict, like the reference loop).
    inside = np.searchsorted(edges[1:], rest, side="left")
    inside = np.minimum(inside, BUCKETS - 1)
    rem = np.clip((rest - edges[inside]) / w[inside], 0.0, None)
    crossed = days.astype(np.int64) * BUCKETS + inside
    return crossed, rem


def _arrival_times(
    rng: np.random.Generator, p: ParamSet, count: int, *, start_hour: int, load_scale: float, truncate: bool
) -> np.ndarray:
    """Clock (seconds from time 0) of the first ``count`` arrivals of one stream."""
    if count == 0:
        return np.empty(0)
    gaps = _log_gaps(rng, p, count)
    points = np.cumsum(load_scale * np.exp(gaps) / BUCKET_DURATION)
    crossed, rem = _operational_clock(points, daily_weights(p.anum, p.bnum), (2 * start_hour) % BUCKETS)
    if not truncate:
        return BUCKET_DURATION * (crossed + rem)
    # The reference adds each advance to an unsigned clock, dropping its fraction every time
    # while the bucket phase stays exact (MODELS.md 2.9 pitfall 1).
    steps = BUCKET_DURATION * (np.diff(crossed, prepend=0) + np.diff(rem, prepend=0.0))
    return np.cumsum(np.floor(np.maximum(steps, 0.0)))


# --------------------------------------------------------------------------- sizes, runtimes


def _sizes(rng: np.random.Generator, p: ParamSet, count: int) -> np.ndarray:
    """``count`` sizes (MODELS.md 2.5), three uniforms per job: u, the TSU half, the TSU point."""
    u, half, point = rng.random((count, 3)).T
    lower = half <= p.uprob
    y = np.where(lower, p.ulow + point * (p.umed - p.ulow), p.umed + point * (p.uhi - p.umed))
    forced = u <= p.serial_prob + p.pow2_prob
    exponent = np.floor(y[forced] + 0.5)
    # Not in the reference: keep a forced power of two within round(2^UHI) (module docstring).
    top = math.floor(math.log2(_size_bound(p)))
    y[forced] = np.minimum(exponent, top)
    size = np.floor(np.exp2(y) + 0.5)
    size[u <= p.serial_prob] = 1.0
    return size


def _branch_prob(p: ParamSet, size: np.ndarray) -> np.ndarray:
    """Probability of the short-runtime gamma, p(n) = clip(PA*n + PB, 0, 1) (MODELS.md 2.6)."""
    return np.clip(p.pa * np.asarray(size, dtype=np.float64) + p.pb, 0.0, 1.0)


def _runtimes(rng: np.random.Generator, p: ParamSet, size: np.ndarray) -> np.ndarray:
    """Runtimes floor(e^x), x from the size's hyper-gamma below 12 (MODELS.md 2.6).

    Drawn in blocks of :data:`_BLOCK` jobs, each finished (rejections included) before the
    next, so a job's runtime does not depend on how many jobs follow it. ``size`` must hold
    whole blocks.
    """
    prob = _branch_prob(p, size)
    log_runtime = np.empty(len(size))
    for start in range(0, len(size), _BLOCK):
        pending = np.arange(start, min(start + _BLOCK, len(size)))
        while len(pending):
            short = rng.random(len(pending)) <= prob[pending]
            x = rng.gamma(np.where(short, p.a1, p.a2), np.where(short, p.b1, p.b2))
            log_runtime[pending] = x
            # A rejection redraws both the branch and the value.
            pending = pending[x > MAX_LOG_RUNTIME]
    return np.floor(np.exp(log_runtime))


def _class_jobs(seed: int, cls: str, p: ParamSet, count: int) -> tuple[np.ndarray, np.ndarray]:
    """Sizes and runtimes of the first ``count`` jobs of a class."""
    drawn = -(-count // _BLOCK) * _BLOCK
    size = _sizes(stream(seed, f"{NAME}/sizes/{cls}"), p, drawn)
    runtime = _runtimes(stream(seed, f"{NAME}/runtimes/{cls}"), p, size)
    return size[:count], runtime[:count]


# --------------------------------------------------------------------------- generator


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
    """Generate ``jobs`` jobs of the Lublin-Feitelson model as SWF records.

    Args:
        jobs: Number of jobs (>= 0).
        seed: The run's seed; the generator is a pure function of its arguments.
        machine_size: P, written as ``MaxNodes`` and the bound the adapting presets fit the
            sizes to.
        preset: One of :data:`PRESETS`.
        load_scale: f, multiplying every e^g before the daily-cycle mapping: gaps about f
            times longer, the day still 24 h. The draws do not depend on f.
        max_size: If given, the size bound: UHI = log2(max_size) (interactive: unless its own
            bound is already below), UMED moved with it, whatever the preset.
        **overrides: Options and per-class parameters (module docstring).

    Returns:
        Records ``(jobs, 18)`` in submit order with job numbers 1..jobs, and the SWF header.

    Raises:
        SpecError: (a ``ValueError``) an unknown preset or key, or a bad value; the message
            names it.
    """
    jobs = _as_int("jobs", jobs, 0)
    machine_size = _as_int("machine_size", machine_size, 1)
    if max_size is not None:
        max_size = _as_int("max_size", max_size, 1)
    load_scale = _as_number("load_scale", load_scale)
    if not load_scale > 0:
        raise SpecError(f"{NAME}: load_scale must be positive, got {load_scale}")
    model = check_model(NAME, preset, overrides, machine_size=machine_size, max_size=max_size)
    return draw(model, jobs, seed=seed, load_scale=load_scale)


def draw(model: CheckedModel, jobs: int, *, seed: int, load_scale: float) -> ModelOutput:
    """:func:`generate`'s records from parameters it has checked (``model``, see
    :func:`~tiersweep.core.workloads.models.check_model`)."""
    config: _Config = model.params
    machine_size, preset, max_size, overrides = model.machine_size, model.preset, model.max_size, model.overrides
    classes = tuple(config.sets)
    times = []
    for cls in classes:
        # Each stream gets ``jobs`` arrivals: enough for the merge never to run out of either.
        rng = stream(seed, f"{NAME}/arrivals/{cls}")
        times.append(
            _arrival_times(
                rng,
                config.sets[cls],
                jobs,
                start_hour=config.start_hour,
                load_scale=load_scale,
                truncate=config.compat_truncate_clock,
            )
        )
    if config.typed:
        # Batch goes first only when strictly earlier: a stable sort with interactive first.
        interactive, batch = times[classes.index("interactive")], times[classes.index("batch")]
        clock = np.concatenate((interactive, batch))
        which = np.concatenate((np.zeros(len(interactive), np.int8), np.ones(len(batch), np.int8)))
        order = np.argsort(clock, kind="stable")[:jobs]
        clock, which = clock[order], which[order]
        is_batch = which == 1
    else:
        clock = times[0]
        is_batch = np.zeros(jobs, dtype=bool)

    size = np.empty(jobs)
    runtime = np.empty(jobs)
    job_type = np.zeros(jobs)
    for cls in classes:
        mask = is_batch if cls == "batch" else ~is_batch
        count = int(np.count_nonzero(mask))
        size[mask], runtime[mask] = _class_jobs(seed, cls, config.sets[cls], count)
        job_type[mask] = _TYPE_FIELD[cls]

    records = np.full((jobs, len(SWF_FIELDS)), -1.0)
    records[:, _COL["job_number"]] = np.arange(1, jobs + 1)
    records[:, _COL["submit_time"]] = np.floor(clock + 0.5)
    records[:, _COL["run_time"]] = runtime
    records[:, _COL["allocated_processors"]] = size
    records[:, _COL["requested_processors"]] = size
    records[:, _COL["status"]] = 1
    records[:, _COL["queue_number"]] = job_type

    header: dict[str, str] = {
        "Version": "2",
        "Acknowledge": "U. Lublin and D. G. Feitelson, The workload on parallel supercomputers, "
        "JPDC 63(11), 2003 (PWA m_lublin99)",
        "Information": "synthetic LWorkload generated by tiersweep (MODELS.md 2)",
        "MaxJobs": str(jobs),
        "MaxRecords": str(jobs),
        "MaxNodes": str(machine_size),
        "MaxRuntime": str(MAX_RUNTIME),
        "Model": NAME,
        "Preset": preset,
        "Seed": str(seed),
        "LoadScale": repr(load_scale),
        "MaxSize": str(max_size),
        "Typed": "true" if config.typed else "false",
    }
    if overrides:
        header["Overrides"] = ", ".join(f"{key}={overrides[key]!r}" for key in sorted(overrides))
    return ModelOutput(records, header)
