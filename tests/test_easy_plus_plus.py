"""EASY++ (Tsafrir, Etsion and Feitelson, IEEE TPDS 18(6), 2007; paper 003, section 2):
backfilling on system-generated runtime predictions, as parameters of the backfilling family.

* ``prediction: last2``: a job's prediction is the mean runtime of its user's last two
  completed jobs, capped by its request; with less history, or no user id, the request.
* A running job that outlives its prediction gets a longer one at the next pass
  (``correction: increment``, the default and the authors' scheme: 1 min, 5 min, 15 min, ...
  past the first prediction; ``request``: the request at once). The kill time stays the
  request (the workload's overrun rule).
* ``order: spf``: the jobs behind the head are tried shortest predicted first.
* ``prediction: user``, ``order: fcfs`` (the defaults) are the family as it was.

Hand-made logs run on a 10-processor machine. Rows are ``(submit, runtime, size, request,
user)``, job numbers 1, 2, ... in row order, user -1 meaning none (SWF field 12). Every
expected start time is worked out by hand in the comment above it, pass by pass: "free" counts
free processors out of 10; under EASY the head's *shadow* is the earliest planned end at which
enough processors are free for it, *extra* what is free then beyond its need, and a job behind
it starts if it fits now and ends (as planned) by the shadow or fits in the extra.

Real logs: tiersweep's EASY is compared, start time by start time, with EASY and EASY++ written
out below from the definitions (:func:`reference_easy`), on the first jobs of KTH-SP2 and
CTC-SP2 and on random workloads.
"""

from __future__ import annotations

import heapq
import itertools
import json
import math
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sweep_helpers import runs_frame
from tiersweep.cli import main
from tiersweep.contract.checks import records_digest
from tiersweep.contract.policies import PolicyContract
from tiersweep.contract.workloads import trace_path
from tiersweep.core import simulate
from tiersweep.core.engine import Engine
from tiersweep.core.errors import SpecError
from tiersweep.core.jobs import Job
from tiersweep.core.platforms import Nodes
from tiersweep.core.policies import Backfill, make_policy
from tiersweep.core.policies.backfill import Easy
from tiersweep.core.policies.prediction import INCREMENTS, LastTwo
from tiersweep.core.workloads.rules import jobs_from_records
from tiersweep.core.workloads.swf import SWF_FIELDS
from tiersweep.sweep.config import parse_sweep_config
from tiersweep.sweep.driver import run_sweep

N = 10
CTC_TRACE = "CTC-SP2-1996-3.1-cln.swf.gz"
KTH_TRACE = "KTH-SP2-1996-2.1-cln.swf.gz"

EASY_PLUS_PLUS = {"prediction": "last2", "order": "spf"}


# -- building logs --------------------------------------------------------------------------------


def swf_table(rows: Sequence[Sequence[float]]) -> np.ndarray:
    """SWF records from ``(submit, runtime, size, request, user)`` rows (job numbers 1, 2, ...)."""
    table = np.full((len(rows), len(SWF_FIELDS)), -1.0)
    for i, (submit, runtime, size, request, user) in enumerate(rows):
        table[i, [0, 1, 3, 4, 7, 8, 10, 11]] = [i + 1, submit, runtime, size, size, request, 1, user]
    return table


def write_log(path: Path, rows: Sequence[Sequence[float]], nodes: int = N) -> Path:
    """Write ``rows`` as an SWF file of a ``nodes``-processor machine; return its path."""
    lines = [f"; MaxProcs: {nodes}"]
    lines += [" ".join(f"{v:g}" for v in record) for record in swf_table(rows)]
    path.write_text("\n".join(lines) + "\n", encoding="ascii")
    return path


def run_log(tmp_path: Path, rows, policy: str = "easy", **params) -> tuple[list[float], dict[str, int]]:
    """Start times (in row order) and the workload report of ``rows`` run through ``simulate``."""
    path = write_log(tmp_path / f"log-{abs(hash(tuple(map(tuple, rows))))}.swf", rows)
    result = simulate({"workload": {"trace": str(path)}, "policy": {"name": policy, **params}})
    order = np.argsort(result.jobs["job_id"])
    return result.jobs["start_time"][order].tolist(), result.report


def engine_run(rows, policy, nodes: int = N, observer=None, **rules) -> list[Job]:
    """Run ``rows`` under ``policy`` (an instance) in-process; return the jobs in queue order."""
    jobs, _ = jobs_from_records(swf_table(rows), capacity=nodes, **rules)
    Engine(jobs, Nodes(nodes), policy, observer=observer).run()
    return jobs


# -- the predictor ----------------------------------------------------------------------------------


def finished(predictor: LastTwo, user: int, runtime: float, index: int = 10_000) -> None:
    """Tell ``predictor`` that a job of ``user`` ran ``runtime`` seconds and ended."""
    job = Job(index, index, 0.0, 1, runtime, estimate=runtime, user_id=user)
    predictor.submitted(job)
    predictor.finished(job)


def submitted(predictor: LastTwo, user: int, request: float, index: int = 0) -> float:
    return predictor.submitted(
        Job(index, index + 1, 0.0, 1, 1.0, requested_time=request, estimate=request, user_id=user)
    )


def test_a_prediction_is_the_mean_of_the_users_last_two_runtimes_capped_by_the_request():
    predictor = LastTwo()
    # User 7 has no completed job yet, then one: the request either way.
    assert submitted(predictor, 7, 1000.0, 0) == 1000.0
    finished(predictor, 7, 100.0, 100)
    assert submitted(predictor, 7, 1000.0, 1) == 1000.0
    # 100 s then 300 s: the next job is predicted (100 + 300) / 2 = 200 s ...
    finished(predictor, 7, 300.0, 101)
    assert submitted(predictor, 7, 1000.0, 2) == 200.0
    # ... capped by its request: a job that asks for 150 s is killed there, so 150 s.
    assert submitted(predictor, 7, 150.0, 3) == 150.0
    # Only the last two count: 300 s then 500 s -> 400 s.
    finished(predictor, 7, 500.0, 102)
    assert submitted(predictor, 7, 1000.0, 4) == 400.0
    # Users are separate, and a job without a user id (-1) is predicted by its request.
    assert submitted(predictor, 8, 1000.0, 5) == 1000.0
    finished(predictor, -1, 10.0, 103)
    finished(predictor, -1, 10.0, 104)
    assert submitted(predictor, -1, 1000.0, 6) == 1000.0
    # A prediction is made once, at submission: later completions do not change it.
    assert predictor.predicted[2] == 200.0


def test_the_history_is_by_completion_not_by_submission():
    # Rows (submit, runtime, size, request, user) on 10 processors, all of user 7:
    # J1 (submitted first) runs 0-500; J2 runs 0-100; J3 runs 0-200. Completion order J2, J3,
    # J1: at t=600 the last two completed are J3 (200) and J1 (500), so J4 is predicted 350 s.
    rows = [(0, 500, 1, 1000, 7), (0, 100, 1, 1000, 7), (0, 200, 1, 1000, 7), (600, 50, 1, 1000, 7)]
    policy = make_policy("easy", prediction="last2")
    seen = {}

    def note(sim):
        seen.update(policy._predictor.predicted)

    engine_run(rows, policy, observer=note)
    assert seen[3] == 350.0
    assert seen[0] == seen[1] == seen[2] == 1000.0  # no history at t=0: the request


def test_a_prediction_grows_by_the_increments_then_to_the_request():
    job = Job(0, 1, 0.0, 1, 10**6, estimate=10**6, user_id=7)
    predictor = LastTwo("increment")
    predictor.predicted[0] = 100.0  # as if predicted 100 s at submission
    grown = [predictor.grow(job) for _ in range(13)]
    # 100 s + 1 min, 5 min, 15 min, 30 min, 1 h, 2 h, 5 h, 10 h, 20 h, 50 h, 100 h; then the
    # request (10^6 s); then nothing more.
    assert grown == [100 + step for step in INCREMENTS] + [10**6, None]
    assert grown[:4] == [160, 400, 1000, 1900]
    # Capped by the request: a job that asked for 500 s grows to 160, 400, then 500.
    capped = Job(1, 2, 0.0, 1, 500, estimate=500, user_id=7)
    predictor.predicted[1] = 100.0
    assert [predictor.grow(capped) for _ in range(4)] == [160, 400, 500, None]
    # correction: request extends it to the request at once.
    at_once = LastTwo("request")
    at_once.predicted[0] = 100.0
    assert [at_once.grow(job), at_once.grow(job)] == [10**6, None]


# -- EASY++ schedules by hand ----------------------------------------------------------------------

#: User 7 runs 100 s then 300 s (A1, A2), so their next job A3 is predicted 200 s although it
#: asks for 1000 s. H (6 processors, user 1: no history, predicted its request 1000 s) holds the
#: machine until 1000; B (8 processors) arrives at 400 and is the head: shadow 1000 (H's end,
#: then 4 + 6 = 10 free >= 8), extra 10 - 8 = 2.
HISTORY = [
    (0, 100, 2, 1000, 7),  # A1: 0-100
    (0, 300, 2, 1000, 7),  # A2: 0-300
    (0, 1000, 6, 1000, 1),  # H: 0-1000
    (400, 500, 8, 500, 2),  # B: the head from 400
    (401, 150, 4, 1000, 7),  # A3: predicted (100 + 300) / 2 = 200 s
]


def test_easy_plus_plus_backfills_on_a_prediction_where_the_request_would_not(tmp_path):
    # Plain EASY, t=401: A3 fits (4 free) but 401 + 1000 > shadow 1000 and 4 > extra 2: waits.
    # t=1000: H ends, B starts (2 free); A3 needs 4. t=1500: B ends, A3 starts.
    starts, _ = run_log(tmp_path, HISTORY, "easy")
    assert starts == [0, 0, 0, 1000, 1500]
    # EASY++, t=401: 401 + 200 = 601 <= 1000: A3 starts, and ends at 551 (its real 150 s).
    # t=1000: H ends, 10 free, B starts on time.
    starts, report = run_log(tmp_path, HISTORY, "easy", **EASY_PLUS_PLUS)
    assert starts == [0, 0, 0, 1000, 401]
    assert report["no_user_id"] == 0
    # Conservative on the same predictions: t=400: B reserves 1000-1500 (4 free until H's end
    # at 1000). t=401: A3 needs 4 processors for 200 s from 401: free until 1000 -> starts.
    starts, _ = run_log(tmp_path, HISTORY, "conservative", prediction="last2")
    assert starts == [0, 0, 0, 1000, 401]
    starts, _ = run_log(tmp_path, HISTORY, "conservative")
    assert starts == [0, 0, 0, 1000, 1500]


@pytest.mark.parametrize("name", ["easy", "conservative", "selective"])
def test_prediction_user_is_the_family_as_it_was(tmp_path, name):
    rows = HISTORY + [(402, 30, 2, 60, 3), (402, 700, 3, 900, 7), (405, 10, 10, 20, -1)]
    plain, _ = run_log(tmp_path, rows, name)
    assert run_log(tmp_path, rows, name, prediction="user", order="fcfs")[0] == plain
    # (the correction rule only matters to predictions)
    assert run_log(tmp_path, rows, name, prediction="user", correction="request")[0] == plain


def test_a_log_without_user_ids_falls_back_to_the_request_and_the_report_counts_it(tmp_path):
    # HISTORY with field 12 = -1 everywhere: no history, every prediction is the request, so
    # EASY++ makes plain EASY's schedule (A3 waits until 1500), and all 5 jobs are counted.
    anonymous = [(*row[:4], -1) for row in HISTORY]
    starts, report = run_log(tmp_path, anonymous, "easy", **EASY_PLUS_PLUS)
    assert starts == [0, 0, 0, 1000, 1500]
    assert report["no_user_id"] == 5
    # Only A1 without one: user 7's history is A2 alone, so A3 is still predicted its request.
    partly = [(*HISTORY[0][:4], -1), *HISTORY[1:]]
    starts, report = run_log(tmp_path, partly, "easy", **EASY_PLUS_PLUS)
    assert starts == [0, 0, 0, 1000, 1500]
    assert report["no_user_id"] == 1


def test_a_synthetic_model_has_no_users_so_easy_plus_plus_is_easy_there():
    base = {"workload": {"model": "lublin03", "jobs": 300, "load": 0.95}, "platform": {"nodes": 64}}
    plain = simulate({**base, "policy": {"name": "easy"}})
    predicted = simulate({**base, "policy": {"name": "easy", "prediction": "last2"}})
    assert predicted.report["no_user_id"] == 300 == plain.report["no_user_id"]
    assert np.array_equal(predicted.jobs["start_time"], plain.jobs["start_time"])


#: R (6 processors) is predicted 100 s from user 7's two 100 s jobs but runs 1000 s (asking for
#: 5000). B (8 processors) is the head from 250.
CORRECTION = [
    (0, 100, 1, 5000, 7),  # A1: 0-100
    (0, 100, 1, 5000, 7),  # A2: 0-100
    (200, 1000, 6, 5000, 7),  # R: starts 200, predicted end 300, really ends 1200
    (250, 100, 8, 100, 2),  # B: the head
    (260, 50, 4, 50, 4),  # D
    (400, 10, 1, 10, 5),  # C
]


def test_a_too_short_prediction_is_corrected_and_the_reservation_moves():
    # t=200: R starts, predicted 100 s -> planned end 300; 4 free.
    # t=250: B is the head: shadow 300 (R's planned end, then 10 free), extra 2.
    # t=260: D (4 processors, 50 s): 260 + 50 = 310 > 300 and 4 > extra 2: waits.
    # t=300: R outlives its prediction; nothing happens then (no event, no pass).
    # t=400: C arrives. The pass first corrects R: 100 + 1 min = 160 (end 360 <= 400), then
    #   100 + 5 min = 400 (end 600 > 400). Shadow 600, extra 2. D: 400 + 50 = 450 <= 600:
    #   starts (0 free). C waits.
    # t=450: D ends, 4 free; R's end 600 is ahead, no correction. C: 450 + 10 <= 600: starts.
    # t=1200: R really ends; B starts.
    policy = make_policy("easy", prediction="last2", correction="increment")
    seen: list[tuple[float, float, float]] = []

    def note(sim):
        memo = policy._memo  # (shadow, extra, ...) of the pass just made
        seen.append((sim.now, policy._predictor.predicted.get(2, math.nan), memo[0] if memo else math.nan))

    jobs = engine_run(CORRECTION, policy, observer=note)
    assert [j.start_time for j in jobs] == [0, 0, 200, 1200, 400, 450]
    by_time = {now: (prediction, shadow) for now, prediction, shadow in seen}
    assert by_time[250] == (100, 300) and by_time[260] == (100, 300)
    assert by_time[400] == (400, 600) and by_time[450] == (400, 600)
    assert 300 not in by_time and 600 not in by_time  # no pass at R's planned ends
    # Plain EASY plans R with its request (end 5200): D starts at once at 260, C at 400.
    jobs = engine_run(CORRECTION, make_policy("easy"))
    assert [j.start_time for j in jobs] == [0, 0, 200, 1200, 260, 400]


def test_conservative_moves_the_reservations_of_a_corrected_prediction():
    # t=250: B reserves 300-400 (10 free from R's planned end 300).
    # t=260: D needs 4 for 50 s: 4 free only until 300, 2 during B's reservation: reserved 400.
    # t=400: R corrected to 400 s (end 600): B's reservation moves to 600-700; D fits now
    #   (400-450, 4 free until 600): starts; C (1 for 10 s): 0 free now, reserved 450.
    # t=450: D ends: C starts. t=1200: R ends, B starts.
    jobs = engine_run(CORRECTION, make_policy("conservative", prediction="last2", correction="increment"))
    assert [j.start_time for j in jobs] == [0, 0, 200, 1200, 400, 450]


#: As CORRECTION with E (4 processors, 250 s, request 250) instead of D and C.
CORRECTION_E = [*CORRECTION[:4], (400, 250, 4, 250, 5)]


def test_selective_measures_the_xfactor_on_the_prediction(tmp_path):
    # Threshold 2: starved once (wait + planned) / planned >= 2, i.e. after waiting as long as
    # planned. H holds 6 processors 0-2000. S (8 processors, user 7: predicted 200 s from
    # 100 s and 300 s, asking for 1000 s) waits from 500; L (4 processors, 3000 s) comes at 800.
    rows = [
        (0, 100, 1, 5000, 7),
        (0, 300, 1, 5000, 7),
        (0, 2000, 6, 2000, 1),  # H
        (500, 300, 8, 1000, 7),  # S
        (800, 500, 4, 3000, 3),  # L
    ]
    # Requests: at 800 S's XFactor is (300 + 1000) / 1000 = 1.3: no reservation; L fits the 4
    # free processors: starts at 800 (ends 1300). t=2000: H ends, S starts.
    assert run_log(tmp_path, rows, "selective", xfactor_threshold=2)[0][3:] == [2000, 800]
    # Predictions: (300 + 200) / 200 = 2.5: S reserves 2000-2200 (10 free from H's end); L
    # would hold 4 past 2000, where only 2 are left: waits. t=2000: S starts; t=2300: S ends, L.
    assert run_log(tmp_path, rows, "selective", xfactor_threshold=2, prediction="last2")[0][3:] == [2000, 2300]


@pytest.mark.parametrize(("correction", "e_start"), [("increment", 1300), ("request", 400)])
def test_the_correction_rule_decides_how_far_the_shadow_moves(correction, e_start):
    # t=400: R is corrected. increment: to 400 s (end 600): E: 400 + 250 = 650 > 600 and
    #   4 > extra 2: waits; t=1200: R ends, B starts (2 free); t=1300: B ends, E starts.
    # request: to 5000 s (end 5200): 650 <= 5200: E starts at 400.
    jobs = engine_run(CORRECTION_E, make_policy("easy", prediction="last2", correction=correction))
    assert [j.start_time for j in jobs] == [0, 0, 200, 1200, e_start]


def test_a_prediction_is_never_longer_than_the_request_and_past_it_the_job_ends_any_moment():
    # overrun: extend lets R (request 300, predicted 100) run 1000 s. Corrections: 160, 300
    # (capped by the request); past 500 (its request's end) it is expected to end at the next
    # instant, as a job past its estimate is without predictions: the head's shadow is "now".
    rows = [
        (0, 100, 1, 300, 7),
        (0, 100, 1, 300, 7),
        (200, 1000, 6, 300, 7),
        (250, 100, 8, 100, 2),
        (600, 10, 4, 100, 3),
    ]
    policy = make_policy("easy", prediction="last2")
    seen = {}

    def note(sim):
        seen[sim.now] = policy._predictor.predicted.get(2)

    jobs = engine_run(rows, policy, observer=note, overrun="extend")
    # t=600: R is at its request (300 s, end 500 <= 600): shadow is the next instant; the
    # 4-processor job cannot use the extra 2 and waits for R's end (1200) and B's (1300).
    assert seen[600] == 300
    assert [j.start_time for j in jobs] == [0, 0, 200, 1200, 1300]


#: Histories: user 3 ran 300 s and 500 s (mean 400), user 4 100 s twice (mean 100). H holds 6
#: processors 1000-2000; B (8) is the head from 1010: shadow 2000, extra 2. X (user 3) and Y
#: (user 4), 4 processors each and both asking for 900 s, arrive together at 1020: only one
#: of them fits.
SPF = [
    (0, 300, 1, 1000, 3),
    (0, 500, 1, 1000, 3),
    (0, 100, 1, 1000, 4),
    (0, 100, 1, 1000, 4),
    (1000, 1000, 6, 1000, 1),  # H
    (1010, 100, 8, 100, 2),  # B
    (1020, 450, 4, 900, 3),  # X: predicted 400
    (1020, 150, 4, 900, 4),  # Y: predicted 100
]


@pytest.mark.parametrize(
    ("params", "x_start", "y_start"),
    [
        # Plain EASY: X first (queue order): 1020 + 900 = 1920 <= 2000: starts, 0 free. t=1470:
        # X ends; Y: 1470 + 900 > 2000 and 4 > extra 2. t=2000: B starts (2 free). t=2100: Y.
        ({}, 1020, 2100),
        # SPF by the requests: 900 = 900, ties in queue order: as plain EASY.
        ({"order": "spf"}, 1020, 2100),
        # last2 in queue order: X (1020 + 400 <= 2000) starts; t=1470: X ends (it outlived its
        # 400 s, but no pass came in between); Y: 1470 + 100 <= 2000: starts.
        ({"prediction": "last2"}, 1020, 1470),
        # EASY++: Y (100 s) is tried before X (400 s): Y starts at 1020 and ends at 1170; then
        # X: 1170 + 400 <= 2000: starts.
        (EASY_PLUS_PLUS, 1170, 1020),
    ],
)
def test_spf_order_changes_which_job_backfills(tmp_path, params, x_start, y_start):
    starts, _ = run_log(tmp_path, SPF, "easy", **params)
    assert starts[5:] == [2000, x_start, y_start]


def test_spf_by_the_requests_backfills_the_shorter_request_first(tmp_path):
    # Y asks for 300 s. Plain EASY: X (1020 + 900 <= 2000) starts; t=1470: Y (1470 + 300 <=
    # 2000) starts. SPF: Y (300) before X (900): Y starts at 1020, ends 1170; X: 1170 + 900 =
    # 2070 > 2000 and 4 > 2: waits for B's end at 2100.
    rows = [*SPF[:7], (1020, 150, 4, 300, 4)]
    assert run_log(tmp_path, rows, "easy")[0][6:] == [1020, 1470]
    assert run_log(tmp_path, rows, "easy", order="spf")[0][6:] == [2100, 1020]
    # Conservative: the head keeps its place and its reservation (2000-2100); behind it Y then
    # X: Y fits 1020-1320; X needs 4 for 900 s: from 1170 (Y's real end) it would end 2070,
    # into B's reservation: reserved 2100.
    assert run_log(tmp_path, rows, "conservative", order="spf")[0][6:] == [2100, 1020]


def test_the_new_keys_are_checked_and_fcfs_takes_none():
    with pytest.raises(SpecError, match=r"policy.prediction: unknown value 'last3'; valid choices: user, last2"):
        simulate({"workload": {"model": "lublin03", "jobs": 5}, "policy": {"name": "easy", "prediction": "last3"}})
    with pytest.raises(SpecError, match=r"policy.order: unknown value 'sjf'; valid choices: fcfs, spf"):
        simulate({"workload": {"model": "lublin03", "jobs": 5}, "policy": {"name": "conservative", "order": "sjf"}})
    with pytest.raises(SpecError, match=r"policy.prediction: unknown key"):
        simulate({"workload": {"model": "lublin03", "jobs": 5}, "policy": {"name": "fcfs", "prediction": "last2"}})
    with pytest.raises(ValueError, match="correction: unknown value 'double'"):
        Easy(correction="double")  # built directly, without the spec's checks


# -- against EASY and EASY++ written out from the definitions --------------------------------------


def reference_easy(
    jobs: Sequence[Job], nodes: int, prediction: str = "user", order: str = "fcfs", correction: str = "increment"
) -> list[float]:
    """Start times of EASY (``prediction: user``) or EASY with predictions, one full pass after
    every timestamp at which something happened (finishes, then arrivals), from the jobs'
    submit times, sizes, runtimes, estimates (requests) and user ids.

    A running job's planned end is its start plus its prediction; at each pass a job at or past
    its planned end gets the next prediction (``increment``: the first prediction plus 1 min,
    5 min, ..., capped by the request; ``request``: the request) until its planned end is ahead
    or its prediction is its request; a planned end still at or before now counts as the next
    instant. The head's shadow is the first planned end (in order) at which enough processors are
    free; extra is what is free at the shadow beyond the head's need; the jobs behind the head
    are tried in queue order or by (prediction, queue order).
    """
    n = len(jobs)
    start = [math.nan] * n
    finishes: list[tuple[float, int, int]] = []  # (time, sequence, index)
    sequence = itertools.count()
    planned: dict[int, float] = {}  # queued and running jobs: their prediction now
    first: dict[int, float] = {}
    steps: dict[int, int] = {}
    planned_end: dict[int, float] = {}  # running jobs
    last: dict[int, float] = {}
    mean: dict[int, float] = {}
    queue: list[int] = []
    free = nodes
    cursor = 0

    def begin(i: int, now: float) -> None:
        nonlocal free
        start[i] = now
        free -= jobs[i].size
        planned_end[i] = now + planned[i]
        heapq.heappush(finishes, (now + jobs[i].runtime, next(sequence), i))

    while cursor < n or finishes:
        now = min(jobs[cursor].submit_time if cursor < n else math.inf, finishes[0][0] if finishes else math.inf)
        while finishes and finishes[0][0] == now:
            _, _, i = heapq.heappop(finishes)
            free += jobs[i].size
            del planned_end[i]
            user = jobs[i].user_id
            if user >= 0:
                if user in last:
                    mean[user] = (last[user] + jobs[i].runtime) / 2
                last[user] = jobs[i].runtime
        while cursor < n and jobs[cursor].submit_time == now:
            job = jobs[cursor]
            guess = mean.get(job.user_id) if prediction == "last2" else None
            planned[cursor] = job.estimate if guess is None else min(guess, job.estimate)
            queue.append(cursor)
            cursor += 1
        for i, end in list(planned_end.items()):  # corrections
            while end <= now and planned[i] < jobs[i].estimate:
                if correction == "request":
                    grown = jobs[i].estimate
                else:
                    first.setdefault(i, planned[i])
                    made = steps.get(i, 0)
                    grown = (
                        min(jobs[i].estimate, first[i] + INCREMENTS[made])
                        if made < len(INCREMENTS)
                        else jobs[i].estimate
                    )
                    steps[i] = made + 1
                end += grown - planned[i]
                planned[i] = grown
            planned_end[i] = end
        while queue and jobs[queue[0]].size <= free:
            begin(queue.pop(0), now)
        if not queue or free == 0:
            continue
        head = jobs[queue[0]]
        soon = math.nextafter(now, math.inf)
        ends = sorted((max(end, soon), jobs[i].size) for i, end in planned_end.items())
        available, shadow = free, math.inf
        for end, size in ends:
            available += size
            if available >= head.size:
                shadow = end
                break
        extra = free + sum(size for end, size in ends if end <= shadow) - head.size
        behind = queue[1:]
        if order == "spf":
            behind.sort(key=lambda i: (planned[i], i))
        for i in behind:
            job = jobs[i]
            if job.size > free:
                continue
            if now + planned[i] <= shadow:
                pass
            elif job.size <= extra:
                extra -= job.size
            else:
                continue
            queue.remove(i)
            begin(i, now)
    return start


def tiersweep_starts(jobs: list[Job], nodes: int, policy: str = "easy", **params) -> list[float]:
    Engine(jobs, Nodes(nodes), make_policy(policy, **params)).run()
    return [job.start_time for job in jobs]


def trace_jobs(name: str, count: int, **rules) -> tuple[list[Job], int]:
    """The first ``count`` jobs of a log, through the workload rules, and its machine size."""
    from tiersweep.core.spec import validate_spec
    from tiersweep.core.workloads.build import build_workload

    spec = validate_spec({"workload": {"trace": str(trace_path(name)), "jobs": count, **rules}})
    built = build_workload(spec["workload"], seed=1, nodes=None)
    return built.jobs, built.nodes


PARAMS = [
    {},
    {"order": "spf"},
    {"prediction": "last2"},
    EASY_PLUS_PLUS,
    {"prediction": "last2", "order": "spf", "correction": "request"},
]


@pytest.mark.parametrize("params", PARAMS, ids=lambda p: "-".join(p.values()) or "defaults")
# (CTC-SP2 in the slow run: the default run keeps one log, KTH-SP2)
@pytest.mark.parametrize("trace", [KTH_TRACE, pytest.param(CTC_TRACE, marks=pytest.mark.slow)])
def test_the_first_5000_jobs_of_a_log_as_written_out_from_the_definitions(trace, params):
    # With the defaults this is plain EASY: the schedule of prediction: user, order: fcfs is
    # the textbook one, start time by start time.
    jobs, nodes = trace_jobs(trace, 5000)
    expected = reference_easy(jobs, nodes, **params)
    jobs, nodes = trace_jobs(trace, 5000)
    assert tiersweep_starts(jobs, nodes, **params) == expected


@pytest.mark.slow
@pytest.mark.parametrize("trace", [KTH_TRACE, "SDSC-SP2-1998-4.2-cln.swf.gz", CTC_TRACE])
def test_easy_plus_plus_with_the_increments_on_a_whole_log_as_written_out(trace):
    # Every job of the log: the figures of test_easy_plus_plus_against_easy_on_whole_logs are
    # those of the scheme as defined, not of a slip in the fast paths (memo, SPF index).
    params = {**EASY_PLUS_PLUS, "correction": "increment"}
    jobs, nodes = trace_jobs(trace, 10**6)
    expected = reference_easy(jobs, nodes, **params)
    jobs, nodes = trace_jobs(trace, 10**6)
    assert tiersweep_starts(jobs, nodes, **params) == expected


def test_prediction_user_on_a_log_is_the_schedule_without_the_keys():
    for name in ("easy", "conservative", "selective"):
        jobs, nodes = trace_jobs(KTH_TRACE, 2000)
        plain = tiersweep_starts(jobs, nodes, name)
        jobs, nodes = trace_jobs(KTH_TRACE, 2000)
        assert tiersweep_starts(jobs, nodes, name, prediction="user", order="fcfs") == plain


@pytest.mark.parametrize("correction", ["request", "increment"])
@pytest.mark.parametrize("overrun", ["kill", "extend"])
def test_overrunning_jobs_are_corrected_as_written_out(overrun, correction):
    # overrun: extend and estimates of half the runtime: jobs outlive their requests too.
    params = {**EASY_PLUS_PLUS, "correction": correction}
    jobs, nodes = trace_jobs(KTH_TRACE, 3000, overrun=overrun, estimate="factor:0.5")
    expected = reference_easy(jobs, nodes, **params)
    jobs, nodes = trace_jobs(KTH_TRACE, 3000, overrun=overrun, estimate="factor:0.5")
    assert tiersweep_starts(jobs, nodes, **params) == expected


class ProfileEasy(Backfill):
    """EASY through the generic availability-profile path: only the first blocked job reserves."""

    name = "profile-easy"

    def reserves(self, job, now, reserved):
        return reserved == 0


@st.composite
def workloads(draw):
    """``(nodes, rows)``: rows ``(submit, runtime, size, request, user)`` of a few users, submit
    times in order, requests above and below the runtimes."""
    nodes = draw(st.integers(1, 12))
    rows, submit = [], 0
    for _ in range(draw(st.integers(1, 30))):
        submit += draw(st.sampled_from([0, 0, 1, 5, 50, 200, 400]))
        runtime = draw(st.integers(0, 1000))
        request = max(1, runtime + draw(st.integers(-300, 600)))
        rows.append((submit, runtime, draw(st.integers(1, nodes)), request, draw(st.sampled_from([-1, 1, 2, 3]))))
    return nodes, rows


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    workload=workloads(),
    overrun=st.sampled_from(["kill", "extend"]),
    params=st.sampled_from(PARAMS[1:]),
)
def test_random_workloads_as_written_out_and_through_the_generic_profile(workload, overrun, params):
    nodes, rows = workload
    jobs, _ = jobs_from_records(swf_table(rows), capacity=nodes, overrun=overrun)
    expected = reference_easy(jobs, nodes, **params)
    assert [j.start_time for j in engine_run(rows, make_policy("easy", **params), nodes, overrun=overrun)] == expected
    # EASY's shadow / extra fast path and its arrival memo against the generic profile path.
    assert [j.start_time for j in engine_run(rows, ProfileEasy(**params), nodes, overrun=overrun)] == expected


# -- determinism, the command line, sweeps, the contract ---------------------------------------------


def test_the_same_spec_gives_the_same_schedule_in_another_interpreter():
    spec = {
        "workload": {"trace": str(trace_path(KTH_TRACE)), "jobs": 2000},
        "policy": {"name": "selective", **EASY_PLUS_PLUS},
    }
    mine = records_digest(simulate(spec).jobs)
    assert records_digest(simulate(spec).jobs) == mine
    code = (
        "import json, sys; from tiersweep.core import simulate; from tiersweep.contract.checks import records_digest; "
        "print(records_digest(simulate(json.loads(sys.argv[1])).jobs))"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    theirs = subprocess.run(
        [sys.executable, "-c", code, json.dumps(spec)], capture_output=True, text=True, env=env, check=True
    )
    assert theirs.stdout.strip() == mine


def test_tiersweep_run_takes_the_new_keys(tmp_path, capsys):
    log = write_log(tmp_path / "history.swf", HISTORY)
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"workload: {{trace: {log.name}}}\npolicy: {{name: easy}}\n")
    assert main(["run", str(spec), "--json", "--set", "policy.prediction=last2", "--set", "policy.order=spf"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["spec"]["policy"] == {"name": "easy", "prediction": "last2", "order": "spf", "correction": "increment"}
    assert out["report"]["no_user_id"] == 0
    assert main(["run", str(spec), "--set", "policy.prediction=last2", "--set", "policy.order=spf"]) == 0
    assert "policy    easy (prediction=last2, order=spf), estimate" in capsys.readouterr().out
    assert main(["run", str(spec)]) == 0
    assert "policy    easy, estimate" in capsys.readouterr().out  # defaults are not spelled out


def test_a_sweep_over_the_new_keys_stores_them_and_the_report(tmp_path):
    log = write_log(tmp_path / "history.swf", HISTORY)
    config = parse_sweep_config(
        {
            "name": "epp",
            "base": {"workload": {"trace": str(log)}, "policy": {"name": "easy"}},
            "grid": {"policy.prediction": ["user", "last2"], "policy.order": ["fcfs", "spf"]},
            "seeds": [1],
        }
    )
    outcome = run_sweep(config, tmp_path / "out", backend="serial", progress=False)
    assert (outcome.computed, outcome.failed) == (4, 0)
    runs = runs_frame(tmp_path / "out" / "epp")
    assert sorted(zip(runs["policy.prediction"], runs["policy.order"])) == [
        ("last2", "fcfs"),
        ("last2", "spf"),
        ("user", "fcfs"),
        ("user", "spf"),
    ]
    assert set(runs["report.no_user_id"]) == {0} and set(runs["status"]) == {"ok"}
    # A3 backfilled at 401 instead of waiting until 1500: a shorter mean wait with last2.
    wait = dict(zip(runs["policy.prediction"] + "/" + runs["policy.order"], runs["mean_wait"]))
    assert wait["last2/fcfs"] < wait["user/fcfs"]


#: The contract of the shipped suite for the backfilling members with the new keys (the
#: generated classes of test_conformance run their defaults). Its KTH-SP2 slices have user ids.
_CONTRACT_CASES = {
    "EasyPlusPlus": ("easy", EASY_PLUS_PLUS, {}),
    "EasyLast2Request": ("easy", {"prediction": "last2", "correction": "request"}, {}),
    "EasyPlusPlusOnTwoTiers": ("easy", EASY_PLUS_PLUS, {"tiers": 2, "migration_cost": 20.0}),
    "ConservativePlusPlus": ("conservative", EASY_PLUS_PLUS, {}),
    "SelectivePlusPlus": ("selective", EASY_PLUS_PLUS, {}),
    "SelectiveLast2Threshold2": ("selective", {"prediction": "last2", "xfactor_threshold": 2.0}, {}),
}
for _label, (_name, _params, _platform) in _CONTRACT_CASES.items():
    globals()[f"TestContract{_label}"] = type(
        f"TestContract{_label}",
        (PolicyContract,),
        {"policy": _name, "policy_params": _params, "platform": "nodes", "platform_params": _platform},
    )


class TestContractOnSharedVms(PolicyContract):
    """EASY++ on shared VMs (the platform of paper 001): jobs progress below rate 1 there."""

    policy = "easy"
    policy_params = EASY_PLUS_PLUS
    platform = "shared_vms"
    platform_params = {"machines": 25, "vms": 4, "shares": "heterogeneous"}


#: Whole logs, EASY and EASY++ (last2, spf) with each correction: (mean wait, mean bounded
#: slowdown) as measured, rounded. The increments beat EASY on both metrics on KTH-SP2 only.
WHOLE_LOGS = {
    KTH_TRACE: {"easy": (6837, 92.87), "increment": (6258, 63.45), "request": (5654, 63.15)},
    "SDSC-SP2-1998-4.2-cln.swf.gz": {"easy": (20572, 88.53), "increment": (24573, 83.36), "request": (18667, 68.09)},
    CTC_TRACE: {"easy": (13943, 49.25), "increment": (31344, 66.35), "request": (11262, 27.55)},
}


@pytest.mark.slow
@pytest.mark.parametrize("log", list(WHOLE_LOGS))
def test_easy_plus_plus_against_easy_on_whole_logs(log):
    # The paper's claim (Tsafrir et al. 2007; paper 003, section 2): EASY++ improves on EASY.
    # With the authors' increments (the default) it holds on KTH-SP2, and on SDSC-SP2 for the
    # slowdown only; on CTC-SP2 it fails on both. Extending to the request wins everywhere.
    # The schedules agree job for job with EASY++ written out from its definition (the
    # reference below, on every job of these logs), so these are the scheme's figures.
    path = str(trace_path(log))
    base = {"workload": {"trace": path}, "platform": {"kind": "nodes"}}
    measured = {"easy": simulate({**base, "policy": {"name": "easy"}}).metrics}
    for correction in ("increment", "request"):
        policy = {"name": "easy", **EASY_PLUS_PLUS, "correction": correction}
        measured[correction] = simulate({**base, "policy": policy}).metrics
    for label, (wait, bsld) in WHOLE_LOGS[log].items():
        assert measured[label]["mean_wait"] == pytest.approx(wait, abs=1), label
        assert measured[label]["mean_bsld"] == pytest.approx(bsld, abs=0.01), label


def test_the_default_correction_is_the_authors_increments():
    # CORRECTION_E by hand (test_the_correction_rule_decides_how_far_the_shadow_moves): with
    # the increments R is corrected to 400 s at t=400 (end 600) and E (400 + 250 > 600, 4 >
    # extra 2) waits until B ends at 1300; extended to the request E would start at 400.
    jobs = engine_run(CORRECTION_E, make_policy("easy", prediction="last2"))
    assert [j.start_time for j in jobs] == [0, 0, 200, 1200, 1300]
    spec = {"workload": {"model": "lublin03", "jobs": 5}, "policy": {"name": "easy", "prediction": "last2"}}
    spec = simulate(spec).spec
    assert spec["policy"]["correction"] == "increment"
