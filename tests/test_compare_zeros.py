"""compare() where a paired value is 0: the log ratio of that pair is undefined, and a geometric
mean taken over the other pairs alone is biased (the pairs left out are the extreme ones: a
policy that waits 0 s against the baseline's 100 s is its best pair). Such a ratio is refused
(nan, with a warning that names the metric, the group and the pairs), and ``scale="difference"``
compares by the paired difference instead.

Expected values are computed by hand from the frames, with Student-t quantiles typed in from
tables (t(0.975, 2) = 4.302653, t(0.975, 1) = 12.706205).
"""

from __future__ import annotations

import math
import warnings

import pandas as pd
import pytest

from tiersweep.analysis import compare
from tiersweep.analysis.stats import UndefinedRatioWarning, ratio_interval

T_975_2 = 4.302652729911275
T_975_1 = 12.706204736174698


def _frame(baseline: list[float], policy: list[float], metric: str = "mean_wait") -> pd.DataFrame:
    n = len(baseline)
    return pd.DataFrame(
        {
            "policy.name": ["easy"] * n + ["amcbf"] * n,
            "workload.load": [0.6] * (2 * n),
            "seed": list(range(1, n + 1)) * 2,
            metric: baseline + policy,
        }
    )


def test_a_zero_in_the_policy_makes_the_ratio_undefined_rather_than_dropping_its_best_pair():
    # Seeds 1-3: amcbf waits 0, 50 and 80 s against 100, 100 and 100. Dropping seed 1 would give
    # sqrt(0.5 * 0.8) = 0.632, a ratio that hides amcbf's best seed.
    frame = _frame([100.0, 100.0, 100.0], [0.0, 50.0, 80.0])
    with pytest.warns(UndefinedRatioWarning) as caught:
        row = compare(frame, baseline="easy", metrics=["mean_wait"], by=["workload.load"]).iloc[0]
    assert math.isnan(row["mean_wait_ratio"]) and math.isnan(row["mean_wait_ci_low"])
    assert math.isnan(row["mean_wait_ci_high"])
    assert row["mean_wait_n"] == 3  # the pairs there are, not the ones a ratio could use
    message = str(caught[0].message)
    assert "mean_wait" in message and "amcbf" in message and "workload.load=0.6" in message
    assert "amcbf (workload.load=0.6): 1 of 3 pairs" in message and "scale='difference'" in message


def test_a_baseline_that_is_zero_everywhere_is_named_too():
    # Migrations per job of a policy against EASY, which never migrates: every ratio is x / 0.
    frame = _frame([0.0, 0.0, 0.0], [0.2, 0.3, 0.25], metric="migrations_per_job")
    expected = r"migrations_per_job in 1 group\(s\): amcbf \(workload.load=0.6\): 3 of 3 pairs"
    with pytest.warns(UndefinedRatioWarning, match=expected):
        row = compare(frame, baseline="easy", metrics=["migrations_per_job"], by=["workload.load"]).iloc[0]
    assert math.isnan(row["migrations_per_job_ratio"]) and row["migrations_per_job_n"] == 3


def test_positive_pairs_give_the_ratio_without_a_warning():
    frame = _frame([10.0, 20.0, 40.0], [4.0, 12.0, 20.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error", UndefinedRatioWarning)
        row = compare(frame, baseline="easy", metrics=["mean_wait"], by=["workload.load"]).iloc[0]
    assert row["mean_wait_ratio"] == pytest.approx((0.4 * 0.6 * 0.5) ** (1 / 3))
    assert row["mean_wait_n"] == 3


def test_a_missing_value_leaves_its_pair_out_without_calling_the_ratio_undefined():
    # Seed 3's amcbf value is missing (nan): that pair is absent, not zero. Two pairs remain,
    # 0.4 and 0.6 (hence the few-seeds warning as well).
    frame = _frame([10.0, 20.0, 40.0], [4.0, 12.0, float("nan")])
    with warnings.catch_warnings():
        warnings.simplefilter("error", UndefinedRatioWarning)
        with pytest.warns(UserWarning, match="fewer than 3 seeds"):
            row = compare(frame, baseline="easy", metrics=["mean_wait"], by=["workload.load"]).iloc[0]
    assert row["mean_wait_ratio"] == pytest.approx(math.sqrt(0.4 * 0.6)) and row["mean_wait_n"] == 2


def test_the_difference_scale_takes_the_paired_differences_and_their_t_interval():
    # Differences amcbf - easy per seed: -100, -50, -20: mean -56.667, sd 40.415.
    frame = _frame([100.0, 100.0, 100.0], [0.0, 50.0, 80.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error", UndefinedRatioWarning)
        row = compare(frame, baseline="easy", metrics=["mean_wait"], by=["workload.load"], scale="difference").iloc[0]
    differences = [-100.0, -50.0, -20.0]
    mean = sum(differences) / 3
    sd = math.sqrt(sum((d - mean) ** 2 for d in differences) / 2)
    half = T_975_2 * sd / math.sqrt(3)
    assert row["mean_wait_diff"] == pytest.approx(mean)
    assert row["mean_wait_ci_low"] == pytest.approx(mean - half)
    assert row["mean_wait_ci_high"] == pytest.approx(mean + half)
    assert row["mean_wait_n"] == 3 and "mean_wait_ratio" not in row.index


def test_the_difference_of_two_policies_that_never_migrate_is_exactly_zero():
    frame = _frame([0.0, 0.0], [0.0, 0.0], metric="migrations_per_job")
    with pytest.warns(UserWarning, match="fewer than 3 seeds"):
        row = compare(
            frame, baseline="easy", metrics=["migrations_per_job"], by=["workload.load"], scale="difference"
        ).iloc[0]
    assert row["migrations_per_job_diff"] == 0.0
    assert row["migrations_per_job_ci_low"] == 0.0 and row["migrations_per_job_ci_high"] == 0.0


def test_an_unknown_scale_is_refused_naming_the_choices():
    frame = _frame([1.0, 2.0, 3.0], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match=r"scale: expected 'ratio' or 'difference', got 'log'"):
        compare(frame, baseline="easy", metrics=["mean_wait"], scale="log")


def test_ratio_interval_refuses_a_ratio_of_zero_and_leaves_out_only_missing_ones():
    assert all(math.isnan(x) for x in ratio_interval([0.5, 0.0, 2.0]))
    assert all(math.isnan(x) for x in ratio_interval([0.5, math.inf, 2.0]))
    mean, low, high = ratio_interval([0.5, float("nan"), 2.0])
    assert mean == pytest.approx(1.0)
    half = T_975_1 * math.sqrt(2 * math.log(2) ** 2) / math.sqrt(2)
    assert low == pytest.approx(math.exp(-half)) and high == pytest.approx(math.exp(half))


def test_the_warning_names_a_few_groups_per_metric_and_counts_the_rest():
    loads = [0.5, 0.6, 0.7, 0.8, 0.9]
    frame = pd.DataFrame(
        {
            "policy.name": ["easy"] * 15 + ["amcbf"] * 15,
            "workload.load": [x for x in loads for _ in range(3)] * 2,
            "seed": [1, 2, 3] * 10,
            "migrations_per_job": [0.0] * 15 + [0.1] * 15,
        }
    )
    with pytest.warns(UndefinedRatioWarning) as caught:
        compare(frame, baseline="easy", metrics=["migrations_per_job"], by=["workload.load"])
    message = str(caught[0].message)
    assert "migrations_per_job in 5 group(s)" in message and "and 2 more" in message
    assert "amcbf (workload.load=0.5): 3 of 3 pairs" in message and "workload.load=0.9" not in message


def test_a_negative_value_has_no_log_ratio_either():
    # A metric of any sign (a gain, a difference of times) cannot be compared by ratio.
    frame = _frame([10.0, 20.0, 40.0], [-5.0, 12.0, 20.0], metric="gain")
    expected = r"0 or below.*gain in 1 group\(s\): amcbf \(workload.load=0.6\): 1 of 3 pairs"
    with pytest.warns(UndefinedRatioWarning, match=expected):
        row = compare(frame, baseline="easy", metrics=["gain"], by=["workload.load"]).iloc[0]
    assert math.isnan(row["gain_ratio"])
