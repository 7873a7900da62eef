"""Making the folders and checking the files that output goes to, with one-line errors when
that cannot be done."""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path

from ..core.errors import TiersweepError

__all__ = ["make_folder", "output_file", "not_a_file"]


def make_folder(folder: str | Path, what: str) -> Path:
    """Create ``folder`` (and its parents) if needed and return it.

    Raises:
        TiersweepError: A file stands where a folder is needed; the message names ``what``
            (the option or the output it is for) and the file in the way.
    """
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        blocker = next((p for p in [folder, *folder.parents] if p.exists() and not p.is_dir()), folder)
        raise TiersweepError(f"{what}: cannot make the folder {folder}: {blocker} is a file, not a folder") from None
    return folder


#: What a file that is not a regular file is, by its ``stat`` type.
_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def not_a_file(path: str | Path) -> str | None:
    """What ``path`` is when it exists and is not a regular file (``"a folder"``, ``"a FIFO"``,
    ``"a character device"``...), else None. Opening a FIFO to read it waits for a writer that
    never comes; checking first turns that hang into an error."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None  # (missing, or a name the system refuses: opening it says why)
    if stat.S_ISREG(mode):
        return None
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def output_file(path: str | Path, option: str, suffixes: Sequence[str] = ()) -> Path:
    """Check a file name given for output (``--out``, ``--plot``...) before any work is done,
    and make its folder; return it as a Path.

    Output is written under a temporary name and renamed into place, which would replace a
    device such as ``/dev/null`` with a regular file, and fails on a folder only after the work.

    Args:
        option: The option that named the file, for the message.
        suffixes: The file name endings allowed (lower case, such as ``.csv``); empty: any.

    Raises:
        TiersweepError: The name is empty, names a folder or a special file, lacks an allowed
            ending, or its folder cannot be made; the message names the option and the file.
    """
    if not str(path):
        raise TiersweepError(f"{option}: expected a file name, got an empty one")
    path = Path(path)
    kind = not_a_file(path)
    if kind is not None:
        raise TiersweepError(f"{option} {path}: is {kind}; give the name of a file to write")
    if suffixes and path.suffix.lower() not in suffixes:
        either = " or ".join([", ".join(suffixes[:-1]), suffixes[-1]] if len(suffixes) > 1 else suffixes)
        raise TiersweepError(f"{option} {path}: expected a {either} file name")
    make_folder(path.parent, f"{option} {path}")
    return path
