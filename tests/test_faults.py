"""Fault injection: a full disk mid-batch, compaction racing a sweep, two drivers on one folder.

Each test provokes a way to lose or double data, then checks that every cell ends up stored
exactly once with all its tables. The disk-full test mounts a small tmpfs (it needs
root and a kernel that allows it; it is skipped with the reason otherwise).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pandas as pd
import pytest

from test_sweep_resume import (
    BASE,
    DEADLINE_SECONDS,
    assert_store_readable_without_duplicates,
    cleanup,
    expected_ids,
    output_of,
    part_files,
    raw_rows,
    start_tiersweep,
    wait_for_parts,
    write_config,
)
from tiersweep.sweep.config import load_sweep_config
from tiersweep.sweep.driver import run_sweep
from tiersweep.sweep.folder_lock import FolderBusyError, FolderLock
from tiersweep.sweep.store import compact, read_jobs, read_table


# -- a full disk ---------------------------------------------------------------------------------
@pytest.fixture
def small_disk(tmp_path):
    """A 160 KiB tmpfs at ``tmp_path / "disk"``, and a way to grow it: ``grow(kib)``."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=160k", "tmpfs", str(mount)], capture_output=True, text=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {done.stderr.strip() or done.returncode}")

    def grow(kib: int) -> None:
        subprocess.run(["mount", "-o", f"remount,size={kib}k", str(mount)], check=True)

    yield mount, grow
    subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_batch_cut_short_by_a_full_disk_is_invisible_and_redone(tmp_path, small_disk):
    # A batch's cells count as stored only once their per-job records are: a runs file
    # written before a failed jobs write would keep a re-run from ever writing them.
    disk, grow = small_disk
    config = load_sweep_config(
        write_config(tmp_path, "full", grid={"policy.name": ["easy", "fcfs"]}, seeds=2, base=BASE)
    )
    with pytest.raises(OSError):  # ENOSPC: the per-job records of a batch do not fit
        run_sweep(config, disk, backend="serial", with_jobs=True, progress=False)
    root = disk / "full"
    runs = read_table(root / "runs")
    jobs = read_jobs(root)
    stored = set(runs.column("cell_id").to_pylist()) if runs.num_rows else set()
    with_jobs = set(jobs.column("cell_id").to_pylist()) if jobs.num_rows else set()
    assert stored <= with_jobs, f"cells stored without their per-job records: {sorted(stored - with_jobs)}"

    grow(64 * 1024)
    outcome = run_sweep(config, disk, backend="serial", with_jobs=True, progress=False)
    assert outcome.failed == 0 and outcome.stored_before == len(stored)
    runs = read_table(root / "runs").to_pandas()
    jobs = read_jobs(root).to_pandas()
    assert sorted(runs["cell_id"]) == sorted(c.cell_id for c in outcome.cells)
    per_cell = jobs.groupby("cell_id").size()
    for cell_id, count in zip(runs["cell_id"], runs["jobs"]):
        assert per_cell.get(cell_id, 0) == count, (
            f"cell {cell_id}: {per_cell.get(cell_id, 0)} job records for {count} jobs"
        )


# -- compaction ---------------------------------------------------------------------------------
@pytest.mark.slow
def test_compaction_during_a_sweep_is_refused_and_loses_nothing(tmp_path):
    # Compaction deletes the part files it has read: beside a running sweep it would delete
    # parts written between its read and its delete. The sweep holds the folder, so compaction
    # says so and waits for the user; afterwards it merges everything.
    config = write_config(tmp_path, "race", seeds=4, base=BASE)
    out = tmp_path / "out"
    root, logs = out / "race", tmp_path / "logs"
    proc = start_tiersweep(["sweep", str(config), "--out", str(out), "--backend", "serial"], logs, batch_seconds=0.1)
    try:
        wait_for_parts(proc, root / "runs", 2, logs)
        with pytest.raises(FolderBusyError, match=r"in use by `tiersweep sweep` \(pid \d+ on host "):
            compact(root)
        status = proc.wait(timeout=DEADLINE_SECONDS)
    finally:
        cleanup(proc)
    assert status == 0, output_of(logs)[-3000:]
    before = assert_store_readable_without_duplicates(root / "runs")
    compact(root)
    after = assert_store_readable_without_duplicates(root / "runs")
    assert len(part_files(root / "runs")) == 1
    assert sorted(after["cell_id"]) == sorted(before["cell_id"]) == sorted(expected_ids(config))


def test_compaction_keeps_records_no_stored_run_claims_and_drops_superseded_ones(tmp_path):
    # Per-job records of a batch whose runs file was never written (a full disk, or a batch
    # still being written) are not compaction's to drop; records of a run a newer run of the
    # same cell replaced are.
    config = load_sweep_config(write_config(tmp_path, "keep", grid={"policy.name": ["easy"]}, seeds=2, base=BASE))
    out = tmp_path / "out"
    run_sweep(config, out, backend="serial", with_jobs=True, progress=False)
    run_sweep(config, out, backend="serial", with_jobs=True, force=True, progress=False)  # supersedes the first
    root = out / "keep"
    orphan = read_table(root / "jobs", latest_only=False).to_pandas().head(5)
    orphan["cell_id"] = "no-such-cell"
    orphan_path = root / "jobs" / f"part-99991231T000000000000-{uuid.uuid4().hex[:8]}.parquet"
    orphan.to_parquet(orphan_path, index=False)
    visible = read_jobs(root).to_pandas()
    compact(root)
    kept = read_table(root / "jobs", latest_only=False).to_pandas()
    assert (kept["cell_id"] == "no-such-cell").sum() == 5  # kept (and still invisible to readers)
    assert len(kept) == len(visible) + 5  # the superseded first run's records are gone
    pd.testing.assert_frame_equal(
        read_jobs(root).to_pandas().sort_values(["cell_id", "job_id"]).reset_index(drop=True),
        visible.sort_values(["cell_id", "job_id"]).reset_index(drop=True),
    )


# -- two drivers --------------------------------------------------------------------------------
@pytest.mark.slow
def test_a_second_driver_on_the_same_folder_is_refused_and_every_cell_is_stored_once(tmp_path):
    # Two drivers on one folder would each store every cell (48 rows for 24 cells).
    config = write_config(tmp_path, "twice", seeds=4, base=BASE)
    out = tmp_path / "out"
    root = out / "twice"
    first = start_tiersweep(
        ["sweep", str(config), "--out", str(out), "--backend", "serial"], tmp_path / "first", batch_seconds=0.1
    )
    try:
        wait_for_parts(first, root / "runs", 1, tmp_path / "first")
        second = start_tiersweep(["sweep", str(config), "--out", str(out), "--backend", "serial"], tmp_path / "second")
        try:
            assert second.wait(timeout=DEADLINE_SECONDS) == 2
        finally:
            cleanup(second)
        message = output_of(tmp_path / "second")
        assert f"pid {first.pid} on host" in message and "Traceback" not in message, message[-2000:]
        assert first.wait(timeout=DEADLINE_SECONDS) == 0, output_of(tmp_path / "first")[-3000:]
    finally:
        cleanup(first)
    rows = raw_rows(root / "runs")
    assert rows["cell_id"].is_unique and sorted(rows["cell_id"]) == sorted(expected_ids(config))


def test_a_lock_left_by_a_killed_driver_is_not_stale(tmp_path):
    # The lock is the operating system's: it goes with its holder, however the holder ends.
    root = tmp_path / "folder"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from tiersweep.sweep.folder_lock import FolderLock\nimport time\n"
            f"with FolderLock({str(root)!r}, 'sweep'):\n    print('held', flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout.readline().strip() == b"held"
        with pytest.raises(FolderBusyError, match=f"pid {holder.pid}"):
            FolderLock(root, "compact").__enter__()
        holder.kill()
        holder.wait(timeout=30)
        deadline = time.monotonic() + 10
        while True:
            try:
                with FolderLock(root, "compact"):
                    break
            except FolderBusyError:
                assert time.monotonic() < deadline, "the killed holder's lock outlived it"
                time.sleep(0.05)
    finally:
        holder.kill()
        holder.wait(timeout=30)


def test_compacted_folder_reads_the_same_with_pandas(tmp_path):
    config = load_sweep_config(write_config(tmp_path, "same", seeds=2, base=BASE))
    out = tmp_path / "out"
    run_sweep(config, out, backend="serial", progress=False)
    before = pd.read_parquet(out / "same" / "runs").sort_values("cell_id").reset_index(drop=True)
    compact(out / "same")
    after = pd.read_parquet(out / "same" / "runs").sort_values("cell_id").reset_index(drop=True)
    pd.testing.assert_frame_equal(before, after)
    assert Path(out / "same" / ".tiersweep.lock").exists()


def test_a_full_disk_is_a_one_line_error_and_the_same_command_resumes(tmp_path, small_disk, capsys):
    from tiersweep.cli import main

    disk, grow = small_disk
    config = write_config(tmp_path, "cli", grid={"policy.name": ["easy", "fcfs"]}, seeds=2, base=BASE)
    command = ["sweep", str(config), "--out", str(disk), "--backend", "serial", "--jobs"]
    assert main(command) == 2
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1]  # after the progress bar
    assert last.startswith("tiersweep: error: no space left on the device") and "Traceback" not in err
    grow(64 * 1024)
    assert main(command) == 0
    rows = raw_rows(disk / "cli" / "runs")
    assert rows["cell_id"].is_unique and sorted(rows["cell_id"]) == sorted(expected_ids(config))


# -- inputs that corrupted a folder or crashed a reader -----------------------------------------
def _smcbf_config(tmp_path, values):
    grid = {"policy.name": ["smcbf"], "policy.xfactor_threshold": values}
    return load_sweep_config(write_config(tmp_path, f"mixed{len(values)}", grid=grid, seeds=1, base=BASE))


def test_an_axis_extended_with_values_of_another_type_is_refused_before_anything_runs(tmp_path):
    # [10] then [10, adaptive] would store the new cell as text beside the stored numbers, and
    # every later sweep, compact and pandas.read_parquet of the folder would fail (ArrowTypeError).
    from tiersweep.core.errors import SpecError

    out = tmp_path / "out"
    first = _smcbf_config(tmp_path, [10])
    run_sweep(first, out, backend="serial", progress=False)
    root = out / first.name
    files = sorted(p.name for p in (root / "runs").iterdir())
    wider = load_sweep_config(
        write_config(
            tmp_path,
            first.name,
            grid={"policy.name": ["smcbf"], "policy.xfactor_threshold": [10, "adaptive"]},
            seeds=1,
            base=BASE,
        )
    )
    with pytest.raises(
        SpecError, match=r"policy.xfactor_threshold: .* stores this column as number, but the grid now also has text"
    ):
        run_sweep(wider, out, backend="serial", progress=False)
    assert sorted(p.name for p in (root / "runs").iterdir()) == files  # nothing ran, nothing written
    assert len(pd.read_parquet(root / "runs")) == 1
    compact(root)


def test_a_text_column_takes_numbers_later_and_every_reader_accepts_the_folder(tmp_path):
    out = tmp_path / "out"
    name = "text"
    grid = {"policy.name": ["smcbf"], "policy.xfactor_threshold": ["adaptive"]}
    run_sweep(
        load_sweep_config(write_config(tmp_path, name, grid=grid, seeds=1, base=BASE)),
        out,
        backend="serial",
        progress=False,
    )
    grid["policy.xfactor_threshold"] = ["adaptive", 10]
    outcome = run_sweep(
        load_sweep_config(write_config(tmp_path, name, grid=grid, seeds=1, base=BASE)),
        out,
        backend="serial",
        progress=False,
    )
    assert (outcome.computed, outcome.stored_before) == (1, 1)
    frame = pd.read_parquet(out / name / "runs")
    assert sorted(frame["policy.xfactor_threshold"]) == ["10.0", "adaptive"]  # as validated (a number)
    compact(out / name)
    assert len(pd.read_parquet(out / name / "runs")) == 2


def test_an_axis_of_mappings_gets_a_summary_row_per_value(tmp_path):
    # A mapping is a value of the axis like any other: the summary groups by it.
    from tiersweep.sweep.summary import summary_frame

    base = {"workload": {"model": "feitelson96", "jobs": 300}, "platform": {"nodes": 64}}
    grid = {"workload.params": [{"mean_gap": 100}, {"mean_gap": 200}], "policy.name": ["easy"]}
    config = load_sweep_config(write_config(tmp_path, "maps", grid=grid, seeds=1, base=base))
    outcome = run_sweep(config, tmp_path / "out", backend="serial", progress=False)
    frame = summary_frame(outcome.cells, str(tmp_path / "out" / "maps" / "runs"), ["mean_wait"])
    assert frame["workload.params.mean_gap"].tolist() == [100, 200] and frame["seeds"].tolist() == [1, 1]


def test_bad_model_parameters_are_refused_before_anything_runs(tmp_path):
    from tiersweep.core.errors import SpecError

    base = {"workload": {"model": "lublin03", "jobs": 300}, "platform": {"nodes": 64}}
    grid = {"workload.params": [{"no_such": 1}], "policy.name": ["easy"]}
    config = load_sweep_config(write_config(tmp_path, "badparams", grid=grid, seeds=1, base=base))
    with pytest.raises(SpecError, match=r"workload.params: lublin03: unknown parameter 'no_such'"):
        run_sweep(config, tmp_path / "out", backend="serial", progress=False)
    assert not (tmp_path / "out").exists()


def test_the_report_of_a_trace_sweep_with_per_job_records_needs_no_node_count(tmp_path, kth_path):
    # platform.nodes is unset (NaN in the table) when the trace's header gives the machine size.
    from tiersweep.analysis.report import write_report

    base = {"workload": {"trace": str(kth_path), "jobs": 200}}
    config = load_sweep_config(
        write_config(tmp_path, "tracejobs", grid={"policy.name": ["easy", "fcfs"]}, seeds=1, base=base)
    )
    run_sweep(config, tmp_path / "out", backend="serial", with_jobs=True, progress=False)
    page = write_report(tmp_path / "out" / "tracejobs", tmp_path / "report")
    assert page.exists() and "occupancy_" in page.read_text()


# -- the driver stopped by a signal -------------------------------------------------------------
def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie has exited; only its entry waits for its parent


def _group_members(leader: int) -> list[int]:
    """The live processes of ``leader``'s process group, the leader left out."""
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != leader:
            try:
                if os.getpgid(int(entry.name)) == leader and _alive(int(entry.name)):
                    members.append(int(entry.name))
            except OSError:
                pass
    return sorted(members)


def _wait_gone(pids: list[int], seconds: float = 20.0) -> list[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        left = [pid for pid in pids if _alive(pid)]
        if not left:
            return []
        time.sleep(0.05)
    return [pid for pid in pids if _alive(pid)]


@pytest.mark.slow
@pytest.mark.parametrize(
    "backend", ["serial", "process", pytest.param("ray", marks=pytest.mark.slow)]
)  # Ray starts in ~5 s
@pytest.mark.parametrize("how", ["SIGTERM", "SIGKILL"])
def test_workers_die_with_a_stopped_driver_and_sigterm_is_handled_like_ctrl_c(tmp_path, how, backend):
    # After SIGKILL or SIGTERM of the driver no process-backend worker, resource tracker or Ray
    # agent may live on, and SIGTERM prints no Ray stack dump.
    import signal

    config = write_config(tmp_path, "stop", seeds=12 if backend == "ray" else 4, base=BASE)
    out = tmp_path / "out"
    logs = tmp_path / "logs"
    proc = start_tiersweep(["sweep", str(config), "--out", str(out), "--backend", backend], logs, batch_seconds=0.25)
    try:
        wait_for_parts(proc, out / "stop" / "runs", 1, logs)
        # Pool workers and multiprocessing's resource tracker, or Ray's local cluster.
        workers = _group_members(proc.pid)
        assert len(workers) >= (0 if backend == "serial" else 2), "no worker found"  # (serial: cells run in the driver)
        proc.send_signal(getattr(signal, how))  # the driver only, as a process manager would
        status = proc.wait(timeout=DEADLINE_SECONDS)
        left = _wait_gone(workers)
    finally:
        cleanup(proc)
    assert not left, f"workers outlived their driver: {left}"
    output = output_of(logs)
    if how == "SIGTERM":
        assert status == 143, output[-3000:]
        assert "Traceback" not in output and "SIGTERM received" not in output, output[-3000:]
        assert output.strip().endswith("tiersweep: terminated"), output[-3000:]
    # Whatever was stored is whole, and the same command finishes the sweep.
    assert_store_readable_without_duplicates(out / "stop" / "runs")
    again = run_sweep(load_sweep_config(config), out, backend="serial", progress=False)
    assert again.failed == 0
    rows = raw_rows(out / "stop" / "runs")
    assert rows["cell_id"].is_unique and sorted(rows["cell_id"]) == sorted(expected_ids(config))


# -- two tuners ---------------------------------------------------------------------------------
def _tune_raw(name: str, trials: int) -> dict:
    return {
        "name": name,
        "base": {
            "workload": {"model": "jann97", "jobs": 300},
            "platform": {"nodes": 64, "tiers": 2},
            "policy": {"name": "amcbf"},
        },
        "params": {"policy.bg_threshold": {"low": 0.5, "high": 1.0}},
        "objective": {"mean_bsld": "minimize"},
        "seeds": 1,
        "trials": trials,
        "sampler": {"name": "tpe", "seed": 0},
    }


def test_a_second_tuner_on_the_same_study_folder_is_refused(tmp_path):
    # Two tuners on one study would adopt each other's running trials, mix parameters and
    # objectives, and run more trials than the target.
    from sweep_helpers import write_yaml

    config = write_yaml(tmp_path / "tune.yaml", _tune_raw("two", 40))
    out = tmp_path / "out"
    holder = FolderLock(out / "two", "tune").__enter__()  # as a running tuner holds it
    try:
        second = start_tiersweep(["tune", str(config), "--out", str(out), "--backend", "serial"], tmp_path / "second")
        try:
            assert second.wait(timeout=DEADLINE_SECONDS) == 2
        finally:
            cleanup(second)
    finally:
        holder.__exit__(None, None, None)
    message = output_of(tmp_path / "second")
    assert f"in use by `tiersweep tune` (pid {os.getpid()} on host" in message and "Traceback" not in message, message[
        -2000:
    ]


def test_a_running_trial_is_adopted_only_once_its_tuner_is_gone(tmp_path):
    import optuna

    from tiersweep.sweep.reaper import start_time
    from tiersweep.sweep.tune import OWNER, run_tuning
    from tiersweep.sweep.tune_config import parse_tune_config

    out = tmp_path / "out"
    first = run_tuning(parse_tune_config(_tune_raw("own", 2)), out, backend="serial", progress=False)
    study = first.study
    other = subprocess.Popen(["sleep", "60"])  # stands for another live tuner on this host
    try:
        orphan = study.ask({"policy.bg_threshold": optuna.distributions.FloatDistribution(0.5, 1.0)})
        orphan.set_user_attr(OWNER, f"{os.uname().nodename}:{other.pid}:{start_time(other.pid)}")
        second = run_tuning(parse_tune_config(_tune_raw("own", 3)), out, backend="serial", progress=False)
        states = {t.number: t.state.name for t in second.study.trials}
        assert states[orphan.number] == "RUNNING"  # its tuner is alive: left to it
        assert sum(s == "COMPLETE" for s in states.values()) == 3
    finally:
        other.kill()
        other.wait()
    third = run_tuning(parse_tune_config(_tune_raw("own", 4)), out, backend="serial", progress=False)
    states = {t.number: t.state.name for t in third.study.trials}
    assert states[orphan.number] == "COMPLETE"  # its tuner is gone: evaluated under its own number
    assert sum(s == "COMPLETE" for s in states.values()) == 4 and len(states) == 4


def test_compacting_a_folder_that_is_not_a_sweep_is_an_error_and_creates_nothing(tmp_path, capsys):
    from tiersweep.cli import main

    missing = tmp_path / "no" / "such"
    assert main(["compact", str(missing)]) == 2
    assert "not a sweep's results folder" in capsys.readouterr().err
    assert not (tmp_path / "no").exists()


# -- damaged and read-only results folders ------------------------------------------------------
def _stored_small_sweep(tmp_path, out, with_jobs=False):
    from tiersweep.cli import main

    path = write_config(tmp_path, "small", grid={"policy.name": ["easy", "fcfs"]}, seeds=2, base=BASE)
    argv = ["sweep", "--backend", "serial", "--out", str(out), str(path)] + (["--jobs"] if with_jobs else [])
    assert main(argv) == 0
    return path, argv


@pytest.mark.parametrize("table", ["runs", "jobs"])
def test_a_corrupt_part_file_is_a_one_line_error_naming_it_and_the_recovery(tmp_path, capsys, table):
    from tiersweep.analysis import load
    from tiersweep.cli import main

    path, argv = _stored_small_sweep(tmp_path, tmp_path / "out", with_jobs=True)
    part = sorted((tmp_path / "out" / "small" / table).glob("part-*.parquet"))[0]
    part.write_bytes(part.read_bytes()[:100])  # cut short, as a crash of the disk or a copy would
    capsys.readouterr()
    commands = [argv, ["compact", str(tmp_path / "out" / "small")]]
    if table == "runs":  # (the report reads no per-job records)
        commands.append(["report", str(tmp_path / "out" / "small")])
    for command in commands:
        assert main(command) == 2, command
        err = capsys.readouterr().err
        assert err.startswith(f"tiersweep: error: {part}: not a readable Parquet file") and "Traceback" not in err, err
        assert "move it out of the folder" in err and len(err.strip().splitlines()) == 1
    with pytest.raises(Exception, match="not a readable Parquet file"):
        load(tmp_path / "out" / "small", table)
    # The recovery the message gives works: the cells are computed again, whole.
    part.rename(tmp_path / part.name)
    assert main(argv) == 0
    runs = read_table(tmp_path / "out" / "small" / "runs").to_pandas()
    jobs = read_jobs(tmp_path / "out" / "small").to_pandas()
    assert len(runs) == 4 and set(jobs["cell_id"]) == set(runs["cell_id"])


def test_a_damaged_manifest_is_a_one_line_error_and_a_rerun_writes_it_again(tmp_path, capsys):
    from tiersweep.cli import main

    path, argv = _stored_small_sweep(tmp_path, tmp_path / "out")
    manifest = tmp_path / "out" / "small" / "manifest.json"
    manifest.write_text('{"config": {"name": "sm')  # cut short
    capsys.readouterr()
    assert main(["report", str(tmp_path / "out" / "small")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"tiersweep: error: {manifest}: damaged") and "delete it" in err
    manifest.unlink()
    assert main(argv) == 0
    assert "config" in __import__("json").loads(manifest.read_text())
    assert main(["report", str(tmp_path / "out" / "small")]) == 0


def test_a_read_only_results_folder_with_nothing_to_compute_is_left_untouched(tmp_path, small_disk, capsys):
    from tiersweep.cli import main

    disk, _ = small_disk  # a file system of its own, to be remounted read-only (root reads past chmod)
    subprocess.run(["mount", "-o", "remount,size=16m", str(disk)], check=True)
    path, argv = _stored_small_sweep(tmp_path, disk)
    before = {p: p.stat().st_mtime_ns for p in (disk / "small").rglob("*")}
    subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
    try:
        capsys.readouterr()
        assert main(argv) == 0  # every cell stored: it reports them and writes nothing
        out = capsys.readouterr().out
        assert "0 computed now" in out and "4 already stored" in out
        assert {p: p.stat().st_mtime_ns for p in (disk / "small").rglob("*")} == before
        # A cell to compute in a read-only folder is one line naming the folder, before running.
        bigger = write_config(
            tmp_path, "small", grid={"policy.name": ["easy", "fcfs", "conservative"]}, seeds=2, base=BASE
        )
        assert main(argv[:-1] + [str(bigger)]) == 2
        err = capsys.readouterr().err
        assert (
            err.startswith(f"tiersweep: error: {disk / 'small'}: cannot store results here") and "Traceback" not in err
        )
    finally:
        subprocess.run(["mount", "-o", "remount,rw", str(disk)], check=True)


def test_a_rerun_with_jobs_computes_the_per_job_records_a_run_without_it_left_out(tmp_path, capsys):
    from tiersweep.cli import main

    path, argv = _stored_small_sweep(tmp_path, tmp_path / "out")
    root = tmp_path / "out" / "small"
    assert read_jobs(root).num_rows == 0
    first = read_table(root / "runs").to_pandas()
    capsys.readouterr()
    assert main(argv + ["--jobs"]) == 0
    assert "4 of the computed cells were stored without per-job records" in capsys.readouterr().out
    runs = read_table(root / "runs").to_pandas()
    jobs = read_jobs(root).to_pandas()
    assert sorted(runs["cell_id"]) == sorted(first["cell_id"])
    per_cell = jobs.groupby("cell_id").size()
    assert all(per_cell[c] == n for c, n in zip(runs["cell_id"], runs["jobs"]))
    # The same metrics: the cells are deterministic, only now with their records.
    assert runs.set_index("cell_id")["mean_bsld"].to_dict() == first.set_index("cell_id")["mean_bsld"].to_dict()
    assert main(argv + ["--jobs"]) == 0  # and then nothing is left to compute
    assert "0 computed now" in capsys.readouterr().out


def test_out_pointing_at_a_file_is_a_one_line_error(tmp_path, capsys):
    from tiersweep.cli import main

    path = write_config(tmp_path, "small", grid={"policy.name": ["easy"]}, seeds=1, base=BASE)
    afile = tmp_path / "results.txt"
    afile.write_text("notes")
    assert main(["sweep", "--backend", "serial", "--out", str(afile), str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        f"tiersweep: error: --out: cannot make the folder {afile / 'small'}: {afile} is a file, not a folder"
    )
    assert afile.read_text() == "notes"


_CANCEL_LOOP = """
import random
import sys
import time

from tiersweep.sweep.backends import RayBackend

random.seed(1)
backend = RayBackend(num_cpus=2)
try:
    for round_ in range(int(sys.argv[1])):
        for batch in range(20):
            backend.submit(batch, [], False)
        time.sleep(random.random() * 0.05)  # some batches done, some finishing, some queued
        backend.wait()
        backend.cancel()
finally:
    backend.close()
print("done")
"""


@pytest.mark.slow  # Ray starts in ~5 s
def test_abandoning_ray_batches_in_flight_never_aborts_the_driver(tmp_path):
    # ray.cancel() races with the reply of a task that is just finishing, and Ray then aborts
    # the process with a stack dump ("Check failed: it != submissible_tasks_.end() Tried to
    # complete task that was not pending"), so a sweep stopped with SIGTERM on Ray would exit 1.
    # The driver abandons batches instead of cancelling them; a loop of ray.cancel() while
    # batches finish meets the race in about one run of three per 300 rounds (so 900 rounds here).
    script = tmp_path / "cancel_loop.py"
    script.write_text(_CANCEL_LOOP)
    result = subprocess.run(
        [sys.executable, str(script), "900"], capture_output=True, text=True, timeout=240, cwd=tmp_path
    )
    assert result.returncode == 0 and result.stdout.strip().endswith("done"), result.stderr[-3000:]
    assert "Check failed" not in result.stderr, result.stderr[-3000:]


_CANCEL_AND_EXIT = """
import sys


def main():
    sys.path.insert(0, sys.argv[1])  # the tests' helpers
    from sweep_helpers import small_config
    from tiersweep.sweep.backends import ProcessBackend
    from tiersweep.sweep.batch import task_for
    from tiersweep.sweep.config import expand

    tasks = [task_for(cell, "exit") for cell in expand(small_config("exit"))]
    backend = ProcessBackend(workers=2)
    for batch in range(6):
        backend.submit(batch, tasks[batch % len(tasks):][:1], False)
    backend.wait()
    backend.cancel()  # as a stopped sweep does, then straight out of the program
    backend.close()
    sys.exit(143)


if __name__ == "__main__":
    main()
"""


@pytest.mark.slow
def test_a_cancelled_process_pool_lets_the_program_exit_without_noise(tmp_path):
    # A sweep stopped with SIGTERM on the process backend can print, after "tiersweep:
    # terminated", "Exception ignored in: <module 'threading'> ... OSError: [Errno 9] Bad file
    # descriptor" (the interpreter's exit hook for process pools writes to the wake-up pipe the
    # pool's manager thread is closing), or "Exception in thread ... InvalidStateError:
    # CANCELLED" (the manager thread failing on a future cancelled by hand); a loop that
    # cancels futures by hand prints one or the other in about 5 runs of 30.
    script = tmp_path / "cancel_and_exit.py"
    script.write_text(_CANCEL_AND_EXIT)
    for _ in range(12):
        result = subprocess.run(
            [sys.executable, str(script), str(Path(__file__).parent)], capture_output=True, text=True, timeout=120
        )
        assert result.returncode == 143 and result.stderr == "", result.stderr[-3000:]
