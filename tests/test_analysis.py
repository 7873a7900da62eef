"""analysis/: loading (also older files), summary and compare with intervals, figures, the
HTML report, and the example notebook.

Expected intervals are computed from Student-t quantiles typed in from tables (t(0.975, 2) =
4.302653, t(0.975, 1) = 12.706205), not from the code under test.
"""

from __future__ import annotations

import json
import math
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest

from tiersweep.analysis import compare, load, summary
from tiersweep.analysis.plots import (
    PAPER000_METRICS,
    gantt,
    metric_grid,
    utilisation_over_time,
    utilisation_vs_occupancy,
)
from tiersweep.analysis.report import write_report
from tiersweep.cli import main
from tiersweep.sweep.config import parse_sweep_config
from tiersweep.sweep.driver import run_sweep

FIXTURES = Path(__file__).parent / "fixtures"
T_975_2 = 4.302652729911275
T_975_1 = 12.706204736174698
PNG = b"\x89PNG\r\n\x1a\n"


# -- summary and compare on hand-made frames -----------------------------------------------------


def test_summary_gives_mean_sd_count_and_t_interval_over_seeds():
    frame = pd.DataFrame(
        {
            "policy.name": ["a", "a", "a", "b", "b", "b"],
            "seed": [1, 2, 3, 1, 2, 3],
            "status": ["ok", "ok", "ok", "ok", "ok", "failed"],
            "m": [1.0, 2.0, 3.0, 10.0, 14.0, 999.0],
        }
    )
    # Declared "real" (a quantity of any sign): Student's t. Positive metrics get a positive
    # interval instead (tests/test_intervals.py). b has two ok seeds: a warning.
    with pytest.warns(UserWarning, match="fewer than 3 seeds"):
        table = summary(frame, by=["policy.name"], metrics=["m"], scales={"m": "real"}).set_index("policy.name")
    # a: mean 2, sd 1, n 3 -> 2 +- 4.302653 / sqrt(3)
    assert table.loc["a", "m_mean"] == 2.0 and table.loc["a", "m_std"] == 1.0 and table.loc["a", "m_n"] == 3
    half = T_975_2 * 1.0 / math.sqrt(3)
    assert table.loc["a", "m_ci_low"] == pytest.approx(2 - half) and table.loc["a", "m_ci_high"] == pytest.approx(
        2 + half
    )
    # b: the failed row is left out: mean 12, sd 2*sqrt(2), n 2 -> 12 +- 12.7062 * 2
    assert table.loc["b", "m_mean"] == 12.0 and table.loc["b", "m_n"] == 2
    assert table.loc["b", "m_std"] == pytest.approx(2 * math.sqrt(2))
    assert table.loc["b", "m_ci_high"] == pytest.approx(12 + T_975_1 * 2 * math.sqrt(2) / math.sqrt(2))


def test_summary_of_a_single_seed_has_no_interval():
    frame = pd.DataFrame({"policy.name": ["a"], "seed": [1], "m": [5.0]})
    with pytest.warns(UserWarning, match=r"fewest: 1\)"):
        row = summary(frame, by=["policy.name"], metrics=["m"]).iloc[0]
    assert row["m_mean"] == 5.0 and row["m_n"] == 1 and math.isnan(row["m_ci_low"]) and math.isnan(row["m_std"])


def test_compare_pairs_by_seed_and_gives_ratio_intervals():
    frame = pd.DataFrame(
        {
            "policy.name": ["easy"] * 3 + ["amcbf"] * 3,
            "workload.load": [0.8] * 6,
            "seed": [1, 2, 3, 3, 2, 1],  # rows out of order: pairing must use the seed
            "mean_bsld": [10.0, 20.0, 40.0, 20.0, 12.0, 4.0],
        }
    )
    # Ratios per seed: 4/10 = 0.4, 12/20 = 0.6, 20/40 = 0.5. On the log scale: the geometric
    # mean (0.4 * 0.6 * 0.5) ** (1/3) = 0.4932, and exp(mean log +- t * sd(log) / sqrt(3)).
    row = compare(frame, baseline="easy", metrics=["mean_bsld"], by=["workload.load"]).iloc[0]
    assert row["policy.name"] == "amcbf" and row["mean_bsld_n"] == 3
    logs = [math.log(0.4), math.log(0.6), math.log(0.5)]
    mean = sum(logs) / 3
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / 2)
    half = T_975_2 * sd / math.sqrt(3)
    assert row["mean_bsld_ratio"] == pytest.approx((0.4 * 0.6 * 0.5) ** (1 / 3))
    assert row["mean_bsld_ci_low"] == pytest.approx(math.exp(mean - half))
    assert row["mean_bsld_ci_high"] == pytest.approx(math.exp(mean + half))
    assert 0 < row["mean_bsld_ci_low"] < row["mean_bsld_ratio"] < row["mean_bsld_ci_high"]


def test_a_ratio_interval_stays_positive_where_a_symmetric_one_would_not():
    # Two seeds with ratios 0.1 and 2.0: the arithmetic interval 1.05 +- 12.7 * 0.67 runs far
    # below zero; the log-scale one is positive and symmetric in log around the geometric mean.
    from tiersweep.analysis.stats import ratio_interval

    mean, low, high = ratio_interval([0.1, 2.0])
    assert mean == pytest.approx(math.sqrt(0.2))
    assert 0 < low < mean < high
    assert math.log(mean) - math.log(low) == pytest.approx(math.log(high) - math.log(mean))


def test_compare_refuses_an_ambiguous_baseline():
    frame = pd.DataFrame(
        {"policy.name": ["easy", "easy", "x"], "seed": [1, 1, 1], "workload.load": [0.5, 0.9, 0.5], "m": [1, 2, 3]}
    )
    with pytest.raises(ValueError, match="several rows"):
        compare(frame, baseline="easy", metrics=["m"])


# -- a small real sweep ----------------------------------------------------------------------------

SMALL = {
    "name": "small_analysis",
    "base": {"workload": {"model": "jann97", "jobs": 400}, "platform": {"nodes": 64, "tiers": 2}},
    "grid": {"policy.name": ["easy", "amcbf"], "workload.load": [0.6, 0.9]},
    "seeds": 2,
}


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    out = tmp_path_factory.mktemp("analysis")
    outcome = run_sweep(parse_sweep_config(SMALL), out, backend="serial", with_jobs=True, progress=False)
    assert outcome.failed == 0
    return out / SMALL["name"]


def is_png(path: Path) -> bool:
    data = Path(path).read_bytes()
    return data[:8] == PNG and len(data) > 5_000


def test_load_reads_runs_jobs_and_segments(swept):
    runs = load(swept)
    assert len(runs) == 8 and set(runs["policy.name"]) == {"easy", "amcbf"}
    assert runs["cell_index"].tolist() == list(range(8))
    jobs, segments = load(swept, "jobs"), load(swept, "segments")
    assert len(jobs) == 8 * 400
    assert set(segments["cell_id"]) == set(runs["cell_id"])
    # Every job has at least one stay on VMs; stays of a job never overlap.
    assert (segments.groupby("cell_id")["job_id"].nunique() == 400).all()


def test_every_plot_function_writes_a_png(swept, tmp_path):
    runs = load(swept)
    with pytest.warns(UserWarning, match="fewer than 3 seeds"):  # 2 seeds: summary() says so
        assert is_png(metric_grid(runs, "workload.load", PAPER000_METRICS, tmp_path / "grid.png", log_y=["mean_bsld"]))
    segments = load(swept, "segments")
    cell = runs.loc[runs["policy.name"] == "amcbf", "cell_id"].iloc[0]
    one = segments[segments["cell_id"] == cell]
    assert is_png(gantt(one, tmp_path / "gantt.png"))
    assert is_png(gantt(one, tmp_path / "gantt_window.png", window=(0.0, 20_000.0)))
    assert is_png(utilisation_over_time(one, 64, tmp_path / "occupancy.png"))
    assert is_png(utilisation_over_time(one, 64, tmp_path / "occupancy_window.png", window=(None, 20_000.0)))


def test_utilisation_against_occupancy_from_a_shared_vm_sweep(tmp_path):
    raw = {
        "name": "vms",
        "base": {
            "workload": {"model": "jann97", "jobs": 300, "max_size": 16},
            "platform": {"kind": "shared_vms", "machines": 8, "vms": 4},
            "policy": {"name": "vm_backfill"},
        },
        "grid": {"policy.selector": ["pc-g", "ec"]},
        "seeds": 1,
    }
    outcome = run_sweep(parse_sweep_config(raw), tmp_path, backend="serial", progress=False)
    assert outcome.failed == 0
    runs = load(tmp_path / "vms")
    assert is_png(utilisation_vs_occupancy(runs, tmp_path / "occ.png"))
    page = write_report(tmp_path / "vms", tmp_path / "report")
    assert "utilisation against occupancy" in page.read_text()


class _Images(HTMLParser):
    def __init__(self):
        super().__init__()
        self.images: list[str] = []
        self.alts: list[str] = []
        self.tables = 0
        self.first_cells: list[str] = []  # the policy column of the summary table
        self._row_start = False

    def handle_starttag(self, tag, attrs):
        if tag == "img":
            self.images.append(dict(attrs)["src"])
            self.alts.append(dict(attrs).get("alt", ""))
        if tag == "table":
            self.tables += 1
        self._row_start = tag == "tr" or (self._row_start and tag == "td")

    def handle_data(self, data):
        if self._row_start and data.strip():
            self.first_cells.append(data.strip())
            self._row_start = False


def test_report_writes_html_and_every_figure_it_links(swept, tmp_path):
    assert main(["report", str(swept), "--out", str(tmp_path / "report")]) == 0
    page = tmp_path / "report" / "index.html"
    parser = _Images()
    parser.feed(page.read_text())
    assert parser.tables >= 1
    assert len(parser.images) >= 3  # load figure, Gantt and occupancy per policy
    for src in parser.images:
        assert is_png(page.parent / src), src
    text = page.read_text()
    assert "small_analysis" in text and "model_version" in text and "Config" in text
    # Rows in the config's policy order (easy, amcbf), not the alphabet's.
    assert parser.first_cells[:4] == ["easy", "easy", "amcbf", "amcbf"]
    # Gantt charts named by policy, load and seed, never by a cell id.
    runs = load(swept)
    first = runs.iloc[0]
    gantts = [a for a in parser.alts if a.startswith("Gantt chart")]
    assert gantts == [
        f"Gantt chart: {p}, load {first['workload.load']:g}, seed {first['seed']}, whole run" for p in ("easy", "amcbf")
    ]
    assert not any(cell in text for cell in runs["cell_id"])
    # Dedicated nodes turn no job away: accept rate is 1 in every run and gets no panel.
    assert not any("accept rate" in a for a in parser.alts) and "accept rate = 1" in text


def test_report_of_a_missing_folder_is_a_clear_error(tmp_path, capsys):
    assert main(["report", str(tmp_path / "nothing")]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'nothing'}: does not exist" in err
    assert not (tmp_path / "nothing").exists()  # no report folder left behind


# -- files written by older versions ---------------------------------------------------------------


def test_runs_written_by_schema_v1_still_load():
    # A committed file of the first store schema (written by tiersweep 0.1.0).
    runs = load(FIXTURES / "schema_v1")
    assert len(runs) == 4 and runs["status"].eq("ok").all()
    assert {"cell_id", "policy.name", "mean_bsld", "written_at"} <= set(runs.columns)


def test_runs_missing_newer_columns_load_with_gaps(tmp_path):
    # An older part without accept_rate and host next to a newer one: columns are filled.
    import pyarrow.parquet as pq

    root = tmp_path / "mixed"
    (root / "runs").mkdir(parents=True)
    source = sorted((FIXTURES / "schema_v1" / "runs").glob("*.parquet"))[0]
    table = pq.read_table(source)
    older = table.drop_columns([c for c in ("accept_rate", "host") if c in table.column_names]).slice(0, 2)
    pq.write_table(older, root / "runs" / "part-old.parquet")
    pq.write_table(table.slice(2, 2), root / "runs" / "part-new.parquet")
    runs = load(root)
    assert len(runs) == 4
    assert runs["accept_rate"].isna().sum() == 2 and runs["host"].isna().sum() == 2


# -- the example notebook --------------------------------------------------------------------------


@pytest.mark.slow
def test_example_notebook_runs_on_a_sweep(swept, tmp_path, monkeypatch):
    # Run as Jupyter runs it: the kernel starts in the notebook's folder, two levels below the
    # project root that holds results/quickstart, which it must find from there (reading
    # nothing, its first table would raise KeyError). No TIERSWEEP_RESULTS.
    notebook = Path(__file__).resolve().parents[1] / "analysis" / "notebooks" / "explore.ipynb"
    cells = [c for c in json.loads(notebook.read_text())["cells"] if c["cell_type"] == "code"]
    assert len(cells) >= 4
    project = tmp_path / "project"
    results = project / "results" / "quickstart"
    shutil.copytree(swept, results)
    kernel_folder = project / "analysis" / "notebooks"
    kernel_folder.mkdir(parents=True)
    monkeypatch.delenv("TIERSWEEP_RESULTS", raising=False)
    monkeypatch.chdir(kernel_folder)
    namespace: dict = {}
    for cell in cells:
        exec(compile("".join(cell["source"]), str(notebook), "exec"), namespace)  # noqa: S102
    assert namespace["results"] == results
    assert is_png(results / "notebook_figures" / "load.png")
    assert len(namespace["table"]) == 4 and len(namespace["ratios"]) == 2
    # EASY never migrates: the migrations are compared by difference, each policy's own mean.
    runs = namespace["runs"]
    assert len(namespace["migrations"]) == 2
    for _, row in namespace["migrations"].iterrows():
        mine = (runs["policy.name"] == row["policy.name"]) & (runs["workload.load"] == row["workload.load"])
        own = runs.loc[mine, "migrations_per_job"].mean()
        assert row["migrations_per_job_diff"] == pytest.approx(own) and row["migrations_per_job_n"] == mine.sum()
    # With nothing to read it says where it looked, at the first cell.
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError, match="looked in"):
        exec(compile("".join(cells[0]["source"]), str(notebook), "exec"), {})  # noqa: S102
