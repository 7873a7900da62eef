"""The rules that turn a claim's measurements into a verdict: one rule per kind of claim.

Every claim of the reproduction table (:mod:`tiersweep.analysis.claims`) is of one of four kinds
(:data:`KINDS`), and each kind has one rule, written once here and in REPRODUCTION.md:

* **comparison** ("A beats B", :func:`comparison_wins`): at a setting, A beats B only where the
  whole 95 % interval of the effect lies past no effect (a ratio of the two policies' metric,
  paired by seed, on the log scale: entirely below 1, or above 1 for "worse"; a difference:
  entirely below 0). The claim must hold at every setting, unless the paper's own scope word says
  otherwise ("in most cases": a strict majority; :func:`holds_in_scope`).
* **point** ("11 %", :func:`point_holds`): the interval must overlap the stated value widened by
  the tolerance stated in the claim's row, on both sides: too high fails as too low does.
* **range** ("up to X %", :func:`range_holds`): the best setting's interval reaches X within the
  tolerance, and no setting exceeds X beyond it (no interval lies wholly above X + tolerance).
* **threshold** ("below 95 %", "up to 360 s", :func:`threshold_holds`): the effect is judged per
  level of the factor (by the comparison rule, in the paper's scope over the other settings), and
  the crossover lies where the paper puts it: it holds at every level on the paper's side of the
  threshold and at none on the other side.

A setting where every seed gives the same value (the seeds do not reach the model there, or a
deterministic model such as paper 001's) has no interval: :func:`ratio_estimates` reports it as
deterministic (an :class:`Estimate` whose interval is its value), and the rule reads the value
itself. Relative gains are read one way only: percent of the baseline's value, from the ratio's
interval (:func:`as_gain`), so a positive quantity's interval stays positive.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .stats import compare

__all__ = [
    "SCOPES",
    "KINDS",
    "Verdict",
    "Claim",
    "Untestable",
    "Estimate",
    "Measure",
    "holds_in_scope",
    "comparison_wins",
    "point_holds",
    "range_holds",
    "threshold_holds",
    "verdict_of",
    "ok_runs",
    "setting_label",
    "ratio_estimates",
    "as_gain",
]

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


# -- estimates: paired ratios, deterministic settings ----------------------------------------


def verdict_of(parts: list[str], wins: list[bool], scope: str) -> Verdict:
    """A claim's verdict from its settings' texts and outcomes, judged in ``scope``."""
    held = sum(wins)
    return Verdict("; ".join(parts), held, len(wins), holds_in_scope(held, len(wins), scope))


def ok_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs that finished (a failed cell has no metrics to read)."""
    return runs[runs["status"] == "ok"]


def setting_label(row: pd.Series, by: Sequence[str]) -> str:
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
    runs = ok_runs(runs)
    pair = runs[runs[column].isin([policy, baseline])]
    table = compare(pair, baseline=baseline, metrics=[metric], by=list(by), policy=column)
    if table.empty:
        return []
    table = table[table[column] == policy].sort_values(list(by))
    out = []
    for _, row in table.iterrows():
        value, low, high = (float(row[f"{metric}_{k}"]) for k in ("ratio", "ci_low", "ci_high"))
        same = _same_everywhere(runs, row, by, column, (policy, baseline), metric)
        out.append(Estimate(setting_label(row, by), value, value if same else low, value if same else high, same))
    return out


def as_gain(estimate: Estimate) -> Estimate:
    """A ratio as a relative gain in percent of the baseline (100 (r - 1))."""
    return Estimate(
        estimate.setting,
        100 * (estimate.value - 1),
        100 * (estimate.low - 1),
        100 * (estimate.high - 1),
        estimate.deterministic,
    )


#: How a claim is measured: the runs of its sweep to its verdict.
Measure = Callable[[pd.DataFrame], Verdict]
