"""A trace path that is not a regular file (a FIFO, a device) is refused in one line before it is
opened for reading: reading a FIFO blocks until a writer comes, reading /dev/zero never ends.

Each read runs in a child process with a memory limit and a time limit, so that a regression
shows as a failed test rather than a hung run or an exhausted machine.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys

import pytest

from tiersweep.core.errors import SpecError
from tiersweep.sweep.config import expand, parse_sweep_config

#: The child's address-space limit: far more than the tiny reads need, far less than the machine.
_MEMORY = 1 << 30


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (_MEMORY, _MEMORY))


def _run_cli(*args: str, timeout: float = 20) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tiersweep", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=_limited,
    )


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "log.swf"
    os.mkfifo(path)
    return path


def _spec(tmp_path, trace) -> str:
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"workload": {"trace": str(trace)}, "platform": {"nodes": 16}}))
    return str(spec)


@pytest.mark.parametrize(("which", "kind"), [("fifo", "a FIFO (named pipe)"), ("/dev/zero", "a character device")])
def test_a_special_file_as_trace_is_refused_in_one_line(tmp_path, fifo, which, kind):
    trace = fifo if which == "fifo" else which
    done = _run_cli("run", _spec(tmp_path, trace))
    assert done.returncode == 2, done.stderr[-500:]
    expected = f"{trace}: is {kind}, not a regular file; give the path of an SWF file (plain or gzip)"
    assert done.stderr == f"tiersweep: error: {expected}\n"


def test_a_sweep_over_a_fifo_is_refused_at_expansion(tmp_path, fifo):
    config = parse_sweep_config({"name": "x", "base": {"workload": {"trace": str(fifo)}, "platform": {"nodes": 16}}})
    with pytest.raises(SpecError, match=r"workload\.trace: .*log\.swf is a FIFO \(named pipe\), not a regular file"):
        expand(config)
