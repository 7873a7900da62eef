"""The Optuna storage a tuning study lives in: its URL, opening it, and what goes wrong there.

A study is kept in a file (SQLite, ``sqlite:///PATH``; an Optuna journal, ``journal:PATH``) or on
a database server (``postgresql://...``, ``mysql://...``). What goes wrong with it while the tool
reads or writes it (the file deleted, truncated or overwritten, the disk full, the server gone)
surfaces from Optuna, SQLAlchemy or the database driver as one of many exception types, the
real cause several links down the chain; :func:`storage_errors` turns each into one line that
names the file (or the URL, its password hidden) and says how to recover.
"""

from __future__ import annotations

import errno
import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..core.errors import TiersweepError, first_line
from ..core.safe_files import refuse_link
from .redact import redact

__all__ = [
    "storage_url",
    "default_storage_url",
    "storage_file",
    "make_storage",
    "storage_errors",
    "storage_problem",
    "START_OVER",
]

#: How to start a study over when its storage is lost (its cells stay in the results folder).
START_OVER = "run `tiersweep tune` again to start the study over (the cells already stored are reused, not recomputed)"


def storage_url(config: Any, root: Path, override: str | None = None) -> str:
    """The study's storage: ``override``, the config's, or :func:`default_storage_url`."""
    return override or config.storage or default_storage_url(root)


def default_storage_url(root: Path) -> str:
    """The storage of a study that names none: ``sqlite:///ROOT/study.db``, in its results
    folder."""
    # The folder is resolved, not the file: a link planted at study.db must stay visible to
    # make_storage, which refuses it.
    return f"sqlite:///{root.resolve() / 'study.db'}"


def storage_file(url: str) -> Path | None:
    """The file a ``sqlite:`` or ``journal:`` URL keeps the study in; None for a server (or an
    in-memory database, or a URL that does not parse)."""
    if url.startswith("journal:"):
        return Path(url[len("journal:") :])
    if not url.startswith("sqlite"):
        return None
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        database = make_url(url).database
    except (ArgumentError, ValueError):
        return None
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    return Path(database)


def make_storage(url: str) -> Any:
    """The Optuna storage at ``url`` (``journal:PATH`` for a journal file), opened.

    Raises:
        LinkRefusedError: The study's file is a symbolic link.
        TiersweepError: The storage cannot be opened (an unknown scheme, a missing database
            driver, a folder that does not exist, a server that does not answer): one line
            naming the URL (its password hidden) and the cause; a file that is damaged: as
            :func:`storage_errors`.
    """
    import optuna

    study_file = storage_file(url)
    if study_file is not None:
        # SQLite and the journal open their file themselves, following links: a link planted
        # there would have the study written onto its target.
        refuse_link(study_file)
    try:
        if url.startswith("journal:"):
            from optuna.storages import JournalStorage
            from optuna.storages.journal import JournalFileBackend

            return JournalStorage(JournalFileBackend(url[len("journal:") :]))
        return optuna.storages.RDBStorage(url)
    # A URL reaches SQLAlchemy, a database driver and the network: what fails there is the
    # user's URL, file or server, not a bug, and the exception types come from whichever driver
    # the URL names, so everything is reported as one line.
    except Exception as error:  # noqa: BLE001
        problem = storage_problem(url, error)
        if problem is not None and problem[0] in ("damaged", "full", "io"):
            raise TiersweepError(problem[1]) from None
        raise TiersweepError(
            redact(
                f"storage {url!r}: cannot open this Optuna storage ({type(error).__name__}: {first_line(error)}); "
                "expected sqlite:///PATH, postgresql://USER@HOST/DB, mysql://USER@HOST/DB or journal:PATH"
            )
        ) from None


@contextmanager
def storage_errors(url: str) -> Iterator[None]:
    """Within the block, a failure of the storage at ``url`` raises a one-line TiersweepError
    naming the file (or the URL, its password hidden) and the recovery (see
    :func:`storage_problem`); other exceptions pass through unchanged."""
    try:
        yield
    except TiersweepError:
        raise
    except Exception as error:  # noqa: BLE001 (storage_problem picks the storage's failures)
        problem = storage_problem(url, error)
        if problem is None:
            raise
        raise TiersweepError(problem[1]) from None


def _chain(error: BaseException) -> list[BaseException]:
    """``error`` and what caused it, outermost first (the driver's own error is last)."""
    chain = []
    while error is not None and error not in chain:
        chain.append(error)
        error = error.__cause__ or error.__context__
    return chain


def _is_storage_failure(url: str, chain: list[BaseException]) -> bool:
    import optuna
    from sqlalchemy.exc import SQLAlchemyError

    kinds: tuple[type[BaseException], ...] = (optuna.exceptions.StorageInternalError, SQLAlchemyError, sqlite3.Error)
    if url.startswith("journal:"):
        # A journal file is JSON lines: a damaged one fails to decode (UnicodeDecodeError and
        # JSONDecodeError), an unwritable one with the OSError of its path.
        kinds += (json.JSONDecodeError, UnicodeDecodeError, OSError)
    return any(isinstance(link, kinds) for link in chain)


#: A phrase of SQLite's message (lower case), the kind of problem and what it is said to be.
_SQLITE_PHRASES = (
    ("database or disk is full", "full"),
    ("file is not a database", "damaged"),
    ("database disk image is malformed", "damaged"),
    ("no such table", "damaged"),
    ("disk i/o error", "io"),
    ("readonly database", "readonly"),
    ("database is locked", "locked"),
)


def storage_problem(url: str, error: BaseException) -> tuple[str, str] | None:
    """What went wrong with the storage at ``url``, as ``(kind, one-line message)``; None when
    ``error`` is not a failure of the storage.

    Kinds: ``deleted`` (the file is gone), ``damaged`` (truncated, overwritten, not a study
    storage), ``full`` (no space left), ``io`` (the disk refused a read or write: failing, or
    past a file size limit), ``readonly``, ``locked`` (another process holds it) and ``failed``
    (anything else, such as a server that went away). The message names the file (or the URL,
    its password hidden), the cause as the driver put it, and the recovery.
    """
    chain = _chain(error)
    if not _is_storage_failure(url, chain):
        return None
    cause = chain[-1]
    reason = first_line(cause)
    text = " ".join(first_line(link) for link in chain).lower()
    errnos = {getattr(link, "errno", None) for link in chain}
    path = storage_file(url)
    kind = "failed"
    if path is not None and not path.exists():
        kind = "deleted"
    elif errnos & {errno.ENOSPC, errno.EDQUOT}:
        kind = "full"
    elif url.startswith("journal:") and isinstance(cause, (json.JSONDecodeError, UnicodeDecodeError)):
        kind = "damaged"
    else:
        kind = next((k for phrase, k in _SQLITE_PHRASES if phrase in text), kind)
    where = f"study storage {path}" if path is not None else f"study storage {url}"
    resumes = "run the same command again (the study resumes where it stopped)"
    messages = {
        "deleted": f"{where} was deleted while in use: {START_OVER}",
        "damaged": f"{where} is damaged ({reason}): restore it from a backup, or delete it and {START_OVER}",
        "full": f"{where}: the disk is full ({reason}): free some space and {resumes}",
        "io": f"{where} cannot be written or read ({reason}: the disk is full or failing, or the file is past a "
        f"size limit): fix that and {resumes}",
        "readonly": f"{where} cannot be written ({reason}): make it and its folder writable and {resumes}",
        "locked": f"{where} is locked by another process ({reason}): let it finish and {resumes}",
        "failed": f"{where} failed ({type(cause).__name__}: {reason}): "
        + (
            f"check the server and {resumes}"
            if path is None
            else f"restore it from a backup, or delete it and {START_OVER}"
        ),
    }
    return kind, redact(messages[kind])
