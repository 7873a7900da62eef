"""The compiled path against the Python reference: every tiered policy, identical results.

The tiered platform's hot loops have compiled twins (``core/platforms/_nodes_fast.pyx``);
``TIERSWEEP_PURE_PYTHON=1`` forces the Python reference. Each case here runs one spec on both
paths and requires bit-identical per-job records and metrics, on real logs and on generated
workloads, with 1-3 tiers. The tests skip, saying so, only where the extension is not built;
under CI (``CI=true``, where a C compiler exists) an unbuilt extension is a failure instead.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tiersweep.core import compiled_path
from tiersweep.core.platforms.nodes import IdleSet, Nodes
from tiersweep.core.simulate import simulate
from tiersweep.core.version import source_digest

from conftest import trace_path

#: Every policy that runs on tiered nodes, with the tier counts it accepts.
TIERED_POLICIES = {
    "fcfs": (1, 2, 3),
    "easy": (1, 2, 3),
    "cmbf": (1, 2, 3),
    "ambf": (1, 2, 3),
    "cmcbf": (2, 3),
    "amcbf": (2, 3),
    "smcbf": (2, 3),
    "keasy": (2, 3),
    "reasy": (2, 3),
}
CASES = [(policy, tiers) for policy, counts in TIERED_POLICIES.items() for tiers in counts]


def _require_compiled() -> None:
    if compiled_path.compiled_available():
        return
    reason = compiled_path.why_python()
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI has a C compiler, yet the compiled path is not available: {reason}")
    pytest.skip(f"the compiled extension is not built here ({reason}); only the Python path can run")


def _both_paths(monkeypatch: pytest.MonkeyPatch, spec: dict) -> tuple:
    _require_compiled()
    monkeypatch.delenv(compiled_path.PURE_PYTHON_ENV, raising=False)
    assert compiled_path.why_python() is None
    compiled = simulate(spec)
    monkeypatch.setenv(compiled_path.PURE_PYTHON_ENV, "1")
    reference = simulate(spec)
    return compiled, reference


def _assert_identical(compiled, reference, label: str) -> None:
    assert sorted(compiled.jobs) == sorted(reference.jobs), label
    for column in reference.jobs:
        a, b = np.asarray(compiled.jobs[column]), np.asarray(reference.jobs[column])
        assert a.dtype == b.dtype and a.shape == b.shape, f"{label}: {column}"
        assert a.tobytes() == b.tobytes(), f"{label}: job column {column} differs"
    assert sorted(compiled.metrics) == sorted(reference.metrics), label
    for name, value in reference.metrics.items():
        other = compiled.metrics[name]
        same = other == value or (other != other and value != value)  # NaN on both sides
        assert same, f"{label}: metric {name}: {other!r} compiled, {value!r} reference"
    assert compiled.end_time == reference.end_time, label


def _trace_spec(name: str, jobs: int, nodes: int, policy: str, tiers: int, seed: int = 3) -> dict:
    return {
        "workload": {"trace": str(trace_path(name)), "jobs": jobs},
        "platform": {"nodes": nodes, "tiers": tiers},
        "policy": {"name": policy},
        "seed": seed,
    }


def _model_spec(model: str, jobs: int, nodes: int, policy: str, tiers: int, seed: int) -> dict:
    return {
        "workload": {"model": model, "jobs": jobs, "load": 0.9},
        "platform": {"nodes": nodes, "tiers": tiers},
        "policy": {"name": policy},
        "seed": seed,
    }


@pytest.mark.parametrize(("policy", "tiers"), CASES)
def test_kth_slice_is_identical_on_both_paths(monkeypatch, policy, tiers):
    spec = _trace_spec("KTH-SP2-1996-2.1-cln.swf.gz", 600, 100, policy, tiers)
    _assert_identical(*_both_paths(monkeypatch, spec), f"KTH-SP2 {policy} x{tiers}")


@pytest.mark.parametrize(("policy", "tiers"), CASES)
@pytest.mark.parametrize("model", ["feitelson96", "lublin03"])
def test_generated_workload_is_identical_on_both_paths(monkeypatch, model, policy, tiers):
    spec = _model_spec(model, 300, 64, policy, tiers, seed=11)
    _assert_identical(*_both_paths(monkeypatch, spec), f"{model} {policy} x{tiers}")


@pytest.mark.parametrize("scope", ["job", "process"])
@pytest.mark.parametrize("policy", ["cmcbf", "amcbf", "keasy"])
def test_process_scope_and_fixed_efficiency_are_identical_on_both_paths(monkeypatch, policy, scope):
    spec = _model_spec("lublin03", 300, 32, policy, 2, seed=5)
    spec["platform"].update(bg_efficiency_scope=scope)
    _assert_identical(*_both_paths(monkeypatch, spec), f"{policy} scope {scope}")
    spec["platform"].update(bg_efficiency=0.7, fg_overhead=0.0)
    _assert_identical(*_both_paths(monkeypatch, spec), f"{policy} scope {scope}, fixed eff")


@pytest.mark.slow
@pytest.mark.parametrize(("policy", "tiers"), CASES)
@pytest.mark.parametrize(("log", "nodes"), [("KTH-SP2-1996-2.1-cln.swf.gz", 100), ("CTC-SP2-1996-3.1-cln.swf.gz", 320)])
def test_real_logs_are_identical_on_both_paths(monkeypatch, log, nodes, policy, tiers):
    spec = _trace_spec(log, 2000, nodes, policy, tiers)
    _assert_identical(*_both_paths(monkeypatch, spec), f"{log} {policy} x{tiers}")


def test_a_two_tier_platform_runs_the_kernels_unless_the_reference_is_forced(monkeypatch):
    _require_compiled()
    monkeypatch.delenv(compiled_path.PURE_PYTHON_ENV, raising=False)
    assert Nodes(8, 2)._kernels is not None
    assert compiled_path.path_line() == "path: compiled (Cython)"
    monkeypatch.setenv(compiled_path.PURE_PYTHON_ENV, "1")
    assert Nodes(8, 2)._kernels is None
    assert compiled_path.path_line() == f"path: python ({compiled_path.PURE_PYTHON_ENV} is set)"


def test_the_cython_sources_enter_the_code_digest(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "k.pyx").write_text("def f(): return 1\n")
    before = source_digest(tmp_path)
    (tmp_path / "k.pyx").write_text("def f(): return 2\n")
    assert source_digest(tmp_path) != before
    (tmp_path / "k.pxd").write_text("cdef int g\n")
    assert source_digest(tmp_path) != before


def test_the_run_summary_names_the_path(tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text("workload: {model: jann97, jobs: 40}\nplatform: {nodes: 16, tiers: 2}\npolicy: {name: amcbf}\n")
    env = {**os.environ, compiled_path.PURE_PYTHON_ENV: "1"}
    done = subprocess.run([sys.executable, "-m", "tiersweep", "run", str(spec)], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert f"path: python ({compiled_path.PURE_PYTHON_ENV} is set)" in done.stdout


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(nodes=st.integers(1, 40), steps=st.lists(st.tuples(st.sampled_from(["take", "claim", "release"]), st.integers(0, 2**16)), max_size=40))
def test_idle_set_kernels_keep_the_same_stack(monkeypatch, nodes, steps):
    # IdleSet.remove and extend, compiled and in Python, step by step on the same operations
    # (the environment is set afresh in each example: the fixture's scope does not matter).
    _require_compiled()
    monkeypatch.delenv(compiled_path.PURE_PYTHON_ENV, raising=False)
    fast = IdleSet(nodes)
    monkeypatch.setenv(compiled_path.PURE_PYTHON_ENV, "1")
    reference = IdleSet(nodes)
    assert fast._kernels is not None and reference._kernels is None
    busy: list[int] = []
    for action, draw in steps:
        rng = np.random.default_rng(draw)
        idle = list(reference)
        if action == "take" and idle:
            count = int(rng.integers(1, len(idle) + 1))
            assert fast.take(count).tolist() == (taken := reference.take(count).tolist())
            busy += taken
        elif action == "claim" and idle:
            named = rng.choice(idle, size=int(rng.integers(1, len(idle) + 1)), replace=False).tolist()
            assert fast.claim(len(named), named).tolist() == reference.claim(len(named), named).tolist()
            busy += named
        elif action == "release" and busy:
            freed = rng.choice(busy, size=int(rng.integers(1, len(busy) + 1)), replace=False)
            busy = [n for n in busy if n not in set(freed.tolist())]
            fast.extend(freed.astype(np.int64))
            reference.extend(freed.astype(np.int64))
        assert list(fast) == list(reference)
        assert fast._pos.tolist() == reference._pos.tolist() and len(fast) == len(reference)
