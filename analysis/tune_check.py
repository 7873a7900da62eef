"""The verdict of a tuning study's held-out check: is the best trial better than the defaults on
seeds the search never saw?

The best trial is chosen on the tuning seeds, so its gain there is optimistic. The check runs
the best trial and the defaults on fresh seeds (``check: {seeds: N}`` in the tuning config),
paired seed by seed; this module turns those pairs into an interval and a verdict. A positive
objective is compared by the paired ratio best / defaults, on the log scale (its geometric mean
and Student-t interval of the log ratios: a ratio interval stays positive, and 0.5 and 2 are
equally far from 1); an objective that can be 0 or negative by the paired difference. The best
is called better (or worse) only where the interval excludes no effect; otherwise the check
shows no difference.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from ..sweep.summary import few_seeds_warning
from ..sweep.tune import CheckPair, HeldOutCheck
from .stats import paired_interval

__all__ = ["CheckVerdict", "check_verdict", "held_out_lines", "stored_check"]


@dataclass(frozen=True)
class CheckVerdict:
    """The held-out comparison of best and defaults.

    Attributes:
        scale: ``"ratio"`` (best / defaults, geometric mean) or ``"difference"`` (best - defaults).
        estimate, low, high: The estimate and its confidence interval (nan with fewer than two pairs).
        pairs: The pairs it is taken over (failed cells left out).
        verdict: ``"better"``, ``"worse"`` or ``"no difference shown"``, for the objective's direction.
    """

    scale: str
    estimate: float
    low: float
    high: float
    pairs: int
    verdict: str


def check_verdict(
    best: Sequence[float], defaults: Sequence[float], direction: str, level: float = 0.95
) -> CheckVerdict:
    """Compare paired values of the best trial and the defaults (see the module docstring);
    pairs with a nan (a failed cell) are left out. ``direction``: ``minimize`` or ``maximize``."""
    pairs = [(b, d) for b, d in zip(best, defaults) if not (math.isnan(b) or math.isnan(d))]
    positive = bool(pairs) and all(b > 0 and d > 0 for b, d in pairs)
    scale, none = ("ratio", 1.0) if positive else ("difference", 0.0)
    estimate, low, high = paired_interval([b for b, _ in pairs], [d for _, d in pairs], scale, level)
    if math.isnan(low) or low <= none <= high:
        verdict = "no difference shown"
    elif (high < none) == (direction == "minimize"):
        verdict = "better"
    else:
        verdict = "worse"
    return CheckVerdict(scale, estimate, low, high, len(pairs), verdict)


def held_out_lines(check: HeldOutCheck, level: float = 0.95) -> list[str]:
    """The lines ``tiersweep tune`` prints for a held-out check (a
    :class:`~tiersweep.sweep.tune.HeldOutCheck`): the verdict over all its pairs, then, when the
    study has several variants, the verdict of each (the best may help at one and not another)."""
    seeds = len(check.seeds)
    head = f"held-out check on {seeds} fresh seed(s) the search never saw:"
    if check.best_is_defaults:
        return [head, f"  the best trial (#{check.trial}) is the defaults: nothing to compare"]
    best = [p.best for p in check.pairs]
    defaults = [p.defaults for p in check.pairs]
    result = check_verdict(best, defaults, check.direction, level)
    lines = [head, f"  {check.metric}: best #{check.trial} {_mean(best):.4g}, defaults {_mean(defaults):.4g} (means)"]
    what = "best / defaults" if result.scale == "ratio" else "best - defaults"
    how = "geometric mean of the paired ratios" if result.scale == "ratio" else "mean of the paired differences"
    lines.append(f"  {what} {_verdict_text(result, f'{how}, {level:.0%} interval, {result.pairs} pairs')}")
    variants = list(dict.fromkeys(p.variant for p in check.pairs))
    if len(variants) > 1:
        for variant in variants:
            mine = [p for p in check.pairs if p.variant == variant]
            of_variant = check_verdict([p.best for p in mine], [p.defaults for p in mine], check.direction, level)
            lines.append(f"    {_variant_label(variant)}: {_verdict_text(of_variant, f'{of_variant.pairs} pairs')}")
    failed = sum(math.isnan(b) or math.isnan(d) for b, d in zip(best, defaults))
    if failed:
        why = check.error or "see the runs' error column"
        lines.append(f"  {failed} pair(s) left out, a cell failed: {why}")
    warning = few_seeds_warning([result.pairs])
    if warning:
        lines.append(f"  {warning}")
    return lines


def _verdict_text(result: CheckVerdict, detail: str) -> str:
    """``estimate [low, high] (detail): verdict``, naming the value the interval includes when it
    shows no difference."""
    text = f"{result.estimate:.4g} [{result.low:.4g}, {result.high:.4g}] ({detail}): {result.verdict}"
    if result.verdict == "no difference shown":
        text += f" (the interval includes {'1' if result.scale == 'ratio' else '0'})"
    return text


def _variant_label(variant: str) -> str:
    """A variant's JSON as ``key=value, ...`` (``base spec`` for the base spec itself)."""
    values = json.loads(variant)
    return ", ".join(f"{key}={value}" for key, value in values.items()) or "base spec"


def stored_check(frame: pd.DataFrame) -> HeldOutCheck:
    """The held-out check as the tuner stored it (``load(root, "check")``: one row per variant and
    seed; written only when the best trial is not the defaults)."""
    metric = next(c for c in frame.columns if c.startswith("best."))[len("best.") :]
    first = frame.iloc[0]
    params = {c[len("params.") :]: first[c] for c in frame.columns if c.startswith("params.")}
    pairs = [
        CheckPair(str(r["variant"]), int(r["seed"]), float(r[f"best.{metric}"]), float(r[f"defaults.{metric}"]))
        for _, r in frame.iterrows()
    ]
    seeds = list(dict.fromkeys(p.seed for p in pairs))
    return HeldOutCheck(metric, str(first["direction"]), int(first["trial"]), params, seeds, pairs)


def _mean(values: Sequence[float]) -> float:
    kept = [v for v in values if not math.isnan(v)]
    return math.fsum(kept) / len(kept) if kept else math.nan
