"""The plug-in contract as importable pytest test classes: :class:`PolicyContract` and
:class:`PlatformContract`.

A policy or platform written outside this package gets the whole contract by subclassing one
of them unchanged, in a module pytest collects::

    from tiersweep.core.testing import PolicyContract

    class TestMyPolicyOnNodes(PolicyContract):
        policy = "my_policy"            # its registry name
        policy_params = {"depth": 2}
        platform = "nodes"              # a registered platform kind
        platform_params = {"tiers": 2}

The base classes are not named ``Test*``, so pytest collects only the subclasses. Every run
goes through the real path (:func:`~tiersweep.core.spec.validate_spec`, the workload builder,
:func:`~tiersweep.core.platforms.make_platform`, :func:`~tiersweep.core.policies.make_policy`
and the :class:`~tiersweep.core.engine.Engine`), audited after every policy pass and checked
afterwards against what the run recorded, never against the plug-in's own bookkeeping.

Workloads: the small, hand-made corner cases of :data:`SMALL_WORKLOADS` (written for 10 units
and scaled to the platform's job capacity), a lone job, a synthetic model workload (for
determinism, which needs no file) and a slice of the KTH-SP2 log (skipped with the reason
when the log is absent; :attr:`PolicyContract.trace` or the ``TIERSWEEP_TRACES`` environment
variable say where it is).

Policy- or platform-specific promises are added by overriding :meth:`PolicyContract.audit`
(called after every pass) and :meth:`PolicyContract.check_run` (called after every run); a
test that does not apply to a plug-in is switched off by setting it to None in the subclass.

This module imports pytest; :mod:`tiersweep.core` does not import this module.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import pickle
import subprocess
import sys
import textwrap
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ClassVar, Iterable, Mapping, Sequence

import numpy as np
import pytest

from .capabilities import CAPABILITIES, EMBEDDING, MOVES, PLACEMENT, TIME_TRACKING, missing_members
from .decisions import Move, Start
from .engine import Engine
from .errors import PolicyError
from .jobs import FINISHED, QUEUED, REJECTED, RUNNING, Job
from .metrics import job_records
from .params import Param, validate_params
from .platforms import COMMON_PLATFORM_PARAMS, PLATFORMS, make_platform, platform_class, register_platform
from .platforms.base import BasePlatform
from .policies import POLICIES
from .policies.base import BasePolicy
from .simulate import simulate
from .spec import policy_runs_on, validate_spec
from .workloads.build import build_workload
from .workloads.swf import SWF_FIELDS

__all__ = [
    "PolicyContract",
    "PlatformContract",
    "ContractRun",
    "Auditor",
    "SMALL_WORKLOADS",
    "SMALL_CAPACITY",
    "RULES",
    "KTH_TRACE",
    "counting_policy",
    "audit",
    "assert_capacity_respected",
    "assert_contract",
    "assert_run_contract",
    "assert_jobs_lifecycle",
    "assert_records_identical",
    "records_digest",
    "run_spec",
    "small_workload_spec",
    "trace_path",
    "fresh_interpreter_digests",
    "class_key",
    "default_per_unit",
    "scaled_rows",
    "driving_policy",
    "ProbingMixin",
]

#: The units the rows of :data:`SMALL_WORKLOADS` are written for.
SMALL_CAPACITY = 10

#: Small corner cases on :data:`SMALL_CAPACITY` units, ``(submit, runtime, size, requested)``
#: rows (requested -1: none): backfilling chances, equal submit times, zero runtimes, jobs
#: running past their request, jobs that take the whole machine.
SMALL_WORKLOADS: dict[str, list[tuple[float, float, int, float]]] = {
    "backfill-mix": [(0, 100, 6, 100), (1, 100, 8, 100), (2, 50, 4, 1000), (2, 30, 2, 40), (3, 300, 2, 300)],
    "same-submit": [(0, 50, 4, 50), (0, 100, 8, 100), (0, 100, 6, 100), (0, 10, 10, 20), (0, 5, 1, 5)],
    "zero-runtimes": [(0, 0, 10, 10), (0, 100, 10, 100), (0, 0, 3, 5), (100, 0, 10, 1), (100, 7, 4, 9)],
    "overruns": [(0, 200, 10, 100), (10, 50, 5, 20), (10, 80, 5, 200), (20, 10, 1, 5), (20, 40, 9, 60)],
    "whole-machine": [(0, 10, 10, 10), (0, 10, 10, 10), (5, 1, 1, 1), (30, 10, 10, 10)],
}

#: Workload rules the small workloads and the trace slice are run under: the overrun rules and
#: exact estimates (where zero-length reservations and early finishes differ).
RULES: dict[str, dict[str, str]] = {
    "kill": {"overrun": "kill"},
    "extend": {"overrun": "extend"},
    "exact": {"estimate": "exact"},
    "extend-exact": {"overrun": "extend", "estimate": "exact"},
}

#: The Parallel Workloads Archive log the trace slices come from (100 nodes).
KTH_TRACE = "KTH-SP2-1996-2.1-cln.swf.gz"
#: Where the shared traces are when neither the test class nor ``TIERSWEEP_TRACES`` says:
#: ``../shared/traces`` from the current directory (the project's tests run from its root, with
#: the shared folder beside it; the installed package cannot know where a checkout is).
DEFAULT_TRACES = Path("..") / "shared" / "traces"


# -- locating the trace ------------------------------------------------------------------------


def trace_path(name: str = KTH_TRACE, where: str | os.PathLike | None = None) -> Path:
    """The path of trace ``name``: ``where`` itself when it is a file, else in folder ``where``,
    ``$TIERSWEEP_TRACES`` or :data:`DEFAULT_TRACES`.

    Skips the calling test, naming what was looked for, when the file is absent (fails
    instead under ``CI=true``, where the traces must be there).
    """
    folder = Path(where or os.environ.get("TIERSWEEP_TRACES") or DEFAULT_TRACES)
    path = folder if folder.is_file() else folder / name
    if not path.exists():
        message = f"trace {name} not found at {path} (set TIERSWEEP_TRACES to the folder of the traces)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return path


# -- instruments -----------------------------------------------------------------------------


def counting_policy(name: str, *, mixins: Sequence[type] = (), **params: Any) -> BasePolicy:
    """An instance of the policy registered as ``name`` that also counts its lifecycle hooks in
    ``starts``, ``finishes``, ``suspensions``, ``rejects`` and ``moves`` (Counters by job
    index), and has the engine's kills by job in ``kills`` (a kill reaches the policy as a
    suspension, so ``suspensions`` counts kills too). ``params`` go to the constructor;
    ``mixins`` come first in the class's bases (to wrap ``decide``, say).

    It is a subclass that calls every original hook, so its decisions are the policy's own.
    """
    base = POLICIES[name]

    class Counting(*mixins, base):  # type: ignore[misc, valid-type]
        def setup(self, sim):
            self.starts: Counter[int] = Counter()
            self.finishes: Counter[int] = Counter()
            self.suspensions: Counter[int] = Counter()
            self.rejects: Counter[int] = Counter()
            self.moves: Counter[int] = Counter()
            self.kills: Counter[int] = sim.kills_by_job
            super().setup(sim)

        def on_start(self, job):
            super().on_start(job)
            self.starts[job.index] += 1

        def on_finish(self, job):
            super().on_finish(job)
            self.finishes[job.index] += 1

        def on_suspend(self, job):
            super().on_suspend(job)
            self.suspensions[job.index] += 1

        def on_reject(self, job):
            super().on_reject(job)
            self.rejects[job.index] += 1

        def on_move(self, job, tier, nodes):
            super().on_move(job, tier, nodes)
            self.moves[job.index] += 1

    Counting.__name__ = Counting.__qualname__ = f"Counting{base.__name__}"
    return Counting(**params)


def audit(sim: Engine, per_unit: int = 1) -> None:
    """Engine observer: the state after a pass keeps the generic invariants.

    Every running job holds one unit per process, all in one existing tier, and no unit of a
    tier holds more than ``per_unit`` processes (1: one process per VM); rates are in [0, 1];
    progress never exceeds the runtime; a running job started no earlier than its submission.
    """
    tiers = sim.platform.tiers
    held: dict[tuple[int, int], int] = {}
    for job in sim.running.values():
        assert job.state == RUNNING, f"job {job.job_id} is in the running set in state {job.state}"
        assert len(job.nodes) == job.size, f"job {job.job_id} holds {len(job.nodes)} units for {job.size} processes"
        assert 0 <= job.tier < tiers, f"job {job.job_id} runs in tier {job.tier} of {tiers}"
        for node in job.nodes:
            key = (node, job.tier)
            count = held[key] = held.get(key, 0) + 1
            assert count <= per_unit, (
                f"unit {node} of tier {job.tier} holds {count} processes (at most {per_unit}) at t={sim.now:g}"
            )
        assert 0.0 <= job.rate <= 1.0, f"job {job.job_id} runs at rate {job.rate}"
        assert job.progress <= job.runtime * (1 + 1e-12) + 1e-9
        assert job.last_start_time >= job.submit_time, f"job {job.job_id} started before its submission"
    for job in sim.queue.values():
        assert job.state == QUEUED and job.progress <= job.runtime * (1 + 1e-12) + 1e-9


class Auditor:
    """Engine observer for contract runs: :func:`audit` after every pass, plus

    * per tier, the processes held never exceed the units the idle platform had in that tier,
      and the platform's ``free_count`` is exactly those units minus the processes held;
    * the rates seen, per job, integrated over time (:attr:`work`), for the work check: a
      rate only changes at a timestamp with a pass, so the rate after one pass holds until the
      next.

    Args:
        platform: The platform, still idle.
        per_unit: How many processes one unit of a tier holds at most.
        extra: Called with the engine after the generic checks (policy-specific promises).
    """

    def __init__(self, platform: BasePlatform, per_unit: int = 1, extra: Callable[[Engine], None] | None = None) -> None:
        self.units = [platform.free_count(t) for t in range(platform.tiers)]
        self.per_unit = per_unit
        self.extra = extra
        self.passes = 0
        #: Work done per job index, integrated from the observed rates.
        self.work: dict[int, float] = {}
        #: Number of pieces in each job's integral (for the rounding tolerance).
        self.pieces: Counter[int] = Counter()
        #: Every rate each job was seen running at.
        self.rates: dict[int, set[float]] = {}
        self._last: dict[int, tuple[float, float]] = {}

    def __call__(self, sim: Engine) -> None:
        self.passes += 1
        now = sim.now
        audit(sim, self.per_unit)
        platform = sim.platform
        held = [0] * platform.tiers
        for job in sim.running.values():
            held[job.tier] += job.size
        for tier, units in enumerate(self.units):
            assert held[tier] <= units, f"{held[tier]} processes in tier {tier} of {units} units at t={now:g}"
            free = platform.free_count(tier)
            assert free == units - held[tier], (
                f"platform {platform.kind!r} says {free} units of tier {tier} are free at t={now:g}; "
                f"{units} units with {held[tier]} held leave {units - held[tier]}"
            )
        last, work = self._last, self.work
        for index in [i for i in last if i not in sim.running]:
            job = sim.jobs[index]
            since, rate = last.pop(index)
            end = job.finish_time if job.state == FINISHED else now  # finished, or suspended in this pass
            work[index] = work.get(index, 0.0) + rate * (end - since)
            self.pieces[index] += 1
        for index, job in sim.running.items():
            if index in last:
                since, rate = last[index]
                work[index] = work.get(index, 0.0) + rate * (now - since)
                self.pieces[index] += 1
            last[index] = (now, job.rate)
            self.rates.setdefault(index, set()).add(job.rate)
        if self.extra is not None:
            self.extra(sim)

    def close(self, jobs: Sequence[Job]) -> None:
        """Account for the last piece of every job (call once, after the run)."""
        for index, (since, rate) in self._last.items():
            job = jobs[index]
            assert job.state == FINISHED, f"job {job.job_id} was running at the last pass and never finished"
            self.work[index] = self.work.get(index, 0.0) + rate * (job.finish_time - since)
            self.pieces[index] += 1
        self._last.clear()


def default_per_unit(platform: BasePlatform) -> int:
    """Processes one unit of a tier may hold at once: a fat-tree server's slots on embedding
    platforms (a job's units are servers there), else one (a unit is a VM)."""
    if EMBEDDING in platform.capabilities:
        return int(platform.topo.slots)
    return 1


# -- running a spec ----------------------------------------------------------------------------


@dataclass
class ContractRun:
    """One audited run of a spec, through the same path as :func:`~tiersweep.core.simulate.simulate`.

    Attributes:
        spec: The validated spec.
        jobs: The jobs, in their final state.
        platform: The platform, after the run.
        policy: The policy (a :func:`counting_policy` instance).
        engine: The engine (segments recorded).
        auditor: The observer, with the integrated work.
        records: Per-job records, the platform's own columns included (as ``RunResult.jobs``).
    """

    spec: dict[str, Any]
    jobs: list[Job]
    platform: BasePlatform
    policy: BasePolicy
    engine: Engine
    auditor: Auditor
    records: dict[str, np.ndarray] = field(repr=False)

    @property
    def rejected(self) -> list[Job]:
        """The jobs the policy turned away."""
        return [job for job in self.jobs if job.state == REJECTED]


def run_spec(
    spec: Mapping[str, Any],
    *,
    per_unit: Callable[[BasePlatform], int] = default_per_unit,
    extra_audit: Callable[[Engine], None] | None = None,
    policy_mixins: Sequence[type] = (),
    configure_policy: Callable[[BasePolicy], None] | None = None,
    prepare_platform: Callable[[BasePlatform], None] | None = None,
) -> ContractRun:
    """Run ``spec`` with hook counting, an :class:`Auditor` after every pass and segments.

    The workload, platform and policy are built as :func:`~tiersweep.core.simulate.simulate`
    builds them (the determinism test checks that the records are the same).
    ``policy_mixins`` go before the policy's class (see :func:`counting_policy`),
    ``configure_policy`` sees the policy and ``prepare_platform`` the platform before the run.
    """
    spec = validate_spec(spec)
    workload, platform_spec, policy_spec = spec["workload"], spec["platform"], spec["policy"]
    cls = platform_class(platform_spec["kind"])
    built = build_workload(workload, seed=spec["seed"], nodes=cls.job_capacity(platform_spec))
    if "nodes" in platform_spec:
        platform_spec["nodes"] = built.nodes  # resolved from the trace when not given, as simulate does
    platform = make_platform(platform_spec["kind"], platform_spec, seed=spec["seed"])
    if prepare_platform is not None:
        prepare_platform(platform)
    policy = counting_policy(
        policy_spec["name"], mixins=policy_mixins, **{k: v for k, v in policy_spec.items() if k != "name"}
    )
    if configure_policy is not None:
        configure_policy(policy)
    auditor = Auditor(platform, per_unit(platform), extra_audit)
    engine = Engine(
        built.jobs, platform, policy, migration_cost=platform_spec["migration_cost"], observer=auditor, record_segments=True
    )
    engine.run()
    auditor.close(built.jobs)
    records = job_records(built.jobs, engine.kills_by_job)
    records.update(platform.extra_job_records(built.jobs))
    return ContractRun(spec, built.jobs, platform, policy, engine, auditor, records)


def _swf_text(rows: Iterable[Sequence[float]], capacity: int) -> str:
    lines = [f"; MaxProcs: {capacity}", f"; MaxNodes: {capacity}"]
    for number, (submit, runtime, size, requested) in enumerate(rows, 1):
        fields = [-1.0] * len(SWF_FIELDS)
        fields[0], fields[1], fields[3], fields[4], fields[7], fields[8] = number, submit, runtime, size, size, requested
        lines.append(" ".join(f"{v:g}" for v in fields))
    return "\n".join(lines) + "\n"


def scaled_rows(rows: Iterable[Sequence[float]], capacity: int) -> list[tuple[float, float, int, float]]:
    """``rows`` written for :data:`SMALL_CAPACITY` units with sizes scaled to ``capacity`` units
    (at least 1; a whole-machine job stays whole-machine)."""
    return [
        (submit, runtime, max(1, min(capacity, round(size * capacity / SMALL_CAPACITY))), requested)
        for submit, runtime, size, requested in rows
    ]


def small_workload_spec(
    folder: Path,
    name: str,
    rows: Sequence[Sequence[float]],
    platform: Mapping[str, Any],
    policy: Mapping[str, Any],
    workload: Mapping[str, Any] | None = None,
    *,
    scale: bool = True,
    seed: int = 1,
) -> dict[str, Any]:
    """A spec running ``rows`` (written for :data:`SMALL_CAPACITY` units) as an SWF file in
    ``folder``, sizes scaled to the platform's job capacity when it has one (else the file's
    header gives the platform :data:`SMALL_CAPACITY` units)."""
    kind = platform.get("kind", "nodes")
    checked = validate_params("platform", platform, {**COMMON_PLATFORM_PARAMS, **platform_class(kind).params}, {"kind": kind})
    capacity = platform_class(kind).job_capacity(checked)
    if capacity is None:
        capacity = SMALL_CAPACITY
    if scale:
        rows = scaled_rows(rows, capacity)
    text = _swf_text(rows, capacity)
    path = Path(folder) / f"{name}-{hashlib.sha256(text.encode()).hexdigest()[:16]}.swf"
    if not path.exists():
        path.write_text(text)
    return {"seed": seed, "workload": {**(workload or {}), "trace": str(path)}, "platform": dict(platform), "policy": dict(policy)}


# -- the checks --------------------------------------------------------------------------------


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
        tolerance = 1e-9 * max(1.0, job.runtime) + 8 * auditor.pieces[i] * float(np.spacing(max(1.0, abs(job.finish_time))))
        assert abs(done - job.runtime) <= tolerance, (
            f"job {job.job_id} finished at {job.finish_time:g} after {done!r} s of work at the rates it ran at, "
            f"for a runtime of {job.runtime!r}"
        )
        if auditor.rates.get(i) == {1.0} and job.migrations == 0 and policy.suspensions[i] == 0 and policy.moves[i] == 0:
            assert job.finish_time == job.start_time + job.runtime, f"job {job.job_id} ran at rate 1 but not for its runtime"
    platform = run.platform
    for tier, units in enumerate(auditor.units):
        assert platform.free_count(tier) == units, f"tier {tier}: {platform.free_count(tier)} of {units} units free at the end"


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


# -- the policy contract -------------------------------------------------------------------------


def _platform_section(kind: str, params: Mapping[str, Any]) -> dict[str, Any]:
    return {"kind": kind, **params}


def _validated_platform(kind: str, params: Mapping[str, Any]) -> dict[str, Any]:
    cls = platform_class(kind)
    given = {k: v for k, v in params.items() if k != "kind"}
    return validate_params("platform", given, {**COMMON_PLATFORM_PARAMS, **cls.params}, {"kind": kind})


def _instance(kind: str, params: Mapping[str, Any], seed: int) -> BasePlatform:
    """A fresh platform from spec ``params`` (a missing ``nodes`` size: :data:`SMALL_CAPACITY`,
    as the small workloads' header gives it)."""
    checked = _validated_platform(kind, params)
    if "nodes" in checked and checked["nodes"] is None:
        checked["nodes"] = SMALL_CAPACITY
    return make_platform(kind, checked, seed=seed)


class PolicyContract:
    """Contract tests of one policy on one platform configuration; subclass it as ``Test...``.

    Class attributes a subclass sets:
        policy: The policy's registry name.
        policy_params: Its spec parameters.
        platform: The platform kind.
        platform_params: Its spec parameters (a size left unset comes from the workload, as
            in a run: :data:`SMALL_CAPACITY` units for the small workloads, the log's for the trace).
        workload_params: Workload spec keys for every run (e.g. ``bandwidth`` demands).
        trace_params: Workload spec keys for the trace slice only (e.g. a ``load`` to reach).
        may_reject: Whether the policy may turn jobs away (admission control); when False,
            every job must finish.
        trace: The KTH-SP2 log, or its folder (default: see :func:`trace_path`).
        trace_jobs: Jobs in the trace slice of the default run.
        long_trace_jobs: Jobs in the slow trace slice.
        determinism_jobs: Jobs of the synthetic workload of the determinism tests.
        seed: The runs' seed.
    """

    policy: ClassVar[str] = ""
    policy_params: ClassVar[Mapping[str, Any]] = {}
    platform: ClassVar[str] = "nodes"
    platform_params: ClassVar[Mapping[str, Any]] = {}
    workload_params: ClassVar[Mapping[str, Any]] = {}
    trace_params: ClassVar[Mapping[str, Any]] = {}
    may_reject: ClassVar[bool] = False
    trace: ClassVar[str | None] = None
    trace_jobs: ClassVar[int] = 250
    long_trace_jobs: ClassVar[int] = 3000
    determinism_jobs: ClassVar[int] = 150
    seed: ClassVar[int] = 1

    # -- hooks for policy- or platform-specific promises ---------------------------------------
    def audit(self, sim: Engine) -> None:
        """Called after every pass of every contract run, after the generic checks."""

    def check_run(self, run: ContractRun) -> None:
        """Called after every contract run, after the generic checks."""

    def per_unit(self, platform: BasePlatform) -> int:
        """Processes one unit of a tier holds at most (see :func:`default_per_unit`)."""
        return default_per_unit(platform)

    # -- building runs ---------------------------------------------------------------------------
    def platform_section(self) -> dict[str, Any]:
        """The ``platform`` section of this class's specs."""
        return _platform_section(self.platform, self.platform_params)

    def policy_section(self) -> dict[str, Any]:
        """The ``policy`` section of this class's specs."""
        return {"name": self.policy, **self.policy_params}

    def run(self, spec: Mapping[str, Any]) -> ContractRun:
        """Run ``spec`` audited, and check the contract and this class's own promises on it."""
        run = run_spec(spec, per_unit=self.per_unit, extra_audit=self.audit)
        assert_run_contract(run, may_reject=self.may_reject)
        self.check_run(run)
        return run

    def small_spec(self, folder: Path, name: str, rows: Sequence[Sequence[float]], rules: Mapping[str, str], *, scale: bool = True) -> dict[str, Any]:
        """The spec running small workload ``rows`` under workload ``rules``."""
        workload = {**self.workload_params, **rules}
        return small_workload_spec(
            folder, name, rows, self.platform_section(), self.policy_section(), workload, scale=scale, seed=self.seed
        )

    def trace_spec(self, jobs: int, rules: Mapping[str, str]) -> dict[str, Any]:
        """The spec running the first ``jobs`` jobs of the KTH-SP2 log under ``rules``."""
        path = trace_path(KTH_TRACE, self.trace)
        workload = {**self.workload_params, **self.trace_params, **rules, "trace": str(path), "jobs": jobs}
        return {"seed": self.seed, "workload": workload, "platform": self.platform_section(), "policy": self.policy_section()}

    def determinism_spec(self) -> dict[str, Any]:
        """A synthetic workload (random sizes, runtimes and CPU usage from the seed): no file needed."""
        workload = {**self.workload_params, "model": "lublin03", "jobs": self.determinism_jobs, "load": 0.95}
        return {"seed": self.seed, "workload": workload, "platform": self.platform_section(), "policy": self.policy_section()}

    def determinism_digest(self) -> str:
        """:func:`records_digest` of :meth:`determinism_spec`'s run (what a fresh interpreter compares)."""
        return records_digest(simulate(self.determinism_spec()).jobs)

    # -- the tests ----------------------------------------------------------------------------------
    def test_the_pair_is_valid(self):
        """The configuration offers everything the policy requires, by the spec and at run time."""
        assert self.policy in POLICIES, f"policy {self.policy!r} is not registered"
        assert self.platform in PLATFORMS, f"platform {self.platform!r} is not registered"
        checked = _validated_platform(self.platform, self.platform_params)
        assert policy_runs_on(self.policy, self.platform, checked)
        assert policy_runs_on(self.policy, self.platform)
        validate_spec({"workload": {"trace": "unread.swf"}, "platform": self.platform_section(), "policy": self.policy_section()})

    def test_required_members_exist_on_the_platform(self):
        """Every member of every capability the policy requires exists on a platform instance."""
        platform = _instance(self.platform, self.platform_params, self.seed)
        requires = POLICIES[self.policy].requires
        assert requires <= platform.capabilities, f"missing {sorted(requires - platform.capabilities)}"
        missing = [(c, m) for c, m in missing_members(platform) if not c or c in requires]
        assert not missing, f"platform {self.platform!r} lacks (capability, member) {missing}"

    @pytest.mark.parametrize("rules", sorted(RULES))
    @pytest.mark.parametrize("workload", sorted(SMALL_WORKLOADS))
    def test_small_workloads_keep_the_contract(self, tmp_path_factory, workload, rules):
        """The contract on each small corner case under each workload rule."""
        spec = self.small_spec(tmp_path_factory.getbasetemp(), workload, SMALL_WORKLOADS[workload], RULES[rules])
        run = self.run(spec)
        assert len(run.jobs) == len(SMALL_WORKLOADS[workload])

    def test_a_lone_job_starts_at_once(self, tmp_path_factory):
        """Hand-checked: a one-process job arriving to an idle platform with nothing queued
        starts at its submission; so does one arriving after the first finished."""
        rows = [(0, 100, 1, 100), (1000, 50, 1, 60)]
        run = self.run(self.small_spec(tmp_path_factory.getbasetemp(), "lone", rows, {}, scale=False))
        assert [job.start_time for job in run.jobs] == [0, 1000]
        assert run.jobs[0].finish_time >= 100 and run.jobs[1].finish_time >= 1050

    @pytest.mark.parametrize("rules", ["kill", "extend", "exact"])
    def test_a_trace_slice_keeps_the_contract(self, rules):
        """The contract on the first :attr:`trace_jobs` jobs of KTH-SP2."""
        run = self.run(self.trace_spec(self.trace_jobs, RULES[rules]))
        assert len(run.jobs) > 0

    @pytest.mark.slow
    @pytest.mark.parametrize("rules", ["kill", "extend", "exact"])
    def test_a_long_trace_slice_keeps_the_contract(self, rules):
        """The contract on the first :attr:`long_trace_jobs` jobs of KTH-SP2."""
        self.run(self.trace_spec(self.long_trace_jobs, RULES[rules]))

    def test_the_same_seed_gives_the_same_records(self):
        """Twice in this process, and through ``simulate``: bit-identical per-job records."""
        spec = self.determinism_spec()
        first = run_spec(spec, per_unit=self.per_unit)
        assert_run_contract(first, may_reject=self.may_reject)
        second = simulate(spec).jobs
        assert_records_identical(first.records, second, "audited run vs simulate")
        assert records_digest(second) == self.determinism_digest()

    @pytest.mark.slow
    def test_the_same_seed_gives_the_same_records_in_a_fresh_interpreter(self):
        """A freshly started interpreter (another hash seed) computes the same digest."""
        theirs = fresh_interpreter_digests([type(self)])
        assert theirs[class_key(type(self))] == self.determinism_digest()


# -- the platform contract -----------------------------------------------------------------------


def driving_policy(kind: str, platform_params: Mapping[str, Any]) -> str:
    """The first registered policy (registration order) that runs on ``kind`` with
    ``platform_params``: simple by convention (FCFS-like policies are registered first)."""
    checked = _validated_platform(kind, platform_params)
    for name in POLICIES:
        if policy_runs_on(name, kind, checked):
            return name
    raise LookupError(f"no registered policy runs on platform {kind!r} with {dict(platform_params)}")


def _public_state(platform: BasePlatform) -> tuple[list[int], bytes | str]:
    """What check_start must leave alone: the free units per tier and the public attributes
    (private caches, such as a memo of the last check, may change)."""
    free = [platform.free_count(t) for t in range(platform.tiers)]
    public = {k: v for k, v in vars(platform).items() if not k.startswith("_") and not callable(v)}
    try:
        return free, pickle.dumps(public)
    except Exception:  # an attribute that cannot be pickled: its repr will do
        return free, repr(public)


class _Reports:
    """Wraps a platform instance's start, move, release and rate_changes to check every report
    independently of the engine."""

    def __init__(self, platform: BasePlatform) -> None:
        self.starts = self.releases = self.rates = 0
        start, move, release, changes = platform.start, platform.move, platform.release, platform.rate_changes

        def checked_start(job, tier, nodes):
            free = platform.free_count(tier)
            held, rate = start(job, tier, nodes)
            assert len(held) == job.size, f"start gave job {job.job_id} of size {job.size} {len(held)} units"
            assert 0.0 <= rate <= 1.0, f"start gave job {job.job_id} rate {rate!r}"
            assert platform.free_count(tier) == free - job.size, "free_count did not drop by the job's size on start"
            self.starts += 1
            return held, rate

        def checked_move(job, tier, nodes):
            held, rate = move(job, tier, nodes)
            assert len(held) == job.size and 0.0 <= rate <= 1.0
            return held, rate

        def checked_release(job):
            free = platform.free_count(job.tier)
            release(job)
            assert platform.free_count(job.tier) == free + job.size, (
                f"release of job {job.job_id} (size {job.size}) freed {platform.free_count(job.tier) - free} units"
            )
            self.releases += 1

        def checked_changes():
            reported = list(changes())
            for job, rate in reported:
                assert 0.0 <= rate <= 1.0, f"rate_changes gave job {job.job_id} rate {rate!r}"
                self.rates += 1
            return reported

        platform.start, platform.move, platform.release, platform.rate_changes = (
            checked_start,
            checked_move,
            checked_release,
            checked_changes,
        )


class ProbingMixin:
    """Policy mixin (see :func:`counting_policy`): before each start the policy makes, the
    platform's ``check_start`` is probed: it says yes to the start, no to a start in a tier that
    does not exist and (placement platforms) to one more unit than is free, yes to exactly the
    free units, and none of these calls changes the platform. With :attr:`move_each`, after
    each pass the first running job not yet moved is moved to its own units and tier.
    :attr:`probes` collects what was probed."""

    probes: list[str]
    move_each: bool = False

    def decide(self, sim):
        platform = sim.platform
        for decision in super().decide(sim):
            if type(decision) is Start:
                self._probe(sim, platform, decision)
            yield decision
        if self.move_each:
            for job in list(sim.running.values()):
                if job.index not in self.moved:
                    self.moved.add(job.index)
                    before = _public_state(platform)
                    reason = platform.check_move(job, job.tier, list(job.nodes))
                    assert _public_state(platform) == before, "check_move changed the platform"
                    self.probes.append(f"move:{reason is None}")
                    yield Move(job, job.tier, list(job.nodes))
                    break

    def _probe(self, sim: Engine, platform: BasePlatform, decision: Start) -> None:
        job, tier, nodes = decision.job, decision.tier, decision.nodes
        before = _public_state(platform)
        assert platform.check_start(job, tier, nodes) is None, "check_start refused the policy's start"
        assert platform.check_start(job, tier, nodes) is None, "check_start changed its mind"
        nowhere = platform.check_start(job, platform.tiers, nodes)
        assert isinstance(nowhere, str) and nowhere, "check_start accepted a tier that does not exist"
        if PLACEMENT in platform.capabilities:
            free = platform.free_count(tier)
            bigger = Job(len(sim.jobs), -1, sim.now, free + 1, 1.0)
            assert isinstance(platform.check_start(bigger, tier, None), str), (
                f"check_start accepted {free + 1} processes with {free} units free"
            )
            fits = Job(len(sim.jobs), -1, sim.now, free, 1.0)
            assert platform.check_start(fits, tier, None) is None, f"check_start refused {free} processes with {free} units free"
        else:
            assert isinstance(platform.check_start(job, tier, None), str), "a platform without placement chose units itself"
        assert _public_state(platform) == before, "check_start changed the platform"
        self.probes.append("start")


class PlatformContract:
    """Contract tests of one platform configuration; subclass it as ``Test...``.

    Class attributes a subclass sets:
        platform: The platform kind.
        platform_params: Its spec parameters (a size left unset comes from the workload).
        policy: The policy driving it (default: :func:`driving_policy`).
        policy_params: Its spec parameters.
        workload_params: Workload spec keys for every run.
        trace: The KTH-SP2 log, or its folder (default: see :func:`trace_path`).
        trace_jobs: Jobs in the trace slice.
        seed: The runs' seed.
    """

    platform: ClassVar[str] = ""
    platform_params: ClassVar[Mapping[str, Any]] = {}
    policy: ClassVar[str | None] = None
    policy_params: ClassVar[Mapping[str, Any]] = {}
    workload_params: ClassVar[Mapping[str, Any]] = {}
    trace: ClassVar[str | None] = None
    trace_jobs: ClassVar[int] = 150
    seed: ClassVar[int] = 1

    def per_unit(self, platform: BasePlatform) -> int:
        """Processes one unit of a tier holds at most (see :func:`default_per_unit`)."""
        return default_per_unit(platform)

    def policy_name(self) -> str:
        """The driving policy."""
        return self.policy or driving_policy(self.platform, self.platform_params)

    def instance(self) -> BasePlatform:
        """A fresh instance from :attr:`platform_params` (a missing ``nodes`` size:
        :data:`SMALL_CAPACITY`)."""
        return _instance(self.platform, self.platform_params, self.seed)

    def run_probed(self, spec: Mapping[str, Any], *, move: bool = False) -> tuple[ContractRun, list[str], _Reports]:
        """Run ``spec`` with the probing policy and the platform's reports checked."""
        probes: list[str] = []
        reports: list[_Reports] = []

        def configure(policy: Any) -> None:
            policy.probes, policy.move_each, policy.moved = probes, move, set()

        run = run_spec(
            spec,
            per_unit=self.per_unit,
            policy_mixins=(ProbingMixin,),
            configure_policy=configure,
            prepare_platform=lambda platform: reports.append(_Reports(platform)),
        )
        return run, probes, reports[0]

    def specs(self, folder: Path) -> list[dict[str, Any]]:
        """The small workloads as specs for this platform."""
        policy = {"name": self.policy_name(), **self.policy_params}
        return [
            small_workload_spec(
                folder, name, rows, _platform_section(self.platform, self.platform_params), policy, self.workload_params, seed=self.seed
            )
            for name, rows in sorted(SMALL_WORKLOADS.items())
        ]

    # -- the tests ----------------------------------------------------------------------------------
    def test_declarations_are_consistent_and_registered(self):
        """``kind``, ``params`` and ``CAPABILITIES`` are declared, known and registered."""
        cls = platform_class(self.platform)
        assert issubclass(cls, BasePlatform)
        assert isinstance(cls.kind, str) and cls.kind == self.platform and PLATFORMS[cls.kind] is cls
        assert register_platform(cls) is cls  # registering it again changes nothing
        assert PLATFORMS[cls.kind] is cls
        for key, param in cls.params.items():
            assert isinstance(param, Param), f"parameter {key!r} is not a Param"
            assert key not in COMMON_PLATFORM_PARAMS and key != "kind"
            if param.default is not None:
                param.validate(f"platform.{key}", param.default)  # a default passes its own check
        assert isinstance(cls.CAPABILITIES, frozenset)
        unknown = cls.CAPABILITIES - set(CAPABILITIES)
        assert not unknown, f"undeclared capabilities {sorted(unknown)}"
        checked = _validated_platform(self.platform, self.platform_params)
        assert repr(cls.kind) in cls.label(checked)
        platform = self.instance()
        assert isinstance(platform.capacity, int) and platform.capacity > 0
        assert isinstance(platform.tiers, int) and platform.tiers >= 1

    def test_capabilities_narrow_the_declared_ones(self):
        """``capabilities_of`` the defaults and of these parameters are subsets of
        ``CAPABILITIES``, and the instance offers what ``capabilities_of`` its parameters says."""
        cls = platform_class(self.platform)
        defaults = _validated_platform(self.platform, {})
        assert cls.capabilities_of(defaults) <= cls.CAPABILITIES
        checked = _validated_platform(self.platform, self.platform_params)
        assert cls.capabilities_of(checked) <= cls.CAPABILITIES
        platform = self.instance()
        assert platform.capabilities == cls.capabilities_of(checked)
        assert platform.tracks_time == (TIME_TRACKING in platform.capabilities)

    def test_offered_capabilities_have_their_members(self):
        """Every member of every platform, and of every capability the instance offers, exists
        (the protocols of :mod:`tiersweep.core.capabilities`)."""
        platform = self.instance()
        missing = missing_members(platform)
        assert not missing, f"platform {self.platform!r} lacks (capability, member) {missing}"

    def test_job_capacity_agrees_with_the_instance(self):
        """``job_capacity`` is the units an idle instance has free (in tier 0); on a platform
        that places jobs itself, a job of that size can start there and one more cannot."""
        cls = platform_class(self.platform)
        checked = _validated_platform(self.platform, self.platform_params)
        platform = self.instance()
        capacity = cls.job_capacity(checked)
        if capacity is None:
            capacity = SMALL_CAPACITY  # the size then comes from the workload; instance() used this
        assert platform.free_count(0) == capacity
        for tier in range(platform.tiers):
            assert platform.free_count(tier) == capacity
        if PLACEMENT in platform.capabilities:
            assert platform.check_start(Job(0, 1, 0.0, capacity, 1.0), 0, None) is None
            assert isinstance(platform.check_start(Job(0, 1, 0.0, capacity + 1, 1.0), 0, None), str)

    def test_check_start_has_no_side_effect_and_agrees_with_start(self, tmp_path_factory):
        """Probed before every start the driving policy makes, on every small workload: the
        answers are consistent and change nothing; each start then holds ``size`` units and
        reports a rate in [0, 1]; each release frees them; the platform ends idle."""
        finished = 0
        for spec in self.specs(tmp_path_factory.getbasetemp()):
            run, probes, reports = self.run_probed(spec)
            done = sum(job.state == FINISHED for job in run.jobs)
            assert probes.count("start") == reports.starts >= done
            assert reports.releases == reports.starts
            assert_run_contract(run, may_reject=True)
            finished += done
        assert finished > 0, "the driving policy finished no job: nothing was probed"

    def test_reports_hold_on_a_trace_slice(self):
        """The same checks on the first :attr:`trace_jobs` jobs of KTH-SP2."""
        path = trace_path(KTH_TRACE, self.trace)
        spec = {
            "seed": self.seed,
            "workload": {**self.workload_params, "trace": str(path), "jobs": self.trace_jobs},
            "platform": _platform_section(self.platform, self.platform_params),
            "policy": {"name": self.policy_name(), **self.policy_params},
        }
        run, probes, reports = self.run_probed(spec)
        assert reports.releases == reports.starts == probes.count("start") > 0
        assert_run_contract(run, may_reject=True)

    def test_moves_need_the_moves_capability(self, tmp_path_factory):
        """Without ``moves`` the engine refuses a move with PolicyError (``check_move`` says
        why); with it, a move of a job to its own units is accepted and the run keeps the
        contract."""
        spec = self.specs(tmp_path_factory.getbasetemp())[0]
        platform = self.instance()
        if MOVES in platform.capabilities:
            run, probes, reports = self.run_probed(spec, move=True)
            assert "move:True" in probes and "move:False" not in probes
            assert_run_contract(run, may_reject=True)
        else:
            with pytest.raises(PolicyError, match="cannot move job"):
                self.run_probed(spec, move=True)
