"""Parsed traces kept in a worker process, so that the cells of one trace parse it once.

Reading a trace is most of a small cell's time (decompressing and parsing a whole log of tens of
thousands of jobs for a run of fifty). A worker keeps each trace it parsed, keyed by the SHA-256
of the file's bytes (the digest a sweep cell's id names) and by ``lenient``, in a cache bounded
in bytes that drops the least recently used trace first.

What is served is always the parse of the bytes the file holds now: on a hit the file is read
again and its digest compared (reading and hashing cost a small part of decompressing and
parsing); a file that changed, vanished or is no longer a regular file is handed to
:func:`~tiersweep.core.workloads.swf.read_swf`, which reads it and reports what is wrong
exactly as without a cache. Cached tables are read-only, so no run can alter what the next one
reads.

:func:`read_trace` is the reader the sweep's worker hands to
:func:`~tiersweep.core.simulate.run_plan`.
"""

from __future__ import annotations

import hashlib
import os
from collections import OrderedDict
from dataclasses import dataclass, replace

from ..core.workloads.swf import SwfLog, not_a_regular_file, read_swf

__all__ = ["TraceCache", "CACHE", "read_trace", "DEFAULT_MAX_BYTES"]

#: The default bound of a worker's cache: the tables of a few large logs (CEA-Curie's is about
#: 45 MB) or of hundreds of small ones.
DEFAULT_MAX_BYTES = 256 * 1024 * 1024


@dataclass
class CacheStats:
    """What a cache did: traces parsed (misses), served from memory (hits), dropped (evictions)."""

    hits: int = 0
    misses: int = 0
    evictions: int = 0


class TraceCache:
    """Parsed traces by ``(sha256 of the file's bytes, lenient)``, at most ``max_bytes`` of them
    (their tables and headers), least recently used dropped first.

    Args:
        max_bytes: The bound; a trace larger than it is parsed on every use and never kept.
    """

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        self.stats = CacheStats()
        self._logs: OrderedDict[tuple[str, bool], tuple[SwfLog, int]] = OrderedDict()
        self._bytes = 0

    @property
    def size_bytes(self) -> int:
        """Bytes held now."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._logs)

    def clear(self) -> None:
        """Drop every trace (the statistics are kept)."""
        self._logs.clear()
        self._bytes = 0

    def read(self, path: str | os.PathLike[str], *, lenient: bool = False, sha256: str | None = None) -> SwfLog:
        """:func:`~tiersweep.core.workloads.swf.read_swf` of ``path``, parsed once per content.

        Only a read that names the content (``sha256``, as a sweep cell's does) is cached; the
        file is read and hashed on every call all the same (see the module docstring).
        """
        path = os.fspath(path)
        if sha256 is None:
            return read_swf(path, lenient=lenient)
        key = (sha256, lenient)
        held = self._logs.get(key)
        if held is not None and _digest_now(path) == sha256:
            self._logs.move_to_end(key)
            self.stats.hits += 1
            return replace(held[0], path=path, header=dict(held[0].header))
        log = read_swf(path, lenient=lenient, sha256=sha256)  # (raises TraceChangedError on a change)
        self.stats.misses += 1
        self._keep(key, log)
        return replace(log, header=dict(log.header))

    def _keep(self, key: tuple[str, bool], log: SwfLog) -> None:
        size = log.records.nbytes + sum(len(k) + len(v) for k, v in log.header.items())
        if size > self.max_bytes:
            return
        log.records.flags.writeable = False
        if key in self._logs:
            self._bytes -= self._logs.pop(key)[1]
        self._logs[key] = (log, size)
        self._bytes += size
        while self._bytes > self.max_bytes:
            _, (_, dropped) = self._logs.popitem(last=False)
            self._bytes -= dropped
            self.stats.evictions += 1


def _digest_now(path: str) -> str | None:
    """The SHA-256 of the file's bytes now, or None when it is not a readable regular file
    (:func:`~tiersweep.core.workloads.swf.read_swf` then says why). Looked at before opening and
    opened non-blocking, as ``read_swf`` does: opening a FIFO for reading would block."""
    try:
        if not_a_regular_file(os.stat(path).st_mode) is not None:
            return None
        with open(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb") as handle:
            if not_a_regular_file(os.fstat(handle.fileno()).st_mode) is not None:
                return None
            return hashlib.sha256(handle.read()).hexdigest()
    except OSError:
        return None


#: This process's cache.
CACHE = TraceCache()


def read_trace(path: str | os.PathLike[str], *, lenient: bool = False, sha256: str | None = None) -> SwfLog:
    """:meth:`TraceCache.read` of this process's cache (the signature of ``read_swf``)."""
    return CACHE.read(path, lenient=lenient, sha256=sha256)
