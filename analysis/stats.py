"""Summary tables with confidence intervals over seeds, and comparisons against a baseline."""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd
from scipy import stats as st

__all__ = ["summary", "compare", "t_interval", "ratio_interval", "few_seeds_warning", "MIN_SEEDS", "POLICY", "SEED"]

#: The policy column of a runs table.
POLICY = "policy.name"
#: The seed column of a runs table.
SEED = "seed"
#: Fewer seeds than this per group get a warning: an interval from two values is too wide to
#: read (Student's t with one degree of freedom is 12.7) and says nothing of the spread.
MIN_SEEDS = 3


def few_seeds_warning(counts: Sequence[int]) -> str | None:
    """The warning to print when a group has fewer than :data:`MIN_SEEDS` seeds (None if none
    has); ``counts`` are the seeds of each group (groups with none are ignored)."""
    counts = [int(n) for n in counts if int(n) > 0]
    if not counts or min(counts) >= MIN_SEEDS:
        return None
    few = sum(n < MIN_SEEDS for n in counts)
    return (
        f"warning: {few} of {len(counts)} group(s) have fewer than {MIN_SEEDS} seeds (fewest: {min(counts)}); "
        f"their intervals are too wide to read or missing: run more seeds"
    )


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
    seeds it ran below zero). Non-positive or non-finite ratios are left out; with fewer than
    two the interval is nan.
    """
    ratios = np.asarray(ratios, dtype=float)
    ratios = ratios[np.isfinite(ratios) & (ratios > 0)]
    if not len(ratios):
        return (float("nan"), float("nan"), float("nan"))
    logs = np.log(ratios)
    low, high = t_interval(logs, level)
    return (float(np.exp(logs.mean())), float(np.exp(low)), float(np.exp(high)))


def _ok(df: pd.DataFrame) -> pd.DataFrame:
    return df[df["status"] == "ok"] if "status" in df.columns else df


def summary(df: pd.DataFrame, by: Sequence[str], metrics: Sequence[str], level: float = 0.95) -> pd.DataFrame:
    """Per group of ``by``: each metric's mean, standard deviation, count and confidence
    interval over seeds (rows with status other than ``ok`` are left out).

    Returns:
        One row per group; columns ``<metric>_mean``, ``_std``, ``_n``, ``_ci_low``, ``_ci_high``.
    """
    rows = []
    for key, group in _ok(df).groupby(list(by), sort=True, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        row = dict(zip(by, key))
        for metric in metrics:
            values = group[metric].astype(float).dropna().to_numpy()
            low, high = t_interval(values, level)
            row[f"{metric}_mean"] = values.mean() if len(values) else np.nan
            row[f"{metric}_std"] = values.std(ddof=1) if len(values) > 1 else np.nan
            row[f"{metric}_n"] = len(values)
            row[f"{metric}_ci_low"] = low
            row[f"{metric}_ci_high"] = high
        rows.append(row)
    return pd.DataFrame(rows)


def compare(
    df: pd.DataFrame,
    baseline: str,
    metrics: Sequence[str],
    by: Sequence[str] | None = None,
    policy: str = POLICY,
    pair_on: str = SEED,
    level: float = 0.95,
) -> pd.DataFrame:
    """Ratios of each policy's metric to ``baseline``'s, paired by seed (common random numbers
    make the pairs meaningful) within each group of ``by``.

    Returns:
        One row per (group, policy other than the baseline): for each metric the geometric
        mean ratio ``<metric>_ratio`` and its interval ``_ci_low``/``_ci_high`` over the paired
        seeds, both on the log scale (:func:`ratio_interval`), and ``_n`` pairs.
    """
    df = _ok(df)
    by = list(by or [])
    keys = [*by, pair_on]
    base = df[df[policy] == baseline].set_index(keys)[list(metrics)]
    if base.index.has_duplicates:
        raise ValueError(f"baseline {baseline!r} has several rows per {keys}: add the varying keys to 'by'")
    rows = []
    for name, group in df[df[policy] != baseline].groupby([*by, policy], sort=True, dropna=False):
        name = name if isinstance(name, tuple) else (name,)
        row = dict(zip([*by, policy], name))
        joined = group.set_index(keys)[list(metrics)].merge(
            base.add_suffix("__base"), left_index=True, right_index=True, how="inner"
        )
        for metric in metrics:
            ratio = (joined[metric] / joined[f"{metric}__base"]).to_numpy(dtype=float)
            ratio = ratio[np.isfinite(ratio) & (ratio > 0)]
            mean, low, high = ratio_interval(ratio, level)
            row[f"{metric}_ratio"] = mean
            row[f"{metric}_ci_low"] = low
            row[f"{metric}_ci_high"] = high
            row[f"{metric}_n"] = len(ratio)
        rows.append(row)
    return pd.DataFrame(rows)
