"""The Parquet result store of a sweep (``sweep/store.py``): what a serial sweep writes to
``OUT/NAME/runs`` and ``jobs``, that standard readers see one row per cell with the documented
columns and types, that the stored metrics are what :func:`tiersweep.core.simulate` computes, atomic
part files, ``--force`` rows and :func:`compact`, and :func:`spec_column_types`.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from sweep_helpers import small_config, small_raw
from tiersweep.cli import main
from tiersweep.core import simulate
from tiersweep.core.metric_catalogue import job_columns, run_columns
from tiersweep.core.version import MODEL_VERSION
from tiersweep.core.workloads.rules import WorkloadReport
from tiersweep.sweep.batch import package_version, run_batch, task_for
from tiersweep.sweep.cells import flatten
from tiersweep.sweep.config import expand
from tiersweep.sweep.driver import run_sweep
from tiersweep.sweep.store import Store, compact, read_jobs, read_table, spec_column_types

PART = re.compile(r"^part-\d{12}-[0-9a-f]{8}\.parquet$")
MERGED = re.compile(r"^part-\d{12}-[0-9a-f]{8}-merged\.parquet$")

FIXED_TYPES = {
    "cell_id": pa.string(),
    "cell_index": pa.int64(),
    "sweep": pa.string(),
    "status": pa.string(),
    "error": pa.string(),
    "wall_seconds": pa.float64(),
    "model_version": pa.string(),
    "code_digest": pa.string(),
    "package_version": pa.string(),
    "seed": pa.int64(),
    "replicate": pa.int64(),
    "trace_digest": pa.string(),
    "host": pa.string(),
    "written_at": pa.timestamp("us", tz="UTC"),
    "write_seq": pa.int64(),
}


def parts(folder: Path) -> list[Path]:
    return sorted(folder.iterdir())


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    """A serial run of the small sweep (8 cells) with per-job records."""
    out = tmp_path_factory.mktemp("store")
    config = small_config("store")
    started = dt.datetime.now(dt.UTC)
    outcome = run_sweep(config, out, backend="serial", with_jobs=True, progress=False)
    finished = dt.datetime.now(dt.UTC)
    return {
        "config": config,
        "cells": expand(config),
        "outcome": outcome,
        "root": out / "store",
        "window": (started, finished),
    }


@pytest.fixture
def forced(tmp_path):
    """The small sweep run twice, the second time with force=True (16 raw rows)."""
    config = small_config("forced")
    first = run_sweep(config, tmp_path, backend="serial", with_jobs=True, progress=False)
    second = run_sweep(config, tmp_path, backend="serial", with_jobs=True, force=True, progress=False)
    assert (first.computed, second.computed, second.stored_before) == (8, 8, 0)
    return {"cells": first.cells, "root": tmp_path / "forced"}


# -- what a sweep writes ---------------------------------------------------------------------


def test_the_outcome_counts_the_cells(swept):
    outcome = swept["outcome"]
    assert (len(outcome.cells), outcome.computed, outcome.stored_before, outcome.failed) == (8, 8, 0, 0)
    assert outcome.store == swept["root"]


def test_pandas_and_pyarrow_read_one_row_per_cell(swept):
    ids = sorted(c.cell_id for c in swept["cells"])
    frame = pd.read_parquet(swept["root"] / "runs")
    assert sorted(frame["cell_id"]) == ids
    table = ds.dataset(swept["root"] / "runs", format="parquet").to_table()
    assert sorted(table.column("cell_id").to_pylist()) == ids
    assert sorted(read_table(swept["root"] / "runs").column("cell_id").to_pylist()) == ids


def test_the_documented_columns_have_the_documented_types(swept):
    schema = ds.dataset(swept["root"] / "runs", format="parquet").schema
    types = {field.name: field.type for field in schema}
    for name, kind in FIXED_TYPES.items():
        assert types[name] == kind, name
    spec_types = {
        "policy.name": pa.string(),
        "platform.migration_cost": pa.float64(),
        "policy.bg_threshold": pa.float64(),  # amcbf only; null for easy
        "workload.load": pa.float64(),
        "workload.jobs": pa.int64(),
        "workload.model": pa.string(),
        "workload.cpu_usage": pa.string(),  # a list, stored as JSON text
        "platform.tiers": pa.int64(),
        "platform.nodes": pa.int64(),
        "platform.kind": pa.string(),
    }
    for name, kind in spec_types.items():
        assert types[name] == kind, name
    for key in WorkloadReport().as_dict():
        assert types[f"report.{key}"] == pa.int64(), key
    metrics = [name for name in run_columns(2) if not name.startswith("report.")]
    assert "tier1_share" in metrics
    for name in metrics:
        assert types[name] == (pa.int64() if name in ("jobs", "dropped") else pa.float64()), name
    # Every spec key of every cell is a column (the seed once, as the fixed column).
    spec_keys = {key for cell in swept["cells"] for key in flatten(cell.spec)}
    assert spec_keys <= set(types)
    assert set(types) == set(FIXED_TYPES) | spec_keys | set(metrics) | {
        f"report.{k}" for k in WorkloadReport().as_dict()
    }


def test_row_values_describe_their_cells(swept):
    frame = read_table(swept["root"] / "runs").to_pandas().set_index("cell_id")
    started, finished = swept["window"]
    for cell in swept["cells"]:
        row = frame.loc[cell.cell_id]
        assert row["cell_index"] == cell.index
        assert (row["sweep"], row["status"]) == ("store", "ok") and pd.isna(row["error"])
        assert (row["model_version"], row["package_version"], row["host"]) == (
            MODEL_VERSION,
            package_version(),
            os.uname().nodename,
        )
        assert (row["seed"], row["replicate"]) == (cell.seed, cell.replicate)
        assert row["wall_seconds"] > 0
        assert started <= row["written_at"].to_pydatetime() <= finished
        spec = flatten(cell.spec)
        assert (row["policy.name"], row["workload.load"], row["platform.tiers"]) == (
            cell.point["policy.name"],
            cell.point["workload.load"],
            2,
        )
        assert json.loads(row["workload.cpu_usage"]) == spec["workload.cpu_usage"]
        if cell.point["policy.name"] == "easy":
            assert pd.isna(row["policy.bg_threshold"])
        else:
            assert row["policy.bg_threshold"] == spec["policy.bg_threshold"]


def test_rows_within_each_file_are_sorted_by_cell_index(swept):
    files = parts(swept["root"] / "runs")
    sizes = []
    for path in files:
        index = pq.read_table(path).column("cell_index").to_pylist()
        assert index == sorted(index)
        sizes.append(len(index))
    assert sum(sizes) == 8
    assert max(sizes) > 1, "expected a batch of several cells (one cell per batch only until durations are known)"


def test_a_batch_returned_out_of_order_is_written_sorted(tmp_path):
    config = small_config("order")
    cells = expand(config)
    store = Store(tmp_path / "order")
    specs = [{k: v for k, v in flatten(c.spec).items() if k != "seed"} for c in cells]  # the seed is a fixed column
    metrics = run_columns(2)
    store.prepare(config.raw, spec_column_types(specs), metrics, job_columns(2))
    outcomes = run_batch([task_for(c, config.name) for c in reversed(cells[:4])], with_jobs=True)
    store.write(outcomes)
    (runs,) = parts(tmp_path / "order" / "runs")
    assert pq.read_table(runs).column("cell_index").to_pylist() == [0, 1, 2, 3]
    (jobs,) = parts(tmp_path / "order" / "jobs")
    order = pq.read_table(jobs).column("cell_id").to_pylist()
    assert list(dict.fromkeys(order)) == [c.cell_id for c in cells[:4]]


def test_every_file_holds_the_config_and_the_manifest_records_it(swept):
    raw = small_raw("store")
    for folder in ("runs", "jobs"):
        for path in parts(swept["root"] / folder):
            metadata = pq.read_schema(path).metadata
            assert json.loads(metadata[b"tiersweep.config"]) == raw, path
    manifest = json.loads((swept["root"] / "manifest.json").read_text())
    assert manifest["config"] == raw
    assert manifest["schema"]["cell_id"] == "string" and manifest["schema"]["jobs"] == "int64"
    assert dt.datetime.fromisoformat(manifest["updated_at"]).tzinfo is not None


def test_every_stored_file_is_a_complete_part_file(swept):
    names = sorted(p.name for p in swept["root"].iterdir())
    # No leftover temporary files; the writers' lock file stays (see sweep/folder_lock.py).
    assert names == [".tiersweep.lock", "jobs", "manifest.json", "runs", "segments"]
    for folder in ("runs", "jobs", "segments"):
        files = parts(swept["root"] / folder)
        assert files
        for path in files:
            assert PART.match(path.name), path.name
            assert pq.ParquetFile(path).metadata.num_rows > 0  # the footer reads: a whole file


# -- per-job records -------------------------------------------------------------------------


def test_jobs_are_keyed_by_cell_id_and_count_as_the_runs_jobs_metric(swept):
    runs = pd.read_parquet(swept["root"] / "runs").set_index("cell_id")["jobs"]
    jobs = pd.read_parquet(swept["root"] / "jobs")
    assert set(job_columns(2)) <= set(jobs.columns)
    counts = jobs.groupby("cell_id").size()
    assert counts.sort_index().to_dict() == runs.sort_index().to_dict()
    assert set(runs) == {300}
    assert len(read_jobs(swept["root"])) == len(jobs)


def test_policies_of_a_replicate_see_the_same_workload(swept):
    """Common random numbers: the same seed per replicate gives every policy the same jobs."""
    jobs = pd.read_parquet(swept["root"] / "jobs")
    by_cell = {cid: frame.sort_values("job_id") for cid, frame in jobs.groupby("cell_id")}
    cells = swept["cells"]
    for load in (0.6, 0.9):
        for replicate in (0, 1):
            easy, amcbf = (
                next(
                    c
                    for c in cells
                    if c.point == {"policy.name": name, "workload.load": load} and c.replicate == replicate
                )
                for name in ("easy", "amcbf")
            )
            for column in ("job_id", "submit_time", "size", "runtime", "requested_time", "cpu_mean"):
                assert np.array_equal(by_cell[easy.cell_id][column], by_cell[amcbf.cell_id][column], equal_nan=True), (
                    column
                )
    other_replicate = next(c for c in cells if c.point == easy.point and c.replicate != easy.replicate)
    assert by_cell[easy.cell_id]["submit_time"].tolist() != by_cell[other_replicate.cell_id]["submit_time"].tolist()


# -- the stored values -----------------------------------------------------------------------


def _same(stored, computed) -> bool:
    if isinstance(computed, float) and math.isnan(computed):
        return stored is None or (isinstance(stored, float) and math.isnan(stored))
    return stored == computed


def test_stored_metrics_equal_a_direct_simulation(swept):
    rows = {r["cell_id"]: r for r in read_table(swept["root"] / "runs").to_pylist()}
    jobs = pd.read_parquet(swept["root"] / "jobs")
    for cell in swept["cells"]:
        result = simulate(cell.spec)
        row = rows[cell.cell_id]
        for name, value in result.metrics.items():
            assert _same(row[name], value), (cell.index, name, row[name], value)
        for name, value in result.report.items():
            assert row[f"report.{name}"] == value, (cell.index, name)
        stored = jobs[jobs["cell_id"] == cell.cell_id].sort_values("job_id")
        order = result.jobs["job_id"].argsort()
        for column in ("job_id", "start_time", "finish_time", "migrations"):
            assert stored[column].tolist() == result.jobs[column][order].tolist(), (cell.index, column)


# -- resuming, --force and compaction ---------------------------------------------------------


def test_a_resumed_sweep_computes_only_the_missing_cells(tmp_path):
    config = small_config("resume")
    first = run_sweep(config, tmp_path, backend="serial", max_cells=3, progress=False)
    second = run_sweep(config, tmp_path, backend="serial", progress=False)
    third = run_sweep(config, tmp_path, backend="serial", progress=False)
    assert (first.computed, second.stored_before, second.computed, third.computed) == (3, 3, 5, 0)
    frame = pd.read_parquet(tmp_path / "resume" / "runs")
    assert sorted(frame["cell_index"]) == list(range(8))


def test_force_keeps_both_rows_in_the_files_and_readers_take_the_newest(forced):
    root = forced["root"]
    raw = pd.read_parquet(root / "runs")
    assert len(raw) == 16 and raw["cell_id"].value_counts().eq(2).all()
    newest = raw.groupby("cell_id")["written_at"].max()
    table = read_table(root / "runs").to_pandas()
    assert len(table) == 8
    assert table["cell_index"].tolist() == list(range(8))
    assert table.set_index("cell_id")["written_at"].to_dict() == newest.to_dict()
    assert len(read_table(root / "runs", latest_only=False)) == 16
    # The jobs of each cell's newest run only.
    jobs = read_jobs(root).to_pandas()
    assert len(pd.read_parquet(root / "jobs")) == 2 * len(jobs) == 2 * 8 * 300
    spans = jobs.groupby("cell_id")["written_at"].agg(["min", "max"])
    assert spans["min"].to_dict() == spans["max"].to_dict() == newest.to_dict()


def test_compact_merges_the_parts_and_keeps_the_newest_rows(forced, capsys):
    root = forced["root"]
    newest = pd.read_parquet(root / "runs").groupby("cell_id")["written_at"].max()
    before = sum(len(parts(root / name)) for name in ("runs", "jobs", "segments"))
    assert len(parts(root / "runs")) > 2
    assert main(["compact", str(root)]) == 0
    assert capsys.readouterr().out.strip() == f"{root}: {before} files -> 3"
    (runs,) = parts(root / "runs")
    (jobs,) = parts(root / "jobs")
    assert MERGED.match(runs.name) and MERGED.match(jobs.name)
    frame = pd.read_parquet(root / "runs")
    assert len(frame) == 8 and frame["cell_index"].tolist() == list(range(8))
    assert frame.set_index("cell_id")["written_at"].to_dict() == newest.to_dict()
    job_frame = pd.read_parquet(root / "jobs")
    assert len(job_frame) == 8 * 300 and (job_frame.groupby("cell_id").size() == 300).all()
    assert len(read_jobs(root)) == 8 * 300  # still matched to their runs
    for path in (runs, jobs):
        assert json.loads(pq.read_schema(path).metadata[b"tiersweep.config"]) == small_raw("forced")
    assert compact(root) == (3, 3)  # nothing more to merge (runs, jobs, segments)
    # A compacted store still resumes: nothing left to compute.
    assert run_sweep(small_config("forced"), root.parent, backend="serial", progress=False).computed == 0


# -- spec column types -----------------------------------------------------------------------


def test_spec_column_types_follow_the_documented_rules():
    specs = [
        {
            "ints": 1,
            "floats": 1.5,
            "mixed": 1,
            "text": "a",
            "flags": True,
            "lists": [0.5, 1.0],
            "word_or_number": "adaptive",
            "nulls": None,
            "bool_and_int": True,
            "sometimes": None,
        },
        {
            "ints": 2,
            "floats": 2.5,
            "mixed": 2.5,
            "text": "b",
            "flags": False,
            "lists": [0.2, 0.3],
            "word_or_number": 10.0,
            "nulls": None,
            "bool_and_int": 1,
            "sometimes": 3,
        },
        {"ints": None, "text": None},
    ]
    assert spec_column_types(specs) == {
        "ints": pa.int64(),
        "floats": pa.float64(),
        "mixed": pa.float64(),
        "text": pa.string(),
        "flags": pa.bool_(),
        "lists": pa.string(),
        "word_or_number": pa.string(),
        "nulls": pa.string(),
        "bool_and_int": pa.string(),
        "sometimes": pa.int64(),
    }


def test_text_columns_store_lists_as_json_and_numbers_as_text(tmp_path):
    config = small_config(
        "text", grid={"workload.cpu_usage": [[0.5, 1.0], 0.8], "platform.bg_efficiency": ["paper", 0.9]}, seeds=[0]
    )
    run_sweep(config, tmp_path, backend="serial", progress=False)
    schema = ds.dataset(tmp_path / "text" / "runs", format="parquet").schema
    assert schema.field("workload.cpu_usage").type == pa.string()
    assert schema.field("platform.bg_efficiency").type == pa.string()
    frame = pd.read_parquet(tmp_path / "text" / "runs").sort_values("cell_index")
    assert [json.loads(v) for v in frame["workload.cpu_usage"]] == [[0.5, 1.0], [0.5, 1.0], [0.8, 0.8], [0.8, 0.8]]
    assert frame["platform.bg_efficiency"].tolist() == ["paper", "0.9", "paper", "0.9"]
    assert set(frame["status"]) == {"ok"}
