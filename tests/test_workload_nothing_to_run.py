"""Runs that would simulate nothing, or loop forever, are errors naming why.

* A workload the rules leave without a job (every job invalid, every job larger than the
  machine, a header value misread so that no job fits) is refused with the counts of what was
  dropped and why, rather than run and stored as ``ok``.
* An offered load cannot be set on a workload whose submit times span zero (one job, every job
  submitted at once): scaling its gaps would give not-a-number submit times and an engine
  spinning forever; those runs go to a child process with a time limit, so a regression fails the test
  instead of hanging it.
* The engine refuses a job whose times are not finite.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from helpers import make_jobs
from sweep_helpers import runs_frame
from tiersweep.core.engine import Engine
from tiersweep.core.errors import SpecError
from tiersweep.core.platforms import Nodes
from tiersweep.core.policies import make_policy
from tiersweep.core.simulate import simulate
from tiersweep.sweep.config import parse_sweep_config
from tiersweep.sweep.driver import run_sweep


def _trace(tmp_path, rows, header="; MaxProcs: 64", name="log.swf"):
    """An SWF file ``name`` of ``(submit, runtime, size)`` rows."""
    lines = [header] if header else []
    for number, (submit, runtime, size) in enumerate(rows, start=1):
        lines.append(f"{number} {submit} -1 {runtime} {size} -1 -1 {size} {runtime + 100} -1 1 1 1 -1 1 -1 -1 -1")
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize(
    ("rows", "header", "nodes", "reason"),
    [
        (
            [(0, 100, -1), (10, -5, 4), (20, 100, 0)],
            "; MaxProcs: 64",
            None,
            "of 3 job line(s), 3 invalid (size <= 0, runtime < 0 or submit time < 0; see workload.size_field)",
        ),
        (
            [(0, 100, 8), (10, 50, 16), (20, 100, 32)],
            None,
            4,
            "of 3 job line(s), 3 larger than the platform's 4 processors (from the platform spec)",
        ),
        (
            # "1k" is read as 1 (the leading integer): no job of 2 or more processors fits.
            [(0, 100, 8), (10, 50, 16), (20, 100, 2)],
            "; MaxProcs: 1k",
            None,
            "of 3 job line(s), 3 larger than the platform's 1 processors (from the trace's MaxProcs header, '1k')",
        ),
        (
            [(0, 100, -1), (10, 50, 600)],
            "; MaxProcs: 512",
            None,
            "of 2 job line(s), 1 invalid (size <= 0, runtime < 0 or submit time < 0; see workload.size_field), "
            "1 larger than the platform's 512 processors (from the trace's MaxProcs header, '512')",
        ),
    ],
    ids=["all invalid", "all too large", "header misread", "both"],
)
def test_a_workload_left_without_jobs_is_an_error_naming_why(tmp_path, rows, header, nodes, reason):
    trace = _trace(tmp_path, rows, header)
    spec = {"workload": {"trace": str(trace)}, "platform": {"nodes": nodes} if nodes else {}}
    with pytest.raises(SpecError) as raised:
        simulate(spec)
    assert str(raised.value) == f"workload.trace: {trace}: no job left to simulate: {reason}"


def test_a_sweep_cell_without_jobs_is_stored_failed_with_the_reason(tmp_path):
    trace = _trace(tmp_path, [(0, 100, 8), (10, 50, 16)])
    raw = {"name": "empty", "base": {"workload": {"trace": str(trace)}}, "grid": {"platform.nodes": [4, 64]}}
    outcome = run_sweep(parse_sweep_config(raw), tmp_path / "out", backend="serial", progress=False)
    frame = runs_frame(outcome.store).set_index("platform.nodes")
    assert frame.loc[64, "status"] == "ok" and frame.loc[64, "report.records"] == 2
    assert frame.loc[4, "status"] == "failed"
    reason = "no job left to simulate: of 2 job line(s), 2 larger than the platform's 4 processors"
    assert reason in frame.loc[4, "error"]


_CHILD = """
import json, sys
from tiersweep.core.simulate import simulate
out = []
for spec in json.loads(sys.argv[1]):
    try:
        simulate(spec)
        out.append("ran")
    except Exception as error:
        out.append(f"{type(error).__name__}: {error}")
print(json.dumps(out))
"""


def test_an_offered_load_on_a_workload_of_zero_span_is_refused(tmp_path):
    one = _trace(tmp_path, [(0, 100, 4)])
    at_once = _trace(tmp_path, [(50, 100, 4), (50, 200, 8), (50, 300, 2)], name="at_once.swf")
    many = _trace(tmp_path, [(0, 100, 4), (30, 200, 8), (90, 300, 2)], name="many.swf")
    specs = [
        {"workload": {"trace": str(one), "load": 0.8}},
        {"workload": {"trace": str(at_once), "load": 0.8}},
        {"workload": {"trace": str(many), "load": 0.8, "jobs": 1}},
        {"workload": {"model": "jann97", "jobs": 1, "load": 0.8, "load_method": "rescale"}},
        {"workload": {"trace": str(many), "load": 0.8}},  # a span: scaled as before
    ]
    done = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(specs)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    errors = json.loads(done.stdout)
    prefix = (
        "SpecError: workload.load: cannot reach an offered load of 0.8: "
        "an offered load cannot be set on this workload: "
    )
    assert errors == [
        prefix + "it has 1 job, and an offered load needs a span of submit times; drop workload.load",
        prefix + "all its 3 jobs are submitted at once (time 50): the span of submit times is zero; drop workload.load",
        prefix + "it has 1 job, and an offered load needs a span of submit times; drop workload.load",
        prefix + "it has 1 job, and an offered load needs a span of submit times; drop workload.load",
        "ran",
    ]


@pytest.mark.parametrize("field", ["submit_time", "runtime", "estimate"])
@pytest.mark.parametrize("value", [math.nan, math.inf])
def test_the_engine_refuses_a_time_that_is_not_finite(field, value):
    jobs = make_jobs([(0, 100, 2, 200), (10, 100, 2, 200)], 4)
    setattr(jobs[1], field, value)
    with pytest.raises(ValueError, match=rf"job 2: times must be finite numbers, got .*{field}={value!r}"):
        Engine(jobs, Nodes(4), make_policy("easy"))


@pytest.mark.parametrize("cost", [math.nan, math.inf, -1.0])
def test_the_engine_refuses_a_migration_cost_that_is_not_finite(cost):
    jobs = make_jobs([(0, 100, 2, 200)], 4)
    with pytest.raises(ValueError, match="migration_cost must be a non-negative finite number"):
        Engine(jobs, Nodes(4), make_policy("easy"), migration_cost=cost)
