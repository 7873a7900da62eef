"""Reading and writing the Standard Workload Format (SWF) of the Parallel Workloads Archive.

An SWF file is a block of ``;``-prefixed header comments (``; MaxProcs: 128``) followed by one
job per line with 18 whitespace-separated numeric fields, ``-1`` meaning unknown. Files may be
gzip-compressed; that is detected from the content, not the file name.

This module only parses and writes: it returns the raw 18-column table. Deciding what a job's
size is, dropping invalid jobs, sorting and so on is the job of :mod:`tiersweep.core.workloads.trace`.
"""

from __future__ import annotations

import gzip
import io
import math
import os
import re
import zlib
from dataclasses import dataclass, field
from typing import Iterable, Mapping

import numpy as np

from ..errors import TraceFormatError

__all__ = ["SWF_FIELDS", "SwfLog", "read_swf", "write_swf", "header_int"]

#: The 18 SWF fields, in file order (column ``i`` of :attr:`SwfLog.records`).
SWF_FIELDS: tuple[str, ...] = (
    "job_number",
    "submit_time",
    "wait_time",
    "run_time",
    "allocated_processors",
    "average_cpu_time",
    "used_memory",
    "requested_processors",
    "requested_time",
    "requested_memory",
    "status",
    "user_id",
    "group_id",
    "executable_number",
    "queue_number",
    "partition_number",
    "preceding_job_number",
    "think_time",
)
N_FIELDS = len(SWF_FIELDS)

_GZIP_MAGIC = b"\x1f\x8b"
#: A header comment line, ``; Key: value`` (matched against one line, without its newline).
_HEADER_RE = re.compile(r"[ \t]*;[ \t]*([A-Za-z][\w-]*)[ \t]*:[ \t]*(.*?)[ \t\r]*$")


@dataclass(frozen=True)
class SwfLog:
    """The parsed content of one SWF file.

    Attributes:
        path: The file it was read from.
        header: Header comments of the form ``; Key: value`` (first occurrence of each key).
        records: ``float64`` array of shape ``(n, 18)``, one row per job line, in file order.
        malformed_skipped: Lines skipped as malformed (only ever non-zero when read leniently).
    """

    path: str
    header: Mapping[str, str]
    records: np.ndarray
    malformed_skipped: int = 0
    column: Mapping[str, int] = field(default_factory=lambda: {n: i for i, n in enumerate(SWF_FIELDS)})


def header_int(header: Mapping[str, str], *keys: str) -> int | None:
    """Return the leading integer of the first of ``keys`` present in ``header``, else None.

    Header values often carry a remark after the number (``MaxNodes: 338 (batch partition)``),
    so only the leading integer is read.
    """
    for key in keys:
        value = header.get(key)
        if value is None:
            continue
        match = re.match(r"\s*(\d+)", value)
        if match:
            return int(match.group(1))
    return None


def _read_bytes(path: str | os.PathLike[str]) -> bytes:
    """The file's bytes, decompressed if it is gzip; a file that cannot be read or
    decompressed is a TraceFormatError naming it and saying why."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except IsADirectoryError:
        raise TraceFormatError(f"{path}: is a folder, not an SWF file") from None
    except FileNotFoundError:
        raise  # documented: the callers say which spec key named the missing file
    except OSError as error:
        raise TraceFormatError(f"{path}: cannot be read ({error.strerror or error})") from None
    if raw[:2] == _GZIP_MAGIC:
        try:
            raw = gzip.decompress(raw)
        except EOFError:
            raise TraceFormatError(f"{path}: the gzip data is truncated (it ends before its end marker); download or copy the file again") from None
        except (gzip.BadGzipFile, zlib.error) as error:
            raise TraceFormatError(f"{path}: corrupt gzip data ({error}); download or copy the file again") from None
    return raw


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")


def _header(raw: bytes) -> dict[str, str]:
    """The ``; Key: value`` comments of ``raw`` (first occurrence of each key).

    Only the lines holding a ``;`` are looked at, found with ``bytes.find``: a regular
    expression run over the whole file would try every character of every job line, and cost
    a third as much as parsing the numbers. Each line is decoded on its own (lines split on
    ``\n``, which is never part of a multi-byte UTF-8 character, so this decodes as the whole
    file would).
    """
    header: dict[str, str] = {}
    position = raw.find(b";")
    while position != -1:
        start = raw.rfind(b"\n", 0, position) + 1
        end = raw.find(b"\n", position)
        if end == -1:
            end = len(raw)
        match = _HEADER_RE.match(_decode(raw[start:end]))
        if match:
            header.setdefault(match.group(1), match.group(2))
        position = raw.find(b";", end)
    return header


def read_swf(path: str | os.PathLike[str], *, lenient: bool = False) -> SwfLog:
    """Read an SWF file (plain or gzip).

    Args:
        path: The file.
        lenient: Skip and count malformed job lines instead of raising.

    Raises:
        TraceFormatError: A job line does not hold 18 finite numbers (unless ``lenient``); the
            message names the file, the line number, what was found and what was expected.
        FileNotFoundError: The file does not exist.
    """
    path = os.fspath(path)
    raw = _read_bytes(path)
    header = _header(raw)
    try:
        # numpy's C parser handles the well-formed common case in a few tens of milliseconds.
        # It reads the bytes as they are (a quarter faster than decoding them first): job lines
        # are ASCII, and a line that is not fails here and is then found by the slow path.
        records = np.loadtxt(io.BytesIO(raw), comments=";", ndmin=2, dtype=np.float64)
        if records.size == 0:
            records = np.empty((0, N_FIELDS))
        if records.shape[1] != N_FIELDS or not np.isfinite(records).all():
            raise ValueError("not plain SWF")
        return SwfLog(path, header, records)
    except ValueError:
        pass
    # Slow path, only for files with a bad line: find it and say exactly what is wrong.
    rows: list[list[float]] = []
    skipped = 0
    for number, line in enumerate(_decode(raw).splitlines(), start=1):
        body = line.split(";", 1)[0]
        fields = body.split()
        if not fields:
            continue
        problem = None
        if len(fields) != N_FIELDS:
            problem = f"expected {N_FIELDS} whitespace-separated fields, found {len(fields)}"
        else:
            values = [_number(x) for x in fields]
            bad = next((x for x, v in zip(fields, values) if not math.isfinite(v)), None)
            if bad is not None:
                problem = f"expected {N_FIELDS} numbers, found {bad!r}"
        if problem is not None:
            if not lenient:
                raise TraceFormatError(f"{path}:{number}: malformed job line: {problem}: {line.strip()[:120]!r}")
            skipped += 1
            continue
        rows.append(values)
    records = np.array(rows, dtype=np.float64).reshape(-1, N_FIELDS)
    return SwfLog(path, header, records, malformed_skipped=skipped)


def _number(token: str) -> float:
    """The token as a float, or nan when it is not a number (nan and inf count as bad too)."""
    try:
        return float(token)
    except ValueError:
        return math.nan


def _format_value(value: float) -> str:
    if value == int(value):
        return str(int(value))
    return f"{value:.2f}"


def write_swf(
    path: str | os.PathLike[str],
    records: np.ndarray | Iterable[Iterable[float]],
    header: Mapping[str, object] | None = None,
) -> None:
    """Write jobs as SWF (gzip-compressed when ``path`` ends in ``.gz``).

    The file is written to a temporary name and renamed into place, so a reader never sees a
    half-written file.

    Args:
        path: Destination.
        records: Rows of 18 numbers in :data:`SWF_FIELDS` order (``-1`` for unknown).
        header: ``Key: value`` pairs written as header comments, in order.
    """
    table = np.asarray(records, dtype=np.float64).reshape(-1, N_FIELDS)
    lines = [f"; {key}: {value}" for key, value in (header or {}).items()]
    lines.extend(" ".join(_format_value(v) for v in row) for row in table.tolist())
    data = ("\n".join(lines) + "\n").encode("utf-8")
    path = os.fspath(path)
    if path.endswith(".gz"):
        data = gzip.compress(data, mtime=0)
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "wb") as handle:
        handle.write(data)
    os.replace(tmp, path)
