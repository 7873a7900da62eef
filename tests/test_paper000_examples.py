"""Golden schedules: the worked examples of paper 000 (Liu et al., "Priority-Based
Consolidation of Parallel Workloads in the Cloud", TPDS 2013), sections 4.1.1-4.1.2 (Fig. 1,
CMBF and AMBF) and 4.2 (Fig. 2, CMCBF and AMCBF).

The figures are lost in the text copy, so the workloads below are reconstructed from the
narrative: every job is in the queue at time 0, arrival order = job number, and sizes, lengths
and CPU usages are chosen so that every event the text states happens. Each test asserts only
what the text says (the sentence is quoted next to the assertion); the reconstruction is what
makes those sentences checkable. Node ids are 0-based: P1 = node 0. Throughout, saving and
restoring cost nothing (``migration_cost=0``), as both examples assume.

Figure 1 (six dedicated nodes P1-P6, ``tiers=1``)
==================================================

==== ===== ====== =========================================================================
job  S     L      why
==== ===== ====== =========================================================================
J1   1     20     J1 + J2 fill P1-P3 (J5, J6 are backfilled into "P4, P5, and P6"); J1 ends
                  at 20 ("J3 is only dispatched at time 20 when J1 and J5 finish").
J2   2     5      "When J2 finishes its execution at time 5 ... there are only two idle nodes".
J3   6     5      "J3 requests six nodes". L is never stated: 5 is arbitrary.
J4   4     5      "its request of four nodes"; starts at 5, "J4 and J6 finish ... at time 10".
J5   2     15     "two nodes used by a job (J5)"; runs 0-5, suspended at 5, resumes at 10
                  and ends at 20: 5 + 10 = 15. Under AMBF it runs 0-15 uninterrupted, which is
                  why "J4 ... is only dispatched ... at time 15" there.
J6   1     10     the third backfilled node ("two idle nodes and three additional nodes used
                  by backfilling jobs"); "J4 and J6 finish execution at time 10" (CMBF) and
                  "J6 departs at time 10" (AMBF).
==== ===== ====== =========================================================================

Checks of the reconstruction against the text: at 0, 3 nodes are idle after J1 and J2, so
J3 (6) and J4 (4) do not fit, J5 (2) and J6 (1) do. At 5 (CMBF), 2 idle + 3 backfilled = 5 < 6
for J3; 2 idle + J5's 2 = 4 for J4. At 10 only J1 runs (J5 is queued), so 5 nodes are idle: J3
still cannot run (5 < 6, and no running job arrived after it), J5 resumes. At 20, J1 and J5 end: J3 gets all 6. AMBF
(Fig. 1b, "a similar example", read as the same workload: its stated times 5, 10 and 15 match):
J3 is the head and 2 + 3 = 5 < 6 at 5, 3 + 2 = 5 < 6 at 10 ("the number of nodes it requests
cannot be satisfied"); J4 is not the head, so it waits for J5's end at 15. The sentence "There
is no backfilling job for it to preempt either" is read as "not enough backfilled nodes": J5
(and J6 until 10) are later-arrived running jobs, but they do not make up J3's six nodes.

Figure 2 (five nodes P1-P5, two tiers, ``tiers=2``, background threshold 0.96)
===============================================================================

The paper assumes "the process in a single-process job incurs a node utilization of 100
percent and the processes within a multiprocesses job involve a node utilization less than 96
percent". Multi-process jobs get 0.4-0.5 per process (est = true), so a node whose foreground
and background VMs both run multi-process processes is not overloaded and the background
process progresses at rate 1 (``fg_overhead=0``, ``bg_efficiency=1``). A single-process job
uses 1.0, so in the background it progresses at ``1 - (foreground usage)``: J5 runs at 0.5 in
0-5 (under J3's 0.5 process), which its length L (work at rate 1) accounts for.

==== == ===== ================ ===============================================================
job  S  L     CPU per process  why
==== == ===== ================ ===============================================================
J1   1  10    1.0              "As J1 is a single-process job, therefore P1 cannot accommodate
                               another VM running in background"; "At time 10, J1 and J3
                               finish".
J2   2  5     0.45, 0.4        "At time 5, J2 finishes"; the foreground VMs it frees are those
                               J5 (P2) and J6 (P3) then take, so J2 ran on P2-P3.
J3   2  10    0.5, 0.4         on P4-P5 (the rest of the five nodes); ends at 10 with J1.
J4   3  10    0.5, 0.45, 0.4   "there is not enough foreground VMs for J4" when 2 are idle at 5
                               and "As there are only two background VMs available, J4 cannot
                               run on them": S > 2; J4 and J5 share the 4 background VMs of
                               P2-P5 at 0: S <= 3. Work: 5 in the background (0-5, rate 1),
                               evicted at 5, 5 in the foreground 10-15 ("At time 15, J4
                               finishes").
J5   1  22.5  1.0              "As J5 is also a single-process job". 2.5 of work in 0-5 (rate
                               0.5 on P4's background VM), then foreground on P2 5-25. It must
                               end exactly at 25 with J9: ending earlier, J8 (5 nodes) would
                               preempt J9 (1 idle + J9's 4); later, J8 could not start at 25.
J6   1  15    1.0              "J6 requests only one node"; "J6 incurs a utilization above the
                               threshold"; "At time 20, J6 finishes".
J7   2  10    0.5, 0.5         "J7 is placed to run on P4 and P5 as background job" at 5. It
                               must be gone at 15 (else, arriving before J8-J10, it would be the
                               job moved up to the idle foreground VMs of P4-P5 instead of J10)
                               and must not end before 10 (else J10 would take its VM then);
                               ending at 15 with J4 leaves P1 the only background VM at 10.
J8   5  5     0.5 x 5          at 20, 3 idle foreground VMs + J10's 1 suffice for J9 but J8,
                               ahead of J9, must not be able to use them: S > 4, so S = 5
                               (also > 3 idle at 15: "not enough foreground VMs for J8"); it
                               starts at 25 when all five foreground VMs are free.
J9   4  5     0.5 x 4          "J9 is allocated to run on P1, P3-P5"; ends at 25 ("At time 25,
                               J8 is allocated when other jobs finish").
J10  1  15    1.0              the one background VM left at 10 (P1's); single-process. Its
                               length is never stated: 15 is arbitrary (it outlives 25).
==== == ===== ================ ===============================================================

Placement follows the ``dispatch`` matchmaking (Algorithm 2, lines 18-30; ties by node id as
documented in ``core/policies/consolidation.py``). At 0: J1 -> P1, J2 -> P2 (0.45), P3 (0.4),
J3 -> P4 (0.5), P5 (0.4); background by foreground load ascending (P2 .45 is above P3 and P5
at .4): J4 -> P3 (0.5), P5 (0.45), P2 (0.4), J5 -> P4. At 5 J2 leaves P2 and P3; J5 moves to
the idle foreground VM with the lower background load, P2 (J4's 0.4 < 0.5 on P3), and being
at 100 percent it evicts J4's background process there (line 25): "P2 cannot accommodate a
background VM either. J4 is evicted". J6 takes P3; the background VMs left are P4 and P5, for
J7. At 10 J4 takes the idle foreground VMs P1, P4, P5; P1's background VM is the only one left
(P2, P3 have 100-percent foregrounds, J7 holds P4, P5): J10. At 15 J4 and J7 end; J10 moves up
to P1's foreground VM (3 are idle, < 4 for J9, < 5 for J8). At 20 J6 ends: 3 idle + J10's 1 =
4 = J9's need; J10 is switched back to P1's background VM, J9 takes P1, P3-P5. At 25 J5 and J9
end and J8 takes all five foreground VMs.

Inconsistencies of the narrative, and the reading chosen:

* Section 4.2 on AMCBF says "When J6 departs at time 15", but the CMCBF narrative has "At time
  15, J4 finishes and J10 is moved to run in foreground due to that there are not enough
  foreground VMs for J8 and J9" and "At time 20, J6 finishes". Had J6 left at 15, four
  foreground VMs would have been idle and J9 would simply have started. J6 leaves at 20 here,
  and the AMCBF difference is asserted at 20.
* Algorithm 1, line 14 says "until the number of idle nodes is greater than N_j"; the text
  ("only evicting J5 is enough for J4") means "not less than".
* The narrative does not mention J7's departure (a background job; Algorithm 3) in the
  timeline; it is placed at 15, see the table.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import pytest

from helpers import make_jobs
from tiersweep.core.engine import Engine
from tiersweep.core.jobs import FINISHED
from tiersweep.core.platforms import Nodes
from tiersweep.core.policies import make_policy

#: Fig. 1: (submit, runtime, size, requested) per job J1..J6; requested = runtime.
FIG1_ROWS = [(0, 20, 1, 20), (0, 5, 2, 5), (0, 5, 6, 5), (0, 5, 4, 5), (0, 15, 2, 15), (0, 10, 1, 10)]
FIG1_NODES = 6

#: Fig. 2: J1..J10 and the CPU usage of each process (estimated = true).
FIG2_ROWS = [
    (0, 10, 1, 10),
    (0, 5, 2, 5),
    (0, 10, 2, 10),
    (0, 10, 3, 10),
    (0, 22.5, 1, 22.5),
    (0, 15, 1, 15),
    (0, 10, 2, 10),
    (0, 5, 5, 5),
    (0, 5, 4, 5),
    (0, 15, 1, 15),
]
FIG2_CPU = [
    [1.0],
    [0.45, 0.4],
    [0.5, 0.4],
    [0.5, 0.45, 0.4],
    [1.0],
    [1.0],
    [0.5, 0.5],
    [0.5] * 5,
    [0.5] * 4,
    [1.0],
]
FIG2_NODES = 5

FG, BG = 0, 1
P1, P2, P3, P4, P5, P6 = range(6)


class Event(NamedTuple):
    """One thing that happened to a job: ``kind`` is start, suspend, move or finish; ``tier``
    and ``nodes`` are where it is afterwards (for a finish or suspend: where it was)."""

    time: float
    kind: str
    job: int  # job number: J1 = 1
    tier: int
    nodes: tuple[int, ...]
    from_tier: int | None = None
    from_nodes: tuple[int, ...] | None = None


class Snapshot(NamedTuple):
    """State after a timestamp's policy pass."""

    running: dict[int, tuple[int, frozenset[int]]]  # job number -> (tier, nodes)
    queue: list[int]  # job numbers, in queue order


class Run(NamedTuple):
    jobs: dict[int, object]  # job number -> Job
    log: list[Event]
    snapshots: dict[float, Snapshot]

    def events(self, time: float, kind: str | None = None) -> list[Event]:
        return [e for e in self.log if e.time == time and (kind is None or e.kind == kind)]

    def decisions(self, time: float) -> set[tuple]:
        """The starts, suspends and moves at ``time``, order-free, nodes as sets."""
        return {(e.kind, e.job, e.tier, frozenset(e.nodes)) for e in self.log if e.time == time and e.kind != "finish"}

    def finished_at(self, time: float) -> set[int]:
        return {e.job for e in self.events(time, "finish")}


@functools.cache
def simulate(figure: int, policy: str, *, tiers: int | None = None, bg_threshold: float = 0.96) -> Run:
    """Run Fig. ``figure``'s workload under ``policy`` (cached: the runs are read-only);
    ``tiers`` overrides the figure's own."""
    if figure == 1:
        rows, nodes, tiers, cpu = FIG1_ROWS, FIG1_NODES, tiers or 1, None
    else:
        rows, nodes, tiers, cpu = FIG2_ROWS, FIG2_NODES, tiers or 2, FIG2_CPU
    jobs = make_jobs(rows, nodes)
    if cpu is not None:
        for job, usage in zip(jobs, cpu, strict=True):
            assert len(usage) == job.size
            job.cpu_true = list(usage)
            job.cpu_est = list(usage)
            job.cpu_sum = sum(usage)
    log: list[Event] = []
    snapshots: dict[float, Snapshot] = {}
    base = type(make_policy(policy))

    class Recorder(base):
        def on_start(self, job):
            super().on_start(job)
            log.append(Event(self.sim.now, "start", job.job_id, job.tier, tuple(job.nodes)))

        def on_suspend(self, job):
            super().on_suspend(job)
            log.append(Event(self.sim.now, "suspend", job.job_id, job.tier, tuple(job.nodes)))

        def on_move(self, job, tier, nodes):
            super().on_move(job, tier, nodes)
            log.append(Event(self.sim.now, "move", job.job_id, job.tier, tuple(job.nodes), tier, tuple(nodes)))

        def on_finish(self, job):
            super().on_finish(job)
            log.append(Event(self.sim.now, "finish", job.job_id, job.tier, tuple(job.nodes)))

    def observe(engine: Engine) -> None:
        snapshots[engine.now] = Snapshot(
            {j.job_id: (j.tier, frozenset(j.nodes)) for j in engine.running.values()},
            [j.job_id for j in engine.queue.values()],
        )

    params = {"bg_threshold": bg_threshold} if policy in ("cmcbf", "amcbf") else {}
    platform = Nodes(nodes, tiers=tiers, fg_overhead=0.0, bg_efficiency=1.0)
    Engine(jobs, platform, Recorder(**params), migration_cost=0.0, observer=observe).run()
    assert all(job.state == FINISHED for job in jobs)
    return Run({job.job_id: job for job in jobs}, log, snapshots)


def schedule(run: Run) -> list[tuple[float, float, int]]:
    """(first start, finish, migrations) of every job."""
    return [(j.start_time, j.finish_time, j.migrations) for j in run.jobs.values()]


# == Fig. 1a: CMBF ===========================================================================


def test_fig1_cmbf_t0_j3_j4_do_not_fit_and_j5_j6_are_backfilled_into_p4_p6():
    run = simulate(1, "cmbf")
    at0 = run.snapshots[0]
    # "J3 and J4 are not allocated due to that their node requirements exceed the number of
    # available nodes."
    assert at0.queue == [3, 4]
    # "As a result, J5 and J6 are backfilled into node P4, P5, and P6." (J5 on two nodes, J6 on
    # one, in that order: ties by node id.)
    assert at0.running[5] == (FG, {P4, P5})
    assert at0.running[6] == (FG, {P6})
    # so J1 and J2 hold P1-P3.
    assert at0.running[1][1] | at0.running[2][1] == {P1, P2, P3}


def test_fig1_cmbf_t5_j3_cannot_preempt_two_idle_plus_three_backfilled():
    run = simulate(1, "cmbf")
    # "When J2 finishes its execution at time 5"
    assert run.finished_at(5) == {2}
    # "J3 requests six nodes, but there are only two idle nodes and three additional nodes
    # used by backfilling jobs J3 can preempt. J3 cannot be allocated"
    assert 3 in run.snapshots[5].queue
    assert 3 not in {e.job for e in run.events(5, "start")}


def test_fig1_cmbf_t5_j4_preempts_j5():
    run = simulate(1, "cmbf")
    at5 = run.snapshots[5]
    # "J4 can be allocated as its request of four nodes can be satisfied through the
    # combination of two idle nodes and two nodes used by a job (J5) it can preempt."
    assert run.jobs[4].start_time == 5
    assert at5.running[4] == (FG, {P2, P3, P4, P5})  # J2's two nodes + J5's two
    assert [(e.job, set(e.nodes)) for e in run.events(5, "suspend") if e.job == 5] == [(5, {P4, P5})]
    assert 5 in at5.queue
    # "thus, J6 remains in its original position" (see also the next test)
    assert at5.running[6] == (FG, {P6})


def test_fig1_cmbf_t5_only_j5_is_evicted_j6_is_not_removed():
    run = simulate(1, "cmbf")
    # "First, collect the nodes used by J6, then J5, but only evicting J5 is enough for J4,
    # thus, J6 remains in its original position without being removed."
    assert [e.job for e in run.events(5, "suspend")] == [5]
    assert [e for e in run.log if e.job == 6] == [
        Event(0, "start", 6, FG, (P6,)),
        Event(10, "finish", 6, FG, (P6,)),
    ]
    assert run.jobs[6].migrations == 0


def test_fig1_cmbf_t10_j4_j6_finish_and_j5_resumes_as_j3_still_does_not_fit():
    run = simulate(1, "cmbf")
    # "When J4 and J6 finish execution at time 10, J5 is backfilled and resumes its execution
    # as there is not enough number of nodes for J3 to run."
    assert run.finished_at(10) == {4, 6}
    assert [e.job for e in run.events(10, "start")] == [5]
    assert run.snapshots[10].queue == [3]
    assert run.jobs[5].migrations == 1  # suspended at 5, restored at 10


def test_fig1_cmbf_t20_j3_starts_when_j1_and_j5_finish():
    run = simulate(1, "cmbf")
    # "J3 is only dispatched at time 20 when J1 and J5 finish execution."
    assert run.finished_at(20) == {1, 5}
    assert run.jobs[3].start_time == 20
    assert run.snapshots[20].running[3] == (FG, set(range(6)))


# == Fig. 1b: AMBF ===========================================================================


def test_fig1_ambf_head_j3_cannot_be_satisfied_at_5_and_10():
    run = simulate(1, "ambf")
    # "After J2 departs at time 5 and J6 departs at time 10, J3 is at the head of the queue
    # but the number of nodes it requests cannot be satisfied."
    assert run.finished_at(5) == {2}
    assert run.finished_at(10) == {6}
    for t in (5, 10):
        assert run.snapshots[t].queue[0] == 3
        assert run.jobs[3].start_time > t
    # "There is no backfilling job for it to preempt either": nothing is preempted.
    assert not [e for e in run.log if e.kind == "suspend"]


def test_fig1_ambf_j4_may_not_preempt_j5_and_runs_at_15():
    run = simulate(1, "ambf")
    # "As AMBF does not allow non-head-of-queue jobs to preempt, J4 cannot preempt J5"
    assert 4 in run.snapshots[5].queue
    assert run.snapshots[5].running[5][0] == FG
    assert run.jobs[5].migrations == 0
    # "and is only dispatched to run when there is enough idle nodes at time 15."
    assert run.jobs[4].start_time == 15
    # "AMBF also incurs job suspension and resuming less frequently than CMBF."
    assert sum(j.migrations for j in run.jobs.values()) < sum(j.migrations for j in simulate(1, "cmbf").jobs.values())


@pytest.mark.parametrize(("consolidating", "basic"), [("cmcbf", "cmbf"), ("amcbf", "ambf")])
def test_fig1_consolidation_without_background_is_the_basic_algorithm(consolidating, basic):
    # "CMCBF is similar to CMBF when it comes the way it handles foreground jobs": with no
    # background placement (threshold 0 admits none), CMCBF / AMCBF must schedule exactly as
    # CMBF / AMBF do on dedicated nodes. (On one tier they are refused: nothing to consolidate.)
    no_background = simulate(1, consolidating, tiers=2, bg_threshold=0.0)
    assert schedule(no_background) == schedule(simulate(1, basic))
    assert no_background.log == simulate(1, basic).log


# == Fig. 2: CMCBF ===========================================================================


def test_fig2_cmcbf_t0_j1_j2_j3_in_foreground_j4_j5_in_background_of_p2_p5():
    at0 = simulate(2, "cmcbf").snapshots[0]
    # "At time 0, job J1, J2, and J3 are allocated to five nodes and run in foreground VMs"
    assert {j: at0.running[j] for j in (1, 2, 3)} == {
        1: (FG, {P1}),  # "As J1 is a single-process job, therefore P1 ..."
        2: (FG, {P2, P3}),  # the VMs J5 and J6 take when J2 departs at 5
        3: (FG, {P4, P5}),
    }
    # "However, J4 and J5 can run in background VMs at node P2-P5."
    assert at0.running[4][0] == at0.running[5][0] == BG
    assert at0.running[4][1] | at0.running[5][1] == {P2, P3, P4, P5}
    # "P1 cannot accommodate another VM running in background."
    assert all(nodes.isdisjoint({P1}) for tier, nodes in at0.running.values() if tier == BG)
    assert set(at0.running) == {1, 2, 3, 4, 5}
    assert at0.queue == [6, 7, 8, 9, 10]


def test_fig2_cmcbf_t5_j5_moves_up_to_p2_j4_is_evicted_j6_on_p3_j7_in_background_of_p4_p5():
    run = simulate(2, "cmcbf")
    at5 = run.snapshots[5]
    # "At time 5, J2 finishes and departs the system."
    assert run.finished_at(5) == {2}
    # "As there is not enough foreground VMs for J4 to run, J5 is backfilled from background
    # to run in foreground ... P2 cannot accommodate a background VM either."
    assert at5.running[5] == (FG, {P2})
    (move,) = run.events(5, "move")
    assert (move.job, move.from_tier, move.tier) == (5, BG, FG)
    # "J4 is evicted and put back into the queue."
    assert [(e.job, e.tier) for e in run.events(5, "suspend")] == [(4, BG)]
    assert 4 in at5.queue and 4 not in at5.running
    # ... evicted because of J5 on P2, where it had a background process, before J6 comes.
    assert P2 in run.snapshots[0].running[4][1]
    kinds = [(e.kind, e.job) for e in run.events(5) if e.kind != "finish"]
    assert kinds.index(("suspend", 4)) < kinds.index(("start", 6))
    # "J6 requests only one node and is backfilled to run on P3 ... P3 cannot accommodate a
    # background VM."
    assert at5.running[6] == (FG, {P3})
    assert run.jobs[6].start_time == 5
    assert all(nodes.isdisjoint({P2, P3}) for tier, nodes in at5.running.values() if tier == BG)
    # "As there are only two background VMs available, J4 cannot run on them and J7 is placed
    # to run on P4 and P5 as background job."
    assert at5.running[7] == (BG, {P4, P5})
    assert run.jobs[7].start_time == 5


def test_fig2_cmcbf_t10_j4_head_dispatched_to_foreground_j10_to_background_of_p1():
    run = simulate(2, "cmcbf")
    at10 = run.snapshots[10]
    # "At time 10, J1 and J3 finish execution."
    assert run.finished_at(10) == {1, 3}
    # "J4 is at the head of the queue and dispatched to run in foreground."
    assert run.snapshots[5].queue[0] == 4
    assert [e.job for e in run.events(10, "start") if e.tier == FG] == [4]
    assert at10.running[4] == (FG, {P1, P4, P5})  # the foreground VMs J1 and J3 freed
    # "J10 is dispatched to run in background at P1."
    assert at10.running[10] == (BG, {P1})
    assert run.jobs[10].start_time == 10
    assert at10.queue == [8, 9]


def test_fig2_cmcbf_t15_j4_finishes_and_j10_moves_up_for_lack_of_vms_for_j8_j9():
    run = simulate(2, "cmcbf")
    at15 = run.snapshots[15]
    # "At time 15, J4 finishes and J10 is moved to run in foreground due to that there are not
    # enough foreground VMs for J8 and J9."
    assert 4 in run.finished_at(15)
    assert run.jobs[4].finish_time == 15
    assert at15.running[10] == (FG, {P1})  # on P1: at 20 it is swapped back on P1
    assert at15.queue == [8, 9]
    # a change of VM priority on its own node, not a save and restore
    assert run.jobs[10].migrations == 0


def test_fig2_cmcbf_t20_j6_finishes_j9_preempts_j10_which_is_switched_to_p1_background():
    run = simulate(2, "cmcbf")
    at20 = run.snapshots[20]
    # "At time 20, J6 finishes."
    assert run.finished_at(20) == {6}
    assert run.jobs[6].finish_time == 20
    # "The total number of idle foreground VMs and VMs running backfilling jobs (J10 in this
    # case) satisfies the needs of J9. As a result, J10 is evicted and J9 is allocated to run
    # on P1, P3-P5."
    assert at20.running[9] == (FG, {P1, P3, P4, P5})
    assert run.jobs[9].start_time == 20
    # "Subsequently, J10 is put to run as a background job in P1 (J10 is actually switched
    # from the foreground to the background VM by swapping the CPU priorities of the
    # foreground VM and background VM of P1)."
    (move,) = run.events(20, "move")
    assert move == Event(20, "move", 10, BG, (P1,), FG, (P1,))
    assert at20.running[10] == (BG, {P1})
    assert run.jobs[10].migrations == 0  # a priority swap, never a save and restore
    assert not run.events(20, "suspend")
    # J8, ahead of J9, is still waiting.
    assert at20.queue == [8]


def test_fig2_cmcbf_t25_j8_is_allocated_when_the_others_finish():
    run = simulate(2, "cmcbf")
    # "At time 25, J8 is allocated when other jobs finish and foreground VMs are available."
    assert run.finished_at(25)
    assert run.jobs[8].start_time == 25
    assert [e.job for e in run.events(25, "start")] == [8]
    assert run.snapshots[25].running[8][0] == FG


def test_fig2_cmcbf_makes_exactly_the_narrated_decisions():
    # Every start, eviction and move of 0-25 is one the narrative states; nothing else.
    run = simulate(2, "cmcbf")
    s = frozenset
    expected = {
        0: {
            ("start", 1, FG, s({P1})),
            ("start", 2, FG, s({P2, P3})),
            ("start", 3, FG, s({P4, P5})),
            ("start", 4, BG, run.snapshots[0].running[4][1]),  # "J4 and J5 ... at node P2-P5"
            ("start", 5, BG, run.snapshots[0].running[5][1]),
        },
        5: {
            ("move", 5, FG, s({P2})),
            ("suspend", 4, BG, run.snapshots[0].running[4][1]),
            ("start", 6, FG, s({P3})),
            ("start", 7, BG, s({P4, P5})),
        },
        10: {("start", 4, FG, s({P1, P4, P5})), ("start", 10, BG, s({P1}))},
        15: {("move", 10, FG, s({P1}))},
        20: {("move", 10, BG, s({P1})), ("start", 9, FG, s({P1, P3, P4, P5}))},
        25: {("start", 8, FG, s(range(5)))},
    }
    for t, decisions in expected.items():
        assert run.decisions(t) == decisions, f"t={t}"
    # (after 25 the narrative stops: J10's later moves are not checked)
    assert all(e.kind == "finish" for e in run.log if e.time <= 25 and e.time not in expected)


# == Fig. 2: AMCBF ===========================================================================


def test_fig2_amcbf_j9_cannot_preempt_j10_as_j8_is_the_head():
    run = simulate(2, "amcbf")
    at20 = run.snapshots[20]
    # "When J6 departs at time 15 [20: see the module docstring], J9 can not preempt J10 as
    # J8 is at the head of the queue and only the head-of-queue job can preempt other jobs in
    # AMCBF."
    assert run.finished_at(20) == {6}
    assert at20.queue[0] == 8
    assert 9 in at20.queue
    assert run.jobs[9].start_time > 20
    assert at20.running[10] == (FG, {P1})
    assert not run.events(20, "move") and not run.events(20, "start")


def test_fig2_amcbf_matches_cmcbf_until_the_difference_at_20():
    # The paper names a single difference of AMCBF in Fig. 2, at J6's departure; before it
    # no preemption of a foreground job is involved, so both make the same decisions.
    cm, am = simulate(2, "cmcbf"), simulate(2, "amcbf")
    assert [e for e in am.log if e.time < 20] == [e for e in cm.log if e.time < 20]
