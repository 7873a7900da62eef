"""One run plan: a spec is checked once, into an immutable plan that every run path assembles.

``simulate`` and the contract suite assemble a run in one place; a spec's sections are each
checked once on the way to a sweep worker (not again by the platform and policy constructors,
the sweep's expansion or the worker), in one pass over the sections; a plan is not changed by
running it (the machine size read from a trace makes a new plan).
"""

from __future__ import annotations

import sys
from collections import Counter
from typing import Any

import pytest

from sweep_helpers import write_swf
from tiersweep.core import simulate
from tiersweep.core.params import Param
from tiersweep.core.platforms.nodes import Nodes
from tiersweep.core.policies import POLICIES, register_policy
from tiersweep.core.policies.backfill import Easy
from tiersweep.sweep.batch import run_batch, task_for
from tiersweep.sweep.config import expand, parse_sweep_config

CHECKS: Counter[str] = Counter()


def _counted(value: Any) -> int:
    CHECKS["policy"] += 1
    return int(value)


class CountedEasy(Easy):
    """EASY with one parameter whose check counts how often the policy section is checked."""

    name = "counted_easy"
    params = {**Easy.params, "depth": Param(_counted, default=1, doc="unused")}

    def __init__(self, depth: int = 1, **params: Any) -> None:
        super().__init__(**params)


@pytest.fixture
def counting(monkeypatch):
    """The counting policy registered, and the nodes platform's section checks counted."""
    CHECKS.clear()
    original = Nodes.check_params.__func__

    def check_params(cls, params):
        CHECKS["platform"] += 1
        original(cls, params)

    monkeypatch.setattr(Nodes, "check_params", classmethod(check_params))
    register_policy(CountedEasy)
    yield CHECKS
    POLICIES.pop(CountedEasy.name)


def _spec(trace) -> dict[str, Any]:
    policy = {"name": "counted_easy", "depth": 3}
    return {"workload": {"trace": str(trace)}, "platform": {"kind": "nodes"}, "policy": policy}


def test_simulate_checks_each_section_once(tmp_path, counting):
    result = simulate(_spec(write_swf(tmp_path / "log.swf")))
    assert result.metrics["jobs"] == 30
    assert counting == {"policy": 1, "platform": 1}


def test_a_sweep_cell_is_checked_once_on_its_way_to_the_worker(tmp_path, counting):
    trace = write_swf(tmp_path / "log.swf")
    raw = {"name": "once", "base": _spec(trace), "seeds": [0], "grid": {"workload.jobs": [10, 20]}}
    config = parse_sweep_config(raw)
    counting.clear()
    cells = expand(config)
    assert counting == {"policy": 2, "platform": 2}  # each cell's spec, when the sweep is expanded
    outcomes = run_batch([task_for(cell, "once") for cell in cells])
    assert [o.status for o in outcomes] == ["ok", "ok"]
    assert counting == {"policy": 2, "platform": 2}  # and not again by the worker


def test_the_plan_is_read_only_and_running_it_changes_nothing(tmp_path):
    from tiersweep.core.simulate import run_plan
    from tiersweep.core.spec import plan_run, validate_spec

    spec = {"workload": {"trace": str(write_swf(tmp_path / "log.swf", nodes=48))}, "platform": {"tiers": 2}}
    plan = plan_run(spec)
    with pytest.raises(TypeError):
        plan.platform["nodes"] = 4  # type: ignore[index]
    with pytest.raises(AttributeError):
        plan.seed = 3  # type: ignore[misc]
    before = plan.spec
    result = run_plan(plan)
    assert plan.spec == before and plan.platform["nodes"] is None  # the size stays the trace's to give
    assert result.spec["platform"]["nodes"] == 48  # the run says what it ran on
    assert validate_spec(spec) == before and plan.engine == {"migration_cost": 20.0}


def _calls_between(caller_file: str, callee_file: str, action: Any) -> list[str]:
    """The functions of ``callee_file`` that functions of ``caller_file`` call while ``action`` runs
    (a caller file of "" stands for any)."""
    calls: list[str] = []

    def profile(frame, event, _arg):
        caller = frame.f_back
        if event == "call" and frame.f_code.co_filename.endswith(callee_file) and caller is not None:
            if caller.f_code.co_filename.endswith(caller_file):
                calls.append(frame.f_code.co_name)

    sys.setprofile(profile)
    try:
        action()
    finally:
        sys.setprofile(None)
    return calls


def test_planning_enters_the_parameter_checks_once():
    from tiersweep.core.spec import plan_run

    spec = {
        "seed": 3,
        "workload": {"model": "feitelson96", "jobs": 50, "params": {"mean_gap": 200}},
        "platform": {"kind": "nodes", "nodes": 64, "tiers": 2},
        "policy": {"name": "easy"},
    }
    assert _calls_between("core/spec.py", "core/params.py", lambda: plan_run(spec)) == ["validate_sections"]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        # the spec's shape (its sections, the platform's kind, the policy's name) before any value
        ({"seed": -1, "workload": {"jobs": 0}, "platform": {"kind": "nope"}}, r"^platform\.kind: unknown"),
        ({"seed": -1, "workload": {"jobs": 0}, "policy": 3}, r"^policy: expected a mapping"),
        # then the values, section by section: seed, workload, platform, policy
        ({"seed": -1, "workload": {"jobs": 0}, "policy": {"name": "easy", "x": 1}}, r"^seed: "),
        ({"workload": {"jobs": 0}, "platform": {"nodes": 0}}, r"^workload\.jobs: "),
        ({"workload": {"jobs": 5}, "platform": {"nodes": 0}}, r"^workload: give exactly one of"),
        ({"workload": {"model": "jann97"}, "platform": {"nodes": 0}, "policy": {"x": 1}}, r"^platform\.nodes: "),
        ({"workload": {"model": "jann97"}, "policy": {"x": 1}}, r"^policy\.x: unknown key"),
    ],
)
def test_a_spec_reports_its_shape_first_then_its_sections_in_order(spec, message):
    from tiersweep.core.errors import SpecError
    from tiersweep.core.spec import plan_run

    with pytest.raises(SpecError, match=message):
        plan_run(spec)


def test_a_model_workloads_parameters_are_checked_once_however_often_it_is_drawn():
    # The model's own arrival scaling draws the workload at several load scales.
    spec = {
        "workload": {"model": "feitelson96", "jobs": 400, "load": 0.8, "params": {"mean_gap": 150}},
        "platform": {"nodes": 64},
    }
    calls = _calls_between("", "models/feitelson.py", lambda: simulate(spec))
    assert [name for name in calls if "checked" in name or "parameters" in name] == ["checked", "parameters"]
    assert calls.count("draw") > 1
