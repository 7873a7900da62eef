"""The papers' testable claims, measured on reproduction sweeps (the data of REPRODUCTION.md).

``python -m analysis.claims RESULTS_DIR`` prints one Markdown row per claim whose sweep is in
RESULTS_DIR: the claim, our measured value with its 95 % interval over seeds (paired by seed
where two policies are compared), whether it holds, and the config that produced it.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from .load import load
from .stats import compare, t_interval

__all__ = ["Claim", "CLAIMS", "measure", "markdown"]


@dataclass(frozen=True)
class Claim:
    """A claim of a paper and how to measure it on a sweep's runs."""

    paper: str
    text: str
    sweep: str
    measure: Callable[[pd.DataFrame], tuple[str, bool]]


def _ok(runs: pd.DataFrame) -> pd.DataFrame:
    return runs[runs["status"] == "ok"]


def _ratio_at_loads(runs: pd.DataFrame, policy: str, baseline: str, metric: str) -> pd.DataFrame:
    table = compare(runs[runs["policy.name"].isin([policy, baseline])], baseline=baseline, metrics=[metric], by=["workload.load"])
    return table.sort_values("workload.load")


def _fmt_ratios(table: pd.DataFrame, metric: str) -> str:
    return "; ".join(
        f"load {row['workload.load']:g}: {row[f'{metric}_ratio']:.2f} [{row[f'{metric}_ci_low']:.2f}, {row[f'{metric}_ci_high']:.2f}]"
        for _, row in table.iterrows()
    )


def beats(policy: str, baseline: str, metrics: tuple[str, ...]) -> Callable[[pd.DataFrame], tuple[str, bool]]:
    """``policy`` has a lower mean of every metric than ``baseline`` at every load."""

    def measure(runs: pd.DataFrame) -> tuple[str, bool]:
        texts, holds = [], True
        for metric in metrics:
            table = _ratio_at_loads(_ok(runs), policy, baseline, metric)
            holds &= bool((table[f"{metric}_ratio"] < 1).all())
            texts.append(f"{metric} {policy}/{baseline}: {_fmt_ratios(table, metric)}")
        return " | ".join(texts), holds

    return measure


def fewer_migrations(policy: str, other: str) -> Callable[[pd.DataFrame], tuple[str, bool]]:
    """``policy`` migrates less per job than ``other`` at every load (difference paired by seed)."""

    def measure(runs: pd.DataFrame) -> tuple[str, bool]:
        runs = _ok(runs)
        parts, holds = [], True
        for load_value, group in runs.groupby("workload.load"):
            a = group[group["policy.name"] == policy].set_index("seed")["migrations_per_job"]
            b = group[group["policy.name"] == other].set_index("seed")["migrations_per_job"]
            diff = (a - b).dropna()
            low, high = t_interval(diff.to_numpy())
            holds &= bool(diff.mean() < 0)
            parts.append(f"load {load_value:g}: {a.mean():.3f} vs {b.mean():.3f} (diff [{low:.3f}, {high:.3f}])")
        return "; ".join(parts), holds

    return measure


def utilisation_gain(policy: str, baseline: str, claimed: float) -> Callable[[pd.DataFrame], tuple[str, bool]]:
    """Largest utilisation gain of ``policy`` over ``baseline`` across loads, in percentage
    points and in percent; holds when it reaches the claimed value (either reading)."""

    def measure(runs: pd.DataFrame) -> tuple[str, bool]:
        runs = _ok(runs)
        mean = runs.groupby(["policy.name", "workload.load"])["utilization"].mean()
        gains = []
        for load_value in sorted(runs["workload.load"].unique()):
            ours, theirs = mean[(policy, load_value)], mean[(baseline, load_value)]
            gains.append((load_value, 100 * (ours - theirs), 100 * (ours - theirs) / theirs))
        best_points = max(gains, key=lambda g: g[1])
        best_relative = max(gains, key=lambda g: g[2])
        text = (
            f"max {best_points[1]:.2f} points (load {best_points[0]:g}), max {best_relative[2]:.2f} % relative "
            f"(load {best_relative[0]:g}); claimed {claimed} %"
        )
        return text, best_points[1] >= claimed or best_relative[2] >= claimed

    return measure


def beats_along(axis: str, at: float | None, policy: str, baseline: str, metric: str) -> Callable[[pd.DataFrame], tuple[str, bool]]:
    """``policy`` beats ``baseline`` on ``metric`` at ``axis == at`` (paired by seed), or, with
    ``at`` None, the trend of ``policy``'s metric along ``axis``."""

    def measure(runs: pd.DataFrame) -> tuple[str, bool]:
        runs = _ok(runs)
        # One factor at a time: the other factors of the sensitivity sweep at their defaults.
        for other, value in SENSITIVITY_DEFAULTS.items():
            if other != axis and other in runs.columns:
                runs = runs[runs[other].astype(str) == value]
        runs = runs.copy()
        runs[axis] = runs[axis].astype(str)
        table = compare(runs[runs["policy.name"].isin([policy, baseline])], baseline=baseline, metrics=[metric], by=[axis])
        if table.empty:
            return "no cells of this factor stored", False
        rows = [
            f"{axis}={row[axis]}: {row[f'{metric}_ratio']:.2f} [{row[f'{metric}_ci_low']:.2f}, {row[f'{metric}_ci_high']:.2f}]"
            for _, row in table.iterrows()
        ]
        if at is None:
            holds = bool((table[f"{metric}_ratio"] < 1).all())
        else:
            chosen = table.loc[table[axis].astype(float) == at, f"{metric}_ratio"]
            if chosen.empty:
                return f"no cell at {axis}={at:g} stored", False
            holds = bool((chosen < 1).all())
        return f"{metric} {policy}/{baseline}: " + "; ".join(rows), holds

    return measure


#: The factors of ``liu2013_sensitivity`` at their default values (as stored).
SENSITIVITY_DEFAULTS = {"platform.migration_cost": "20.0", "workload.cpu_accuracy": "1.0", "workload.cpu_usage": "[0.4, 1.0]"}

CLAIMS: list[Claim] = [
    Claim("000", "AMCBF beats EASY on response time and bounded slowdown (FWorkload)", "liu2013_fworkload", beats("amcbf", "easy", ("mean_response", "mean_bsld"))),
    Claim("000", "AMCBF beats EASY on response time and bounded slowdown (JWorkload)", "liu2013_jworkload", beats("amcbf", "easy", ("mean_response", "mean_bsld"))),
    Claim("000", "CMCBF beats EASY on response time and bounded slowdown (FWorkload)", "liu2013_fworkload", beats("cmcbf", "easy", ("mean_response", "mean_bsld"))),
    Claim("000", "CMBF and AMBF are worse than EASY on bounded slowdown (FWorkload)", "liu2013_fworkload", lambda r: _negate(beats("ambf", "easy", ("mean_bsld",))(r))),
    Claim("000", "AMBF needs fewer migrations than CMBF (FWorkload)", "liu2013_fworkload", fewer_migrations("ambf", "cmbf")),
    Claim("000", "AMBF needs fewer migrations than CMBF (JWorkload)", "liu2013_jworkload", fewer_migrations("ambf", "cmbf")),
    Claim("000", "AMCBF needs slightly fewer migrations than CMCBF (FWorkload)", "liu2013_fworkload", fewer_migrations("amcbf", "cmcbf")),
    Claim("000", "AMBF beats CMBF on response time and bounded slowdown (FWorkload)", "liu2013_fworkload", beats("ambf", "cmbf", ("mean_response", "mean_bsld"))),
    Claim("000", "Utilisation gain of AMCBF over EASY up to 2.4 % (FWorkload)", "liu2013_fworkload", utilisation_gain("amcbf", "easy", 2.4)),
    Claim("000", "Utilisation gain of AMCBF over EASY up to 3.1 % (JWorkload)", "liu2013_jworkload", utilisation_gain("amcbf", "easy", 3.1)),
    Claim("000", "AMCBF still beats EASY at 600 s migration cost (FWorkload, bounded slowdown)", "liu2013_sensitivity", beats_along("platform.migration_cost", 600.0, "amcbf", "easy", "mean_bsld")),
    Claim("000", "AMCBF beats EASY even without CPU-usage information (accuracy 0, bounded slowdown)", "liu2013_sensitivity", beats_along("workload.cpu_accuracy", 0.0, "amcbf", "easy", "mean_bsld")),
    Claim("000", "AMCBF beats EASY for average CPU usage below 95 % (FWorkload, bounded slowdown)", "liu2013_sensitivity", beats_along("workload.cpu_usage", None, "amcbf", "easy", "mean_bsld")),
]


def accepts_more(policy: str, other: str, at: float, claimed: float) -> Callable[[pd.DataFrame], tuple[str, bool]]:
    """Embedder ``policy`` accepts at least ``claimed`` (relative) more than ``other`` at mean
    demand ``at``, paired by seed."""

    def measure(runs: pd.DataFrame) -> tuple[str, bool]:
        runs = _ok(runs)
        runs = runs[runs["workload.bandwidth.mean"] == at]
        a = runs[runs["policy.embedder"] == policy].set_index("seed")["accept_rate"]
        b = runs[runs["policy.embedder"] == other].set_index("seed")["accept_rate"]
        gain = (a / b - 1).dropna()
        if gain.empty:
            return "no cells stored", False
        low, high = t_interval(gain.to_numpy())
        text = f"{policy} {a.mean():.3f} vs {other} {b.mean():.3f}: {100 * gain.mean():+.1f} % [{100 * low:+.1f}, {100 * high:+.1f}]"
        return text, bool(gain.mean() >= claimed)

    return measure


def beats_within(policy: str, baseline: str, metric: str, by: tuple[str, ...]) -> Callable[[pd.DataFrame], tuple[str, bool]]:
    """``policy`` has a lower mean ``metric`` than ``baseline`` in every group of ``by``."""

    def measure(runs: pd.DataFrame) -> tuple[str, bool]:
        runs = _ok(runs)
        table = compare(runs[runs["policy.name"].isin([policy, baseline])], baseline=baseline, metrics=[metric], by=list(by))
        if table.empty:
            return "no cells stored", False
        wins = int((table[f"{metric}_ratio"] < 1).sum())
        ties = int((table[f"{metric}_ratio"] == 1).sum())
        worst = table.loc[table[f"{metric}_ratio"].idxmax()]
        text = (
            f"{metric} {policy}/{baseline} below 1 in {wins} of {len(table)} settings ({ties} ties); "
            f"median ratio {table[f'{metric}_ratio'].median():.2f}, worst {worst[f'{metric}_ratio']:.2f} at "
            + ", ".join(f"{k.split('.')[-1]}={worst[k]}" for k in by)
        )
        return text, wins + ties == len(table) and wins > 0

    return measure


_LI_BY = ("workload.trace", "workload.bandwidth.mean", "workload.load")
CLAIMS += [
    Claim("004", "AdaBa accepts up to 15 % more than Oktopus at 700 Mbps", "li2018_accept", accepts_more("adaba", "oktopus", 700.0, 0.15)),
    Claim("004", "AdaBa accepts more than first fit at 250 Mbps", "li2018_accept", accepts_more("adaba", "firstfit", 250.0, 0.0)),
    Claim("004", "BgMBF beats FCFS on bounded slowdown", "li2018_sched", beats_within("bgmbf", "bw_fcfs", "mean_bsld", _LI_BY)),
    Claim("004", "BgMBFSDF beats BgMBF on bounded slowdown", "li2018_sched", beats_within("bgmbfsdf", "bgmbf", "mean_bsld", _LI_BY)),
]


def selector_order(trace: str, shares: str, metric: str, best: str, lowest: bool) -> Callable[[pd.DataFrame], tuple[str, bool]]:
    """On shared VMs (one seed: the model has no random input): selector ``best`` has the
    lowest (or highest) ``metric`` among the selectors, on ``trace`` with ``shares``."""

    def measure(runs: pd.DataFrame) -> tuple[str, bool]:
        runs = _ok(runs)
        runs = runs[runs["workload.trace"].map(str).str.contains(trace) & (runs["platform.shares"] == shares)]
        runs = runs[runs["workload.load"].isna()]
        if runs.empty:
            return "no cells stored", False
        values = runs.groupby("policy.selector")[metric].mean().sort_values(ascending=lowest)
        text = f"{metric} ({trace}, {shares}): " + ", ".join(f"{k} {v:.3g}" for k, v in values.items())
        return text, values.index[0] == best

    return measure


def shares_lower(metric: str, trace: str) -> Callable[[pd.DataFrame], tuple[str, bool]]:
    """Heterogeneous shares give a lower ``metric`` than homogeneous ones for every selector."""

    def measure(runs: pd.DataFrame) -> tuple[str, bool]:
        runs = _ok(runs)
        runs = runs[runs["workload.trace"].map(str).str.contains(trace) & runs["workload.load"].isna()]
        table = runs.pivot_table(index="policy.selector", columns="platform.shares", values=metric)
        if table.empty or {"homogeneous", "heterogeneous"} - set(table.columns):
            return "no cells stored", False
        text = "; ".join(f"{k}: {row['heterogeneous']:.3f} vs {row['homogeneous']:.3f}" for k, row in table.iterrows())
        return f"{metric} heterogeneous vs homogeneous ({trace}): {text}", bool((table["heterogeneous"] < table["homogeneous"]).all())

    return measure


def _all_efficient(runs: pd.DataFrame, trace: str) -> tuple[str, bool]:
    rows = _ok(runs)
    rows = rows[rows["workload.trace"].map(str).str.contains(trace)]
    if rows.empty:
        return "no cells stored", False
    low = rows["efficiency"].min()
    return f"efficiency over all {len(rows)} {trace} cells: min {low:.4f}, max {rows['efficiency'].max():.4f}", bool(low > 1 - 1e-9)


CLAIMS += [
    Claim("001", "EC reaches the highest efficiency eta with homogeneous shares (Table I)", "delgado_vms", selector_order("CTC", "homogeneous", "efficiency", "ec", lowest=False)),
    Claim("001", "Heterogeneous shares lower the efficiency eta of every selector (Tables I-II)", "delgado_vms", shares_lower("efficiency", "CTC")),
    Claim("001", "Semi-greedy PC-sg beats greedy PC-g on median XF with heterogeneous shares (Table II)", "delgado_vms", selector_order("CTC", "heterogeneous", "median_xf", "pc-sg", lowest=True)),
    Claim("001", "Serial-only workloads run at efficiency 1 (section V)", "delgado_vms", lambda runs: _all_efficient(runs, "LPC")),
]


def _negate(result: tuple[str, bool]) -> tuple[str, bool]:
    return result[0], not result[1]


def measure(results: str | Path) -> list[tuple[Claim, str, bool]]:
    """Each claim whose sweep is stored under ``results``, with its measurement."""
    out = []
    for claim in CLAIMS:
        folder = Path(results) / claim.sweep
        if not (folder / "runs").exists():
            continue
        text, holds = claim.measure(load(folder))
        out.append((claim, text, holds))
    return out


def markdown(results: str | Path) -> str:
    """The claims table in Markdown."""
    lines = ["| paper | claim | measured (95 % interval over seeds) | holds | config |", "|---|---|---|---|---|"]
    for claim, text, holds in measure(results):
        lines.append(f"| {claim.paper} | {claim.text} | {text} | {'yes' if holds else 'no'} | `configs/{claim.sweep}.yaml` |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown(sys.argv[1] if len(sys.argv) > 1 else "results"))
