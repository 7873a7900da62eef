"""Run specs (core/spec.py) and how simulate() resolves them.

Covers: :func:`validate_spec` filling in defaults (seed 0, platform kind nodes, policy easy,
workload size_field requested, overrun kill, estimate requested, lenient False) without
touching its input; unknown keys and bad values raising :class:`SpecError` whose message names
the key path and lists the valid keys or choices; the selective policy's
``xfactor_threshold`` ('adaptive' or a number >= 1); :func:`set_key` (a deep copy with a dotted
key set); and simulate(): a missing trace file, platform.nodes from the trace header (MaxProcs,
then MaxNodes), no header and no platform.nodes, and the real KTH-SP2 log.
"""

from __future__ import annotations

import copy

import pytest

from tiersweep.core.errors import SpecError, TiersweepError
from tiersweep.core.simulate import simulate
from tiersweep.core.spec import set_key, validate_spec

BASE = {"workload": {"trace": "some/trace.swf"}}


def swf_line(job: int, submit: float, run: float, procs: int, req: float = 1000) -> str:
    fields = [job, submit, -1, run, procs, -1, -1, procs, req, -1, 1, 1, 1, -1, -1, -1, -1, -1]
    return " ".join(str(f) for f in fields)


def spec_error(spec) -> str:
    with pytest.raises(SpecError) as info:
        validate_spec(spec)
    return str(info.value)


# --- defaults -----------------------------------------------------------------------------------


def test_defaults_are_filled_in():
    out = validate_spec(BASE)
    assert out["seed"] == 0
    assert out["workload"]["trace"] == "some/trace.swf"
    assert out["workload"]["size_field"] == "requested"
    assert out["workload"]["overrun"] == "kill"
    assert out["workload"]["estimate"] == "requested"
    assert out["workload"]["lenient"] is False
    assert out["workload"]["jobs"] is None
    assert out["platform"]["kind"] == "nodes"
    assert out["platform"].get("nodes") is None
    assert out["policy"]["name"] == "easy"
    assert set(out) == {"seed", "workload", "platform", "policy"}


def test_given_values_are_kept():
    spec = {
        "seed": 7,
        "workload": {
            "trace": "t.swf",
            "jobs": 500,
            "size_field": "allocated",
            "overrun": "extend",
            "estimate": "factor:1.5",
            "lenient": True,
        },
        "platform": {"kind": "nodes", "nodes": 64},
        "policy": {"name": "conservative"},
    }
    out = validate_spec(spec)
    assert out["seed"] == 7
    assert {k: out["workload"][k] for k in spec["workload"]} == spec["workload"]
    assert out["platform"]["nodes"] == 64
    assert out["policy"]["name"] == "conservative"


def test_validate_spec_does_not_modify_its_input():
    spec = {"workload": {"trace": "t.swf"}, "policy": {"name": "selective"}}
    before = copy.deepcopy(spec)
    out = validate_spec(spec)
    assert spec == before
    assert out is not spec
    out["workload"]["jobs"] = 3
    out["policy"]["xfactor_threshold"] = 99
    assert spec == before


def test_selective_default_threshold_is_adaptive():
    out = validate_spec({**BASE, "policy": {"name": "selective"}})
    assert out["policy"]["xfactor_threshold"] == "adaptive"


# --- unknown keys -------------------------------------------------------------------------------


def test_unknown_workload_key_names_path_and_lists_valid_keys():
    message = spec_error({"workload": {"trace": "t.swf", "jbos": 10}})
    assert "workload.jbos" in message
    for key in ("trace", "jobs", "size_field", "overrun", "estimate", "lenient"):
        assert key in message


def test_unknown_top_level_key_names_it_and_lists_sections():
    message = spec_error({**BASE, "sed": 3})
    assert "sed" in message
    for key in ("seed", "workload", "platform", "policy"):
        assert key in message


def test_unknown_platform_key_lists_valid_keys():
    message = spec_error({**BASE, "platform": {"node": 10}})
    assert "platform.node" in message
    assert "nodes" in message and "kind" in message


def test_unknown_policy_key_names_path():
    message = spec_error({**BASE, "policy": {"name": "easy", "xfactor_threshold": 5}})
    assert "policy.xfactor_threshold" in message
    assert "name" in message


def test_unknown_selective_key_lists_xfactor_threshold():
    message = spec_error({**BASE, "policy": {"name": "selective", "threshold": 5}})
    assert "policy.threshold" in message
    assert "xfactor_threshold" in message


# --- bad values ---------------------------------------------------------------------------------


def test_unknown_policy_name_lists_choices():
    message = spec_error({**BASE, "policy": {"name": "fifo"}})
    assert "policy.name" in message
    assert "fifo" in message
    for name in ("fcfs", "easy", "conservative", "selective"):
        assert name in message


def test_unknown_platform_kind_lists_choices():
    message = spec_error({**BASE, "platform": {"kind": "vms"}})
    assert "platform.kind" in message
    assert "nodes" in message


@pytest.mark.parametrize("nodes", [0, -3, 2.5, "100", True])
def test_bad_platform_nodes_names_the_key(nodes):
    message = spec_error({**BASE, "platform": {"nodes": nodes}})
    assert "platform.nodes" in message


@pytest.mark.parametrize("seed", [-1, 1.5, "1", True])
def test_bad_seed_names_the_key(seed):
    message = spec_error({**BASE, "seed": seed})
    assert message.startswith("seed")


@pytest.mark.parametrize(
    ("key", "value", "choices"),
    [
        ("size_field", "alloc", ["requested", "allocated"]),
        ("overrun", "stop", ["kill", "extend"]),
        ("estimate", "guess", ["requested", "exact", "factor"]),
        ("estimate", "factor:0", ["requested", "exact", "factor"]),
        ("estimate", "factor:x", ["requested", "exact", "factor"]),
    ],
)
def test_bad_workload_choice_names_key_and_lists_choices(key, value, choices):
    message = spec_error({"workload": {"trace": "t.swf", key: value}})
    assert f"workload.{key}" in message
    for choice in choices:
        assert choice in message


@pytest.mark.parametrize(
    ("key", "value"), [("jobs", 0), ("jobs", -5), ("jobs", 1.5), ("lenient", "yes"), ("lenient", 1), ("trace", "")]
)
def test_bad_workload_value_names_the_key(key, value):
    message = spec_error({"workload": {"trace": "t.swf", key: value}})
    assert f"workload.{key}" in message


def test_missing_workload_or_trace_is_a_spec_error():
    assert "workload" in spec_error({"seed": 1})
    assert "workload.trace" in spec_error({"workload": {"jobs": 10}})


def test_non_mapping_spec_is_a_spec_error():
    with pytest.raises(SpecError):
        validate_spec(["workload"])


def test_spec_error_is_a_tiersweep_value_error():
    with pytest.raises(TiersweepError):
        validate_spec({**BASE, "policy": {"name": "fifo"}})
    with pytest.raises(ValueError):
        validate_spec({**BASE, "policy": {"name": "fifo"}})


# --- selective xfactor_threshold ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"), [("adaptive", "adaptive"), (1, 1.0), (1.0, 1.0), (25, 25.0), (7.5, 7.5)]
)
def test_selective_accepts_adaptive_or_number_at_least_one(value, expected):
    out = validate_spec({**BASE, "policy": {"name": "selective", "xfactor_threshold": value}})
    assert out["policy"]["xfactor_threshold"] == expected


@pytest.mark.parametrize("value", [0.99, 0, -2, "auto", "10", True, float("inf"), float("nan")])
def test_selective_rejects_other_thresholds(value):
    message = spec_error({**BASE, "policy": {"name": "selective", "xfactor_threshold": value}})
    assert "policy.xfactor_threshold" in message
    assert "adaptive" in message


# --- set_key ------------------------------------------------------------------------------------


def test_set_key_returns_deep_copy_with_dotted_key_set():
    spec = {"workload": {"trace": "t.swf", "jobs": 10}, "policy": {"name": "easy"}}
    before = copy.deepcopy(spec)
    out = set_key(spec, "policy.name", "fcfs")
    assert out == {"workload": {"trace": "t.swf", "jobs": 10}, "policy": {"name": "fcfs"}}
    assert spec == before
    # Deep: changing the copy's other sections leaves the original alone.
    out["workload"]["jobs"] = 99
    assert spec["workload"]["jobs"] == 10
    assert out["workload"] is not spec["workload"]
    assert validate_spec(out)["policy"]["name"] == "fcfs"


def test_set_key_top_level_and_new_section():
    spec = {"workload": {"trace": "t.swf"}}
    assert set_key(spec, "seed", 4)["seed"] == 4
    out = set_key(spec, "platform.nodes", 32)
    assert out["platform"] == {"nodes": 32}
    assert "platform" not in spec


def test_set_key_through_a_value_or_empty_part_is_a_spec_error():
    with pytest.raises(SpecError):
        set_key({"seed": 1}, "seed.x", 2)
    with pytest.raises(SpecError):
        set_key({"policy": {}}, "policy..name", "fcfs")


# --- simulate(): trace file and platform.nodes ----------------------------------------------------


def _trace(tmp_path, header: str, name: str = "t.swf"):
    """Jobs of size 1, 4 and 8 (job numbers 1..3); header lines as given."""
    path = tmp_path / name
    path.write_text(header + f"{swf_line(1, 0, 10, 1)}\n{swf_line(2, 1, 10, 4)}\n{swf_line(3, 2, 10, 8)}\n")
    return path


def test_simulate_missing_trace_is_spec_error_naming_workload_trace(tmp_path):
    missing = tmp_path / "nope.swf"
    with pytest.raises(SpecError) as info:
        simulate({"workload": {"trace": str(missing)}, "platform": {"nodes": 4}})
    assert "workload.trace" in str(info.value)
    assert str(missing) in str(info.value)


def test_simulate_invalid_spec_is_spec_error_before_reading(tmp_path):
    with pytest.raises(SpecError, match=r"workload\.jbos"):
        simulate({"workload": {"trace": str(tmp_path / "nope.swf"), "jbos": 3}})


def test_simulate_nodes_from_maxprocs_header(tmp_path):
    path = _trace(tmp_path, "; Version: 2.2\n; MaxProcs: 4\n")
    result = simulate({"workload": {"trace": str(path)}, "policy": {"name": "fcfs"}})
    assert result.spec["platform"]["nodes"] == 4
    # The size-8 job does not fit the 4 nodes from the header.
    assert result.report["dropped_too_large"] == 1
    assert result.metrics["jobs"] == 2
    assert result.jobs["job_id"].tolist() == [1, 2]


def test_simulate_nodes_from_maxnodes_header_with_remark(tmp_path):
    path = _trace(tmp_path, "  ;  MaxNodes: 8 (batch partition; 16 total)\n")
    result = simulate({"workload": {"trace": str(path)}, "policy": {"name": "fcfs"}})
    assert result.spec["platform"]["nodes"] == 8
    assert result.report["dropped_too_large"] == 0
    assert result.metrics["jobs"] == 3


def test_simulate_maxprocs_takes_precedence_over_maxnodes(tmp_path):
    path = _trace(tmp_path, "; MaxNodes: 8\n; MaxProcs: 4\n")
    result = simulate({"workload": {"trace": str(path)}, "policy": {"name": "fcfs"}})
    assert result.spec["platform"]["nodes"] == 4


def test_simulate_explicit_nodes_override_header(tmp_path):
    path = _trace(tmp_path, "; MaxProcs: 4\n")
    spec = {"workload": {"trace": str(path)}, "platform": {"nodes": 2}, "policy": {"name": "fcfs"}}
    result = simulate(spec)
    assert result.spec["platform"]["nodes"] == 2
    assert result.report["dropped_too_large"] == 2  # sizes 4 and 8 do not fit 2 nodes


def test_simulate_nodes_from_gzip_header(tmp_path):
    import gzip

    path = tmp_path / "t.swf.gz"
    path.write_bytes(gzip.compress(f"; MaxProcs: 4\n{swf_line(1, 0, 10, 2)}\n".encode()))
    result = simulate({"workload": {"trace": str(path)}, "policy": {"name": "fcfs"}})
    assert result.spec["platform"]["nodes"] == 4
    assert result.metrics["jobs"] == 1


def test_simulate_does_not_write_resolved_nodes_into_input_spec(tmp_path):
    path = _trace(tmp_path, "; MaxProcs: 4\n")
    spec = {"workload": {"trace": str(path)}, "platform": {"kind": "nodes"}, "policy": {"name": "fcfs"}}
    before = copy.deepcopy(spec)
    simulate(spec)
    assert spec == before


def test_simulate_without_header_size_or_nodes_is_spec_error(tmp_path):
    path = _trace(tmp_path, "; Version: 2.2\n; Computer: none\n")
    with pytest.raises(SpecError) as info:
        simulate({"workload": {"trace": str(path)}, "policy": {"name": "fcfs"}})
    assert "platform.nodes" in str(info.value)


# --- the real KTH-SP2 log -----------------------------------------------------------------------


def test_simulate_kth_first_2000_jobs_fcfs(kth_path):
    result = simulate({"workload": {"trace": str(kth_path), "jobs": 2000}, "policy": {"name": "fcfs"}})
    assert result.spec["platform"]["nodes"] == 100
    assert result.metrics["jobs"] == 2000
    assert len(result.jobs["job_id"]) == 2000
    assert result.report["records"] == 28476
    assert result.report["truncated"] > 0


# --- migration_cost is the platform's (the key's old place still works) ---------------------------


def test_policy_migration_cost_is_stored_as_platform_migration_cost():
    # The engine takes migration_cost, from the platform section; no policy reads it.
    base = {"workload": {"model": "jann97", "jobs": 10}, "platform": {"tiers": 2}}
    old = validate_spec({**base, "policy": {"name": "amcbf", "migration_cost": 120}})
    new = validate_spec({**base, "platform": {"tiers": 2, "migration_cost": 120}, "policy": {"name": "amcbf"}})
    assert old == new
    assert old["platform"]["migration_cost"] == 120.0 and "migration_cost" not in old["policy"]
    same = validate_spec(
        {**base, "platform": {"tiers": 2, "migration_cost": 120}, "policy": {"name": "amcbf", "migration_cost": 120}}
    )
    assert same == new
    with pytest.raises(SpecError, match=r"^policy.migration_cost: 600 contradicts platform.migration_cost: 120"):
        validate_spec(
            {
                **base,
                "platform": {"tiers": 2, "migration_cost": 120},
                "policy": {"name": "amcbf", "migration_cost": 600},
            }
        )
    # --set and grid axes name either key and override the base spec either way.
    assert set_key(old, "policy.migration_cost", 5)["platform"]["migration_cost"] == 5
    assert (
        validate_spec(
            set_key({**base, "policy": {"name": "amcbf", "migration_cost": 1}}, "platform.migration_cost", 7)
        )["platform"]["migration_cost"]
        == 7.0
    )
