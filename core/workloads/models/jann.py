"""JWorkload: Jann et al.'s 1997 model with the CTC-SP2 tables reconstructed in MODELS.md section 3.

The form is published (Jann, Pattnaik, Franke, Wang, Skovira, Riordan, "Modeling of workload
in MPPs", JSSPP 1997, LNCS 1291; PWA ``m_jann97``); the tables are a **reconstruction** fitted
to the PWA CTC-SP2 log by three-moment matching (MODELS.md 3.2), not the published tables.
The presets ``ctc_fulllog`` (default) and ``ctc_period`` are the ones MODELS.md calls
``jann97_ctc_fulllog`` and ``jann97_ctc_period``.

Model (MODELS.md 3.3-3.6):

* Ten **size ranges** 1 | 2 | 3-4 | ... | 129-256 | 257-322. Ranges whose lower bound exceeds
  ``max_size`` (default 256) are dropped; a range straddling ``max_size`` is an error.
* Each range is an independent **renewal stream**: gaps ``load_scale * A`` with
  ``A ~ HyperErlang(k, p, lam1, lam2)`` (branch 1 with probability p, then
  ``Gamma(k, 1/lam_branch)``); its first arrival comes one gap after time 0.
* The streams are **merged** in time order, ties by range index, until ``jobs`` jobs.
* Per job: **runtime** ``max(1, round(S))`` with S the range's service hyper-Erlang,
  independent of everything else; **size** by ``size_rule``: ``empirical`` (default; the
  preset's CTC in-range pmf, Appendix B), ``uniform`` on [lo, hi], ``upper`` = hi, ``pow2`` =
  the largest power of two in the range (hi when there is none, as for 257-322).

**Overrides** (keyword arguments of :func:`generate`): ``size_rule``, and ``ranges``, either a
mapping from a range label (``"9-16"``) to replacements of that range's ``arrival``,
``service`` (each a dict of some of ``k``, ``p``, ``lam1``, ``lam2``) or ``sizes`` (a
``{size: count}`` pmf), or a list of complete range dicts (``lo``, ``hi``, ``arrival``,
``service``, optional ``sizes``) replacing the preset's ranges altogether.

**Randomness** (MODELS.md 1.4): named streams per range, ``jann97/arrivals/<label>``,
``jann97/runtimes/<label>`` and ``jann97/sizes/<label>``. Hyper-Erlang variates are drawn in
fixed blocks of :data:`BLOCK` (branch uniforms, then stage gammas), so the i-th gap or runtime
of a range depends only on the seed, the range and i: not on how many were drawn, on the other
ranges (dropping one leaves the others' arrivals, sizes and runtimes unchanged), on the size
rule, on ``jobs`` or on ``load_scale``. Arrival times are accumulated unscaled, merged, then
multiplied by ``load_scale`` and rounded to whole seconds, so the merge order does not depend
on ``load_scale`` either.

Depends on numpy and the standard library only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
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
    "SIZE_RULES",
    "BLOCK",
    "generate",
    "parameters",
    "range_label",
    "active_ranges",
    "hyper_erlang_moment",
    "hyper_erlang_sample",
    "checked",
    "draw",
]

NAME = "jann97"

#: Largest job size when ``max_size`` is None: drops 257-322 (MODELS.md 3.5).
DEFAULT_MAX_SIZE = 256

#: Within-range size rules (MODELS.md 3.4); the first is the default.
SIZE_RULES = ("empirical", "uniform", "upper", "pow2")

#: Hyper-Erlang variates per draw block (see the module docstring).
BLOCK = 1024

#: Multiplies the first estimate of the draws each stream needs (the output does not depend
#: on it: streams that fall short are topped up; tests vary it to exercise the top-up).
_FIRST_DRAW = 1.0

_DIST_KEYS = ("k", "p", "lam1", "lam2")
_RANGE_KEYS = ("lo", "hi", "arrival", "service", "sizes")
_PATCH_KEYS = ("arrival", "service", "sizes")


def _row(lo: int, hi: int, arrival: tuple, service: tuple, sizes: Mapping[int, int]) -> dict[str, Any]:
    return {
        "lo": lo,
        "hi": hi,
        "arrival": dict(zip(_DIST_KEYS, arrival)),
        "service": dict(zip(_DIST_KEYS, service)),
        "sizes": dict(sizes),
    }


# MODELS.md 3.3 (parameters: A = interarrival, S = service; lam per stage in 1/s) and
# Appendix B (CTC-SP2 counts of field 5 within each range). Reconstruction, not the paper's.
_FULLLOG = [
    _row(1, 1, (1, 0.06806, 1.289533e-04, 2.546266e-03), (4, 0.46277, 1.193255e-04, 1.006747e-02), {1: 32413}),
    _row(2, 2, (1, 0.07352, 2.277809e-05, 4.656600e-04), (9, 0.21652, 1.902807e-04, 8.067522e-02), {2: 5519}),
    _row(3, 4, (1, 0.12476, 5.739843e-05, 9.278894e-04), (4, 0.21790, 1.185492e-04, 1.227781e-01), {3: 989, 4: 8306}),
    _row(
        5,
        8,
        (1, 0.17993, 6.515567e-05, 1.556605e-03),
        (2, 0.18195, 8.261759e-05, 6.590284e-03),
        {5: 1891, 6: 767, 7: 217, 8: 5920},
    ),
    _row(
        9,
        16,
        (1, 0.19288, 9.083889e-05, 1.017615e-03),
        (4, 0.26071, 1.266220e-04, 8.817159e-03),
        {9: 935, 10: 1915, 11: 387, 12: 741, 13: 114, 14: 174, 15: 136, 16: 5533},
    ),
    _row(
        17,
        32,
        (1, 0.16992, 5.162561e-05, 6.673716e-04),
        (3, 0.31901, 1.069239e-04, 5.242096e-03),
        {
            17: 269,
            18: 298,
            19: 25,
            20: 717,
            21: 222,
            22: 87,
            23: 4,
            24: 469,
            25: 224,
            26: 95,
            27: 5,
            28: 81,
            29: 73,
            30: 211,
            31: 107,
            32: 3534,
        },
    ),
    _row(
        33,
        64,
        (1, 0.34971, 4.738527e-05, 5.440764e-04),
        (3, 0.32511, 1.092549e-04, 4.852759e-03),
        {
            33: 457,
            34: 185,
            35: 14,
            36: 124,
            37: 84,
            38: 74,
            39: 1,
            40: 135,
            41: 25,
            42: 18,
            45: 6,
            46: 4,
            48: 69,
            49: 50,
            50: 77,
            51: 92,
            53: 1,
            54: 5,
            58: 1,
            60: 24,
            61: 54,
            62: 3,
            63: 5,
            64: 1871,
        },
    ),
    _row(
        65,
        128,
        (1, 0.33962, 1.678292e-05, 8.486937e-05),
        (5, 0.36157, 1.262200e-04, 1.104940e-02),
        {
            65: 140,
            66: 30,
            67: 5,
            68: 12,
            69: 6,
            70: 5,
            71: 3,
            72: 4,
            76: 2,
            78: 2,
            80: 3,
            81: 32,
            82: 1,
            90: 2,
            91: 1,
            92: 1,
            93: 1,
            94: 2,
            95: 1,
            96: 26,
            97: 7,
            98: 1,
            99: 2,
            100: 17,
            101: 20,
            102: 11,
            114: 11,
            120: 14,
            123: 2,
            126: 1,
            127: 8,
            128: 655,
        },
    ),
    _row(
        129,
        256,
        (1, 0.33174, 3.863162e-06, 7.853466e-05),
        (1, 0.21587, 7.375091e-05, 1.054236e-03),
        {
            129: 106,
            130: 2,
            132: 1,
            140: 2,
            150: 3,
            151: 6,
            160: 3,
            161: 1,
            162: 2,
            175: 1,
            180: 5,
            184: 2,
            192: 18,
            194: 1,
            200: 29,
            203: 1,
            216: 1,
            231: 1,
            250: 3,
            254: 1,
            255: 3,
            256: 113,
        },
    ),
    _row(
        257,
        322,
        (1, 0.41434, 2.243963e-06, 1.001047e-05),
        (4, 0.39102, 1.081621e-04, 3.326132e-01),
        {
            257: 6,
            258: 2,
            264: 1,
            265: 1,
            269: 1,
            282: 1,
            288: 3,
            290: 1,
            292: 1,
            296: 2,
            300: 28,
            306: 58,
            308: 1,
            316: 1,
            320: 13,
            322: 1,
        },
    ),
]

_PERIOD = [
    _row(1, 1, (1, 0.06915, 1.483767e-04, 2.306810e-03), (4, 0.38853, 1.186263e-04, 6.804332e-03), {1: 7405}),
    _row(2, 2, (1, 0.09571, 3.621551e-05, 8.724361e-04), (8, 0.30866, 1.758290e-04, 4.033858e-02), {2: 1725}),
    _row(3, 4, (1, 0.12907, 6.229689e-05, 1.334327e-03), (5, 0.20721, 1.428009e-04, 3.211674e-02), {3: 374, 4: 1985}),
    _row(
        5,
        8,
        (1, 0.21520, 7.181875e-05, 1.624013e-03),
        (2, 0.22334, 9.593634e-05, 3.041586e-03),
        {5: 466, 6: 232, 7: 20, 8: 1121},
    ),
    _row(
        9,
        16,
        (1, 0.10641, 6.716861e-05, 7.155213e-04),
        (3, 0.31659, 1.127246e-04, 2.178880e-02),
        {9: 134, 10: 401, 11: 37, 12: 193, 14: 10, 15: 65, 16: 1435},
    ),
    _row(
        17,
        32,
        (1, 0.12487, 3.380101e-05, 3.786710e-04),
        (3, 0.31796, 1.045655e-04, 1.979149e-02),
        {17: 64, 18: 107, 19: 3, 20: 112, 21: 32, 22: 1, 24: 66, 25: 37, 26: 49, 27: 3, 30: 6, 31: 1, 32: 617},
    ),
    _row(
        33,
        64,
        (1, 0.44160, 5.551901e-05, 1.518851e-03),
        (3, 0.41709, 1.012428e-04, 8.862359e-03),
        {
            33: 148,
            34: 57,
            36: 5,
            37: 14,
            40: 15,
            41: 18,
            42: 1,
            48: 19,
            49: 1,
            50: 23,
            51: 2,
            54: 3,
            60: 5,
            63: 1,
            64: 464,
        },
    ),
    _row(
        65,
        128,
        (2, 0.50297, 3.345030e-05, 4.635580e-04),
        (5, 0.32282, 1.214364e-04, 1.204013e-01),
        {
            65: 16,
            66: 4,
            67: 3,
            69: 1,
            70: 2,
            71: 3,
            78: 2,
            81: 3,
            94: 1,
            96: 13,
            97: 2,
            100: 4,
            101: 2,
            114: 6,
            120: 5,
            127: 6,
            128: 127,
        },
    ),
    _row(
        129,
        256,
        (2, 0.16914, 5.785206e-06, 2.786548e-04),
        (1, 0.34992, 2.930746e-04, 7.638693e-03),
        {129: 52, 130: 2, 150: 3, 161: 1, 175: 1, 180: 1, 184: 2, 192: 7, 200: 9, 250: 1, 256: 20},
    ),
    _row(
        257,
        322,
        (1, 0.14792, 1.670602e-06, 1.763744e-05),
        (6, 0.20611, 1.438916e-04, 3.156768e-02),
        {257: 1, 258: 1, 264: 1, 290: 1, 300: 8, 306: 27, 308: 1, 320: 9, 322: 1},
    ),
]

PRESETS: dict[str, dict[str, Any]] = {
    # MODELS.md 3.3 "jann97_ctc_fulllog": the whole CTC-SP2 log (77,211 jobs). Default.
    "ctc_fulllog": {"ranges": _FULLLOG, "size_rule": "empirical"},
    # MODELS.md 3.3 "jann97_ctc_period": the model's own period, 25 Jun - 12 Sep 1996.
    "ctc_period": {"ranges": _PERIOD, "size_rule": "empirical"},
}

DEFAULT_PRESET = "ctc_fulllog"

_FIELDS = 18
_SUBMIT, _RUNTIME, _ALLOCATED, _REQUESTED, _STATUS = 1, 3, 4, 7, 10


# --------------------------------------------------------------------------- parameters


def range_label(lo: int, hi: int) -> str:
    """The label of a size range as MODELS.md writes it: ``"1"``, ``"9-16"``."""
    return str(lo) if lo == hi else f"{lo}-{hi}"


#: The rates (1/s) of an Erlang stage: far slower ones give gaps or runtimes that overflow (or
#: divide by zero), far faster ones round every time to zero.
RATES = (1e-8, 100.0)


def _integer(value: Any, what: str, minimum: int) -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{NAME}: {what} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{NAME}: {what} must be a number, got {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{NAME}: {what} must be finite, got {value!r}")
    return value


def _dist(given: Any, what: str, base: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A validated hyper-Erlang dict; ``given`` may be partial when ``base`` completes it."""
    if not isinstance(given, Mapping):
        raise ValueError(f"{NAME}: {what} must be a mapping of {', '.join(_DIST_KEYS)}, got {given!r}")
    for key in given:
        if key not in _DIST_KEYS:
            raise ValueError(f"{NAME}: {what}: unknown key {key!r}; valid keys: {', '.join(_DIST_KEYS)}")
    merged = {**(base or {}), **given}
    missing = [key for key in _DIST_KEYS if key not in merged]
    if missing:
        raise ValueError(f"{NAME}: {what}: missing {', '.join(missing)} (needs {', '.join(_DIST_KEYS)})")
    out: dict[str, float] = {"k": _integer(merged["k"], f"{what}.k", 1)}
    p = _number(merged["p"], f"{what}.p")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{NAME}: {what}.p must lie in [0, 1], got {p!r}")
    out["p"] = p
    low, high = RATES
    for key in ("lam1", "lam2"):
        rate = _number(merged[key], f"{what}.{key}")
        if not low <= rate <= high:
            raise ValueError(
                f"{NAME}: {what}.{key} must be a positive rate (1/s) from {low:g} to {high:g} (a mean from 10 ms to "
                f"three years), got {rate!r}"
            )
        out[key] = rate
    return out


def _sizes(given: Any, lo: int, hi: int, what: str) -> dict[int, float]:
    if not isinstance(given, Mapping) or not given:
        raise ValueError(f"{NAME}: {what} must be a non-empty mapping size -> count, got {given!r}")
    out: dict[int, float] = {}
    for size, count in given.items():
        if isinstance(size, str) and size.strip().isdigit():
            size_int = int(size)  # YAML/JSON mappings may give the sizes as strings
        elif (
            isinstance(size, (int, float, np.integer, np.floating))
            and not isinstance(size, bool)
            and math.isfinite(size)
            and size == int(size)
        ):
            size_int = int(size)
        else:
            raise ValueError(f"{NAME}: {what}: size {size!r} is not an integer")
        if not lo <= size_int <= hi:
            raise ValueError(f"{NAME}: {what}: size {size_int} lies outside its range {range_label(lo, hi)}")
        count = _number(count, f"{what}[{size_int}]")
        if not count >= 0:
            raise ValueError(f"{NAME}: {what}[{size_int}] must be a count >= 0, got {count!r}")
        out[size_int] = out.get(size_int, 0) + count
    if not sum(out.values()) > 0:
        raise ValueError(f"{NAME}: {what}: the counts sum to zero")
    return dict(sorted(out.items()))


def _range(given: Any, index: int) -> dict[str, Any]:
    """A validated complete range dict (list form of the ``ranges`` override)."""
    if not isinstance(given, Mapping):
        raise ValueError(f"{NAME}: ranges[{index}] must be a mapping of {', '.join(_RANGE_KEYS)}, got {given!r}")
    for key in given:
        if key not in _RANGE_KEYS:
            raise ValueError(f"{NAME}: ranges[{index}]: unknown key {key!r}; valid keys: {', '.join(_RANGE_KEYS)}")
    for key in ("lo", "hi", "arrival", "service"):
        if key not in given:
            raise ValueError(f"{NAME}: ranges[{index}]: missing {key!r}")
    lo = _integer(given["lo"], f"ranges[{index}].lo", 1)
    hi = _integer(given["hi"], f"ranges[{index}].hi", lo)
    label = range_label(lo, hi)
    sizes: dict[int, float] | None
    if given.get("sizes") is not None:
        sizes = _sizes(given["sizes"], lo, hi, f"ranges[{label}].sizes")
    else:  # a single-valued range needs no pmf; a wider one without counts cannot use `empirical`
        sizes = {lo: 1} if lo == hi else None
    return {
        "lo": lo,
        "hi": hi,
        "arrival": _dist(given["arrival"], f"ranges[{label}].arrival"),
        "service": _dist(given["service"], f"ranges[{label}].service"),
        "sizes": sizes,
    }


def _apply_ranges(base: list[dict[str, Any]], given: Any) -> list[dict[str, Any]]:
    if isinstance(given, Mapping):
        by_label = {range_label(r["lo"], r["hi"]): i for i, r in enumerate(base)}
        out = [dict(r) for r in base]
        for label, patch in given.items():
            if isinstance(label, (int, np.integer)) and not isinstance(label, bool):
                label = str(label)  # YAML reads the single-size labels 1 and 2 as integers
            if label not in by_label:
                raise ValueError(f"{NAME}: ranges: unknown range {label!r}; valid ranges: {', '.join(by_label)}")
            if not isinstance(patch, Mapping):
                raise ValueError(f"{NAME}: ranges[{label}] must be a mapping, got {patch!r}")
            row = out[by_label[label]]
            for key, value in patch.items():
                if key not in _PATCH_KEYS:
                    raise ValueError(
                        f"{NAME}: ranges[{label}]: unknown key {key!r}; valid keys: {', '.join(_PATCH_KEYS)} "
                        "(give a list of complete ranges to change the bounds)"
                    )
                if key == "sizes":
                    row["sizes"] = _sizes(value, row["lo"], row["hi"], f"ranges[{label}].sizes")
                else:
                    row[key] = _dist(value, f"ranges[{label}].{key}", base=row[key])
        return out
    if isinstance(given, (str, bytes)) or not isinstance(given, Sequence) or not given:
        raise ValueError(
            f"{NAME}: ranges must be a mapping label -> replacements or a non-empty list of ranges, got {given!r}"
        )
    out = [_range(r, i) for i, r in enumerate(given)]
    for previous, current in zip(out, out[1:]):
        if current["lo"] <= previous["hi"]:
            raise ValueError(
                f"{NAME}: ranges must be ascending and disjoint; {range_label(current['lo'], current['hi'])} "
                f"follows {range_label(previous['lo'], previous['hi'])}"
            )
    return out


def parameters(preset: str = DEFAULT_PRESET, **overrides: Any) -> dict[str, Any]:
    """The validated parameters of ``preset`` with ``overrides`` applied: a fresh dict
    ``{"ranges": [...], "size_rule": ...}`` (the presets themselves are never modified).

    Raises:
        ValueError: Unknown preset, override key, range label or size rule (the message lists
            the valid ones), or a value out of range.
    """
    if preset not in PRESETS:
        raise ValueError(f"{NAME}: unknown preset {preset!r}; valid presets: {', '.join(PRESETS)}")
    base = PRESETS[preset]
    for key in overrides:
        if key not in base:
            raise ValueError(f"{NAME}: unknown parameter {key!r}; valid parameters: {', '.join(sorted(base))}")
    ranges = [
        {**r, "arrival": dict(r["arrival"]), "service": dict(r["service"]), "sizes": dict(r["sizes"])}
        for r in base["ranges"]
    ]
    if "ranges" in overrides:
        ranges = _apply_ranges(ranges, overrides["ranges"])
    rule = overrides.get("size_rule", base["size_rule"])
    if rule not in SIZE_RULES:
        raise ValueError(f"{NAME}: unknown size_rule {rule!r}; valid choices: {', '.join(SIZE_RULES)}")
    return {"ranges": ranges, "size_rule": rule}


def checked(
    preset: str, overrides: Mapping[str, Any], *, machine_size: int, max_size: int | None = None
) -> tuple[dict[str, Any], int, list[int]]:
    """The validated parameters, the size bound and the ranges kept under it, on a machine of
    ``machine_size`` nodes: the checks :func:`generate` makes of its parameters.

    Raises:
        ValueError: A parameter the model does not take, a bad value, or a ``max_size`` that
            splits a range or exceeds the machine.
    """
    params = parameters(preset, **overrides)
    if max_size is None:
        # 256 (drops 257-322), or on a smaller machine the largest range top that fits it,
        # so that the default never splits a range.
        max_size = DEFAULT_MAX_SIZE
        if isinstance(machine_size, (int, np.integer)) and machine_size < DEFAULT_MAX_SIZE:
            tops = [r["hi"] for r in params["ranges"] if r["hi"] <= machine_size]
            max_size = max(tops) if tops else machine_size
    if isinstance(max_size, bool) or not isinstance(max_size, (int, np.integer)) or max_size < 1:
        raise ValueError(f"{NAME}: max_size must be a positive integer, got {max_size!r}")
    if machine_size is not None and max_size > machine_size:
        raise ValueError(
            f"{NAME}: max_size {max_size} exceeds machine_size {machine_size}; pass max_size <= {machine_size} "
            f"(ranges above it are then dropped)"
        )
    ranges = params["ranges"]
    kept = active_ranges(ranges, int(max_size))
    if params["size_rule"] == "empirical":
        for i in kept:
            if ranges[i]["sizes"] is None:
                label = range_label(ranges[i]["lo"], ranges[i]["hi"])
                raise ValueError(f"{NAME}: size_rule 'empirical' needs ranges[{label}].sizes (a size -> count pmf)")
    return params, int(max_size), kept


def active_ranges(ranges: Sequence[Mapping[str, Any]], max_size: int) -> list[int]:
    """Indices of the ranges kept under ``max_size``: those whose lower bound does not exceed
    it (MODELS.md 3.5).

    Raises:
        ValueError: ``max_size`` falls inside a range (lo <= max_size < hi), or below every range.
    """
    kept = []
    for i, r in enumerate(ranges):
        if r["lo"] > max_size:
            continue
        if r["hi"] > max_size:
            raise ValueError(
                f"{NAME}: max_size {max_size} splits the range {range_label(r['lo'], r['hi'])}; use "
                f"{r['lo'] - 1} or less to drop it or {r['hi']} or more to keep it"
            )
        kept.append(i)
    if not kept:
        raise ValueError(f"{NAME}: max_size {max_size} is below every range (the smallest starts at {ranges[0]['lo']})")
    return kept


# --------------------------------------------------------------------------- distributions


def hyper_erlang_moment(dist: Mapping[str, Any], order: int) -> float:
    """E[X^order] = k(k+1)...(k+order-1) * (p/lam1^order + (1-p)/lam2^order) (MODELS.md 1.5)."""
    k, p = dist["k"], dist["p"]
    rising = math.prod(k + j for j in range(order))
    return rising * (p / dist["lam1"] ** order + (1 - p) / dist["lam2"] ** order)


def hyper_erlang_sample(rng: np.random.Generator, dist: Mapping[str, Any], blocks: int) -> np.ndarray:
    """``blocks * BLOCK`` hyper-Erlang variates from ``rng``, drawn block by block (per
    block: ``BLOCK`` branch uniforms, then ``BLOCK`` standard gammas of shape k), so the
    sequence continues identically however the blocks are requested."""
    k, p = float(dist["k"]), dist["p"]
    scale1, scale2 = 1.0 / dist["lam1"], 1.0 / dist["lam2"]
    out = np.empty(blocks * BLOCK)
    for b in range(blocks):
        branch1 = rng.random(BLOCK) < p
        stages = rng.standard_gamma(k, BLOCK)  # Gamma(k, 1): the sum of k unit exponentials
        out[b * BLOCK : (b + 1) * BLOCK] = stages * np.where(branch1, scale1, scale2)
    return out


def _pow2(lo: int, hi: int) -> int:
    top = 1 << (hi.bit_length() - 1)  # largest power of two <= hi
    return top if top >= lo else hi


# --------------------------------------------------------------------------- generation


def _arrivals(seed: int, ranges: Sequence[Mapping[str, Any]], kept: Sequence[int], jobs: int) -> tuple[np.ndarray, ...]:
    """Unscaled arrival times of the first ``jobs`` jobs of the merged streams.

    Returns ``(times, range_index)`` in merge order: time ascending, ties by range index.
    Each stream gets enough whole blocks to pass the time of the ``jobs``-th merged arrival
    (an estimate first, topped up when a stream falls short).
    """
    dists = [ranges[i]["arrival"] for i in kept]
    means = np.array([hyper_erlang_moment(d, 1) for d in dists])
    cv2 = np.array([hyper_erlang_moment(d, 2) / hyper_erlang_moment(d, 1) ** 2 - 1 for d in dists])
    rates = 1.0 / means
    share = rates / rates.sum()
    # Horizon of `jobs` arrivals, with 4 sd of margin (renewal count variance ~ E[N] * CV^2).
    horizon = jobs / rates.sum() * (1 + 4 * math.sqrt(reproducible_dot(share, cv2) / jobs))
    rngs = [stream(seed, f"{NAME}/arrivals/{range_label(ranges[i]['lo'], ranges[i]['hi'])}") for i in kept]
    gaps: list[np.ndarray] = [np.empty(0)] * len(kept)
    wanted = (horizon * rates + 4 * np.sqrt(horizon * rates * np.maximum(cv2, 1)) + 16) * _FIRST_DRAW
    while True:
        for j, count in enumerate(wanted):
            blocks = math.ceil(max(count - len(gaps[j]), 0) / BLOCK)
            if blocks:
                gaps[j] = np.concatenate([gaps[j], hyper_erlang_sample(rngs[j], dists[j], blocks)])
        # cumsum accumulates sequentially: the i-th time does not depend on the array length.
        times = [np.cumsum(g) for g in gaps]
        all_times = np.concatenate(times)
        index = np.concatenate([np.full(len(t), kept[j], dtype=np.int64) for j, t in enumerate(times)])
        if len(all_times) >= jobs:
            order = np.lexsort((index, all_times))[:jobs]
            last = all_times[order[-1]]
            # A stream whose last drawn arrival is not after the cut-off may hide earlier ones.
            short = [j for j, t in enumerate(times) if t[-1] <= last]
            if not short:
                return all_times[order], index[order]
        else:
            last = max(t[-1] for t in times)
            short = list(range(len(kept)))
        for j in short:
            behind = max(last - times[j][-1], 0.0) + horizon * 0.1
            wanted[j] = len(gaps[j]) + behind * rates[j] + 4 * math.sqrt(behind * rates[j] * max(cv2[j], 1)) + 1


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
    """Generate ``jobs`` jobs of the Jann et al. model (MODELS.md 3.5).

    Args:
        jobs: Number of jobs.
        seed: Non-negative integer seed.
        machine_size: P, written as ``MaxNodes``; ``max_size`` may not exceed it.
        preset: A key of :data:`PRESETS` (``ctc_fulllog`` or ``ctc_period``).
        load_scale: f > 0, multiplies every gap (load ~ 1/f); the draws do not depend on it.
        max_size: Ranges whose lower bound exceeds it are dropped; None means 256, which drops
            257-322 (on a machine below 256, the largest range top within the machine). A
            value inside a range (e.g. 300) is an error.
        **overrides: ``size_rule`` and ``ranges`` (see the module docstring).

    Returns:
        :class:`ModelOutput` with ``(jobs, 18)`` float64 records in submit order.

    Raises:
        ValueError: Bad arguments, unknown preset or override, or a ``max_size`` that splits
            a range.
    """
    if isinstance(jobs, bool) or not isinstance(jobs, (int, np.integer)) or jobs < 0:
        raise ValueError(f"{NAME}: jobs must be a non-negative integer, got {jobs!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"{NAME}: seed must be a non-negative integer, got {seed!r}")
    if isinstance(machine_size, bool) or not isinstance(machine_size, (int, np.integer)) or machine_size < 1:
        raise ValueError(f"{NAME}: machine_size must be a positive integer, got {machine_size!r}")
    if (
        isinstance(load_scale, bool)
        or not isinstance(load_scale, (int, float))
        or not (math.isfinite(load_scale) and load_scale > 0)
    ):
        raise ValueError(f"{NAME}: load_scale must be a positive finite number, got {load_scale!r}")
    model = check_model(NAME, preset, overrides, machine_size=int(machine_size), max_size=max_size)
    return draw(model, int(jobs), seed=int(seed), load_scale=float(load_scale))


def draw(model: CheckedModel, jobs: int, *, seed: int, load_scale: float) -> ModelOutput:
    """:func:`generate`'s records from parameters it has checked (``model``, see
    :func:`~tiersweep.core.workloads.models.check_model`)."""
    params, max_size, kept = model.params
    machine_size, preset, overrides = model.machine_size, model.preset, model.overrides
    ranges, rule = params["ranges"], params["size_rule"]

    if jobs:
        times, index = _arrivals(seed, ranges, kept, jobs)
    else:
        times, index = np.empty(0), np.empty(0, dtype=np.int64)
    runtime = np.empty(jobs)
    size = np.empty(jobs)
    for i in kept:
        r = ranges[i]
        label = range_label(r["lo"], r["hi"])
        mine = index == i
        count = int(np.count_nonzero(mine))
        if not count:
            continue
        # The j-th job of a range gets the j-th runtime and size of the range's own streams.
        service = hyper_erlang_sample(stream(seed, f"{NAME}/runtimes/{label}"), r["service"], math.ceil(count / BLOCK))
        runtime[mine] = service[:count]
        lo, hi = r["lo"], r["hi"]
        if rule == "upper":
            size[mine] = hi
        elif rule == "pow2":
            size[mine] = _pow2(lo, hi)
        else:
            u = stream(seed, f"{NAME}/sizes/{label}").random(count)
            if rule == "uniform":
                size[mine] = np.minimum(lo + np.floor(u * (hi - lo + 1)), hi)
            else:
                values = np.fromiter(r["sizes"], dtype=np.float64)
                cumulative = np.cumsum(np.fromiter(r["sizes"].values(), dtype=np.float64))
                pick = np.searchsorted(cumulative, u * cumulative[-1], side="right")
                size[mine] = values[np.minimum(pick, len(values) - 1)]

    records = np.full((jobs, _FIELDS), -1.0)
    records[:, 0] = np.arange(1, jobs + 1)
    records[:, _SUBMIT] = np.rint(times * load_scale)
    records[:, _RUNTIME] = np.maximum(1.0, np.rint(runtime))
    records[:, _ALLOCATED] = size
    records[:, _REQUESTED] = size
    records[:, _STATUS] = 1

    header: dict[str, str] = {
        "Version": "2",
        "Acknowledge": "Jann, Pattnaik, Franke, Wang, Skovira, Riordan, Modeling of workload in MPPs, "
        "JSSPP 1997 (PWA m_jann97)",
        "Information": "synthetic JWorkload generated by tiersweep; tables reconstructed from the CTC-SP2 log "
        "(MODELS.md 3.3), not the published ones",
        "MaxJobs": str(jobs),
        "MaxRecords": str(jobs),
        "MaxNodes": str(machine_size),
        "Model": NAME,
        "Preset": preset,
        "Seed": str(seed),
        "LoadScale": repr(load_scale),
        "MaxSize": str(max_size),
        "SizeRule": rule,
        "Ranges": " ".join(range_label(ranges[i]["lo"], ranges[i]["hi"]) for i in kept),
    }
    if overrides:
        header["Overrides"] = ", ".join(f"{key}={overrides[key]!r}" for key in sorted(overrides))
    return ModelOutput(records=records, header=header)
