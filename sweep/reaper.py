"""Processes a driver started end with it, even when it is killed outright.

A driver that starts a local Ray cluster owns its processes; ``ray.shutdown()`` stops them on
a normal exit, Ctrl-C or SIGTERM. A driver killed with SIGKILL (or by the OOM killer) runs no
code at all, and two of Ray's agents (``ray::DashboardAgent``, ``ray::RuntimeEnvAgent``) then
live on, adopted by init. The reaper is a small process started beside the driver that holds
the read end of a pipe only the driver writes to: the pipe reaches end-of-file when the
driver is gone, however it went, and the reaper then kills the processes it was given (each
checked by its start time, so that a reused pid is never hit).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

__all__ = ["start_reaper", "descendants", "start_time"]

_REAPER = r"""
import os, signal, sys, time
signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's Ctrl-C is for the driver
targets = [tuple(int(x) for x in item.split(":")) for item in sys.argv[1:]]
sys.stdin.buffer.read()  # returns at end-of-file: the driver has exited
time.sleep(2.0)  # a driver that shut down cleanly has already stopped them
def started(pid):
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return int(stat.read().rsplit(")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return None
for pid, start in targets:
    if started(pid) == start:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
"""


def _stat(pid: int | str, field: int) -> int | None:
    """Field ``field`` (1-based, as ``proc(5)`` numbers them) of ``/proc/PID/stat`` as an
    integer, or None when the process is gone. The fields after the command name, which may
    hold spaces and parentheses, start at 3."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[field - 3])
    except (OSError, ValueError, IndexError):
        return None


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (field 22 of ``/proc/PID/stat``)."""
    return _stat(pid, 22)


def descendants(root: int | None = None) -> list[tuple[int, int]]:
    """``(pid, start time)`` of every live descendant of ``root`` (default: this process);
    empty where ``/proc`` is not available."""
    root = os.getpid() if root is None else root
    parents: dict[int, int] = {}
    proc = Path("/proc")
    if not proc.is_dir():
        return []
    for entry in proc.iterdir():
        if entry.name.isdigit():
            parent = _stat(entry.name, 4)  # the parent's pid
            if parent is not None:
                parents[int(entry.name)] = parent
    found, frontier = [], [root]
    while frontier:
        parent = frontier.pop()
        for pid, ppid in parents.items():
            if ppid == parent:
                frontier.append(pid)
                start = start_time(pid)
                if start is not None:
                    found.append((pid, start))
    return found


def start_reaper(targets: list[tuple[int, int]]) -> subprocess.Popen | None:
    """Start a reaper for ``targets`` (``(pid, start time)`` pairs); None if there are none.

    The returned process must stay referenced for as long as the driver runs (its pipe is the
    signal); it exits by itself once the driver is gone.
    """
    if not targets:
        return None
    return subprocess.Popen(
        [sys.executable, "-c", _REAPER, *(f"{pid}:{start}" for pid, start in targets)],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # outside the driver's group: a group kill must not take it
    )
