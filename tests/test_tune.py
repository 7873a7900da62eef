"""The tuning layer (``sweep/tune_config.py``, ``sweep/tune.py``, ``analysis/tune_plots.py``,
``sweep/tune_command.py`` and ``tiersweep tune``).

Every study here is tiny: AMCBF on 300 jann97 jobs over 64 two-tier nodes, tuning
``policy.bg_threshold`` in [0.5, 1.0] (its default 0.96 lies inside, so trial 0 is the
default-parameter baseline), minimising ``mean_bsld`` over 2 seeds, TPE with seed 0, on the
serial backend; one cell takes about 0.05 s.

Expected values come from independent facts, not from the code under test: the default
threshold is the paper's 0.96; objective values and spreads are recomputed from the rows of
the Parquet store (``OUT/NAME/runs``); Pareto dominance is checked by hand; cell counts are
trials x seeds x variants.

The one Ray test (``-m ray``) starts (or reuses) a local Ray with 2 CPUs for the session.
"""

from __future__ import annotations

import copy
import json
import math
import re
import statistics
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from sweep_helpers import write_malformed_swf, write_swf, write_yaml
from tiersweep.analysis.tune_plots import write_tuning_plots
from tiersweep.cli import main
from tiersweep.core import compiled_path, compiled_run
from tiersweep.core.errors import SpecError, TiersweepError
from tiersweep.sweep.store import read_table
from tiersweep.sweep.tune import TuneOutcome, run_tuning
from tiersweep.sweep.tune_config import load_tune_config, parse_tune_config

#: The paper's background-utilisation threshold: the spec default of ``policy.bg_threshold``.
PAPER_BG_THRESHOLD = 0.96
BG = "policy.bg_threshold"
TRIALS_COLUMNS_FIXED = {
    "number",
    "state",
    "cell_ids",
    "skipped_cell_ids",
    "error",
    "datetime_start",
    "datetime_complete",
}


def tiny_raw(name: str = "tiny", **changes: Any) -> dict[str, Any]:
    """The raw tiny tuning config, with top-level keys replaced by ``changes``."""
    raw: dict[str, Any] = {
        "name": name,
        "base": {
            "workload": {"model": "jann97", "jobs": 300},
            "platform": {"nodes": 64, "tiers": 2},
            "policy": {"name": "amcbf"},
        },
        "params": {BG: {"low": 0.5, "high": 1.0}},
        "objective": {"mean_bsld": "minimize"},
        "seeds": 2,
        "trials": 6,
        "sampler": {"name": "tpe", "seed": 0},
    }
    raw.update(copy.deepcopy(changes))
    return raw


def tune(raw: dict[str, Any], out: Path, **options: Any) -> TuneOutcome:
    """Parse ``raw`` and run its study serially, without a progress bar."""
    options.setdefault("backend", "serial")
    return run_tuning(parse_tune_config(raw), out, progress=False, **options)


def trial_rows(study: Any) -> list[tuple[int, str, dict[str, Any], list[float] | None]]:
    """(number, state, params, values) of every trial, in order."""
    return [(t.number, t.state.name, dict(t.params), t.values) for t in study.trials]


def stored_rows(root: Path) -> dict[str, dict[str, Any]]:
    """The newest stored row of each cell of ``root/runs``, by cell id."""
    return {row["cell_id"]: row for row in read_table(root / "runs").to_pylist()}


def run_files(root: Path) -> list[Path]:
    return sorted((root / "runs").glob("part-*.parquet"))


def dominates(a: list[float], b: list[float], directions: list[str]) -> bool:
    """Whether ``a`` is at least as good as ``b`` in every objective and better in one."""
    better = [x < y if d == "minimize" else x > y for x, y, d in zip(a, b, directions)]
    no_worse = [x <= y if d == "minimize" else x >= y for x, y, d in zip(a, b, directions)]
    return all(no_worse) and any(better)


def assert_png(path: Path) -> None:
    """A real, non-blank PNG image."""
    import matplotlib.image

    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", path
    assert len(data) > 5_000, (path, len(data))
    pixels = matplotlib.image.imread(path)
    assert pixels.shape[0] > 100 and pixels.shape[1] > 100
    assert float(np.std(pixels[..., :3])) > 0.01  # not a single flat colour


# -- shared studies ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory) -> TuneOutcome:
    """The tiny study, 6 trials: the reference most tests read."""
    return tune(tiny_raw(), tmp_path_factory.mktemp("tiny"))


@pytest.fixture(scope="module")
def two_param_run(tmp_path_factory) -> TuneOutcome:
    """Two parameters (a float and an int), one objective, 6 trials."""
    raw = tiny_raw(
        "twoparam",
        params={BG: {"low": 0.5, "high": 1.0}, "policy.migration_cost": {"low": 0, "high": 600, "type": "int"}},
    )
    return tune(raw, tmp_path_factory.mktemp("twoparam"))


@pytest.fixture(scope="module")
def multi_run(tmp_path_factory) -> TuneOutcome:
    """Two objectives (mean_bsld down, utilization up), two parameters, 10 trials."""
    raw = tiny_raw(
        "multi",
        params={BG: {"low": 0.5, "high": 1.0}, "policy.migration_cost": {"low": 0, "high": 600, "type": "int"}},
        objective={"mean_bsld": "minimize", "utilization": "maximize"},
        trials=10,
    )
    return tune(raw, tmp_path_factory.mktemp("multi"))


@pytest.fixture(scope="session")
def ray_session():
    """A local Ray for the session (shut down at its end if this fixture started it)."""
    ray = pytest.importorskip("ray")
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, include_dashboard=False, object_store_memory=200 * 1024 * 1024, log_to_driver=False)
    yield ray
    if started:
        ray.shutdown()


# -- config validation ------------------------------------------------------------------------

CONFIG_ERRORS = {
    "unknown top-level key": (
        {"trails": 6},
        r"^trails: unknown key; valid keys: name, description, base, params, objective, seeds, seed, variants, trials, "
        r"parallel, sampler, pruner, check, study$",
    ),
    "unknown range key": (
        {"params": {BG: {"low": 0.5, "high": 1.0, "step": 0.1}}},
        r"^params\.policy\.bg_threshold\.step: unknown key; valid keys: choices, high, log, low, type$",
    ),
    "low above high": (
        {"params": {BG: {"low": 1.0, "high": 0.5}}},
        r"^params\.policy\.bg_threshold: expected low < high, got low=1\.0, high=0\.5$",
    ),
    "low equal to high": (
        {"params": {BG: {"low": 0.7, "high": 0.7}}},
        r"^params\.policy\.bg_threshold: expected low < high, got low=0\.7, high=0\.7$",
    ),
    "log scale from zero": (
        {"params": {"policy.migration_cost": {"low": 0, "high": 600, "log": True}}},
        r"^params\.policy\.migration_cost: a log scale needs low > 0, got 0$",
    ),
    "int range with fractional bound": (
        {"params": {"policy.migration_cost": {"low": 0, "high": 60.5, "type": "int"}}},
        r"^params\.policy\.migration_cost: an int range needs whole bounds, got 0\.\.60\.5$",
    ),
    "unknown objective metric": (
        {"objective": {"mean_bsd": "minimize"}},
        r"^objective\.mean_bsd: unknown metric; valid metrics for these runs: .*\bmean_bsld\b.*\butilization\b",
    ),
    "bad direction": (
        {"objective": {"mean_bsld": "lower"}},
        r"^objective\.mean_bsld: expected minimize or maximize, got 'lower'$",
    ),
    "grid over a range": (
        {"sampler": {"name": "grid"}},
        r"^sampler: grid needs every parameter given as choices$",
    ),
    "cmaes with two objectives": (
        {"objective": {"mean_bsld": "minimize", "utilization": "maximize"}, "sampler": {"name": "cmaes", "seed": 0}},
        r"^sampler: cmaes needs one objective",
    ),
    "unknown sampler": (
        {"sampler": {"name": "nsga2"}},
        r"^sampler\.name: unknown value .*valid choices: tpe, random, grid, cmaes$",
    ),
    "range end outside the spec's domain": (
        {"params": {BG: {"low": 0.5, "high": 1.5}}},
        r"^trial with policy\.bg_threshold=1\.5: policy\.bg_threshold: .*1\.5",
    ),
    "key the policy does not take": (
        {"params": {"policy.xfactor_threshold": {"low": 1, "high": 100}}},
        r"^trial with policy\.xfactor_threshold=1\.0: policy\.xfactor_threshold: unknown key",
    ),
}


@pytest.mark.parametrize("changes, message", list(CONFIG_ERRORS.values()), ids=list(CONFIG_ERRORS))
def test_config_errors_name_the_key_before_anything_runs(tmp_path, capsys, changes, message):
    path = write_yaml(tmp_path / "tune.yaml", tiny_raw(**changes))
    with pytest.raises(SpecError, match=message):
        load_tune_config(path)
    # The command line reports the same message and creates nothing.
    out = tmp_path / "results"
    assert main(["tune", str(path), "--out", str(out), "--backend", "serial", "--no-plots"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert re.search(message.lstrip("^"), captured.err.removeprefix("tiersweep: error: ").strip())
    assert captured.err.startswith("tiersweep: error: ")
    assert not out.exists()


@pytest.mark.parametrize("metric", ["tier2_share", "tier_share"])
def test_unknown_tier_metric_is_rejected_before_anything_runs(tmp_path, metric):
    # A two-tier platform has tier0_share and tier1_share only.
    raw = tiny_raw(objective={metric: "minimize"}, trials=1)
    with pytest.raises(SpecError, match=rf"^objective\.{metric}: unknown metric"):
        parse_tune_config(raw)


@pytest.mark.parametrize(
    "changes, path",
    [
        ({"sampler": {"name": "tpe", "sed": 0}}, "sampler.sed"),
        ({"sampler": {"name": "tpe", "seed": "zero"}}, "sampler.seed"),
        ({"study": {"nmae": "other"}}, "study.nmae"),
    ],
    ids=["sampler key typo", "sampler seed not an integer", "study key typo"],
)
def test_sampler_and_study_sections_are_validated(changes, path):
    with pytest.raises(SpecError, match=rf"^{re.escape(path)}: "):
        parse_tune_config(tiny_raw(**changes))


def test_parsed_config_fields():
    config = parse_tune_config(
        tiny_raw(
            params={
                BG: {"low": 0.5, "high": 1.0},
                "policy.migration_cost": {"low": 1, "high": 600, "type": "int", "log": True},
            }
        )
    )
    assert [(p.key, p.kind, p.low, p.high, p.log) for p in config.params] == [
        (BG, "float", 0.5, 1.0, False),
        ("policy.migration_cost", "int", 1, 600, True),
    ]
    assert config.objectives == [("mean_bsld", "minimize")] and config.directions == ["minimize"]
    assert len(config.seeds) == 2 and len(set(config.seeds)) == 2
    assert config.variants == [{}] and config.trials == 6 and config.parallel is None
    assert (config.sampler, config.sampler_seed, config.study_name, config.storage) == ("tpe", 0, "tiny", None)


# -- reproducibility, resumption, baseline ------------------------------------------------------


def test_serial_runs_with_the_same_seed_are_identical(tiny_run, tmp_path):
    again = tune(tiny_raw(), tmp_path)
    assert again.root != tiny_run.root
    assert (again.root / "study.db").is_file() and (tiny_run.root / "study.db").is_file()
    first, second = trial_rows(tiny_run.study), trial_rows(again.study)
    assert [r[0] for r in first] == list(range(6))
    assert {r[1] for r in first} == {"COMPLETE"}
    assert len({r[2][BG] for r in first}) == 6  # six different proposals, not one point repeated
    assert second == first
    assert again.best[0].value == tiny_run.best[0].value
    assert (again.computed, tiny_run.computed) == (12, 12)  # 6 trials x 2 seeds, nothing shared


def test_resume_continues_the_study_and_reuses_stored_cells(tmp_path):
    first = tune(tiny_raw("resume"), tmp_path, trials=3)
    first_rows = trial_rows(first.study)  # a snapshot: the study object reads its storage live
    assert [r[0] for r in first_rows] == [0, 1, 2]
    assert first.computed == 3 * 2
    stored_after_first = set(stored_rows(first.root))

    second = tune(tiny_raw("resume"), tmp_path, trials=6)
    rows = trial_rows(second.study)
    assert [r[0] for r in rows] == list(range(6))
    assert {r[1] for r in rows} == {"COMPLETE"}
    assert rows[:3] == first_rows
    assert second.computed == 3 * 2  # only the three new trials' cells
    new_cells = {c for t in second.study.trials[3:] for c in t.user_attrs["cell_ids"]}
    assert set(stored_rows(second.root)) == stored_after_first | new_cells
    assert len(stored_after_first | new_cells) == 12

    files_before = run_files(second.root)
    third = tune(tiny_raw("resume"), tmp_path, trials=6)
    assert third.computed == 0
    assert trial_rows(third.study) == rows
    assert run_files(third.root) == files_before
    assert third.best[0].number == second.best[0].number


def test_baseline_is_trial_zero_and_matches_the_store(tiny_run):
    trial0 = tiny_run.study.trials[0]
    assert trial0.params == {BG: PAPER_BG_THRESHOLD}
    assert tiny_run.baseline_params == {BG: PAPER_BG_THRESHOLD}
    # Recompute the baseline from the stored rows of the default-threshold cells.
    rows = [r for r in stored_rows(tiny_run.root).values() if r[BG] == PAPER_BG_THRESHOLD]
    assert len(rows) == 2 and {r["status"] for r in rows} == {"ok"}
    assert sorted(r["seed"] for r in rows) == sorted(parse_tune_config(tiny_raw()).seeds)
    samples = [r["mean_bsld"] for r in rows]
    mean, spread = tiny_run.baseline["mean_bsld"]
    assert mean == pytest.approx(sum(samples) / 2, rel=1e-12)
    assert spread == pytest.approx(abs(samples[0] - samples[1]) / 2, rel=1e-12)
    # The best trial is the minimum over complete trials, hence no worse than the baseline.
    values = [t.value for t in tiny_run.study.trials if t.state.name == "COMPLETE"]
    assert len(tiny_run.best) == 1 and tiny_run.best[0].value == min(values)
    assert tiny_run.best[0].value <= mean


def test_baseline_outside_the_space_is_still_measured(tmp_path):
    outcome = tune(tiny_raw("outside", params={BG: {"low": 0.5, "high": 0.9}}, trials=2), tmp_path)
    assert all(0.5 <= t.params[BG] <= 0.9 for t in outcome.study.trials)
    assert outcome.baseline_params == {BG: PAPER_BG_THRESHOLD}
    assert outcome.computed == 2 * 2 + 2  # two trials and the baseline, two seeds each
    rows = [r for r in stored_rows(outcome.root).values() if r[BG] == PAPER_BG_THRESHOLD]
    assert len(rows) == 2
    assert outcome.baseline["mean_bsld"][0] == pytest.approx(statistics.fmean(r["mean_bsld"] for r in rows), rel=1e-12)


def test_trial_cells_span_seeds_and_variants(tmp_path):
    variants = [{"workload.load": 0.6}, {"workload.load": 0.9}]
    outcome = tune(tiny_raw("variants", variants=variants, trials=3), tmp_path)
    seeds = parse_tune_config(tiny_raw()).seeds
    rows = stored_rows(outcome.root)
    assert outcome.computed == 3 * 2 * 2
    for trial in outcome.study.trials:
        cells = [rows[c] for c in trial.user_attrs["cell_ids"]]
        assert sorted((r["workload.load"], r["seed"]) for r in cells) == sorted(
            (v, s) for v in (0.6, 0.9) for s in seeds
        )
        assert {r[BG] for r in cells} == {trial.params[BG]}
        assert trial.value == pytest.approx(statistics.fmean(r["mean_bsld"] for r in cells), rel=1e-12)
    baseline_rows = [r for r in rows.values() if r[BG] == PAPER_BG_THRESHOLD]
    assert len(baseline_rows) == 4
    assert outcome.baseline["mean_bsld"][0] == pytest.approx(
        statistics.fmean(r["mean_bsld"] for r in baseline_rows), rel=1e-12
    )
    assert outcome.best[0].value <= outcome.baseline["mean_bsld"][0]


def test_objective_and_spread_are_recomputed_from_the_store(tiny_run):
    rows = stored_rows(tiny_run.root)
    trials_frame = pd.read_parquet(tiny_run.files["trials"]).set_index("number")
    for trial in tiny_run.study.trials:
        ids = trial.user_attrs["cell_ids"]
        assert json.loads(trials_frame.loc[trial.number, "cell_ids"]) == ids
        assert len(ids) == 2 and len(set(ids)) == 2
        cells = [rows[c] for c in ids]
        assert {r["status"] for r in cells} == {"ok"}
        assert {r[BG] for r in cells} == {trial.params[BG]}
        samples = np.array([r["mean_bsld"] for r in cells])
        assert trial.value == pytest.approx(float(samples.mean()), rel=1e-12)
        assert trial.user_attrs["spread.mean_bsld"] == pytest.approx(float(samples.std(ddof=0)), rel=1e-12, abs=1e-12)


# -- failures, several objectives --------------------------------------------------------------


def test_failing_trial_is_recorded_and_the_study_goes_on(tmp_path):
    good = str(write_swf(tmp_path / "good.swf"))
    bad = str(write_malformed_swf(tmp_path / "bad.swf"))
    raw = tiny_raw(
        "failing",
        base={"workload": {"trace": good}, "platform": {"nodes": 64, "tiers": 2}, "policy": {"name": "amcbf"}},
        params={"workload.trace": {"choices": [good, bad]}},
        sampler={"name": "random", "seed": 0},
        trials=5,
    )
    outcome = tune(raw, tmp_path / "out")
    trials = outcome.study.trials
    assert len(trials) == 5
    assert trials[0].params == {"workload.trace": good}  # the base spec's trace is the baseline
    failed = [t for t in trials if t.state.name == "FAIL"]
    complete = [t for t in trials if t.state.name == "COMPLETE"]
    assert failed and complete and len(failed) + len(complete) == 5
    assert all(t.params["workload.trace"] == bad for t in failed)
    assert all(t.params["workload.trace"] == good for t in complete)
    for trial in failed:
        assert trial.values is None
        assert "TraceFormatError" in trial.user_attrs["error"] and "bad.swf" in trial.user_attrs["error"]
    rows = stored_rows(outcome.root)
    assert {rows[c]["status"] for t in failed for c in t.user_attrs["cell_ids"]} == {"failed"}
    assert all(math.isfinite(t.value) for t in complete)
    assert [t.number for t in outcome.best] == [min(t.number for t in complete)]
    assert math.isfinite(outcome.baseline["mean_bsld"][0])
    frame = pd.read_parquet(outcome.files["trials"]).set_index("number")
    for trial in failed:
        assert frame.loc[trial.number, "state"] == "FAIL"
        assert pd.isna(frame.loc[trial.number, "mean_bsld"])
        assert "TraceFormatError" in frame.loc[trial.number, "error"]
    for trial in complete:
        assert frame.loc[trial.number, "state"] == "COMPLETE" and pd.isna(frame.loc[trial.number, "error"])


def test_grid_sampler_runs_every_grid_point(tmp_path):
    raw = tiny_raw(
        "grid", params={BG: {"choices": [0.8, PAPER_BG_THRESHOLD]}}, sampler={"name": "grid", "seed": 0}, trials=3
    )
    outcome = tune(raw, tmp_path)
    trials = outcome.study.trials
    # The grid is the search: every point once (the default among them), nothing enqueued,
    # and trials capped at the grid's size.
    assert [t.state.name for t in trials] == ["COMPLETE"] * 2
    assert sorted(t.params[BG] for t in trials) == [0.8, PAPER_BG_THRESHOLD]


def test_pareto_front_is_exactly_the_non_dominated_trials(multi_run):
    directions = ["minimize", "maximize"]
    complete = [t for t in multi_run.study.trials if t.state.name == "COMPLETE"]
    assert len(complete) == 10
    front = multi_run.best
    front_numbers = {t.number for t in front}
    assert front and front_numbers <= {t.number for t in complete}
    for a in front:
        for b in front:
            assert not dominates(a.values, b.values, directions), (a.number, b.number)
    for trial in complete:
        if trial.number not in front_numbers:
            assert any(dominates(f.values, trial.values, directions) for f in front), trial.number
    by_hand = {t.number for t in complete if not any(dominates(o.values, t.values, directions) for o in complete)}
    assert front_numbers == by_hand
    assert set(multi_run.baseline) == {"mean_bsld", "utilization"}


def test_several_objectives_are_means_of_stored_rows(multi_run):
    rows = stored_rows(multi_run.root)
    frame = pd.read_parquet(multi_run.files["trials"]).set_index("number")
    for trial in multi_run.study.trials:
        cells = [rows[c] for c in trial.user_attrs["cell_ids"]]
        # The study names the key by its old name; the rows store it under its new one.
        assert {r["platform.migration_cost"] for r in cells} == {trial.params["policy.migration_cost"]}
        for i, metric in enumerate(["mean_bsld", "utilization"]):
            samples = np.array([r[metric] for r in cells])
            assert trial.values[i] == pytest.approx(float(samples.mean()), rel=1e-12)
            assert frame.loc[trial.number, metric] == pytest.approx(float(samples.mean()), rel=1e-12)
            assert frame.loc[trial.number, f"spread.{metric}"] == pytest.approx(
                float(samples.std(ddof=0)), rel=1e-12, abs=1e-12
            )
    assert multi_run.study.trials[0].params == {BG: PAPER_BG_THRESHOLD, "policy.migration_cost": 20}


# -- storage -------------------------------------------------------------------------------------


def test_journal_storage_works_and_resumes(tmp_path):
    import optuna
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    journal = tmp_path / "study.journal"
    first = tune(tiny_raw("journal"), tmp_path / "out", trials=2, storage=f"journal:{journal}")
    first_rows = trial_rows(first.study)
    assert [(r[0], r[1]) for r in first_rows] == [(0, "COMPLETE"), (1, "COMPLETE")]
    second = tune(tiny_raw("journal"), tmp_path / "out", trials=4, storage=f"journal:{journal}")
    assert journal.is_file() and journal.stat().st_size > 0
    assert not (second.root / "study.db").exists()
    assert [r[0] for r in trial_rows(second.study)] == [0, 1, 2, 3]
    assert trial_rows(second.study)[:2] == first_rows
    assert second.computed == 2 * 2
    reloaded = optuna.load_study(study_name="journal", storage=JournalStorage(JournalFileBackend(str(journal))))
    assert [(t.number, t.state.name, t.values) for t in reloaded.trials] == [
        (r[0], r[1], r[3]) for r in trial_rows(second.study)
    ]


def test_explicit_sqlite_storage_and_direction_clash(tmp_path):
    import optuna

    url = f"sqlite:///{tmp_path / 'custom.db'}"
    outcome = tune(tiny_raw("explicit", study={"name": "shared", "storage": url}), tmp_path / "out", trials=2)
    assert (tmp_path / "custom.db").is_file()
    assert not (outcome.root / "study.db").exists()
    assert len(optuna.load_study(study_name="shared", storage=url).trials) == 2
    files = run_files(outcome.root)
    # The same study name with another direction: a clear error, and the study is untouched.
    clash = tiny_raw("explicit", study={"name": "shared", "storage": url}, objective={"mean_bsld": "maximize"})
    with pytest.raises(
        TiersweepError,
        match=r"study 'shared' in sqlite:///.*custom\.db optimises \['minimize'\], this config \['maximize'\]: "
        r"use another study name",
    ):
        tune(clash, tmp_path / "out", trials=4)
    two = tiny_raw(
        "explicit",
        study={"name": "shared", "storage": url},
        objective={"mean_bsld": "minimize", "utilization": "maximize"},
    )
    with pytest.raises(TiersweepError, match=r"use another study name"):
        tune(two, tmp_path / "out", trials=4)
    assert len(optuna.load_study(study_name="shared", storage=url).trials) == 2
    assert run_files(outcome.root) == files
    # --storage overrides the config's storage.
    other = f"sqlite:///{tmp_path / 'other.db'}"
    moved = tune(
        tiny_raw("explicit", study={"name": "shared", "storage": url}), tmp_path / "out", trials=1, storage=other
    )
    assert len(optuna.load_study(study_name="shared", storage=other).trials) == 1 and moved.computed == 0


# -- outputs: trials Parquet, plots, command line ----------------------------------------------


def test_trials_parquet(tiny_run):
    path = tiny_run.root / "trials" / "trials.parquet"
    assert tiny_run.files["trials"] == path and path.is_file()
    frame = pd.read_parquet(path)
    assert set(frame.columns) == TRIALS_COLUMNS_FIXED | {f"params.{BG}", "mean_bsld", "spread.mean_bsld"}
    assert list(frame["number"]) == list(range(6))
    assert set(frame["state"]) == {"COMPLETE"}
    for trial, (_, row) in zip(tiny_run.study.trials, frame.iterrows()):
        assert row[f"params.{BG}"] == trial.params[BG]
        assert row["mean_bsld"] == trial.value
        assert row["spread.mean_bsld"] == trial.user_attrs["spread.mean_bsld"]
        assert json.loads(row["cell_ids"]) == trial.user_attrs["cell_ids"]
        assert pd.isna(row["error"])
        assert row["datetime_start"] <= row["datetime_complete"]
    assert frame.loc[frame["mean_bsld"].idxmin(), "number"] == tiny_run.best[0].number


def test_plots_for_one_objective(two_param_run, tmp_path):
    written = write_tuning_plots(two_param_run.study, ["mean_bsld"], tmp_path / "plots")
    assert set(written) == {"history", "importances", "slice"}
    for name, path in written.items():
        assert path == tmp_path / "plots" / f"{name}.png"
        assert_png(path)


def test_plots_for_two_objectives(multi_run, tmp_path):
    written = write_tuning_plots(multi_run.study, ["mean_bsld", "utilization"], tmp_path)
    expected = {
        f"{kind}_{metric}" for kind in ("history", "importances", "slice") for metric in ("mean_bsld", "utilization")
    }
    assert set(written) == expected | {"pareto_front"}
    for path in written.values():
        assert_png(path)


def test_int_parameter_trials_and_default_baseline(two_param_run):
    trials = two_param_run.study.trials
    assert trials[0].params == {BG: PAPER_BG_THRESHOLD, "policy.migration_cost": 20}  # spec default 20 s
    for trial in trials:
        value = trial.params["policy.migration_cost"]
        assert isinstance(value, int) and 0 <= value <= 600
    rows = stored_rows(two_param_run.root)
    baseline = [r for r in rows.values() if r[BG] == PAPER_BG_THRESHOLD and r["platform.migration_cost"] == 20]
    assert len(baseline) == 2  # trial 0's cells are the baseline's: not computed twice
    assert two_param_run.computed == 6 * 2


def test_cli_tune_prints_best_and_baseline(tmp_path, capsys):
    path = write_yaml(tmp_path / "tune.yaml", tiny_raw("cli"))
    out = tmp_path / "results"
    status = main(["tune", str(path), "--backend", "serial", "--trials", "4", "--out", str(out)])
    printed = capsys.readouterr().out
    assert status == 0
    trials_path = out / "cli" / "trials" / "trials.parquet"
    frame = pd.read_parquet(trials_path)
    assert len(frame) == 4
    best_number = int(frame.loc[frame["mean_bsld"].idxmin(), "number"])
    lines = printed.splitlines()
    assert lines[0].split() == ["policy.bg_threshold", "mean_bsld", "(mean", "±", "sd)"]
    best = [line for line in lines if line.startswith("best #")]
    assert len(best) == 1 and best[0].startswith(f"best #{best_number} ")
    baseline = [line for line in lines if line.startswith("baseline (defaults)")]
    assert len(baseline) == 1 and baseline[0].split()[2] == "0.96"
    assert "study cli: 4 trials (4 complete); 8 cells computed now, 0 reused from the store" in printed
    # (amcbf cells: the compiled whole run where it is built, else the Python loop and why)
    path = (
        compiled_run.WHOLE_RUN if compiled_path.why_python() is None else f"python loop ({compiled_path.why_python()})"
    )
    assert f"path: 8 cells on the {path}" in lines
    assert f"trials: {trials_path}" in lines
    plots = [line for line in lines if line.startswith("plots: ")]
    assert len(plots) == 1 and all(Path(p).is_file() for p in plots[0].removeprefix("plots: ").split(", "))


# -- Ray -------------------------------------------------------------------------------------------


@pytest.mark.ray
def test_ray_backend_gives_the_serial_trials(tiny_run, ray_session, tmp_path):
    # Two trials are in flight on 2 CPUs; with 6 trials TPE is still in its random start-up
    # phase (10 trials), so its proposals do not depend on the order trials complete in.
    outcome = tune(tiny_raw(), tmp_path, backend="ray")
    assert trial_rows(outcome.study) == trial_rows(tiny_run.study)
    assert outcome.best[0].value == tiny_run.best[0].value
    assert outcome.computed == 12
    assert ray_session.is_initialized()  # the backend leaves a Ray it did not start running


def test_the_trials_bar_keeps_time_while_a_long_cell_runs(tmp_path, capsys, monkeypatch):
    """As a sweep's: drawn again while no trial finishes, its elapsed time going on."""
    monkeypatch.setattr("tiersweep.sweep.runner.BAR_REFRESH_SECONDS", 0.2)
    raw = tiny_raw(seeds=1, trials=1)
    # One cell of a second or more in a worker process (its start-up alone takes most of one).
    raw["base"]["workload"] = {"model": "lublin03", "jobs": 4000, "load": 0.8}
    raw["base"]["platform"] = {"nodes": 93312, "tiers": 2}
    capsys.readouterr()
    outcome = run_tuning(parse_tune_config(raw), tmp_path, backend="process", backend_options={"workers": 1})
    assert len(outcome.study.trials) >= 1
    drawn = capsys.readouterr().err
    waiting = re.findall(r"0/1 \[(\d\d):(\d\d)", drawn)
    assert len(waiting) >= 3, f"the bar was drawn {len(waiting)} time(s) before the trial finished: {drawn!r}"
    assert max(60 * int(m) + int(s) for m, s in waiting) >= 1, drawn


def test_the_trials_bar_is_complete_only_once_the_baseline_has_run(tmp_path, capsys, monkeypatch):
    """The default parameters lie outside the space here (SMCBF's XFactor is adaptive by
    default), so the baseline runs cells of its own. The bar must not read complete while they
    run: at cluster scale they take minutes, and the bar stood at N/N, its clock going on, with
    nothing saying what ran. Every drawing at the bar's total comes within a second of the end."""
    monkeypatch.setattr("tiersweep.sweep.runner.BAR_REFRESH_SECONDS", 0.2)
    raw = tiny_raw(seeds=2, trials=1, params={"policy.xfactor_threshold": {"low": 1.0, "high": 200.0, "log": True}})
    # Cells of a second or more in a worker process (two of the baseline's, one after the other).
    raw["base"]["workload"] = {"model": "lublin03", "jobs": 4000, "load": 0.8}
    raw["base"]["platform"] = {"nodes": 93312, "tiers": 2}
    raw["base"]["policy"] = {"name": "smcbf"}
    capsys.readouterr()
    outcome = run_tuning(parse_tune_config(raw), tmp_path, backend="process", backend_options={"workers": 1})
    assert outcome.baseline["mean_bsld"][0] > 0
    drawn = capsys.readouterr().err
    drawings = re.findall(r"(\d+)/(\d+) \[(\d\d):(\d\d)", drawn)
    complete = [60 * int(m) + int(s) for n, total, m, s in drawings if n == total]
    assert complete, drawn
    first, last = min(complete), max(complete)
    assert last - first <= 1, f"the bar read complete from {first} s to {last} s: {drawn!r}"
    assert "baseline" in drawn, f"the bar does not say the baseline runs: {drawn!r}"
