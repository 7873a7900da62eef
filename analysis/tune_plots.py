"""PNG plots of a study: optimisation history, parameter importances, a slice of the
objective against each parameter, and for two objectives the Pareto front.

The history shows each trial's objective with its spread over seeds (the ``spread.<metric>``
trial attribute the tuner records: the standard deviation over the trial's cells) as an error
bar, the best value so far, and the baseline (the parameters at their spec defaults) as a
reference line with its own spread as a band, so that a gain smaller than the noise reads as
such. A trial the pruner stopped has no objective value; it is drawn as a cross at the mean of
the cells it did run (its intermediate values), so the history shows where the pruner cut.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..core.safe_files import save_figure
from .plots import LABELS, spans_decades

__all__ = ["write_tuning_plots", "plot_history", "enqueued_baseline"]


def enqueued_baseline(study: Any, metrics: list[str]) -> dict[str, tuple[float, float]]:
    """Per objective, ``(mean, spread)`` of the baseline trial: the first complete trial the
    tuner enqueued with fixed parameters (``tiersweep tune`` enqueues the spec defaults as
    trial 0 when they lie in the search space). Empty when there is none."""
    import optuna

    for trial in sorted(study.trials, key=lambda t: t.number):
        if trial.state == optuna.trial.TrialState.COMPLETE and "fixed_params" in trial.system_attrs:
            return {
                metric: (float(trial.values[i]), float(trial.user_attrs.get(f"spread.{metric}", math.nan)))
                for i, metric in enumerate(metrics)
            }
    return {}


def plot_history(study: Any, metric: str, *, index: int = 0, baseline: tuple[float, float] | None = None) -> Any:
    """The optimisation history of objective ``index`` (named ``metric``): each complete
    trial's mean with its spread over seeds as an error bar, the best so far, and ``baseline``
    ``(mean, spread)`` as a dashed line with a band of one spread either side; pruned trials
    as crosses at the mean of the cells they ran (not counted in the best so far). Returns the
    matplotlib axes (the caller saves and closes the figure)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import optuna

    complete = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    pruned = [t for t in study.trials if t.state == optuna.trial.TrialState.PRUNED and t.intermediate_values]
    minimize = study.directions[index].name == "MINIMIZE"
    fig, ax = plt.subplots(figsize=(8, 4.5))
    numbers = np.array([t.number for t in complete])
    values = np.array([t.values[index] for t in complete], dtype=float)
    spread = np.array([t.user_attrs.get(f"spread.{metric}", math.nan) for t in complete], dtype=float)
    spread = np.nan_to_num(spread)
    partial = np.array([np.mean(list(t.intermediate_values.values())) for t in pruned], dtype=float)
    shown = np.concatenate([values, partial, [baseline[0]] if baseline else []])
    log = spans_decades(shown)
    low = values - spread
    if log:  # an error bar reaching zero would hide the point on a log axis
        low = np.where(low > 0, low, values)
    ax.errorbar(
        numbers,
        values,
        yerr=np.vstack([values - low, spread]),
        fmt="o",
        color="0.3",
        ecolor="0.55",
        markersize=4,
        capsize=2,
        linewidth=0.8,
        label="trial: mean ± sd over seeds",
    )
    if len(pruned):
        ax.plot(
            [t.number for t in pruned],
            partial,
            "x",
            color="tab:red",
            markersize=5,
            label=f"pruned ({len(pruned)}): mean of the cells it ran",
        )
    best = (np.minimum if minimize else np.maximum).accumulate(values)
    ax.step(numbers, best, where="post", color="black", linewidth=1.4, label="best so far")
    if baseline is not None and math.isfinite(baseline[0]):
        mean, sd = baseline
        sd = sd if math.isfinite(sd) else 0.0
        ax.axhline(
            mean, color="black", linestyle="--", linewidth=1.0, label=f"baseline (defaults): {mean:.4g} ± {sd:.4g}"
        )
        if sd > 0:
            ax.axhspan(
                max(mean - sd, mean / 10) if log else mean - sd,
                mean + sd,
                color="0.8",
                alpha=0.5,
                zorder=0,
                linewidth=0,
            )
    if log:
        ax.set_yscale("log")
    ax.set_xlabel("trial")
    ax.set_ylabel(LABELS.get(metric, metric) + (" (log scale)" if log else ""))
    ax.set_title(f"optimisation history: {metric} ({'minimise' if minimize else 'maximise'})", loc="left")
    ax.grid(True, color="0.88", linewidth=0.6)
    ax.legend(fontsize=8, loc="best")
    return ax


def write_tuning_plots(
    study: Any,
    metrics: list[str],
    folder: Path,
    *,
    baseline: Mapping[str, tuple[float, float]] | None = None,
) -> dict[str, Path]:
    """Write the plots the study supports into ``folder``; return name -> path.

    Args:
        metrics: The study's objectives, in order.
        baseline: Per objective, ``(mean, spread over seeds)`` with the parameters at their
            spec defaults, drawn in the history plot; default :func:`enqueued_baseline`.
    """
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

    def save(name: str, draw, resize: bool = True) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # optuna marks its matplotlib plots experimental
            try:
                result = draw()
            except (ValueError, RuntimeError, ZeroDivisionError):
                return  # not enough trials or variation for this plot
        axes = list(result.flat) if hasattr(result, "flat") else [result]
        figure = axes[0].figure
        if resize:  # room for every panel and the colour bar optuna adds on the right
            figure.set_size_inches(max(6.5, 4.2 * len(axes) + 1.5), 4.5)
        path = folder / f"{name}.png"
        save_figure(figure, path, dpi=110, bbox_inches="tight")
        plt.close(figure)
        written[name] = path

    if baseline is None:
        baseline = enqueued_baseline(study, metrics)
    objectives = list(enumerate(metrics))
    for i, metric in objectives:
        target = (lambda t, i=i: t.values[i]) if len(metrics) > 1 else None
        suffix = f"_{metric}" if len(metrics) > 1 else ""
        save(
            f"history{suffix}",
            lambda: plot_history(study, metric, index=i, baseline=baseline.get(metric)),  # noqa: B023 (called at once)
            resize=False,
        )
        if len(complete) > 1 and len(study.best_trials if len(metrics) > 1 else [0]) and len(complete[0].params) > 1:
            save(
                f"importances{suffix}",
                lambda: plots.plot_param_importances(study, target=target, target_name=metric),  # noqa: B023 (called at once)
            )
        save(f"slice{suffix}", lambda: plots.plot_slice(study, target=target, target_name=metric))  # noqa: B023 (called at once)
    if len(metrics) == 2:
        save("pareto_front", lambda: plots.plot_pareto_front(study, target_names=metrics))
    return written
