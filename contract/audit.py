"""The contract suite's instruments: hook-counting policies, the auditor that checks the state
after every policy pass, the probes of a platform's answers, and the audited run of a spec
(through :func:`tiersweep.core.simulate.assemble`, the one assembly of a run)."""

from __future__ import annotations

import pickle
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from ..core.capabilities import EMBEDDING, PLACEMENT
from ..core.decisions import Move, Start
from ..core.engine import Engine
from ..core.jobs import FINISHED, QUEUED, REJECTED, RUNNING, Job
from ..core.platforms import platform_class
from ..core.platforms.base import BasePlatform
from ..core.policies import POLICIES
from ..core.policies.base import BasePolicy
from ..core.simulate import assemble
from ..core.spec import plan_run, validate_platform
from .workloads import SMALL_CAPACITY

__all__ = [
    "counting_policy",
    "audit",
    "Auditor",
    "default_per_unit",
    "ContractRun",
    "run_spec",
    "platform_section",
    "idle_platform",
    "ProbingMixin",
    "Reports",
]


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

    def __init__(
        self, platform: BasePlatform, per_unit: int = 1, extra: Callable[[Engine], None] | None = None
    ) -> None:
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

    The run is planned and assembled as :func:`~tiersweep.core.simulate.simulate` does it
    (:func:`~tiersweep.core.spec.plan_run`, :func:`~tiersweep.core.simulate.assemble`), the
    policy a :func:`counting_policy` of the planned one. ``policy_mixins`` go before the
    policy's class (see :func:`counting_policy`), ``configure_policy`` sees the policy and
    ``prepare_platform`` the platform before the run.
    """
    plan = plan_run(spec)
    run = assemble(plan, policy_factory=partial(counting_policy, plan.policy_name, mixins=policy_mixins))
    if prepare_platform is not None:
        prepare_platform(run.platform)
    if configure_policy is not None:
        configure_policy(run.policy)
    auditor = Auditor(run.platform, per_unit(run.platform), extra_audit)
    engine = run.engine(observer=auditor, record_segments=True)
    engine.run()
    jobs = run.workload.jobs
    auditor.close(jobs)
    return ContractRun(run.plan.spec, jobs, run.platform, run.policy, engine, auditor, run.records(engine))


def platform_section(kind: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """The ``platform`` section of a spec of ``kind`` with ``params``."""
    return {"kind": kind, **params}


def idle_platform(kind: str, params: Mapping[str, Any], seed: int) -> BasePlatform:
    """A fresh platform from spec ``params`` (a missing ``nodes`` size: :data:`SMALL_CAPACITY`,
    as the small workloads' header gives it)."""
    checked = validate_platform(platform_section(kind, params))
    cls = platform_class(kind)
    own = {key: checked[key] for key in cls.params}
    if "nodes" in own and own["nodes"] is None:
        own["nodes"] = SMALL_CAPACITY
    return cls(**own, seed=seed)


def _public_state(platform: BasePlatform) -> tuple[list[int], bytes | str]:
    """What check_start must leave alone: the free units per tier and the public attributes
    (private caches, such as a memo of the last check, may change)."""
    free = [platform.free_count(t) for t in range(platform.tiers)]
    public = {k: v for k, v in vars(platform).items() if not k.startswith("_") and not callable(v)}
    try:
        return free, pickle.dumps(public)
    except Exception:  # an attribute that cannot be pickled: its repr will do
        return free, repr(public)


class Reports:
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
            assert platform.check_start(fits, tier, None) is None, (
                f"check_start refused {free} processes with {free} units free"
            )
        else:
            chose = platform.check_start(job, tier, None)
            assert isinstance(chose, str), "a platform without placement chose units itself"
        assert _public_state(platform) == before, "check_start changed the platform"
        self.probes.append("start")
