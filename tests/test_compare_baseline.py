"""compare() where the baseline was not run at every setting of ``by``: EASY, which does not
migrate, run at one migration cost while AMCBF runs at four. Those groups had no pair and came
out as nan rows with ``_n`` 0, silently; now they are named in a warning that says which keys
the baseline does not vary, and ``match`` pairs the baseline on fewer keys than ``by``.

Expected ratios are computed by hand from the frames.
"""

from __future__ import annotations

import math
import warnings

import pandas as pd
import pytest

from tiersweep.analysis import compare
from tiersweep.analysis.stats import MissingBaselineWarning

COST = "platform.migration_cost"


def _frame() -> pd.DataFrame:
    # EASY at cost 20 only: bsld 10, 20, 40 on seeds 1-3. AMCBF at costs 0, 20 and 600.
    rows = [{"policy.name": "easy", COST: 20, "seed": s, "mean_bsld": v} for s, v in zip((1, 2, 3), (10.0, 20.0, 40.0))]
    amcbf = {0: (4.0, 8.0, 16.0), 20: (5.0, 10.0, 20.0), 600: (10.0, 20.0, 40.0)}
    for cost, values in amcbf.items():
        rows += [{"policy.name": "amcbf", COST: cost, "seed": s, "mean_bsld": v} for s, v in zip((1, 2, 3), values)]
    return pd.DataFrame(rows)


def test_groups_without_a_baseline_are_named_with_the_keys_it_does_not_vary():
    with pytest.warns(MissingBaselineWarning) as caught:
        table = compare(_frame(), baseline="easy", metrics=["mean_bsld"], by=[COST])
    table = table.set_index(COST)
    assert table.loc[20, "mean_bsld_ratio"] == pytest.approx(0.5) and table.loc[20, "mean_bsld_n"] == 3
    assert math.isnan(table.loc[0, "mean_bsld_ratio"]) and table.loc[0, "mean_bsld_n"] == 0
    message = str(caught[0].message)
    assert "'easy' has no run in 2 group(s)" in message
    assert "amcbf (platform.migration_cost=0)" in message and "amcbf (platform.migration_cost=600)" in message
    assert "match=[]" in message  # the one key of by that the baseline holds fixed, left out


def test_match_pairs_the_baseline_on_the_keys_named_only():
    with warnings.catch_warnings():
        warnings.simplefilter("error", MissingBaselineWarning)
        table = compare(_frame(), baseline="easy", metrics=["mean_bsld"], by=[COST], match=[]).set_index(COST)
    # Per seed: 4/10, 8/20, 16/40 = 0.4 each at cost 0; 0.5 at 20; 1.0 at 600 (deterministic ratios).
    assert table.loc[0, "mean_bsld_ratio"] == pytest.approx(0.4)
    assert table.loc[20, "mean_bsld_ratio"] == pytest.approx(0.5)
    assert table.loc[600, "mean_bsld_ratio"] == pytest.approx(1.0)
    assert (table["mean_bsld_n"] == 3).all()


def test_match_must_be_keys_of_by():
    with pytest.raises(ValueError, match=r"match: 'workload.load' is not a key of by \(platform.migration_cost\)"):
        compare(_frame(), baseline="easy", metrics=["mean_bsld"], by=[COST], match=["workload.load"])


def test_a_baseline_with_several_rows_per_matched_setting_is_refused():
    frame = _frame()
    frame = pd.concat([frame, frame.assign(**{COST: 600}).query("`policy.name` == 'easy'")])
    with pytest.raises(ValueError, match="has several rows per"):
        compare(frame, baseline="easy", metrics=["mean_bsld"], by=[COST], match=[])


def test_a_baseline_with_no_run_at_all_is_said_to_have_none():
    # A misspelt baseline: every group is unpaired, and the hint lists the policies there are.
    expected = r"'EASY' has no run in 4 group\(s\).*no run at all.*'amcbf', 'easy'"
    with pytest.warns(MissingBaselineWarning, match=expected):
        table = compare(_frame(), baseline="EASY", metrics=["mean_bsld"], by=[COST])
    assert table["mean_bsld_ratio"].isna().all()
