"""The ``tiersweep`` command line: run (table, JSON, overrides, job files, errors), bench, and
the promise that ``core`` and ``tiersweep run`` import no heavy library."""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tiersweep.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("pandas", "pyarrow", "ray", "optuna")


def write_spec(tmp_path: Path, trace: Path, extra: str = "") -> Path:
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"seed: 3\nworkload: {{trace: '{trace}', jobs: 500}}\npolicy: {{name: easy}}\n{extra}")
    return spec


def test_run_json_has_the_promised_keys(tmp_path, kth_path, capsys):
    assert main(["run", str(write_spec(tmp_path, kth_path)), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    for key in ("jobs", "dropped", "mean_wait", "mean_bsld", "utilization", "makespan", "migrations_per_job"):
        assert key in out, key
    assert out["jobs"] == 500
    assert 0 < out["utilization"] <= 1
    assert out["spec"]["platform"]["nodes"] == 100  # from the KTH header's MaxProcs


def test_run_table_is_readable(tmp_path, kth_path, capsys):
    assert main(["run", str(write_spec(tmp_path, kth_path))]) == 0
    out = capsys.readouterr().out
    assert "mean bounded slowdown" in out and "utilisation" in out and "easy" in out


def test_set_overrides_change_the_run(tmp_path, kth_path, capsys):
    spec = str(write_spec(tmp_path, kth_path))
    main(["run", spec, "--json"])
    easy = json.loads(capsys.readouterr().out)
    main(["run", spec, "--json", "--set", "policy.name=fcfs", "--set", "workload.jobs=300"])
    fcfs = json.loads(capsys.readouterr().out)
    assert fcfs["spec"]["policy"]["name"] == "fcfs" and fcfs["jobs"] == 300
    assert easy["spec"]["policy"]["name"] == "easy"


def test_jobs_out_csv_and_parquet_agree(tmp_path, kth_path, capsys):
    spec = str(write_spec(tmp_path, kth_path))
    main(["run", spec, "--json", "--jobs-out", str(tmp_path / "jobs.csv")])
    main(["run", spec, "--json", "--jobs-out", str(tmp_path / "jobs.parquet")])
    capsys.readouterr()
    with open(tmp_path / "jobs.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 500
    for column in (
        "job_id",
        "submit_time",
        "start_time",
        "finish_time",
        "size",
        "runtime",
        "wait",
        "bsld",
        "migrations",
    ):
        assert column in rows[0]
    first = rows[0]
    # Times are in the trace's own time base: KTH's first valid job is submitted at 599850.
    assert float(first["submit_time"]) == 599850
    assert float(first["wait"]) == float(first["start_time"]) - float(first["submit_time"])
    import pyarrow.parquet as pq

    table = pq.read_table(tmp_path / "jobs.parquet")
    assert table.num_rows == 500
    assert table.column("job_id").to_pylist() == [int(r["job_id"]) for r in rows]
    assert table.column("finish_time").to_pylist() == [float(r["finish_time"]) for r in rows]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--set", "policy.name=eazy"], "policy.name: unknown value 'eazy'; valid choices: fcfs, easy"),
        (["--set", "workload.jbos=3"], "workload.jbos: unknown key"),
        (
            ["--set", "workload.jobs=-3"],
            "workload.jobs: expected an integer from 1 to 100,000,000 "
            "(a hundred million jobs need about 100 GB of memory), got -3",
        ),
        (["--set", "nonsense"], "expected KEY=VALUE"),
        (["--jobs-out", "jobs.txt"], "expected a .csv or .parquet"),
    ],
)
def test_bad_input_is_a_clear_error(tmp_path, kth_path, capsys, args, message):
    assert main(["run", str(write_spec(tmp_path, kth_path)), *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tiersweep: error: ") and message in err


def test_bad_yaml_names_file_and_line(tmp_path, capsys):
    spec = tmp_path / "broken.yaml"
    spec.write_text("seed: 1\nworkload: {trace: x\npolicy: [\n")
    assert main(["run", str(spec)]) == 2
    err = capsys.readouterr().err
    assert f"{spec}:" in err and "not valid YAML" in err


def test_missing_spec_file_is_a_clear_error(tmp_path, capsys):
    assert main(["run", str(tmp_path / "nope.yaml")]) == 2
    assert "nope.yaml: cannot read the spec" in capsys.readouterr().err


def test_core_and_run_import_no_heavy_library(tmp_path, kth_path):
    spec = write_spec(tmp_path, kth_path)
    code = (
        "import sys\n"
        "import tiersweep.core\n"
        f"heavy = {HEAVY!r}\n"
        "after_core = sorted({m.split('.')[0] for m in sys.modules} & set(heavy + ('yaml',)))\n"
        "from tiersweep.cli import main\n"
        f"main(['run', {str(spec)!r}, '--json'])\n"
        "after_run = sorted({m.split('.')[0] for m in sys.modules} & set(heavy))\n"
        "print('RESULT', after_core, after_run)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "RESULT [] []"


def test_console_script_help_lists_subcommands():
    out = subprocess.run([sys.executable, "-m", "tiersweep", "--help"], cwd=ROOT, capture_output=True, text=True).stdout
    assert "run" in out and "bench" in out
    out = subprocess.run(
        [sys.executable, "-m", "tiersweep", "run", "--help"], cwd=ROOT, capture_output=True, text=True
    ).stdout
    assert "xfactor_threshold" in out and "--jobs-out" in out


def test_no_help_shows_an_escaped_percent_sign():
    # (argparse expands % only in the option help and in a description that names %(prog)s:
    # a "%%" elsewhere was printed as it stands, "95%% intervals")
    waiting = [("tiersweep", build_parser())]
    while waiting:
        name, parser = waiting.pop()
        assert "%%" not in parser.format_help(), name
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                waiting.extend((f"{name} {sub}", command) for sub, command in action.choices.items())


def test_bench_quick_prints_jobs_per_second(kth_path, capsys):
    folder = kth_path.parent
    assert main(["bench", "--traces", str(folder), "--repeat", "1", "--quick"]) == 0
    out = capsys.readouterr().out
    assert "jobs/s" in out and "KTH-SP2" in out and "whole process" in out


def _terminal() -> tuple[int, object]:
    """A pseudo-terminal 120 columns wide: its master side (to read) and its slave side as a
    text stream (to write to, as a terminal's stderr)."""
    import fcntl
    import struct
    import termios

    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    return master, open(slave, "w", encoding="utf-8", buffering=1)


def _read_all(fd: int) -> str:
    import select

    chunks = []
    while select.select([fd], [], [], 0.2)[0]:
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", "replace")


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")
def test_run_shows_a_progress_bar_of_its_jobs_on_a_terminal_only(tmp_path, kth_path, capsys, monkeypatch):
    from tiersweep.sweep import run_command

    spec = tmp_path / "spec.yaml"
    spec.write_text(f"seed: 3\nworkload: {{trace: '{kth_path}'}}\npolicy: {{name: easy}}\n")
    # Not a terminal (a file, a pipe, a test's capture): no bar, not a byte of it.
    assert main(["run", str(spec), "--json"]) == 0
    captured = capsys.readouterr()
    jobs = json.loads(captured.out)["jobs"]
    assert "jobs finished" not in captured.err and "jobs finished" not in captured.out

    master, terminal = _terminal()
    monkeypatch.setattr(run_command, "BAR_DELAY", 0.0)  # (the whole log takes about a second)
    monkeypatch.setattr(sys, "stderr", terminal)
    try:
        assert main(["run", str(spec), "--json"]) == 0
        terminal.flush()
        shown = _read_all(master)
    finally:
        terminal.close()
        os.close(master)
    assert "jobs finished" in shown
    assert f"{jobs}/{jobs}" in shown  # the bar's last state: every job of the log finished
    assert "simulated" in shown and "days" in shown
    assert "jobs finished" not in capsys.readouterr().out  # the summary's stream has none of it
