"""Determinism: one spec, one result -- in this process, in another interpreter, under any seed.

* The same spec (first 2000 jobs of KTH-SP2) gives bit-for-bit identical per-job records (every
  column of ``RunResult.jobs``, nan positions included) when run twice here and when run in a
  freshly spawned interpreter with a different ``PYTHONHASHSEED`` (string hashing, hence set
  and dict-of-str iteration orders, differ there).
* The backfilling policies are deterministic: a different ``seed`` changes no record.
* :func:`tiersweep.core.rng.stream` gives the same numbers in every process for one (seed, purpose), and
  different numbers for different purposes or seeds.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from tiersweep.core.capabilities import TIERS
from tiersweep.core.policies import POLICIES
from tiersweep.core.rng import stream
from tiersweep.core.simulate import simulate
from tiersweep.core.spec import policy_runs_on

PROJECT_ROOT = Path(__file__).resolve().parents[1]
POLICY_NAMES = sorted(name for name in POLICIES if policy_runs_on(name, "nodes"))
KTH_JOBS = 2000


def spec_for(kth_path, policy: str, seed: int = 0) -> dict:
    tiers = 2 if TIERS in POLICIES[policy].requires else 1  # the consolidating members need a background tier
    return {
        "seed": seed,
        "workload": {"trace": str(kth_path), "jobs": KTH_JOBS},
        "platform": {"tiers": tiers},
        "policy": {"name": policy},
    }


def assert_records_identical(mine: dict, theirs: dict, label: str) -> None:
    """Same columns, dtypes, shapes and bytes (so nan positions and payloads match too)."""
    assert sorted(mine) == sorted(theirs), label
    for column in mine:
        a, b = np.asarray(mine[column]), np.asarray(theirs[column])
        assert a.dtype == b.dtype and a.shape == b.shape, f"{label}: column {column}"
        assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), f"{label}: column {column} differs"
        assert a.tobytes() == b.tobytes(), f"{label}: column {column} differs bitwise"


def other_hash_seed() -> str:
    """A PYTHONHASHSEED different from this process's (which is random unless set)."""
    return "4242" if os.environ.get("PYTHONHASHSEED") != "4242" else "1717"


def run_child(code: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter (another hash seed; ``env``: variables to add)."""
    env = {**os.environ, "PYTHONHASHSEED": other_hash_seed(), **(env or {})}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        cwd=PROJECT_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done


CHILD_SIMULATE = """
    import json, sys
    import numpy as np
    from tiersweep.core.simulate import simulate

    specs, out = json.loads(sys.argv[1]), sys.argv[2]
    arrays = {}
    for label, spec in specs.items():
        for column, values in simulate(spec).jobs.items():
            arrays[f"{label}/{column}"] = values
    np.savez(out, **arrays)
"""

#: A tiny SWF log with missing requested times (-1), so that requested_time has nans.
TINY_SWF = """\
; MaxProcs: 8
1 0 -1 100 4 -1 -1 4 -1 -1 1 1 1 -1 -1 -1 -1 -1
2 5 -1 50 8 -1 -1 8 200 -1 1 1 1 -1 -1 -1 -1 -1
3 5 -1 0 2 -1 -1 2 -1 -1 1 1 1 -1 -1 -1 -1 -1
4 9 -1 30 2 -1 -1 2 40 -1 1 1 1 -1 -1 -1 -1 -1
"""


@pytest.mark.slow
def test_same_spec_same_records_in_this_and_a_fresh_interpreter(kth_path, tmp_path):
    tiny = tmp_path / "tiny.swf"
    tiny.write_text(TINY_SWF)
    specs = {f"kth-{policy}": spec_for(kth_path, policy) for policy in POLICY_NAMES}
    specs.update(
        {f"tiny-{policy}": {**spec_for(tiny, policy), "workload": {"trace": str(tiny)}} for policy in POLICY_NAMES}
    )
    out = tmp_path / "child.npz"
    run_child(CHILD_SIMULATE, json.dumps(specs), str(out))
    with np.load(out) as child:
        theirs = {key: child[key] for key in child.files}
    for label, spec in specs.items():
        first = simulate(spec).jobs
        second = simulate(spec).jobs
        assert_records_identical(first, second, f"{label}: twice in this process")
        child_records = {k.split("/", 1)[1]: v for k, v in theirs.items() if k.startswith(f"{label}/")}
        assert_records_identical(first, child_records, f"{label}: this process vs a fresh one")
    assert len(simulate(specs["kth-easy"]).jobs["job_id"]) == KTH_JOBS
    # The tiny log really exercises nan positions: jobs 1 and 3 have no requested time.
    requested = simulate(specs["tiny-easy"]).jobs["requested_time"]
    assert np.isnan(requested).tolist() == [True, False, True, False]


def test_records_comparison_is_positional_for_nans():
    # The helper sees equal nans as equal, and a nan moved to another row as a difference.
    a = {"x": np.array([1.0, np.nan, 3.0])}
    assert_records_identical(a, {"x": np.array([1.0, np.nan, 3.0])}, "equal nans")
    with pytest.raises(AssertionError):
        assert_records_identical(a, {"x": np.array([1.0, 3.0, np.nan])}, "moved nan")


@pytest.mark.parametrize("policy", POLICY_NAMES)
def test_a_different_seed_changes_nothing_without_random_inputs(kth_path, policy):
    # With a constant CPU usage, and no overhead and a fixed efficiency on background tiers,
    # nothing in a run is random: the seed must not matter.
    def spec(seed):
        s = spec_for(kth_path, policy, seed=seed)
        s["workload"]["cpu_usage"] = 0.8
        s["platform"].update(fg_overhead=0.0, bg_efficiency=1.0)
        return s

    base = simulate(spec(0))
    other = simulate(spec(987654321))
    assert other.spec["seed"] == 987654321
    assert_records_identical(base.jobs, other.jobs, f"{policy}: seed 0 vs 987654321")
    assert base.metrics == other.metrics
    assert base.end_time == other.end_time


@pytest.mark.parametrize("policy", ["fcfs", "easy", "conservative", "selective", "cmbf", "ambf"])
def test_the_seed_changes_only_cpu_usage_for_policies_that_ignore_it(kth_path, policy):
    # The seed draws the CPU usage; policies that never look at it schedule identically.
    base = simulate(spec_for(kth_path, policy, seed=0))
    other = simulate(spec_for(kth_path, policy, seed=987654321))
    schedule = {k: v for k, v in base.jobs.items() if k != "cpu_mean"}
    assert_records_identical(schedule, {k: other.jobs[k] for k in schedule}, f"{policy}: schedule")
    assert not np.array_equal(base.jobs["cpu_mean"], other.jobs["cpu_mean"])
    assert base.metrics["utilization"] != other.metrics["utilization"]


# -- named random streams --------------------------------------------------------------------

STREAM_CASES = [(0, "workload"), (0, "eff"), (1, "workload"), (123456789, "workload"), (7, "é-unicode purpose")]

CHILD_STREAMS = """
    import json, sys
    from tiersweep.core.rng import stream

    cases = json.loads(sys.argv[1])
    print(json.dumps([stream(seed, purpose).random(8).tolist() for seed, purpose in cases]))
"""


def draws(seed: int, purpose: str) -> list[float]:
    return stream(seed, purpose).random(8).tolist()


def test_stream_gives_the_same_numbers_in_a_fresh_interpreter():
    done = run_child(CHILD_STREAMS, json.dumps(STREAM_CASES))
    theirs = json.loads(done.stdout)  # JSON floats round-trip exactly
    assert theirs == [draws(seed, purpose) for seed, purpose in STREAM_CASES]


def test_stream_is_reproducible_and_independent_of_other_streams():
    first = draws(5, "workload")
    stream(5, "eff").random(100)  # asking for another stream in between shifts nothing
    assert draws(5, "workload") == first


def test_stream_differs_by_purpose_and_by_seed():
    all_draws = [tuple(draws(seed, purpose)) for seed, purpose in STREAM_CASES]
    assert len(set(all_draws)) == len(STREAM_CASES)


@pytest.mark.parametrize("seed", [-1, 1.5, True, "3"])
def test_stream_rejects_bad_seeds(seed):
    with pytest.raises(ValueError, match="seed"):
        stream(seed, "workload")


CHILD_METRICS = """
    import json, sys
    from tiersweep.core.simulate import simulate

    metrics = simulate(json.loads(sys.argv[1])).metrics
    print(json.dumps({k: float(v).hex() for k, v in metrics.items() if k != "wall_seconds"}))
"""


def test_metrics_do_not_depend_on_the_number_of_blas_threads():
    """numpy.dot hands its sums to BLAS, which splits a long one among its threads and adds
    the parts in another order: a run in a sweep worker (one BLAS thread) and the same run in a
    notebook or ``tiersweep run`` (one thread per CPU) stored utilisations and tier shares that
    differed in their last bits. 20,000 jobs: long enough for OpenBLAS to use its threads."""
    spec = {
        "workload": {"model": "lublin03", "jobs": 20_000, "load": 0.8},
        "platform": {"nodes": 10_000, "tiers": 2},
        "policy": {"name": "easy"},
    }
    outputs = []
    for threads in ("1", "2"):
        blas = {"OPENBLAS_NUM_THREADS": threads, "OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads}
        outputs.append(json.loads(run_child(CHILD_METRICS, json.dumps(spec), env=blas).stdout))
    one, two = outputs
    assert {"utilization", "tier0_share", "tier1_share"} <= set(one)
    differ = {key: (one[key], two[key]) for key in one if one[key] != two[key]}
    assert not differ, f"metrics differ between 1 and 2 BLAS threads: {differ}"
