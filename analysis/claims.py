"""The papers' testable claims, measured on reproduction sweeps (the data of REPRODUCTION.md).

``python -m tiersweep.analysis.claims RESULTS_DIR`` prints the headline counts and one Markdown
row per claim (:data:`CLAIMS`): the claim, the paper's words and where they stand, the setting
(the paper's, or ours and why), the model choices the verdict depends on, its kind, the measured
values with their 95 % intervals over seeds, at how many of the settings it holds, the verdict
(or "awaiting a run" where its sweep is not in RESULTS_DIR) and the config that measures it;
then the claims no config can test (:data:`UNTESTABLE`) with the reason.

Where a paper's text and its figures call for different models, the text's model is the
default and the calibrated one (chosen to match the figures) runs beside it as a config axis:
the claim has two rows, the second marked ``calibrated``, and :func:`headline` counts it as
reproduced, reproduced only under a calibrated choice, or not reproduced (:func:`outcomes`).

Every claim is of one of four kinds (:data:`KINDS`), and each kind has one rule, written once
here (:func:`comparison_wins`, :func:`point_holds`, :func:`range_holds`, :func:`threshold_holds`)
and in REPRODUCTION.md:

* **comparison** ("A beats B"): at a setting, A beats B only where the whole 95 % interval of
  the effect lies past no effect (a ratio of the two policies' metric, paired by seed, on the
  log scale: entirely below 1, or above 1 for "worse"; a difference: entirely below 0). The
  claim must hold at every setting, unless the paper's own scope word says otherwise ("in most
  cases": a strict majority).
* **point** ("11 %"): the interval must overlap the stated value widened by the tolerance stated
  in the claim's row, on both sides: too high fails as too low does.
* **range** ("up to X %"): the best setting's interval reaches X within the tolerance, and no
  setting exceeds X beyond it (no interval lies wholly above X + tolerance).
* **threshold** ("below 95 %", "up to 360 s"): the effect is judged per level of the factor (by
  the comparison rule, in the paper's scope over the other settings), and the crossover lies
  where the paper puts it: it holds at every level on the paper's side of the threshold and at
  none on the other side.

A setting where every seed gives the same value (the seeds do not reach the model there, or a
deterministic model such as paper 001's) has no interval: it is reported as deterministic with
its value, and the rule reads the value itself. A sub-cell of a claim is never a claim of its
own. Relative gains are read one way only: percent of the baseline's value, from the ratio's
interval (so a positive quantity's interval stays positive).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..sweep.points import MixedPointsError, check_points
from .load import load
from .stats import compare, t_interval

__all__ = [
    "Claim",
    "CLAIMS",
    "Untestable",
    "UNTESTABLE",
    "OUTCOMES",
    "outcomes",
    "headline",
    "level_ratio",
    "gain_shrinks",
    "most_migrations",
    "Verdict",
    "Estimate",
    "ratio_estimates",
    "KINDS",
    "SCOPES",
    "measure",
    "markdown",
    "holds_in_scope",
    "comparison_wins",
    "point_holds",
    "range_holds",
    "threshold_holds",
]

#: A claim's scope over its settings: how many of them it must hold at.
SCOPES = {
    "all": "every setting",
    "most": "a majority of the settings",
    "any": "at least one setting",
}

#: The kinds of claim, each with its one rule (see the module docstring).
KINDS = ("comparison", "point", "range", "threshold")


@dataclass(frozen=True)
class Verdict:
    """A claim measured: the text of the values, at how many settings it held, the verdict."""

    text: str
    held: int
    settings: int
    holds: bool


@dataclass(frozen=True)
class Claim:
    """A claim of a paper, its kind (:data:`KINDS`) and how to measure it on a sweep's runs.

    ``quote`` is the paper's sentence with where it stands (section, figure or table);
    ``setting`` the setting the paper used, or ours and why; ``columns`` the stored columns
    ``measure`` reads; ``choices`` the model choices the verdict depends on. A row with
    ``calibrated`` measures the claim under a choice made to match the paper's figures rather
    than its text; it stands beside the row that follows the text (same ``text``), and the
    headline counts the claim as reproduced only under a calibrated choice when only it holds.
    """

    paper: str
    text: str
    sweep: str
    measure: Callable[[pd.DataFrame], Verdict]
    kind: str = "comparison"
    quote: str = ""
    setting: str = ""
    columns: tuple[str, ...] = ()
    choices: tuple[str, ...] = ()
    calibrated: bool = False

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"claim {self.text!r}: kind {self.kind!r}, expected one of {', '.join(KINDS)}")


@dataclass(frozen=True)
class Untestable:
    """A claim of a paper that no config here can test, and why."""

    paper: str
    quote: str
    reason: str


@dataclass(frozen=True)
class Estimate:
    """One setting's measurement: ``value`` with its 95 % interval ``[low, high]``; a
    deterministic one (every seed gave the same value) has ``low == high == value``."""

    setting: str
    value: float
    low: float
    high: float
    deterministic: bool = False

    def text(self, unit: str = "", digits: int = 2, sign: bool = False) -> str:
        """``load 0.8: 0.73 [0.59, 0.90]``, or ``... 0.29 (deterministic)`` without an interval."""
        f = f"{{:{'+' if sign else ''}.{digits}f}}"
        value = f.format(self.value) + unit
        if self.deterministic:
            return f"{self.setting}: {value} (deterministic)"
        return f"{self.setting}: {value} [{f.format(self.low)}, {f.format(self.high)}]"


def holds_in_scope(held: int, settings: int, scope: str) -> bool:
    """Whether a claim that held at ``held`` of ``settings`` settings holds in ``scope``."""
    if settings == 0:
        return False
    if scope == "all":
        return held == settings
    if scope == "most":
        return 2 * held > settings
    if scope == "any":
        return held > 0
    raise ValueError(f"scope: expected one of {', '.join(SCOPES)}, got {scope!r}")


# -- the four rules ------------------------------------------------------------------------------


def comparison_wins(estimate: Estimate, *, no_effect: float = 1.0, below: bool = True) -> bool:
    """The comparison rule at one setting: the whole interval lies past ``no_effect`` (below
    it, or above it with ``below=False``); a deterministic setting by its value."""
    if below:
        return bool(estimate.high < no_effect)
    return bool(estimate.low > no_effect)


def point_holds(estimate: Estimate, stated: float, tolerance: float) -> bool:
    """The point rule: the interval overlaps ``[stated - tolerance, stated + tolerance]``."""
    return bool(estimate.low <= stated + tolerance and estimate.high >= stated - tolerance)


def range_holds(estimates: Sequence[Estimate], stated: float, tolerance: float) -> bool:
    """The range rule ("up to ``stated``"): the best setting (largest value) reaches ``stated``
    within ``tolerance`` (its interval overlaps it) and no setting's interval lies wholly above
    ``stated + tolerance``."""
    if not estimates:
        return False
    best = max(estimates, key=lambda e: e.value)
    return point_holds(best, stated, tolerance) and all(e.low <= stated + tolerance for e in estimates)


def threshold_holds(
    levels: Sequence[tuple[float, bool]],
    threshold: float,
    *,
    below: bool = True,
    inclusive: bool = False,
) -> bool:
    """The threshold rule: ``levels`` are ``(level, whether the effect holds there)``; the
    paper's side of ``threshold`` is below it (exclusive; with ``inclusive``, the threshold
    itself too: "up to 360 s") or, with ``below=False``, the rest. Holds when the effect holds
    at every measured level on that side and at none on the other, i.e. the measured crossover
    lies where the paper puts it."""

    def on_low_side(level: float) -> bool:
        return level <= threshold if inclusive else level < threshold

    near = [held for level, held in levels if on_low_side(level) == below]
    far = [held for level, held in levels if on_low_side(level) != below]
    return bool(near) and all(near) and not any(far)


# -- measuring ----------------------------------------------------------------------------------


def _verdict(parts: list[str], wins: list[bool], scope: str) -> Verdict:
    held = sum(wins)
    return Verdict("; ".join(parts), held, len(wins), holds_in_scope(held, len(wins), scope))


def _ok(runs: pd.DataFrame) -> pd.DataFrame:
    return runs[runs["status"] == "ok"]


def _setting(row: pd.Series, by: Sequence[str]) -> str:
    """``load 0.8, trace KTH-SP2``: each key's last part and its value (a trace by its log's name)."""
    parts = []
    for key in by:
        value = row[key]
        if key.endswith("trace"):
            value = "-".join(Path(str(value)).name.split("-")[:2])
        parts.append(f"{key.split('.')[-1]} {value:g}" if isinstance(value, float) else f"{key.split('.')[-1]} {value}")
    return ", ".join(parts)


def _same_everywhere(
    runs: pd.DataFrame,
    row: pd.Series,
    by: Sequence[str],
    column: str,
    policies: Sequence[str],
    metric: str,
) -> bool:
    """Whether every seed gave the same ``metric`` to each of ``policies`` at ``row``'s setting
    (at least two seeds): the seeds do not reach the model there."""
    mask = np.ones(len(runs), dtype=bool)
    for key in by:
        mask &= (runs[key] == row[key]).to_numpy()
    cell = runs[mask]
    for name in policies:
        values = cell.loc[cell[column] == name, metric].astype(float)
        if len(values) < 2 or values.nunique() != 1:
            return False
    return True


def ratio_estimates(
    runs: pd.DataFrame,
    policy: str,
    baseline: str,
    metric: str,
    by: Sequence[str],
    column: str = "policy.name",
) -> list[Estimate]:
    """``policy``'s ``metric`` over ``baseline``'s per setting of ``by`` (geometric mean of the
    ratios paired by seed, interval on the log scale), deterministic where every seed gave both
    the same value."""
    runs = _ok(runs)
    pair = runs[runs[column].isin([policy, baseline])]
    table = compare(pair, baseline=baseline, metrics=[metric], by=list(by), policy=column)
    if table.empty:
        return []
    table = table[table[column] == policy].sort_values(list(by))
    out = []
    for _, row in table.iterrows():
        value, low, high = (float(row[f"{metric}_{k}"]) for k in ("ratio", "ci_low", "ci_high"))
        same = _same_everywhere(runs, row, by, column, (policy, baseline), metric)
        out.append(Estimate(_setting(row, by), value, value if same else low, value if same else high, same))
    return out


def _as_gain(estimate: Estimate) -> Estimate:
    """A ratio as a relative gain in percent of the baseline (100 (r - 1))."""
    return Estimate(
        estimate.setting,
        100 * (estimate.value - 1),
        100 * (estimate.low - 1),
        100 * (estimate.high - 1),
        estimate.deterministic,
    )


def ratio_below(
    policies: Sequence[str],
    baseline: str,
    metrics: Sequence[str],
    *,
    scope: str = "all",
    worse: bool = False,
    by: Sequence[str] = ("workload.load",),
    column: str = "policy.name",
) -> Callable[[pd.DataFrame], Verdict]:
    """A comparison: each of ``policies`` beats ``baseline`` on each metric (ratio interval
    entirely below 1; with ``worse``, entirely above 1) at the settings of ``by``; every
    (policy, metric, setting) is one setting of the scope. ``column`` names what the policies
    are values of (a policy's name, or a level of a factor)."""

    def measure(runs: pd.DataFrame) -> Verdict:
        parts, wins = [], []
        for policy in policies:
            for metric in metrics:
                estimates = ratio_estimates(runs, policy, baseline, metric, by, column)
                if not estimates:
                    parts.append(f"{metric} {policy}/{baseline}: no cells stored")
                    wins.append(False)
                    continue
                cells = []
                for estimate in estimates:
                    won = comparison_wins(estimate, below=not worse)
                    wins.append(won)
                    cells.append(estimate.text() + ("" if won else " (x)"))
                parts.append(f"{metric} {policy}/{baseline}: " + ", ".join(cells))
        return _verdict(parts, wins, scope)

    return measure


def fewer_migrations(
    policy: str,
    other: str,
    *,
    scope: str = "all",
    by: Sequence[str] = ("workload.load",),
    column: str = "policy.name",
) -> Callable[[pd.DataFrame], Verdict]:
    """A comparison: ``policy`` migrates less per job than ``other`` (values of ``column``):
    the difference paired by seed has its interval entirely below 0, at each setting of ``by``."""

    def measure(runs: pd.DataFrame) -> Verdict:
        runs = _ok(runs)
        check_points(runs, [*by, column], "claim")
        parts, wins = [], []
        for keys, group in runs.groupby(list(by), sort=True):
            label = _setting(pd.Series(dict(zip(by, keys if isinstance(keys, tuple) else (keys,)))), by)
            a = group[group[column] == policy].set_index("seed")["migrations_per_job"]
            b = group[group[column] == other].set_index("seed")["migrations_per_job"]
            diff = (a - b).dropna()
            if diff.empty:
                continue
            same = len(diff) > 1 and a.nunique() == 1 and b.nunique() == 1
            low, high = (diff.mean(), diff.mean()) if same else t_interval(diff.to_numpy())
            estimate = Estimate(label, float(diff.mean()), float(low), float(high), same)
            won = comparison_wins(estimate, no_effect=0.0)
            wins.append(won)
            gap = "deterministic" if same else f"diff [{low:.3f}, {high:.3f}]"
            parts.append(f"{label}: {a.mean():.3f} vs {b.mean():.3f} ({gap}){'' if won else ' (x)'}")
        if not wins:
            return Verdict("no cells stored", 0, 0, False)
        return _verdict(parts, wins, scope)

    return measure


def _gains(
    runs: pd.DataFrame,
    policy: str,
    baseline: str,
    metric: str,
    by: Sequence[str],
    column: str = "policy.name",
) -> list[Estimate]:
    return [_as_gain(e) for e in ratio_estimates(runs, policy, baseline, metric, by, column)]


def gain_point(
    policy: str,
    baseline: str,
    metric: str,
    stated: float,
    tolerance: float,
    *,
    at_load: float,
) -> Callable[[pd.DataFrame], Verdict]:
    """A point claim: the relative gain of ``policy`` over ``baseline`` in ``metric`` (percent
    of the baseline's, paired by seed) at ``at_load`` is ``stated`` percent, within
    ``tolerance`` points on either side."""

    def measure(runs: pd.DataFrame) -> Verdict:
        runs = _ok(runs)
        runs = runs[np.isclose(runs["workload.load"].astype(float), at_load)]
        gains = _gains(runs, policy, baseline, metric, ("workload.load",))
        if not gains:
            return Verdict("no cells stored", 0, 0, False)
        held = point_holds(gains[0], stated, tolerance)
        text = f"{gains[0].text(' %', sign=True)}; stated {stated:g} % +- {tolerance:g} (relative)"
        return Verdict(text, int(held), 1, held)

    return measure


def gain_range(
    policy: str,
    baseline: str,
    metric: str,
    stated: float,
    tolerance: float,
    *,
    by: Sequence[str] = ("workload.load",),
    column: str = "policy.name",
) -> Callable[[pd.DataFrame], Verdict]:
    """A range claim ("up to ``stated`` %"): the relative gain of ``policy`` over ``baseline``
    at its best setting reaches ``stated`` within ``tolerance`` points, and no setting's gain
    exceeds ``stated`` beyond it. A setting counts as held where its interval lies at or
    below ``stated + tolerance``."""

    def measure(runs: pd.DataFrame) -> Verdict:
        gains = _gains(runs, policy, baseline, metric, by, column)
        if not gains:
            return Verdict("no cells stored", 0, 0, False)
        best = max(gains, key=lambda e: e.value)
        within = [e.low <= stated + tolerance for e in gains]
        parts = [e.text(" %", sign=True) + ("" if ok else " (x: above)") for e, ok in zip(gains, within)]
        reached = point_holds(best, stated, tolerance)
        missed = "" if reached else " does not reach it"
        parts.append(f"up to {stated:g} % +- {tolerance:g} (relative): best {best.setting}{missed}")
        return Verdict("; ".join(parts), sum(within), len(within), range_holds(gains, stated, tolerance))

    return measure


def beats_below(
    axis: str,
    threshold: float,
    policy: str,
    baseline: str,
    metric: str,
    *,
    scope: str = "most",
    inclusive: bool = False,
) -> Callable[[pd.DataFrame], Verdict]:
    """A threshold claim: ``policy`` beats ``baseline`` on ``metric`` (comparison rule, in
    ``scope`` over the loads) at every level of ``axis`` whose mean is below ``threshold`` (or
    at it, with ``inclusive``), and at none beyond; the other factors at their defaults. Each
    level is one setting."""

    def measure(runs: pd.DataFrame) -> Verdict:
        runs = _at_defaults(_ok(runs), axis).copy()
        runs["level"] = runs[axis].map(_mean_of)
        parts, levels = [], []
        for level, group in runs.groupby("level"):
            estimates = ratio_estimates(group, policy, baseline, metric, ("workload.load",))
            wins = [comparison_wins(e) for e in estimates]
            held = holds_in_scope(sum(wins), len(wins), scope)
            levels.append((float(level), held))
            cells = ", ".join(e.text() + ("" if w else " (x)") for e, w in zip(estimates, wins))
            outcome = "held" if held else "not held"
            parts.append(f"{axis.split('.')[-1]} mean {level:g}: {sum(wins)} of {len(wins)} loads ({outcome}): {cells}")
        holds = threshold_holds(levels, threshold, inclusive=inclusive)
        side = (lambda v: v <= threshold) if inclusive else (lambda v: v < threshold)
        failing = [level for level, held in levels if side(level) != held]
        off = "" if not failing else "; off at mean " + ", ".join(f"{v:g}" for v in failing)
        parts.append(f"paper's threshold {threshold:g}{off}")
        on_side = [held == side(level) for level, held in levels]
        return Verdict("; ".join(parts), sum(on_side), len(on_side), holds)

    return measure


def ratio_below_at(
    axis: str,
    value: float,
    policy: str,
    baseline: str,
    metric: str,
    *,
    scope: str = "most",
) -> Callable[[pd.DataFrame], Verdict]:
    """Section 5.4's one-factor studies as a comparison: ``policy`` beats ``baseline`` on
    ``metric`` across the loads where ``axis`` is ``value``, the other factors at their
    defaults."""

    def measure(runs: pd.DataFrame) -> Verdict:
        runs = _at_defaults(_ok(runs), axis).copy()
        runs = runs[np.isclose(runs[axis].astype(float), value)]
        runs[axis] = runs[axis].astype(str)
        return ratio_below([policy], baseline, [metric], scope=scope, by=(axis, "workload.load"))(runs)

    return measure


def _at_defaults(runs: pd.DataFrame, axis: str) -> pd.DataFrame:
    """``runs`` with every sensitivity factor but ``axis`` at its default."""
    for other, default in SENSITIVITY_DEFAULTS.items():
        if other != axis and other in runs.columns:
            runs = runs[runs[other].map(_key) == _key(default)]
    return runs


def _key(value: object) -> str:
    """A stored factor level as one text whatever its stored form (``20``, ``"20.0"`` ->
    ``20``; ``"[0.4, 1.0]"`` or ``[0.4, 1]`` -> ``[0.4, 1]``), so levels compare equal."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return value
    if isinstance(value, (list, tuple, np.ndarray)):
        return "[" + ", ".join(f"{float(v):g}" for v in value) + "]"
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
        return f"{float(value):g}"
    return str(value)


def _mean_of(value: object) -> float:
    """The mean of a U(low, high) range given as text or a list (``[0.4, 1.0]`` -> 0.7)."""
    if isinstance(value, str):
        value = json.loads(value)
    return float(np.mean(value))


#: The factors of ``liu2013_sensitivity`` at their default values (as stored).
SENSITIVITY_DEFAULTS = {"platform.migration_cost": 20.0, "workload.cpu_accuracy": 1.0, "workload.cpu_usage": [0.4, 1.0]}


_DEMAND = "workload.bandwidth.mean"
_EMBEDDER = "policy.embedder"


def accepts_more(
    policy: str,
    others: Sequence[str],
    *,
    scope: str = "all",
    by: Sequence[str] = (_DEMAND,),
) -> Callable[[pd.DataFrame], Verdict]:
    """A comparison: embedder ``policy`` accepts more jobs than each of ``others`` (paired by
    seed, ratio interval entirely above 1) at each setting of ``by`` (the mean demand); every
    (other, setting) is one setting of the scope."""

    def measure(runs: pd.DataFrame) -> Verdict:
        parts, wins = [], []
        for other in others:
            for estimate in _gains(runs, policy, other, "accept_rate", by, _EMBEDDER):
                won = comparison_wins(estimate, no_effect=0.0, below=False)
                wins.append(won)
                parts.append(f"{policy}/{other}, {estimate.text(' %', digits=1, sign=True)}{'' if won else ' (x)'}")
        if not wins:
            return Verdict("no cells stored", 0, 0, False)
        return _verdict(parts, wins, scope)

    return measure


def _at_demand(demand: float, measure: Callable[[pd.DataFrame], Verdict]) -> Callable[[pd.DataFrame], Verdict]:
    """``measure`` on the runs at mean demand ``demand`` only."""
    return lambda runs: measure(runs[runs[_DEMAND] == demand])


def _deterministic(runs: pd.DataFrame, trace: str) -> pd.DataFrame:
    runs = _ok(runs)
    runs = runs[runs["workload.trace"].map(str).str.contains(trace)]
    return runs[runs["workload.load"].isna()] if "workload.load" in runs.columns else runs


#: The two selectors of paper 001's CTC figures (section V-E: "both algorithms", PCFC and PC-sg).
_CTC_SELECTORS = ("pc-sg", "pcfc-sg")


def _points(values: pd.Series, stated: float, tolerance: float) -> tuple[list[str], list[bool]]:
    """The point rule on each of ``values`` (one deterministic run per index entry)."""
    estimates = [Estimate(str(k), float(v), float(v), float(v), True) for k, v in values.items()]
    wins = [point_holds(e, stated, tolerance) for e in estimates]
    return [e.text(digits=3) + ("" if w else " (x)") for e, w in zip(estimates, wins)], wins


def near(
    metric: str,
    trace: str,
    shares: str,
    stated: float,
    tolerance: float,
    selectors: Sequence[str] = _CTC_SELECTORS,
) -> Callable[[pd.DataFrame], Verdict]:
    """A point claim: each of ``selectors``' ``metric`` on ``trace`` with ``shares`` is
    ``stated`` within ``tolerance`` (the paper's model is deterministic: one run each)."""

    def measure(runs: pd.DataFrame) -> Verdict:
        runs = _deterministic(runs, trace)
        runs = runs[(runs["platform.shares"] == shares) & runs["policy.selector"].isin(selectors)]
        if runs.empty:
            return Verdict("no cells stored", 0, 0, False)
        check_points(runs, ["policy.selector"], "claim")
        parts, wins = _points(runs.groupby("policy.selector")[metric].mean(), stated, tolerance)
        return _verdict([f"{metric} ({trace}, {shares}), stated {stated:g} +- {tolerance:g}", *parts], wins, "all")

    return measure


def vm_ratio(
    metric: str,
    axis: str,
    level: object,
    reference: object,
    stated: float,
    tolerance: float,
    *,
    trace: str = "LPC",
    selectors: Sequence[str] = ("pc-g",),
    compare_only: bool = False,
) -> Callable[[pd.DataFrame], Verdict]:
    """Paper 001's deterministic model: ``metric`` at ``axis`` = ``level`` over its value at
    ``reference``, per selector, on ``trace``. A point claim (``stated`` within ``tolerance``),
    or with ``compare_only`` a comparison (the ratio below 1; the model has no interval)."""

    def measure(runs: pd.DataFrame) -> Verdict:
        runs = _ok(runs)
        mine = runs["workload.trace"].map(str).str.contains(trace) & runs["policy.selector"].isin(selectors)
        runs = runs[mine].copy()
        runs[axis] = runs[axis].map(_key)
        check_points(runs, ["policy.selector", axis], "claim")
        table = runs.pivot_table(index="policy.selector", columns=axis, values=metric)
        if table.empty or {_key(level), _key(reference)} - set(table.columns):
            return Verdict("no cells stored", 0, 0, False)
        ratios = table[_key(level)] / table[_key(reference)]
        head = f"{metric} at {axis.split('.')[-1]} {_key(level)} over {_key(reference)} ({trace})"
        if compare_only:
            estimates = [Estimate(str(k), float(v), float(v), float(v), True) for k, v in ratios.items()]
            wins = [comparison_wins(e) for e in estimates]
            parts = [e.text(digits=3) + ("" if w else " (x)") for e, w in zip(estimates, wins)]
            return _verdict([head, *parts], wins, "all")
        parts, wins = _points(ratios, stated, tolerance)
        return _verdict([f"{head}, stated {stated:g} +- {tolerance:g}", *parts], wins, "all")

    return measure


def shares_ratio(
    metric: str,
    trace: str,
    stated: float,
    tolerance: float,
    selectors: Sequence[str] = _CTC_SELECTORS,
) -> Callable[[pd.DataFrame], Verdict]:
    """A point claim: heterogeneous over homogeneous ``metric`` is ``stated`` within
    ``tolerance`` for each of ``selectors`` (paper 001: makespan "roughly doubled", median XF
    "nearly twice"); the runs without an offered load (the log as recorded) only."""
    shares = ("platform.shares", "heterogeneous", "homogeneous")
    ratio = vm_ratio(metric, *shares, stated, tolerance, trace=trace, selectors=selectors)
    return lambda runs: ratio(_deterministic(runs, trace))


def _all_efficient(runs: pd.DataFrame) -> Verdict:
    rows = _ok(runs)
    rows = rows[rows["workload.trace"].map(str).str.contains("LPC")]
    if rows.empty:
        return Verdict("no cells stored", 0, 0, False)
    wins = [point_holds(Estimate("", v, v, v, True), 1.0, 1e-9) for v in rows["efficiency"].astype(float)]
    lowest = rows["efficiency"].min()
    return _verdict([f"efficiency over {len(rows)} LPC cells (deterministic): min {lowest:.4f}"], wins, "all")


# -- combining and narrowing measures -----------------------------------------------------------

Measure = Callable[[pd.DataFrame], Verdict]


def _where(column: str, value: object, measure: Measure) -> Measure:
    """``measure`` on the runs whose ``column`` is ``value`` (compared as :func:`_key` texts);
    none when the column was not stored."""

    def narrowed(runs: pd.DataFrame) -> Verdict:
        if column not in runs.columns:
            return Verdict(f"no cells stored ({column} not swept)", 0, 0, False)
        return measure(runs[runs[column].map(_key) == _key(value)])

    return narrowed


def _on_trace(name: str, measure: Measure) -> Measure:
    """``measure`` on the runs of the log whose file name holds ``name``."""
    return lambda runs: measure(runs[runs["workload.trace"].map(str).str.contains(name, regex=False)])


def _short_traces(runs: pd.DataFrame) -> pd.DataFrame:
    """``runs`` with each trace named by its log (``KTH-SP2``), so logs can be compared."""
    runs = runs.copy()
    runs["workload.trace"] = runs["workload.trace"].map(lambda v: "-".join(Path(str(v)).name.split("-")[:2]))
    return runs


def _all_of(*measures: Measure) -> Measure:
    """One claim made of several comparisons (one sentence naming several baselines): every
    setting of every part counts, and the claim holds only where every part holds."""

    def measure(runs: pd.DataFrame) -> Verdict:
        verdicts = [m(runs) for m in measures]
        return Verdict(
            " | ".join(v.text for v in verdicts),
            sum(v.held for v in verdicts),
            sum(v.settings for v in verdicts),
            all(v.holds for v in verdicts),
        )

    return measure


def level_ratio(
    axis: str,
    level: object,
    reference: object,
    metric: str,
    *,
    policies: Sequence[str],
    worse: bool = False,
    scope: str = "all",
    by: Sequence[str] = ("workload.load",),
    defaults: bool = False,
) -> Measure:
    """A comparison of one factor's two levels: ``metric`` at ``axis`` = ``level`` over its
    value at ``reference``, for each of ``policies``, paired by seed at each setting of ``by``
    (below 1; with ``worse``, above 1). With ``defaults``, the sensitivity factors other than
    ``axis`` are held at their defaults."""

    def measure(runs: pd.DataFrame) -> Verdict:
        runs = _ok(runs)
        if defaults:
            runs = _at_defaults(runs, axis)
        runs = runs[runs[axis].map(_key).isin([_key(level), _key(reference)])].copy()
        runs[axis] = runs[axis].map(_key)
        verdicts = []
        for policy in policies:
            mine = runs[runs["policy.name"] == policy]
            levels = ([_key(level)], _key(reference), [metric])
            compare_levels = ratio_below(*levels, scope=scope, worse=worse, by=by, column=axis)
            verdict = compare_levels(mine)
            verdicts.append(Verdict(f"{policy}: {verdict.text}", verdict.held, verdict.settings, verdict.holds))
        return Verdict(
            " | ".join(v.text for v in verdicts),
            sum(v.held for v in verdicts),
            sum(v.settings for v in verdicts),
            all(v.holds for v in verdicts),
        )

    return measure


def gain_shrinks(axis: str, low: object, high: object, policy: str, baseline: str, metric: str) -> Measure:
    """A comparison of a gain across a factor ("the benefit [...] is inversely proportional to
    the average CPU usage"): ``policy``'s ``metric`` over ``baseline``'s, per seed, is smaller
    (a larger benefit) at ``axis`` = ``low`` than at ``high``: the ratio of the two ratios,
    paired by seed, lies below 1 at every load. The other sensitivity factors at their defaults."""

    def measure(runs: pd.DataFrame) -> Verdict:
        runs = _at_defaults(_ok(runs), axis).copy()
        runs[axis] = runs[axis].map(_key)
        runs = runs[runs[axis].isin([_key(low), _key(high)]) & runs["policy.name"].isin([policy, baseline])]
        table = runs.pivot_table(index=[axis, "workload.load", "seed"], columns="policy.name", values=metric)
        if table.empty or {policy, baseline} - set(table.columns):
            return Verdict("no cells stored", 0, 0, False)
        ratios = (table[policy] / table[baseline]).rename("ratio").reset_index()
        ratios["policy.name"] = ratios[axis]  # the levels compared, as the policies of ratio_below
        ratios["status"] = "ok"
        verdict = ratio_below([_key(low)], _key(high), ["ratio"], column="policy.name")(ratios.drop(columns=[axis]))
        head = f"({metric} {policy}/{baseline} at {axis.split('.')[-1]} {_key(low)}) / (the same at {_key(high)})"
        return Verdict(f"{head}: {verdict.text}", verdict.held, verdict.settings, verdict.holds)

    return measure


def _variants(runs: pd.DataFrame) -> pd.DataFrame:
    """Paper 003's schedulers as one column ``variant``: ``easy`` (the user's estimate),
    ``easy++`` (last-two predictions, shortest first, the authors' increments) and
    ``easy++ request`` (the same, a wrong prediction extended to the request)."""
    runs = _ok(runs).copy()
    plus = runs["policy.prediction"].map(str) == "last2"
    runs["variant"] = np.where(plus, "easy++ " + runs["policy.correction"].map(str), "easy")
    runs["variant"] = runs["variant"].str.replace("easy++ increment", "easy++", regex=False)
    return runs


def easy_pp_beats_easy(correction: str) -> Measure:
    """Paper 003 (EASY++): EASY++ with ``correction`` beats EASY on mean wait and bounded
    slowdown on every log."""
    name = "easy++" if correction == "increment" else f"easy++ {correction}"
    compare_logs = ratio_below([name], "easy", ("mean_wait", "mean_bsld"), by=("workload.trace",), column="variant")
    return lambda runs: compare_logs(_short_traces(_variants(runs)))


# -- the claims ---------------------------------------------------------------------------------

_RUN = ("status", "seed")
_RT_BSLD = ("mean_response", "mean_bsld")  # paper 000: rpt = mean of finish - arrival
_LIU_COLUMNS = (*_RUN, "policy.name", "workload.load", *_RT_BSLD, "utilization", "migrations_per_job")
_LIU_CHOICES = (
    "bg_efficiency_scope: job (text, 5.1: 0.428 is a job's mean)",
    "cpu_guess: draw (text: an uninformed estimate is a draw from the usage range)",
)
_LIU_SETTING = (
    "{name}: {model}, 320 two-tier nodes, loads 0.5-1.0, migration cost 20 s, EASY with exact runtimes, "
    "the consolidating schedulers without (as in 5.3)"
)
_WORKLOADS = (
    (
        "FWorkload",
        "liu2013_fworkload",
        "figure 3",
        "Feitelson 1996 model (constants calibrated to its published statistics), 20,000 jobs",
    ),
    ("JWorkload", "liu2013_jworkload", "figure 4", "Jann 1997 model fitted to CTC-SP2, 10,000 jobs"),
)
_OBS1 = (
    '5.3, observation 1 ({fig}): "Our basic algorithms, CMBF and AMBF, outperform FCFS in big margin but produce '
    "worse response time and bounded slowdown than EASY. [...] our algorithms that consolidate parallel workload, "
    'CMCBF and AMCBF, significantly outperform FCFS, CMBF, AMBF, and EASY on response time and bounded slowdown."'
)
_OBS2 = (
    '5.3, observation 2 ({fig}): "The two consolidation algorithms lead to better node utilization compared to '
    "other algorithms. Compared with EASY, a utilization improvement up to 2.4 and 3.1 percent can be gained in "
    "FWorkload and JWorkload, respectively. And, moreover, the improvements on the saturation CPU utilization are "
    '11 and 16 percent, respectively."'
)
_OBS3 = (
    '5.3, observation 3 ({fig}): "AMBF achieves better performance than CMBF [...] in terms of job response time '
    'and bounded slowdown. [...] AMCBF also shows slightly better performance than CMCBF."'
)
_OBS4 = (
    '5.3, observation 4 ({fig}): "The average number of job migrations in AMCBF is slightly less than that in '
    "CMCBF for both FWorkload and JWorkload. But, AMBF results in significantly less number of job migrations than "
    'CMBF for the two workloads."'
)
_OTHERS = ("fcfs", "easy", "cmbf", "ambf")


def _liu_rows() -> list[Claim]:
    rows = []
    for name, sweep, fig, model in _WORKLOADS:
        common = dict(setting=_LIU_SETTING.format(name=name, model=model), columns=_LIU_COLUMNS, choices=_LIU_CHOICES)
        rows += [
            Claim(
                "000",
                f"CMCBF and AMCBF outperform FCFS, CMBF, AMBF and EASY on response time and bounded slowdown ({name})",
                sweep,
                _all_of(*(ratio_below(("cmcbf", "amcbf"), other, _RT_BSLD) for other in _OTHERS)),
                quote=_OBS1.format(fig=fig),
                **common,
            ),
            Claim(
                "000",
                f"CMBF and AMBF outperform FCFS on response time and bounded slowdown ({name}; "
                "'big margin' not judged)",
                sweep,
                ratio_below(("cmbf", "ambf"), "fcfs", _RT_BSLD),
                quote=_OBS1.format(fig=fig),
                **common,
            ),
            Claim(
                "000",
                f"CMBF and AMBF are worse than EASY on response time and bounded slowdown ({name})",
                sweep,
                ratio_below(("cmbf", "ambf"), "easy", _RT_BSLD, worse=True),
                quote=_OBS1.format(fig=fig),
                **common,
            ),
            Claim(
                "000",
                f"CMCBF and AMCBF reach a higher utilisation than FCFS, EASY, CMBF and AMBF ({name})",
                sweep,
                _all_of(*(ratio_below(("cmcbf", "amcbf"), other, ("utilization",), worse=True) for other in _OTHERS)),
                quote=_OBS2.format(fig=fig),
                **common,
            ),
            Claim(
                "000",
                f"AMBF beats CMBF on response time and bounded slowdown ({name})",
                sweep,
                ratio_below(("ambf",), "cmbf", _RT_BSLD),
                quote=_OBS3.format(fig=fig),
                **common,
            ),
            Claim(
                "000",
                f"AMCBF beats CMCBF (slightly) on response time and bounded slowdown ({name})",
                sweep,
                ratio_below(("amcbf",), "cmcbf", _RT_BSLD),
                quote=_OBS3.format(fig=fig),
                **common,
            ),
            Claim(
                "000",
                f"AMBF needs fewer migrations than CMBF ({name})",
                sweep,
                fewer_migrations("ambf", "cmbf"),
                quote=_OBS4.format(fig=fig),
                **common,
            ),
            Claim(
                "000",
                f"AMCBF needs slightly fewer migrations than CMCBF ({name})",
                sweep,
                fewer_migrations("amcbf", "cmcbf"),
                quote=_OBS4.format(fig=fig),
                **common,
            ),
        ]
    name, sweep, fig, model = _WORKLOADS[1]
    rows.append(
        Claim(
            "000",
            "CMBF needs more migrations than AMCBF and CMCBF (JWorkload)",
            sweep,
            _all_of(fewer_migrations("amcbf", "cmbf"), fewer_migrations("cmcbf", "cmbf")),
            quote=f'5.3, observation 4 ({fig}): "We note that there are more job migrations in CMBF than in AMCBF '
            'and CMCBF, as shown in the JWorkload results."',
            setting=_LIU_SETTING.format(name=name, model=model),
            columns=_LIU_COLUMNS,
            choices=_LIU_CHOICES,
        )
    )
    return rows


_F_SETTING = _LIU_SETTING.format(name="FWorkload", model=_WORKLOADS[0][3])
_J_SETTING = _LIU_SETTING.format(name="JWorkload", model=_WORKLOADS[1][3])
_SENS_COLUMNS = (*_RUN, "policy.name", "workload.load", "mean_bsld", *SENSITIVITY_DEFAULTS)
_SENS_1 = (
    "5.4, finding 1: \"AMCBF's performance improves as the accuracy of CPU usage estimation increases. And, "
    "moreover, AMCBF performs better than EASY in most cases even without any CPU usage information of parallel "
    'processes."'
)
_SENS_2 = (
    '5.4, finding 2: "The performance of AMCBF degrades as the migration cost increases, but AMCBF bears high '
    "migration cost. For FWorkload, even with a migration cost at 600 seconds (24 percent of the average job "
    'execution time), AMCBF can still outperform EASY in most cases; for JWorkload, the threshold is 360 seconds"'
)
_SENS_3 = (
    '5.4, finding 3: "For FWorkload, if the average CPU usage is less than 95 percent, AMCBF outperforms EASY in '
    'most cases. But for JWorkload, the upper threshold reduces to about 80 percent."'
)
_SENS_NOTE = (
    "; one factor varied, the others at their defaults (20 s, accuracy 1, usage U(0.4, 1.0)); bounded slowdown "
    "(the paper's figures are not in the text)"
)
_SENS_SWEEPS = (("FWorkload", "liu2013_sensitivity", _F_SETTING), ("JWorkload", "liu2013_sensitivity_j", _J_SETTING))


def _sensitivity_rows() -> list[Claim]:
    rows = []
    for name, sweep, setting in _SENS_SWEEPS:
        common = dict(setting=setting + _SENS_NOTE, columns=_SENS_COLUMNS, choices=_LIU_CHOICES)
        rows += [
            Claim(
                "000",
                f"AMCBF improves as CPU-estimate accuracy increases ({name}; accuracy 1 against 0, bounded slowdown, "
                "in most loads)",
                sweep,
                level_ratio(
                    "workload.cpu_accuracy", 1.0, 0.0, "mean_bsld", policies=("amcbf",), scope="most", defaults=True
                ),
                quote=_SENS_1,
                **common,
            ),
            Claim(
                "000",
                f"Without CPU-usage information AMCBF beats EASY in most cases ({name}; accuracy 0, bounded slowdown)",
                sweep,
                ratio_below_at("workload.cpu_accuracy", 0.0, "amcbf", "easy", "mean_bsld"),
                quote=_SENS_1,
                **common,
            ),
            Claim(
                "000",
                f"AMCBF degrades as migration cost increases ({name}; 600 s against 0 s, bounded slowdown, every load)",
                sweep,
                level_ratio(
                    "platform.migration_cost", 600.0, 0.0, "mean_bsld", policies=("amcbf",), worse=True, defaults=True
                ),
                quote=_SENS_2,
                **common,
            ),
        ]
    rows += [
        Claim(
            "000",
            "At 600 s migration cost AMCBF still beats EASY in most cases (FWorkload, bounded slowdown, loads 0.5-1.0)",
            "liu2013_sensitivity",
            ratio_below_at("platform.migration_cost", 600.0, "amcbf", "easy", "mean_bsld"),
            quote=_SENS_2,
            setting=_F_SETTING + _SENS_NOTE,
            columns=_SENS_COLUMNS,
            choices=_LIU_CHOICES,
        ),
        Claim(
            "000",
            "Migration-cost threshold 360 s: AMCBF beats EASY in most cases at 360 s and below, not beyond "
            "(JWorkload, bounded slowdown; levels 0-600 s)",
            "liu2013_sensitivity_j",
            beats_below("platform.migration_cost", 360.0, "amcbf", "easy", "mean_bsld", inclusive=True),
            "threshold",
            quote=_SENS_2,
            setting=_J_SETTING + _SENS_NOTE,
            columns=_SENS_COLUMNS,
            choices=_LIU_CHOICES,
        ),
        *(
            Claim(
                "000",
                f"AMCBF's benefit over EASY shrinks as the average CPU usage rises ({name}; mean usage 0.5 against "
                "0.95, bounded slowdown, every load)",
                sweep,
                gain_shrinks("workload.cpu_usage", [0.2, 0.8], [0.9, 1.0], "amcbf", "easy", "mean_bsld"),
                quote='5.4, finding 3: "The benefit gained from consolidation is inversely proportional to the '
                'average CPU usage of parallel processes."',
                setting=setting + _SENS_NOTE,
                columns=_SENS_COLUMNS,
                choices=_LIU_CHOICES,
            )
            for name, sweep, setting in _SENS_SWEEPS
        ),
        Claim(
            "000",
            "For average CPU usage below 95 % AMCBF beats EASY in most cases "
            "(FWorkload, bounded slowdown; per mean usage)",
            "liu2013_sensitivity",
            beats_below("workload.cpu_usage", 0.95, "amcbf", "easy", "mean_bsld"),
            "threshold",
            quote=_SENS_3,
            setting=_F_SETTING + _SENS_NOTE,
            columns=_SENS_COLUMNS,
            choices=_LIU_CHOICES,
        ),
        Claim(
            "000",
            "For average CPU usage below about 80 % AMCBF beats EASY in most cases, and not above "
            "(JWorkload, bounded slowdown; mean usages 0.5, 0.7, 0.9, 0.95: none within 0.05 of 'about 80')",
            "liu2013_sensitivity_j",
            beats_below("workload.cpu_usage", 0.8, "amcbf", "easy", "mean_bsld"),
            "threshold",
            quote=_SENS_3,
            setting=_J_SETTING + _SENS_NOTE,
            columns=_SENS_COLUMNS,
            choices=_LIU_CHOICES,
        ),
    ]
    return rows


_SAT_COLUMNS = (*_RUN, "policy.name", "workload.load", "utilization")
CLAIMS: list[Claim] = [
    *_liu_rows(),
    # Tolerances: the precision the paper prints its figure with (2.4 %: 0.05 points; 11 %: 0.5).
    *(
        Claim(
            "000",
            f"Utilisation gain of AMCBF over EASY up to {stated:g} % ({name}; tolerance 0.05 points)",
            sweep,
            gain_range("amcbf", "easy", "utilization", stated, 0.05),
            "range",
            quote=_OBS2.format(fig=fig),
            setting=_LIU_SETTING.format(name=name, model=model),
            columns=_SAT_COLUMNS,
            choices=_LIU_CHOICES,
        )
        for (name, sweep, fig, model), stated in zip(_WORKLOADS, (2.4, 3.1))
    ),
    *(
        Claim(
            "000",
            f"Saturation utilisation gain of AMCBF over EASY: {stated:g} % ({name}, load 2; tolerance 0.5 points)",
            sweep,
            gain_point("amcbf", "easy", "utilization", stated, 0.5, at_load=2.0),
            "point",
            quote=_OBS2.format(fig=fig),
            setting=_LIU_SETTING.format(name=name, model=model).replace(
                "loads 0.5-1.0",
                "offered load 2 (saturation: the paper does not say how it saturates; ours is twice the capacity)",
            ),
            columns=_SAT_COLUMNS,
            choices=_LIU_CHOICES,
        )
        for (name, _, fig, model), sweep, stated in zip(
            _WORKLOADS, ("liu2013_saturation_f", "liu2013_saturation_j"), (11.0, 16.0)
        )
    ),
    *_sensitivity_rows(),
]

# -- paper 001 -------------------------------------------------------------------------------------

_VM_COLUMNS = (*_RUN, "workload.trace", "workload.load", "platform.shares", "platform.allocation", "policy.selector")
_V_E = (
    'V-E, figure 10 (CTC, PCFC and PC-sg): "the makespan is roughly doubled for the heterogeneous VM case. In '
    "terms of efficiency, both algorithms are about 98% for all the homogeneous and 56-58% for the heterogeneous "
    'configurations. The median expansion factors were nearly twice as large in the heterogeneous VM case"'
)
_CTC_SETTING = (
    "the paper's CTC trace run unmodified (IV) on 64 machines x 4 VMs, FCFS with backfilling on EC estimates; the "
    "number of jobs is not stated: ours the first 10,000 jobs of CTC-SP2 (as for its Grid'5000 runs)"
)
_ALLOCATIONS = (
    (
        "fixed_point",
        False,
        'allocation: fixed_point (text, V-D: serial jobs "consume all the compute cycles lost due to the ripple '
        'effect")',
    ),
    ("paper", True, "allocation: paper (calibrated: a one-pass split, chosen because it reproduces the CTC figures)"),
)
_CTC_CLAIMS = (
    (
        "CTC, PC-sg and PCFC-sg, homogeneous shares: efficiency about 98 % (tolerance 0.02)",
        ("efficiency",),
        lambda: near("efficiency", "CTC", "homogeneous", 0.98, 0.02),
    ),
    (
        "CTC, PC-sg and PCFC-sg, heterogeneous shares: efficiency 56-58 % (0.57, tolerance 0.04)",
        ("efficiency",),
        lambda: near("efficiency", "CTC", "heterogeneous", 0.57, 0.04),
    ),
    (
        "CTC, PC-sg and PCFC-sg: heterogeneous shares roughly double the makespan (2x, tolerance 0.5)",
        ("makespan",),
        lambda: shares_ratio("makespan", "CTC", 2.0, 0.5),
    ),
    (
        "CTC, PC-sg and PCFC-sg: heterogeneous shares nearly double the median XF (2x, tolerance 0.5)",
        ("median_xf",),
        lambda: shares_ratio("median_xf", "CTC", 2.0, 0.5),
    ),
)
_V_A = (
    'V-A, figure 7 (serial jobs, heterogeneous shares, PC-g): "we reduce the max parameter of VM_4 [...] to 0.5. '
    "This change (blue squares) has little effect on efficiency [...] A large drop in η occurs when all VMs have "
    'max=0.5 [...] the mean XF in this case is about 40% higher than in the case of unconstrained VMs."'
)
_V_A_SETTING = (
    "the paper filters an unnamed trace to its serial jobs and runs traces unmodified (IV); ours: LPC-EGEE (all "
    "serial), first 10,000 jobs as recorded, heterogeneous shares (1, 1, 2, 4), PC-g"
)
_V_A_COLUMNS = (*_RUN, "workload.trace", "policy.selector", "platform.max", "efficiency", "mean_xf")

CLAIMS += [
    Claim(
        "001",
        text,
        "delgado_vms",
        _where("platform.allocation", allocation, build()),
        "point",
        quote=_V_E,
        setting=_CTC_SETTING,
        columns=(*_VM_COLUMNS, *metrics),
        choices=(label,),
        calibrated=calibrated,
    )
    for text, metrics, build in _CTC_CLAIMS
    for allocation, calibrated, label in _ALLOCATIONS
]
CLAIMS += [
    Claim(
        "001",
        "Serial-only workloads run at efficiency 1",
        "delgado_vms",
        _all_efficient,
        "point",
        quote='V-A: "so long as the max parameter of each VM is 1, the efficiency η of the cluster is unity"',
        setting="LPC-EGEE (all serial) standing in for the paper's filtered trace, as recorded and at offered load "
        "1.0 per machine",
        columns=(*_RUN, "workload.trace", "efficiency"),
        choices=("none: with serial jobs the two allocations agree",),
    ),
    Claim(
        "001",
        "VM_4's max at 0.5 has little effect on efficiency (ratio 1, tolerance 0.02)",
        "paper001_vmax",
        vm_ratio("efficiency", "platform.max", [1.0, 1.0, 1.0, 0.5], 1.0, 1.0, 0.02),
        "point",
        quote=_V_A,
        setting=_V_A_SETTING,
        columns=_V_A_COLUMNS,
        choices=("none: with serial jobs the two allocations agree",),
    ),
    Claim(
        "001",
        "Every VM's max at 0.5 drops the efficiency (below max 1; 'large' not judged)",
        "paper001_vmax",
        vm_ratio("efficiency", "platform.max", 0.5, 1.0, 1.0, 0.0, compare_only=True),
        quote=_V_A,
        setting=_V_A_SETTING,
        columns=_V_A_COLUMNS,
        choices=("none: with serial jobs the two allocations agree",),
    ),
    Claim(
        "001",
        "Every VM's max at 0.5 raises the mean XF by about 40 % (ratio 1.4, tolerance 0.1)",
        "paper001_vmax",
        vm_ratio("mean_xf", "platform.max", 0.5, 1.0, 1.4, 0.1),
        "point",
        quote=_V_A,
        setting=_V_A_SETTING,
        columns=_V_A_COLUMNS,
        choices=("none: with serial jobs the two allocations agree",),
    ),
]

# -- papers 002 and 003 -----------------------------------------------------------------------------

_KTIER_SETTING = (
    "the paper's CloudSim runs are not described (workload, sizes, loads); ours: paper 000's JWorkload setting "
    "(Jann 1997 fitted to CTC-SP2, 10,000 jobs, 320 nodes, loads 0.5-1.0), 3 tiers against 2, under AMCBF and SMCBF "
    "(consolidation with the selective reservation of V-B)"
)
_KTIER_COLUMNS = (*_RUN, "policy.name", "workload.load", "platform.tiers", "mean_response", "mean_bsld", "utilization")
_FIG4_002 = (
    'VI, figure 4: "K-tier architecture shows slightly better performance than 2-tier architecture in terms of '
    'finishing time. In k-tier architecture, the node utilization is better than 2-tier architecture."'
)
_SELECTIVE_COLUMNS = (*_RUN, "policy.name", "workload.trace", "mean_wait", "mean_bsld")
_EASY_PP_COLUMNS = (*_RUN, "workload.trace", "policy.prediction", "policy.correction", "mean_wait", "mean_bsld")
_EASY_PP_QUOTE = (
    'II (of EASY++): "predictions need to be corrected adaptively if proved wrong. The end result is a '
    "surprisingly simple scheduler we call EASY++ [...] Nevertheless it achieves significant improvements in "
    'performance"'
)
_EASY_PP_SETTING = (
    "the paper names no logs; ours: the whole KTH-SP2, SDSC-SP2, CTC-SP2 and HPC2N logs on dedicated nodes of each "
    "log's size, EASY planning with the users' requests (deterministic: every seed is the same run)"
)
CLAIMS += [
    Claim(
        "002",
        "3 tiers beat 2 tiers on finishing (response) time (AMCBF and SMCBF, every load; 'slightly' not judged)",
        "paper002_ktier",
        level_ratio("platform.tiers", 3, 2, "mean_response", policies=("amcbf", "smcbf")),
        quote=_FIG4_002,
        setting=_KTIER_SETTING,
        columns=_KTIER_COLUMNS,
        choices=(*_LIU_CHOICES, "a third tier: the second background VM gets what the first leaves (DESIGN 4.1)"),
    ),
    Claim(
        "002",
        "3 tiers reach a higher node utilisation than 2 tiers (AMCBF and SMCBF, every load)",
        "paper002_ktier",
        level_ratio("platform.tiers", 3, 2, "utilization", policies=("amcbf", "smcbf"), worse=True),
        quote=_FIG4_002,
        setting=_KTIER_SETTING,
        columns=_KTIER_COLUMNS,
        choices=(*_LIU_CHOICES, "a third tier: the second background VM gets what the first leaves (DESIGN 4.1)"),
    ),
    Claim(
        "002",
        "Selective consolidation (SMCBF) beats CMCBF and AMCBF on response time and bounded slowdown "
        "(2 tiers, every load)",
        "paper002_ktier",
        _where("platform.tiers", 2, _all_of(*(ratio_below(("smcbf",), o, _RT_BSLD) for o in ("cmcbf", "amcbf")))),
        quote='Abstract: "There exists two-tier priority based consolidation methods: conservative migration and '
        "consolidation supported backfilling and aggressive [...]. In this paper propose a new scheduling method which "
        'is better than both conservative and aggressive backfilling." (reading: the two consolidation methods)',
        setting=_KTIER_SETTING,
        columns=_KTIER_COLUMNS,
        choices=(*_LIU_CHOICES, "smcbf: a job may preempt once its XFactor passes max(10, mean slowdown)"),
    ),
    Claim(
        "002",
        "Selective backfilling beats conservative and EASY backfilling on mean wait and bounded slowdown on every log",
        "paper002_selective",
        lambda runs: _all_of(
            *(
                ratio_below(("selective",), o, ("mean_wait", "mean_bsld"), by=("workload.trace",))
                for o in ("conservative", "easy")
            )
        )(_short_traces(runs)),
        quote='VII: "There is a selective reservation strategy that is superior to both conservative backfilling and '
        'Aggressive backfilling. [...] This reduce the waiting time of the jobs in the queue"',
        setting="the paper gives no workload; ours: the first 10,000 jobs of CTC-SP2, SDSC-SP2 and KTH-SP2 on "
        "dedicated nodes of each log's size, users' requests as estimates, threshold max(10, mean slowdown) "
        "(deterministic: every seed is the same run)",
        columns=_SELECTIVE_COLUMNS,
        choices=("xfactor_threshold: adaptive (text, equation 3)",),
    ),
    Claim(
        "003",
        "EASY++ beats EASY on mean wait and bounded slowdown on every log",
        "paper003_easy_pp",
        easy_pp_beats_easy("increment"),
        quote=_EASY_PP_QUOTE,
        setting=_EASY_PP_SETTING,
        columns=_EASY_PP_COLUMNS,
        choices=("correction: increment (text: the authors' steps, 1 min ... 100 h)",),
    ),
    Claim(
        "003",
        "EASY++ beats EASY on mean wait and bounded slowdown on every log",
        "paper003_easy_pp",
        easy_pp_beats_easy("request"),
        quote=_EASY_PP_QUOTE,
        setting=_EASY_PP_SETTING,
        columns=_EASY_PP_COLUMNS,
        choices=("correction: request (calibrated: chosen because it beats EASY on every log)",),
        calibrated=True,
    ),
]

# -- paper 004 -------------------------------------------------------------------------------------

_LI_BY = ("workload.trace", "workload.load")
_EMBEDDERS = ("oktopus", "greedy", "bestfit", "firstfit")
_ACCEPT_COLUMNS = (*_RUN, _EMBEDDER, _DEMAND, "accept_rate")
_FIG4_004 = (
    '5.3.1, figure 4: "(1) Our proposed AdaBa always performs better than all the other algorithms for workloads '
    "under different average bandwidth demands; (2) [...] Up to 15 percent of improvement on accept rate is obtained "
    "when the average bandwidth demand is 700 Mbps; (3) The accept rate decreases as the average bandwidth demand "
    'increases. [...] (4) Best fit also performs better than Oktupus and greedy strategy in most cases"'
)
_FIG4_SETTING = (
    "'random parallel workloads' of mean size 8 at load 0.5 (unspecified); ours: Lublin-Feitelson, 1,000 jobs, "
    "k = 6 fat tree, 8 slots, 1 Gbps, demands N(M, 0.2 M) independent of size (the printed formula cannot set the mean)"
)
_ACCEPT_CHOICES = (
    "bandwidth_check: per_server (text, equation 6)",
    "demand independent of job size (the text's mean cannot be set otherwise)",
)
_FIG5_COLUMNS = (*_RUN, _EMBEDDER, "workload.trace", "workload.load", "accept_rate")
_FIG5 = (
    '5.3.1, figure 5: "our proposed AdaBa algorithm also performs better than other competitors under most cases '
    'of system loads for each workload"'
)
_FIG5_SETTING = (
    "first 1,000 jobs of KTH-SP2 and NASA-iPSC (the paper's), loads 0.5-0.9, demands N(250, 50) Mbps "
    "(Table 1's averages)"
)
_SCHED_SETTING = (
    "first 1,000 jobs of KTH-SP2 and NASA-iPSC (the paper's), loads 0.5-0.9, 250 Mbps (Table 1; the 50 Mbps axis "
    "is not the paper's and is not read), AdaBa, migration cost 20 s, SDF orders by the exact runtime"
)
_SCHED_COLUMNS = (
    *_RUN,
    "policy.name",
    "workload.trace",
    "workload.load",
    _DEMAND,
    "mean_wait",
    "mean_bsld",
    "migrations_per_job",
)
_SCHED_CHOICES = (
    "bandwidth_check: per_server (text, equation 6)",
    "response time = start - arrival (text, equation 1)",
)
_WAIT_BSLD = ("mean_wait", "mean_bsld")


def _sched(measure: Measure) -> Measure:
    """``measure`` on paper 004's scheduling runs at the paper's 250 Mbps, traces named by log."""
    return _at_demand(250.0, lambda runs: measure(_short_traces(runs)))


def most_migrations(stated: float, tolerance: float) -> Measure:
    """A range claim on paper 004's figure 8 ("the maximum number of migrations are 350"): the
    total migrations of a run (migrations per job x jobs), per scheduler and load, with its t
    interval over seeds; the largest reaches ``stated`` within ``tolerance`` and none exceeds it."""

    def measure(runs: pd.DataFrame) -> Verdict:
        runs = _ok(runs)
        estimates = []
        for (policy, level), group in runs.groupby(["policy.name", "workload.load"], sort=True):
            totals = (group["migrations_per_job"].astype(float) * group["jobs"].astype(float)).to_numpy()
            same = len(totals) > 1 and len(set(totals)) == 1
            low, high = (totals[0], totals[0]) if same else t_interval(totals)
            estimates.append(Estimate(f"{policy}, load {level:g}", float(totals.mean()), float(low), float(high), same))
        if not estimates:
            return Verdict("no cells stored", 0, 0, False)
        within = [e.low <= stated + tolerance for e in estimates]
        parts = [e.text(digits=0) + ("" if ok else " (x: above)") for e, ok in zip(estimates, within)]
        parts.append(f"most {stated:g} +- {tolerance:g}")
        return Verdict("; ".join(parts), sum(within), len(within), range_holds(estimates, stated, tolerance))

    return measure


def _bgmbf_only(measure: Measure) -> Measure:
    """``measure`` on the runs of BgMBF and BgMBFSDF (the schedulers that migrate)."""
    return lambda runs: measure(runs[runs["policy.name"].isin(["bgmbf", "bgmbfsdf"])])


CLAIMS += [
    Claim(
        "004",
        "AdaBa accepts up to 15 % more than Oktopus at 700 Mbps (tolerance 0.5 points)",
        "li2018_accept",
        _at_demand(700.0, gain_range("adaba", "oktopus", "accept_rate", 15.0, 0.5, by=(_DEMAND,), column=_EMBEDDER)),
        "range",
        quote=_FIG4_004,
        setting=_FIG4_SETTING,
        columns=_ACCEPT_COLUMNS,
        choices=_ACCEPT_CHOICES,
    ),
    Claim(
        "004",
        "AdaBa accepts the most jobs in every setting (against each other embedder, every demand)",
        "li2018_accept",
        accepts_more("adaba", _EMBEDDERS),
        quote=_FIG4_004,
        setting=_FIG4_SETTING,
        columns=_ACCEPT_COLUMNS,
        choices=_ACCEPT_CHOICES,
    ),
    Claim(
        "004",
        "Best fit accepts more than Oktopus and greedy in most cases (demands 50-700 Mbps)",
        "li2018_accept",
        accepts_more("bestfit", ("oktopus", "greedy"), scope="most"),
        quote=_FIG4_004,
        setting=_FIG4_SETTING,
        columns=_ACCEPT_COLUMNS,
        choices=_ACCEPT_CHOICES,
    ),
    Claim(
        "004",
        "Every embedder's accept rate falls as the mean demand rises (700 against 50 Mbps)",
        "li2018_accept",
        lambda runs: ratio_below(["700"], "50", ["accept_rate"], by=(_EMBEDDER,), column=_DEMAND)(
            runs.assign(**{_DEMAND: runs[_DEMAND].map(_key)})
        ),
        quote=_FIG4_004,
        setting=_FIG4_SETTING,
        columns=_ACCEPT_COLUMNS,
        choices=_ACCEPT_CHOICES,
    ),
    *(
        Claim(
            "004",
            f"AdaBa accepts more than each other embedder at most loads ({log})",
            "paper004_fig5_accept_traces",
            _on_trace(log, accepts_more("adaba", _EMBEDDERS, scope="most", by=("workload.load",))),
            quote=_FIG5,
            setting=_FIG5_SETTING,
            columns=_FIG5_COLUMNS,
            choices=_ACCEPT_CHOICES,
        )
        for log in ("KTH-SP2", "NASA-iPSC")
    ),
    Claim(
        "004",
        "BgMBF beats FCFS and SBF on response (wait) time and bounded slowdown for each workload (every load)",
        "li2018_sched",
        _sched(_all_of(*(ratio_below(("bgmbf",), other, _WAIT_BSLD, by=_LI_BY) for other in ("bw_fcfs", "sbf")))),
        quote='5.3.2, observation 1 (figures 6, 7): "Our proposed BgMBF significantly outperforms FCFS and SBF on '
        'average response time and average bounded slow down for each workload."',
        setting=_SCHED_SETTING,
        columns=_SCHED_COLUMNS,
        choices=_SCHED_CHOICES,
    ),
    Claim(
        "004",
        "BgMBFSDF beats BgMBF on response (wait) time and bounded slowdown in every setting",
        "li2018_sched",
        _sched(ratio_below(("bgmbfsdf",), "bgmbf", _WAIT_BSLD, by=_LI_BY)),
        quote='5.3.2, observation 1 (figures 6, 7): "However, BgMBFSDF always performs better than BgMBF."',
        setting=_SCHED_SETTING,
        columns=_SCHED_COLUMNS,
        choices=_SCHED_CHOICES,
    ),
    Claim(
        "004",
        "SDF beats BgMBFSDF and BgMBF on response (wait) time on NASA-iPSC and is the worst of the three on KTH-SP2",
        "li2018_sched",
        _sched(
            _all_of(
                _on_trace("NASA", ratio_below(("sdf",), "bgmbfsdf", ("mean_wait",), by=_LI_BY)),
                _on_trace("NASA", ratio_below(("sdf",), "bgmbf", ("mean_wait",), by=_LI_BY)),
                _on_trace("KTH", ratio_below(("sdf",), "bgmbfsdf", ("mean_wait",), by=_LI_BY, worse=True)),
                _on_trace("KTH", ratio_below(("sdf",), "bgmbf", ("mean_wait",), by=_LI_BY, worse=True)),
            )
        ),
        quote='5.3.2, observation 2 (figure 6): "SDF outperforms BgMBFSDF and BgMBF on average response time for '
        'NASA-iPSC, while obtains the worst performance among them for KTH-SP2."',
        setting=_SCHED_SETTING,
        columns=_SCHED_COLUMNS,
        choices=_SCHED_CHOICES,
    ),
    Claim(
        "004",
        "BgMBFSDF migrates less than BgMBF in most cases (per job; both logs, loads 0.5-0.9)",
        "li2018_sched",
        _sched(fewer_migrations("bgmbfsdf", "bgmbf", scope="most", by=_LI_BY)),
        quote='5.3.2, figure 8: "the number of migrations in BgMBFSDF is less than that in BgMBF in most cases except '
        'when the system load is 0.6 for workload KTH-SP2"',
        setting=_SCHED_SETTING,
        columns=_SCHED_COLUMNS,
        choices=_SCHED_CHOICES,
    ),
    Claim(
        "004",
        "Fewer migrations on KTH-SP2 than on NASA-iPSC at the same load (BgMBF and BgMBFSDF, per job, paired by seed)",
        "li2018_sched",
        _sched(
            _bgmbf_only(
                fewer_migrations("KTH-SP2", "NASA-iPSC", by=("policy.name", "workload.load"), column="workload.trace")
            )
        ),
        quote='5.3.2, figure 8: "Since the average job runtime of KTH-SP2 is large than of NASA-iPSC, the number '
        "of jobs "
        'that need to be migrated for KTH-SP2 is less than that for NASA-iPSC at the same system load."',
        setting=_SCHED_SETTING,
        columns=_SCHED_COLUMNS,
        choices=_SCHED_CHOICES,
    ),
    Claim(
        "004",
        "The most migrations of a run are about 350 on KTH-SP2 (BgMBF and BgMBFSDF, loads 0.5-0.9; tolerance 35)",
        "li2018_sched",
        _sched(_bgmbf_only(_on_trace("KTH-SP2", most_migrations(350.0, 35.0)))),
        "range",
        quote='5.3.2, figure 8: "The maximum number of migrations are 350 and 200 for KTH-SP2 and NASA-iPSC, '
        'respectively." (read off a figure: tolerance 10 %)',
        setting=_SCHED_SETTING,
        columns=(*_SCHED_COLUMNS, "jobs"),
        choices=_SCHED_CHOICES,
    ),
    Claim(
        "004",
        "The most migrations of a run are about 200 on NASA-iPSC (BgMBF and BgMBFSDF, loads 0.5-0.9; tolerance 20)",
        "li2018_sched",
        _sched(_bgmbf_only(_on_trace("NASA-iPSC", most_migrations(200.0, 20.0)))),
        "range",
        quote='5.3.2, figure 8: "The maximum number of migrations are 350 and 200 for KTH-SP2 and NASA-iPSC, '
        'respectively." (read off a figure: tolerance 10 %)',
        setting=_SCHED_SETTING,
        columns=(*_SCHED_COLUMNS, "jobs"),
        choices=_SCHED_CHOICES,
    ),
]

#: Claims of papers 000-004 that no config here can test, each with the reason.
UNTESTABLE: list[Untestable] = [
    Untestable(
        "001",
        "Table I (V-C): U, η, XF_c, XF, XF_90 and makespan of PC-sg, PCFC-sg, EC and PMVM, homogeneous VMs",
        "measured on the first 10,000 jobs of a Grid'5000 trace, which is not available",
    ),
    Untestable(
        "001",
        "Table II (V-D): the same metrics with heterogeneous VMs, PC-g included",
        "measured on the Grid'5000 trace, which is not available",
    ),
    Untestable(
        "001",
        'V-D, figure 9: "The EC, PC-sg and PCFC-sg are more efficient than PC-g and PMVM [...] with PCFC-sg '
        'performing slightly better"',
        "figure 9 is the Grid'5000 trace of Table II, which is not available",
    ),
    Untestable(
        "001",
        "V-B, figure 8: homogeneous makespan 30-40 % lower, average efficiency 89 % against 65 %, median XF more than "
        '30 % lower (PCFC); abstract: "up to 47% average under-utilization [...] reduce this to 35%"',
        "the trace of figure 8 is not named (the CTC figures of V-E are rows)",
    ),
    Untestable(
        "002",
        'VI: "If there are more than one processing elements for each virtual machine, then the resource '
        'utilization in k-tier architecture is much better"',
        "a VM here runs one process; CloudSim's processing elements per VM have no counterpart and no setting is given",
    ),
    Untestable(
        "003",
        'Abstract, IV: partitioning nodes into k tiers gives "improved node utilization and responsiveness"',
        "no experiment and no setting: a proposal (the k-tier runs of paper 002 measure the same idea)",
    ),
    Untestable(
        "003",
        'Conclusion: "AMCBF, even without knowing the job execution time, significantly outperforms the commonly '
        'used [EASY]"',
        "restated from paper 000: measured by paper 000's rows, not counted twice",
    ),
]


def measure(results: str | Path) -> list[tuple[Claim, Verdict | None]]:
    """Every claim with its verdict, or None where its sweep is not stored under ``results``."""
    out: list[tuple[Claim, Verdict | None]] = []
    for claim in CLAIMS:
        folder = Path(results) / claim.sweep
        if not (folder / "runs").exists():
            out.append((claim, None))
            continue
        # The newest code's rows only: a folder swept again after the simulator changed
        # keeps the older rows too, and a claim must not pool two simulators.
        runs = load(folder, code_digest="latest")
        try:
            verdict = claim.measure(runs)
        except MixedPointsError as error:  # e.g. two --set values swept into one folder
            verdict = Verdict(f"not measured: {error}", 0, 0, False)
        out.append((claim, verdict))
    return out


#: The headline's outcomes of a claim, in the order the table states them.
OUTCOMES = ("reproduced", "reproduced only under a calibrated choice", "not reproduced", "awaiting a run", "untestable")


def outcomes(measured: Sequence[tuple[Claim, Verdict | None]]) -> dict[str, str]:
    """Each claim (its paper and text: the rows measuring it under different choices) to its
    outcome: reproduced where the row that follows the text holds; reproduced only under a
    calibrated choice where only a calibrated row holds; awaiting a run while a row is not
    measured and none holds."""
    rows: dict[str, list[tuple[Claim, Verdict | None]]] = {}
    for claim, verdict in measured:
        rows.setdefault(f"{claim.paper}: {claim.text}", []).append((claim, verdict))
    out = {}
    for key, group in rows.items():
        text_holds = any(v is not None and v.holds for c, v in group if not c.calibrated)
        calibrated_holds = any(v is not None and v.holds for c, v in group if c.calibrated)
        if text_holds:
            out[key] = OUTCOMES[0]
        elif any(v is None for _, v in group):
            out[key] = OUTCOMES[3]
        elif calibrated_holds:
            out[key] = OUTCOMES[1]
        else:
            out[key] = OUTCOMES[2]
    return out


def headline(measured: Sequence[tuple[Claim, Verdict | None]]) -> dict[str, int]:
    """How many claims have each of :data:`OUTCOMES` (untestable: :data:`UNTESTABLE`)."""
    counts = dict.fromkeys(OUTCOMES, 0)
    for outcome in outcomes(measured).values():
        counts[outcome] += 1
    counts["untestable"] = len(UNTESTABLE)
    return counts


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(results: str | Path) -> str:
    """The claims table in Markdown, its headline counts first; a setting that did not hold is
    marked (x); a row whose sweep is not stored says it awaits a run."""
    measured = measure(results)
    counts = headline(measured)
    lines = [
        "**" + "; ".join(f"{counts[k]} {k}" for k in OUTCOMES) + f"** (of {sum(counts.values())} claims)",
        "",
        "| paper | claim | paper's words | setting | depends on | rule | measured (95 % interval over seeds; "
        "(x): not held there) | held at | verdict | config |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for claim, verdict in measured:
        choices = "; ".join(claim.choices) + (" **[calibrated]**" if claim.calibrated else "")
        if verdict is None:
            measured_text, held, holds = "awaiting a run", "", "awaiting a run"
        else:
            measured_text, held = verdict.text, f"{verdict.held} of {verdict.settings}"
            holds = "holds" if verdict.holds else "does not hold"
        config = f"`configs/{claim.sweep}.yaml`"
        cells = [claim.paper, claim.text, claim.quote, claim.setting, choices, claim.kind]
        cells += [measured_text, held, holds, config]
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    lines += ["", "Untestable claims:", "", "| paper | claim | reason |", "|---|---|---|"]
    lines += [f"| {u.paper} | {_cell(u.quote)} | {_cell(u.reason)} |" for u in UNTESTABLE]
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown(sys.argv[1] if len(sys.argv) > 1 else "results"))
