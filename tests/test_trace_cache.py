"""A worker parses a trace once for all the cells of that trace (``sweep/trace_cache.py``), and
never serves a file that changed: the cache is keyed by the digest of the bytes, which are read
and hashed again on every use, bounded in bytes, least recently used dropped first."""

from __future__ import annotations

import hashlib
import os

import numpy as np
import pytest

from sweep_helpers import swf_lines
from tiersweep.core.errors import TraceChangedError, TraceFormatError
from tiersweep.core.simulate import simulate
from tiersweep.sweep import trace_cache
from tiersweep.sweep.batch import run_batch, task_for
from tiersweep.sweep.config import expand, parse_sweep_config
from tiersweep.sweep.trace_cache import TraceCache


def _write(path, jobs: int) -> str:
    path.write_text("\n".join(swf_lines(jobs)) + "\n", encoding="ascii")
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def fresh_cache(monkeypatch):
    """This process's cache, empty and with its counts at zero for the test."""
    cache = TraceCache()
    monkeypatch.setattr(trace_cache, "CACHE", cache)
    return cache


def test_a_worker_parses_a_trace_once_for_every_cell_of_it(tmp_path, fresh_cache):
    trace = tmp_path / "log.swf"
    _write(trace, 40)
    raw = {
        "name": "cached",
        "base": {"workload": {"trace": str(trace)}, "platform": {"nodes": 64}},
        "grid": {"policy.name": ["fcfs", "easy"]},
        "seeds": 3,
    }
    cells = expand(parse_sweep_config(raw))
    outcomes = run_batch([task_for(cell, "cached") for cell in cells])
    assert (fresh_cache.stats.misses, fresh_cache.stats.hits) == (1, 5)
    assert len(fresh_cache) == 1 and fresh_cache.size_bytes >= 40 * 18 * 8
    # The same metrics as without the cache.
    for cell, outcome in zip(cells, outcomes):
        assert outcome.row["status"] == "ok"
        expected = simulate(cell.spec, trace_sha256=cell.trace_sha256).metrics
        assert {k: outcome.row[k] for k in expected} == pytest.approx(expected, nan_ok=True, rel=0, abs=0)


def test_a_changed_file_is_never_served_from_the_cache(tmp_path):
    cache = TraceCache()
    trace = tmp_path / "log.swf"
    old = _write(trace, 30)
    stamp = os.stat(trace).st_mtime_ns
    assert len(cache.read(trace, sha256=old).records) == 30
    # Same size, same time stamp, other bytes: only the content tells them apart.
    text = trace.read_text().replace("\n2 120 ", "\n2 121 ")
    trace.write_text(text)
    os.utime(trace, ns=(stamp, stamp))
    new = hashlib.sha256(trace.read_bytes()).hexdigest()
    assert new != old and os.stat(trace).st_size == len(text)
    with pytest.raises(TraceChangedError, match=f"expected sha256 {old}, found {new}"):
        cache.read(trace, sha256=old)
    assert cache.read(trace, sha256=new).records[1, 1] == 121
    assert cache.stats.hits == 0 and cache.stats.misses == 2


def test_a_file_that_became_a_fifo_is_refused_not_waited_on(tmp_path):
    cache = TraceCache()
    trace = tmp_path / "log.swf"
    digest = _write(trace, 10)
    cache.read(trace, sha256=digest)
    trace.unlink()
    os.mkfifo(trace)
    with pytest.raises(TraceFormatError, match="is a FIFO"):
        cache.read(trace, sha256=digest)


def test_the_cache_is_bounded_in_bytes_and_drops_the_least_recently_used(tmp_path):
    paths = {jobs: tmp_path / f"log{jobs}.swf" for jobs in (10, 11, 12)}
    digests = {jobs: _write(path, jobs) for jobs, path in paths.items()}
    size = lambda jobs: jobs * 18 * 8 + len("MaxProcs") + len("64")  # noqa: E731 - the table and its header
    cache = TraceCache(max_bytes=size(10) + size(12) + 10)
    cache.read(paths[10], sha256=digests[10])
    cache.read(paths[11], sha256=digests[11])
    cache.read(paths[10], sha256=digests[10])  # now the most recently used
    assert cache.size_bytes == size(10) + size(11) and cache.stats.hits == 1
    cache.read(paths[12], sha256=digests[12])  # too much: 11 goes
    assert cache.stats.evictions == 1 and cache.size_bytes == size(10) + size(12)
    cache.read(paths[10], sha256=digests[10])
    assert cache.stats.hits == 2
    cache.read(paths[11], sha256=digests[11])
    assert cache.stats.misses == 4
    small = TraceCache(max_bytes=size(10) - 1)  # a trace larger than the bound is never kept
    small.read(paths[10], sha256=digests[10])
    assert len(small) == 0 and small.size_bytes == 0


def test_cached_tables_are_read_only_and_each_reader_gets_its_own_header(tmp_path):
    cache = TraceCache()
    trace = tmp_path / "log.swf"
    digest = _write(trace, 10)
    first = cache.read(trace, sha256=digest)
    second = cache.read(trace, sha256=digest)
    assert np.shares_memory(first.records, second.records)
    with pytest.raises(ValueError, match="read-only"):
        second.records[0, 0] = 99
    second.header["MaxProcs"] = "1"
    assert cache.read(trace, sha256=digest).header["MaxProcs"] == "64"


def test_lenient_and_strict_reads_are_kept_apart(tmp_path):
    cache = TraceCache()
    trace = tmp_path / "log.swf"
    lines = swf_lines(10)
    lines[3] = "3 0 -1 x"
    trace.write_text("\n".join(lines) + "\n")
    digest = hashlib.sha256(trace.read_bytes()).hexdigest()
    assert cache.read(trace, lenient=True, sha256=digest).malformed_skipped == 1
    for _ in range(2):
        with pytest.raises(TraceFormatError, match="malformed job line"):
            cache.read(trace, sha256=digest)
    assert cache.read(trace, lenient=True, sha256=digest).malformed_skipped == 1 and cache.stats.hits == 1


def test_a_read_without_a_digest_is_not_cached(tmp_path):
    cache = TraceCache()
    trace = tmp_path / "log.swf"
    _write(trace, 10)
    cache.read(trace)
    assert len(cache) == 0 and cache.stats.misses == 0
