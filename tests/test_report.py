"""``tiersweep report``: log axes where values span decades, no panel for a constant metric,
Gantt charts named by policy, load and seed over the whole run or a window, tuning plots with
the baseline and the spread over seeds, and the summary table (config order, one number
format, the sweep summary's metrics, the few-seeds warning, the config as written).

Most tests read hand-made results folders (a ``runs`` Parquet file and a manifest), so that the
values, and what the report must do with them, are known exactly; the Gantt and tuning tests
run small real sweeps and studies.
"""

from __future__ import annotations

import copy
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import yaml

from sweep_helpers import tiny_tune_raw
from tiersweep.analysis import plots
from tiersweep.analysis.load import load
from tiersweep.analysis.plots import gantt, log_axes, metric_grid, spans_decades
from tiersweep.analysis.report import format_number, parse_assignments, parse_window, write_report
from tiersweep.cli import main
from tiersweep.core.errors import TiersweepError
from tiersweep.sweep.config import parse_sweep_config
from tiersweep.sweep.driver import run_sweep

# -- hand-made results folders ---------------------------------------------------------------------

#: Policies in a deliberately non-alphabetical config order, loads descending.
POLICIES = ["fcfs", "easy", "amcbf"]
LOADS = [0.9, 0.6]
CONFIG = {
    "name": "handmade",
    "base": {"workload": {"model": "jann97", "jobs": 300}, "platform": {"nodes": 64, "tiers": 2}},
    "grid": {"policy.name": POLICIES, "workload.load": LOADS},
    "seeds": 3,
}
#: Mean response per policy: FCFS 100 times the others.
RESPONSE = {"fcfs": 200_000.0, "easy": 2_000.0, "amcbf": 1_500.0}


def write_folder(
    root: Path, config: dict[str, Any], rows: list[dict[str, Any]], config_text: str | None = None
) -> Path:
    """A results folder as the store writes it: ``runs/part-*.parquet`` and ``manifest.json``."""
    (root / "runs").mkdir(parents=True)
    frame = pd.DataFrame(rows)
    frame["cell_index"] = range(len(frame))
    frame["cell_id"] = [f"{i:016x}" for i in range(len(frame))]
    frame["status"] = "ok"
    frame["error"] = None
    frame["model_version"] = "test"
    frame["written_at"] = pd.Timestamp("2024-01-01", tz="UTC")
    frame.to_parquet(root / "runs" / "part-0.parquet")
    manifest: dict[str, Any] = {"config": config}
    if config_text is not None:
        manifest["config_text"] = config_text
    (root / "manifest.json").write_text(json.dumps(manifest))
    return root


def handmade_rows(seeds: int = 3, accept: Any = 1.0) -> list[dict[str, Any]]:
    """Runs of :data:`CONFIG` (stored in alphabetical policy order, as a store might return
    them): FCFS's mean response 100 times the others', utilisation within a decade, accept rate
    ``accept`` (a number, or a function of policy and seed)."""
    rows = []
    for policy in sorted(POLICIES):
        for load_value in sorted(LOADS):
            for seed in range(1, seeds + 1):
                rows.append(
                    {
                        "policy.name": policy,
                        "workload.load": load_value,
                        "platform.kind": "nodes",
                        "seed": seed,
                        "mean_response": RESPONSE[policy] * load_value * (1 + 0.01 * seed),
                        "mean_wait": 123_456.7 if policy == "fcfs" else 1_000.0 + seed,
                        "mean_bsld": 10.0 + seed,
                        "utilization": 0.5 + 0.1 * load_value + 0.001 * seed,
                        "migrations_per_job": 0.0,
                        "accept_rate": accept(policy, seed) if callable(accept) else accept,
                    }
                )
    return rows


class Page(HTMLParser):
    """The parts of a report page the tests read: captions, images, the summary table's header
    and rows, the warning and the config block, and the position of each."""

    def __init__(self, text: str):
        super().__init__()
        self.captions: list[str] = []
        self.images: list[str] = []
        self.header: list[str] = []
        self.rows: list[list[str]] = []
        self.warning = ""
        self.config = ""
        self.order: list[str] = []  # "warning", "summary", in page order
        self._stack: list[str] = []
        self._in_summary = False
        self._cell: list[str] | None = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self._stack.append(attrs.get("class") or attrs.get("id") or tag)
        if tag == "img":
            self.images.append(attrs["src"])
        if tag == "table" and attrs.get("id") == "summary":
            self._in_summary = True
            self.order.append("summary")
        if tag == "div" and attrs.get("class") == "warning":
            self.order.append("warning")
        if self._in_summary and tag == "tr":
            self.rows.append([])
        if self._in_summary and tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if self._stack:
            self._stack.pop()
        if self._in_summary and tag in ("td", "th") and self._cell is not None:
            text = "".join(self._cell).strip()
            (self.header if tag == "th" else self.rows[-1]).append(text)
            self._cell = None
        if tag == "table":
            self._in_summary = False

    def handle_data(self, data):
        where = self._stack[-1] if self._stack else ""
        if self._cell is not None and where not in ("ci",):
            self._cell.append(data)
        if where == "figcaption":
            self.captions.append(data)
        elif where == "warning":
            self.warning += data
        elif where == "config":
            self.config += data

    @property
    def body_rows(self) -> list[list[str]]:
        return [row for row in self.rows if row]


def report_page(root: Path, tmp_path: Path, **options: Any) -> Page:
    page = write_report(root, tmp_path / "report", **options)
    return Page(page.read_text(encoding="utf-8"))


# -- numbers, windows, assignments -----------------------------------------------------------------


@pytest.mark.parametrize(
    "value, text",
    [
        (0.5, "0.5000"),
        (0.123456, "0.1235"),
        (1234.5, "1,235"),
        (123_456.7, "123,500"),
        (12.0, "12.00"),
        (0.99996, "1.000"),  # rounding up to the next power of ten keeps four digits
        (9999.6, "10,000"),
        (-3.14159, "-3.142"),
        (0, "0"),
        (0.00001234, "1.234e-05"),
        (float("nan"), ""),
        (None, ""),
    ],
)
def test_numbers_have_four_significant_digits_and_thousands_separators(value, text):
    assert format_number(value) == text


def test_a_window_is_start_and_end_in_seconds():
    assert parse_window("100:5000") == (100.0, 5000.0)
    assert parse_window(":3600") == (None, 3600.0)
    assert parse_window("86400:") == (86400.0, None)
    assert parse_window(None) is None
    for bad in ("100", "a:b", "5000:100", "1:2:3", "nan:5"):
        with pytest.raises(TiersweepError, match="--window"):
            parse_window(bad)


def test_gantt_at_assignments_use_current_key_names():
    assert parse_assignments(["workload.load=0.9", "seed=2"]) == {"workload.load": "0.9", "seed": "2"}
    assert parse_assignments(["policy.migration_cost=20"]) == {"platform.migration_cost": "20"}
    with pytest.raises(TiersweepError, match="KEY=VALUE"):
        parse_assignments(["workload.load"])


# -- figures --------------------------------------------------------------------------------------


def test_values_spanning_more_than_a_decade_get_a_log_axis(tmp_path, monkeypatch):
    assert spans_decades([1.0, 11.0]) and not spans_decades([1.0, 9.0])
    assert not spans_decades([0.0, 100.0])  # zero cannot be shown on a log axis
    runs = load(write_folder(tmp_path / "handmade", CONFIG, handmade_rows()))
    metrics = ["mean_response", "utilization"]
    assert log_axes(runs, "workload.load", metrics) == ["mean_response"]
    # The figure itself: the mean-response panel (FCFS 100x the others) is drawn on a log
    # axis, the utilisation panel (all within a decade) is not.
    from matplotlib.axes import Axes

    scales = []
    original = Axes.set_yscale

    def record(self, value, **kwargs):
        scales.append((self.get_ylabel(), value))
        return original(self, value, **kwargs)

    monkeypatch.setattr(Axes, "set_yscale", record)
    metric_grid(runs, "workload.load", metrics, tmp_path / "grid.png")
    assert scales == [("mean response time (s) (log scale)", "log")]
    page = report_page(tmp_path / "handmade", tmp_path)
    caption = next(c for c in page.captions if "against offered load" in c)
    assert (
        "log axis: mean response time (s)" in caption and "log axis: mean response time (s), utilisation" not in caption
    )


@pytest.mark.slow
def test_a_metric_that_is_the_same_in_every_run_gets_no_panel(tmp_path):
    # Accept rate on a platform of dedicated nodes is 1 in every run: no panel, said once.
    page = report_page(write_folder(tmp_path / "nodes", CONFIG, handmade_rows(accept=1.0)), tmp_path / "a")
    caption = next(c for c in page.captions if "against offered load" in c)
    assert "accept rate" not in caption and "migrations per job" not in caption and "mean response time (s)" in caption
    text = (tmp_path / "a" / "report" / "index.html").read_text()
    assert "Not drawn, the same in every run: " in text and "accept rate = 1" in text
    assert "accept rate" not in page.header
    # Where it does vary (a platform that turns jobs away), it gets its panel and its column.
    varying = handmade_rows(accept=lambda policy, seed: 0.9 - 0.1 * POLICIES.index(policy))
    page = report_page(write_folder(tmp_path / "accepting", CONFIG, varying), tmp_path / "b")
    caption = next(c for c in page.captions if "against offered load" in c)
    assert "accept rate" in caption and "accept rate" in page.header


def test_legend_lists_policies_in_config_order(tmp_path, monkeypatch):
    runs = load(write_folder(tmp_path / "handmade", CONFIG, handmade_rows()))
    from matplotlib.figure import Figure

    legends = []
    original = Figure.savefig

    def record(self, *args, **kwargs):
        legends.append([t.get_text() for t in self.legends[0].get_texts()])
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", record)
    metric_grid(runs, "workload.load", ["mean_bsld"], tmp_path / "grid.png", order=POLICIES)
    metric_grid(runs, "workload.load", ["mean_bsld"], tmp_path / "grid2.png")
    assert legends == [POLICIES, sorted(POLICIES)]


# -- the summary table ------------------------------------------------------------------------------


def test_table_rows_follow_the_config_order_not_the_alphabet(tmp_path):
    page = report_page(write_folder(tmp_path / "handmade", CONFIG, handmade_rows()), tmp_path)
    keys = [(row[0], row[1]) for row in page.body_rows]
    assert keys == [(policy, str(load_value)) for policy in POLICIES for load_value in LOADS]
    assert keys[0] == ("fcfs", "0.9")  # alphabetical would start at amcbf, 0.6


def test_table_shows_the_sweep_summary_metrics_in_one_number_format(tmp_path):
    page = report_page(write_folder(tmp_path / "handmade", CONFIG, handmade_rows()), tmp_path)
    # The sweep summary's four metrics (migrations too, though constant here), then the
    # figures' metrics that vary; accept rate is 1 everywhere and left out.
    assert page.header == [
        "policy",
        "offered load",
        "mean wait (s)",
        "mean bounded slowdown",
        "utilisation",
        "migrations per job",
        "mean response time (s)",
        "seeds",
    ]
    fcfs = page.body_rows[0]
    assert fcfs[2] == "123,500"  # 123,456.7 to four significant digits
    assert fcfs[3] == "12.00"  # mean bsld: (11 + 12 + 13) / 3
    assert fcfs[-1] == "3"
    number = re.compile(r"^(0|-?[0-9]{1,3}(,[0-9]{3})*(\.[0-9]+)?|-?[0-9]\.[0-9]{3}e[-+][0-9]+)$")
    for row in page.body_rows:
        for cell in row[2:-1]:
            assert number.match(cell), cell
            digits = cell.replace(",", "").replace("-", "").split("e")[0].replace(".", "").lstrip("0")
            assert cell == "0" or len(digits) == 4 or digits.endswith("0"), cell  # 4 significant digits


def test_few_seeds_warning_stands_above_the_summary_table(tmp_path):
    warnings: list[str] = []
    page = report_page(
        write_folder(tmp_path / "two", CONFIG, handmade_rows(seeds=2)), tmp_path / "a", on_warning=warnings.append
    )
    assert page.order == ["warning", "summary"]
    assert "fewer than 3 seeds" in page.warning and "6 of 6 group(s)" in page.warning
    assert warnings == [page.warning.strip()]
    page = report_page(
        write_folder(tmp_path / "three", CONFIG, handmade_rows(seeds=3)), tmp_path / "b", on_warning=warnings.append
    )
    assert page.order == ["summary"] and page.warning == "" and len(warnings) == 1


@pytest.mark.slow
def test_config_is_shown_as_the_yaml_the_user_wrote(tmp_path):
    text = (
        "# my sweep: FCFS first on purpose\nname: handmade\ngrid:\n  policy.name: [fcfs, easy, amcbf]   # order kept\n"
    )
    page = report_page(write_folder(tmp_path / "written", CONFIG, handmade_rows(), config_text=text), tmp_path / "a")
    assert page.config == text
    # Without the text (older folders): the parsed config as YAML, keys in the given order.
    page = report_page(write_folder(tmp_path / "older", CONFIG, handmade_rows()), tmp_path / "b")
    assert yaml.safe_load(page.config) == CONFIG
    assert page.config.index("name:") < page.config.index("base:") < page.config.index("grid:")
    assert "policy.name: [fcfs, easy, amcbf]" in page.config
    assert not page.config.lstrip().startswith("{")  # YAML, not JSON


# -- Gantt charts ---------------------------------------------------------------------------------

SMALL = {
    "name": "gantt",
    "base": {"workload": {"model": "jann97", "jobs": 300}, "platform": {"nodes": 64, "tiers": 2}},
    "grid": {"policy.name": ["easy", "amcbf"], "workload.load": [0.6, 0.9]},
    "seeds": 2,
}


@pytest.fixture(scope="module")
def with_segments(tmp_path_factory) -> Path:
    """A small real sweep with per-job records: 2 policies x 2 loads x 2 seeds."""
    out = tmp_path_factory.mktemp("gantt")
    outcome = run_sweep(parse_sweep_config(copy.deepcopy(SMALL)), out, backend="serial", with_jobs=True, progress=False)
    assert outcome.failed == 0
    return out / SMALL["name"]


@pytest.mark.slow
def test_gantt_titles_name_policy_load_and_seed(with_segments, tmp_path):
    runs = load(with_segments)
    page = report_page(with_segments, tmp_path)
    first = runs.iloc[0]  # the first cell fixes the grid point and the seed of every chart
    gantts = [c for c in page.captions if c.startswith("Gantt chart")]
    assert gantts == [
        f"Gantt chart: {policy}, load {first['workload.load']:g}, seed {first['seed']}, whole run"
        for policy in ("easy", "amcbf")
    ]
    assert not any(cell_id in " ".join(page.captions + page.images) for cell_id in runs["cell_id"])


def test_gantt_charts_cover_the_whole_run_or_the_window(with_segments, monkeypatch, tmp_path):
    segments = load(with_segments, "segments")
    one = segments[segments["cell_id"] == segments["cell_id"].iloc[0]]
    drawn = []
    original = plots._save

    def record(fig, path, **kwargs):
        ax = fig.axes[0]
        drawn.append((ax.get_xlim(), ax.get_title(loc="left")))
        return original(fig, path, **kwargs)

    monkeypatch.setattr(plots, "_save", record)
    gantt(one, tmp_path / "whole.png", title="whole")
    gantt(one, tmp_path / "window.png", title="window", window=(1000.0, 5000.0))
    gantt(one, tmp_path / "open.png", title="open", window=(None, 5000.0))
    (whole, _), (window, _), (open_end, _) = drawn
    assert whole == pytest.approx((one["start_time"].min(), one["end_time"].max()))
    assert window == (1000.0, 5000.0)
    assert open_end == pytest.approx((one["start_time"].min(), 5000.0))
    with pytest.raises(ValueError, match="window"):
        gantt(one, tmp_path / "bad.png", window=(5000.0, 1000.0))


@pytest.mark.slow
def test_report_gantt_window_and_chosen_runs_from_the_command_line(with_segments, tmp_path, capsys):
    runs = load(with_segments)
    late = runs[(runs["workload.load"] == 0.9)]["seed"].iloc[-1]
    out = tmp_path / "report"
    status = main(
        [
            "report",
            str(with_segments),
            "--out",
            str(out),
            "--window",
            "1000:5000",
            "--gantt-at",
            "workload.load=0.9",
            "--gantt-at",
            f"seed={late}",
        ]
    )
    captured = capsys.readouterr()
    assert status == 0
    assert "fewer than 3 seeds" in captured.err  # 2 seeds: said once, on stderr
    page = Page((out / "index.html").read_text())
    gantts = [c for c in page.captions if c.startswith("Gantt chart")]
    assert gantts == [
        f"Gantt chart: {policy}, load 0.9, seed {late}, t = 1,000 to 5,000 s" for policy in ("easy", "amcbf")
    ]
    for src in page.images:
        assert (out / src).is_file()


def test_a_window_caption_keeps_the_bounds_as_given():
    # Found in review: the caption rounded the bounds to the table's four significant digits,
    # so --window 123456:200000 read "t = 123,500 to 200,000 s".
    from tiersweep.analysis.report import _window_text

    assert _window_text((123456.0, 200000.0)) == "t = 123,456 to 200,000 s"
    assert _window_text((None, 1000.5)) == "t = start to 1,000.5 s"
    assert _window_text(None) == "whole run"


@pytest.mark.parametrize(
    "args, message",
    [
        (["--window", "5000:1000"], "--window: the end"),
        (["--window", "soon"], "--window: expected START:END"),
        (["--gantt-at", "workload.load=0.75"], "--gantt-at workload.load=0.75: no successful run"),
        (["--gantt-at", "no.such=1"], "--gantt-at no.such: the runs have no such column"),
        (["--gantt-at", "load"], "--gantt-at: expected KEY=VALUE"),
    ],
)
def test_report_refuses_a_bad_window_or_choice(with_segments, tmp_path, capsys, args, message):
    assert main(["report", str(with_segments), "--out", str(tmp_path / "r"), *args]) == 2
    assert message in capsys.readouterr().err


# -- tuning studies --------------------------------------------------------------------------------

TUNE = tiny_tune_raw("tinytune", jobs=300, seeds=2, trials=5, sampler={"name": "tpe", "seed": 0})


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    from tiersweep.sweep.tune import run_tuning
    from tiersweep.sweep.tune_config import parse_tune_config

    return run_tuning(
        parse_tune_config(copy.deepcopy(TUNE)), tmp_path_factory.mktemp("tune"), backend="serial", progress=False
    )


def test_tuning_history_shows_the_baseline_and_the_spread_over_seeds(study):
    import matplotlib.pyplot as plt

    from tiersweep.analysis.tune_plots import enqueued_baseline, plot_history

    # Trial 0 is the defaults, enqueued by the tuner: its mean and spread are the baseline's.
    enqueued = enqueued_baseline(study.study, ["mean_bsld"])
    assert list(enqueued) == ["mean_bsld"] and enqueued["mean_bsld"] == pytest.approx(study.baseline["mean_bsld"])
    mean, spread = study.baseline["mean_bsld"]
    ax = plot_history(study.study, "mean_bsld", baseline=(mean, spread))
    try:
        dashed = [line for line in ax.get_lines() if line.get_linestyle() == "--"]
        assert len(dashed) == 1 and list(dashed[0].get_ydata()) == [mean, mean]
        assert any(f"baseline (defaults): {mean:.4g}" in t.get_text() for t in ax.get_legend().get_texts())
        # One error bar per trial, as long as the trial's spread over its seeds either side.
        bars = ax.containers[0]
        segments = bars.lines[2][0].get_segments()
        trials = study.study.trials
        assert len(segments) == len(trials)
        for segment, trial in zip(segments, trials):
            (_, low), (_, high) = segment
            assert high - trial.value == pytest.approx(trial.user_attrs["spread.mean_bsld"])
            assert trial.value - low == pytest.approx(trial.user_attrs["spread.mean_bsld"])
    finally:
        plt.close(ax.figure)


@pytest.mark.slow
def test_report_of_a_tuning_folder_draws_the_history_with_its_baseline(study, tmp_path):
    from tiersweep.analysis.report import _tuning_baseline
    from tiersweep.sweep.store import read_manifest

    # The baseline the report computes from the stored runs is the tuner's.
    name, baseline = _tuning_baseline(read_manifest(study.root)["config"], load(study.root))
    assert name == "tinytune" and list(baseline) == ["mean_bsld"]
    assert baseline["mean_bsld"] == pytest.approx(study.baseline["mean_bsld"])
    page = report_page(study.root, tmp_path)
    history = [c for c in page.captions if "history" in c]
    assert history and "dashed: the default parameters" in history[0]
    for src in page.images:
        data = (tmp_path / "report" / src).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5_000
    assert np.isfinite(baseline["mean_bsld"][0])


def test_a_window_needs_per_job_records_and_a_refused_choice_writes_nothing(tmp_path):
    root = write_folder(tmp_path / "handmade", CONFIG, handmade_rows())
    with pytest.raises(TiersweepError, match="--window: .* no per-job records"):
        write_report(root, tmp_path / "report", window=(0.0, 100.0))
    with pytest.raises(TiersweepError, match="--gantt-at: .* no per-job records"):
        write_report(root, tmp_path / "report", gantt_at={"seed": "1"})
    assert not (tmp_path / "report").exists()


def test_a_sensitivity_study_of_several_grids_gets_a_figure_per_axis(tmp_path):
    # Two grids: load for two policies, migration cost for a third (load unset there). Each
    # axis gets its figure from the runs that set it, rows follow each grid's own order.
    config = {
        "name": "grids",
        "base": CONFIG["base"],
        "grids": [
            {"policy.name": ["fcfs", "easy"], "workload.load": [0.9, 0.6]},
            {"policy.name": ["amcbf"], "platform.migration_cost": [600, 0]},
        ],
        "seeds": 3,
    }
    rows = [r | {"platform.migration_cost": 20.0} for r in handmade_rows() if r["policy.name"] != "amcbf"]
    for cost in (0.0, 600.0):
        for seed in (1, 2, 3):
            rows.append(
                {
                    "policy.name": "amcbf",
                    "workload.load": float("nan"),
                    "platform.migration_cost": cost,
                    "platform.kind": "nodes",
                    "seed": seed,
                    "mean_response": 1_000.0 + cost + seed,
                    "mean_wait": 10.0,
                    "mean_bsld": 2.0 + cost / 100,
                    "utilization": 0.6,
                    "migrations_per_job": 0.1,
                    "accept_rate": 1.0,
                }
            )
    page = report_page(write_folder(tmp_path / "grids", config, rows), tmp_path)
    captions = [c for c in page.captions if " against " in c]
    assert len(captions) == 2
    assert captions[0].endswith(
        "against offered load; log axis: mean response time (s) (values span more than a decade)"
    )
    assert "against migration cost (s) (load not set)" in captions[1]
    keys = [tuple(row[:3]) for row in page.body_rows]
    assert keys == [
        ("fcfs", "0.9", "20"),
        ("fcfs", "0.6", "20"),
        ("easy", "0.9", "20"),
        ("easy", "0.6", "20"),
        ("amcbf", "", "600"),
        ("amcbf", "", "0"),
    ]


def test_tuning_history_draws_pruned_trials_at_the_mean_of_the_cells_they_ran():
    import matplotlib.pyplot as plt
    import optuna

    from tiersweep.analysis.tune_plots import plot_history

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="minimize")
    for value in (5.0, 3.0):
        study.add_trial(optuna.trial.create_trial(value=value, params={}, distributions={}))
    study.add_trial(
        optuna.trial.create_trial(
            state=optuna.trial.TrialState.PRUNED, params={}, distributions={}, intermediate_values={0: 8.0, 1: 10.0}
        )
    )
    ax = plot_history(study, "mean_bsld")
    try:
        crosses = [line for line in ax.get_lines() if line.get_marker() == "x"]
        assert len(crosses) == 1
        assert list(crosses[0].get_xdata()) == [2] and list(crosses[0].get_ydata()) == [9.0]
        assert any("pruned (1): mean of the cells it ran" in t.get_text() for t in ax.get_legend().get_texts())
        best = [line for line in ax.get_lines() if line.get_drawstyle() == "steps-post"]
        assert list(best[0].get_ydata()) == [5.0, 3.0]  # the pruned trial is not a best
    finally:
        plt.close(ax.figure)
