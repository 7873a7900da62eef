"""Summary tables with confidence intervals over seeds, and comparisons against a baseline.

An interval respects the range of its quantity (see :func:`mean_interval`): the mean of a
positive metric gets a positive interval, a share or rate in [0, 1] stays in [0, 1], and a
ratio of two policies is taken on the log scale (:func:`ratio_interval`), where it is defined:
a pair with a 0 has no log ratio, and :func:`compare` then refuses the ratio (an
:class:`UndefinedRatioWarning`) rather than take it over the other pairs; its
``scale="difference"`` compares by the paired difference. Groups with fewer than
:data:`MIN_SEEDS` seeds raise a :class:`FewSeedsWarning`.

A group is averaged over seeds only when its rows are runs of one set of inputs: a group whose
rows differ in a spec column, the trace's content or the simulator is refused
(:class:`MixedPointsError`, naming the column and its values); :func:`point_columns` gives the
grouping that keeps every such difference apart.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import special
from scipy import stats as st

from ..core.metric_catalogue import is_fraction
from ..sweep.points import MixedPointsError, check_points, point_columns
from ..sweep.summary import MIN_SEEDS, few_seeds_warning

__all__ = [
    "summary",
    "compare",
    "t_interval",
    "mean_interval",
    "ratio_interval",
    "paired_interval",
    "metric_scale",
    "few_seeds_warning",
    "point_columns",
    "FewSeedsWarning",
    "UndefinedRatioWarning",
    "MissingBaselineWarning",
    "MixedPointsError",
    "MIN_SEEDS",
    "SCALES",
    "POLICY",
    "SEED",
]

#: The policy column of a runs table.
POLICY = "policy.name"
#: The seed column of a runs table.
SEED = "seed"
# (MIN_SEEDS and few_seeds_warning live with the sweep's summary table, which prints the same
# warning; dependencies point from analysis to sweep, never back.)


class FewSeedsWarning(UserWarning):
    """Warned by :func:`summary` and :func:`compare` when a group has fewer than
    :data:`MIN_SEEDS` seeds (the text is :func:`few_seeds_warning`'s)."""


class UndefinedRatioWarning(UserWarning):
    """Warned by :func:`compare` when a group's pairs include a value of 0 (or below) on either
    side: the ratio on the log scale is undefined there and is reported as nan."""


class MissingBaselineWarning(UserWarning):
    """Warned by :func:`compare` when the baseline has no run paired with a group's (it was not
    run at that setting of ``by``): those rows are nan, with ``_n`` 0."""


def _warn_few_seeds(counts: Sequence[int]) -> None:
    message = few_seeds_warning(counts)
    if message:
        # stacklevel 3: the line that called summary() or compare(), not this helper.
        warnings.warn(message, FewSeedsWarning, stacklevel=3)


#: The scales :func:`mean_interval` knows: ``unit`` (values in [0, 1]), ``positive``
#: (values >= 0) and ``real`` (any sign).
SCALES = ("unit", "positive", "real")


def metric_scale(name: str) -> str | None:
    """``"unit"`` for a metric the metric catalogue declares bounded in [0, 1]
    (:func:`~tiersweep.core.metric_catalogue.is_fraction`), else None: the scale is then read
    from the values by :func:`mean_interval`."""
    if is_fraction(name):
        return "unit"
    return None


def mean_interval(values: Sequence[float], level: float = 0.95, scale: str | None = None) -> tuple[float, float]:
    """Confidence interval of the (arithmetic) mean of ``values`` that respects their range.

    ``scale`` is one of :data:`SCALES`, or None to read it from the values: all >= 0 is taken
    as ``positive`` (every run metric of tiersweep is a time, slowdown, count or fraction),
    any negative value as ``real``. A declaration the values contradict (a ``unit`` metric
    with a value above 1, a ``positive`` one with a negative value) falls back to the values.
    Missing values are left out; with fewer than two the interval is nan; values that are
    all equal give the point interval ``[v, v]`` (all zeros: ``[0, 0]``).

    The method per scale (``t`` is Student's quantile with n - 1 degrees of freedom):

    * ``real``: Student's t, ``mean +- t s / sqrt(n)`` (:func:`t_interval`).
    * ``positive``, all values > 0: the modified Cox interval for the mean of a log-normal
      sample, ``exp(ybar + s_y^2/2 +- t sqrt(s_y^2/n + s_y^4/(2(n-1))))`` with
      ``y = log x`` (Olsson 2005, "Confidence intervals for the mean of a log-normal
      distribution", J. Stat. Educ. 13(1)), which Olsson recommends as simple and accurate
      at small n. Positive by construction and right-skewed like the metrics (response
      times, slowdowns); where the values vary little it equals the t interval. Simulated
      from log-normal and gamma values (n = 2-10, CV up to 1.3) its coverage of a 95 %
      interval stayed within 93-98 %, where the t interval's fell to 82 %.
      A BCa bootstrap (the other positive method) is not used: from the 2-5 seeds of a
      typical sweep it can only resample a handful of values and its interval collapses
      towards their range. Where the arithmetic mean falls outside the Cox interval, the
      values are evidently not log-normal (e.g. one outlying seed among many equal ones) and
      the interval is the delta-method one of the next item, which assumes no distribution
      of the values; so a reported mean always lies in its interval.
    * ``positive`` with some zeros (``migrations_per_job`` of a policy that seldom migrates):
      no log-normal model fits a sample with zeros, but the mean is still positive, so the
      t interval is taken for ``log(mean)`` by the delta method (a standard transformed
      interval, as for survival probabilities):
      ``mean * exp(+- t s / (mean sqrt(n)))``. Positive, it contains the mean, and to first
      order it is the t interval. (Clipping a t interval at 0 would claim a mean of 0 is
      plausible when positive values were observed, which it is not.)
    * ``unit``: the same on the logit scale, ``expit(logit(mean) +- t s / (mean (1 - mean)
      sqrt(n)))``: within (0, 1), it contains the mean, and values of exactly 0 or 1 are
      allowed as long as the mean is strictly between.
    """
    if scale is not None and scale not in SCALES:
        raise ValueError(f"scale: expected one of {', '.join(SCALES)} or None, got {scale!r}")
    values = np.asarray(values, dtype=float)
    values = values[~np.isnan(values)]
    n = len(values)
    if n < 2:
        return (float("nan"), float("nan"))
    low, high = values.min(), values.max()
    if scale == "unit" and (low < 0 or high > 1):
        scale = None
    if scale is None or (scale == "positive" and low < 0):
        scale = "positive" if low >= 0 else "real"
    if scale == "real":
        return t_interval(values, level)
    mean, sd = float(values.mean()), float(values.std(ddof=1))
    if sd == 0 or not np.isfinite(sd):
        return (mean, mean) if sd == 0 else (float("nan"), float("nan"))
    t = float(st.t.ppf(0.5 + level / 2, n - 1))
    with np.errstate(over="ignore"):
        if scale == "unit":
            half = t * sd / (np.sqrt(n) * mean * (1 - mean))
            centre = special.logit(mean)
            # min/max: logit and back may move the mean by a rounding error, and an error bar
            # from a mean a hair outside its interval would be negative.
            return (min(float(special.expit(centre - half)), mean), max(float(special.expit(centre + half)), mean))
        if low > 0:
            logs = np.log(values)
            var = float(logs.var(ddof=1))
            centre = logs.mean() + var / 2
            half = t * np.sqrt(var / n + var**2 / (2 * (n - 1)))
            cox = (float(np.exp(centre - half)), float(np.exp(centre + half)))
            if cox[0] <= mean <= cox[1]:
                return cox
        half = t * sd / (mean * np.sqrt(n))
        return (float(mean * np.exp(-half)), float(mean * np.exp(half)))


def t_interval(values: Sequence[float], level: float = 0.95) -> tuple[float, float]:
    """Student-t confidence interval of the mean of ``values`` (nan when fewer than two)."""
    values = np.asarray(values, dtype=float)
    values = values[~np.isnan(values)]
    if len(values) < 2:
        return (float("nan"), float("nan"))
    mean = values.mean()
    half = st.t.ppf(0.5 + level / 2, len(values) - 1) * values.std(ddof=1) / np.sqrt(len(values))
    return (float(mean - half), float(mean + half))


def ratio_interval(ratios: Sequence[float], level: float = 0.95) -> tuple[float, float, float]:
    """The geometric mean of positive paired ratios and its confidence interval, taken on the
    log scale: ``exp`` of the mean of ``log r`` and of its Student-t interval.

    A ratio is multiplicative (0.5 and 2 are equally far from 1), and an interval of ratios
    must stay positive: an arithmetic mean with a symmetric interval gives neither (with a few
    seeds it ran below zero). Missing (nan) ratios are left out; with fewer than two the
    interval is nan. A ratio of 0, below 0 or infinite (a 0 on either side of its pair) has no
    logarithm, and the mean of the others would be biased (those are the most extreme pairs),
    so then all three are nan.
    """
    ratios = np.asarray(ratios, dtype=float)
    ratios = ratios[~np.isnan(ratios)]
    if not len(ratios) or not np.all(np.isfinite(ratios) & (ratios > 0)):
        return (float("nan"), float("nan"), float("nan"))
    logs = np.log(ratios)
    low, high = t_interval(logs, level)
    return (float(np.exp(logs.mean())), float(np.exp(low)), float(np.exp(high)))


#: The scales of a paired comparison (:func:`paired_interval`).
PAIRED_SCALES = ("ratio", "difference")


def _check_scale(scale: str) -> None:
    if scale not in PAIRED_SCALES:
        raise ValueError(f"scale: expected {' or '.join(repr(s) for s in PAIRED_SCALES)}, got {scale!r}")


def paired_interval(
    values: Sequence[float], references: Sequence[float], scale: str = "ratio", level: float = 0.95
) -> tuple[float, float, float]:
    """``values`` against ``references``, paired element by element: the estimate and its
    confidence interval. ``ratio``: the geometric mean of ``values / references`` with its
    interval on the log scale (:func:`ratio_interval`; nan when a value of a pair is 0 or
    below). ``difference``: the mean of ``values - references`` with its Student-t interval
    (:func:`t_interval`). Pairs with a missing value are left out; with none, all nan."""
    _check_scale(scale)
    value = np.asarray(values, dtype=float)
    reference = np.asarray(references, dtype=float)
    present = ~(np.isnan(value) | np.isnan(reference))
    value, reference = value[present], reference[present]
    if scale == "difference":
        estimate = float(np.mean(value - reference)) if len(value) else float("nan")
        return (estimate, *t_interval(value - reference, level))
    with np.errstate(divide="ignore", invalid="ignore"):
        return ratio_interval(value / reference, level)


def _ok(df: pd.DataFrame) -> pd.DataFrame:
    return df[df["status"] == "ok"] if "status" in df.columns else df


def summary(
    df: pd.DataFrame,
    by: Sequence[str],
    metrics: Sequence[str],
    level: float = 0.95,
    scales: Mapping[str, str | None] | None = None,
) -> pd.DataFrame:
    """Per group of ``by``: each metric's mean, standard deviation, count and confidence
    interval over seeds (rows with status other than ``ok`` are left out).

    The interval is :func:`mean_interval`'s, on the metric's scale: ``unit`` for the metrics
    declared bounded in [0, 1] (:func:`metric_scale`), otherwise read from the values
    (positive when all are >= 0). ``scales`` overrides it per metric (e.g. ``{"gain":
    "real"}`` for a metric that can be negative but happened to be positive).

    Warns :class:`FewSeedsWarning` when a group has fewer than :data:`MIN_SEEDS` rows (seeds).

    Raises:
        MixedPointsError: The rows of a group differ in an input column that ``by`` leaves out
            (:func:`~tiersweep.sweep.points.check_points`).

    Returns:
        One row per group; columns ``<metric>_mean`` (arithmetic), ``_std``, ``_n``, and
        ``_ci_low``/``_ci_high``: the interval of ``<metric>_mean``.
    """
    scales = dict(scales or {})
    ok = _ok(df)
    check_points(ok, list(by), "summary")
    rows, counts = [], []
    for key, group in ok.groupby(list(by), sort=True, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        row = dict(zip(by, key))
        counts.append(len(group))
        for metric in metrics:
            values = group[metric].astype(float).dropna().to_numpy()
            low, high = mean_interval(values, level, scales.get(metric, metric_scale(metric)))
            row[f"{metric}_mean"] = values.mean() if len(values) else np.nan
            row[f"{metric}_std"] = values.std(ddof=1) if len(values) > 1 else np.nan
            row[f"{metric}_n"] = len(values)
            row[f"{metric}_ci_low"] = low
            row[f"{metric}_ci_high"] = high
        rows.append(row)
    _warn_few_seeds(counts)
    return pd.DataFrame(rows)


def compare(
    df: pd.DataFrame,
    baseline: str,
    metrics: Sequence[str],
    by: Sequence[str] | None = None,
    policy: str = POLICY,
    pair_on: str = SEED,
    level: float = 0.95,
    scale: str = "ratio",
    match: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Each policy's metric against ``baseline``'s, paired by seed (common random numbers make
    the pairs meaningful) within each group of ``by``.

    ``scale="ratio"`` (the default) gives policy / baseline on the log scale; it is defined only
    where every value of the pairs is positive. A 0 on either side (a policy that never waited,
    a baseline that never migrates) leaves the group's ratio nan with an
    :class:`UndefinedRatioWarning` naming the metric, group and pairs: a geometric mean of the
    other pairs would leave out the most extreme ones. ``scale="difference"`` gives the mean of
    the paired differences policy - baseline with its Student-t interval, defined for any values.
    A pair with a missing value on either side is left out.

    The baseline's run paired with a policy's is the one of the same seed at the same setting
    of the keys in ``match`` (default: all of ``by``). A baseline run at one setting of a key
    the other policies vary (EASY, which does not migrate, at one migration cost) is compared
    with every setting of that key when ``match`` leaves it out. A group with no baseline run to
    pair is nan, with a :class:`MissingBaselineWarning` naming it and the ``match`` that would
    pair it.

    Warns :class:`FewSeedsWarning` when a policy has fewer than :data:`MIN_SEEDS` seeds paired
    with the baseline's in a group (for some metric, missing values left out).

    Raises:
        ValueError: The baseline has several rows per setting of ``match`` and seed, ``match``
            names a key not in ``by``, or ``scale`` is neither ``"ratio"`` nor ``"difference"``.
        MixedPointsError: The rows of a policy in a group differ in an input column that ``by``
            leaves out (:func:`~tiersweep.sweep.points.check_points`).

    Returns:
        One row per (group, policy other than the baseline): for each metric the geometric mean
        ratio ``<metric>_ratio`` (or the mean difference ``<metric>_diff``), its interval
        ``_ci_low``/``_ci_high`` over the paired seeds (:func:`ratio_interval`,
        :func:`t_interval`), and ``_n`` pairs.
    """
    _check_scale(scale)  # (before any work: a bad scale is refused even where no pair is found)
    df = _ok(df)
    by = list(by or [])
    matched = list(by) if match is None else list(match)
    for key in matched:
        if key not in by:
            raise ValueError(f"match: {key!r} is not a key of by ({', '.join(by) or 'none'})")
    keys = [*matched, pair_on]
    check_points(df, [*by, policy], "compare")
    baseline_rows = df[df[policy] == baseline]
    base = baseline_rows.set_index(keys)[list(metrics)]
    if base.index.has_duplicates:
        raise ValueError(f"baseline {baseline!r} has several rows per {keys}: add the varying keys to 'by' and 'match'")
    rows: list[dict] = []
    counts: list[int] = []
    undefined: dict[str, list[str]] = {}
    unpaired: list[str] = []
    for name, group in df[df[policy] != baseline].groupby([*by, policy], sort=True, dropna=False):
        name = name if isinstance(name, tuple) else (name,)
        row = dict(zip([*by, policy], name))
        joined = group.set_index(keys)[list(metrics)].merge(
            base.add_suffix("__base"), left_index=True, right_index=True, how="inner"
        )
        if joined.empty:
            unpaired.append(_group_label(row, by, policy))
        used = []
        for metric in metrics:
            value = joined[metric].to_numpy(dtype=float)
            reference = joined[f"{metric}__base"].to_numpy(dtype=float)
            present = ~(np.isnan(value) | np.isnan(reference))
            value, reference = value[present], reference[present]
            zeros = int(np.count_nonzero((value <= 0) | (reference <= 0)))
            if scale == "ratio" and zeros:
                label = _group_label(row, by, policy)
                undefined.setdefault(metric, []).append(f"{label}: {zeros} of {len(value)} pairs")
            estimate, low, high = paired_interval(value, reference, scale, level)
            row[f"{metric}_{'ratio' if scale == 'ratio' else 'diff'}"] = estimate
            row[f"{metric}_ci_low"] = low
            row[f"{metric}_ci_high"] = high
            row[f"{metric}_n"] = len(value)
            used.append(len(value))
        # (The seeds a metric's pairs actually have: a missing value leaves its pair out.)
        counts.append(min((n for n in used if n), default=0))
        rows.append(row)
    _warn_few_seeds(counts)
    if unpaired:
        fixed = [key for key in matched if baseline_rows[key].nunique(dropna=False) <= 1]
        if baseline_rows.empty:
            names = ", ".join(repr(str(name)) for name in sorted(df[policy].dropna().astype(str).unique()))
            hint = f"; it has no run at all (the runs' {policy}: {names})"
        elif fixed:
            hint = (
                f"; it is run at one setting of {', '.join(fixed)}: to compare every group with that run, "
                f"match=[{', '.join(repr(k) for k in matched if k not in fixed)}]"
            )
        else:
            hint = ""
        warnings.warn(
            f"compare: the baseline {baseline!r} has no run in {len(unpaired)} group(s) to pair with "
            f"(left nan): {_some(unpaired)}{hint}",
            MissingBaselineWarning,
            stacklevel=2,
        )
    if undefined:
        warnings.warn(
            f"compare against {baseline!r}: a ratio on the log scale is undefined where a paired value is 0 or below "
            f"(left nan: the other pairs alone would leave out the most extreme ones): "
            f"{'; '.join(f'{name} in {len(groups)} group(s): {_some(groups)}' for name, groups in undefined.items())}; "
            f"compare these by difference (scale='difference')",
            UndefinedRatioWarning,
            stacklevel=2,
        )
    return pd.DataFrame(rows)


#: Groups a warning of :func:`compare` names (per metric; the rest are counted).
GROUPS_NAMED = 3


def _some(groups: Sequence[str]) -> str:
    """``the first few, and K more`` of ``groups`` (at most :data:`GROUPS_NAMED` named)."""
    more = f", and {len(groups) - GROUPS_NAMED} more" if len(groups) > GROUPS_NAMED else ""
    return ", ".join(groups[:GROUPS_NAMED]) + more


def _group_label(row: Mapping[str, object], by: Sequence[str], policy: str) -> str:
    """``policy (key=value, ...)`` for a row of :func:`compare`."""
    where = ", ".join(f"{key}={row[key]}" for key in by)
    return f"{row[policy]} ({where})" if where else str(row[policy])
