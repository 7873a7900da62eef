"""Resuming a study that an interrupted run left with a trial whose parameters were never all
drawn, and a grid study continued over several runs (``sweep/tune.py``).

Optuna's ``ask`` creates a trial, RUNNING, before it draws the trial's parameters: a Ctrl-C in
between leaves a RUNNING trial with none (or only some) of them. Such a trial is not a point of
the search space; the next run must fail it, not count it, and ask a fresh trial in its place.

The state is made as the interrupted run leaves it: the tuner's own study (same storage, same
study name), a trial asked and given fewer parameters than the space has. The study is small:
AMCBF on 60 jann97 jobs over 16 two-tier nodes, two parameters, two seeds, the random sampler
with seed 0, serial backend (a cell takes about 0.05 s); the grid study is the same over a grid
of 6 points, one seed.
"""

from __future__ import annotations

from typing import Any

import optuna
import pytest

from sweep_helpers import tiny_tune_raw
from tiersweep.sweep.tune import run_tuning
from tiersweep.sweep.tune_config import parse_tune_config

TRIALS = 3
PARAMS = {
    "policy.bg_threshold": {"low": 0.5, "high": 1.0},
    "policy.migration_cost": {"low": 0, "high": 600, "type": "int"},
}


def small_raw() -> dict[str, Any]:
    raw = tiny_tune_raw("left", seeds=2, trials=TRIALS, params=PARAMS)
    raw["base"]["platform"]["nodes"] = 16
    return raw


def counted(trials: list[Any]) -> list[Any]:
    return [t for t in trials if t.state.name in ("COMPLETE", "PRUNED")]


@pytest.mark.parametrize("drawn", [0, 1], ids=["no-params", "one-of-two-params"])
@pytest.mark.parametrize("enqueued", [False, True], ids=["asked", "enqueued-defaults"])
def test_a_trial_left_before_its_parameters_were_drawn_fails_and_a_fresh_one_is_asked(tmp_path, drawn, enqueued):
    config = parse_tune_config(small_raw())
    out = tmp_path / "out"
    (out / "left").mkdir(parents=True)
    study = optuna.create_study(study_name="left", storage=f"sqlite:///{out / 'left' / 'study.db'}")
    defaults = {"policy.bg_threshold": 0.96, "policy.migration_cost": 20}  # AMCBF's
    if enqueued:
        # The first trial of a new study is the base spec's values, enqueued: interrupted
        # between taking it from the queue and drawing its values.
        study.enqueue_trial(defaults)
    else:
        # An earlier run made one trial; the next was interrupted inside ``ask``.
        run_tuning(config, out, backend="serial", trials=1, progress=False)
    left = study.ask()
    if drawn:
        left.suggest_float("policy.bg_threshold", 0.5, 1.0)
    assert len(left.params) == drawn and study.trials[left.number].state.name == "RUNNING"

    outcome = run_tuning(config, out, backend="serial", progress=False)
    trials = outcome.study.trials
    assert trials[left.number].state.name == "FAIL"
    assert "before its parameters were drawn" in trials[left.number].user_attrs["error"]
    assert "RUNNING" not in {t.state.name for t in trials}
    # Only trials that drew every parameter were run, and the budget is met by them.
    assert all(set(t.params) == set(PARAMS) for t in counted(trials))
    assert len(counted(trials)) == TRIALS and len(trials) == TRIALS + 1
    # The base spec's values are still one of the trials.
    assert outcome.baseline_params == defaults and defaults in [t.params for t in counted(trials)]
    # The failed trial does not count on later runs either: nothing more is asked.
    again = run_tuning(config, out, backend="serial", progress=False).study.trials
    assert len(again) == TRIALS + 1


GRID = {"policy.bg_threshold": {"choices": [0.6, 0.7, 0.8]}, "policy.migration_cost": {"choices": [0, 300]}}


def grid_raw() -> dict[str, Any]:
    """A grid of 6 points, one seed."""
    raw = tiny_tune_raw("grid", trials=6, params=GRID, sampler={"name": "grid", "seed": 0})
    raw["base"]["platform"]["nodes"] = 16
    return raw


def points(trials: list[Any]) -> list[tuple[float, int]]:
    return sorted((t.params["policy.bg_threshold"], t.params["policy.migration_cost"]) for t in trials)


EVERY_POINT = sorted((bg, cost) for bg in (0.6, 0.7, 0.8) for cost in (0, 300))


def test_a_grid_study_continued_over_several_runs_runs_every_point_once(tmp_path):
    config = parse_tune_config(grid_raw())
    for trials in (2, 4, 6):
        outcome = run_tuning(config, tmp_path, backend="serial", trials=trials, progress=False)
    trials = outcome.study.trials
    assert len(trials) == 6 and points(counted(trials)) == EVERY_POINT


def test_a_grid_trial_left_before_its_parameters_were_drawn_leaves_no_point_out(tmp_path):
    # The grid gives a trial its point when it is created, before its values are drawn.
    config = parse_tune_config(grid_raw())
    run_tuning(config, tmp_path, backend="serial", trials=1, progress=False)
    space = {key: spec["choices"] for key, spec in GRID.items()}
    sampler = optuna.samplers.GridSampler(space, seed=0)
    study = optuna.load_study(study_name="grid", storage=f"sqlite:///{tmp_path / 'grid' / 'study.db'}", sampler=sampler)
    left = study.ask()
    assert "grid_id" in study.trials[left.number].system_attrs and not left.params

    trials = run_tuning(config, tmp_path, backend="serial", progress=False).study.trials
    assert trials[left.number].state.name == "FAIL" and len(trials) == 7
    assert points(counted(trials)) == EVERY_POINT
