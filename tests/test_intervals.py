"""Intervals that respect their quantity's range: positive metrics stay positive, fractions
stay in [0, 1], ratios are taken on the log scale, and too few seeds are warned about.

Expected values are worked out by hand from Student-t quantiles typed in from tables, not
from the code under test: t(0.975, 1) = 12.706205, t(0.975, 2) = 4.302653,
t(0.975, 19) = 2.093024, t(0.95, 2) = 2.919986.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

from tiersweep.analysis.stats import (
    MIN_SEEDS,
    FewSeedsWarning,
    compare,
    mean_interval,
    metric_scale,
    ratio_interval,
    summary,
    t_interval,
)
from tiersweep.sweep.summary import format_summary

T_975_1 = 12.706204736174698
T_975_2 = 4.302652729911275
T_975_19 = 2.093024054408309
T_95_2 = 2.919985580355516


def expit(x: float) -> float:
    return 1 / (1 + math.exp(-x))


def runs(values: list[float], metric: str = "m", policy: str = "a") -> pd.DataFrame:
    """One ok row per value, seeds 1, 2, ..."""
    return pd.DataFrame({"policy.name": policy, "seed": range(1, len(values) + 1), "status": "ok", metric: values})


# -- positive metrics: the modified Cox interval ----------------------------------------------


def test_cox_interval_of_1_2_4_by_hand():
    # y = log x = (0, ln 2, 2 ln 2): ybar = ln 2, s^2 = ln(2)^2 = 0.480453, s^4 = 0.230835.
    # Centre ybar + s^2/2 = 0.933374; half-width t(0.975, 2) * sqrt(s^2/3 + s^4/4)
    # = 4.302653 * sqrt(0.160151 + 0.057709) = 2.008283; exp(0.933374 -+ 2.008283)
    # = [0.341329, 18.947202]. (Student's t gives 2.333 -+ 3.795 = [-1.461, 6.128].)
    ln2 = math.log(2)
    centre = ln2 + ln2**2 / 2
    half = T_975_2 * math.sqrt(ln2**2 / 3 + ln2**4 / 4)
    low, high = mean_interval([1.0, 2.0, 4.0])
    assert low == pytest.approx(math.exp(centre - half)) and low == pytest.approx(0.341329, abs=1e-6)
    assert high == pytest.approx(math.exp(centre + half)) and high == pytest.approx(18.947202, abs=1e-5)
    assert t_interval([1.0, 2.0, 4.0])[0] < 0 < low


def test_summary_of_a_positive_metric_uses_the_cox_interval_and_keeps_the_arithmetic_mean():
    table = summary(runs([1.0, 2.0, 4.0], "mean_wait"), by=["policy.name"], metrics=["mean_wait"]).iloc[0]
    assert table["mean_wait_mean"] == pytest.approx(7 / 3)
    assert table["mean_wait_std"] == pytest.approx(math.sqrt(7 / 3))
    assert (table["mean_wait_ci_low"], table["mean_wait_ci_high"]) == pytest.approx((0.341329, 18.947202), abs=1e-5)


def test_the_issues_two_seed_mean_response_gets_a_positive_interval():
    # The issue: mean_response 9005 [-2689, 20700] from two seeds. Values 9005 -+ 920.4 give
    # exactly that t interval: 9005 -+ 12.706205 * 1301.6 / sqrt(2).
    values = [8084.6, 9925.4]
    t_low, t_high = t_interval(values)
    assert t_low == pytest.approx(-2689.8, abs=0.1) and t_high == pytest.approx(20699.8, abs=0.1)
    # Cox with n = 2: d = ln(9925.4 / 8084.6) / 2 = 0.102568, s^2 = 2 d^2, so the centre is
    # ybar + d^2 and the half-width t * sqrt(d^2 + 2 d^4); exp(ybar) = sqrt(8084.6 * 9925.4)
    # = 8957.84: [8957.84 * exp(d^2 - 1.31727), 8957.84 * exp(d^2 + 1.31727)] = [2425.8, 33782.4].
    d = math.log(values[1] / values[0]) / 2
    geometric = math.sqrt(values[0] * values[1])
    half = T_975_1 * math.sqrt(d**2 + 2 * d**4)
    with pytest.warns(FewSeedsWarning):
        row = summary(runs(values, "mean_response"), by=["policy.name"], metrics=["mean_response"]).iloc[0]
    assert row["mean_response_mean"] == pytest.approx(9005.0)
    assert row["mean_response_ci_low"] == pytest.approx(geometric * math.exp(d**2 - half))
    assert row["mean_response_ci_high"] == pytest.approx(geometric * math.exp(d**2 + half))
    assert row["mean_response_ci_low"] == pytest.approx(2425.8, abs=0.1)
    assert 0 < row["mean_response_ci_low"] < 9005 < row["mean_response_ci_high"]


def test_a_mean_the_cox_interval_misses_gets_the_log_delta_interval():
    # Nineteen seeds at 1 and one at e^4 = 54.598: far from log-normal. Cox gives [1.106,
    # 3.001], which misses the arithmetic mean 3.679908; the interval is then
    # mean * exp(-+ t(0.975, 19) * s / (mean * sqrt(20))) with s = 11.984911:
    # 3.679908 * exp(-+ 1.524253) = [0.801424, 16.897081].
    values = [1.0] * 19 + [math.exp(4)]
    mean, sd = float(np.mean(values)), float(np.std(values, ddof=1))
    half = T_975_19 * sd / (mean * math.sqrt(20))
    low, high = mean_interval(values)
    assert (low, high) == pytest.approx((mean * math.exp(-half), mean * math.exp(half)))
    assert (low, high) == pytest.approx((0.801424, 16.897081), abs=1e-5)
    assert 0 < low < mean < high


def test_the_level_argument_is_used():
    # Cox at 90 %: t(0.95, 2) = 2.919986 in place of 4.302653, for 1, 2, 4.
    ln2 = math.log(2)
    centre, root = ln2 + ln2**2 / 2, math.sqrt(ln2**2 / 3 + ln2**4 / 4)
    low, high = mean_interval([1.0, 2.0, 4.0], level=0.90)
    assert (low, high) == pytest.approx((math.exp(centre - T_95_2 * root), math.exp(centre + T_95_2 * root)))
    assert summary(runs([1.0, 2.0, 4.0]), by=["policy.name"], metrics=["m"], level=0.90).iloc[0][
        "m_ci_low"
    ] == pytest.approx(low)


def test_positive_intervals_stay_positive_and_contain_the_mean():
    rng = np.random.default_rng(7)
    for n in (2, 3, 4, 5, 8):
        for _ in range(200):
            values = rng.lognormal(rng.uniform(-3, 8), rng.uniform(0.01, 2.0), n)
            if rng.random() < 0.3:
                values[: rng.integers(1, n)] = 0.0  # some zeros, mean still positive
            low, high = mean_interval(values)
            assert 0 < low <= values.mean() <= high, values


# -- zeros, fractions, quantities of any sign ---------------------------------------------------


def test_all_zeros_give_zero_and_some_zeros_stay_above_zero():
    frame = pd.concat(
        [runs([0.0, 0.0, 0.0], "migrations_per_job", "easy"), runs([0.0, 0.1, 0.2], "migrations_per_job", "amcbf")]
    )
    table = summary(frame, by=["policy.name"], metrics=["migrations_per_job"]).set_index("policy.name")
    assert (table.loc["easy", "migrations_per_job_ci_low"], table.loc["easy", "migrations_per_job_ci_high"]) == (
        0.0,
        0.0,
    )
    # 0, 0.1, 0.2: mean 0.1, s 0.1; on the log scale of the mean, half-width
    # t(0.975, 2) * s / (mean * sqrt(3)) = 4.302653 / sqrt(3) = 2.484138:
    # 0.1 * exp(-+ 2.484138) = [0.008340, 1.199078]. (Student's t: [-0.148, 0.348].)
    half = T_975_2 / math.sqrt(3)
    low, high = table.loc["amcbf", "migrations_per_job_ci_low"], table.loc["amcbf", "migrations_per_job_ci_high"]
    assert (low, high) == pytest.approx((0.1 * math.exp(-half), 0.1 * math.exp(half)))
    assert (low, high) == pytest.approx((0.008340, 1.199078), abs=1e-6)
    assert t_interval([0.0, 0.1, 0.2])[0] < 0 < low


def test_a_fraction_stays_within_0_and_1_on_the_logit_scale():
    # Utilisation 0.5, 0.7, 0.9: mean 0.7, s 0.2. Student's t: 0.7 -+ 0.496828 = [0.203, 1.197],
    # above 1. Logit scale: logit(0.7) = ln(7/3) = 0.847298, half-width
    # 4.302653 * 0.2 / (sqrt(3) * 0.7 * 0.3) = 2.365845: expit(0.847298 -+ 2.365845)
    # = [0.179675, 0.961326].
    assert t_interval([0.5, 0.7, 0.9])[1] > 1
    half = T_975_2 * 0.2 / (math.sqrt(3) * 0.21)
    row = summary(runs([0.5, 0.7, 0.9], "utilization"), by=["policy.name"], metrics=["utilization"]).iloc[0]
    low, high = row["utilization_ci_low"], row["utilization_ci_high"]
    assert (low, high) == pytest.approx((expit(math.log(7 / 3) - half), expit(math.log(7 / 3) + half)))
    assert (low, high) == pytest.approx((0.179675, 0.961326), abs=1e-6)
    assert 0 < low < 0.7 < high < 1


def test_fractions_at_their_bounds():
    # An accept rate of exactly 1 in two of three seeds: still strictly inside (0, 1).
    low, high = mean_interval([1.0, 1.0, 0.8], scale="unit")
    assert 0 < low < 14 / 15 < high < 1
    assert mean_interval([1.0, 1.0, 1.0], scale="unit") == (1.0, 1.0)
    assert mean_interval([0.0, 0.0], scale="unit") == (0.0, 0.0)
    # A "fraction" just above 1 (round-off) is not forced onto the logit scale: the interval
    # falls back to the positive one instead of failing.
    low, high = mean_interval([0.99, 1.0 + 1e-12, 0.995], scale="unit")
    assert 0 < low < high and high > 1


def test_which_metrics_are_fractions():
    for name in (
        "utilization",
        "accept_rate",
        "efficiency",
        "occupancy",
        "tier0_share",
        "tier2_share",
        "util_at_occ_40",
        "time_at_occ_100",
    ):
        assert metric_scale(name) == "unit", name
    for name in ("mean_wait", "mean_bsld", "migrations_per_job", "makespan", "p90_xf"):
        assert metric_scale(name) is None, name


def test_a_metric_that_can_be_negative_keeps_the_t_interval():
    # -1, 1, 3: mean 1, s 2: 1 -+ 4.302653 * 2 / sqrt(3) = [-3.968, 5.968].
    half = T_975_2 * 2 / math.sqrt(3)
    assert mean_interval([-1.0, 1.0, 3.0]) == pytest.approx((1 - half, 1 + half))
    # Declared "real", a positive sample keeps Student's t too.
    row = summary(runs([1.0, 2.0, 3.0], "gain"), by=["policy.name"], metrics=["gain"], scales={"gain": "real"}).iloc[0]
    assert (row["gain_ci_low"], row["gain_ci_high"]) == pytest.approx(
        (2 - T_975_2 / math.sqrt(3), 2 + T_975_2 / math.sqrt(3))
    )
    with pytest.raises(ValueError, match="scale"):
        mean_interval([1.0, 2.0], scale="log")


def test_one_value_has_no_interval_and_missing_values_are_left_out():
    assert all(math.isnan(v) for v in mean_interval([5.0]))
    assert mean_interval([1.0, float("nan"), 2.0, 4.0]) == pytest.approx(mean_interval([1.0, 2.0, 4.0]))


# -- ratios ---------------------------------------------------------------------------------------


def test_the_issues_ratio_example_stays_positive():
    # The issue: a ratio 22.4 [-62.9, 107.6] from two seeds: the arithmetic mean and t
    # interval of the paired ratios 15.69 and 29.11. On the log scale: geometric mean
    # sqrt(15.69 * 29.11) = 21.371380, half-width t(0.975, 1) * sd(log r) / sqrt(2)
    # = 12.706205 * ln(29.11 / 15.69) / 2 = 12.706205 * 0.309029: [0.421248, 1084.245].
    ratios = [15.69, 29.11]
    assert t_interval(ratios) == pytest.approx((-62.86, 107.66), abs=0.01)
    d = math.log(ratios[1] / ratios[0]) / 2
    geometric = math.sqrt(ratios[0] * ratios[1])
    assert ratio_interval(ratios) == pytest.approx(
        (geometric, geometric * math.exp(-T_975_1 * d), geometric * math.exp(T_975_1 * d))
    )
    frame = pd.DataFrame(
        {
            "policy.name": ["easy", "easy", "amcbf", "amcbf"],
            "seed": [1, 2, 1, 2],
            "mean_bsld": [100.0, 100.0, 1569.0, 2911.0],
        }
    )
    with pytest.warns(FewSeedsWarning, match="fewest: 2"):
        row = compare(frame, baseline="easy", metrics=["mean_bsld"]).iloc[0]
    assert row["mean_bsld_ratio"] == pytest.approx(21.371380, abs=1e-5)
    assert row["mean_bsld_ci_low"] == pytest.approx(0.421248, abs=1e-5)
    assert row["mean_bsld_ci_high"] == pytest.approx(1084.245, abs=1e-2)
    assert 0 < row["mean_bsld_ci_low"] < row["mean_bsld_ratio"] < row["mean_bsld_ci_high"]


# -- too few seeds --------------------------------------------------------------------------------


def test_summary_warns_about_too_few_seeds_at_the_callers_line():
    frame = pd.concat([runs([1.0, 2.0], policy="a"), runs([1.0, 2.0, 3.0], policy="b")])
    with pytest.warns(FewSeedsWarning, match=r"1 of 2 group\(s\) have fewer than 3 seeds \(fewest: 2\)") as caught:
        summary(frame, by=["policy.name"], metrics=["m"])
    assert issubclass(FewSeedsWarning, UserWarning)
    assert [w.filename for w in caught if w.category is FewSeedsWarning] == [__file__]


def test_failed_rows_do_not_count_as_seeds():
    frame = runs([1.0, 2.0, 3.0]).assign(status=["ok", "ok", "failed"])
    with pytest.warns(FewSeedsWarning, match="fewest: 2"):
        summary(frame, by=["policy.name"], metrics=["m"])


def test_compare_warns_about_too_few_paired_seeds():
    # Three seeds each, but only two pair up (seed 3 of the baseline is missing).
    frame = pd.DataFrame(
        {
            "policy.name": ["easy", "easy", "amcbf", "amcbf", "amcbf"],
            "seed": [1, 2, 1, 2, 3],
            "mean_wait": [10.0, 20.0, 5.0, 12.0, 7.0],
        }
    )
    with pytest.warns(FewSeedsWarning, match="fewest: 2"):
        row = compare(frame, baseline="easy", metrics=["mean_wait"]).iloc[0]
    assert row["mean_wait_n"] == 2


def test_three_seeds_give_no_warning():
    frame = pd.DataFrame(
        {
            "policy.name": ["easy"] * MIN_SEEDS + ["amcbf"] * MIN_SEEDS,
            "seed": list(range(MIN_SEEDS)) * 2,
            "mean_wait": [10.0, 20.0, 40.0, 4.0, 12.0, 20.0],
        }
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", FewSeedsWarning)  # a warning fails the test
        summary(frame, by=["policy.name"], metrics=["mean_wait"])
        compare(frame, baseline="easy", metrics=["mean_wait"])


def test_the_sweep_summary_table_warns_under_the_table():
    frame = pd.DataFrame({"policy.name": ["easy", "amcbf"], "seeds": [2, 3], "failed": [1, 0], "mean_wait": [1.0, 2.0]})
    text = format_summary(frame)
    lines = text.splitlines()
    assert lines[0].split() == ["policy.name", "seeds", "failed", "mean_wait"]
    assert lines[-1].startswith("warning: 1 of 2 group(s) have fewer than 3 seeds (fewest: 2)")
    # A grid point whose seeds all failed has no interval to warn about (its failures are
    # in the table); three seeds everywhere: no warning.
    for seeds in ([3, 0], [3, 5]):
        text = format_summary(frame.assign(seeds=seeds))
        assert "warning" not in text and len(text.splitlines()) == 3
    assert format_summary(frame.assign(seeds=[1, 1])).splitlines()[-1].endswith("run more seeds")
