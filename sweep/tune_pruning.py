"""Stopping losing trials early: the pruner of a tuning study, the order its cells run in, and
what pruning saved.

A trial's cells are its problem instances (one per seed and spec variant): each reports its
objective value as Optuna's intermediate value with the cell's index as the step, so that
the same step is the same instance in every trial. Optuna's ``WilcoxonPruner`` pairs a
trial's values with the best trial's on the instances both have run and stops the trial once
a one-sided Wilcoxon signed-rank test says, below the p-value threshold, that it is worse (and
its mean so far is worse than the best's). The instances run in one shuffled order, the same
for every trial and every run of the study: shuffled so that the first instances are not
always the same seed or variant (a variant of light load first would let every trial look
alike until the heavy ones arrive), common so that a pruned trial has values on the instances
the best one is compared on first.

Pruning needs one objective (Optuna prunes single-objective studies only), and at least four
instances: with n paired values the smallest one-sided p-value is 2^-n, so below 0.1 takes
four of them.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "PRUNERS",
    "DEFAULT_P_THRESHOLD",
    "SKIPPED",
    "make_pruner",
    "instance_order",
    "PruningSummary",
    "pruning_summary",
    "skipped_json",
]

#: Pruners by config name (``none`` runs every cell of every trial).
PRUNERS = ("wilcoxon", "none")
#: The default p-value threshold, Optuna's: a trial is stopped at the earliest after four paired
#: cells, all worse than the best trial's (p = 1/16). The test is repeated after every cell, so
#: the chance of stopping a trial as good as the best is above the nominal 0.1 (Optuna's pruner
#: also requires the trial's mean so far to be worse than the best trial's mean).
DEFAULT_P_THRESHOLD = 0.1
#: The trial attribute listing the cells a stopped trial did not run (JSON in trials.parquet).
SKIPPED = "skipped_cell_ids"


def make_pruner(name: str, p_threshold: float, startup_steps: int) -> Any:
    """The Optuna pruner of a tuning config: ``WilcoxonPruner`` or ``NopPruner``."""
    import optuna

    if name == "none":
        return optuna.pruners.NopPruner()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        return optuna.pruners.WilcoxonPruner(p_threshold=p_threshold, n_startup_steps=startup_steps)


def instance_order(count: int, seed: int | None) -> list[int]:
    """The common order in which every trial runs its ``count`` cells (cell indices): a
    permutation fixed by ``seed`` (the sampler's, 0 without one), so that every trial and every
    resumed run of the study use the same one."""
    return [int(i) for i in np.random.default_rng(seed or 0).permutation(count)]


@dataclass(frozen=True)
class PruningSummary:
    """What pruning did in a study.

    Attributes:
        pruned: Trials stopped as losers.
        skipped: Cell runs those trials did not make.
        planned: Cell runs every finished trial would have made run to the end.
    """

    pruned: int
    skipped: int
    planned: int


def pruning_summary(study: Any, cells_per_trial: int) -> PruningSummary:
    """Count the pruned trials of ``study`` and the cell runs they skipped (their
    ``skipped_cell_ids`` attribute) against ``cells_per_trial`` for every finished trial."""
    import optuna

    states = optuna.trial.TrialState
    finished = [t for t in study.trials if t.state in (states.COMPLETE, states.PRUNED, states.FAIL)]
    pruned = [t for t in finished if t.state == states.PRUNED]
    skipped = sum(len(t.user_attrs.get(SKIPPED, [])) for t in pruned)
    return PruningSummary(len(pruned), skipped, cells_per_trial * len(finished))


def skipped_json(trial: Any) -> str:
    """A trial's skipped cells as trials.parquet stores them."""
    return json.dumps(trial.user_attrs.get(SKIPPED, []))
