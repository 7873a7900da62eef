"""Processes a driver started end with it, even when it is killed outright.

A driver that starts a local Ray cluster owns its processes; ``ray.shutdown()`` stops them on
a normal exit, Ctrl-C or SIGTERM. A driver killed with SIGKILL (or by the OOM killer) runs no
code at all, and two of Ray's agents (``ray::DashboardAgent``, ``ray::RuntimeEnvAgent``) then
live on for about a minute, adopted by init; so do they when the driver is stopped while Ray
is still starting (``ray.init`` has then not yet returned anything to shut down).

The reaper is a small process started beside the driver, before the processes it guards. It
holds the read end of a pipe only the driver writes to: the pipe reaches end-of-file when the
driver is gone, however it went. Until then it notes the driver's descendants four times a
second, until the driver says (:func:`settled`) that they have all started; at end-of-file it
kills every one of them still running (each checked by its start time, so that a reused pid
is never hit) with their own descendants, and, when it was given a marker
(``TIERSWEEP_OWNER=<token>``, see :func:`owner_marker`), every process whose environment holds
it and every orphan of the driver's process group born after the reaper. Ray's workers,
started later by the raylet, inherit the marker from the environment the driver gave the
raylet; its agents do not (the raylet gives them an environment of their own), and one that
started in the last quarter second before the driver died, its raylet dead too, is found as
an orphan of the group.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

__all__ = ["start_reaper", "settled", "descendants", "start_time", "owner_marker", "OWNER_VARIABLE"]

#: The environment variable that marks the processes a reaper kills.
OWNER_VARIABLE = "TIERSWEEP_OWNER"

# Self-contained (the standard library only): it must start fast and work whatever the
# current folder holds.
_REAPER = r"""
import os, select, signal, sys, time
signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's Ctrl-C is for the driver
driver = os.getppid()
group = os.getpgid(driver)
marker = sys.argv[1].encode()
targets = {tuple(int(x) for x in item.split(":")) for item in sys.argv[2:]}
def fields(pid):
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
def started(pid):
    found = fields(pid)
    return int(found[19]) if found and found[0] != "Z" else None
born = started(os.getpid())
def orphans():
    # Processes of the driver's group started after this reaper whose parent is outside the
    # group: Ray's processes, adopted once their parent died (a later command of a script
    # sharing the group has the script's shell, in the group, as its parent).
    found, groups = [], {}
    for entry in os.listdir("/proc"):
        info = fields(entry) if entry.isdigit() else None
        if info and info[0] != "Z":
            groups[int(entry)] = (int(info[2]), int(info[1]), int(info[19]))
    for pid, (pgid, parent, start) in groups.items():
        if pgid == group and start >= born and pid != os.getpid() and groups.get(parent, (None,))[0] != group:
            found.append(pid)
    return found
def descendants(roots):
    children = {}
    for entry in os.listdir("/proc"):
        found = fields(entry) if entry.isdigit() else None
        if found:
            children.setdefault(int(found[1]), []).append(int(entry))
    out, frontier = set(), list(roots)
    while frontier:
        for pid in children.get(frontier.pop(), []):
            start = started(pid)
            if start is not None and (pid, start) not in out and pid != os.getpid():
                out.add((pid, start))
                frontier.append(pid)
    return out
def marked():
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                with open(f"/proc/{entry}/environ", "rb") as environ:
                    if marker in environ.read().split(b"\0"):
                        found.append(int(entry))
            except OSError:
                pass
    return found
def kill(pid):
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
watching = True
while True:
    ready, _, _ = select.select([0], [], [], 0.25 if watching else None)
    if ready:
        if not os.read(0, 64):
            break  # end-of-file: the driver has exited
        watching = False  # all started: one last look below
    targets |= descendants([driver])
time.sleep(2.0)  # a driver that shut down cleanly has already stopped them
live = [pid for pid, start in targets if started(pid) == start]
for pid, start in descendants(live) | targets:
    if started(pid) == start:
        kill(pid)
# A few rounds: a raylet killed in the same round as its listing may have started a worker.
for _ in range(5 if marker else 0):
    found = marked() + orphans()
    if not found:
        break
    for pid in found:
        kill(pid)
    time.sleep(0.2)
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


def owner_marker() -> str:
    """A fresh ``TIERSWEEP_OWNER=<token>`` entry: put it in the environment of the processes a
    reaper started with it must kill."""
    return f"{OWNER_VARIABLE}={os.getpid()}-{secrets.token_hex(8)}"


def start_reaper(targets: list[tuple[int, int]], marker: str | None = None) -> subprocess.Popen:
    """Start a reaper for ``targets`` (``(pid, start time)`` pairs), the descendants this
    process starts until :func:`settled` and the processes whose environment holds ``marker``
    (from :func:`owner_marker`).

    The returned process must stay referenced for as long as the driver runs (its pipe is the
    signal); it exits by itself once the driver is gone.
    """
    return subprocess.Popen(
        [sys.executable, "-c", _REAPER, marker or "", *(f"{pid}:{start}" for pid, start in targets)],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # outside the driver's group: a group kill must not take it
    )


def settled(reaper: subprocess.Popen) -> None:
    """Tell ``reaper`` that the processes it guards have started: it takes a last look at this
    process's descendants and stops looking (those started later must carry its marker)."""
    try:
        reaper.stdin.write(b"settled")  # type: ignore[union-attr]
        reaper.stdin.flush()  # type: ignore[union-attr]
    except (OSError, ValueError):
        pass  # a reaper that is gone cannot be told; nothing else depends on it
