"""Results that cannot be silently wrong: a compaction killed half-way, a clock that moves
back, and every recovery hint the store prints, followed to the letter.

Each test reproduces a reported way to double, hide or lose stored rows on real Parquet
folders (sweeps run serially in-process; the killed compaction is a real ``tiersweep``
process killed with SIGKILL).
"""

from __future__ import annotations

import datetime as dt
import signal
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from sweep_helpers import small_config, small_raw, write_yaml
from test_faults import small_disk  # noqa: F401 (a fixture)
from tiersweep.analysis import load
from tiersweep.cli import main
from tiersweep.sweep import store
from tiersweep.sweep.driver import run_sweep
from tiersweep.sweep.store import compact, read_jobs, read_table

PROJECT = Path(__file__).resolve().parents[1]
TABLES = ("runs", "jobs", "segments")
#: A study of three quick trials.
TUNE_RAW = {
    "name": "trials",
    "base": {
        "workload": {"model": "jann97", "jobs": 300},
        "platform": {"nodes": 64, "tiers": 2},
        "policy": {"name": "amcbf"},
    },
    "params": {"policy.bg_threshold": {"low": 0.5, "high": 1.0}},
    "objective": {"mean_bsld": "minimize"},
    "seeds": 1,
    "trials": 3,
    "sampler": {"name": "tpe", "seed": 0},
}

#: A compaction that SIGKILLs itself when it is about to delete its ``N``-th part file of
#: ``TABLE`` (argv: ROOT TABLE N): the moment between writing a merged file and deleting the
#: parts it replaces.
KILLED_COMPACT = """
import os, signal, sys
root, table, nth = sys.argv[1], sys.argv[2], int(sys.argv[3])
seen = []
real_remove, real_unlink = os.remove, os.unlink
def remove(path, *args, **kwargs):
    if os.path.basename(os.path.dirname(os.fspath(path))) == table:
        seen.append(path)
        if len(seen) == nth:
            os.kill(os.getpid(), signal.SIGKILL)
    return real_remove(path, *args, **kwargs)
os.remove = os.unlink = remove
from tiersweep.cli import main
sys.exit(main(["compact", root]))
"""


def killed_compact(root: Path, table: str, nth: int) -> None:
    """``tiersweep compact ROOT``, SIGKILLed as it deletes its ``nth`` part file of ``table``."""
    command = [sys.executable, "-c", KILLED_COMPACT, str(root), table, str(nth)]
    done = subprocess.run(command, cwd=PROJECT, capture_output=True, text=True, timeout=120)
    assert done.returncode == -signal.SIGKILL, done.stderr


def forced_twice(out: Path, name: str) -> Path:
    """The small sweep with per-job records, computed and then recomputed (``--force``):
    several part files per table, and superseded rows for compaction to drop."""
    config = small_config(name)
    run_sweep(config, out, backend="serial", with_jobs=True, progress=False)
    run_sweep(config, out, backend="serial", with_jobs=True, force=True, progress=False)
    return out / name


def records(root: Path, table: str) -> pd.DataFrame:
    """What readers return of ``table``, in a stable order."""
    frame = read_table(root / "runs").to_pandas() if table == "runs" else read_jobs(root, table).to_pandas()
    keys = {"runs": ["cell_id"], "jobs": ["cell_id", "job_id"], "segments": ["cell_id", "job_id", "start_time"]}[table]
    frame = frame.assign(nodes=frame["nodes"].map(list)) if "nodes" in frame else frame
    return frame.sort_values(keys, kind="stable").reset_index(drop=True)


def assert_each_record_once(root: Path, expected: dict[str, pd.DataFrame]) -> None:
    for table in TABLES:
        pd.testing.assert_frame_equal(records(root, table), expected[table], obj=table)
    assert len(load(root, "jobs")) == len(expected["jobs"]) == 8 * 300


# -- a compaction killed between writing the merged file and deleting the parts ----------------
@pytest.mark.slow
@pytest.mark.parametrize("table, nth", [("runs", 1), ("jobs", 1), ("jobs", 3), ("segments", 2)])
def test_a_compaction_killed_before_it_deletes_the_parts_doubles_no_record(tmp_path, table, nth):
    # SIGKILL between writing the merged file and deleting the parts leaves every record in both;
    # readers must see each once, and the next compaction must not make the copies permanent.
    root = forced_twice(tmp_path, "killed")
    expected = {name: records(root, name) for name in TABLES}
    killed_compact(root, table, nth)
    # Readers see every record once, right after the kill ...
    assert_each_record_once(root, expected)
    # ... a sweep finds nothing to compute ...
    assert run_sweep(small_config("killed"), tmp_path, backend="serial", with_jobs=True, progress=False).computed == 0
    # ... and the next compaction finishes the job: one file per table, each record once in it.
    compact(root)
    assert_each_record_once(root, expected)
    for name in TABLES:
        assert len(list((root / name).glob("*.parquet"))) == 1, name
    raw_jobs = pd.read_parquet(root / "jobs")
    assert len(raw_jobs) == 8 * 300 and not raw_jobs.duplicated(["cell_id", "job_id"]).any()
    assert compact(root) == (3, 3)


@pytest.mark.slow  # five compactions in their own processes
def test_compactions_killed_again_and_again_while_tidying_double_no_record(tmp_path):
    # A compaction first deletes what a killed one retired; killed there too, and over a
    # merged file an earlier compaction wrote, readers still see each record once.
    root = forced_twice(tmp_path, "again")
    compact(root)  # one merged file per table ...
    run_sweep(small_config("again"), tmp_path, backend="serial", with_jobs=True, force=True, progress=False)
    expected = {name: records(root, name) for name in TABLES}  # ... and the parts of a newer run
    for table, nth in [("jobs", 1), ("jobs", 1), ("jobs", 2), ("segments", 1), ("segments", 1)]:
        killed_compact(root, table, nth)
        assert_each_record_once(root, expected)
    compact(root)
    assert_each_record_once(root, expected)
    assert sorted(len(list((root / name).glob("*.parquet"))) for name in TABLES) == [1, 1, 1]


def test_a_reader_that_lists_the_files_before_a_compaction_deletes_them_lists_again(tmp_path):
    root = forced_twice(tmp_path, "race")
    listed = []

    def read(files: list[str]) -> pa.Table:
        if not listed:
            compact(root)  # between this reader's listing and its reading
        listed.append(files)
        return pa.concat_tables([pq.read_table(f) for f in files], promote_options="permissive")

    table = store.read_parts(root / "jobs", read)
    assert len(listed) == 2 and len(listed[0]) > 1 and len(listed[1]) == 1
    assert table.num_rows == 8 * 300


@pytest.mark.slow
def test_a_merged_file_damaged_after_a_killed_compaction_is_named_and_moving_it_out_recovers(tmp_path, capsys):
    # The merged file is what makes the parts it lists obsolete: moved out (as the message
    # says), the parts still on disk hold the rows again.
    root = forced_twice(tmp_path, "damaged")
    expected = {name: records(root, name) for name in TABLES}
    killed_compact(root, "jobs", 1)
    (merged,) = [Path(p) for p in store.live_parts(root / "jobs")]
    merged.write_bytes(merged.read_bytes()[:100])
    capsys.readouterr()
    assert main(["compact", str(root)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"tiersweep: error: {merged}: not a readable Parquet file")
    assert "move it out of the folder" in err
    merged.rename(tmp_path / merged.name)
    assert_each_record_once(root, expected)


# -- the newest row, whatever the clock says ----------------------------------------------------
def shift_clock(root: Path, by: dt.timedelta, *, fail: bool = False) -> None:
    """Rewrite every stored row as if written with the clock ``by`` ahead (and, ``fail``, as
    failed runs): what a host whose clock later moved back leaves."""
    for table in TABLES:
        for path in sorted((root / table).glob("part-*.parquet")):
            stored = pq.read_table(path)
            index = stored.schema.get_field_index("written_at")
            stored = stored.set_column(index, "written_at", pc.add(stored.column("written_at"), pa.scalar(by)))
            if fail and table == "runs":
                index = stored.schema.get_field_index("status")
                stored = stored.set_column(index, "status", pa.array(["failed"] * stored.num_rows))
            pq.write_table(stored, path)


def test_cells_recomputed_after_the_clock_moved_back_are_the_ones_readers_see(tmp_path, capsys):
    # A cell's newest row is not chosen by wall clock: after the clock moves back, the
    # recomputed rows would be ignored and the cells would stay failed.
    config = small_config("clock")
    run_sweep(config, tmp_path, backend="serial", with_jobs=True, progress=False)
    root = tmp_path / "clock"
    shift_clock(root, dt.timedelta(days=1), fail=True)
    assert (read_table(root / "runs").column("status").to_pylist()) == ["failed"] * 8
    again = run_sweep(config, tmp_path, backend="serial", with_jobs=True, retry_failed=True, progress=False)
    assert (again.computed, again.failed) == (8, 0)
    runs = read_table(root / "runs").to_pandas()
    assert (runs["status"] == "ok").all() and len(runs) == 8
    assert (load(root)["status"] == "ok").all()
    jobs = read_jobs(root).to_pandas()
    assert len(jobs) == 8 * 300 and not jobs.duplicated(["cell_id", "job_id"]).any()
    assert (jobs["written_at"] < dt.datetime.now(dt.UTC)).all()  # the recomputed records
    assert len(load(root, "jobs")) == 8 * 300
    last = run_sweep(config, tmp_path, backend="serial", with_jobs=True, retry_failed=True, progress=False)
    assert last.computed == 0
    compact(root)
    runs = read_table(root / "runs", latest_only=False).to_pandas()
    assert (runs["status"] == "ok").all() and len(runs) == 8
    assert len(read_jobs(root)) == 8 * 300


def old_format(root: Path) -> None:
    """Rewrite ``root`` as an older tiersweep wrote it: no ``write_seq`` column, part files
    named by their time of writing."""
    for table in TABLES:
        paths = sorted((root / table).glob("part-*.parquet"), key=lambda p: pq.read_table(p)["written_at"][0].value)
        for number, path in enumerate(paths):
            stored = pq.read_table(path)
            if "write_seq" in stored.column_names:
                stored = stored.drop_columns(["write_seq"])
            pq.write_table(stored, root / table / f"part-20240101T0000{number:08d}-0000000{number % 10}.parquet")
            path.unlink()


@pytest.mark.slow
def test_a_store_written_before_the_write_counter_still_reads_newest_by_time_then_counts_newer(tmp_path):
    # Rows without the counter are older than any row with it; among themselves the newest
    # by written_at wins, as it did when they were written.
    root = forced_twice(tmp_path, "old")
    first = read_table(root / "runs", latest_only=False).to_pandas()
    old_format(root)
    assert "write_seq" not in pq.read_schema(sorted((root / "runs").glob("*.parquet"))[0]).names
    runs = read_table(root / "runs").to_pandas()
    newest = first.sort_values("written_at").drop_duplicates("cell_id", keep="last").set_index("cell_id")["written_at"]
    assert runs.set_index("cell_id")["written_at"].to_dict() == newest.to_dict()
    assert len(read_jobs(root)) == 8 * 300 and len(load(root, "jobs")) == 8 * 300
    # Rows stored as if the clock had been a day ahead, then recomputed by this version.
    shift_clock(root, dt.timedelta(days=1))
    run_sweep(small_config("old"), tmp_path, backend="serial", with_jobs=True, force=True, progress=False)
    runs = read_table(root / "runs").to_pandas()
    assert runs["write_seq"].notna().all() and len(runs) == 8
    assert len(read_jobs(root)) == 8 * 300
    assert (read_jobs(root).to_pandas()["written_at"] < dt.datetime.now(dt.UTC)).all()
    compact(root)
    assert len(read_table(root / "runs", latest_only=False)) == 8 and len(read_jobs(root)) == 8 * 300


# -- every recovery hint, followed to the letter ------------------------------------------------
@pytest.mark.parametrize("table", TABLES)
def test_the_hint_for_a_damaged_part_file_recovers_what_it_held(tmp_path, capsys, table):
    # Each hint is followed to the letter (a re-run with --jobs, say) and must recover what the
    # damaged part held, the segments included.
    path = write_yaml(tmp_path / "hint.yaml", small_raw("hint"))
    argv = ["sweep", "--backend", "serial", "--jobs", "--out", str(tmp_path / "out"), str(path)]
    assert main(argv) == 0
    root = tmp_path / "out" / "hint"
    expected = {name: records(root, name) for name in TABLES}
    part = sorted((root / table).glob("part-*.parquet"))[0]
    part.write_bytes(part.read_bytes()[:100])
    capsys.readouterr()
    assert main(["compact", str(root)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"tiersweep: error: {part}: not a readable Parquet file")
    hint = err.split("; ", 1)[1]
    assert hint.startswith("move it out of the folder")
    part.rename(tmp_path / part.name)  # "move it out of the folder"
    # The command the hint names: `tiersweep sweep` for runs, `tiersweep sweep --jobs` otherwise.
    assert ("`tiersweep sweep --jobs`" in hint) == (table != "runs")
    assert main(argv) == 0
    volatile = ["written_at", "write_seq", "wall_seconds", "host"]
    for name in TABLES:
        got = records(root, name).drop(columns=volatile, errors="ignore")
        pd.testing.assert_frame_equal(got, expected[name].drop(columns=volatile, errors="ignore"), obj=name)
    assert main(argv) == 0 and "0 computed now" in capsys.readouterr().out
    assert main(["compact", str(root)]) == 0


@pytest.mark.slow  # a tuning study, run twice
def test_the_hint_for_a_damaged_trials_file_recovers_it(tmp_path, capsys):
    config = write_yaml(tmp_path / "tune.yaml", TUNE_RAW)
    argv = ["tune", str(config), "--out", str(tmp_path / "out"), "--backend", "serial"]
    assert main(argv) == 0
    root = tmp_path / "out" / "trials"
    before = load(root, "trials")
    path = root / "trials" / "trials.parquet"
    path.write_bytes(path.read_bytes()[:100])
    with pytest.raises(Exception, match="not a readable Parquet file") as caught:
        load(root, "trials")
    hint = str(caught.value).split("; ", 1)[1]
    assert hint.startswith("move it out of the folder") and "`tiersweep tune`" in hint
    path.rename(tmp_path / path.name)
    assert main(argv) == 0
    pd.testing.assert_frame_equal(load(root, "trials"), before)


def test_the_hint_for_a_column_that_would_change_type_works(tmp_path, capsys):
    # "run this grid into another folder (--out) or under another sweep name"
    raw = small_raw("typed", grid={"policy.name": ["smcbf"], "policy.xfactor_threshold": [10]}, seeds=1)
    out = tmp_path / "out"
    assert main(["sweep", "--backend", "serial", "--out", str(out), str(write_yaml(tmp_path / "typed.yaml", raw))]) == 0
    raw["grid"]["policy.xfactor_threshold"] = [10, "adaptive"]
    wider = write_yaml(tmp_path / "typed.yaml", raw)
    capsys.readouterr()
    assert main(["sweep", "--backend", "serial", "--out", str(out), str(wider)]) == 2
    err = capsys.readouterr().err
    assert "run this grid into another folder (--out) or under another sweep name" in err
    assert main(["sweep", "--backend", "serial", "--out", str(tmp_path / "other"), str(wider)]) == 0
    renamed = write_yaml(tmp_path / "renamed.yaml", {**raw, "name": "typed2"})
    assert main(["sweep", "--backend", "serial", "--out", str(out), str(renamed)]) == 0
    for root in (tmp_path / "other" / "typed", out / "typed2"):
        runs = read_table(root / "runs").to_pandas()
        assert len(runs) == 2 and (runs["status"] == "ok").all()


def test_the_hint_for_a_read_only_folder_works(tmp_path, small_disk, capsys):
    # "cannot store results here (read-only or not ours): N cell(s) to compute; give another --out"
    disk, _ = small_disk  # a file system of its own, remounted read-only (root writes past chmod)
    subprocess.run(["mount", "-o", "remount,size=16m", str(disk)], check=True)
    path = write_yaml(tmp_path / "ro.yaml", small_raw("ro", seeds=1))
    argv = ["sweep", "--backend", "serial", "--out", str(disk), str(path)]
    (disk / "ro").mkdir()
    subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
    try:
        capsys.readouterr()
        assert main(argv) == 2
        assert capsys.readouterr().err.strip().endswith("give another --out")
        assert main(argv[:-3] + ["--out", str(tmp_path / "elsewhere"), str(path)]) == 0
        assert len(read_table(tmp_path / "elsewhere" / "ro" / "runs")) == 4
    finally:
        subprocess.run(["mount", "-o", "remount,rw", str(disk)], check=True)


def test_a_committed_store_of_schema_v2_left_by_a_killed_compaction_reads_each_record_once(tmp_path):
    # Written by this version (write_seq, part-SEQ-RANDOM names): a 2-cell sweep with --jobs,
    # then --force (one cell per batch: counters 1 to 4), then `tiersweep compact` killed
    # after merging runs and jobs, before deleting the jobs parts it replaced.
    import shutil

    fixture = Path(__file__).parent / "fixtures" / "schema_v2"
    assert len(list((fixture / "jobs").glob("*.parquet"))) == 5 and len(store.live_parts(fixture / "jobs")) == 1
    runs = read_table(fixture / "runs").to_pandas()
    assert len(runs) == 2 and (runs["status"] == "ok").all() and sorted(runs["write_seq"]) == [3, 4]
    for table in ("jobs", "segments"):
        rows = read_jobs(fixture, table).to_pandas()
        assert set(rows["write_seq"]) == {3, 4} and len(load(fixture, table)) == len(rows)
    jobs = read_jobs(fixture).to_pandas()
    assert len(jobs) == 2 * 40 and not jobs.duplicated(["cell_id", "job_id"]).any()
    root = tmp_path / "schema_v2"
    shutil.copytree(fixture, root)
    expected = {name: records(root, name) for name in TABLES}
    compact(root)
    for name in TABLES:
        pd.testing.assert_frame_equal(records(root, name), expected[name], obj=name)
        assert len(list((root / name).glob("*.parquet"))) == 1, name
