"""PNG plots of a study: optimisation history, parameter importances, a slice of the
objective against each parameter, and for two objectives the Pareto front."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

__all__ = ["write_tuning_plots"]


def write_tuning_plots(study: Any, metrics: list[str], folder: Path) -> dict[str, Path]:
    """Write the plots the study supports into ``folder``; return name -> path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import optuna
    from optuna.visualization import matplotlib as plots

    folder.mkdir(parents=True, exist_ok=True)
    complete = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    if not complete:
        return {}
    written: dict[str, Path] = {}

    def save(name: str, draw) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # optuna marks its matplotlib plots experimental
            try:
                result = draw()
            except (ValueError, RuntimeError, ZeroDivisionError):
                return  # not enough trials or variation for this plot
        axes = list(result.flat) if hasattr(result, "flat") else [result]
        figure = axes[0].figure
        # Room for every panel and the colour bar optuna adds on the right.
        figure.set_size_inches(max(6.5, 4.2 * len(axes) + 1.5), 4.5)
        path = folder / f"{name}.png"
        figure.savefig(path, dpi=110, bbox_inches="tight")
        plt.close(figure)
        written[name] = path

    objectives = list(enumerate(metrics))
    for i, metric in objectives:
        target = (lambda t, i=i: t.values[i]) if len(metrics) > 1 else None
        suffix = f"_{metric}" if len(metrics) > 1 else ""
        save(f"history{suffix}", lambda: plots.plot_optimization_history(study, target=target, target_name=metric))
        if len(complete) > 1 and len(study.best_trials if len(metrics) > 1 else [0]) and len(complete[0].params) > 1:
            save(f"importances{suffix}", lambda: plots.plot_param_importances(study, target=target, target_name=metric))
        save(f"slice{suffix}", lambda: plots.plot_slice(study, target=target, target_name=metric))
    if len(metrics) == 2:
        save("pareto_front", lambda: plots.plot_pareto_front(study, target_names=metrics))
    return written
