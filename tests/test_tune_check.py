"""The held-out check of a tuning study (``check: {seeds: N}``; ``sweep/tune.py`` runs it,
``analysis/tune_check.py`` gives its verdict).

The best trial is chosen on the tuning seeds, so its gain over the defaults there is
optimistic. The check runs both again on fresh seeds, paired. The studies here are small: SMCBF
on 300 Feitelson jobs at load 0.95 over 32 two-tier nodes, tuning both of its thresholds over 2
seeds, on the serial backend (its default XFactor is adaptive, outside the range, so the best
trial is never the defaults). Expected values come from the Parquet store and from scipy's
Student t, not from the code under test.
"""

from __future__ import annotations

import copy
import html
import json
import math
import re
from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from sweep_helpers import write_yaml
from tiersweep.analysis import load
from tiersweep.analysis.report import write_report
from tiersweep.analysis.tune_check import check_verdict, held_out_lines
from tiersweep.cli import main
from tiersweep.core.errors import SpecError
from tiersweep.sweep.store import read_table
from tiersweep.sweep.tune import run_tuning
from tiersweep.sweep.tune_command import IN_SAMPLE_NOTE
from tiersweep.sweep.tune_config import parse_tune_config

BG = "policy.bg_threshold"
XF = "policy.xfactor_threshold"


def small_raw(**changes: Any) -> dict[str, Any]:
    raw: dict[str, Any] = {
        "name": "small",
        "base": {
            "workload": {"model": "feitelson96", "jobs": 300, "load": 0.95},
            "platform": {"nodes": 32, "tiers": 2, "migration_cost": 20},
            "policy": {"name": "smcbf"},
        },
        "params": {BG: {"low": 0.5, "high": 1.0}, XF: {"low": 1.0, "high": 200.0, "log": True}},
        "objective": {"mean_bsld": "minimize"},
        "seeds": 2,
        "trials": 4,
        "sampler": {"name": "tpe", "seed": 0},
        "check": {"seeds": 4},
    }
    raw.update(copy.deepcopy(changes))
    return raw


# -- the config --------------------------------------------------------------------------------


def test_a_count_of_check_seeds_gives_that_many_distinct_seeds_none_of_them_a_tuning_seed():
    for seeds in (1, 3, [5, 9, 11]):
        config = parse_tune_config(small_raw(seeds=seeds, check={"seeds": 6}))
        assert len(config.check_seeds) == 6 == len(set(config.check_seeds))
        assert not set(config.check_seeds) & set(config.seeds)
        # The same config gives the same check seeds (they name the stored cells).
        assert parse_tune_config(small_raw(seeds=seeds, check={"seeds": 6})).check_seeds == config.check_seeds
    assert parse_tune_config(small_raw(check={"seeds": [70, 71]})).check_seeds == [70, 71]
    assert parse_tune_config({k: v for k, v in small_raw().items() if k != "check"}).check_seeds == []


@pytest.mark.parametrize(
    ("check", "message"),
    [
        ({"seeds": [3, 4]}, "check.seeds: [3] are also tuning seeds"),
        ({"seeds": 0}, "check.seeds: expected a count"),
        ({"seeds": None}, "check.seeds: expected a positive count or a non-empty list of seeds, got None"),
        ({"seeds": [1, 1]}, "check.seeds: repeated seeds"),
        ({"seeds": 2, "other": 1}, "check.other"),
        (8, "check: expected {seeds: a count or a list of seeds}"),
    ],
)
def test_bad_check_sections_are_refused_naming_the_key(check, message):
    with pytest.raises(SpecError, match=re.escape(message)):
        parse_tune_config(small_raw(seeds=[0, 3], check=check))


def test_a_check_needs_one_objective():
    raw = small_raw(objective={"mean_bsld": "minimize", "utilization": "maximize"}, pruner={"name": "none"})
    with pytest.raises(SpecError, match="check: needs one objective"):
        parse_tune_config(raw)


# -- the run -----------------------------------------------------------------------------------


def test_the_check_runs_the_best_trial_and_the_defaults_on_the_fresh_seeds_only(tmp_path):
    config = parse_tune_config(small_raw())
    outcome = run_tuning(config, tmp_path, backend="serial", progress=False)
    check = outcome.check
    assert check is not None and not check.best_is_defaults
    best = outcome.best[0]
    assert check.trial == best.number and check.params == best.params
    runs = read_table(tmp_path / "small" / "runs").to_pandas()
    trials = pd.read_parquet(tmp_path / "small" / "trials" / "trials.parquet")
    tuned_ids = {i for ids in trials["cell_ids"] for i in json.loads(ids)}
    # Every trial ran on the tuning seeds alone; the check on its own seeds alone.
    assert set(runs[runs["cell_id"].isin(tuned_ids)]["seed"]) == set(config.seeds)
    assert [p.seed for p in check.pairs] == config.check_seeds
    for pair in check.pairs:
        at_seed = runs[runs["seed"] == pair.seed]
        assert len(at_seed) == 2  # the best trial's run and the defaults' run
        # (The XFactor column holds text: the default is "adaptive".)
        mine, theirs = at_seed[at_seed[XF] != "adaptive"], at_seed[at_seed[XF] == "adaptive"]
        assert mine[BG].tolist() == pytest.approx([best.params[BG]])
        assert [float(v) for v in mine[XF]] == pytest.approx([best.params[XF]])
        assert theirs[BG].tolist() == [0.96]
        assert mine["mean_bsld"].tolist() == [pair.best]
        assert theirs["mean_bsld"].tolist() == [pair.defaults]
    # The file holds the same pairs.
    stored = pd.read_parquet(outcome.files["check"])
    assert stored["seed"].tolist() == [p.seed for p in check.pairs]
    assert stored["best.mean_bsld"].tolist() == [p.best for p in check.pairs]
    assert stored["defaults.mean_bsld"].tolist() == [p.defaults for p in check.pairs]
    assert set(stored["trial"]) == {best.number}
    # Each table reads its own rows: the trials are the trials, the check is the check.
    assert len(load(tmp_path / "small", "trials")) == config.trials
    assert load(tmp_path / "small", "check")["seed"].tolist() == config.check_seeds
    # Run again: the study is complete and the check's cells are in the store: nothing is computed.
    again = run_tuning(config, tmp_path, backend="serial", progress=False)
    assert again.computed == 0 and again.check == check


def test_the_check_is_skipped_when_the_best_trial_is_the_defaults(tmp_path):
    # AMCBF's threshold default (0.96) is in the space and trial 0; a space of one value makes it the best.
    raw = small_raw(params={BG: {"choices": [0.96]}}, trials=1, pruner={"name": "none"})
    raw["base"]["policy"] = {"name": "amcbf"}
    # A check an earlier run left (of another best) is not this study's any more.
    stale = tmp_path / "small" / "check" / "check.parquet"
    stale.parent.mkdir(parents=True)
    pd.DataFrame({"trial": [3], "seed": [7], "best.mean_bsld": [1.0], "defaults.mean_bsld": [2.0]}).to_parquet(stale)
    outcome = run_tuning(parse_tune_config(raw), tmp_path, backend="serial", progress=False)
    assert outcome.check is not None and outcome.check.best_is_defaults and outcome.check.pairs == []
    assert outcome.computed == 2  # the one trial's cells, no check cell
    assert "nothing to compare" in held_out_lines(outcome.check)[-1]
    assert not stale.exists() and "check" not in outcome.files


def test_the_command_line_prints_the_verdict_with_the_interval_on_the_log_scale(tmp_path, capsys):
    path = write_yaml(tmp_path / "small.yaml", small_raw())
    assert main(["tune", str(path), "--out", str(tmp_path / "out"), "--backend", "serial", "--no-plots"]) == 0
    text = capsys.readouterr().out
    stored = pd.read_parquet(tmp_path / "out" / "small" / "check" / "check.parquet")
    logs = np.log(stored["best.mean_bsld"] / stored["defaults.mean_bsld"])
    half = stats.t.ppf(0.975, len(logs) - 1) * logs.std(ddof=1) / math.sqrt(len(logs))
    low, high = math.exp(logs.mean() - half), math.exp(logs.mean() + half)
    shown = f"best / defaults {math.exp(logs.mean()):.4g} [{low:.4g}, {high:.4g}]"
    assert shown in text
    verdict = "better" if high < 1 else "worse" if low > 1 else "no difference shown"
    assert re.search(re.escape(shown) + r".*: " + verdict, text)
    assert f"held-out check on {len(stored)} fresh seed(s)" in text
    assert IN_SAMPLE_NOTE not in text
    # The report of the folder shows the same lines, read back from the stored check.
    page = write_report(tmp_path / "out" / "small").read_text()
    block = re.search(r"<pre id='held-out-check'>(.*?)</pre>", page, re.S)
    assert block is not None
    for line in html.unescape(block.group(1)).splitlines():
        assert line in text
    assert shown in html.unescape(block.group(1))


def test_with_several_variants_each_gets_its_own_verdict_beside_the_pooled_one(tmp_path):
    raw = small_raw(variants=[{"workload.load": 0.8}, {"workload.load": 0.95}], trials=2, check={"seeds": 3})
    outcome = run_tuning(parse_tune_config(raw), tmp_path, backend="serial", progress=False)
    check = outcome.check
    assert check is not None and len(check.pairs) == 6
    lines = held_out_lines(check)
    for load_value in (0.8, 0.95):
        mine = [p for p in check.pairs if json.loads(p.variant) == {"workload.load": load_value}]
        assert [p.seed for p in mine] == check.seeds
        logs = np.log([p.best / p.defaults for p in mine])
        half = stats.t.ppf(0.975, 2) * logs.std(ddof=1) / math.sqrt(3)
        expected = (
            f"{math.exp(logs.mean()):.4g} [{math.exp(logs.mean() - half):.4g}, {math.exp(logs.mean() + half):.4g}]"
        )
        assert any(line.startswith(f"    workload.load={load_value}: {expected} (3 pairs): ") for line in lines), lines
    assert any("6 pairs" in line for line in lines)


def test_a_study_without_a_check_says_its_comparison_is_on_the_tuning_seeds(tmp_path, capsys):
    raw = {k: v for k, v in small_raw().items() if k != "check"}
    path = write_yaml(tmp_path / "small.yaml", raw)
    assert main(["tune", str(path), "--out", str(tmp_path / "out"), "--backend", "serial", "--no-plots"]) == 0
    text = capsys.readouterr().out
    assert IN_SAMPLE_NOTE in text and "held-out check on" not in text


# -- the verdict -------------------------------------------------------------------------------


def test_the_verdict_is_taken_on_the_log_scale_and_needs_the_interval_to_exclude_no_effect():
    defaults = [10.0, 20.0, 40.0, 80.0, 5.0]
    factors = [0.80, 0.85, 0.82, 0.78, 0.84]
    best = [d * f for d, f in zip(defaults, factors)]
    logs = np.log(factors)
    half = stats.t.ppf(0.975, 4) * logs.std(ddof=1) / math.sqrt(5)
    verdict = check_verdict(best, defaults, "minimize")
    assert verdict.scale == "ratio" and verdict.pairs == 5
    assert verdict.estimate == pytest.approx(math.exp(logs.mean()))
    assert (verdict.low, verdict.high) == pytest.approx((math.exp(logs.mean() - half), math.exp(logs.mean() + half)))
    assert verdict.verdict == "better"
    assert check_verdict(best, defaults, "maximize").verdict == "worse"
    assert check_verdict(defaults, best, "minimize").verdict == "worse"
    # Gains and losses that cancel: the interval includes 1.
    mixed = [d * f for d, f in zip(defaults, [0.8, 1.25, 0.9, 1.1, 1.0])]
    assert check_verdict(mixed, defaults, "minimize").verdict == "no difference shown"


def test_a_failed_pair_is_left_out_and_a_value_of_zero_is_compared_by_difference():
    verdict = check_verdict([1.0, math.nan, 1.1, 0.9], [2.0, 2.0, 2.1, 1.9], "minimize")
    assert verdict.pairs == 3 and verdict.verdict == "better"
    differences = np.array([-1.0, -1.0, -1.0, -0.5])
    verdict = check_verdict([0.0, 1.0, 2.0, 2.5], [1.0, 2.0, 3.0, 3.0], "minimize")
    half = stats.t.ppf(0.975, 3) * differences.std(ddof=1) / 2
    assert verdict.scale == "difference"
    assert verdict.estimate == pytest.approx(differences.mean())
    assert (verdict.low, verdict.high) == pytest.approx((differences.mean() - half, differences.mean() + half))
    one = check_verdict([1.0], [2.0], "minimize")
    assert one.pairs == 1 and math.isnan(one.low) and one.verdict == "no difference shown"
