"""One point of a results table is one set of inputs: runs of different inputs written into one
folder are never averaged together.

Three ways a folder comes to hold different inputs under one grid point, each reproduced with a
real serial sweep of a tiny SWF log: (a) a trace regenerated at the same path with other
content and the sweep run again; (b) two configs that share one ``name:``; (c) one config run
with different ``--set`` values. The report's table, :func:`summary` and :func:`compare` keep
such rows apart (a grouping column, shown in the table) or refuse with the column and its
values; the report's Config section lists every config the folder holds.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq
import pytest

from sweep_helpers import write_swf, write_yaml
from test_report import Page
from tiersweep.analysis.claims import ratio_below
from tiersweep.analysis.load import load
from tiersweep.analysis.report import write_report
from tiersweep.analysis.stats import FewSeedsWarning, compare, summary
from tiersweep.core.errors import TiersweepError
from tiersweep.sweep.config import expand, load_sweep_config, parse_sweep_config
from tiersweep.sweep.driver import run_sweep
from tiersweep.sweep.points import MixedPointsError, point_columns
from tiersweep.sweep.summary import summary_frame

NAME = "mixed"


def trace_raw(trace: Path, **base_platform: Any) -> dict[str, Any]:
    """A sweep of two policies over a trace, two seeds (4 cells of a few milliseconds)."""
    return {
        "name": NAME,
        "base": {"workload": {"trace": str(trace)}, "platform": {"nodes": 64, "tiers": 2, **base_platform}},
        "grid": {"policy.name": ["easy", "amcbf"]},
        "seeds": 2,
    }


def sweep(config, out: Path) -> None:
    run_sweep(config, out, backend="serial", progress=False)


def page_of(root: Path, tmp_path: Path) -> Page:
    return Page(write_report(root, tmp_path / "report").read_text(encoding="utf-8"))


def seeds_column(page: Page) -> list[str]:
    return [row[-1] for row in page.body_rows]


@pytest.fixture
def regenerated(tmp_path):
    """(a) One config swept over a trace, the trace rewritten with other jobs, swept again."""
    trace = write_swf(tmp_path / "log.swf", jobs=30)
    out = tmp_path / "out"
    sweep(parse_sweep_config(trace_raw(trace)), out)
    write_swf(trace, jobs=40)
    config = parse_sweep_config(trace_raw(trace))
    sweep(config, out)
    return {"root": out / NAME, "config": config, "out": out}


@pytest.fixture
def two_configs(tmp_path):
    """(b) Two configs named alike (64 and 96 nodes) swept into one folder."""
    trace = write_swf(tmp_path / "log.swf")
    out = tmp_path / "out"
    sweep(parse_sweep_config(trace_raw(trace)), out)
    sweep(parse_sweep_config(trace_raw(trace, nodes=96)), out)
    return out / NAME


@pytest.fixture
def two_overrides(tmp_path):
    """(c) One config file swept with --set platform.migration_cost=10, then =600."""
    trace = write_swf(tmp_path / "log.swf")
    path = write_yaml(tmp_path / "mixed.yaml", trace_raw(trace))
    out = tmp_path / "out"
    sweep(load_sweep_config(path, ["platform.migration_cost=10"]), out)
    sweep(load_sweep_config(path, ["platform.migration_cost=600"]), out)
    return out / NAME


# -- the report's table: one row per set of inputs, each with its own seeds ------------------------


def test_a_regenerated_trace_is_a_point_of_its_own_named_by_its_digest(regenerated, tmp_path):
    runs = load(regenerated["root"])
    assert len(runs) == 8 and runs["trace_digest"].nunique() == 2
    page = page_of(regenerated["root"], tmp_path)
    assert page.header[:2] == ["policy", "trace digest"]
    assert len(page.body_rows) == 4 and seeds_column(page) == ["2"] * 4
    shown = {row[1] for row in page.body_rows}
    assert shown == {digest[:12] for digest in runs["trace_digest"]}


def test_two_configs_of_one_name_are_two_points_and_both_configs_are_shown(two_configs, tmp_path):
    page = page_of(two_configs, tmp_path)
    assert "platform.nodes" in page.header
    assert len(page.body_rows) == 4 and seeds_column(page) == ["2"] * 4
    nodes = page.header.index("platform.nodes")
    assert sorted(row[nodes] for row in page.body_rows) == ["64", "64", "96", "96"]
    assert page.config.count("name: mixed") == 2
    assert "nodes: 64" in page.config and "nodes: 96" in page.config


def test_two_override_sets_are_two_points_and_both_are_shown(two_overrides, tmp_path):
    page = page_of(two_overrides, tmp_path)
    header = "migration cost (s)"
    assert header in page.header
    assert len(page.body_rows) == 4 and seeds_column(page) == ["2"] * 4
    cost = page.header.index(header)
    assert sorted(row[cost] for row in page.body_rows) == ["10", "10", "600", "600"]
    assert "platform.migration_cost=10" in page.config and "platform.migration_cost=600" in page.config


# -- summary(), compare() and the claims on the loaded rows: a refusal naming the column -----------


def test_summary_and_compare_refuse_rows_of_two_traces_in_one_group(regenerated):
    runs = load(regenerated["root"])
    digests = r"\([0-9a-f]{12}, [0-9a-f]{12}\)"
    with pytest.raises(MixedPointsError, match=rf"several rows of policy.name=amcbf differ in trace_digest {digests}"):
        summary(runs, by=["policy.name"], metrics=["mean_wait"])
    with pytest.raises(MixedPointsError, match="trace_digest"):
        compare(runs, baseline="easy", metrics=["mean_wait"])
    with pytest.raises(MixedPointsError, match="trace_digest"):
        ratio_below(("amcbf",), "easy", ("mean_wait",), by=("workload.trace",))(runs)
    # Grouped by the columns that identify a point, each group has its own two seeds.
    keys = point_columns(runs, ["policy.name"])
    assert keys == ["policy.name", "trace_digest"]
    with pytest.warns(FewSeedsWarning, match="fewest: 2"):
        table = summary(runs, by=keys, metrics=["mean_wait"])
    assert len(table) == 4 and set(table["mean_wait_n"]) == {2}


@pytest.mark.parametrize(
    "case, column", [("two_configs", "platform.nodes"), ("two_overrides", "platform.migration_cost")]
)
def test_summary_refuses_rows_of_two_configs_in_one_group(case, column, request):
    runs = load(request.getfixturevalue(case))
    with pytest.raises(MixedPointsError, match=rf"differ in {column} \(.*\): they are different runs, .*add it to by="):
        summary(runs, by=["policy.name"], metrics=["mean_wait"])
    assert point_columns(runs, ["policy.name"]) == ["policy.name", column]


def test_a_hand_made_frame_that_mixes_loads_is_refused():
    loads, seeds = [0.6] * 3 + [0.9] * 3, [1, 2, 3] * 2
    frame = pd.DataFrame({"policy.name": "a", "workload.load": loads, "seed": seeds, "m": [1.0, 2, 3, 4, 5, 6]})
    with pytest.raises(MixedPointsError, match=r"policy.name=a.*differ in workload.load \(0.6, 0.9\)"):
        summary(frame, by=["policy.name"], metrics=["m"])
    assert len(summary(frame, by=["policy.name", "workload.load"], metrics=["m"])) == 2


# -- what cannot be told apart is refused ----------------------------------------------------------


def test_rows_of_a_regenerated_trace_without_digests_are_refused(regenerated, tmp_path):
    # A folder written before runs recorded their trace's digest: nothing stored tells the two
    # logs apart, so the report cannot keep them apart either.
    for part in (regenerated["root"] / "runs").glob("part-*.parquet"):
        table = pq.read_table(part)
        pq.write_table(table.drop_columns(["trace_digest"]), part)
    with pytest.raises(TiersweepError, match=r"2 runs of policy.name=(easy|amcbf).*seed \d+.*fresh folder"):
        write_report(regenerated["root"], tmp_path / "report")
    assert not (tmp_path / "report" / "index.html").exists()


# -- the sweep's own summary -----------------------------------------------------------------------


def test_the_sweep_summary_shows_only_the_cells_of_the_config_it_ran(regenerated):
    cells = expand(regenerated["config"])
    frame = summary_frame(cells, str(regenerated["root"] / "runs"), ["mean_wait"])
    assert list(frame["policy.name"]) == ["easy", "amcbf"] and list(frame["seeds"]) == [2, 2]


def test_a_folder_whose_manifest_kept_only_the_last_config_shows_the_others_from_its_files(two_configs, tmp_path):
    # Manifests written before they kept every config: the runs files' metadata still has each.
    manifest_path = two_configs / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    del manifest["configs"]
    manifest_path.write_text(json.dumps(manifest))
    page = page_of(two_configs, tmp_path)
    assert "platform.nodes" in page.header and len(page.body_rows) == 4
    assert "nodes: 64" in page.config and "nodes: 96" in page.config


def test_a_claim_on_a_folder_of_two_configs_is_not_measured_and_says_why(tmp_path):
    from tiersweep.analysis.claims import measure

    def config(nodes: int):
        return parse_sweep_config(
            {
                "name": "liu2013_fworkload",
                "base": {"workload": {"model": "jann97", "jobs": 100}, "platform": {"nodes": nodes, "tiers": 2}},
                "grid": {"policy.name": ["easy", "amcbf"], "workload.load": [0.6]},
                "seeds": 2,
            }
        )

    sweep(config(64), tmp_path)
    sweep(config(96), tmp_path)
    verdicts = [verdict for claim, verdict in measure(tmp_path) if claim.sweep == "liu2013_fworkload"]
    # (Claims about policies this folder lacks have nothing to measure either way.)
    refused = [v for v in verdicts if "no cells stored" not in v.text]
    assert len(refused) >= 5 and all(not v.holds and v.settings == 0 for v in refused)
    assert all(v.text.startswith("not measured: ") and "differ in platform.nodes (64, 96)" in v.text for v in refused)
