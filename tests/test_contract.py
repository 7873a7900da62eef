"""Policy-specific guarantees of the backfilling family, and the nodes helpers other tests reuse.

The generic policy contract (capacity at every instant, each job finished exactly once, no
start before submission, work conserved, determinism, on small corner cases and on KTH-SP2)
lives in :mod:`tiersweep.contract` and runs for every valid (policy, platform) pair in
``test_conformance.py``. What stays here holds for particular policies only, with exact
estimates (``estimate: exact``, so no job ends before its estimated end):

* EASY: the queue head never starts later than the shadow time computed (independently, from
  the running jobs' estimated ends) the first time it was the blocked head;
* conservative: no job starts later than its first reservation. (With inexact estimates this
  is *not* a theorem: an early finish lets a job ahead move into a later job's slot.)
* FCFS order (``fcfs`` starts jobs in queue order), and the consolidating policies'
  per-pass promises (:func:`audit_consolidation`), which ``test_conformance.py`` adds to the
  generated contract classes.

The helpers here (:func:`assert_contract`, :func:`audit`, :func:`run_counted`, the recorders)
are reused by ``test_properties.py``, ``test_consolidation.py`` and ``test_tiers.py``; the
generic ones are re-exported from :mod:`tiersweep.contract`.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from unittest import mock

import numpy as np
import pytest

import tiersweep.core.policies.backfill as backfill_module
from helpers import make_jobs
from tiersweep.contract.audit import audit as generic_audit
from tiersweep.contract.audit import counting_policy
from tiersweep.contract.checks import assert_capacity_respected
from tiersweep.contract.checks import assert_contract as generic_assert_contract
from tiersweep.contract.workloads import SMALL_WORKLOADS
from tiersweep.core.capabilities import TIERS
from tiersweep.core.engine import Engine
from tiersweep.core.jobs import Job
from tiersweep.core.metrics import job_records
from tiersweep.core.platforms import Nodes
from tiersweep.core.policies import POLICIES, BasePolicy, Consolidation
from tiersweep.core.policies.backfill import Conservative, Easy
from tiersweep.core.spec import policy_runs_on
from tiersweep.core.workloads.rules import jobs_from_records
from tiersweep.core.workloads.swf import header_int, read_swf

#: Every registered policy that runs on the ``nodes`` platform.
POLICY_NAMES = sorted(name for name in POLICIES if policy_runs_on(name, "nodes"))
KTH_JOBS = 3000

# Re-exported for the test modules that import them from here.
__all__ = [
    "POLICY_NAMES",
    "SMALL_WORKLOADS",
    "assert_capacity_respected",
    "counting_policy",
    "audit",
    "assert_contract",
]


# -- instruments -----------------------------------------------------------------------------


def audit(sim: Engine) -> None:
    """Engine observer: the generic invariants (:func:`tiersweep.contract.audit.audit`: one
    process per VM, rates in [0, 1], progress within the runtime) and the consolidating
    policies' promises (:func:`audit_consolidation`) after every pass."""
    generic_audit(sim)
    audit_consolidation(sim)


def audit_consolidation(sim: Engine) -> None:
    """The consolidating policies' promises after a pass (nothing for other policies):

    * no background process on a node whose higher tiers are estimated at or above the
      threshold;
    * CMBF and CMCBF: no queued job could have been dispatched: its size exceeds the idle
      foreground VMs plus those held by later arrivals (paper 000's CMBF property); AMBF and
      AMCBF promise this for the head only, the first job of the queue and the background
      jobs by arrival (Algorithm 2, line 2): a background head is not left below a foreground
      it could reach. A background job evicted in this pass by a later arrival's foreground
      placement waits for the next pass.
    """
    platform = sim.platform
    policy = sim.policy
    if isinstance(policy, Consolidation):
        by_vm = {(node, job.tier): (job, p) for job in sim.running.values() for p, node in enumerate(job.nodes)}
        for (node, tier), (job, _) in by_vm.items():
            if tier == 0:
                continue
            above = sum(by_vm[(node, t)][0].cpu_est[by_vm[(node, t)][1]] for t in range(tier) if (node, t) in by_vm)
            assert above < policy.bg_threshold, (
                f"job {job.job_id} runs in tier {tier} of node {node} whose higher tiers are "
                f"estimated at {above:.3f} >= {policy.bg_threshold} (t={sim.now:g})"
            )
        background = [job for job in sim.running.values() if job.tier > 0]
        if policy.preemption in ("all", "head") and (sim.queue or background):
            idle = platform.free_count(0)
            fg = [job for job in sim.running.values() if job.tier == 0]
            if policy.preemption == "all":
                checked = list(sim.queue.values())
            else:
                checked = [min([*sim.queue.values(), *background], key=lambda job: job.index)]
            for job in checked:
                if job.index in policy.evicted:
                    continue  # evicted by a later arrival's placement: its turn is the next pass
                later = sum(other.size for other in fg if other.index > job.index)
                assert job.size > idle + later, (
                    f"{policy.name}: job {job.job_id} (size {job.size}) left "
                    f"{'queued' if job.tier is None or job.tier == 0 else 'in the background'} at t={sim.now:g} "
                    f"with {idle} idle foreground VMs and {later} held by later arrivals"
                )


def textbook_shadow(now: float, free: int, size: int, running: Sequence[Job]) -> float:
    """The earliest estimated end (never before ``now``) at which ``size`` processors are free.

    Computed from scratch from the running jobs' start times and estimates (non-preemptive jobs:
    estimated end = start + estimate), not from any index the policy keeps.
    """
    for end, held in sorted((max(now, j.last_start_time + j.estimate), j.size) for j in running):
        free += held
        if free >= size:
            return end
    return math.inf


class ShadowRecordingEasy(Easy):
    """EASY that records, for each job, the shadow time of the first pass it was the blocked head."""

    def setup(self, sim):
        super().setup(sim)
        self.sim = sim
        self.first_shadow: dict[int, float] = {}

    def _backfill(self, now, free, waiting, first):
        head = waiting[first]
        if head.index not in self.first_shadow:
            sim = self.sim
            self.first_shadow[head.index] = textbook_shadow(
                now, sim.platform.free_count(), head.size, list(sim.running.values())
            )
        yield from super()._backfill(now, free, waiting, first)


class ReservationLog:
    """First reservation time of each job, filled by :func:`recording_reservations`."""

    def __init__(self) -> None:
        self.first: dict[int, float] = {}
        self.asking: Job | None = None


class ReservationRecordingConservative(Conservative):
    """Conservative that tells ``log`` which job is asking for a reservation."""

    def __init__(self, log: ReservationLog) -> None:
        super().__init__()
        self.log = log

    def reserves(self, job, now, reserved):
        answer = super().reserves(job, now, reserved)
        self.log.asking = job if answer else None
        return answer


@contextmanager
def recording_reservations(log: ReservationLog) -> Iterator[None]:
    """Patch the availability profile so that each reservation's start is logged for its job.

    The generic backfilling path asks :meth:`Profile.earliest` right after ``reserves`` said
    yes; the answer is the job's reservation.
    """
    original = backfill_module.Profile

    class RecordingProfile(original):  # type: ignore[misc, valid-type]
        def earliest(self, size, duration):
            start = super().earliest(size, duration)
            job, log.asking = log.asking, None
            if job is not None:
                log.first.setdefault(job.index, start)
            return start

    with mock.patch.object(backfill_module, "Profile", RecordingProfile):
        yield


# -- the checks ------------------------------------------------------------------------------


def assert_contract(
    records: Mapping[str, np.ndarray],
    capacity: int,
    policy_name: str,
    policy: BasePolicy | None = None,
) -> None:
    """The generic contract on per-job records (:func:`tiersweep.contract.checks.assert_contract`),
    plus FCFS order under ``fcfs``."""
    generic_assert_contract(records, capacity, policy)
    if policy_name == "fcfs":
        assert (np.diff(records["start_time"]) >= 0).all(), "fcfs started a job before one ahead of it in the queue"


def fewest_tiers(name: str) -> int:
    """The fewest tiers policy ``name`` runs on (two for the consolidating members)."""
    return 2 if TIERS in POLICIES[name].requires else 1


def run_counted(
    jobs: list[Job], capacity: int, name: str, *, tiers: int | None = None, migration_cost: float = 0.0, **params
) -> BasePolicy:
    """Run ``jobs`` under a counting instance of policy ``name``, auditing every timestamp;
    return the policy.

    Segments are recorded so that the platform keeps track of which units each job holds
    (a platform may keep only counts when nobody asks which), which the audit checks."""
    tiers = fewest_tiers(name) if tiers is None else tiers
    policy = counting_policy(name, **params)
    Engine(
        jobs, Nodes(capacity, tiers), policy, migration_cost=migration_cost, observer=audit, record_segments=True
    ).run()
    return policy


# -- small fixed workloads -------------------------------------------------------------------

# -- the KTH-SP2 log -------------------------------------------------------------------------


def kth_jobs(kth_path, *, drop_zero_runtime: bool = False, **rules) -> tuple[list[Job], int]:
    """The first KTH_JOBS jobs of the log, built as :func:`simulate` builds them."""
    log = read_swf(str(kth_path))
    capacity = header_int(log.header, "MaxProcs", "MaxNodes")
    records = log.records
    if drop_zero_runtime:
        records = records[records[:, 3] != 0]
    jobs, _ = jobs_from_records(records, capacity=capacity, jobs=KTH_JOBS, **rules)
    return jobs, capacity


@pytest.mark.slow
def test_kth_without_zero_runtimes_keeps_the_contract_with_exact_estimates(kth_path):
    # Zero-runtime jobs with exact estimates once broke reservations (the zero-estimate bug);
    # without them, every policy must keep the contract on the first 3000 jobs.
    for name in POLICY_NAMES:
        jobs, capacity = kth_jobs(kth_path, drop_zero_runtime=True, estimate="exact")
        policy = run_counted(jobs, capacity, name)
        assert_contract(job_records(jobs), capacity, name, policy)


# -- policy-specific guarantees (exact estimates) --------------------------------------------


def assert_easy_head_never_delayed(jobs: list[Job], capacity: int) -> int:
    """Run EASY with shadow recording; check each head starts by its first shadow."""
    policy = ShadowRecordingEasy()
    Engine(jobs, Nodes(capacity), policy).run()
    late = [
        (jobs[i].job_id, shadow, jobs[i].start_time)
        for i, shadow in policy.first_shadow.items()
        if jobs[i].start_time > shadow
    ]
    assert not late, f"heads started after their shadow (job, shadow, start): {late[:5]}"
    return len(policy.first_shadow)


def assert_conservative_never_delays(jobs: list[Job], capacity: int) -> int:
    """Run conservative with reservation recording; check no job starts after its first reservation."""
    log = ReservationLog()
    with recording_reservations(log):
        Engine(jobs, Nodes(capacity), ReservationRecordingConservative(log)).run()
    late = [
        (jobs[i].job_id, reserved, jobs[i].start_time)
        for i, reserved in log.first.items()
        if jobs[i].start_time > reserved
    ]
    assert not late, f"jobs started after their first reservation (job, reservation, start): {late[:5]}"
    return len(log.first)


def test_easy_head_never_starts_after_its_shadow_on_kth(kth_path):
    jobs, capacity = kth_jobs(kth_path, estimate="exact")
    assert assert_easy_head_never_delayed(jobs, capacity) > 100  # the check is not vacuous


def test_conservative_never_starts_a_job_after_its_first_reservation_on_kth(kth_path):
    jobs, capacity = kth_jobs(kth_path, drop_zero_runtime=True, estimate="exact")
    assert assert_conservative_never_delays(jobs, capacity) > 100  # the check is not vacuous


def test_conservative_guarantee_small_hand_case():
    # Hand case of test_schedules: B reserved at 100, C at 200, D at 300; each starts then.
    jobs = make_jobs([(0, 100, 6, 100), (1, 100, 8, 100), (2, 100, 9, 100), (3, 300, 2, 300)], 10, estimate="exact")
    log = ReservationLog()
    with recording_reservations(log):
        Engine(jobs, Nodes(10), ReservationRecordingConservative(log)).run()
    assert log.first == {1: 100, 2: 200, 3: 300}
    assert [j.start_time for j in jobs] == [0, 100, 200, 300]


@pytest.mark.parametrize("name", ["conservative", "selective"])
def test_zero_estimate_backfill_takes_its_processors_minimal(name):
    # 10 procs. A (6 procs) runs [0,100). B (8) is blocked. At t=2, C (4 procs, runtime 0, no
    # request -> estimate 0) fits now and starts at 2, ending at 2. D (4 procs, 50 s) arrives
    # at 2 too: the 4 free processors are C's in this pass, so D must wait for C's finish at 2
    # (same instant, next pass) -- it starts at 2 after C, or later; never while C holds them.
    # Expected (fits at 2 after C ends, ends 52 <= B's reservation at 100): starts [0, 100, 2, 2].
    rows = [(0, 100, 6, 100), (1, 100, 8, 100), (2, 0, 4, -1), (2, 50, 4, 50)]
    jobs = make_jobs(rows, 10)
    policy = run_counted(jobs, 10, name, **({"xfactor_threshold": 1.0} if name == "selective" else {}))
    assert_contract(job_records(jobs), 10, name, policy)
    assert [j.start_time for j in jobs] == [0, 100, 2, 2]


def test_conservative_zero_estimate_reservation_is_not_taken_by_a_backfill():
    # 10 procs, all at t=0, exact estimates. J1 (3 procs, 0 s) starts and ends at 0; J2 (10
    # procs, 0 s) is blocked by J1 until J1's finish at 0 (same instant, next pass): it reserves
    # the whole machine at 0+ (J1 is "expected next"). J3 (4 procs, 7 s) would overlap that
    # reservation, so it must not start before J2; correct: J2 starts at 0 (after J1's finish),
    # then J3 at 0 (after J2's). With the bug J2's zero-length reservation takes nothing, J3 is
    # backfilled at once and J2 waits until J3 ends at 7 -- later than its reservation.
    jobs = make_jobs([(0, 0, 3, 1), (0, 0, 10, 1), (0, 7, 4, 9)], 10, estimate="exact")
    assert assert_conservative_never_delays(jobs, 10) >= 1
    assert [j.start_time for j in jobs] == [0, 0, 0]
