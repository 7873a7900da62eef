"""The verdicts of analysis.claims: strict intervals, "k of n" counts, the paper's scope.

Each test builds a small runs table by hand whose paired ratios are known, so the verdict is
decided by arithmetic that can be checked here, not by a stored sweep.
"""

from __future__ import annotations


import pandas as pd
import pytest

from tiersweep.analysis.claims import (
    CLAIMS,
    fewer_migrations,
    holds_in_scope,
    ratio_below,
    utilisation_gain,
)


def _runs(ratios_by_load: dict[float, list[float]], metric: str = "mean_bsld", policy: str = "amcbf", baseline: str = "easy") -> pd.DataFrame:
    """Runs where ``policy``'s metric is ``ratio`` x the baseline's 100, per seed and load."""
    rows = []
    for load, ratios in ratios_by_load.items():
        for seed, ratio in enumerate(ratios):
            rows.append({"status": "ok", "policy.name": baseline, "workload.load": load, "seed": seed, metric: 100.0})
            rows.append({"status": "ok", "policy.name": policy, "workload.load": load, "seed": seed, metric: 100.0 * ratio})
    return pd.DataFrame(rows)


def test_a_ratio_interval_that_reaches_1_is_not_a_win():
    # Load 0.5: ratios 0.5-0.6 (interval well below 1); load 0.8: 0.3 and 1.6 (geometric mean
    # 0.69, interval [0, 200]-ish on the log scale: straddles 1). The old rule (mean below 1)
    # counted both; the strict one counts the first only.
    runs = _runs({0.5: [0.5, 0.55, 0.6], 0.8: [0.3, 1.6, 0.9]})
    verdict = ratio_below(("amcbf",), "easy", ("mean_bsld",))(runs)
    assert (verdict.held, verdict.settings, verdict.holds) == (1, 2, False)
    assert "load 0.8" in verdict.text and "(x)" in verdict.text


def test_a_tie_is_not_a_win():
    verdict = ratio_below(("amcbf",), "easy", ("mean_bsld",))(_runs({0.5: [1.0, 1.0, 1.0]}))
    assert verdict.held == 0 and not verdict.holds


def test_worse_needs_the_whole_interval_above_1():
    runs = _runs({0.5: [1.5, 1.6, 1.7], 0.9: [0.8, 1.9, 1.2]})
    verdict = ratio_below(("amcbf",), "easy", ("mean_bsld",), worse=True)(runs)
    assert (verdict.held, verdict.settings) == (1, 2)


def test_every_named_policy_is_measured():
    # "CMBF and AMBF are worse than EASY" used to measure AMBF only.
    runs = pd.concat([_runs({0.5: [1.5, 1.6, 1.7]}, policy="ambf"), _runs({0.5: [0.9, 0.95, 0.92]}, policy="cmbf")])
    runs = runs.drop_duplicates(["policy.name", "workload.load", "seed"])
    verdict = ratio_below(("cmbf", "ambf"), "easy", ("mean_bsld",), worse=True)(runs)
    assert (verdict.held, verdict.settings, verdict.holds) == (1, 2, False)
    assert "cmbf/easy" in verdict.text and "ambf/easy" in verdict.text


@pytest.mark.parametrize(
    ("held", "settings", "scope", "expected"),
    [(6, 6, "all", True), (5, 6, "all", False), (4, 6, "most", True), (3, 6, "most", False), (1, 6, "any", True), (0, 0, "all", False)],
)
def test_scopes_follow_the_papers_wording(held, settings, scope, expected):
    # "in most cases" is a strict majority: 3 of 6 is not most.
    assert holds_in_scope(held, settings, scope) is expected


def test_fewer_migrations_needs_the_difference_interval_below_0():
    rows = []
    for seed, (a, b) in enumerate([(0.10, 0.20), (0.12, 0.21), (0.11, 0.19)]):
        rows += [
            {"status": "ok", "policy.name": "ambf", "workload.load": 0.5, "seed": seed, "migrations_per_job": a},
            {"status": "ok", "policy.name": "cmbf", "workload.load": 0.5, "seed": seed, "migrations_per_job": b},
        ]
    for seed, (a, b) in enumerate([(0.10, 0.20), (0.30, 0.21), (0.11, 0.12)]):  # straddles 0
        rows += [
            {"status": "ok", "policy.name": "ambf", "workload.load": 0.9, "seed": seed, "migrations_per_job": a},
            {"status": "ok", "policy.name": "cmbf", "workload.load": 0.9, "seed": seed, "migrations_per_job": b},
        ]
    verdict = fewer_migrations("ambf", "cmbf")(pd.DataFrame(rows))
    assert (verdict.held, verdict.settings, verdict.holds) == (1, 2, False)


def test_the_utilisation_gain_is_relative_and_must_be_significant_and_reach_the_claim():
    # AMCBF at 1.02-1.03 x EASY's utilisation: a gain of about 2.5 % (relative), significant.
    runs = _runs({1.0: [1.020, 1.025, 1.030]}, metric="utilization")
    assert utilisation_gain("amcbf", "easy", 2.4)(runs).holds  # the interval reaches 2.4 %
    assert not utilisation_gain("amcbf", "easy", 11.0)(runs).holds  # it does not reach 11 %
    noisy = _runs({1.0: [0.99, 1.06, 1.01]}, metric="utilization")  # interval includes no gain
    assert not utilisation_gain("amcbf", "easy", 2.4)(noisy).holds


def test_every_claim_names_a_config_that_exists():
    from pathlib import Path

    configs = Path(__file__).resolve().parents[1] / "configs"
    missing = sorted({c.sweep for c in CLAIMS if not (configs / f"{c.sweep}.yaml").exists()})
    assert not missing, f"claims measured on configs that do not exist: {missing}"
