"""Bandwidth annotation: each job's per-VM bandwidth demand, for network-aware platforms.

The hook every workload goes through, after the CPU annotation. ``workload.bandwidth`` is one of:

``none`` (default)
    Every demand stays 0 (platforms without a network ignore it).
``{mean: M}`` (optionally ``max_mbps: C``, default 1000)
    Paper 004's demand model (section 5.2) around a target average, as in its figure 4
    (averages from 50 to 700 Mbps): ``AvgB = M``, ``MaxB = AvgB / 0.55`` and
    ``MinB = MaxB / 10`` (so that ``AvgB = (MinB + MaxB) / 2``, the paper's relation), and
    ``B = N(AvgB, 0.2 AvgB)`` clamped to ``[MinB, min(MaxB, C)]``. ``C`` is the link rate: no
    VM can be promised more than a link carries. The same distribution for every job, whatever
    its size: on the paper's fat-tree under ``bandwidth_check: per_server`` a job of up to 54
    VMs always fits the idle tree (one VM per server, each path carrying at most ``B <= C``);
    a larger one only when ``B <= C / ceil(N / 54)`` (see ``whole_vms`` below).
``{formula: paper}`` (optionally ``link_mbps: R``, default 1000; ``servers: S``, default 54;
``whole_vms``, default false)
    The paper's demand model as printed: ``MaxB = R * S / (nodes requested)``, capped at the
    link rate ``R``; ``MinB = MaxB / 10``; ``AvgB = (MinB + MaxB) / 2``; ``B = N(AvgB,
    0.2 AvgB)`` clamped to ``[MinB, MaxB]``. (The paper prints
    ``max(min(MinB, draw), MaxB)``, min and max swapped, which would always give MaxB; the
    clamp is the stated intent: "make sure the result do not exceed the maximum and minimum
    constrain".) Per job: MaxB depends on its size N: ``R`` up to ``S`` VMs, then ``R S / N``
    (500 Mbps at 108 VMs, 125 at 432). R and S describe the platform the formula is meant for
    (paper 004: 1 Gbit/s links, k = 6, 54 servers); they are workload keys because a workload
    never depends on the platform it runs on.

    ``R S / N`` is the rate at which N VMs spread evenly over the S servers, N / S on each,
    load every server's path with exactly R (paper 004's equation 6, the fat-tree's
    ``bandwidth_check: per_server``). VMs are whole, though: when S does not divide N some
    server holds ``ceil(N / S)`` of them, and a demand above ``R / ceil(N / S)`` then fits no
    placement (55 VMs at more than 500 Mbps: some server holds two, 2 x 501 > 1000).
    ``whole_vms: true`` sets ``MaxB = R / ceil(N / S)`` instead (the same, up to the 1/1024
    Mbps grid, for ``N <= S`` and whenever S divides N) and keeps every demand at or below it
    after the rounding to 1/1024 Mbps, so every job of at most S x slots VMs fits the idle
    fat-tree under ``per_server``. The default, false, is the formula as printed.

Draws come from the run seed's own ``"bandwidth"`` stream, one standard normal per job in
workload order, so the other draws (CPU usage, ...) are unchanged and a job's demand does not
depend on how many jobs follow it. Demands are rounded to 1/1024 Mbps, the fat-tree
platform's bandwidth unit.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..jobs import Job
from ..params import boolean
from ..rng import stream

__all__ = ["BANDWIDTH_MODELS", "annotate_bandwidth", "check_bandwidth", "demand_bounds"]

#: The forms ``workload.bandwidth`` takes: the string ``none``, or a mapping with a ``mean``
#: or a ``formula`` key.
BANDWIDTH_MODELS = ("none", "mean", "formula")

#: Paper 004, 5.2: the standard deviation of a demand is 0.2 times its average.
SPREAD = 0.2
#: Paper 004, 5.2: MinB = MaxB / 10, so AvgB = (MinB + MaxB) / 2 = 0.55 MaxB.
MIN_OVER_MAX = 0.1
_AVG_OVER_MAX = (1 + MIN_OVER_MAX) / 2
DEFAULT_LINK_MBPS = 1000.0
DEFAULT_SERVERS = 54
_STEPS_PER_MBPS = 1024
_CHOICES = "none, {mean: <Mbps>} or {formula: paper}"


def _positive(key: str, value: Any) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0:
        return float(value)
    raise ValueError(f"{key}: expected a positive number, got {value!r}")


def check_bandwidth(value: Any) -> str | dict[str, Any]:
    """Check a ``workload.bandwidth`` value; return it with every default filled in.

    Raises:
        ValueError: Naming what was wrong and the valid forms.
    """
    if isinstance(value, str):
        if value == "none":
            return value
        raise ValueError(f"unknown value {value!r}; valid choices: {_CHOICES}")
    if not isinstance(value, Mapping):
        raise ValueError(f"expected {_CHOICES}, got {value!r}")
    if ("mean" in value) == ("formula" in value):
        raise ValueError(f"give exactly one of mean or formula, got {dict(value)!r}")
    if "mean" in value:
        allowed = {"mean", "max_mbps"}
        unknown = sorted(set(value) - allowed)
        if unknown:
            raise ValueError(f"unknown key {unknown[0]!r} with mean; valid keys: {', '.join(sorted(allowed))}")
        mean = _positive("mean", value["mean"])
        cap = _positive("max_mbps", value.get("max_mbps", DEFAULT_LINK_MBPS))
        if mean >= cap:
            raise ValueError(f"mean {mean:g} Mbps cannot be reached with demands capped at max_mbps {cap:g}")
        return {"mean": mean, "max_mbps": cap}
    allowed = {"formula", "link_mbps", "servers", "whole_vms"}
    unknown = sorted(set(value) - allowed)
    if unknown:
        raise ValueError(f"unknown key {unknown[0]!r} with formula; valid keys: {', '.join(sorted(allowed))}")
    if value["formula"] != "paper":
        raise ValueError(f"formula: unknown value {value['formula']!r}; valid choices: paper")
    servers = value.get("servers", DEFAULT_SERVERS)
    if isinstance(servers, bool) or not isinstance(servers, (int, float)) or servers != int(servers) or servers < 1:
        raise ValueError(f"servers: expected a positive integer, got {servers!r}")
    link = _positive("link_mbps", value.get("link_mbps", DEFAULT_LINK_MBPS))
    try:
        whole = boolean(value.get("whole_vms", False))
    except ValueError as error:
        raise ValueError(f"whole_vms: {error}") from None
    return {"formula": "paper", "link_mbps": link, "servers": int(servers), "whole_vms": whole}


def demand_bounds(sizes: np.ndarray, model: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(MinB, AvgB, upper clamp)`` per job for a checked ``model`` mapping."""
    sizes = np.asarray(sizes, dtype=np.float64)
    if "mean" in model:
        avg = np.full(len(sizes), model["mean"])
        high = avg / _AVG_OVER_MAX
        return high * MIN_OVER_MAX, avg, np.minimum(high, model["max_mbps"])
    rate = model["link_mbps"]
    if model.get("whole_vms"):
        # The most VMs a server holds with the job spread as evenly as whole VMs allow; the
        # bound is floored to the demand grid so that rounding a draw never crosses it.
        high = rate / np.maximum(np.ceil(sizes / model["servers"]), 1.0)
        high = np.floor(high * _STEPS_PER_MBPS) / _STEPS_PER_MBPS
    else:
        high = np.minimum(rate * model["servers"] / sizes, rate)
    return high * MIN_OVER_MAX, high * _AVG_OVER_MAX, high


def annotate_bandwidth(jobs: Sequence[Job], *, seed: int, model: str | Mapping[str, Any] = "none") -> None:
    """Set ``job.bandwidth`` (per-VM demand, Mbps) for every job, in place, according to ``model``."""
    model = check_bandwidth(model)
    if isinstance(model, str):  # "none", the only string check_bandwidth returns
        for job in jobs:
            job.bandwidth = 0.0
        return
    if not jobs:
        return
    sizes = np.fromiter((j.size for j in jobs), np.float64, len(jobs))
    low, avg, high = demand_bounds(sizes, model)
    draws = stream(seed, "bandwidth").standard_normal(len(jobs))
    demand = np.clip(avg + SPREAD * avg * draws, low, high)
    demand = np.round(demand * _STEPS_PER_MBPS) / _STEPS_PER_MBPS
    for job, value in zip(jobs, demand.tolist()):
        job.bandwidth = value
