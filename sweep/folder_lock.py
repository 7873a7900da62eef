"""One writer per results folder: ``tiersweep sweep`` and ``tiersweep compact`` hold a lock.

Two drivers on one folder would each compute and store every cell (every row twice), and a
compaction running beside a sweep could delete part files written after it read the folder.
The lock is an advisory ``flock`` on ``OUT/NAME/.tiersweep.lock``: the operating system drops
it when its holder exits, however it exits (SIGKILL included), so a lock is never stale on
the machine that took it. The file also says who holds it (command, pid, host, since when)
for the message a second writer gets. A symbolic link (or a hard link) at the lock's name is
refused, never written through. ``flock`` is local to one machine: on a network file
system shared by several hosts it may not exclude writers on other hosts.
"""

from __future__ import annotations

import datetime as dt
import errno
import fcntl
import json
import os
import socket
from pathlib import Path
from types import TracebackType

from ..core.errors import TiersweepError
from ..core.safe_files import open_in_place
from .paths import make_folder

__all__ = ["FolderLock", "FolderBusyError", "LOCK_NAME"]

#: The lock file's name inside a sweep's results folder.
LOCK_NAME = ".tiersweep.lock"


class FolderBusyError(TiersweepError):
    """Another process is writing the results folder."""


class FolderLock:
    """Exclusive use of the results folder ``root`` for ``command`` (a context manager).

    Raises:
        FolderBusyError: Another live process holds the lock (the message names it).
    """

    def __init__(self, root: str | Path, command: str) -> None:
        self.root = Path(root)
        self.command = command
        self._file: int | None = None
        #: True when the folder cannot be written (then no lock is taken: see ``__enter__``).
        self.read_only = False

    def _make_folder(self) -> None:
        """Create the results folder; a file in the way is an error naming it."""
        try:
            make_folder(self.root, "--out")
        except OSError as error:
            if error.errno not in (errno.EROFS, errno.EACCES, errno.EPERM) or not self.root.is_dir():
                raise

    def __enter__(self) -> FolderLock:
        self._make_folder()
        path = self.root / LOCK_NAME
        try:
            # Opened in place (other processes lock this inode), so never through a link: one
            # planted here would have the holder's record written over its target.
            fd = open_in_place(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as error:
            if error.errno not in (errno.EROFS, errno.EACCES, errno.EPERM):
                raise
            # A folder this process may only read (archived results, a read-only mount): no
            # one can write it, so there is nothing to exclude; a run that finds everything
            # stored goes on, and one that must store something fails at its first write,
            # naming the folder.
            self.read_only = True
            return self
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _describe(path)
            os.close(fd)
            raise FolderBusyError(
                f"{self.root}: in use by {holder}; wait for it to finish or stop it (one sweep or "
                f"compaction per results folder at a time)"
            ) from None
        except BaseException:
            os.close(fd)
            raise
        holder = {
            "command": self.command,
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "since": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        }
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(holder).encode(), 0)
        self._file = fd
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if self._file is not None:
            os.close(self._file)  # closing the descriptor releases the lock
            self._file = None


def _describe(path: Path) -> str:
    """Who holds the lock at ``path``, as its file says."""
    try:
        holder = json.loads(path.read_text())
        return (
            f"`tiersweep {holder['command']}` (pid {holder['pid']} on host {holder['host']}, since {holder['since']})"
        )
    except (OSError, ValueError, KeyError, TypeError):
        return "another tiersweep process"
