"""The README's plug-in example, run as written: a third-party policy registered by the one
registration function, paired with platforms by capability, and checked like a built-in."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tiersweep.core import simulate
from tiersweep.core.errors import SpecError
from tiersweep.core.policies import POLICIES, BasePolicy, register_policy
from tiersweep.core.spec import validate_spec

README = Path(__file__).resolve().parent.parent / "README.md"


@pytest.fixture
def largest():
    """The README's ``Largest`` policy, registered for the test and removed afterwards."""
    block = next(b for b in re.findall(r"```python\n(.*?)```", README.read_text(), re.S) if "@register_policy" in b)
    namespace: dict = {}
    exec(compile(block, str(README), "exec"), namespace)  # noqa: S102 - the project's own README
    try:
        yield namespace["Largest"]
    finally:
        POLICIES.pop("largest", None)


def test_the_readme_plugin_runs_where_its_capabilities_are_offered(largest):
    assert POLICIES["largest"] is largest
    spec = {
        "workload": {"model": "jann97", "jobs": 300},
        "platform": {"nodes": 128},
        "policy": {"name": "largest", "by": "estimate"},
    }
    result = simulate(spec)
    assert result.spec["policy"] == {"name": "largest", "by": "estimate"}
    assert (result.jobs["finish_time"] >= result.jobs["start_time"]).all()
    with pytest.raises(SpecError, match=r"^policy.by: unknown value 'width'; valid choices: size, estimate"):
        validate_spec({**spec, "policy": {"name": "largest", "by": "width"}})
    with pytest.raises(SpecError, match=r"policy 'largest' needs 'placement' .* platform 'fat_tree'"):
        validate_spec({**spec, "platform": {"kind": "fat_tree"}})


def test_registration_refuses_what_would_break_the_registry(largest):
    with pytest.raises(TypeError, match="already registered"):
        register_policy(type("Other", (largest,), {}))
    with pytest.raises(TypeError, match="declares no name"):
        register_policy(type("Nameless", (BasePolicy,), {"decide": lambda self, sim: iter(())}))
    with pytest.raises(TypeError, match="not a BasePolicy"):
        register_policy(int)
