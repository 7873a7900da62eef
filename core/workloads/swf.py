"""Reading and writing the Standard Workload Format (SWF) of the Parallel Workloads Archive.

An SWF file is a block of ``;``-prefixed header comments (``; MaxProcs: 128``) followed by one
job per line with 18 whitespace-separated numeric fields, ``-1`` meaning unknown. Files may be
gzip-compressed; that is detected from the content, not the file name.

Line ends may be ``\\n``, ``\\r\\n`` or a lone ``\\r`` (old Mac files). Header comments may hold
any text (UTF-8, ``_``), but a job line holds only plain ASCII decimal numbers (``12``, ``-1``,
``3.5``, ``1e5``), because a number Python would read but a C, awk or Fortran SWF tool would not
(``1_000``, full-width ``１００``) means two tools read the same file differently.

Besides the format, :func:`read_swf` refuses a few things that would make every later number
silently wrong rather than fail: a file with no job lines at all (a run of zero jobs), a job
number or processor count that is not a whole number (a size of 0.5 would become a job of 0
processors, 2.5 would become 2), and a job number used twice (per-job results would mix two
jobs).

This module only parses and writes: it returns the raw 18-column table. Deciding what a job's
size is, dropping invalid jobs, sorting and so on is the job of :mod:`tiersweep.core.workloads.rules`.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import math
import os
import re
import stat
import zlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np

from ..errors import TraceChangedError, TraceFormatError
from ..safe_files import write_atomic

__all__ = ["SWF_FIELDS", "SwfLog", "read_swf", "write_swf", "header_int", "not_a_regular_file"]

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
#: One number of a job line: plain ASCII decimal, optional sign, fraction and exponent. ``\d``
#: of a bytes pattern is ASCII only. numpy's loadtxt accepts exactly these ASCII spellings too
#: (and ``nan``/``inf``, refused as not finite), so the fast and the slow path agree.
_NUMBER_RE = re.compile(rb"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
#: numpy splits fields on every ASCII whitespace byte, \x1c-\x1f included (Python's
#: ``str.isspace``); ``bytes.split()`` leaves those four out, so they are made spaces first.
_SEPARATORS = bytes.maketrans(b"\x1c\x1d\x1e\x1f", b"    ")
#: Fields that count things and must be whole numbers: job_number, allocated and requested
#: processors (the workload rules turn the sizes into ints, so 2.5 would become 2).
_WHOLE_FIELDS = [0, 4, 7]
#: Rows per block of :func:`_plain` (about half a MB of table).
_BLOCK = 4096
#: Larger whole numbers are not all representable as float64 (nor, past 2**63, as the int64
#: the job numbers become).
_MAX_WHOLE = 2.0**53


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
    so only the leading integer is read. Digits grouped by commas (``MaxProcs: 1,024``) are one
    number: read as its first group, such a header would shrink the machine to 1 processor and
    drop every job as too large.
    """
    for key in keys:
        value = header.get(key)
        if value is None:
            continue
        match = _HEADER_INT.match(value)
        if match:
            return int(match.group(1).replace(",", ""))
    return None


#: A header's leading integer: comma-grouped thousands (``1,024``) or plain digits.
_HEADER_INT = re.compile(r"\s*(\d{1,3}(?:,\d{3})+(?!\d)|\d+)")


#: What a path that is not a regular file is, by the ``stat`` test that finds it.
_SPECIAL_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def not_a_regular_file(mode: int) -> str | None:
    """What a file of ``st_mode`` ``mode`` is when it is not a regular file (``a FIFO (named
    pipe)``, ``a character device``, ``a folder``...), else None.

    A trace must be a regular file: reading a FIFO blocks until something writes to it, and a
    device such as ``/dev/zero`` never ends, so reading it exhausts memory.
    """
    if stat.S_ISREG(mode):
        return None
    return next((kind for test, kind in _SPECIAL_KINDS if test(mode)), "not a regular file")


def _refusal(path: str, kind: str) -> TraceFormatError:
    if kind == "a folder":
        return TraceFormatError(f"{path}: is a folder, not an SWF file")
    return TraceFormatError(f"{path}: is {kind}, not a regular file; give the path of an SWF file (plain or gzip)")


def _read_bytes(path: str, sha256: str | None = None) -> bytes:
    """The file's bytes, decompressed if it is gzip; a file that cannot be read or
    decompressed, or is not a regular file, is a TraceFormatError naming it and saying why.

    With ``sha256``, the SHA-256 of the bytes read (as stored, before decompression) must be
    that digest, else :class:`TraceChangedError`. The digest is of the very buffer that is
    parsed, so no change of the file between a check and the read can slip through.
    """
    try:
        # Looked at before opening: opening a FIFO for reading blocks until a writer comes.
        kind = not_a_regular_file(os.stat(path).st_mode)
        if kind is not None:
            raise _refusal(path, kind)
        # O_NONBLOCK: should the path become a FIFO after the look, opening it returns at once
        # (and the look at what was opened refuses it); it changes nothing for a regular file.
        handle = open(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb")
        with handle:
            kind = not_a_regular_file(os.fstat(handle.fileno()).st_mode)
            if kind is not None:
                raise _refusal(path, kind)
            raw = handle.read()
    except FileNotFoundError:
        raise  # documented: the callers say which spec key named the missing file
    except OSError as error:
        raise TraceFormatError(f"{path}: cannot be read ({error.strerror or error})") from None
    if sha256 is not None:
        found = hashlib.sha256(raw).hexdigest()
        if found != sha256:
            raise TraceChangedError(
                f"{path}: the trace changed since the sweep was expanded: expected sha256 {sha256}, found {found}; "
                "run the sweep again to use the new content"
            )
    if raw[:2] == _GZIP_MAGIC:
        try:
            raw = gzip.decompress(raw)
        except EOFError:
            raise TraceFormatError(
                f"{path}: the gzip data is truncated (it ends before its end marker); download or copy the file again"
            ) from None
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


def read_swf(path: str | os.PathLike[str], *, lenient: bool = False, sha256: str | None = None) -> SwfLog:
    """Read an SWF file (plain or gzip).

    Lines end in ``\\n``, ``\\r\\n`` or ``\\r``; ``;`` starts a comment up to the end of its line.

    Refused (:class:`TraceFormatError`), each because it would make the run silently wrong:

    * a file without job lines (empty or header only): a run of zero jobs is never meant;
    * a job line that is not 18 plain ASCII decimal numbers: ``nan``, ``inf``, ``0x10``,
      ``1_000`` and non-ASCII digits such as ``１００`` included, since other SWF tools do not
      read those as the numbers Python would;
    * a job number or processor count (fields 1, 5, 8) that is not a whole number: the sizes
      become ints later, so 2.5 would be 2 and 0.5 a job of 0 processors;
    * a job number used by an earlier line: per-job records would mix two jobs.

    With ``lenient`` the job lines with any of these problems (a repeated job number: the later
    lines) are skipped and counted instead, but a file left with no job line is still refused.

    A path that is not a regular file (a folder, a FIFO, a device such as ``/dev/zero``) is
    refused before it is opened for reading: it would block or never end.

    Args:
        path: The file.
        lenient: Skip and count malformed job lines instead of raising.
        sha256: The SHA-256 (hex) the file's bytes must have, as stored (gzip or not): a run
            whose identity names a trace's content is computed from that content or not at all.

    Raises:
        TraceFormatError: One of the problems above; the message names the file, the line
            number (when a line is at fault), what was found and what was expected.
        TraceChangedError: The bytes read do not have the digest ``sha256``.
        FileNotFoundError: The file does not exist.
    """
    path = os.fspath(path)
    raw = _read_bytes(path, sha256)
    if b"\r" in raw:
        # numpy and the line walks below only know \n; a CR-only file would be one line (a
        # comment, as files begin with the header). The check is one memchr, the common case.
        raw = raw.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    header = _header(raw)
    first_job = _first_job_line(raw)
    if first_job == -1:
        # Checked here rather than from an empty table, so numpy never warns "input contained
        # no data" (and a zero-job run never starts).
        raise TraceFormatError(
            f"{path}: no job lines (expected lines of {N_FIELDS} numbers after the ';' header comments)"
        )
    if not _odd_bytes_outside_comments(raw):
        # The bytes hold nothing numpy might read differently from the slow path (non-ASCII,
        # which it takes as Latin-1, so a stray 0xA0 byte would separate fields; '_').
        records, whole = _load_fast(raw, first_job)
        if records is not None:
            if _plain(records, whole):
                return SwfLog(path, header, records)
            if np.isfinite(records).all():
                return _checked(path, header, records, 0, lenient, lambda index: _line_of_record(raw, index))
    # Slow path, only for files with a bad line (or bytes numpy might misread): find it and say
    # exactly what is wrong.
    records, lines, skipped = _parse_lines(path, raw, lenient)
    if not len(records):
        raise _none_left(path, skipped)
    return _checked(path, header, records, skipped, lenient, lines.__getitem__)


def _none_left(path: str, skipped: int) -> TraceFormatError:
    """The error for a lenient read that skipped every job line."""
    return TraceFormatError(
        f"{path}: no job lines left: all {skipped} were malformed and skipped (lenient); "
        f"expected lines of {N_FIELDS} numbers"
    )


def _fields(line: bytes) -> list[bytes]:
    """The fields of one line (no newline): the text before any ``;``, split on whitespace as
    numpy splits it. Empty for a blank or comment-only line, which is not a job line."""
    return line.split(b";", 1)[0].translate(_SEPARATORS).split()


def _first_job_line(raw: bytes) -> int:
    """Where the first line that is neither blank nor only a comment starts, or -1. Stops
    there, just after the header in a real file."""
    start, size = 0, len(raw)
    while start < size:
        end = raw.find(b"\n", start)
        if end == -1:
            end = size
        if _fields(raw[start:end]):
            return start
        start = end + 1
    return -1


def _load_fast(raw: bytes, first_job: int) -> tuple[np.ndarray | None, bool]:
    """The table as numpy's C parser reads it, and whether it is known to hold only whole
    numbers; None when numpy refuses the bytes or the table is not n x 18 (the slow path
    then finds out why).

    Most traces hold only integers, and numpy parses those as int64 a third faster than as
    floats. That is tried when no '.' follows the header (one ``find``); it fails on an
    exponent (``1e5``) or a number past int64, and the float parse then decides. On ASCII
    input (see :func:`_odd_bytes_outside_comments`) the float parse accepts exactly the
    spellings of :data:`_NUMBER_RE` plus ``nan``/``inf`` (refused later as not finite), the
    int parse exactly ``[-+]?\\d+``, and both split fields and lines as :func:`_fields` does;
    so the paths agree. int64 -> float64 rounds a large number as parsing it as a float would.
    """
    if raw.find(b".", first_job) == -1:
        try:
            table = np.loadtxt(io.BytesIO(raw), comments=";", ndmin=2, dtype=np.int64)
        except ValueError:
            pass
        else:
            if table.shape[1:] == (N_FIELDS,) and len(table):
                return table.astype(np.float64), True
    try:
        # A quarter faster from the bytes than from decoded text.
        table = np.loadtxt(io.BytesIO(raw), comments=";", ndmin=2, dtype=np.float64)
    except ValueError:
        return None, False
    return (table if table.shape[1:] == (N_FIELDS,) and len(table) else None), False


def _odd_bytes_outside_comments(raw: bytes) -> bool:
    """Whether a non-ASCII byte or ``_`` occurs outside comment text (``;`` to end of line).

    Such a line is never plain SWF, but numpy might read it (it takes the bytes as Latin-1, so
    a stray 0xA0 byte would be a field separator): it goes to the slow path, which refuses it
    with its line number. Headers may hold both (``x86_64``, UTF-8 names), so each hit is
    checked for a ``;`` before it on its line, then the rest of that line is skipped. The
    common case costs an ``isascii`` and a ``find`` over the bytes (a regular expression over
    the whole file would cost as much as parsing it).
    """
    if raw.isascii():

        def next_at(position: int) -> int:
            return raw.find(b"_", position)
    else:
        codes = np.frombuffer(raw, dtype=np.uint8)
        hits = np.flatnonzero((codes >= 0x80) | (codes == ord("_")))

        def next_at(position: int) -> int:
            index = int(np.searchsorted(hits, position))
            return int(hits[index]) if index < len(hits) else -1

    position = next_at(0)
    while position != -1:
        start = raw.rfind(b"\n", 0, position) + 1
        if raw.find(b";", start, position) == -1:
            return True
        end = raw.find(b"\n", position)
        if end == -1:
            return False
        position = next_at(end)
    return False


def _parse_lines(path: str, raw: bytes, lenient: bool) -> tuple[np.ndarray, list[int], int]:
    """Parse ``raw`` line by line: the records, the line number of each and the number of
    malformed lines skipped; the first malformed line raises unless ``lenient``."""
    rows: list[list[float]] = []
    lines: list[int] = []
    skipped = 0
    for number, line in enumerate(raw.split(b"\n"), start=1):
        fields = _fields(line)
        if not fields:
            continue
        problem = None
        if len(fields) != N_FIELDS:
            problem = f"expected {N_FIELDS} whitespace-separated fields, found {len(fields)}"
        else:
            bad = next((x for x in fields if not _NUMBER_RE.fullmatch(x)), None)
            if bad is None:
                values = [float(x) for x in fields]
                bad = next((x for x, v in zip(fields, values) if not math.isfinite(v)), None)
            if bad is not None:
                problem = (
                    f"expected {N_FIELDS} numbers (plain ASCII decimal, like 12, -1 or 3.5), found {_decode(bad)!r}"
                )
        if problem is not None:
            if not lenient:
                raise TraceFormatError(
                    f"{path}:{number}: malformed job line: {problem}: {_decode(line).strip()[:120]!r}"
                )
            skipped += 1
            continue
        rows.append(values)
        lines.append(number)
    return np.array(rows, dtype=np.float64).reshape(-1, N_FIELDS), lines, skipped


def _line_of_record(raw: bytes, index: int) -> int:
    """The 1-based line number of record ``index`` of a table numpy read from ``raw``: walks
    the lines skipping blank and comment-only ones as numpy does. Only for error messages."""
    for number, line in enumerate(raw.split(b"\n"), start=1):
        if _fields(line):
            if index == 0:
                return number
            index -= 1
    raise IndexError("record index past the last job line")


def _plain(records: np.ndarray, whole: bool) -> bool:
    """Whether all numbers are finite, job numbers and processor counts whole and job numbers
    strictly increasing (so unique) and at most 2**53 in size: true of every real trace.
    ``whole``: the table was parsed as integers, so the first two hold.

    Done in blocks of rows, each small enough to stay in the processor cache between its
    checks: one pass over the table instead of one per check. False (also when a finite sum
    overflows) only means :func:`_checked` looks again, exactly.
    """
    if whole:
        ids = records[:, 0]
        return bool((ids[1:] > ids[:-1]).all()) and -_MAX_WHOLE <= ids[0] and ids[-1] <= _MAX_WHOLE
    last = -math.inf
    for start in range(0, len(records), _BLOCK):
        block = records[start : start + _BLOCK]
        if not math.isfinite(block.sum()):  # nan and inf propagate through a sum
            return False
        for column in _WHOLE_FIELDS:  # a strided column at a time beats gathering the three
            values = block[:, column]
            if not (np.floor(values) == values).all():
                return False
        ids = block[:, 0]
        if not (ids[0] > last and (ids[1:] > ids[:-1]).all()):
            return False
        last = ids[-1]
    return -_MAX_WHOLE <= records[0, 0] and last <= _MAX_WHOLE


def _checked(
    path: str, header: dict[str, str], records: np.ndarray, skipped: int, lenient: bool, line_of: Callable[[int], int]
) -> SwfLog:
    """The log, once job numbers and processor counts are whole and job numbers unique; the
    exact check behind :func:`_plain`, for tables it did not pass and for the slow path.

    Raises for the first offending line (or, ``lenient``, drops and counts the offending
    rows). ``line_of`` maps a record index to its line number; it is only called to raise.
    """
    whole = records[:, _WHOLE_FIELDS]
    bad = whole != np.floor(whole)
    bad[:, 0] |= np.abs(whole[:, 0]) > _MAX_WHOLE  # only job numbers: a huge size is dropped later as too large
    if bad.any():
        rows = np.flatnonzero(bad.any(axis=1))
        if not lenient:
            row = int(rows[0])
            column = _WHOLE_FIELDS[int(np.argmax(bad[row]))]
            value = float(records[row, column])
            # A whole number only fails for its size: say the bound, not just "whole".
            limit = " from -2**53 to 2**53" if value == math.floor(value) else ""
            raise TraceFormatError(
                f"{path}:{line_of(row)}: {SWF_FIELDS[column]} must be a whole number{limit}, found {value!r}"
            )
        records = np.delete(records, rows, axis=0)
        skipped += len(rows)
    ids = records[:, 0]
    if len(ids) > 1 and not np.all(np.diff(ids) > 0):
        # Not strictly increasing (rare): look for repeats. A stable sort keeps each group of
        # equal numbers in file order, so every element of a group but its first is a repeat.
        order = np.argsort(ids, kind="stable")
        ordered = ids[order]
        repeats = order[np.flatnonzero(ordered[1:] == ordered[:-1]) + 1]
        if len(repeats):
            if not lenient:
                row = int(repeats.min())
                first = int(np.flatnonzero(ids == ids[row])[0])
                raise TraceFormatError(
                    f"{path}:{line_of(row)}: job number {int(ids[row])} repeats the job on line {line_of(first)}; "
                    "job numbers must be unique"
                )
            records = np.delete(records, repeats, axis=0)
            skipped += len(repeats)
    if not len(records):
        raise _none_left(path, skipped)
    return SwfLog(path, header, records, malformed_skipped=skipped)


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
    write_atomic(path, data)
