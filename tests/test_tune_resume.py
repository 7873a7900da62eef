"""Resuming a study that an interrupted run left with a trial whose parameters were never all
drawn (``sweep/tune.py``).

Optuna's ``ask`` creates a trial, RUNNING, before it draws the trial's parameters: a Ctrl-C in
between leaves a RUNNING trial with none (or only some) of them. Such a trial is not a point of
the search space; the next run must fail it, not count it, and ask a fresh trial in its place.

The state is made as the interrupted run leaves it: the tuner's own study (same storage, same
study name), a trial asked and given fewer parameters than the space has. The study is small:
AMCBF on 60 jann97 jobs over 16 two-tier nodes, two parameters, two seeds, the random sampler
with seed 0, serial backend (a cell takes about 0.05 s).
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
