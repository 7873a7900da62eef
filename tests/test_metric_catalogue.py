"""The metric catalogue is the one description of every metric: the computations return exactly
its columns, and the store's schema, the sweep summary, the report and the plots' labels read it."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from sweep_helpers import small_config
from tiersweep.analysis import plots, report
from tiersweep.core import simulate
from tiersweep.core.metric_catalogue import (
    CATALOGUE,
    JOB,
    METRIC_LABELS,
    METRICS,
    REPORT_METRICS,
    RUN,
    SUMMARY_METRICS,
    TABLE_METRICS,
    Metric,
    dtype_of,
    entry,
    job_columns,
    label_of,
    metric_names,
    run_columns,
)
from tiersweep.core.metrics import run_metrics
from tiersweep.core.platforms import PLATFORMS
from tiersweep.sweep import driver
from tiersweep.sweep.driver import run_sweep
from tiersweep.sweep.store import read_jobs, read_table

SPEC = {
    "workload": {"model": "jann97", "jobs": 200, "load": 0.9},
    "platform": {"nodes": 64, "tiers": 2},
    "policy": {"name": "amcbf"},
}


@pytest.fixture(scope="module")
def result():
    return simulate(SPEC, record_segments=True)


def test_the_computations_return_exactly_the_catalogued_columns(result):
    assert list(result.jobs) == job_columns(2)
    assert set(result.metrics) == set(run_columns(2)) - {n for n in run_columns(2) if n.startswith("report.")}
    assert set(metric_names(2)) < set(result.metrics)
    assert {f"report.{k}" for k in result.report} == {n for n in run_columns(2) if n.startswith("report.")}


def test_each_column_has_its_catalogued_type(result):
    for name, values in result.jobs.items():
        assert values.dtype == np.dtype(dtype_of(name)), name
    for name, value in result.metrics.items():
        assert isinstance(value, int if dtype_of(name) == "int64" else float), name


def test_the_stored_schema_is_the_catalogues(tmp_path):
    config = small_config("catalogued")
    run_sweep(config, tmp_path, backend="serial", with_jobs=True, progress=False)
    runs = read_table(tmp_path / config.name / "runs").schema
    jobs = read_jobs(tmp_path / config.name).schema
    checked = 0
    for schema, names in ((runs, run_columns(2)), (jobs, job_columns(2))):
        for name in names:
            assert schema.field(name).type == pa.from_numpy_dtype(np.dtype(dtype_of(name))), name
            checked += 1
    assert checked == len(run_columns(2)) + len(job_columns(2))
    assert runs.field("jobs").type == pa.int64() and runs.field("report.dropped").type == pa.int64()
    assert jobs.field("kills").type == pa.int64() and jobs.field("cpu_mean").type == pa.float64()


def test_summary_report_and_labels_read_the_catalogue():
    assert driver.SUMMARY_METRICS is SUMMARY_METRICS
    assert report.REPORT_METRICS is REPORT_METRICS
    assert SUMMARY_METRICS == ("mean_wait", "mean_bsld", "utilization", "migrations_per_job")
    assert REPORT_METRICS[:4] == ("mean_response", "mean_bsld", "migrations_per_job", "utilization")
    assert METRIC_LABELS.items() <= plots.LABELS.items()
    assert plots.LABELS["mean_response"] == "mean response time (s)"
    assert label_of("tier1_share") == "share of VM-seconds in tier 1"
    assert label_of("no_such_metric") == "no_such_metric"


def test_a_runs_table_reads_its_rows_and_labels_from_the_catalogue(result):
    from tiersweep.sweep.run_command import summary_table

    rows = [line.strip() for line in summary_table(result).splitlines() if line.startswith("  ")]
    labels = [row.rsplit("  ", 1)[0].strip() for row in rows]
    assert TABLE_METRICS[:3] == ("jobs", "dropped", "mean_wait") and "makespan" in TABLE_METRICS
    assert labels[: len(TABLE_METRICS)] == [label_of(name) for name in TABLE_METRICS]
    assert labels[len(TABLE_METRICS) :] == [label_of("tier0_share"), label_of("tier1_share")]


def test_families_match_their_members_only():
    assert entry("tier12_duration").name == "tier{t}_duration"
    assert entry("report.overrun_killed").dtype == "int64"
    assert entry("tierx_share") is None and entry("report.") is None
    assert dtype_of("allocation_fallbacks") == "float64"  # a platform's own, uncatalogued


def test_every_platform_metric_in_the_catalogue_is_one_its_platform_computes():
    for metric in CATALOGUE:
        if metric.source in PLATFORMS:
            platform = PLATFORMS[metric.source]
            declared = platform.EXTRA_METRICS if metric.scope == RUN else platform.EXTRA_JOB_COLUMNS
            assert any(entry(name) is metric for name in declared), metric


def test_names_are_unique_and_shown_places_distinct():
    names = [m.name for m in CATALOGUE]
    assert len(names) == len(set(names))
    for key in ("summary", "report", "table"):
        places = [getattr(m, key) for m in CATALOGUE if getattr(m, key)]
        assert len(places) == len(set(places)), key
    assert all(m.scope == RUN for m in CATALOGUE if m.summary or m.report or m.table)
    assert {m.scope for m in CATALOGUE if m.source == METRICS} == {RUN, JOB}


@pytest.mark.parametrize(
    ("changes", "message"), [({"scope": "cell"}, "scope 'cell'"), ({"dtype": "int32"}, "dtype 'int32'")]
)
def test_a_bad_entry_is_refused_naming_it(changes, message):
    with pytest.raises(ValueError, match=f"metric m: {message}"):
        Metric(**{"name": "m", "scope": RUN, **changes})


def test_p95_wait_is_the_95th_percentile_of_the_accepted_jobs_waits(result):
    wait = result.jobs["wait"][np.isfinite(result.jobs["finish_time"])]
    assert result.metrics["p95_wait"] == np.percentile(wait, 95)
    assert result.metrics["p90_wait"] <= result.metrics["p95_wait"] <= wait.max()
    assert "p95_wait" in metric_names(1) and dtype_of("p95_wait") == "float64"
    assert plots.LABELS["p95_wait"] == "95th-percentile wait (s)"
    turned_away = {**result.jobs, "finish_time": np.full(len(result.jobs["job_id"]), np.nan)}
    assert np.isnan(run_metrics(turned_away, 64)["p95_wait"])
