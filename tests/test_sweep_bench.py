"""``tiersweep bench --sweep``: each backend timed against the serial backend in the same run,
on the 60-cell sweep and on tiny cells, whose wall time per cell is the per-cell overhead."""

from __future__ import annotations

import re

import pytest

from tiersweep.cli import main
from tiersweep.core.workloads.swf import read_swf
from tiersweep.sweep import bench
from tiersweep.sweep.config import expand, parse_sweep_config


def test_the_tiny_cells_read_the_first_jobs_of_a_trace_as_long_as_kth(tmp_path):
    raw = bench.tiny_bench_config(tmp_path)
    cells = expand(parse_sweep_config(raw))
    assert len(cells) == bench.TINY_CELLS == 200
    assert {c.spec["workload"]["jobs"] for c in cells} == {bench.TINY_JOBS}
    assert len(read_swf(raw["base"]["workload"]["trace"]).records) == bench.TINY_TRACE_JOBS


def test_every_backend_is_timed_against_serial_which_runs_first(monkeypatch, capsys):
    small = {**bench.SWEEP_BENCH_CONFIG, "base": {"workload": {"model": "jann97", "jobs": 50}}, "seeds": 1}
    monkeypatch.setattr(bench, "SWEEP_BENCH_CONFIG", {**small, "grid": {"policy.name": ["easy"]}})
    monkeypatch.setattr(bench, "TINY_CELLS", 4)
    monkeypatch.setattr(bench, "TINY_TRACE_JOBS", 500)
    assert main(["bench", "--sweep", "process"]) == 0
    out = capsys.readouterr().out
    tiny = out[out.index("tiny cells: 4 cells of the first 50 jobs of a 500-job trace") :]
    rows = re.findall(r"^(serial|process) +4 +[0-9.]+ +[0-9.]+ +([0-9.]+) +([-+][0-9.]+)$", tiny, re.M)
    assert [name for name, *_ in rows] == ["serial", "process"]
    assert float(rows[0][2]) == 0.0  # serial against itself
    assert float(rows[1][2]) == pytest.approx(float(rows[1][1]) - float(rows[0][1]), abs=0.11)
