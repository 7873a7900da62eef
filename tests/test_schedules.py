"""Hand-checked tiny schedules of the backfilling family on a 10-processor machine.

Every workload is a list of ``(submit, runtime, size, requested)`` rows (job numbers 1, 2, ...
in row order). Every expected start time below is worked out by hand in the comment above it,
pass by pass, from the textbook definitions:

* FCFS starts jobs strictly in queue order and never lets a later job jump ahead.
* EASY gives a reservation to the first job that does not fit (the head) only: its *shadow*
  is the earliest estimated end at which enough processors are free for it, and *extra* is
  what is free then beyond its need. A later job may start now if it fits now and either
  ends (by its estimate) no later than the shadow or uses no more than ``extra`` processors.
* Conservative gives every queued job, in queue order, the earliest reservation that does not
  conflict with the reservations ahead of it; a job starts now only if its reservation is now.
* Selective gives a reservation only to jobs whose XFactor ``(wait + estimate) / estimate``
  has reached the threshold (fixed, or adaptive: ``max(10, mean bounded slowdown of the
  completed jobs)``).

Naming: A, B, C, D are the rows in order; "free" counts free processors out of 10.
"""

from __future__ import annotations

import pytest

from helpers import make_jobs, run_jobs, starts
from tiersweep.core.engine import Engine
from tiersweep.core.platforms import Nodes
from tiersweep.core.policies import make_policy

N = 10

#: A runs [0, 100) on 6 processors; B (8 processors) arrives at 1 and cannot start before A
#: ends: B is the head, shadow = 100 (A's estimated end, then 10 free >= 8), extra = 10 - 8 = 2.
A_THEN_BLOCKED_B = [(0, 100, 6, 100), (1, 100, 8, 100)]


# -- the two cases of the brief --------------------------------------------------------------


def test_easy_does_not_backfill_a_job_past_the_shadow_that_does_not_fit_in_extra():
    # t=2: C (4 procs, estimate 1000) fits now (4 free) but 2 + 1000 > shadow 100 and 4 > extra 2.
    # t=100: A ends, B starts (2 free); C needs 4. t=200: B ends, C starts.
    jobs = run_jobs(A_THEN_BLOCKED_B + [(2, 50, 4, 1000)], N, "easy")
    assert starts(jobs) == [0, 100, 200]
    assert [j.finish_time for j in jobs] == [100, 200, 250]


def test_easy_backfills_a_long_job_that_fits_in_extra():
    # Same, C with 2 processors: 2 <= extra 2 -> starts at 2, runs its real 50 s -> ends 52.
    # t=100: A ends, 10 free, B starts.
    jobs = run_jobs(A_THEN_BLOCKED_B + [(2, 50, 2, 1000)], N, "easy")
    assert starts(jobs) == [0, 100, 2]
    assert [j.finish_time for j in jobs] == [100, 200, 52]


@pytest.mark.parametrize(("rules", "finish"), [({}, 100), ({"overrun": "kill"}, 100), ({"overrun": "extend"}, 200)])
def test_overrun_rule_kills_at_the_request_or_extends(rules, finish):
    # Runtime 200 with a request of 100: kill (the default) stops it at 0 + 100; extend lets it run 200.
    (job,) = run_jobs([(0, 200, 10, 100)], N, "easy", rules=rules)
    assert job.start_time == 0
    assert job.finish_time == finish


# -- FCFS ------------------------------------------------------------------------------------


def test_fcfs_never_backfills_a_small_job_that_would_fit():
    # t=2: C (2 procs, 50 s) would fit in the 4 free processors and end long before B could
    # start, but FCFS stops at B. t=100: A ends, B starts (2 free), C (2) fits -> starts at 100.
    jobs = run_jobs(A_THEN_BLOCKED_B + [(2, 50, 2, 50)], N, "fcfs")
    assert starts(jobs) == [0, 100, 100]


def test_easy_backfills_the_same_small_job_that_fcfs_holds_back():
    # Contrast with FCFS: 2 + 50 = 52 <= shadow 100 -> C starts at 2.
    jobs = run_jobs(A_THEN_BLOCKED_B + [(2, 50, 2, 50)], N, "easy")
    assert starts(jobs) == [0, 100, 2]


def test_fcfs_keeps_order_when_the_later_job_does_not_fit_beside_the_head():
    # t=100: B starts, 2 free, C needs 4 -> C waits for B to end at 200.
    jobs = run_jobs(A_THEN_BLOCKED_B + [(2, 50, 4, 50)], N, "fcfs")
    assert starts(jobs) == [0, 100, 200]


# -- EASY ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("requested", "expected_c_start"),
    [
        (90, 2),  # 2 + 90 = 92 <= 100: ends before the shadow (4 procs > extra 2 does not matter)
        (98, 2),  # 2 + 98 = 100 <= 100: ending exactly at the shadow still delays no one
        (99, 200),  # 2 + 99 = 101 > 100 and 4 > extra 2: waits until B ends at 200
    ],
)
def test_easy_backfills_a_job_that_ends_by_the_shadow(requested, expected_c_start):
    # C: 4 procs, real runtime 50, estimate = request. When started at 2 it ends at 52 (< 100),
    # so B still starts at 100.
    jobs = run_jobs(A_THEN_BLOCKED_B + [(2, 50, 4, requested)], N, "easy")
    assert starts(jobs) == [0, 100, expected_c_start]


def test_easy_extra_processors_are_used_up_by_a_backfill():
    # C (2 procs, estimate 1000) arrives at 2: 2 <= extra 2 -> starts at 2, ends 52.
    # D (2 procs, estimate 1000) arrives at 3: C still holds the extra -> extra is now 0 and
    # 3 + 1000 > 100 -> waits. t=52: C ends; shadow 100, extra 2 again -> D starts at 52.
    # t=100: A ends; C gone, D holds 2 -> 8 free -> B starts on time.
    jobs = run_jobs(A_THEN_BLOCKED_B + [(2, 50, 2, 1000), (3, 50, 2, 1000)], N, "easy")
    assert starts(jobs) == [0, 100, 2, 52]


def test_easy_extra_processors_are_shared_within_one_pass():
    # C and D (2 procs each, estimate 1000) both arrive at 2: same pass, extra 2 -> only C
    # (first in queue order) may use it; D waits for C's end at 52 as above.
    jobs = run_jobs(A_THEN_BLOCKED_B + [(2, 50, 2, 1000), (2, 50, 2, 1000)], N, "easy")
    assert starts(jobs) == [0, 100, 2, 52]


@pytest.mark.parametrize(("estimate", "expected_c_start"), [("requested", 200), ("exact", 2)])
def test_easy_decision_depends_on_the_estimate_rule(estimate, expected_c_start):
    # C: 4 procs, runtime 50, request 1000.
    # requested: estimate 1000 -> 2 + 1000 > 100 and 4 > extra 2 -> no backfill -> starts at 200.
    # exact: estimate 50 -> 2 + 50 = 52 <= 100 -> backfilled at 2. (A and B have exact requests,
    # so the shadow is 100 either way.)
    jobs = run_jobs(A_THEN_BLOCKED_B + [(2, 50, 4, 1000)], N, "easy", rules={"estimate": estimate})
    assert starts(jobs) == [0, 100, expected_c_start]


def test_easy_starts_jobs_with_the_same_submit_time_in_trace_order():
    # All at t=0, in trace order J1 (4 procs, 50 s), J2 (8, 100 s), J3 (6, 100 s).
    # J1 starts (6 free). J2 is the head: shadow 50 (J1 ends, 10 free), extra 2.
    # J3 fits now (6 free) but 0 + 100 > 50 and 6 > 2 -> waits.
    # t=50: J2 starts (2 free); t=150: J2 ends, J3 starts.
    jobs = run_jobs([(0, 50, 4, 50), (0, 100, 8, 100), (0, 100, 6, 100)], N, "easy")
    assert [j.job_id for j in jobs] == [1, 2, 3]
    assert starts(jobs) == [0, 50, 150]


def test_easy_same_submit_time_other_trace_order_gives_other_schedule():
    # Same three jobs, J3 before J2 in the trace: J1 starts (6 free), J3 (6) fits -> starts at
    # 0 too, J2 waits for 10 free: J1 ends at 50 (4 free), J3 ends at 100 -> J2 starts at 100.
    jobs = run_jobs([(0, 50, 4, 50), (0, 100, 6, 100), (0, 100, 8, 100)], N, "easy")
    assert starts(jobs) == [0, 0, 100]


# -- conservative ----------------------------------------------------------------------------

#: C (9 procs) arrives at 2; with B reserved [100, 200) on 8, C's earliest slot is 200.
CONSERVATIVE_CASE = A_THEN_BLOCKED_B + [(2, 100, 9, 100)]


def test_conservative_refuses_a_backfill_that_would_delay_the_second_reservation():
    # D: 2 procs, 300 s, arrives at 3.
    # Profile at t=3: 4 free on [3,100), A ends -> 10. B reserves [100,200) -> 2 free there.
    # C (9) reserves [200,300) -> 1 free there. D needs 2 over [3,303): 1 free on [200,300) ->
    # no; D's reservation is the first slot with 2 free for 300 s: 300.
    # t=100: B starts; t=200: C starts; t=300: D starts.
    jobs = run_jobs(CONSERVATIVE_CASE + [(3, 300, 2, 300)], N, "conservative")
    assert starts(jobs) == [0, 100, 200, 300]


def test_easy_backfills_the_job_conservative_refuses():
    # EASY at t=3: head B, shadow 100, extra 2; C (9) does not fit now; D: 2 <= extra 2 -> starts
    # at 3 (ends 303). t=100: A ends, 8 free, B starts. t=200: B ends, 8 free < 9.
    # t=303: D ends, C starts -- C is delayed from 200 to 303, which conservative forbids.
    jobs = run_jobs(CONSERVATIVE_CASE + [(3, 300, 2, 300)], N, "easy")
    assert starts(jobs) == [0, 100, 303, 3]


def test_conservative_backfills_a_job_that_delays_no_reservation():
    # D': 1 proc, 500 s, arrives at 3. Free over [3,503) with B and C reserved: 4, 2, 1, 10 ->
    # always >= 1 -> starts at 3. t=100: 9 free, B (8) starts, 1 free. t=200: B ends, 9 free,
    # C (9) starts: neither B nor C was delayed.
    jobs = run_jobs(CONSERVATIVE_CASE + [(3, 500, 1, 500)], N, "conservative")
    assert starts(jobs) == [0, 100, 200, 3]


# -- selective -------------------------------------------------------------------------------


def test_selective_threshold_one_behaves_like_conservative():
    # XFactor = (wait + estimate) / estimate >= 1 always, so with threshold 1.0 every queued
    # job holds a reservation: the conservative schedule [0, 100, 200, 300] from above.
    jobs = run_jobs(CONSERVATIVE_CASE + [(3, 300, 2, 300)], N, "selective", xfactor_threshold=1.0)
    assert starts(jobs) == [0, 100, 200, 300]


def test_selective_huge_threshold_holds_no_reservations():
    # Threshold 1e12 is never reached: nobody is reserved, any job that fits now starts.
    # t=2: C (4 procs, estimate 1000) fits in the 4 free -> starts at 2 (EASY would make it wait
    # until 200), ends at 52. t=100: A ends, 10 free, B starts.
    jobs = run_jobs(A_THEN_BLOCKED_B + [(2, 50, 4, 1000)], N, "selective", xfactor_threshold=1e12)
    assert starts(jobs) == [0, 100, 2]


@pytest.mark.parametrize(
    ("c_submit", "expected"),
    [
        # C arrives at 40: H's XFactor = (40 + 100) / 100 = 1.4 < 1.5 -> no reservation.
        # C (4 procs, 200 s) fits now -> starts at 40, ends 240. t=100: A ends, 6 free < 8;
        # H's XFactor 2.0 now reaches 1.5 but its reservation can only be 240. t=240: H starts.
        (40, [0, 240, 40]),
        # C arrives at 60: H's XFactor = (60 + 100) / 100 = 1.6 >= 1.5 -> H reserves [100,200)
        # on 8 -> 2 free there. C's own XFactor is 1.0; it needs 4 over [60,260) -> blocked.
        # t=100: A ends, H starts (2 free). t=200: H ends, C starts.
        (60, [0, 100, 200]),
    ],
)
def test_selective_reservation_appears_when_xfactor_crosses_threshold(c_submit, expected):
    # A (6 procs) runs [0,100); H (8 procs, 100 s) arrives at 0 and cannot start.
    rows = [(0, 100, 6, 100), (0, 100, 8, 100), (c_submit, 200, 4, 200)]
    jobs = run_jobs(rows, N, "selective", xfactor_threshold=1.5)
    assert starts(jobs) == expected


class _ThresholdLog:
    """Wraps a Selective policy's decide to log ``(now, threshold)`` at each pass."""

    def __init__(self, policy):
        self.policy = policy
        self.seen: list[tuple[float, float]] = []
        original = policy.decide

        def decide(sim):
            self.seen.append((sim.now, policy.threshold))
            return original(sim)

        policy.decide = decide


def test_selective_adaptive_threshold_is_max_of_10_and_mean_bounded_slowdown():
    # A: 10 procs, 1000 s at 0 -> runs [0,1000): bsld = max(1, 1000 / max(10, 1000)) = 1.
    # B: 10 procs, 5 s at 0 -> runs [1000,1005): response 1005, bsld = 1005 / max(10, 5) = 100.5.
    # Before any completion the threshold is 10; after A only: max(10, 1) = 10;
    # at the end: max(10, (1 + 100.5) / 2) = 50.75.
    jobs = make_jobs([(0, 1000, 10, 1000), (0, 5, 10, 5)], N)
    policy = make_policy("selective")
    assert policy.threshold == 10.0
    log = _ThresholdLog(policy)
    Engine(jobs, Nodes(N), policy).run()
    assert starts(jobs) == [0, 1000]
    assert log.seen == [(0, 10.0), (1000, 10.0), (1005, 50.75)]
    assert policy.threshold == 50.75


def test_selective_adaptive_threshold_stays_10_for_low_slowdowns():
    # Two jobs that never wait: bsld 1 each -> mean 1 -> max(10, 1) = 10.
    jobs = make_jobs([(0, 100, 5, 100), (0, 100, 5, 100)], N)
    policy = make_policy("selective")
    Engine(jobs, Nodes(N), policy).run()
    assert policy.threshold == 10.0
