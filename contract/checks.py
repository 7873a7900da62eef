"""The contract's checks on a finished run (lifecycle, capacity at every instant, work
conservation, an idle platform at the end) and the determinism helpers (bitwise record
comparison, record digests, digests computed in a freshly started interpreter)."""

from __future__ import annotations

import hashlib
import json
import math
import os
import subprocess
import sys
import textwrap
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..core.jobs import FINISHED, REJECTED, Job
from ..core.policies.base import BasePolicy
from .audit import ContractRun

__all__ = [
    "assert_capacity_respected",
    "assert_contract",
    "assert_jobs_lifecycle",
    "assert_run_contract",
    "assert_records_identical",
    "records_digest",
    "fresh_interpreter_digests",
    "class_key",
]


def assert_capacity_respected(records: Mapping[str, np.ndarray], capacity: int) -> None:
    """Sweep over finish (-size) and start (+size) events, finishes first at equal times.

    Only meaningful when no job was suspended or moved (each job then holds one interval).
    """
    size = records["size"].astype(np.int64)
    times = np.concatenate([records["finish_time"], records["start_time"]])
    kinds = np.concatenate([np.zeros(len(size), np.int64), np.ones(len(size), np.int64)])
    deltas = np.concatenate([-size, size])
    order = np.lexsort((kinds, times))
    in_use = np.cumsum(deltas[order])
    if len(in_use):
        worst = int(np.argmax(in_use))
        assert in_use[worst] <= capacity, (
            f"{in_use[worst]} processors in use at t={times[order][worst]:g} on a machine of {capacity}"
        )
        assert in_use[-1] == 0


def assert_contract(records: Mapping[str, np.ndarray], capacity: int, policy: BasePolicy | None = None) -> None:
    """Check the contract on the per-job records of a run on dedicated nodes (rate 1; and the
    hook counts when ``policy`` is a :func:`counting_policy`): every job started and finished,
    never before its submission; work conserved (a job never suspended nor moved runs exactly
    its runtime); capacity respected when nothing was suspended; each job finished once and
    started ``1 + suspensions`` times (kills included), every suspension but a kill a
    migration."""
    submit, start, finish = records["submit_time"], records["start_time"], records["finish_time"]
    runtime, migrations = records["runtime"], records["migrations"]
    n = len(submit)
    assert np.isfinite(start).all(), f"jobs never started: {records['job_id'][~np.isfinite(start)][:10]}"
    assert np.isfinite(finish).all(), f"jobs never finished: {records['job_id'][~np.isfinite(finish)][:10]}"
    early = start < submit
    assert not early.any(), f"jobs started before submission: {records['job_id'][early][:10]}"
    assert (finish >= start).all()
    # Rates never exceed 1: a job takes at least its runtime; on dedicated nodes (one tier) a
    # job never suspended or moved runs exactly its runtime.
    # (Up to float rounding: a rate change sums progress in pieces.)
    assert (finish - start >= runtime - 1e-9 * np.maximum(1.0, runtime)).all()
    single_tier = all(not k.startswith("tier") or k in ("tier0_duration",) for k in records)
    if single_tier:
        plain = migrations == 0
        wrong = plain & (finish != start + runtime)
        assert not wrong.any(), f"work not conserved for jobs {records['job_id'][wrong][:10]}"
    if not migrations.any() and single_tier:
        assert_capacity_respected(records, capacity)
    if policy is not None:
        assert sorted(policy.finishes) == list(range(n)), "not every job finished"
        assert set(policy.finishes.values()) <= {1}, "a job finished twice"
        expected = {i: 1 + policy.suspensions[i] for i in range(n)}
        assert dict(policy.starts) == expected, "a job was started a wrong number of times"
        kills = getattr(policy, "kills", {})
        assert all(migrations[i] + kills.get(i, 0) >= policy.suspensions[i] for i in range(n)) or not any(
            policy.suspensions.values()
        )


def _sweep(events: list[tuple[float, int, int]], limit: int, what: str) -> None:
    """``events`` are ``(time, 0 for an end / 1 for a start, delta)``; ends go first at equal
    times (a unit freed in a pass is free for the next pass at the same instant)."""
    in_use = 0
    for time, _, delta in sorted(events):
        in_use += delta
        assert in_use <= limit, f"{in_use} processes on {what} at t={time:g}, which holds {limit}"
    assert in_use == 0


def assert_jobs_lifecycle(jobs: Sequence[Job], policy: BasePolicy, *, may_reject: bool = False) -> None:
    """Every job finished exactly once, or (only where ``may_reject``) was turned away without
    ever starting; a job started ``1 + suspensions`` times (kills included), never before its
    submission, and took at least its runtime (rates <= 1). ``policy`` is a
    :func:`counting_policy`."""
    rejected = [job.job_id for job in jobs if job.state == REJECTED]
    if not may_reject:
        assert not rejected, f"policy {policy.name!r} turned away jobs {rejected[:10]}"
    for job in jobs:
        i = job.index
        if job.state == REJECTED:
            assert math.isnan(job.start_time) and math.isnan(job.finish_time), f"rejected job {job.job_id} ran"
            assert policy.starts[i] == 0 and policy.finishes[i] == 0 and policy.rejects[i] == 1
            continue
        assert job.state == FINISHED, f"job {job.job_id} ended in state {job.state}"
        assert policy.finishes[i] == 1, f"job {job.job_id} finished {policy.finishes[i]} times"
        assert policy.rejects[i] == 0
        assert policy.starts[i] == 1 + policy.suspensions[i], (
            f"job {job.job_id} started {policy.starts[i]} times with {policy.suspensions[i]} suspensions"
        )
        assert job.migrations + policy.kills[i] >= policy.suspensions[i]
        assert job.start_time >= job.submit_time, f"job {job.job_id} started before its submission"
        assert job.finish_time - job.start_time >= job.runtime - 1e-9 * max(1.0, job.runtime), (
            f"job {job.job_id} finished sooner than its runtime allows at rate <= 1"
        )


def assert_run_contract(run: ContractRun, *, may_reject: bool = False) -> None:
    """The generic policy contract on an audited run.

    * lifecycle: every job finishes exactly once, or (only where ``may_reject``) is turned away
      without ever starting; a job starts ``1 + suspensions`` times; the engine counted the
      rejections;
    * no job runs before its submission (records and every stay on the platform);
    * capacity at every instant: a sweep over every stay of every job on its units (ends before
      starts at equal times) never puts more processes in a tier than the idle platform had
      units there, nor more on one unit than it holds;
    * work conservation: the rates seen after every pass, integrated over time, add up to each
      job's runtime when it finishes, plus the work its kills discarded (the engine's
      ``lost_progress``); a job takes at least its runtime (rates <= 1) and holds
      its units at least that long; a job seen only at rate 1 and never suspended or moved
      finishes exactly ``runtime`` after it started;
    * the platform is idle again at the end.
    """
    policy, jobs, records, auditor = run.policy, run.jobs, run.records, run.auditor
    assert_jobs_lifecycle(jobs, policy, may_reject=may_reject)
    assert run.engine.rejected == len(run.rejected)
    submit, start, finish, runtime = (records[k] for k in ("submit_time", "start_time", "finish_time", "runtime"))
    ran = np.isfinite(start)
    assert (np.isfinite(finish) == ran).all()
    early = ran & (start < submit)
    assert not early.any(), f"jobs started before submission: {records['job_id'][early][:10]}"
    assert (finish[ran] - start[ran] >= runtime[ran] - 1e-9 * np.maximum(1.0, runtime[ran])).all(), (
        "a job finished sooner than its runtime allows at rate <= 1"
    )

    # Capacity, from the recorded stays (suspensions and moves included).
    by_id = {job.job_id: job for job in jobs}
    held_time: Counter[int] = Counter()
    per_tier: dict[int, list[tuple[float, int, int]]] = {}
    per_unit: dict[tuple[int, int], list[tuple[float, int, int]]] = {}
    for job_id, tier, begin, end, nodes, _ in run.engine.segments:
        job = by_id[job_id]
        assert begin >= job.submit_time, f"job {job_id} held units from {begin:g}, before its submission"
        assert end >= begin
        held_time[job.index] += end - begin
        per_tier.setdefault(tier, []).extend([(begin, 1, job.size), (end, 0, -job.size)])
        for unit, count in Counter(nodes).items():
            per_unit.setdefault((unit, tier), []).extend([(begin, 1, count), (end, 0, -count)])
    for tier, events in per_tier.items():
        _sweep(events, auditor.units[tier], f"tier {tier}")
    for (unit, tier), events in per_unit.items():
        _sweep(events, auditor.per_unit, f"unit {unit} of tier {tier}")

    # Work.
    for job in jobs:
        if job.state != FINISHED:
            continue
        i = job.index
        assert held_time[i] >= job.runtime - 1e-9 * max(1.0, job.runtime), (
            f"job {job.job_id} held its units {held_time[i]:g} s for {job.runtime:g} s of work"
        )
        done = auditor.work.get(i, 0.0) - run.engine.lost_progress.get(i, 0.0)
        rounding = float(np.spacing(max(1.0, abs(job.finish_time))))
        tolerance = 1e-9 * max(1.0, job.runtime) + 8 * auditor.pieces[i] * rounding
        assert abs(done - job.runtime) <= tolerance, (
            f"job {job.job_id} finished at {job.finish_time:g} after {done!r} s of work at the rates it ran at, "
            f"for a runtime of {job.runtime!r}"
        )
        undisturbed = job.migrations == 0 and policy.suspensions[i] == 0 and policy.moves[i] == 0
        if auditor.rates.get(i) == {1.0} and undisturbed:
            assert job.finish_time == job.start_time + job.runtime, (
                f"job {job.job_id} ran at rate 1 but not for its runtime"
            )
    platform = run.platform
    for tier, units in enumerate(auditor.units):
        free = platform.free_count(tier)
        assert free == units, f"tier {tier}: {free} of {units} units free at the end"


# -- determinism -------------------------------------------------------------------------------


def assert_records_identical(mine: Mapping[str, Any], theirs: Mapping[str, Any], label: str) -> None:
    """Same columns, dtypes, shapes and bytes (so nan positions and payloads match too)."""
    assert sorted(mine) == sorted(theirs), label
    for column in mine:
        a, b = np.asarray(mine[column]), np.asarray(theirs[column])
        assert a.dtype == b.dtype and a.shape == b.shape, f"{label}: column {column}"
        assert a.tobytes() == b.tobytes(), f"{label}: column {column} differs bitwise"


def records_digest(records: Mapping[str, Any]) -> str:
    """SHA-256 of per-job records: every column's name, dtype, shape and bytes, by name."""
    digest = hashlib.sha256()
    for column in sorted(records):
        values = np.ascontiguousarray(records[column])
        digest.update(f"{column}|{values.dtype.str}|{values.shape}|".encode())
        digest.update(values.tobytes())
    return digest.hexdigest()


_CHILD = """
    import importlib, json, sys
    paths, targets = json.loads(sys.argv[1])
    sys.path[:0] = paths
    digests = {}
    for module_name, qualname in targets:
        found = importlib.import_module(module_name)
        for part in qualname.split("."):
            found = getattr(found, part)
        digests[f"{module_name}:{qualname}"] = found().determinism_digest()
    print(json.dumps(digests))
"""


def fresh_interpreter_digests(classes: Sequence[type], timeout: float = 300.0) -> dict[str, str]:
    """:meth:`PolicyContract.determinism_digest` of each contract class, computed in one freshly
    started interpreter with another ``PYTHONHASHSEED`` (string hashing, hence set and
    dict-of-str iteration orders, differ there); by ``module:qualname``.

    The classes must be importable by module name from the folder their module file is in
    (as pytest imports test modules) or from ``sys.path``.
    """
    paths: list[str] = []
    targets = []
    for cls in classes:
        module = sys.modules[cls.__module__]
        depth = len(cls.__module__.split("."))
        root = str(Path(module.__file__).resolve().parents[depth - 1])
        if root not in paths:
            paths.append(root)
        targets.append((cls.__module__, cls.__qualname__))
    hash_seed = "4242" if os.environ.get("PYTHONHASHSEED") != "4242" else "1717"
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_CHILD), json.dumps([paths, targets])],
        env={**os.environ, "PYTHONHASHSEED": hash_seed},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def class_key(cls: type) -> str:
    """How :func:`fresh_interpreter_digests` names a class."""
    return f"{cls.__module__}:{cls.__qualname__}"
