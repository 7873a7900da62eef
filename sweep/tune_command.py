"""``tiersweep tune``: run or continue a study; print the best parameters beside the baseline."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .study_storage import storage_errors
from .summary import paths_lines
from .tune import run_tuning
from .tune_config import load_tune_config
from .tune_pruning import pruning_summary

__all__ = ["tune_command", "result_table", "param_importances", "IMPORTANCE_TOP_TRIALS", "IN_SAMPLE_NOTE"]

#: Complete trials PED-ANOVA should find in its top group (the number Optuna's documentation
#: asks for to make the estimate stable).
IMPORTANCE_TOP_TRIALS = 5


#: Printed under the table of a study without a held-out check: what its comparison is worth.
IN_SAMPLE_NOTE = (
    "(both on the tuning seeds, where the best was chosen: its gain there is optimistic; "
    "'check: {seeds: N}' runs both on fresh seeds)"
)


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return "n/a" if math.isnan(value) else f"{value:.4g}"
    return str(value)


def result_table(outcome: Any, config: Any) -> str:
    """Best trial(s) and the default-parameter baseline, with objective means and spreads."""
    keys = [p.key for p in config.params]
    metrics = [m for m, _ in config.objectives]
    header = ["", *keys, *(f"{m} (mean ± sd)" for m in metrics)]
    rows = []
    label = "best" if len(metrics) == 1 else "pareto"
    for trial in sorted(outcome.best, key=lambda t: t.values):
        cells = [f"{label} #{trial.number}", *(_fmt(trial.params.get(k)) for k in keys)]
        for i, metric in enumerate(metrics):
            spread = trial.user_attrs.get(f"spread.{metric}", math.nan)
            cells.append(f"{_fmt(trial.values[i])} ± {_fmt(spread)}")
        rows.append(cells)
    base = ["baseline (defaults)", *(_fmt(outcome.baseline_params.get(k)) for k in keys)]
    base += [f"{_fmt(outcome.baseline[m][0])} ± {_fmt(outcome.baseline[m][1])}" for m in metrics]
    rows.append(base)
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip() for r in [header, *rows]]
    return "\n".join([lines[0], "-" * len(lines[0]), *lines[1:]])


def param_importances(study: Any, objectives: Sequence[tuple[str, str]]) -> dict[str, dict[str, float]]:
    """Per objective, each parameter's importance (normalised to sum to 1) over the complete
    trials, by Optuna's PED-ANOVA evaluator; an objective with fewer than three complete trials
    is left out.

    PED-ANOVA rather than fANOVA: it is Optuna's default, needs nothing beyond Optuna (fANOVA
    fits a scikit-learn random forest) and works from few trials, where a forest over a dozen
    points says little. It measures how much each parameter's distribution among the best
    trials differs from its distribution among all of them; the top group is the best 10 % of
    trials, widened to :data:`IMPORTANCE_TOP_TRIALS` trials (at most half) in a small study.
    Pruned trials have no objective and are left out.
    """
    import warnings

    import optuna
    from optuna.importance import PedAnovaImportanceEvaluator, get_param_importances

    complete = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    if len(complete) < 3:
        return {}
    quantile = min(0.5, max(0.1, IMPORTANCE_TOP_TRIALS / len(complete)))
    result = {}
    for i, (metric, direction) in enumerate(objectives):
        sign = 1.0 if direction == "minimize" else -1.0  # (PED-ANOVA ranks a target low-first)
        target = None if len(objectives) == 1 else (lambda t, i=i, sign=sign: sign * t.values[i])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # its notes on small studies and on targets
            importances = get_param_importances(
                study, evaluator=PedAnovaImportanceEvaluator(target_quantile=quantile), target=target
            )
        result[metric] = dict(importances)
    return result


def _summary_lines(outcome: Any, config: Any) -> list[str]:
    """The pruning and parameter-importance lines of the closing summary."""
    lines = []
    cells_per_trial = len(config.seeds) * len(config.variants)
    saved = pruning_summary(outcome.study, cells_per_trial)
    if config.pruner == "none":
        lines.append("pruning: off (every trial ran all its cells)")
    else:
        share = saved.skipped / saved.planned if saved.planned else 0.0
        lines.append(
            f"pruning ({config.pruner}, p < {config.p_threshold:g}): {saved.pruned} trials pruned, "
            f"{saved.skipped} of {saved.planned} cell runs saved ({share:.0%})"
        )
    for metric, importances in param_importances(outcome.study, config.objectives).items():
        shown = ", ".join(f"{key} {value:.2f}" for key, value in importances.items())
        lines.append(f"importance for {metric} (PED-ANOVA, complete trials): {shown}")
    return lines


def tune_command(
    config_path: str,
    *,
    out: str,
    trials: int | None,
    storage: str | None,
    backend: str,
    backend_options: Mapping[str, Any] | None = None,
    plots: Callable[[Any, list[str], Path], dict[str, Path]] | None = None,
    overrides: Sequence[str] = (),
    check_lines: Callable[[Any], list[str]] | None = None,
) -> int:
    """Run the study of a tuning config and print its table; exit status 0.

    Args:
        overrides: ``KEY=VALUE`` overrides of the config's base spec (``--set``).
        plots: Writes the study's plots, ``(study, objective metrics, folder) -> name -> path``
            (the command line passes :func:`tiersweep.analysis.tune_plots.write_tuning_plots`;
            plotting is analysis's, so this package does not import it); None for none.
        check_lines: The lines saying what the held-out check shows, from its
            :class:`~tiersweep.sweep.tune.HeldOutCheck` (the command line passes
            :func:`tiersweep.analysis.tune_check.held_out_lines`: its interval is analysis's).
    """
    config = load_tune_config(config_path, overrides)
    outcome = run_tuning(config, out, backend=backend, backend_options=backend_options, trials=trials, storage=storage)
    with storage_errors(outcome.storage):  # (the study reads its storage for what is printed and plotted)
        _print_outcome(outcome, config, plots, check_lines)
    return 0


def _print_outcome(
    outcome: Any,
    config: Any,
    plots: Callable[[Any, list[str], Path], dict[str, Path]] | None,
    check_lines: Callable[[Any], list[str]] | None,
) -> None:
    """Print the result table, the held-out check, the study's summary and the files written."""
    study = outcome.study
    states: dict[str, int] = {}
    for trial in study.trials:
        states[trial.state.name.lower()] = states.get(trial.state.name.lower(), 0) + 1
    print(result_table(outcome, config))
    if outcome.check is not None and check_lines is not None:
        print()
        for line in check_lines(outcome.check):
            print(line)
    elif outcome.check is None and outcome.best and len(config.objectives) == 1:
        print(IN_SAMPLE_NOTE)
    print(
        f"\nstudy {study.study_name}: {len(study.trials)} trials ("
        + ", ".join(f"{n} {s}" for s, n in sorted(states.items()))
        + f"); {outcome.computed} cells computed now, {outcome.reused} reused from the store"
    )
    for line in _summary_lines(outcome, config):
        print(line)
    for line in paths_lines(outcome.paths):
        print(line)
    print(f"trials: {outcome.files['trials']}")
    if "check" in outcome.files:
        print(f"held-out check: {outcome.files['check']}")
    for note in outcome.notes:
        print(f"note: {note}; see the README's Ray section")
    if plots is not None:
        written = plots(study, [m for m, _ in config.objectives], outcome.root / "plots")
        if written:
            print(f"plots: {', '.join(str(p) for p in written.values())}")
