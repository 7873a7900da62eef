"""``tiersweep bench --scale``'s tiered-node cases: each measured in a fresh process."""

from __future__ import annotations

from pathlib import Path

from tiersweep.core.simulate import simulate
from tiersweep.sweep.scale_bench import SUBLINEAR, core_path, measure_case, tiered_cases


def test_a_case_reports_engine_time_jobs_slots_and_peak_memory(tmp_path):
    spec = {
        "seed": 2,
        "workload": {"model": "lublin03", "jobs": 60, "max_size": 40},
        "platform": {"nodes": 64, "tiers": 2},
        "policy": {"name": "amcbf"},
    }
    result = measure_case(spec, tmp_path, "tiny")
    sizes = simulate(spec).jobs["size"]
    assert result.finished and result.jobs == 60 and result.slots == int(sum(sizes))
    assert 0 < result.seconds and 10 < result.peak_mb < 4096  # the child's own peak (an interpreter: tens of MB)


def test_the_cases_are_the_issue_s_and_quick_is_small():
    full = tiered_cases(Path("/traces"), quick=False)
    policies = {label.split(",")[0]: set(names) for label, _, names, _ in full}
    assert policies["CTC-SP2 first 20"] == {"amcbf", "cmcbf", "smcbf", "keasy", "reasy"}
    assert policies["CEA-Curie whole log"] == {"amcbf", "keasy"}
    machines = [spec["platform"]["nodes"] for _, spec, _, target in full if target == SUBLINEAR]
    assert machines == [10_000, 93_312]
    quick = tiered_cases(Path("/traces"), quick=True)
    assert len(quick) < len(full) and all(spec["workload"].get("jobs", 0) <= 2_000 for _, spec, _, _ in quick)
    assert core_path() in ("compiled", "python")
