"""Tuning that stops losing trials early (``sweep/tune_pruning.py``, the pruning path of
``sweep/tune.py``, the summary of ``sweep/tune_command.py``).

The study is small: AMCBF on 60 jann97 jobs over 16 two-tier nodes, tuning
``policy.bg_threshold`` and ``policy.migration_cost``, minimising ``mean_bsld`` over 6 seeds,
8 trials of the random sampler with seed 0 (its proposals do not depend on earlier results,
so a pruned and an unpruned study propose the same points), serial backend; a cell takes
about 0.05 s.

Expected values come from the unpruned study of the same config and from the Parquet store,
not from the pruner: which trial is best, every cell's value, which cells were run.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import optuna
import pandas as pd
import pytest

from sweep_helpers import default_sigint, tiny_tune_raw, write_yaml
from tiersweep.cli import main
from tiersweep.core.errors import SpecError
from tiersweep.sweep.store import read_table
from tiersweep.sweep.tune import PAUSE_VARIABLE, run_tuning
from tiersweep.sweep.tune_command import param_importances
from tiersweep.sweep.tune_config import load_tune_config, parse_tune_config
from tiersweep.sweep.tune_pruning import instance_order, pruning_summary

SEEDS = 6
TRIALS = 8
PARAMS = {
    "policy.bg_threshold": {"low": 0.5, "high": 1.0},
    "policy.migration_cost": {"low": 0, "high": 600, "type": "int"},
}


def small_raw(name: str = "small", **changes: Any) -> dict[str, Any]:
    """The small study's config, with top-level keys replaced by ``changes``."""
    raw = tiny_tune_raw(name, jobs=60, seeds=SEEDS, trials=TRIALS, params=PARAMS)
    raw["base"]["platform"]["nodes"] = 16
    raw.update(changes)
    return raw


def stored(root: Path) -> dict[str, dict[str, Any]]:
    return {row["cell_id"]: row for row in read_table(root / "runs").to_pylist()}


def load(root: Path, name: str = "small") -> Any:
    return optuna.load_study(study_name=name, storage=f"sqlite:///{root / 'study.db'}")


@pytest.fixture(scope="module")
def unpruned(tmp_path_factory):
    out = tmp_path_factory.mktemp("unpruned")
    return run_tuning(parse_tune_config(small_raw(pruner="none")), out, backend="serial", progress=False)


@pytest.fixture(scope="module")
def pruned(tmp_path_factory):
    """The same study pruned (the default): ``(config file, outcome)``."""
    out = tmp_path_factory.mktemp("pruned")
    config = write_yaml(out / "tune.yaml", small_raw())
    return config, run_tuning(load_tune_config(config), out, backend="serial", progress=False)


def test_pruning_saves_cell_runs_and_keeps_the_best(unpruned, pruned, capsys):
    config, outcome = pruned
    study, root = outcome.study, outcome.root
    full = {t.number: t for t in unpruned.study.trials}
    trials = study.trials
    # The same proposals; every unpruned trial complete, some of the pruned study's pruned.
    assert [t.params for t in trials] == [full[t.number].params for t in trials]
    assert {t.state.name for t in full.values()} == {"COMPLETE"}
    pruned_trials = [t for t in trials if t.state.name == "PRUNED"]
    assert pruned_trials and {t.state.name for t in trials} == {"COMPLETE", "PRUNED"}
    # The same best trial, with the same value (its every cell ran).
    best = study.best_trial
    assert (best.number, best.params) == (unpruned.best[0].number, unpruned.best[0].params)
    assert best.value == pytest.approx(unpruned.best[0].value, rel=1e-12)
    # A pruned trial ran the first cells of the common order and none of the others, which
    # are not in the store; what it reported is what the store holds.
    rows = stored(root)
    order = instance_order(SEEDS, 0)
    skipped_total = 0
    for trial in pruned_trials:
        ran, skipped = trial.user_attrs["cell_ids"], trial.user_attrs["skipped_cell_ids"]
        assert ran and skipped and len(ran) + len(skipped) == SEEDS
        assert set(ran) | set(skipped) == set(full[trial.number].user_attrs["cell_ids"])
        assert not set(skipped) & set(rows)
        assert sorted(trial.intermediate_values) == sorted(order[: len(ran)])
        cells = {rows[c]["seed"]: rows[c]["mean_bsld"] for c in ran}
        assert sorted(trial.intermediate_values.values()) == sorted(cells.values())
        # Stopped as a loser: the unpruned run of the same trial ends worse than the best.
        assert full[trial.number].value > unpruned.best[0].value
        skipped_total += len(skipped)
    # Fewer cells computed, by exactly the cells skipped.
    assert outcome.computed == len(rows) == TRIALS * SEEDS - skipped_total < unpruned.computed == TRIALS * SEEDS
    saved = pruning_summary(study, SEEDS)
    assert (saved.pruned, saved.skipped, saved.planned) == (len(pruned_trials), skipped_total, TRIALS * SEEDS)
    # trials.parquet records the skipped cells.
    frame = pd.read_parquet(outcome.files["trials"]).set_index("number")
    for trial in trials:
        assert json.loads(frame.loc[trial.number, "skipped_cell_ids"]) == trial.user_attrs.get("skipped_cell_ids", [])
        assert frame.loc[trial.number, "state"] == trial.state.name
    # Run again from the command line: pruned trials count as finished, nothing is computed
    # or added, and the summary says what pruning saved.
    out = root.parent
    assert main(["tune", str(config), "--out", str(out), "--backend", "serial", "--no-plots"]) == 0
    printed = capsys.readouterr().out
    assert len(load(root).trials) == TRIALS and set(stored(root)) == set(rows)
    assert "0 cells computed now" in printed
    share = f"{skipped_total / (TRIALS * SEEDS):.0%}"
    line = (
        f"pruning (wilcoxon, p < 0.1): {len(pruned_trials)} trials pruned, "
        f"{skipped_total} of {TRIALS * SEEDS} cell runs saved ({share})"
    )
    assert line in printed.splitlines()
    assert "importance for mean_bsld (PED-ANOVA, complete trials): policy." in printed


def test_importances_are_pedanova_over_complete_trials(unpruned):
    importances = param_importances(unpruned.study, [("mean_bsld", "minimize")])
    assert set(importances) == {"mean_bsld"}
    assert set(importances["mean_bsld"]) == set(PARAMS)
    assert sum(importances["mean_bsld"].values()) == pytest.approx(1.0)
    # The same numbers as Optuna's evaluator given the same top group: the best 10 %, widened
    # to 5 trials but at most half of them, here 4 of the 8.
    expected = optuna.importance.get_param_importances(
        unpruned.study, evaluator=optuna.importance.PedAnovaImportanceEvaluator(target_quantile=0.5)
    )
    assert importances["mean_bsld"] == pytest.approx(dict(expected))


def test_pruner_is_configured_and_defaults_to_wilcoxon_for_one_objective():
    assert parse_tune_config(small_raw()).pruner == "wilcoxon"
    assert parse_tune_config(small_raw()).p_threshold == 0.1
    assert parse_tune_config(small_raw(pruner="none")).pruner == "none"
    assert parse_tune_config(small_raw(pruner={"name": "wilcoxon", "p_threshold": 0.05})).p_threshold == 0.05
    two = {"mean_bsld": "minimize", "utilization": "maximize"}
    assert parse_tune_config(small_raw(objective=two)).pruner == "none"
    bad = {
        "pruner.name: unknown value 'median'": {"pruner": "median"},
        "pruner.p_threshold: expected a p-value between 0 and 1": {"pruner": {"p_threshold": 1.5}},
        "pruner.p: unknown key; valid keys: name, p_threshold, startup_steps": {"pruner": {"p": 0.1}},
        "pruner.startup_steps: expected a non-negative integer": {"pruner": {"startup_steps": -1}},
        "pruner: a study of several objectives cannot be pruned": {"pruner": "wilcoxon", "objective": two},
    }
    for message, changes in bad.items():
        with pytest.raises(SpecError, match="^" + message.replace(".", r"\.")):
            parse_tune_config(small_raw(**changes))


def test_the_common_order_is_a_fixed_permutation():
    assert sorted(instance_order(10, 3)) == list(range(10))
    assert instance_order(10, 3) == instance_order(10, 3)
    assert instance_order(10, 3) != list(range(10))


def _mid_trial(root: Path) -> bool:
    """Whether a sampled trial (not the base spec's, trial 0) is running with two or more
    cells reported and more to run."""
    return any(t.state.name == "RUNNING" and 2 <= len(t.intermediate_values) < SEEDS for t in load(root).trials[1:])


def _interrupt_mid_trial(config: Path, out: Path) -> None:
    """Run the tuner in a child process, paused after each report by the tuner's pause hook,
    and press Ctrl-C at the first pause that finds a trial mid-way (:func:`_mid_trial`); at
    the other pauses, let it go on. Paused, the child writes nothing, so the study read here
    is the one Ctrl-C leaves."""
    marker, log = out.parent / "paused", out.parent / "stderr.txt"
    with log.open("w") as stderr:  # (a file, not a pipe nobody reads while the child runs)
        child = subprocess.Popen(
            [sys.executable, "-m", "tiersweep", "tune", str(config), "--out", str(out), "--backend", "serial"]
            + ["--no-plots"],
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            env={**os.environ, PAUSE_VARIABLE: str(marker)},
            preexec_fn=default_sigint,  # (Ctrl-C must reach it even when the tests run as a background job)
        )
    try:
        deadline = time.monotonic() + 240
        while True:
            while not marker.exists():
                assert child.poll() is None, f"the tuner ended with no trial caught mid-way: {log.read_text()}"
                assert time.monotonic() < deadline, "the tuner did not pause"
                time.sleep(0.01)
            if _mid_trial(out / "small"):
                break
            marker.unlink()
        child.send_signal(signal.SIGINT)
        assert child.wait(timeout=60) == 130  # interrupted, as Ctrl-C ends it
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def test_a_study_interrupted_mid_trial_resumes_that_trial(tmp_path):
    # Ctrl-C in the middle of a trial (after its first cells were stored and reported), in a
    # child process, as a user would; the next run takes the trial up where it stopped.
    config = write_yaml(tmp_path / "tune.yaml", small_raw())
    out = tmp_path / "out"
    _interrupt_mid_trial(config, out)
    left = [t for t in load(out / "small").trials if t.state.name == "RUNNING"]
    assert len(left) == 1 and 2 <= len(left[0].intermediate_values) < SEEDS
    before = set(stored(out / "small"))
    reported = dict(left[0].intermediate_values)

    outcome = run_tuning(load_tune_config(config), out, backend="serial", progress=False)
    trials = outcome.study.trials
    assert len(trials) == TRIALS and "RUNNING" not in {t.state.name for t in trials}
    resumed = trials[left[0].number]
    assert resumed.state.name in ("COMPLETE", "PRUNED")
    assert resumed.params == left[0].params
    # Its earlier values are kept, its stored cells reused, no cell computed twice.
    assert {s: resumed.intermediate_values[s] for s in reported} == reported
    rows = stored(out / "small")
    assert outcome.computed == len(set(rows) - before)
    assert len(read_table(out / "small" / "runs")) == len(rows)
    # Up to the interrupted trial, the study an uninterrupted run made (later trials differ:
    # a resumed sampler is seeded anew so as not to repeat its first proposals).
    clean_out = tmp_path / "clean"
    clean = run_tuning(
        load_tune_config(config), clean_out, backend="serial", trials=resumed.number + 1, progress=False
    ).study.trials
    assert [(t.state.name, t.params, t.intermediate_values) for t in trials[: resumed.number + 1]] == [
        (t.state.name, t.params, t.intermediate_values) for t in clean
    ]
