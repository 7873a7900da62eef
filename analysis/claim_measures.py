"""Measures of the reproduction table: a sweep's runs to a claim's :class:`Verdict`.

Each builder here returns a :data:`Measure` for one kind of claim (:data:`KINDS`), reading the
stored runs of a sweep and applying that kind's rule from :mod:`tiersweep.analysis.claim_rules`
at each setting: :func:`ratio_below`, :func:`fewer_migrations`, :func:`accepts_more` and
:func:`level_ratio` are comparisons, :func:`gain_point` and :func:`near` points,
:func:`gain_range` and :func:`most_migrations` ranges, :func:`beats_below` thresholds. The
narrowing helpers (:func:`where`, :func:`on_trace`, :func:`at_demand`) and :func:`all_of` (one
claim naming several baselines) build a row's measure from these.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ..sweep.points import check_points
from .claim_rules import (
    Estimate,
    Measure,
    Verdict,
    as_gain,
    comparison_wins,
    holds_in_scope,
    ok_runs,
    point_holds,
    range_holds,
    ratio_estimates,
    setting_label,
    threshold_holds,
    verdict_of,
)
from .stats import mean_interval, t_interval

__all__ = [
    "RUN_COLUMNS",
    "SENSITIVITY_DEFAULTS",
    "DEMAND",
    "EMBEDDER",
    "ratio_below",
    "fewer_migrations",
    "gain_point",
    "gain_range",
    "beats_below",
    "ratio_below_at",
    "level_key",
    "accepts_more",
    "at_demand",
    "near",
    "vm_ratio",
    "shares_ratio",
    "where",
    "on_trace",
    "short_traces",
    "all_of",
    "level_ratio",
    "gain_shrinks",
    "easy_pp_beats_easy",
    "most_migrations",
]

#: The columns every run has that a claim reads: whether it finished, and its seed (to pair by).
RUN_COLUMNS = ("status", "seed")


# -- comparisons --------------------------------------------------------------------------------


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
        return verdict_of(parts, wins, scope)

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
        runs = ok_runs(runs)
        check_points(runs, [*by, column], "claim")
        parts, wins = [], []
        for keys, group in runs.groupby(list(by), sort=True):
            label = setting_label(pd.Series(dict(zip(by, keys if isinstance(keys, tuple) else (keys,)))), by)
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
        return verdict_of(parts, wins, scope)

    return measure


# -- points, ranges and thresholds ------------------------------------------------------------


def _gains(
    runs: pd.DataFrame,
    policy: str,
    baseline: str,
    metric: str,
    by: Sequence[str],
    column: str = "policy.name",
) -> list[Estimate]:
    return [as_gain(e) for e in ratio_estimates(runs, policy, baseline, metric, by, column)]


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
        runs = ok_runs(runs)
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
        runs = _at_defaults(ok_runs(runs), axis).copy()
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
        runs = _at_defaults(ok_runs(runs), axis).copy()
        runs = runs[np.isclose(runs[axis].astype(float), value)]
        runs[axis] = runs[axis].astype(str)
        return ratio_below([policy], baseline, [metric], scope=scope, by=(axis, "workload.load"))(runs)

    return measure


def _at_defaults(runs: pd.DataFrame, axis: str) -> pd.DataFrame:
    """``runs`` with every sensitivity factor but ``axis`` at its default."""
    for other, default in SENSITIVITY_DEFAULTS.items():
        if other != axis and other in runs.columns:
            runs = runs[runs[other].map(level_key) == level_key(default)]
    return runs


def level_key(value: object) -> str:
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


# -- paper 004: embedders ----------------------------------------------------------------------

#: The mean bandwidth demand of paper 004's figure-4 runs.
DEMAND = "workload.bandwidth.mean"
#: The column naming an embedder (paper 004's placement of a job's VMs).
EMBEDDER = "policy.embedder"


def accepts_more(
    policy: str,
    others: Sequence[str],
    *,
    scope: str = "all",
    by: Sequence[str] = (DEMAND,),
) -> Callable[[pd.DataFrame], Verdict]:
    """A comparison: embedder ``policy`` accepts more jobs than each of ``others`` (paired by
    seed, ratio interval entirely above 1) at each setting of ``by`` (the mean demand); every
    (other, setting) is one setting of the scope."""

    def measure(runs: pd.DataFrame) -> Verdict:
        parts, wins = [], []
        for other in others:
            for estimate in _gains(runs, policy, other, "accept_rate", by, EMBEDDER):
                won = comparison_wins(estimate, no_effect=0.0, below=False)
                wins.append(won)
                parts.append(f"{policy}/{other}, {estimate.text(' %', digits=1, sign=True)}{'' if won else ' (x)'}")
        if not wins:
            return Verdict("no cells stored", 0, 0, False)
        return verdict_of(parts, wins, scope)

    return measure


def at_demand(demand: float, measure: Callable[[pd.DataFrame], Verdict]) -> Callable[[pd.DataFrame], Verdict]:
    """``measure`` on the runs at mean demand ``demand`` only."""
    return lambda runs: measure(runs[runs[DEMAND] == demand])


# -- paper 001: the deterministic VM model --------------------------------------------------

#: The two selectors of paper 001's CTC figures (section V-E: "both algorithms", PCFC and PC-sg).
_CTC_SELECTORS = ("pc-sg", "pcfc-sg")


def _as_recorded(runs: pd.DataFrame, trace: str) -> pd.DataFrame:
    """The finished runs of ``trace``'s log as recorded (no offered load: the log's own arrivals)."""
    runs = ok_runs(runs)
    runs = runs[runs["workload.trace"].map(str).str.contains(trace)]
    return runs[runs["workload.load"].isna()] if "workload.load" in runs.columns else runs


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
        runs = _as_recorded(runs, trace)
        runs = runs[(runs["platform.shares"] == shares) & runs["policy.selector"].isin(selectors)]
        if runs.empty:
            return Verdict("no cells stored", 0, 0, False)
        check_points(runs, ["policy.selector"], "claim")
        parts, wins = _points(runs.groupby("policy.selector")[metric].mean(), stated, tolerance)
        return verdict_of([f"{metric} ({trace}, {shares}), stated {stated:g} +- {tolerance:g}", *parts], wins, "all")

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
        runs = ok_runs(runs)
        mine = runs["workload.trace"].map(str).str.contains(trace) & runs["policy.selector"].isin(selectors)
        runs = runs[mine].copy()
        runs[axis] = runs[axis].map(level_key)
        check_points(runs, ["policy.selector", axis], "claim")
        table = runs.pivot_table(index="policy.selector", columns=axis, values=metric)
        if table.empty or {level_key(level), level_key(reference)} - set(table.columns):
            return Verdict("no cells stored", 0, 0, False)
        ratios = table[level_key(level)] / table[level_key(reference)]
        head = f"{metric} at {axis.split('.')[-1]} {level_key(level)} over {level_key(reference)} ({trace})"
        if compare_only:
            estimates = [Estimate(str(k), float(v), float(v), float(v), True) for k, v in ratios.items()]
            wins = [comparison_wins(e) for e in estimates]
            parts = [e.text(digits=3) + ("" if w else " (x)") for e, w in zip(estimates, wins)]
            return verdict_of([head, *parts], wins, "all")
        parts, wins = _points(ratios, stated, tolerance)
        return verdict_of([f"{head}, stated {stated:g} +- {tolerance:g}", *parts], wins, "all")

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
    return lambda runs: ratio(_as_recorded(runs, trace))


# -- combining and narrowing measures -----------------------------------------------------------


def where(column: str, value: object, measure: Measure) -> Measure:
    """``measure`` on the runs whose ``column`` is ``value`` (compared as :func:`level_key` texts);
    none when the column was not stored."""

    def narrowed(runs: pd.DataFrame) -> Verdict:
        if column not in runs.columns:
            return Verdict(f"no cells stored ({column} not swept)", 0, 0, False)
        return measure(runs[runs[column].map(level_key) == level_key(value)])

    return narrowed


def on_trace(name: str, measure: Measure) -> Measure:
    """``measure`` on the runs of the log whose file name holds ``name``."""
    return lambda runs: measure(runs[runs["workload.trace"].map(str).str.contains(name, regex=False)])


def short_traces(runs: pd.DataFrame) -> pd.DataFrame:
    """``runs`` with each trace named by its log (``KTH-SP2``), so logs can be compared."""
    runs = runs.copy()
    runs["workload.trace"] = runs["workload.trace"].map(lambda v: "-".join(Path(str(v)).name.split("-")[:2]))
    return runs


def all_of(*measures: Measure) -> Measure:
    """One claim made of several comparisons (one sentence naming several baselines): every
    setting of every part counts, and the claim holds only where every part holds."""

    return lambda runs: _joined([m(runs) for m in measures])


def _joined(verdicts: Sequence[Verdict]) -> Verdict:
    """Several parts' verdicts as one claim's: every part's settings count, and it holds only
    where every part holds."""
    return Verdict(
        " | ".join(v.text for v in verdicts),
        sum(v.held for v in verdicts),
        sum(v.settings for v in verdicts),
        all(v.holds for v in verdicts),
    )


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
        runs = ok_runs(runs)
        if defaults:
            runs = _at_defaults(runs, axis)
        runs = runs[runs[axis].map(level_key).isin([level_key(level), level_key(reference)])].copy()
        runs[axis] = runs[axis].map(level_key)
        verdicts = []
        for policy in policies:
            mine = runs[runs["policy.name"] == policy]
            levels = ([level_key(level)], level_key(reference), [metric])
            compare_levels = ratio_below(*levels, scope=scope, worse=worse, by=by, column=axis)
            verdict = compare_levels(mine)
            verdicts.append(Verdict(f"{policy}: {verdict.text}", verdict.held, verdict.settings, verdict.holds))
        return _joined(verdicts)

    return measure


def gain_shrinks(
    axis: str,
    low: object,
    high: object,
    policy: str,
    baseline: str,
    metric: str,
    *,
    column: str = "policy.name",
    by: str = "workload.load",
    defaults: bool = True,
) -> Measure:
    """A comparison of a gain across a factor ("the benefit [...] is inversely proportional to
    the average CPU usage"): ``policy``'s ``metric`` over ``baseline``'s (values of ``column``),
    per seed, is smaller at ``axis`` = ``low`` than at ``high``: the ratio of the two ratios,
    paired by seed, lies below 1 at every setting of ``by``. For a metric where more is better
    (an accept rate), that is a larger advantage at ``high``. With ``defaults``, the other
    sensitivity factors at their defaults."""

    def measure(runs: pd.DataFrame) -> Verdict:
        runs = ok_runs(runs)
        runs = (_at_defaults(runs, axis) if defaults else runs).copy()
        runs[axis] = runs[axis].map(level_key)
        runs = runs[runs[axis].isin([level_key(low), level_key(high)]) & runs[column].isin([policy, baseline])]
        table = runs.pivot_table(index=[axis, by, "seed"], columns=column, values=metric)
        if table.empty or {policy, baseline} - set(table.columns):
            return Verdict("no cells stored", 0, 0, False)
        ratios = (table[policy] / table[baseline]).rename("ratio").reset_index()
        ratios["policy.name"] = ratios[axis]  # the levels compared, as the policies of ratio_below
        ratios["status"] = "ok"
        compare_levels = ratio_below([level_key(low)], level_key(high), ["ratio"], by=(by,), column="policy.name")
        verdict = compare_levels(ratios.drop(columns=[axis]))
        factor = axis.split(".")[-1]
        head = f"({metric} {policy}/{baseline} at {factor} {level_key(low)}) / (the same at {level_key(high)})"
        return Verdict(f"{head}: {verdict.text}", verdict.held, verdict.settings, verdict.holds)

    return measure


def _variants(runs: pd.DataFrame) -> pd.DataFrame:
    """Paper 003's schedulers as one column ``variant``: ``easy`` (the user's estimate),
    ``easy++`` (last-two predictions, shortest first, the authors' increments) and
    ``easy++ request`` (the same, a wrong prediction extended to the request)."""
    runs = ok_runs(runs).copy()
    plus = runs["policy.prediction"].map(str) == "last2"
    runs["variant"] = np.where(plus, "easy++ " + runs["policy.correction"].map(str), "easy")
    runs["variant"] = runs["variant"].str.replace("easy++ increment", "easy++", regex=False)
    return runs


def easy_pp_beats_easy(correction: str) -> Measure:
    """Paper 003 (EASY++): EASY++ with ``correction`` beats EASY on mean wait and bounded
    slowdown on every log."""
    name = "easy++" if correction == "increment" else f"easy++ {correction}"
    compare_logs = ratio_below([name], "easy", ("mean_wait", "mean_bsld"), by=("workload.trace",), column="variant")
    return lambda runs: compare_logs(short_traces(_variants(runs)))


def most_migrations(stated: float, tolerance: float) -> Measure:
    """A range claim on paper 004's figure 8 ("the maximum number of migrations are 350"): the
    total migrations of a run (migrations per job x jobs), per scheduler and load, with its
    interval over seeds on the positive scale (:func:`~tiersweep.analysis.stats.mean_interval`:
    a count's interval stays at or above 0, where Student's t ran below it); the largest reaches
    ``stated`` within ``tolerance`` and none exceeds it."""

    def measure(runs: pd.DataFrame) -> Verdict:
        runs = ok_runs(runs)
        estimates = []
        for (policy, level), group in runs.groupby(["policy.name", "workload.load"], sort=True):
            totals = (group["migrations_per_job"].astype(float) * group["jobs"].astype(float)).to_numpy()
            same = len(totals) > 1 and len(set(totals)) == 1
            low, high = (totals[0], totals[0]) if same else mean_interval(totals, scale="positive")
            estimates.append(Estimate(f"{policy}, load {level:g}", float(totals.mean()), float(low), float(high), same))
        if not estimates:
            return Verdict("no cells stored", 0, 0, False)
        within = [e.low <= stated + tolerance for e in estimates]
        parts = [e.text(digits=0) + ("" if ok else " (x: above)") for e, ok in zip(estimates, within)]
        parts.append(f"most {stated:g} +- {tolerance:g}")
        return Verdict("; ".join(parts), sum(within), len(within), range_holds(estimates, stated, tolerance))

    return measure
