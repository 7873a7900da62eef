"""The papers' testable claims, measured on reproduction sweeps (the data of REPRODUCTION.md).

``python -m tiersweep.analysis.claims RESULTS_DIR`` prints one Markdown row per claim whose
sweep is in RESULTS_DIR: the claim, the measured values with their 95 % intervals over seeds,
at how many of the settings it holds, the verdict and the config that produced it.

How strict a verdict is, and why:

* **An effect counts only where its 95 % interval excludes no effect.** A ratio of two
  policies' metric (paired by seed, geometric mean, interval on the log scale: see
  :func:`tiersweep.analysis.stats.ratio_interval`) is a win only when the whole interval is
  below 1 (a loss: above 1); a difference (migrations per job) only when the whole interval
  is below 0. A tie, or an interval that straddles no effect, is not a win.
* **Claims over a range of settings say "holds at k of n"**, and the verdict follows the
  paper's own scope: an unqualified claim ("outperforms") must hold at every setting; "in
  most cases" at a majority of them; a bound such as "below 95 %" is taken exclusively.
* **One reading per claim**, stated in its text: the utilisation gains are relative (percent
  of EASY's utilisation), never "points or percent, whichever passes".
* A deterministic model (paper 001's, one seed) has no interval: its claims compare values.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from .load import load
from ..sweep.points import MixedPointsError, check_points
from .stats import compare, t_interval

__all__ = ["Claim", "CLAIMS", "Verdict", "measure", "markdown", "holds_in_scope", "SCOPES"]

#: A claim's scope over its settings: how many of them it must hold at.
SCOPES = {
    "all": "every setting",
    "most": "a majority of the settings",
    "any": "at least one setting",
}


@dataclass(frozen=True)
class Verdict:
    """A claim measured: the text of the values, at how many settings it held, the verdict."""

    text: str
    held: int
    settings: int
    holds: bool


@dataclass(frozen=True)
class Claim:
    """A claim of a paper and how to measure it on a sweep's runs."""

    paper: str
    text: str
    sweep: str
    measure: Callable[[pd.DataFrame], Verdict]


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


def _verdict(parts: list[str], wins: list[bool], scope: str) -> Verdict:
    held = sum(wins)
    return Verdict("; ".join(parts), held, len(wins), holds_in_scope(held, len(wins), scope))


def _ok(runs: pd.DataFrame) -> pd.DataFrame:
    return runs[runs["status"] == "ok"]


def _interval(low: float, high: float) -> str:
    return f"[{low:.2f}, {high:.2f}]"


def _ratio_rows(runs: pd.DataFrame, policy: str, baseline: str, metric: str, by: Sequence[str]) -> pd.DataFrame:
    table = compare(runs[runs["policy.name"].isin([policy, baseline])], baseline=baseline, metrics=[metric], by=list(by))
    return table[table["policy.name"] == policy].sort_values(list(by)) if not table.empty else table


def _setting(row: pd.Series, by: Sequence[str]) -> str:
    """``load 0.8, trace KTH-SP2``: each key's last part and its value (a trace by its log's name)."""
    parts = []
    for key in by:
        value = row[key]
        if key.endswith("trace"):
            value = "-".join(Path(str(value)).name.split("-")[:2])
        parts.append(f"{key.split('.')[-1]} {value:g}" if isinstance(value, float) else f"{key.split('.')[-1]} {value}")
    return ", ".join(parts)


def ratio_below(
    policies: Sequence[str], baseline: str, metrics: Sequence[str], *, scope: str = "all", worse: bool = False, by: Sequence[str] = ("workload.load",)
) -> Callable[[pd.DataFrame], Verdict]:
    """Each of ``policies`` beats ``baseline`` on each metric (ratio interval entirely below
    1; with ``worse``, entirely above 1) at the settings of ``by``; every (policy, metric,
    setting) is one setting of the scope."""

    def measure(runs: pd.DataFrame) -> Verdict:
        parts, wins = [], []
        for policy in policies:
            for metric in metrics:
                table = _ratio_rows(_ok(runs), policy, baseline, metric, by)
                if table.empty:
                    parts.append(f"{metric} {policy}/{baseline}: no cells stored")
                    wins.append(False)
                    continue
                cells = []
                for _, row in table.iterrows():
                    low, high = row[f"{metric}_ci_low"], row[f"{metric}_ci_high"]
                    won = bool(low > 1) if worse else bool(high < 1)
                    wins.append(won)
                    cells.append(f"{_setting(row, by)}: {row[f'{metric}_ratio']:.2f} {_interval(low, high)}{'' if won else ' (x)'}")
                parts.append(f"{metric} {policy}/{baseline}: " + ", ".join(cells))
        return _verdict(parts, wins, scope)

    return measure


def fewer_migrations(policy: str, other: str, *, scope: str = "all") -> Callable[[pd.DataFrame], Verdict]:
    """``policy`` migrates less per job than ``other``: the paired difference's interval is
    entirely below 0, at each load."""

    def measure(runs: pd.DataFrame) -> Verdict:
        runs = _ok(runs)
        check_points(runs, ["workload.load", "policy.name"], "claim")
        parts, wins = [], []
        for load_value, group in runs.groupby("workload.load"):
            a = group[group["policy.name"] == policy].set_index("seed")["migrations_per_job"]
            b = group[group["policy.name"] == other].set_index("seed")["migrations_per_job"]
            diff = (a - b).dropna()
            low, high = t_interval(diff.to_numpy())
            won = bool(high < 0)
            wins.append(won)
            parts.append(f"load {load_value:g}: {a.mean():.3f} vs {b.mean():.3f} (diff [{low:.3f}, {high:.3f}]){'' if won else ' (x)'}")
        return _verdict(parts, wins, scope)

    return measure


def utilisation_gain(policy: str, baseline: str, claimed_percent: float, *, at_load: float | None = None) -> Callable[[pd.DataFrame], Verdict]:
    """The relative utilisation gain of ``policy`` over ``baseline`` (percent of the
    baseline's utilisation, paired by seed; the one reading we test), at each load or only at
    ``at_load``.

    "Up to X %" holds when the largest gain is significant (its interval above 0) and its
    interval reaches X (its upper end at least X): our measurement is then consistent with a
    gain of X. Each load where the gain is significant counts as a setting where it held.
    """

    def measure(runs: pd.DataFrame) -> Verdict:
        runs = _ok(runs)
        if at_load is not None:
            runs = runs[np.isclose(runs["workload.load"].astype(float), at_load)]
        table = _ratio_rows(runs, policy, baseline, "utilization", ("workload.load",))
        if table.empty:
            return Verdict("no cells stored", 0, 0, False)
        parts, wins = [], []
        for _, row in table.iterrows():
            gain, low, high = (100 * (row[f"utilization_{k}"] - 1) for k in ("ratio", "ci_low", "ci_high"))
            wins.append(bool(low > 0))
            parts.append(f"load {row['workload.load']:g}: {gain:+.2f} % [{low:+.2f}, {high:+.2f}]")
        best = table.loc[table["utilization_ratio"].idxmax()]
        best_low, best_high = 100 * (best["utilization_ci_low"] - 1), 100 * (best["utilization_ci_high"] - 1)
        holds = best_low > 0 and best_high >= claimed_percent
        parts.append(f"claimed {claimed_percent:g} % (relative)")
        return Verdict("; ".join(parts), sum(wins), len(wins), bool(holds))

    return measure


def ratio_below_at(axis: str, value: float | None, policy: str, baseline: str, metric: str, *, scope: str = "most", below: float | None = None) -> Callable[[pd.DataFrame], Verdict]:
    """Section 5.4's one-factor studies: ``policy`` beats ``baseline`` on ``metric`` across
    the loads, where ``axis`` is ``value`` (or, with ``below``, at every value of the axis
    whose mean is below it, each (value, load) a setting); the other factors at their defaults."""

    def measure(runs: pd.DataFrame) -> Verdict:
        runs = _ok(runs)
        for other, default in SENSITIVITY_DEFAULTS.items():
            if other != axis and other in runs.columns:
                runs = runs[runs[other].astype(str) == default]
        runs = runs.copy()
        if below is None:
            runs = runs[np.isclose(runs[axis].astype(float), value)]
        else:
            runs = runs[runs[axis].map(_mean_of) < below]
        runs[axis] = runs[axis].astype(str)
        return ratio_below([policy], baseline, [metric], scope=scope, by=(axis, "workload.load"))(runs)

    return measure


def _mean_of(value: object) -> float:
    """The mean of a U(low, high) range given as text or a list (``[0.4, 1.0]`` -> 0.7)."""
    if isinstance(value, str):
        value = json.loads(value)
    return float(np.mean(value))


#: The factors of ``liu2013_sensitivity`` at their default values (as stored).
SENSITIVITY_DEFAULTS = {"platform.migration_cost": "20.0", "workload.cpu_accuracy": "1.0", "workload.cpu_usage": "[0.4, 1.0]"}

_RT_BSLD = ("mean_response", "mean_bsld")  # paper 000: rpt = mean of finish - arrival
CLAIMS: list[Claim] = [
    Claim("000", "CMCBF and AMCBF outperform EASY on response time and bounded slowdown at every load (FWorkload)", "liu2013_fworkload", ratio_below(("cmcbf", "amcbf"), "easy", _RT_BSLD)),
    Claim("000", "CMCBF and AMCBF outperform EASY on response time and bounded slowdown at every load (JWorkload)", "liu2013_jworkload", ratio_below(("cmcbf", "amcbf"), "easy", _RT_BSLD)),
    Claim("000", "CMBF and AMBF are worse than EASY on response time and bounded slowdown (FWorkload)", "liu2013_fworkload", ratio_below(("cmbf", "ambf"), "easy", _RT_BSLD, worse=True)),
    Claim("000", "CMBF and AMBF are worse than EASY on response time and bounded slowdown (JWorkload)", "liu2013_jworkload", ratio_below(("cmbf", "ambf"), "easy", _RT_BSLD, worse=True)),
    Claim("000", "AMBF beats CMBF on response time and bounded slowdown (FWorkload)", "liu2013_fworkload", ratio_below(("ambf",), "cmbf", _RT_BSLD)),
    Claim("000", "AMBF beats CMBF on response time and bounded slowdown (JWorkload)", "liu2013_jworkload", ratio_below(("ambf",), "cmbf", _RT_BSLD)),
    Claim("000", "AMBF needs fewer migrations than CMBF (FWorkload)", "liu2013_fworkload", fewer_migrations("ambf", "cmbf")),
    Claim("000", "AMBF needs fewer migrations than CMBF (JWorkload)", "liu2013_jworkload", fewer_migrations("ambf", "cmbf")),
    Claim("000", "AMCBF needs slightly fewer migrations than CMCBF (FWorkload)", "liu2013_fworkload", fewer_migrations("amcbf", "cmcbf")),
    Claim("000", "AMCBF needs slightly fewer migrations than CMCBF (JWorkload)", "liu2013_jworkload", fewer_migrations("amcbf", "cmcbf")),
    Claim("000", "Utilisation gain of AMCBF over EASY up to 2.4 % (FWorkload)", "liu2013_fworkload", utilisation_gain("amcbf", "easy", 2.4)),
    Claim("000", "Utilisation gain of AMCBF over EASY up to 3.1 % (JWorkload)", "liu2013_jworkload", utilisation_gain("amcbf", "easy", 3.1)),
    Claim("000", "Saturation utilisation gain of AMCBF over EASY: 11 % (FWorkload)", "liu2013_saturation_f", utilisation_gain("amcbf", "easy", 11.0)),
    Claim("000", "Saturation utilisation gain of AMCBF over EASY: 16 % (JWorkload)", "liu2013_saturation_j", utilisation_gain("amcbf", "easy", 16.0)),
    Claim("000", "At 600 s migration cost AMCBF still beats EASY in most cases (FWorkload, bounded slowdown, loads 0.5-1.0)", "liu2013_sensitivity", ratio_below_at("platform.migration_cost", 600.0, "amcbf", "easy", "mean_bsld")),
    Claim("000", "Without CPU-usage information AMCBF beats EASY in most cases (accuracy 0, bounded slowdown, loads 0.5-1.0)", "liu2013_sensitivity", ratio_below_at("workload.cpu_accuracy", 0.0, "amcbf", "easy", "mean_bsld")),
    Claim("000", "For average CPU usage below 95 % AMCBF beats EASY in most cases (FWorkload, bounded slowdown, loads 0.5-1.0)", "liu2013_sensitivity", ratio_below_at("workload.cpu_usage", None, "amcbf", "easy", "mean_bsld", below=0.95)),
]


def accepts_more(policy: str, others: Sequence[str], *, at: float | None = None, claimed: float | None = None, scope: str = "all") -> Callable[[pd.DataFrame], Verdict]:
    """Embedder ``policy`` accepts more jobs than each of ``others`` (paired by seed, ratio
    interval entirely above 1) at each mean demand (or only at ``at``); with ``claimed``, the
    largest gain's interval must also reach that relative gain (0.15: 15 % more)."""

    def measure(runs: pd.DataFrame) -> Verdict:
        runs = _ok(runs)
        demand = "workload.bandwidth.mean"
        if at is not None:
            runs = runs[runs[demand] == at]
        parts, wins, best_high = [], [], -np.inf
        for other in others:
            table = compare(runs, baseline=other, metrics=["accept_rate"], by=[demand], policy="policy.embedder")
            if table.empty:
                continue
            for _, row in table[table["policy.embedder"] == policy].sort_values(demand).iterrows():
                mean, low, high = (row[f"accept_rate_{k}"] for k in ("ratio", "ci_low", "ci_high"))
                won = bool(low > 1)
                wins.append(won)
                best_high = max(best_high, high) if np.isfinite(high) else best_high
                gain = f"{100 * (mean - 1):+.1f} % [{100 * (low - 1):+.1f}, {100 * (high - 1):+.1f}]"
                parts.append(f"{policy}/{other} at {row[demand]:g} Mbps: {gain}{'' if won else ' (x)'}")
        if not wins:
            return Verdict("no cells stored", 0, 0, False)
        verdict = _verdict(parts, wins, scope)
        if claimed is not None and not best_high - 1 >= claimed:
            return Verdict(verdict.text + f"; claimed +{100 * claimed:g} % not reached", verdict.held, verdict.settings, False)
        return verdict

    return measure


_LI_BY = ("workload.trace", "workload.bandwidth.mean", "workload.load")
_EMBEDDERS = ("oktopus", "greedy", "bestfit", "firstfit")
CLAIMS += [
    Claim("004", "AdaBa accepts up to 15 % more than Oktopus at 700 Mbps", "li2018_accept", accepts_more("adaba", ("oktopus",), at=700.0, claimed=0.15)),
    Claim("004", "AdaBa accepts more than first fit at 250 Mbps", "li2018_accept", accepts_more("adaba", ("firstfit",), at=250.0)),
    Claim("004", "AdaBa accepts the most jobs in every setting (against each other embedder, every demand)", "li2018_accept", accepts_more("adaba", _EMBEDDERS)),
    Claim("004", "BgMBF beats FCFS on bounded slowdown in every setting", "li2018_sched", ratio_below(("bgmbf",), "bw_fcfs", ("mean_bsld",), by=_LI_BY)),
    Claim("004", "BgMBFSDF beats BgMBF on bounded slowdown in every setting", "li2018_sched", ratio_below(("bgmbfsdf",), "bgmbf", ("mean_bsld",), by=_LI_BY)),
]


def _deterministic(runs: pd.DataFrame, trace: str) -> pd.DataFrame:
    runs = _ok(runs)
    runs = runs[runs["workload.trace"].map(str).str.contains(trace)]
    return runs[runs["workload.load"].isna()] if "workload.load" in runs.columns else runs


#: The two selectors of paper 001's CTC figures (section V-E: "both algorithms", PCFC and PC-sg).
_CTC_SELECTORS = ("pc-sg", "pcfc-sg")


def near(metric: str, trace: str, shares: str, low: float, high: float, selectors: Sequence[str] = _CTC_SELECTORS) -> Callable[[pd.DataFrame], Verdict]:
    """Each of ``selectors``' ``metric`` on ``trace`` with ``shares`` lies in ``[low, high]``
    (the paper's reported figure with the tolerance its wording allows: "about", a range)."""

    def measure(runs: pd.DataFrame) -> Verdict:
        runs = _deterministic(runs, trace)
        runs = runs[(runs["platform.shares"] == shares) & runs["policy.selector"].isin(selectors)]
        if runs.empty:
            return Verdict("no cells stored", 0, 0, False)
        check_points(runs, ["policy.selector"], "claim")
        values = runs.groupby("policy.selector")[metric].mean()
        wins = [bool(low <= v <= high) for v in values]
        parts = [f"{metric} ({trace}, {shares}) in [{low:g}, {high:g}]"] + [f"{k} {v:.3f}" for k, v in values.items()]
        return _verdict(parts, wins, "all")

    return measure


def shares_ratio(metric: str, trace: str, low: float, high: float, selectors: Sequence[str] = _CTC_SELECTORS) -> Callable[[pd.DataFrame], Verdict]:
    """Heterogeneous over homogeneous ``metric`` lies in ``[low, high]`` for each of
    ``selectors`` (paper 001: makespan "roughly doubled", median XF "nearly twice")."""

    def measure(runs: pd.DataFrame) -> Verdict:
        runs = _deterministic(runs, trace)
        runs = runs[runs["policy.selector"].isin(selectors)]
        check_points(runs, ["policy.selector", "platform.shares"], "claim")
        table = runs.pivot_table(index="policy.selector", columns="platform.shares", values=metric)
        if table.empty or {"homogeneous", "heterogeneous"} - set(table.columns):
            return Verdict("no cells stored", 0, 0, False)
        ratios = table["heterogeneous"] / table["homogeneous"]
        wins = [bool(low <= r <= high) for r in ratios]
        parts = [f"{metric} heterogeneous/homogeneous ({trace}) in [{low:g}, {high:g}]"] + [f"{k} {r:.2f}" for k, r in ratios.items()]
        return _verdict(parts, wins, "all")

    return measure


def _all_efficient(runs: pd.DataFrame) -> Verdict:
    rows = _ok(runs)
    rows = rows[rows["workload.trace"].map(str).str.contains("LPC")]
    if rows.empty:
        return Verdict("no cells stored", 0, 0, False)
    wins = [bool(v > 1 - 1e-9) for v in rows["efficiency"]]
    return _verdict([f"efficiency over {len(rows)} LPC cells: min {rows['efficiency'].min():.4f}"], wins, "all")


# Paper 001's Tables I and II are the Grid'5000 trace, which is not available (LPC-EGEE, all
# serial, stands in for its serial-only claim); its CTC-SP2 claims are section V-E's figures.
CLAIMS += [
    Claim("001", "CTC, PC-sg and PCFC-sg, homogeneous shares: efficiency about 98 % (section V-E; taken as 0.96-1.00)", "delgado_vms", near("efficiency", "CTC", "homogeneous", 0.96, 1.0)),
    Claim("001", "CTC, PC-sg and PCFC-sg, heterogeneous shares: efficiency 56-58 % (section V-E; taken as 0.53-0.61)", "delgado_vms", near("efficiency", "CTC", "heterogeneous", 0.53, 0.61)),
    Claim("001", "CTC, PC-sg and PCFC-sg: heterogeneous shares roughly double the makespan (section V-E; taken as 1.5-2.5x)", "delgado_vms", shares_ratio("makespan", "CTC", 1.5, 2.5)),
    Claim("001", "CTC, PC-sg and PCFC-sg: heterogeneous shares nearly double the median XF (section V-E; taken as 1.5-2.5x)", "delgado_vms", shares_ratio("median_xf", "CTC", 1.5, 2.5)),
    Claim("001", "Serial-only workloads run at efficiency 1 (section V)", "delgado_vms", _all_efficient),
]


def measure(results: str | Path) -> list[tuple[Claim, Verdict]]:
    """Each claim whose sweep is stored under ``results``, with its verdict."""
    out = []
    for claim in CLAIMS:
        folder = Path(results) / claim.sweep
        if not (folder / "runs").exists():
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


def markdown(results: str | Path) -> str:
    """The claims table in Markdown; a setting that did not hold is marked (x)."""
    lines = [
        "| paper | claim | measured (95 % interval over seeds; (x): not held there) | held at | holds | config |",
        "|---|---|---|---|---|---|",
    ]
    for claim, verdict in measure(results):
        lines.append(
            f"| {claim.paper} | {claim.text} | {verdict.text} | {verdict.held} of {verdict.settings} | "
            f"{'yes' if verdict.holds else 'no'} | `configs/{claim.sweep}.yaml` |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown(sys.argv[1] if len(sys.argv) > 1 else "results"))
