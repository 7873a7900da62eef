"""The reproduction table: the papers' testable claims measured on the sweeps (REPRODUCTION.md).

``python -m tiersweep.analysis.claims RESULTS_DIR`` prints the headline counts and one Markdown
row per claim (:data:`CLAIMS`): the claim, the paper's words and where they stand, the setting
(the paper's, or ours and why), the model choices the verdict depends on, its kind, the measured
values with their 95 % intervals over seeds, at how many of the settings it holds, the verdict
(or "awaiting a run" where its sweep is not in RESULTS_DIR) and the config that measures it;
then the claims no config can test (:data:`UNTESTABLE`) with the reason.

The rules (one per kind of claim) are in :mod:`tiersweep.analysis.claim_rules`, the measures
that apply them to a sweep's runs in :mod:`tiersweep.analysis.claim_measures`, and the rows, one
module per paper, in ``claims_paper000`` ... ``claims_paper004``.

Where a paper's text and its figures call for different models, the text's model is the
default and the calibrated one (chosen to match the figures) runs beside it as a config axis:
the claim has two rows, the second marked ``calibrated``, and :func:`headline` counts it as
reproduced, reproduced only under a calibrated choice, or not reproduced (:func:`outcomes`).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from ..sweep.points import MixedPointsError
from . import claims_paper000, claims_paper001, claims_paper002, claims_paper003, claims_paper004
from .claim_measures import (
    beats_below,
    easy_pp_beats_easy,
    fewer_migrations,
    gain_point,
    gain_range,
    gain_shrinks,
    level_ratio,
    most_migrations,
    ratio_below,
    vm_ratio,
)
from .claim_rules import (
    KINDS,
    SCOPES,
    Claim,
    Estimate,
    Untestable,
    Verdict,
    comparison_wins,
    holds_in_scope,
    point_holds,
    range_holds,
    ratio_estimates,
    threshold_holds,
)
from .load import load

__all__ = [
    "Claim",
    "CLAIMS",
    "Untestable",
    "UNTESTABLE",
    "OUTCOMES",
    "outcomes",
    "headline",
    "Verdict",
    "Estimate",
    "KINDS",
    "SCOPES",
    "measure",
    "markdown",
    "run_table",
    # The rules and measures, importable from here as well (see the module docstring).
    "holds_in_scope",
    "comparison_wins",
    "point_holds",
    "range_holds",
    "threshold_holds",
    "ratio_estimates",
    "ratio_below",
    "fewer_migrations",
    "gain_point",
    "gain_range",
    "beats_below",
    "level_ratio",
    "gain_shrinks",
    "most_migrations",
    "vm_ratio",
    "easy_pp_beats_easy",
]

_PAPERS = (claims_paper000, claims_paper001, claims_paper002, claims_paper003, claims_paper004)

#: Every row of the table, paper by paper.
CLAIMS: list[Claim] = [row for paper in _PAPERS for row in paper.ROWS]

#: Claims of papers 000-004 that no config here can test, each with the reason.
UNTESTABLE: list[Untestable] = [entry for paper in _PAPERS for entry in getattr(paper, "UNTESTABLE", ())]


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
    lines += ["", "The runs the table reads:", "", *run_table(results)]
    return "\n".join(lines)


def run_table(results: str | Path) -> list[str]:
    """Markdown rows of the sweeps the claims read, as stored under ``results``: cells, seeds, the
    cells' summed compute time (one worker: about the sweep's wall time) and the hosts."""
    lines = [
        "| config | cells (failed) | seeds | cell time, summed | host |",
        "|---|---|---|---|---|",
    ]
    for sweep in dict.fromkeys(claim.sweep for claim in CLAIMS):
        folder = Path(results) / sweep
        if not (folder / "runs").exists():
            lines.append(f"| `configs/{sweep}.yaml` | not run | | | |")
            continue
        runs = load(folder, code_digest="latest")
        failed = int((runs["status"] != "ok").sum())
        minutes = float(runs["wall_seconds"].astype(float).sum()) / 60
        hosts = ", ".join(sorted(runs["host"].astype(str).unique()))
        seeds = runs["seed"].nunique()
        lines.append(f"| `configs/{sweep}.yaml` | {len(runs):,} ({failed}) | {seeds} | {minutes:.1f} min | {hosts} |")
    return lines


if __name__ == "__main__":
    print(markdown(sys.argv[1] if len(sys.argv) > 1 else "results"))
