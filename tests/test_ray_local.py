"""A local Ray started by a sweep: what it exposes and what it leaves behind.

The local Ray listens on the loopback interface only (GCS, raylet, workers, agents): with
``RAY_AUTH_MODE=disabled`` its API is unauthenticated, so it must not be open to the network.
Stopping the driver during Ray's start-up (several seconds) leaves none of Ray's agents running,
and SIGTERM ends the driver with exit 143, not a stack dump and exit 134.

Each test runs ``tiersweep sweep --backend ray`` for real as a subprocess leading its own
session; the Ray processes it starts are found as the other members of that session (Ray does
not start sessions of its own), independently of how tiersweep tracks them.
"""

from __future__ import annotations

import ipaddress
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

pytestmark = [pytest.mark.ray, pytest.mark.slow]  # a local Ray takes 5-20 s to start here

PROJECT = Path(__file__).resolve().parents[1]
#: Seconds a test waits for a stage of the sweep before failing.
DEADLINE = 180.0
#: Seconds after the driver's end by which every process it started must be gone.
GONE_SECONDS = 10.0


def _config(tmp_path: Path, seeds: int) -> Path:
    path = tmp_path / "ray.yaml"
    base = {"workload": {"model": "jann97", "jobs": 300}, "platform": {"nodes": 64, "tiers": 2}}
    path.write_text(yaml.safe_dump({"name": "ray", "base": base, "grid": {"policy.name": ["easy"]}, "seeds": seeds}))
    return path


def _start(tmp_path: Path, seeds: int) -> subprocess.Popen:
    env = {key: value for key, value in os.environ.items() if key != "RAY_ADDRESS"}
    config = _config(tmp_path, seeds)
    out = tmp_path / "out"
    command = [sys.executable, "-m", "tiersweep", "sweep", str(config), "--out", str(out), "--backend", "ray"]
    with open(tmp_path / "output.txt", "wb") as output:
        return subprocess.Popen(
            command, cwd=PROJECT, env=env, stdout=output, stderr=subprocess.STDOUT, start_new_session=True
        )


def _stat_fields(pid: int) -> list[str] | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def _session(sid: int) -> list[int]:
    """Live processes of session ``sid`` but its leader (zombies left out)."""
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != sid:
            fields = _stat_fields(int(entry.name))
            if fields and fields[0] != "Z" and int(fields[3]) == sid:  # fields: state, ppid, pgrp, session
                members.append(int(entry.name))
    return members


def _command(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def _kill_session(sid: int) -> None:
    for pid in [sid, *_session(sid)]:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _output(tmp_path: Path) -> str:
    return (tmp_path / "output.txt").read_text(errors="replace")


def _wait_for(what: str, condition, proc: subprocess.Popen, tmp_path: Path):
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        if proc.poll() is not None:
            pytest.fail(f"the sweep exited ({proc.returncode}) before {what}\n{_output(tmp_path)[-3000:]}")
        time.sleep(0.05)
    pytest.fail(f"no {what} after {DEADLINE} s\n{_output(tmp_path)[-3000:]}")


def _listening(pids: list[int]) -> list[tuple[int, str, int]]:
    """``(pid, address, port)`` of every listening TCP socket of ``pids`` (from ``/proc``)."""
    inodes = {}
    for pid in pids:
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                try:
                    link = os.readlink(f"/proc/{pid}/fd/{fd}")
                except OSError:
                    continue
                if link.startswith("socket:["):
                    inodes[link[8:-1]] = pid
        except OSError:
            continue
    found = []
    for table, family in (("tcp", socket.AF_INET), ("tcp6", socket.AF_INET6)):
        try:
            lines = Path(f"/proc/net/{table}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] != "0A" or fields[9] not in inodes:  # 0A: LISTEN
                continue
            host, port = fields[1].split(":")
            raw = bytes.fromhex(host)
            # /proc prints each 32-bit word of the address in host (little-endian) order.
            raw = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
            found.append((inodes[fields[9]], socket.inet_ntop(family, raw), int(port, 16)))
    return found


def _is_loopback(address: str) -> bool:
    ip = ipaddress.ip_address(address)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback


def test_a_local_ray_listens_on_loopback_only(tmp_path):
    proc = _start(tmp_path, seeds=60)
    try:
        runs = tmp_path / "out" / "ray" / "runs"
        _wait_for("a stored batch", lambda: list(runs.glob("part-*.parquet")), proc, tmp_path)
        members = _session(proc.pid)
        sockets = _listening([proc.pid, *members])
        commands = {pid: _command(pid) for pid, _, _ in sockets}
        assert proc.poll() is None, "the sweep ended before its sockets were listed"
    finally:
        _kill_session(proc.pid)
        proc.wait(timeout=30)
    assert any("gcs_server" in c for c in commands.values()) and any("raylet" in c for c in commands.values()), sockets
    exposed = [(address, port, commands[pid][:80]) for pid, address, port in sockets if not _is_loopback(address)]
    assert not exposed, f"listening beyond loopback: {exposed}"


#: When to stop the driver: Ray's first process has started; its agents (the last processes
#: before the driver connects) have started.
STAGES = {"gcs": "gcs_server", "agents": "ray::RuntimeEnvAgent"}


@pytest.mark.parametrize("stage", list(STAGES))
@pytest.mark.parametrize("how", ["SIGTERM", "SIGKILL"])
def test_a_driver_stopped_while_ray_starts_leaves_nothing_and_sigterm_exits_143(tmp_path, how, stage):
    proc = _start(tmp_path, seeds=8)
    try:
        _wait_for(
            f"a {STAGES[stage]} process",
            lambda: [pid for pid in _session(proc.pid) if STAGES[stage] in _command(pid)],
            proc,
            tmp_path,
        )
        assert not list((tmp_path / "out" / "ray" / "runs").glob("part-*.parquet")), "Ray had already started"
        proc.send_signal(getattr(signal, how))  # the driver only, as a process manager would
        status = proc.wait(timeout=60)
        deadline = time.monotonic() + GONE_SECONDS
        while _session(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = {pid: _command(pid)[:80] for pid in _session(proc.pid)}
    finally:
        _kill_session(proc.pid)
        proc.wait(timeout=30)
    output = _output(tmp_path)
    assert not left, f"Ray processes outlived their driver by {GONE_SECONDS} s: {left}\n{output[-2000:]}"
    if how == "SIGTERM":
        assert status == 143, output[-3000:]
        assert "Traceback" not in output and "SIGTERM received" not in output and "***" not in output, output[-3000:]
        assert output.strip().endswith("tiersweep: terminated"), output[-3000:]
    else:
        assert status == -signal.SIGKILL
