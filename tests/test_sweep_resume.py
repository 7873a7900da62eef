"""Resuming sweeps: re-runs, grid extensions, ``--max-cells``, ``--force``, crashes and SIGINT.

The promise under test (``sweep/driver.py``, ``sweep/store.py``): cells already stored are
never computed twice; each finished batch becomes one part file written under a temporary
name and renamed into place, so a sweep killed at any moment leaves a store whose every
visible file is whole, and running it again computes exactly the missing cells, with the
same values an uninterrupted sweep gives. A failing cell is data (a ``failed`` row), not a
crash, and is recomputed only with ``--retry-failed``.

The in-process tests call :func:`tiersweep.sweep.driver.run_sweep` on the serial backend; the crash
tests run ``tiersweep sweep`` as a subprocess (``python -m tiersweep``, or the same
``tiersweep.cli.main`` through a tiny launcher that lowers ``BATCH_SECONDS`` so that small cells
make many small batches, i.e. many part files to be killed between) and SIGKILL or SIGINT it,
or SIGKILL one of its pool workers. Every cell here takes about 0.03 to 0.3 s.

Subprocesses run in sessions of their own (so that a process group can be signalled and is
always killed in the end) with SIGINT at its default disposition (a background shell job
would otherwise pass SIG_IGN on, and the sweep could not be interrupted).
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq
import pytest
import yaml

from sweep_helpers import default_sigint
from tiersweep.cli import main
from tiersweep.sweep.config import expand, load_sweep_config
from tiersweep.sweep.driver import run_sweep
from tiersweep.sweep.folder_lock import LOCK_NAME
from tiersweep.sweep.store import read_jobs, read_table

#: The project root (the working directory of the ``tiersweep`` subprocesses).
PROJECT = Path(__file__).resolve().parents[1]

#: The crash tests' cells (about 0.05 to 0.3 s each); the in-process tests use smaller ones.
BASE = {"workload": {"model": "jann97", "jobs": 2000}, "platform": {"nodes": 64, "tiers": 2}}
SMALL = {"workload": {"model": "jann97", "jobs": 1000}, "platform": {"nodes": 64, "tiers": 2}}
GRID = {"policy.name": ["easy", "amcbf", "fcfs"], "workload.load": [0.5, 0.7, 0.9]}
#: Columns that legitimately differ between two computations of the same cell.
VOLATILE = ["wall_seconds", "written_at", "write_seq", "host"]

#: ``tiersweep`` through ``tiersweep.cli.main`` with the batch target ``BATCH_SECONDS`` set from the
#: first argument (in whichever sweep module sizes batches): with the default 3 s a serial
#: sweep of small cells writes one file for the first cell and one for all the rest, leaving
#: nothing to kill between two part files.
LAUNCHER = """
import importlib, sys
seconds = float(sys.argv.pop(1))
for name in ("tiersweep.sweep.driver", "tiersweep.sweep.runner"):
    try:
        module = importlib.import_module(name)
    except ImportError:
        continue
    if hasattr(module, "BATCH_SECONDS"):
        module.BATCH_SECONDS = seconds
from tiersweep.cli import main
sys.exit(main())
"""
#: How long a subprocess sweep may take before the test gives up (a loaded 2-CPU machine).
DEADLINE_SECONDS = 120


# -- helpers ------------------------------------------------------------------------------------
def write_config(
    folder: Path, name: str, *, grid: dict[str, list[Any]] = GRID, seeds: int = 2, base: dict = SMALL
) -> Path:
    """A sweep config file ``folder/NAME.yaml``."""
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"name": name, "base": base, "grid": grid, "seeds": seeds}, sort_keys=False))
    return path


def files_of(root: Path) -> dict[str, tuple[int, int, str]]:
    """Every file under ``root`` (relative path -> size, mtime in ns, SHA-256), but the manifest
    and the writers' lock (which says who held it last)."""
    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.name not in ("manifest.json", LOCK_NAME):
            stat = path.stat()
            out[str(path.relative_to(root))] = (
                stat.st_size,
                stat.st_mtime_ns,
                hashlib.sha256(path.read_bytes()).hexdigest(),
            )
    return out


def manifest_without_timestamp(root: Path) -> dict[str, Any]:
    manifest = json.loads((root / "manifest.json").read_text())
    manifest.pop("updated_at", None)
    return manifest


def part_files(runs: Path) -> list[Path]:
    return sorted(runs.glob("part-*.parquet"))


def raw_rows(runs: Path) -> pd.DataFrame:
    """Every row of every visible part file, older rows of a recomputed cell included."""
    return read_table(runs, latest_only=False).to_pandas()


def comparable(runs: Path) -> pd.DataFrame:
    """The rows a reader sees, without the columns that differ between two computations."""
    frame = read_table(runs).to_pandas().drop(columns=VOLATILE)
    return frame.sort_values("cell_index").reset_index(drop=True)


def expected_ids(config_path: Path) -> list[str]:
    return [cell.cell_id for cell in expand(load_sweep_config(config_path))]


def start_tiersweep(args: list[str], logs: Path, *, batch_seconds: float | None = None) -> subprocess.Popen:
    """``tiersweep ARGS`` as a subprocess in its own session (so that its process group, pool
    workers included, can be signalled and cleaned up), output to files under ``logs``."""
    if batch_seconds is None:
        command = [sys.executable, "-m", "tiersweep", *args]
    else:
        command = [sys.executable, "-c", LAUNCHER, str(batch_seconds), *args]
    env = {key: value for key, value in os.environ.items() if key != "RAY_ADDRESS"}
    logs.mkdir(parents=True, exist_ok=True)
    with open(logs / "stdout.txt", "wb") as stdout, open(logs / "stderr.txt", "wb") as stderr:
        return subprocess.Popen(
            command,
            cwd=PROJECT,
            env=env,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,
            preexec_fn=default_sigint,
        )


def output_of(logs: Path) -> str:
    return (logs / "stdout.txt").read_text(errors="replace") + (logs / "stderr.txt").read_text(errors="replace")


def kill_group(proc: subprocess.Popen, sig: int = signal.SIGKILL) -> None:
    """Signal the subprocess's whole process group (it leads its own session)."""
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass


def cleanup(proc: subprocess.Popen) -> None:
    """Make sure nothing the subprocess started outlives the test."""
    kill_group(proc, signal.SIGKILL)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        pass


def wait_for_parts(proc: subprocess.Popen, runs: Path, count: int, logs: Path) -> None:
    """Block until ``runs`` holds ``count`` part files while the sweep still runs."""
    deadline = time.monotonic() + DEADLINE_SECONDS
    while len(part_files(runs)) < count:
        if proc.poll() is not None:
            pytest.fail(
                f"the sweep exited (status {proc.returncode}) before writing {count} part files "
                f"({len(part_files(runs))} written); cells too small for this test?\n{output_of(logs)[-3000:]}"
            )
        if time.monotonic() > deadline:
            pytest.fail(f"no {count} part files after {DEADLINE_SECONDS} s\n{output_of(logs)[-3000:]}")
        time.sleep(0.005)


def assert_store_readable_without_duplicates(runs: Path) -> pd.DataFrame:
    """Every visible part file reads whole, pandas reads the folder, no cell is stored twice."""
    parts = part_files(runs)
    for part in parts:
        pq.read_table(part)  # raises on a truncated or partial file
    rows = raw_rows(runs)
    assert len(rows) == sum(pq.ParquetFile(p).metadata.num_rows for p in parts)
    assert len(pd.read_parquet(runs)) == len(rows), "pandas sees other rows than the part files hold"
    duplicated = rows["cell_id"][rows["cell_id"].duplicated()].tolist()
    assert not duplicated, f"cells stored twice: {duplicated}"
    assert (rows["status"] == "ok").all(), rows.loc[rows["status"] != "ok", ["cell_index", "status", "error"]]
    return rows


# -- fixtures -----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> dict[str, Any]:
    """The crash tests' config and its uninterrupted sweep (serial, in-process)."""
    folder = tmp_path_factory.mktemp("reference")
    config = write_config(folder, "crash", base=BASE)
    outcome = run_sweep(load_sweep_config(config), folder / "out", backend="serial", progress=False)
    assert outcome.computed == len(outcome.cells) == 18 and outcome.failed == 0
    return {"config": config, "rows": comparable(folder / "out" / "crash" / "runs"), "cells": len(outcome.cells)}


def crash_config(tmp_path: Path, reference: dict[str, Any]) -> Path:
    """A copy of the reference config in this test's folder."""
    path = tmp_path / "crash.yaml"
    path.write_text(reference["config"].read_text())
    return path


# -- re-runs, extensions, limits, force ---------------------------------------------------------
def test_rerun_computes_nothing_and_leaves_the_store_unchanged(tmp_path):
    config = load_sweep_config(write_config(tmp_path, "rerun"))
    first = run_sweep(config, tmp_path / "out", backend="serial", progress=False)
    assert (first.computed, first.stored_before, first.failed) == (18, 0, 0)
    root = tmp_path / "out" / "rerun"
    files, manifest = files_of(root), manifest_without_timestamp(root)

    again = run_sweep(config, tmp_path / "out", backend="serial", progress=False)

    assert (again.computed, again.stored_before, again.failed) == (0, 18, 0)
    assert files_of(root) == files, "a re-run with nothing to do changed the store's files"
    assert manifest_without_timestamp(root) == manifest
    assert sorted(read_table(root / "runs").column("cell_id").to_pylist()) == sorted(c.cell_id for c in first.cells)


@pytest.mark.slow
def test_extending_the_grid_computes_only_the_new_cells(tmp_path):
    out = tmp_path / "out"
    small = load_sweep_config(write_config(tmp_path, "grow"))
    run_sweep(small, out, backend="serial", progress=False)
    before = raw_rows(out / "grow" / "runs")

    wider = dict(GRID, **{"workload.load": [0.5, 0.7, 0.9, 1.1]})
    config = load_sweep_config(write_config(tmp_path, "grow", grid=wider))
    outcome = run_sweep(config, out, backend="serial", progress=False)

    assert len(outcome.cells) == 24
    assert (outcome.computed, outcome.stored_before) == (6, 18)
    rows = raw_rows(out / "grow" / "runs")
    assert len(rows) == 24 and rows["cell_id"].is_unique
    new = rows[~rows["cell_id"].isin(before["cell_id"])]
    assert sorted(new["workload.load"].unique()) == [1.1]
    assert sorted(new["policy.name"].unique()) == ["amcbf", "easy", "fcfs"]
    # The old rows are untouched: same values, same write times.
    old = rows[rows["cell_id"].isin(before["cell_id"])].set_index("cell_id").sort_index()
    pd.testing.assert_frame_equal(
        old.drop(columns="cell_index"), before.set_index("cell_id").sort_index().drop(columns="cell_index")
    )
    assert set(read_table(out / "grow" / "runs").column("cell_id").to_pylist()) == {c.cell_id for c in outcome.cells}


@pytest.mark.slow
def test_max_cells_limits_a_run_and_the_next_run_completes_the_rest(tmp_path):
    config = load_sweep_config(write_config(tmp_path, "limited"))
    out = tmp_path / "out"
    first = run_sweep(config, out, backend="serial", max_cells=5, progress=False)
    assert (first.computed, first.stored_before) == (5, 0)
    assert len(raw_rows(out / "limited" / "runs")) == 5

    second = run_sweep(config, out, backend="serial", max_cells=5, progress=False)
    assert (second.computed, second.stored_before) == (5, 5)

    rest = run_sweep(config, out, backend="serial", progress=False)
    assert (rest.computed, rest.stored_before) == (8, 10)
    rows = raw_rows(out / "limited" / "runs")
    assert len(rows) == 18 and rows["cell_id"].is_unique
    assert set(rows["cell_id"]) == {c.cell_id for c in rest.cells}
    assert run_sweep(config, out, backend="serial", progress=False).computed == 0


@pytest.mark.slow
def test_force_recomputes_every_cell_and_readers_see_one_row_per_cell(tmp_path):
    config = load_sweep_config(write_config(tmp_path, "forced"))
    out = tmp_path / "out"
    run_sweep(config, out, backend="serial", with_jobs=True, progress=False)
    runs = out / "forced" / "runs"
    first = read_table(runs).to_pandas()

    outcome = run_sweep(config, out, backend="serial", with_jobs=True, force=True, progress=False)

    assert (outcome.computed, outcome.stored_before, outcome.failed) == (18, 0, 0)
    assert len(raw_rows(runs)) == 36, "force should add a newer row per cell, not rewrite the old ones"
    latest = read_table(runs).to_pandas()
    assert len(latest) == 18 and latest["cell_id"].is_unique
    assert (latest.set_index("cell_id")["written_at"] > first.set_index("cell_id")["written_at"]).all()
    pd.testing.assert_frame_equal(latest.drop(columns=VOLATILE), first.drop(columns=VOLATILE))
    jobs = read_jobs(out / "forced").to_pandas()
    assert jobs.groupby("cell_id").size().to_dict() == dict.fromkeys(latest["cell_id"], 1000)
    # Nothing left to do afterwards, and a plain re-run does not recompute.
    assert run_sweep(config, out, backend="serial", progress=False).computed == 0


@pytest.mark.slow
def test_cli_max_cells_and_force_flags_reach_the_driver(tmp_path, capsys):
    config = str(write_config(tmp_path, "flags"))
    out = str(tmp_path / "out")
    runs = tmp_path / "out" / "flags" / "runs"
    assert main(["sweep", config, "--out", out, "--backend", "serial", "--max-cells", "4"]) == 0
    assert len(raw_rows(runs)) == 4
    assert "4 computed now" in capsys.readouterr().out
    assert main(["sweep", config, "--out", out, "--backend", "serial"]) == 0
    assert "14 computed now" in capsys.readouterr().out
    assert main(["sweep", config, "--out", out, "--backend", "serial", "--force", "--max-cells", "3"]) == 0
    assert "3 computed now" in capsys.readouterr().out
    assert len(raw_rows(runs)) == 21 and len(read_table(runs)) == 18


# -- crashes ------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("backend", ["serial", "process"])
def test_sigkill_mid_sweep_leaves_a_whole_store_that_resumes_to_the_same_values(tmp_path, reference, backend):
    config = crash_config(tmp_path, reference)
    out = tmp_path / "out"
    runs = out / "crash" / "runs"
    logs = tmp_path / "killed"
    proc = start_tiersweep(["sweep", str(config), "--out", str(out), "--backend", backend], logs, batch_seconds=0.25)
    try:
        wait_for_parts(proc, runs, 2, logs)
        if backend == "process":
            kill_group(proc, signal.SIGKILL)  # the driver and its pool workers at once
        else:
            proc.kill()
        assert proc.wait(timeout=30) == -signal.SIGKILL
    finally:
        cleanup(proc)

    rows = assert_store_readable_without_duplicates(runs)
    assert 2 <= len(rows) < reference["cells"], (
        f"the kill came after the sweep had finished ({len(rows)} rows; does LAUNCHER still shrink the batches?)"
    )
    assert set(rows["cell_id"]) <= set(expected_ids(config))

    outcome = run_sweep(load_sweep_config(config), out, backend="serial", progress=False)

    assert outcome.stored_before == len(rows)
    assert outcome.computed == reference["cells"] - len(rows)
    rows = assert_store_readable_without_duplicates(runs)
    assert sorted(rows["cell_id"]) == sorted(expected_ids(config))
    pd.testing.assert_frame_equal(comparable(runs), reference["rows"])


@pytest.mark.slow
def test_a_leftover_temporary_file_of_a_killed_write_is_invisible(tmp_path, reference):
    """What a kill between ``write_table`` and ``rename`` leaves: a truncated ``.part-*.tmp``."""
    config = crash_config(tmp_path, reference)
    out = tmp_path / "out"
    runs = out / "crash" / "runs"
    run_sweep(load_sweep_config(config), out, backend="serial", max_cells=4, progress=False)
    whole = part_files(runs)[0].read_bytes()
    stray = runs / ".part-20000101T000000000000-deadbeef.parquet.tmp"
    stray.write_bytes(whole[: len(whole) // 2])

    assert len(read_table(runs)) == 4
    assert len(pd.read_parquet(runs)) == 4
    outcome = run_sweep(load_sweep_config(config), out, backend="serial", progress=False)
    assert (outcome.stored_before, outcome.computed) == (4, reference["cells"] - 4)
    pd.testing.assert_frame_equal(comparable(runs), reference["rows"])


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["serial", "process"])
def test_sigint_exits_130_keeps_whole_rows_and_resume_finishes(tmp_path, reference, backend):
    """SIGINT to the ``tiersweep`` process (``kill -INT``; the real ``python -m tiersweep`` with
    its default batch sizes). With the process backend only the driver gets it; the terminal's
    Ctrl-C, which also reaches the pool workers, can hang the driver at exit (rarely: a race,
    so not asserted here; see the report of this test file)."""
    config = crash_config(tmp_path, reference)
    out = tmp_path / "out"
    runs = out / "crash" / "runs"
    logs = tmp_path / "interrupted"
    proc = start_tiersweep(["sweep", str(config), "--out", str(out), "--backend", backend], logs)
    try:
        wait_for_parts(proc, runs, 1, logs)
        proc.send_signal(signal.SIGINT)
        status = proc.wait(timeout=60)
    finally:
        cleanup(proc)

    assert status == 130, f"exit status {status}\n{output_of(logs)[-3000:]}"
    assert "interrupted" in output_of(logs)
    rows = assert_store_readable_without_duplicates(runs)
    assert 1 <= len(rows) < reference["cells"], f"the interrupt came after the sweep had finished ({len(rows)} rows)"
    metrics = ["mean_wait", "mean_bsld", "utilization", "jobs"]
    assert rows[metrics].notna().all().all(), "a stored row lacks its metrics"

    outcome = run_sweep(load_sweep_config(config), out, backend="serial", progress=False)
    assert (outcome.stored_before, outcome.computed, outcome.failed) == (len(rows), reference["cells"] - len(rows), 0)
    assert_store_readable_without_duplicates(runs)
    pd.testing.assert_frame_equal(comparable(runs), reference["rows"])


def pool_workers(proc: subprocess.Popen) -> list[int]:
    """The ``spawn`` pool workers in the process group of ``proc``."""
    workers = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if (
                    os.getpgid(int(entry)) == proc.pid
                    and b"multiprocessing.spawn" in Path(f"/proc/{entry}/cmdline").read_bytes()
                ):
                    workers.append(int(entry))
            except (OSError, ProcessLookupError):
                pass
    return sorted(workers)


@pytest.mark.slow
def test_a_killed_pool_worker_does_not_take_the_sweep_down(tmp_path):
    """``ProcessBackend``: a dead worker (e.g. the OOM killer) costs a retry, not the sweep.
    36 cells in small batches, so that many are still queued when the worker dies."""
    config = write_config(tmp_path, "crash", base=BASE, seeds=4)
    out = tmp_path / "out"
    runs = out / "crash" / "runs"
    logs = tmp_path / "worker-killed"
    proc = start_tiersweep(["sweep", str(config), "--out", str(out), "--backend", "process"], logs, batch_seconds=0.25)
    try:
        wait_for_parts(proc, runs, 2, logs)
        workers = pool_workers(proc)
        assert workers, "no pool worker found"
        os.kill(workers[0], signal.SIGKILL)
        status = proc.wait(timeout=DEADLINE_SECONDS)
    finally:
        cleanup(proc)

    output = output_of(logs)
    assert "Traceback" not in output, output[-3000:]
    rows = raw_rows(runs)
    assert sorted(rows["cell_id"]) == sorted(expected_ids(config)), "the sweep stopped before storing every cell"
    # The batches lost with the pool are run again on a new one: nothing fails.
    assert (rows["status"] == "ok").all(), rows.loc[rows["status"] != "ok", "error"].tolist()[:3]
    assert rows["cell_id"].is_unique
    assert status == 0, output[-3000:]


# -- failing cells ------------------------------------------------------------------------------
def swf_line(number: int, submit: int, runtime: int, size: int) -> str:
    fields = [number, submit, -1, runtime, size, -1, -1, size, runtime * 2, -1, 1, 1, 1, -1, 1, -1, -1, -1]
    return " ".join(str(f) for f in fields)


def test_a_failing_cell_is_stored_failed_and_recomputed_only_with_retry_failed(tmp_path, capsys):
    header = "; MaxNodes: 64\n; MaxProcs: 64\n"
    good = tmp_path / "good.swf"
    good.write_text(header + "\n".join(swf_line(i, 60 * i, 300 + 7 * i, 1 + i % 8) for i in range(1, 41)) + "\n")
    bad = tmp_path / "bad.swf"
    lines = [swf_line(i, 60 * i, 300, 4) for i in range(1, 41)]
    lines[20] = "21 1200 -1 three-hundred 4 -1 -1 4 600 -1 1 1 1 -1 1 -1 -1 -1"
    bad.write_text(header + "\n".join(lines) + "\n")
    base = {"platform": {"nodes": 64, "tiers": 2}}
    grid = {"workload.trace": [str(good), str(bad)], "policy.name": ["easy", "fcfs"]}
    path = write_config(tmp_path, "failing", grid=grid, seeds=1, base=base)
    config = load_sweep_config(path)
    out = tmp_path / "out"
    runs = out / "failing" / "runs"

    outcome = run_sweep(config, out, backend="serial", progress=False)

    assert (outcome.computed, outcome.failed) == (4, 2), "the good cells must run despite the bad ones"
    rows = read_table(runs).to_pandas()
    assert dict(zip(rows["workload.trace"], rows["status"])) == {str(good): "ok", str(bad): "failed"}
    failed = rows[rows["status"] == "failed"]
    assert failed["error"].str.contains("malformed").all(), failed["error"].tolist()
    assert rows.loc[rows["status"] == "ok", "mean_wait"].notna().all()

    again = run_sweep(config, out, backend="serial", progress=False)
    assert (again.computed, again.stored_before, again.failed) == (0, 4, 2)
    assert len(raw_rows(runs)) == 4

    retried = run_sweep(config, out, backend="serial", retry_failed=True, progress=False)
    assert (retried.computed, retried.stored_before, retried.failed) == (2, 2, 2)
    raw = raw_rows(runs)
    assert len(raw) == 6 and set(raw.loc[raw["cell_id"].duplicated(keep=False), "workload.trace"]) == {str(bad)}
    assert len(read_table(runs)) == 4

    # The command line: exit status 1 while cells are failed; a re-run computes nothing.
    capsys.readouterr()
    assert main(["sweep", str(path), "--out", str(out), "--backend", "serial"]) == 1
    text = capsys.readouterr().out
    assert "0 computed now" in text and "2 failed" in text
    assert main(["sweep", str(path), "--out", str(out), "--backend", "serial", "--retry-failed"]) == 1
    assert "2 computed now" in capsys.readouterr().out
