"""The workload rules (core/workloads/rules.py): from SWF records to the jobs a run simulates.

Covers the job size (requested processors, field 8, falling back to allocated, field 5, when it
is -1, and the symmetric ``size_field: allocated``); the drop rules (size <= 0, runtime < 0,
negative submit time, larger than the platform), each counted in the :class:`WorkloadReport`;
the stable sort by submit time and the ``reordered`` count; the ``overrun`` rule (kill, extend);
missing requested times; the ``estimate`` rules (requested, exact, factor:<f>) and
:func:`parse_estimate`; the ``jobs`` limit (first N valid jobs in file order); ``Job.index``
as queue order; and malformed lines skipped and counted through :func:`simulate`.

Expected values are worked out by hand from tiny tables and raw-text SWF files.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from helpers import swf_rows
from tiersweep.core.errors import TraceFormatError
from tiersweep.core.simulate import simulate
from tiersweep.core.workloads.rules import WorkloadReport, jobs_from_records, parse_estimate
from tiersweep.core.workloads.swf import read_swf


def swf_line(job: int, submit: float, run: float, alloc: int, procs: int, req: float) -> str:
    """One raw 18-field SWF job line with separate allocated (5) and requested (8) processors."""
    fields = [job, submit, -1, run, alloc, -1, -1, procs, req, -1, 1, 1, 1, -1, -1, -1, -1, -1]
    return " ".join(str(f) for f in fields)


def records_from_text(tmp_path, lines: list[str], header: str = "; MaxProcs: 8\n"):
    path = tmp_path / "w.swf"
    path.write_text(header + "".join(f"{line}\n" for line in lines))
    return read_swf(path).records


def accounted(report: WorkloadReport, jobs: list) -> bool:
    """Every record read is either a job or counted by exactly one drop/limit rule."""
    return report.records == len(jobs) + report.dropped_invalid + report.dropped_too_large + report.truncated


# --- job size -----------------------------------------------------------------------------------


def test_size_is_requested_processors_by_default(tmp_path):
    records = records_from_text(tmp_path, [swf_line(1, 0, 10, alloc=4, procs=2, req=60)])
    jobs, report = jobs_from_records(records, capacity=8)
    assert [j.size for j in jobs] == [2]
    assert report.size_fallback == 0


def test_size_field_allocated_uses_field_5(tmp_path):
    records = records_from_text(tmp_path, [swf_line(1, 0, 10, alloc=4, procs=2, req=60)])
    jobs, report = jobs_from_records(records, capacity=8, size_field="allocated")
    assert [j.size for j in jobs] == [4]
    assert report.size_fallback == 0


def test_requested_size_falls_back_to_allocated_when_minus_one(tmp_path):
    records = records_from_text(
        tmp_path,
        [
            swf_line(1, 0, 10, alloc=4, procs=-1, req=60),  # falls back to 4
            swf_line(2, 1, 10, alloc=3, procs=2, req=60),  # 2, no fallback
            swf_line(3, 2, 10, alloc=-1, procs=-1, req=60),  # both unknown: invalid
        ],
    )
    jobs, report = jobs_from_records(records, capacity=8)
    assert [(j.job_id, j.size) for j in jobs] == [(1, 4), (2, 2)]
    assert report.size_fallback == 1
    assert report.dropped_invalid == 1


def test_allocated_size_falls_back_to_requested_when_minus_one(tmp_path):
    records = records_from_text(
        tmp_path,
        [
            swf_line(1, 0, 10, alloc=-1, procs=5, req=60),  # falls back to 5
            swf_line(2, 1, 10, alloc=3, procs=2, req=60),  # 3, no fallback
        ],
    )
    jobs, report = jobs_from_records(records, capacity=8, size_field="allocated")
    assert [(j.job_id, j.size) for j in jobs] == [(1, 5), (2, 3)]
    assert report.size_fallback == 1


def test_requested_zero_does_not_fall_back(tmp_path):
    # Only -1 means "unknown"; a requested size of 0 is an invalid job.
    records = records_from_text(tmp_path, [swf_line(1, 0, 10, alloc=4, procs=0, req=60)])
    jobs, report = jobs_from_records(records, capacity=8)
    assert jobs == []
    assert report.dropped_invalid == 1
    assert report.size_fallback == 0


def test_bad_size_field_or_overrun_raises_value_error():
    records = swf_rows([(0, 10, 1, 60)])
    with pytest.raises(ValueError, match="size_field"):
        jobs_from_records(records, capacity=4, size_field="used")
    with pytest.raises(ValueError, match="overrun"):
        jobs_from_records(records, capacity=4, overrun="stop")


# --- invalid and too-large jobs -----------------------------------------------------------------


def test_invalid_jobs_are_dropped_and_counted_runtime_zero_kept():
    records = swf_rows(
        [
            (0, 10, 2, 60),  # 1: ok
            (1, 10, 0, 60),  # 2: size 0
            (2, 10, -1, 60),  # 3: size -1 (both processor fields -1)
            (3, -1, 2, 60),  # 4: runtime -1
            (4, 0, 2, 60),  # 5: runtime 0: kept
            (-5, 10, 2, 60),  # 6: negative submit time
            (6, 10, 3, 60),  # 7: ok
        ]
    )
    jobs, report = jobs_from_records(records, capacity=4)
    assert [j.job_id for j in jobs] == [1, 5, 7]
    assert jobs[1].runtime == 0.0
    assert report.records == 7
    assert report.dropped_invalid == 4
    assert report.dropped_too_large == 0
    assert report.dropped == 4
    assert accounted(report, jobs)


def test_jobs_larger_than_capacity_are_dropped_and_counted():
    records = swf_rows([(0, 10, 4, 60), (1, 10, 5, 60), (2, 10, 1, 60), (3, 10, 100, 60)])
    jobs, report = jobs_from_records(records, capacity=4)
    assert [(j.job_id, j.size) for j in jobs] == [(1, 4), (3, 1)]  # size == capacity is kept
    assert report.dropped_too_large == 2
    assert report.dropped_invalid == 0
    assert report.dropped == 2
    assert accounted(report, jobs)


def test_invalid_job_larger_than_capacity_counts_only_as_invalid():
    records = swf_rows([(0, -1, 9, 60), (1, 10, 1, 60)])
    jobs, report = jobs_from_records(records, capacity=4)
    assert [j.job_id for j in jobs] == [2]
    assert (report.dropped_invalid, report.dropped_too_large) == (1, 0)


# --- order --------------------------------------------------------------------------------------


def test_out_of_order_submits_are_stably_sorted_and_counted():
    submits = [10, 5, 20, 7, 20, 3, 5]
    records = swf_rows([(s, 1, 1, 60) for s in submits])
    jobs, report = jobs_from_records(records, capacity=1)
    # Job numbers are 1..7 in file order; ties (5: jobs 2 and 7; 20: jobs 3 and 5) keep it.
    assert [j.job_id for j in jobs] == [6, 2, 7, 4, 1, 3, 5]
    assert [j.submit_time for j in jobs] == [3, 5, 5, 7, 10, 20, 20]
    # Below the max seen before them: 5 (<10), 7 (<20), 3 (<20), 5 (<20); the second 20 ties.
    assert report.reordered == 4


def test_stable_sort_and_reordered_count_on_a_larger_shuffled_trace():
    # Many ties among 300 jobs (small arrays sort stably by any algorithm; this one is larger).
    rng = np.random.default_rng(7)
    submits = rng.integers(0, 12, size=300).tolist()
    jobs, report = jobs_from_records(swf_rows([(s, 1, 1, 60) for s in submits]), capacity=1)
    expected_order = sorted(range(300), key=lambda i: submits[i])  # Python's sort is stable
    assert [j.job_id for j in jobs] == [i + 1 for i in expected_order]
    assert [j.index for j in jobs] == list(range(300))
    seen, below = -1, 0
    for s in submits:
        below += s < seen
        seen = max(seen, s)
    assert report.reordered == below


def test_sorted_trace_reports_no_reordering_even_with_ties():
    records = swf_rows([(0, 1, 1, 60), (0, 1, 1, 60), (4, 1, 1, 60), (4, 1, 1, 60), (9, 1, 1, 60)])
    jobs, report = jobs_from_records(records, capacity=1)
    assert report.reordered == 0
    assert [j.job_id for j in jobs] == [1, 2, 3, 4, 5]


def test_job_index_is_position_in_queue_order():
    records = swf_rows([(30, 1, 1, 60), (10, 1, 1, 60), (20, 1, 1, 60), (10, 1, 1, 60)])
    jobs, _ = jobs_from_records(records, capacity=1)
    assert [j.index for j in jobs] == [0, 1, 2, 3]
    assert [j.job_id for j in jobs] == [2, 4, 3, 1]


# --- requested time, overrun and estimates ------------------------------------------------------


def test_missing_requested_time_is_nan_counted_and_estimate_falls_back_to_runtime():
    records = swf_rows([(0, 50, 1, -1), (1, 70, 1, 0), (2, 30, 1, 90)])
    jobs, report = jobs_from_records(records, capacity=2)
    assert math.isnan(jobs[0].requested_time)
    assert math.isnan(jobs[1].requested_time)
    assert jobs[2].requested_time == 90
    assert report.missing_requested_time == 2
    assert report.estimate_from_runtime == 2
    assert [j.estimate for j in jobs] == [50, 70, 90]
    assert [j.runtime for j in jobs] == [50, 70, 30]
    # A missing request never counts as an overrun.
    assert report.overrun_killed == 0


def test_overrun_kill_is_the_default_and_stops_jobs_at_their_request():
    records = swf_rows([(0, 100, 1, 60), (1, 60, 1, 60), (2, 30, 1, 60)])
    jobs, report = jobs_from_records(records, capacity=1)
    assert [j.runtime for j in jobs] == [60, 60, 30]  # runtime == request is no overrun
    assert [j.estimate for j in jobs] == [60, 60, 60]
    assert [j.requested_time for j in jobs] == [60, 60, 60]
    assert report.overrun_killed == 1
    assert report.overrun_extended == 0


def test_overrun_extend_runs_full_runtime():
    records = swf_rows([(0, 100, 1, 60), (1, 60, 1, 60), (2, 30, 1, 60)])
    jobs, report = jobs_from_records(records, capacity=1, overrun="extend")
    assert [j.runtime for j in jobs] == [100, 60, 30]
    assert [j.estimate for j in jobs] == [60, 60, 60]  # the request, as the scheduler sees it
    assert report.overrun_extended == 1
    assert report.overrun_killed == 0


@pytest.mark.parametrize(
    ("overrun", "expected"),
    [("kill", [60, 40, 25]), ("extend", [100, 40, 25])],
)
def test_exact_estimate_is_runtime_after_overrun_rule(overrun, expected):
    records = swf_rows([(0, 100, 1, 60), (1, 40, 1, 500), (2, 25, 1, -1)])
    jobs, report = jobs_from_records(records, capacity=1, overrun=overrun, estimate="exact")
    assert [j.estimate for j in jobs] == expected
    assert [j.runtime for j in jobs] == expected
    assert report.estimate_from_runtime == 0  # only the requested estimate falls back


@pytest.mark.parametrize(
    ("rule", "overrun", "expected"),
    [
        ("factor:2", "kill", [120, 80, 50]),
        ("factor:2", "extend", [200, 80, 50]),
        ("factor:0.5", "kill", [30, 20, 12.5]),
    ],
)
def test_factor_estimate_is_factor_times_runtime(rule, overrun, expected):
    records = swf_rows([(0, 100, 1, 60), (1, 40, 1, 500), (2, 25, 1, -1)])
    jobs, _ = jobs_from_records(records, capacity=1, overrun=overrun, estimate=rule)
    assert [j.estimate for j in jobs] == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        ("requested", ("requested", 1.0)),
        ("exact", ("exact", 1.0)),
        ("factor:2", ("factor", 2.0)),
        ("factor:0.25", ("factor", 0.25)),
    ],
)
def test_parse_estimate_accepts_valid_rules(rule, expected):
    assert parse_estimate(rule) == expected


@pytest.mark.parametrize(
    "rule",
    [
        "factor:0",
        "factor:-1",
        "factor:x",
        "factor:",
        "factor:nan",
        "factor:inf",
        "guess",
        "Requested",
        "factor",
        "",
        None,
        2,
    ],
)
def test_parse_estimate_rejects_bad_rules(rule):
    with pytest.raises(ValueError):
        parse_estimate(rule)


@pytest.mark.parametrize("rule", ["factor:0", "factor:x", "guess"])
def test_jobs_from_records_rejects_bad_estimate(rule):
    with pytest.raises(ValueError):
        jobs_from_records(swf_rows([(0, 10, 1, 60)]), capacity=1, estimate=rule)


# --- the jobs limit -----------------------------------------------------------------------------


def test_jobs_limit_keeps_first_valid_jobs_in_file_order():
    records = swf_rows(
        [
            (30, 10, 1, 60),  # 1: kept
            (0, 10, 0, 60),  # 2: invalid, not counted towards the limit
            (10, 10, 9, 60),  # 3: too large, not counted towards the limit
            (10, 10, 1, 60),  # 4: kept
            (5, 10, 1, 60),  # 5: truncated (earlier submit time, but later in the file)
            (40, 10, 1, 60),  # 6: truncated
        ]
    )
    jobs, report = jobs_from_records(records, capacity=2, jobs=2)
    assert [j.job_id for j in jobs] == [4, 1]  # then sorted by submit time
    assert [j.index for j in jobs] == [0, 1]
    assert report.truncated == 2
    assert report.dropped_invalid == 1
    assert report.dropped_too_large == 1
    assert report.reordered == 1
    assert accounted(report, jobs)


def test_jobs_limit_above_job_count_truncates_nothing():
    records = swf_rows([(0, 10, 1, 60), (1, 10, 1, 60)])
    jobs, report = jobs_from_records(records, capacity=1, jobs=5)
    assert len(jobs) == 2
    assert report.truncated == 0


# --- the report ---------------------------------------------------------------------------------


def test_report_as_dict_includes_every_count_and_dropped_total():
    report = WorkloadReport(records=9, malformed_skipped=2, dropped_invalid=3, dropped_too_large=1)
    assert report.dropped == 6
    d = report.as_dict()
    assert d["dropped"] == 6
    for key in (
        "records",
        "malformed_skipped",
        "dropped_invalid",
        "dropped_too_large",
        "truncated",
        "reordered",
        "size_fallback",
        "overrun_killed",
        "overrun_extended",
        "missing_requested_time",
        "estimate_from_runtime",
    ):
        assert key in d


def test_report_passed_in_is_added_to():
    report = WorkloadReport(malformed_skipped=2)
    jobs, same = jobs_from_records(swf_rows([(0, 10, 1, 60), (1, 10, 0, 60)]), capacity=1, report=report)
    assert same is report
    assert (report.records, report.malformed_skipped, report.dropped_invalid, report.dropped) == (2, 2, 1, 3)
    assert len(jobs) == 1


def test_rules_on_a_raw_text_file_end_to_end(tmp_path):
    records = records_from_text(
        tmp_path,
        [
            swf_line(11, 100, 50, alloc=2, procs=2, req=40),  # overrun: killed at 40
            swf_line(12, 50, 20, alloc=3, procs=-1, req=-1),  # size from allocated; no request
            swf_line(13, 60, 0, alloc=1, procs=1, req=30),  # runtime 0 kept
            swf_line(14, 70, 10, alloc=16, procs=16, req=30),  # too large
            swf_line(15, 80, -1, alloc=1, procs=1, req=30),  # invalid runtime
        ],
    )
    jobs, report = jobs_from_records(records, capacity=8)
    assert [(j.index, j.job_id, j.submit_time, j.size, j.runtime, j.estimate) for j in jobs] == [
        (0, 12, 50, 3, 20, 20),
        (1, 13, 60, 1, 0, 30),
        (2, 11, 100, 2, 40, 40),
    ]
    assert math.isnan(jobs[0].requested_time)
    assert report.as_dict() == {
        "records": 5,
        "malformed_skipped": 0,
        "dropped_invalid": 1,
        "dropped_too_large": 1,
        "truncated": 0,
        "reordered": 2,
        "size_fallback": 1,
        "overrun_killed": 1,
        "overrun_extended": 0,
        "missing_requested_time": 1,
        "estimate_from_runtime": 1,
        "no_user_id": 0,  # (field 12 is 1 on every line)
        "dropped": 2,
    }


# --- malformed lines and rules through simulate() -----------------------------------------------


def _mixed_trace(tmp_path):
    path = tmp_path / "mixed.swf"
    path.write_text(
        "; MaxProcs: 4\n"
        f"{swf_line(1, 0, 10, 1, 1, 60)}\n"
        "1 2 3\n"  # line 3: wrong field count
        f"{swf_line(2, 5, 10, 2, 2, 60)}\n"
        f"{swf_line(3, 6, 10, 0, 0, 60)}\n"  # invalid size
        f"{swf_line(4, 7, 10, 1, 1, 60).replace(' 10 ', ' inf ', 1)}\n"  # line 6: non-finite
        f"{swf_line(5, 9, 10, 4, 4, 60)}\n"
    )
    return path


def test_simulate_lenient_counts_malformed_in_report_and_dropped(tmp_path):
    path = _mixed_trace(tmp_path)
    result = simulate({"workload": {"trace": str(path), "lenient": True}, "policy": {"name": "fcfs"}})
    assert result.report["malformed_skipped"] == 2
    assert result.report["dropped_invalid"] == 1
    assert result.report["records"] == 4
    assert result.report["dropped"] == 3
    assert result.metrics["dropped"] == 3
    assert result.metrics["jobs"] == 3
    assert result.jobs["job_id"].tolist() == [1, 2, 5]


def test_simulate_strict_raises_trace_format_error_naming_line(tmp_path):
    path = _mixed_trace(tmp_path)
    with pytest.raises(TraceFormatError) as info:
        simulate({"workload": {"trace": str(path)}, "policy": {"name": "fcfs"}})
    assert f"{path}:3:" in str(info.value)


@pytest.mark.parametrize(
    ("overrun", "runtime", "counter"), [("kill", 40.0, "overrun_killed"), ("extend", 50.0, "overrun_extended")]
)
def test_simulate_applies_overrun_rule(tmp_path, overrun, runtime, counter):
    path = tmp_path / "over.swf"
    path.write_text(f"; MaxProcs: 2\n{swf_line(1, 0, 50, 1, 1, 40)}\n")
    result = simulate({"workload": {"trace": str(path), "overrun": overrun}, "policy": {"name": "fcfs"}})
    assert result.jobs["runtime"].tolist() == [runtime]
    assert result.jobs["finish_time"].tolist() == [runtime]
    assert result.report[counter] == 1
    assert np.isclose(result.jobs["estimate"][0], 40.0)
