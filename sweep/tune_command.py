"""``tiersweep tune``: run or continue a study; print the best parameters beside the baseline."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from .study_storage import storage_errors
from .tune import run_tuning
from .tune_config import load_tune_config

__all__ = ["tune_command", "result_table"]


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
) -> int:
    """Run the study of a tuning config and print its table; exit status 0.

    Args:
        overrides: ``KEY=VALUE`` overrides of the config's base spec (``--set``).
        plots: Writes the study's plots, ``(study, objective metrics, folder) -> name -> path``
            (the command line passes :func:`tiersweep.analysis.tune_plots.write_tuning_plots`;
            plotting is analysis's, so this package does not import it); None for none.
    """
    config = load_tune_config(config_path, overrides)
    outcome = run_tuning(config, out, backend=backend, backend_options=backend_options, trials=trials, storage=storage)
    with storage_errors(outcome.storage):  # (the study reads its storage for what is printed and plotted)
        _print_outcome(outcome, config, plots)
    return 0


def _print_outcome(outcome: Any, config: Any, plots: Callable[[Any, list[str], Path], dict[str, Path]] | None) -> None:
    """Print the result table, the study's summary and the files written."""
    study = outcome.study
    states: dict[str, int] = {}
    for trial in study.trials:
        states[trial.state.name.lower()] = states.get(trial.state.name.lower(), 0) + 1
    print(result_table(outcome, config))
    print(
        f"\nstudy {study.study_name}: {len(study.trials)} trials ("
        + ", ".join(f"{n} {s}" for s, n in sorted(states.items()))
        + f"); {outcome.computed} cells computed now, {outcome.reused} reused from the store"
    )
    print(f"trials: {outcome.files['trials']}")
    for note in outcome.notes:
        print(f"note: {note}; see the README's Ray section")
    if plots is not None:
        written = plots(study, [m for m, _ in config.objectives], outcome.root / "plots")
        if written:
            print(f"plots: {', '.join(str(p) for p in written.values())}")
