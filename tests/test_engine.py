"""Engine semantics (core/engine.py), with tiny hand-written policies and platforms.

* Event order at one timestamp: finishes, then restores, then arrivals, then one policy pass;
  so a job arriving exactly when another finishes sees the freed nodes and starts at once.
* Decision checking: a policy that starts a job twice, starts a job too large for the free
  nodes, suspends a job that is not running or yields something that is not a decision gets a
  :class:`PolicyError` naming the policy (and the job); so does one that leaves jobs queued
  with nothing left to happen.
* Rates: when the platform reports a rate change the running job's progress is brought up to
  date and its finish is rescheduled exactly; the stale finish event is skipped.
* Suspension and restore: progress is kept, a restart counts one migration, and with
  ``migration_cost`` the job holds its nodes for that long before progressing again.

Every expected time is worked out by hand in the comments.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np
import pytest

from helpers import make_jobs
from tiersweep.core.capabilities import NODE_VMS
from tiersweep.core.engine import Engine
from tiersweep.core.errors import PlatformError, PolicyError
from tiersweep.core.jobs import FINISHED, RUNNING
from tiersweep.core.platforms import Nodes
from tiersweep.core.policies import BasePolicy, Start, Suspend, make_policy


class StartInOrder(BasePolicy):
    """Starts queued jobs in queue order while they fit (FCFS without the backfill machinery)."""

    name = "start-in-order"

    def decide(self, sim):
        for job in list(sim.queue.values()):
            if job.size > sim.platform.free_count():
                return
            yield Start(job)


# -- event order at one timestamp ------------------------------------------------------------


@pytest.mark.parametrize("policy", [StartInOrder(), make_policy("fcfs"), make_policy("easy")], ids=lambda p: p.name)
def test_a_job_arriving_when_another_finishes_starts_at_once(policy):
    # 10 nodes. A holds all 10 on [0, 100). B (10 nodes) arrives at 100: A's finish at 100 is
    # processed before B's arrival, in one pass, so B starts at 100 (not at some later event).
    jobs = make_jobs([(0, 100, 10, 100), (100, 50, 10, 50)], 10)
    engine = Engine(jobs, Nodes(10), policy)
    engine.run()
    assert [j.start_time for j in jobs] == [0, 100]
    assert [j.finish_time for j in jobs] == [100, 150]
    # Passes at 0 (A arrives), 100 (A finishes + B arrives: one pass), 150 (B finishes).
    assert engine.passes == 3
    assert engine.now == 150


class Observer(StartInOrder):
    """StartInOrder that records, when each job is submitted, the state of job 0."""

    name = "observer"

    def setup(self, sim):
        self.sim = sim
        self.seen_at_submit = {}

    def on_submit(self, job):
        first = self.sim.jobs[0]
        self.seen_at_submit[job.index] = (self.sim.now, first.state, first.rate)


def test_finishes_are_processed_before_arrivals_at_the_same_time():
    jobs = make_jobs([(0, 100, 10, 100), (100, 50, 10, 50)], 10)
    policy = Observer()
    Engine(jobs, Nodes(10), policy).run()
    assert policy.seen_at_submit[1] == (100, FINISHED, 0.0)


def test_zero_runtime_job_finishes_at_its_start_and_frees_nodes_at_that_instant():
    # A (10 nodes, 0 s) starts at 5 and finishes at 5; B (10 nodes) queued behind it starts at 5
    # in a second pass at the same timestamp.
    jobs = make_jobs([(5, 0, 10, 10), (5, 30, 10, 30)], 10)
    engine = Engine(jobs, Nodes(10), StartInOrder())
    engine.run()
    assert [(j.start_time, j.finish_time) for j in jobs] == [(5, 5), (5, 35)]
    assert engine.passes == 3  # 5 (arrivals), 5 (A's finish), 35 (B's finish)


# -- decision checking -----------------------------------------------------------------------


class StartTwice(BasePolicy):
    name = "start-twice"

    def decide(self, sim):
        if sim.queue:
            job = next(iter(sim.queue.values()))
            yield Start(job)
            yield Start(job)


class StartEverything(BasePolicy):
    name = "start-everything"

    def decide(self, sim):
        for job in list(sim.queue.values()):
            yield Start(job)


class SuspendQueued(BasePolicy):
    name = "suspend-queued"

    def decide(self, sim):
        for job in list(sim.queue.values()):
            yield Suspend(job)


class Idle(BasePolicy):
    name = "idle"

    def decide(self, sim):
        return iter(())


class Yields(BasePolicy):
    """Yields ``make(job)`` for the first queued job."""

    name = "yields-junk"

    def __init__(self, make):
        self.make = make

    def decide(self, sim):
        if sim.queue:
            yield self.make(next(iter(sim.queue.values())))


def test_starting_a_job_twice_is_a_policy_error():
    jobs = make_jobs([(0, 10, 2, 10)], 10)
    with pytest.raises(PolicyError, match=r"'start-twice'.*job 1\b.*not queued"):
        Engine(jobs, Nodes(10), StartTwice()).run()


def test_starting_a_job_too_large_for_the_free_nodes_is_a_policy_error():
    # A takes 6 of 10 nodes; B needs 8 with 4 free.
    jobs = make_jobs([(0, 100, 6, 100), (0, 100, 8, 100)], 10)
    with pytest.raises(PolicyError, match=r"'start-everything'.*job 2\b.*needs 8 nodes, 4 free"):
        Engine(jobs, Nodes(10), StartEverything()).run()


def test_starting_on_a_busy_named_node_is_a_policy_error():
    class SameNodes(BasePolicy):
        name = "same-nodes"
        requires = frozenset({NODE_VMS})  # it names nodes

        def decide(self, sim):
            for job in list(sim.queue.values()):
                yield Start(job, nodes=[0])

    jobs = make_jobs([(0, 100, 1, 100), (0, 100, 1, 100)], 10)
    with pytest.raises(PolicyError, match=r"'same-nodes'.*job 2\b.*node 0 is busy"):
        Engine(jobs, Nodes(10), SameNodes()).run()
    # A policy that names nodes without saying it needs them gets a clear error, not a guess:
    # one-tier nodes then count free nodes only.
    SameNodes.requires = frozenset()
    with pytest.raises(
        PolicyError, match=r"'same-nodes'.*job 1\b.*names nodes, but the policy does not require node_vms"
    ):
        Engine(make_jobs([(0, 100, 1, 100)], 10), Nodes(10), SameNodes()).run()


@pytest.mark.slow  # (KTH-SP2 twice per tier count: about 15 s)
@pytest.mark.parametrize("tiers", [1, 2, 3])
def test_counting_free_nodes_and_tracking_ids_give_identical_schedules(kth_path, tiers):
    # EASY never names nodes nor uses a background tier, so the platform counts free nodes
    # (on any number of tiers: the lower tiers stay idle, every rate is 1); recording
    # segments (or a policy that requires node_vms) makes it track ids and rate every job.
    # The schedule must not depend on which.
    from tiersweep.core.simulate import simulate

    spec = {
        "workload": {"trace": str(kth_path), "jobs": 5000},
        "platform": {"tiers": tiers},
        "policy": {"name": "easy"},
    }
    counted = simulate(spec)
    tracked = simulate(spec, record_segments=True)
    for column in counted.jobs:
        assert np.array_equal(counted.jobs[column], tracked.jobs[column], equal_nan=True), column
    assert counted.metrics == tracked.metrics
    assert len(tracked.segments["nodes"]) == 5000 and all(len(n) for n in tracked.segments["nodes"])
    assert all(tier == 0 for tier in tracked.segments["tier"])
    # Counting gives every node back: all free at the end.
    platform = Nodes(10)
    Engine(make_jobs([(0, 100, 4, 100), (1, 50, 6, 50), (2, 10, 2, 10)], 10), platform, make_policy("easy")).run()
    assert platform._free == platform.free_count() == 10


def test_suspending_a_job_that_is_not_running_is_a_policy_error():
    jobs = make_jobs([(0, 10, 2, 10)], 10)
    with pytest.raises(PolicyError, match=r"'suspend-queued'.*job 1\b.*not running"):
        Engine(jobs, Nodes(10), SuspendQueued()).run()


LookAlike = namedtuple("LookAlike", "job")


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda job: LookAlike(job), id="look-alike-with-job-attribute"),
        pytest.param(lambda job: job, id="the-job-itself"),
        pytest.param(lambda job: None, id="none"),
        pytest.param(lambda job: ("start", job), id="tuple"),
    ],
)
def test_yielding_a_non_decision_is_a_policy_error(make):
    jobs = make_jobs([(0, 10, 2, 10)], 10)
    with pytest.raises(PolicyError, match=r"'yields-junk'.*not a decision"):
        Engine(jobs, Nodes(10), Yields(make)).run()


def test_a_policy_that_leaves_jobs_queued_forever_is_a_policy_error():
    jobs = make_jobs([(0, 10, 2, 10), (3, 10, 2, 10)], 10)
    with pytest.raises(PolicyError, match=r"'idle' stopped with 2 queued and 0 running"):
        Engine(jobs, Nodes(10), Idle()).run()


def test_a_policy_that_starts_only_some_jobs_is_a_policy_error():
    class FirstOnly(BasePolicy):
        name = "first-only"

        def decide(self, sim):
            for job in list(sim.queue.values()):
                if job.index == 0:
                    yield Start(job)

    jobs = make_jobs([(0, 10, 2, 10), (0, 10, 2, 10)], 10)
    with pytest.raises(PolicyError, match=r"'first-only' stopped with 1 queued.*queued: 2"):
        Engine(jobs, Nodes(10), FirstOnly()).run()


# -- rate changes ----------------------------------------------------------------------------


class SharingNodes(Nodes):
    """Nodes where every other running job runs at half rate while job ``slow_while`` runs.

    With ``restore=False`` the slowdown outlives ``slow_while`` (it is never undone).
    """

    def __init__(self, nodes, slow_while, restore=True):
        super().__init__(nodes)
        self.slow_while = slow_while
        self.restore = restore
        self.holding = {}
        self.pending = []

    def start(self, job, tier, nodes):
        held, rate = super().start(job, tier, nodes)
        if job.index == self.slow_while:
            self.pending += [(other, 0.5) for other in self.holding.values()]
            self.rates_dirty = True
        self.holding[job.index] = job
        return held, rate

    def release(self, job):
        super().release(job)
        del self.holding[job.index]
        if job.index == self.slow_while and self.restore:
            self.pending += [(other, 1.0) for other in self.holding.values()]
            self.rates_dirty = True

    def rate_changes(self):
        self.rates_dirty = False
        changes, self.pending = self.pending, []
        return changes


def test_rate_change_reschedules_the_finish_exactly():
    # A (2 nodes, 100 s) from 0. B (2 nodes, 10 s) starts at 40: A has done 40 s, now runs at
    # 0.5 -> 60 s of work left take 120 s -> A ends at 160 (its old finish event at 100 is stale).
    jobs = make_jobs([(0, 100, 2, 100), (40, 10, 2, 10)], 10)
    engine = Engine(jobs, SharingNodes(10, slow_while=1, restore=False), StartInOrder())
    engine.run()
    assert [j.start_time for j in jobs] == [0, 40]
    assert [j.finish_time for j in jobs] == [160, 50]
    assert jobs[0].progress == 100


def test_rate_change_back_reschedules_again():
    # As above, but B's finish at 50 restores A's rate: at 50 A has done 40 + 0.5 x 10 = 45 s,
    # 55 s left at rate 1 -> A ends at 105. Stale finish events at 100 and 160 are skipped and
    # cause no pass: passes at 0, 40, 50, 105.
    jobs = make_jobs([(0, 100, 2, 100), (40, 10, 2, 10)], 10)
    engine = Engine(jobs, SharingNodes(10, slow_while=1), StartInOrder())
    engine.run()
    assert [j.finish_time for j in jobs] == [105, 50]
    assert engine.passes == 4


def test_clock_ends_at_the_last_real_event_not_at_a_stale_one():
    # Same run: the last real event is A's finish at 105; the superseded finish at 160 never
    # happens and must not move the clock.
    jobs = make_jobs([(0, 100, 2, 100), (40, 10, 2, 10)], 10)
    engine = Engine(jobs, SharingNodes(10, slow_while=1), StartInOrder())
    engine.run()
    assert engine.now == 105


# -- suspension, restore and migration cost --------------------------------------------------


class Scripted(BasePolicy):
    """Applies a fixed plan ``{time: [("start" | "suspend", job index), ...]}``.

    It also records each job's progress when it is suspended, and the state and rate of job 0
    at every pass and every submission.
    """

    name = "scripted"

    def __init__(self, plan):
        self.plan = plan
        self.progress_at_suspend = {}
        self.passes = []
        self.seen_at_submit = {}

    def setup(self, sim):
        self.sim = sim

    def on_suspend(self, job):
        self.progress_at_suspend[job.index] = job.progress

    def on_submit(self, job):
        first = self.sim.jobs[0]
        self.seen_at_submit[job.index] = (first.state, first.rate)

    def decide(self, sim):
        first = sim.jobs[0]
        self.passes.append((sim.now, first.state, first.rate, first.progress))
        for action, index in self.plan.get(sim.now, ()):
            job = sim.jobs[index]
            yield Start(job) if action == "start" else Suspend(job)


#: A (4 nodes, 100 s) at 0; B and C (1 node, 5 s) at 30 and 50 make passes then; D (1 node,
#: 5 s) arrives at 70, exactly when A's restore ends with migration cost 20.
SUSPEND_ROWS = [(0, 100, 4, 100), (30, 5, 1, 5), (50, 5, 1, 5), (70, 5, 1, 5)]
SUSPEND_PLAN = {
    0: [("start", 0)],
    30: [("suspend", 0), ("start", 1)],
    50: [("start", 0), ("start", 2)],
    70: [("start", 3)],
}


def test_suspend_and_restore_with_migration_cost():
    # A runs [0, 30): 30 s done. Suspended at 30 (progress 30 kept), restarted at 50: it holds
    # its 4 nodes but progresses only after the 20 s restore, from 70: 70 s left -> ends 140.
    jobs = make_jobs(SUSPEND_ROWS, 10)
    policy = Scripted(SUSPEND_PLAN)
    Engine(jobs, Nodes(10), policy, migration_cost=20).run()
    a = jobs[0]
    assert policy.progress_at_suspend == {0: 30}
    assert a.migrations == 1
    assert (a.start_time, a.last_start_time, a.finish_time) == (0, 50, 140)
    assert a.progress == 100
    assert [(j.start_time, j.finish_time) for j in jobs[1:]] == [(30, 35), (50, 55), (70, 75)]
    assert [j.migrations for j in jobs[1:]] == [0, 0, 0]
    passes = {now: (state, rate, progress) for now, state, rate, progress in policy.passes}
    assert passes[50][2] == 30  # still 30 s done when restarted
    assert passes[55] == (RUNNING, 0.0, 30)  # restoring: holds nodes, no progress
    # The restore at 70 is processed before D's arrival at 70: D's submission sees A restored.
    assert policy.seen_at_submit[3] == (RUNNING, 1.0)
    assert passes[70][1] == 1.0


def test_suspend_and_restore_without_migration_cost():
    # Same plan, no restore delay: A resumes at 50 with 70 s left -> ends 120; still one migration.
    jobs = make_jobs(SUSPEND_ROWS, 10)
    policy = Scripted(SUSPEND_PLAN)
    Engine(jobs, Nodes(10), policy).run()
    a = jobs[0]
    assert a.migrations == 1
    assert (a.start_time, a.last_start_time, a.finish_time) == (0, 50, 120)


def test_suspended_job_releases_its_nodes():
    # 4 nodes. A (4 nodes) is suspended at 30 so that B (4 nodes) can start at 30; B ends at 35;
    # A restarts at 35 with 70 s left and migration cost 10 -> progresses from 45, ends 115.
    jobs = make_jobs([(0, 100, 4, 100), (30, 5, 4, 5)], 4)
    plan = {0: [("start", 0)], 30: [("suspend", 0), ("start", 1)], 35: [("start", 0)]}
    Engine(jobs, Nodes(4), Scripted(plan), migration_cost=10).run()
    assert [(j.start_time, j.finish_time) for j in jobs] == [(0, 115), (30, 35)]
    assert jobs[0].migrations == 1


def test_negative_migration_cost_is_rejected():
    with pytest.raises(ValueError, match="migration_cost"):
        Engine(make_jobs([(0, 1, 1, 1)], 1), Nodes(1), StartInOrder(), migration_cost=-1)


# -- the engine trusts platforms no more than policies -------------------------------------------


class Faulty(Nodes):
    """Nodes that misreport: a rate outside [0, 1] for the second job, or one unit too few."""

    kind = "faulty"

    def __init__(self, nodes, fault):
        super().__init__(nodes)
        self.fault = fault
        self.pending = []

    def start(self, job, tier, nodes):
        held, rate = super().start(job, tier, nodes)
        if self.fault == "units":
            return held[:-1], rate
        if self.fault == "start-rate":
            return held, 1.5
        if self.fault == "rate-change" and job.index == 1:
            self.pending.append((job, -0.25))
            self.rates_dirty = True
        return held, rate

    def rate_changes(self):
        self.rates_dirty = False
        changes, self.pending = self.pending, []
        return changes


@pytest.mark.parametrize(
    ("fault", "message"),
    [
        ("units", r"platform 'faulty' at t=0: job 1 of size 2 was given 1 units"),
        ("start-rate", r"platform 'faulty' at t=0: job 1 was given rate 1.5, outside \[0, 1\]"),
        ("rate-change", r"platform 'faulty' at t=5: job 2 was given rate -0.25, outside \[0, 1\]"),
    ],
)
def test_a_platform_that_misreports_is_a_platform_error_naming_it(fault, message):
    jobs = make_jobs([(0, 100, 2, 100), (5, 100, 1, 100)], 4)
    with pytest.raises(PlatformError, match=message):
        Engine(jobs, Faulty(4, fault), StartInOrder()).run()


def test_a_move_on_a_platform_without_moves_is_a_policy_error():
    from tiersweep.core.decisions import Move
    from tiersweep.core.platforms import make_platform

    class MoveIt(StartInOrder):
        def decide(self, sim):
            yield from super().decide(sim)
            for job in list(sim.running.values()):
                yield Move(job, 0, job.nodes)

    platform = make_platform("shared_vms", {"machines": 2, "vms": 2})
    jobs = make_jobs([(0, 100, 2, 100)], 4)
    with pytest.raises(
        PolicyError,
        match=r"cannot move job 1: platform 'shared_vms' cannot move running jobs \(no 'moves' capability\)",
    ):
        Engine(jobs, platform, MoveIt()).run()
