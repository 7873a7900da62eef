"""``tiersweep sweep --address`` on a real two-node Ray cluster on this machine, losing a node.

A head node and a worker node (one CPU each) are started with ``ray start --block``, each in a
session of its own with its own ``--temp-dir`` and its own ports, so that they collide with no
other Ray on the machine and so that one node can be killed alone: every process of a node
(``ray start``, raylet, agents, task workers) keeps the session of its ``ray start``, and the
test SIGKILLs all of them, mid-sweep, while the node runs a batch. ``RayBackend`` submits
batches with ``max_retries=3``, so the sweep must still finish with every cell stored exactly
once, none failed, and exit 0.

Authentication: Ray 2.60 turns token authentication on by default for new clusters (and reads
``~/.ray/auth_token``); these throw-away clusters listen on this machine only, so the test runs
both ``ray start`` and the sweep with ``RAY_AUTH_MODE=disabled`` and touches no token.

Clean-up: ``ray stop --force`` is deliberately not used: it SIGKILLs every Ray process of the
machine, including other users' and other test runs' clusters. Instead every process in the
sessions this test started (the two nodes and the sweep) is killed by pid, in ``finally``
blocks, whatever happened.

Every test is ``slow`` (about a minute on 2 CPUs).
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tiersweep.sweep.batch import run_batch, task_for
from tiersweep.sweep.cells import flatten
from tiersweep.sweep.config import expand, load_sweep_config
from tiersweep.sweep.store import read_table

PROJECT = Path(__file__).resolve().parents[1]
RAY = str(Path(sys.executable).with_name("ray"))
#: Seconds a node may take to start, and the sweep to finish, before the test gives up.
NODE_START_SECONDS = 90
SWEEP_SECONDS = 300
#: The sweep: 3 policies x 3 loads x 10 seeds of 8,000 jobs, about 0.15-0.8 s per cell (some
#: 30 s of CPU; 15-40 s on two one-CPU nodes).
SWEEP = {
    "name": "cluster",
    "base": {"workload": {"model": "jann97", "jobs": 8000}, "platform": {"nodes": 64, "tiers": 2}},
    "grid": {"policy.name": ["easy", "amcbf", "fcfs"], "workload.load": [0.5, 0.7, 0.9]},
    "seeds": 10,
}
#: Cells stored before the worker node is killed.
KILL_AFTER_CELLS = 10
#: Columns that legitimately differ between two computations of the same cell.
VOLATILE = ["wall_seconds", "written_at", "host"]


# -- processes and ports ------------------------------------------------------------------------
def ray_env() -> dict[str, str]:
    """The environment of every Ray process of the test (see the module docstring)."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("RAY_")}
    env.update(RAY_AUTH_MODE="disabled", RAY_USAGE_STATS_ENABLED="0")
    return env


def session_pids(sid: int) -> list[int]:
    """Processes of session ``sid`` (read from /proc)."""
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.getsid(int(entry)) == sid:
                    pids.append(int(entry))
            except (ProcessLookupError, PermissionError):
                pass
    return pids


def command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def kill_session(proc: subprocess.Popen) -> None:
    """SIGKILL every process of the session that ``proc`` leads (started with
    ``start_new_session=True``), then reap ``proc``."""
    for _ in range(3):  # a dying parent may still fork; go round until the session is empty
        pids = [pid for pid in session_pids(proc.pid) if not _is_zombie(pid)]
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.2)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        pass


def _is_zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


def _is_free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("", port))
        except OSError:
            return False
    return True


class Ports:
    """Free TCP ports below the ephemeral range, never the same one twice."""

    def __init__(self) -> None:
        self._next = random.Random().randrange(20000, 30000)

    def block(self, count: int) -> int:
        """The first of ``count`` consecutive free ports."""
        while True:
            first = self._next
            self._next += count
            if self._next > 32000:
                self._next = 20000
            if all(_is_free(p) for p in range(first, first + count)):
                return first

    def one(self) -> int:
        return self.block(1)


def node_arguments(ports: Ports, temp_dir: Path) -> list[str]:
    """Ports and folders of one node, distinct from every other node's."""
    workers = ports.block(40)
    return [
        "--num-cpus=1",
        f"--temp-dir={temp_dir}",
        f"--node-manager-port={ports.one()}",
        f"--object-manager-port={ports.one()}",
        f"--min-worker-port={workers}",
        f"--max-worker-port={workers + 39}",
        f"--runtime-env-agent-port={ports.one()}",
        f"--dashboard-agent-listen-port={ports.one()}",
        f"--dashboard-agent-grpc-port={ports.one()}",
        f"--metrics-export-port={ports.one()}",
        "--object-store-memory=200000000",
        "--disable-usage-stats",
        "--block",
    ]


def tail(path: Path, chars: int = 3000) -> str:
    try:
        return path.read_text(errors="replace")[-chars:]
    except OSError:
        return f"({path} unreadable)"


@contextmanager
def ray_node(arguments: list[str], log: Path) -> Iterator[subprocess.Popen]:
    """``ray start ARGUMENTS`` blocking in its own session until the context exits."""
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [RAY, "start", *arguments], env=ray_env(), stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        deadline = time.monotonic() + NODE_START_SECONDS
        while "Ray runtime started" not in tail(log, 100_000):
            if proc.poll() is not None:
                pytest.fail(f"`ray start` exited with status {proc.returncode}:\n{tail(log)}")
            if time.monotonic() > deadline:
                pytest.fail(f"`ray start` did not start a node in {NODE_START_SECONDS} s:\n{tail(log)}")
            time.sleep(0.2)
        yield proc
    finally:
        kill_session(proc)


def cluster_cpus(address: str) -> float:
    """Total CPUs of the cluster at ``address`` as ``ray status`` reports them (0 if unknown)."""
    result = subprocess.run(
        [RAY, "status", f"--address={address}"], env=ray_env(), capture_output=True, text=True, timeout=60
    )
    for line in result.stdout.splitlines():
        line = line.strip()
        if line.endswith(" CPU") and "/" in line:
            return float(line.split("/")[1].split()[0])
    return 0.0


def wait_for(
    condition, what: str, timeout: float, proc: subprocess.Popen | None = None, log: Path | None = None
) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if proc is not None and proc.poll() is not None:
            pytest.fail(f"{what}: the process exited (status {proc.returncode}) first\n{tail(log) if log else ''}")
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not within {timeout:.0f} s\n{tail(log) if log else ''}")
        time.sleep(0.1)


def plain(frame: pd.DataFrame) -> pd.DataFrame:
    """Values as Python objects, missing ones as None (stored and fresh rows type them apart)."""
    return frame.astype(object).where(frame.notna(), None).reset_index(drop=True)


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    """A short folder under /tmp: Ray's Unix socket paths must stay below ~107 characters."""
    path = Path(tempfile.mkdtemp(prefix="tsray-", dir="/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


# -- the test -----------------------------------------------------------------------------------
@pytest.mark.slow
def test_sweep_survives_losing_a_worker_node_mid_sweep(tmp_path, short_tmp):
    ports = Ports()
    head_port = ports.one()
    address = f"127.0.0.1:{head_port}"
    config_path = tmp_path / "cluster.yaml"
    config_path.write_text(yaml.safe_dump(SWEEP, sort_keys=False))
    config = load_sweep_config(config_path)
    cells = expand(config)
    out = tmp_path / "out"
    runs = out / config.name / "runs"
    sweep_log = tmp_path / "sweep.log"

    with ExitStack() as stack:
        stack.enter_context(
            ray_node(
                [
                    "--head",
                    f"--port={head_port}",
                    "--include-dashboard=false",
                    f"--dashboard-port={ports.one()}",
                    *node_arguments(ports, short_tmp / "head"),
                ],
                tmp_path / "head.log",
            )
        )
        worker = stack.enter_context(
            ray_node([f"--address={address}", *node_arguments(ports, short_tmp / "worker")], tmp_path / "worker.log")
        )
        wait_for(lambda: cluster_cpus(address) >= 2, "a cluster of two one-CPU nodes", NODE_START_SECONDS)

        with open(sweep_log, "wb") as log:
            sweep = subprocess.Popen(
                [sys.executable, "-m", "tiersweep", "sweep", str(config_path), "--out", str(out), "--address", address],
                cwd=PROJECT,
                env=ray_env(),
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        stack.callback(kill_session, sweep)

        # Kill the worker node while it runs a batch, once the sweep is well under way (past its
        # first one-cell batches: batches now hold about 3 s of cells).
        def stored() -> int:
            return len(read_table(runs, latest_only=False)) if runs.is_dir() else 0

        def worker_runs_a_batch() -> bool:
            return any("run_batch" in command_line(pid) for pid in session_pids(worker.pid))

        wait_for(
            lambda: stored() >= KILL_AFTER_CELLS, f"{KILL_AFTER_CELLS} stored cells", SWEEP_SECONDS, sweep, sweep_log
        )
        wait_for(worker_runs_a_batch, "a batch running on the worker node", SWEEP_SECONDS, sweep, sweep_log)
        stored_at_kill = stored()
        killed_at = time.monotonic()
        kill_session(worker)
        assert not [pid for pid in session_pids(worker.pid) if not _is_zombie(pid)], "the worker node survived SIGKILL"
        assert stored_at_kill < len(cells), "the sweep had finished before the node was killed"

        try:
            status = sweep.wait(timeout=SWEEP_SECONDS)
        except subprocess.TimeoutExpired:
            pytest.fail(
                f"the sweep did not finish within {SWEEP_SECONDS} s of losing the worker node "
                f"({stored()} of {len(cells)} cells stored):\n{tail(sweep_log)}"
            )
        after_kill = time.monotonic() - killed_at
        print(
            f"worker node killed with {stored_at_kill} of {len(cells)} cells stored; "
            f"the sweep exited {after_kill:.1f} s later"
        )
        output = tail(sweep_log, 10_000)
        assert status == 0, f"exit status {status} after losing a node ({after_kill:.0f} s later):\n{output}"

        rows = read_table(runs, latest_only=False).to_pandas()
        duplicated = sorted(rows.loc[rows["cell_id"].duplicated(), "cell_index"])
        assert not duplicated, f"cells stored twice: {duplicated}"
        assert sorted(rows["cell_id"]) == sorted(c.cell_id for c in cells)
        failed = rows[rows["status"] != "ok"]
        assert failed.empty, f"cells failed: {failed[['cell_index', 'error']].to_dict('records')}"
        assert f"{len(cells)} cells; {len(cells)} computed now" in output and "0 failed" in output

        # The cluster's results are those this process computes (three cells, all policies):
        # identity, status, metrics and report counts (spec columns are stored as text).
        sample = [next(c for c in cells if c.point["policy.name"] == name) for name in ("easy", "amcbf", "fcfs")]
        mine = pd.DataFrame([o.row for o in run_batch([task_for(c, config.name) for c in sample])])
        theirs = rows.set_index("cell_id").loc[[c.cell_id for c in sample]].reset_index()
        spec_columns = set(flatten(sample[0].spec))
        columns = [c for c in mine.columns if c not in spec_columns and c not in VOLATILE]
        assert "mean_bsld" in columns and "utilization" in columns
        pd.testing.assert_frame_equal(plain(theirs[columns]), plain(mine[columns]), check_dtype=False)

        # A re-run has nothing left to do (and so starts no Ray client at all).
        rerun = subprocess.run(
            [sys.executable, "-m", "tiersweep", "sweep", str(config_path), "--out", str(out), "--address", address],
            cwd=PROJECT,
            env=ray_env(),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert rerun.returncode == 0, rerun.stdout + rerun.stderr
        assert "0 computed now" in rerun.stdout and f"{len(cells)} already stored" in rerun.stdout
