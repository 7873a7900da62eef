"""Writing files without ever writing through a symbolic link, and atomically.

A results folder may be shared, and anyone who can write to it can put a symbolic link where
tiersweep is about to write (``.tiersweep.lock``, ``manifest.json``, ``index.html``, a
temporary file whose name can be guessed): opening such a name for writing would truncate
and overwrite whatever the link points to, with the rights of the user running tiersweep.

The rules, applied to every file the tool writes:

* A symbolic link at a name tiersweep writes is refused with a one-line error
  (:class:`LinkRefusedError`); the link and its target are left as they are.
* Output files are written under a fresh temporary name in the same folder, created with
  ``O_CREAT | O_EXCL | O_NOFOLLOW`` (so never an existing file or link), flushed to disk, and
  renamed over the final name. A rename replaces a name, never writes into what it points at,
  so even a link planted between the check and the rename is replaced, not written through;
  and a reader sees the old file or the new one, never half of one.
* A file that must be opened in place (the folder lock, which other processes lock by its
  inode) is opened with ``O_NOFOLLOW`` and must be a regular file with a single name.

It lives in ``core`` because the SWF writer needs it too; ``sweep`` and ``analysis`` use it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from .errors import TiersweepError

__all__ = ["LinkRefusedError", "refuse_link", "open_in_place", "atomic_writer", "write_atomic", "save_figure"]


class LinkRefusedError(TiersweepError):
    """A file tiersweep is about to write is a symbolic link (or not a plain file)."""


def _refused(path: str | Path, what: str = "a symbolic link") -> LinkRefusedError:
    return LinkRefusedError(
        f"{path}: is {what}; tiersweep writes no file through a link or onto a special file: "
        f"remove it, or write somewhere else"
    )


def refuse_link(path: str | Path) -> None:
    """Raise :class:`LinkRefusedError` when ``path`` is a symbolic link."""
    if os.path.islink(path):
        raise _refused(path)


def open_in_place(path: str | Path, flags: int, mode: int = 0o644) -> int:
    """``os.open(path, flags | O_NOFOLLOW)`` for a file that must be written where it is.

    Returns a descriptor of a regular file with one name (a hard link to another file would be
    written through as a symbolic link would).

    Raises:
        LinkRefusedError: ``path`` is a symbolic link, a special file or has other names.
    """
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise _refused(path) from None
        raise
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
        os.close(fd)
        raise _refused(path, "not a plain file with one name" if stat.S_ISREG(info.st_mode) else "a special file")
    return fd


def _fresh(path: Path) -> tuple[int, Path]:
    """A new, empty temporary file beside ``path`` (hidden: readers of a folder skip it)."""
    while True:
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
        try:
            # 0o666 as open() uses: the user's umask decides, as it did for a plain open.
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666), tmp
        except FileExistsError:
            continue


@contextlib.contextmanager
def atomic_writer(path: str | Path, mode: str = "wb", **open_args: object) -> Iterator[IO]:
    """A file object whose content becomes ``path`` when the block ends without an error.

    ``mode`` is ``"wb"`` or ``"w"`` (then ``open_args`` such as ``encoding`` and ``newline``
    are passed to :func:`open`). On an error the temporary file is removed and ``path`` is
    left as it was.

    Raises:
        LinkRefusedError: ``path`` is a symbolic link.
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_writer: mode {mode!r}; expected 'w' or 'wb'")
    path = Path(path)
    refuse_link(path)
    fd, tmp = _fresh(path)
    try:
        with open(fd, mode, **open_args) as handle:  # type: ignore[call-overload]
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        if os.path.isdir(path) and not os.path.islink(path):
            raise IsADirectoryError(errno.EISDIR, "is a folder, not a file", str(path))
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _sync_folder(path.parent)


def write_atomic(path: str | Path, data: bytes | str, encoding: str = "utf-8") -> None:
    """Write ``data`` to ``path`` with :func:`atomic_writer` (text as ``encoding``)."""
    if isinstance(data, str):
        data = data.encode(encoding)
    with atomic_writer(path) as handle:
        handle.write(data)


def _sync_folder(folder: Path) -> None:
    """Flush a folder's entries (the rename) to disk; some file systems cannot, which is fine."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def save_figure(figure: object, path: str | Path, **savefig_args: object) -> Path:
    """``figure.savefig`` (matplotlib) to ``path`` with :func:`atomic_writer`, in the format
    the file name's suffix says (``.png``); return the path."""
    path = Path(path)
    with atomic_writer(path) as handle:
        figure.savefig(handle, format=path.suffix.lstrip(".") or "png", **savefig_args)  # type: ignore[attr-defined]
    return path
