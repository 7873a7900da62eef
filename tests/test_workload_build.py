"""Model workloads in specs, load control, and ``tiersweep workload generate/describe``.

* A requested offered load is reached within 1 % on every model (both load methods) and on a
  real trace; the offered load is computed independently here from the per-job records.
* Spec rules: exactly one of trace and model; model-only and trace-only keys; unknown presets
  and parameters name their key path; models default to 320 nodes.
* The CLI writes a model workload as SWF that reads back to the same jobs the simulator builds,
  and describes it with the same figures as the spec.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from tiersweep.cli import main
from tiersweep.core import simulate
from tiersweep.core.errors import SpecError
from tiersweep.core.spec import validate_spec
from tiersweep.core.workloads.build import build_workload
from tiersweep.core.workloads.rules import jobs_from_records
from tiersweep.core.workloads.swf import read_swf

MODELS = ("feitelson96", "jann97", "lublin03")


def load_of(records: dict, nodes: int) -> float:
    """Offered load from a run's per-job records: sum(size * runtime) / (nodes * span)."""
    span = records["submit_time"].max() - records["submit_time"].min()
    return float(np.sum(records["size"] * records["runtime"])) / (nodes * span)


def small_model_spec(model: str, **workload) -> dict:
    return {"seed": 3, "workload": {"model": model, "jobs": 3000, **workload}, "policy": {"name": "fcfs"}}


@pytest.mark.parametrize("method", ["rescale", "model"])
@pytest.mark.parametrize("target", [0.5, 0.9])
@pytest.mark.parametrize("model", MODELS)
def test_model_workload_reaches_the_requested_load(model, target, method):
    result = simulate(small_model_spec(model, load=target, load_method=method))
    measured = load_of(result.jobs, result.spec["platform"]["nodes"])
    assert measured == pytest.approx(target, rel=0.01)
    assert result.metrics["offered_load"] == pytest.approx(measured, rel=1e-9)


@pytest.mark.parametrize("target", [0.4, 1.1])
def test_trace_reaches_the_requested_load_by_rescaling_gaps(kth_path, target):
    base = simulate({"workload": {"trace": str(kth_path), "jobs": 4000}, "policy": {"name": "fcfs"}})
    scaled = simulate({"workload": {"trace": str(kth_path), "jobs": 4000, "load": target}, "policy": {"name": "fcfs"}})
    assert load_of(scaled.jobs, 100) == pytest.approx(target, rel=0.01)
    # Only gaps change: same jobs, same sizes and runtimes, first submit kept, gaps scaled alike.
    assert np.array_equal(base.jobs["job_id"], scaled.jobs["job_id"])
    assert np.array_equal(base.jobs["runtime"], scaled.jobs["runtime"])
    gaps, scaled_gaps = np.diff(base.jobs["submit_time"]), np.diff(scaled.jobs["submit_time"])
    factor = scaled.metrics["load_scale"]
    assert scaled.jobs["submit_time"][0] == base.jobs["submit_time"][0]
    assert np.allclose(scaled_gaps, gaps * factor)
    assert factor == pytest.approx(load_of(base.jobs, 100) / target)


def test_feitelson_model_method_scales_first_run_gaps_only():
    # Repeats are submitted when the previous run would end: the model method keeps that
    # (field-17 chains), rescaling all submits would not.
    result = simulate(small_model_spec("feitelson96", load=0.5))
    assert result.spec["workload"]["load_method"] == "auto"
    assert result.metrics["load_scale"] != 1.0
    assert load_of(result.jobs, 320) == pytest.approx(0.5, rel=0.01)


def test_models_default_to_320_nodes_and_their_own_preset_and_size():
    spec = validate_spec({"workload": {"model": "jann97"}})
    assert spec["workload"]["preset"] == "ctc_fulllog" and spec["workload"]["jobs"] == 10_000
    result = simulate(small_model_spec("feitelson96"))
    assert result.spec["platform"]["nodes"] == 320
    assert result.jobs["size"].max() <= 256
    assert validate_spec(spec) == spec  # validation is idempotent (canonical specs re-validate)


@pytest.mark.parametrize(
    "workload, message",
    [
        ({}, "give exactly one of workload.trace"),
        ({"model": "jann97", "trace": "x.swf"}, "give exactly one of workload.trace"),
        ({"model": "nope"}, "workload.model: unknown value 'nope'; valid choices: lublin03, jann97, feitelson96"),
        ({"model": "jann97", "preset": "calibrated"}, "workload.preset: unknown preset 'calibrated' of jann97"),
        ({"trace": "x.swf", "preset": "ctc_period"}, "workload.preset: only for model workloads"),
        ({"model": "jann97", "size_field": "allocated"}, "workload.size_field: only for trace workloads"),
        ({"trace": "x.swf", "load_method": "model"}, "workload.load_method: 'model' needs a model workload"),
        ({"model": "jann97", "load": -1}, "workload.load: expected a number from 0.001 to 100"),
    ],
)
def test_bad_workload_specs_name_the_key(workload, message):
    with pytest.raises(SpecError, match=message.replace("(", r"\(").replace(")", r"\)")):
        validate_spec({"workload": workload})


def test_bad_model_parameter_names_the_key_path():
    with pytest.raises(SpecError, match=r"workload\.params: feitelson96: .*no_such_knob"):
        simulate(small_model_spec("feitelson96", params={"no_such_knob": 1}))


def test_model_parameters_reach_the_generator():
    # A longer mean first-run gap lowers the load (without load control).
    base = simulate(small_model_spec("feitelson96"))
    slower = simulate(small_model_spec("feitelson96", params={"mean_gap": 260.0}))
    assert slower.metrics["offered_load"] < 0.7 * base.metrics["offered_load"]


@pytest.mark.parametrize("model", MODELS)
def test_built_workload_is_a_function_of_seed_and_spec(model):
    workload = validate_spec(small_model_spec(model))["workload"]
    a = build_workload(workload, seed=1, nodes=320).jobs
    b = build_workload(workload, seed=1, nodes=320).jobs
    c = build_workload(workload, seed=2, nodes=320).jobs
    key = lambda jobs: [(j.submit_time, j.size, j.runtime, tuple(j.cpu_true)) for j in jobs]  # noqa: E731
    assert key(a) == key(b)
    assert key(a) != key(c)


@pytest.mark.parametrize("model", MODELS)
def test_generate_writes_the_jobs_the_simulator_builds(tmp_path, capsys, model):
    out = tmp_path / f"{model}.swf.gz"
    assert (
        main(["workload", "generate", model, "--jobs", "2000", "--seed", "5", "--load", "0.7", "--out", str(out)]) == 0
    )
    assert "wrote 2,000 jobs" in capsys.readouterr().out
    log = read_swf(out)
    assert log.header["Model"] == model and log.header["MaxNodes"] == "320"
    written, _ = jobs_from_records(log.records, capacity=320)
    built = build_workload(
        validate_spec({"workload": {"model": model, "jobs": 2000, "load": 0.7}})["workload"], seed=5, nodes=320
    ).jobs
    assert [(j.size, j.runtime) for j in written] == [(j.size, j.runtime) for j in built]
    # Submit times are written with two decimals after rescaling: equal to within 0.005 s.
    assert np.allclose([j.submit_time for j in written], [j.submit_time for j in built], atol=0.006)


def test_describe_file_and_spec_agree_and_plot(tmp_path, capsys):
    out = tmp_path / "j.swf"
    main(["workload", "generate", "jann97", "--jobs", "1500", "--seed", "2", "--out", str(out)])
    capsys.readouterr()
    assert main(["workload", "describe", str(out), "--json", "--plot", str(tmp_path / "j.png")]) == 0
    from_file = json.loads(capsys.readouterr().out)
    spec = tmp_path / "spec.yaml"
    spec.write_text("seed: 2\nworkload: {model: jann97, jobs: 1500}\n")
    assert main(["workload", "describe", str(spec), "--json"]) == 0
    from_spec = json.loads(capsys.readouterr().out)
    assert from_file == from_spec
    assert from_file["jobs"] == 1500 and from_file["nodes"] == 320
    assert 0.3 < from_file["serial_share"] < 0.55
    png = (tmp_path / "j.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000


def test_describe_a_trace_counts_its_jobs(kth_path, capsys):
    assert main(["workload", "describe", str(kth_path), "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["jobs"] == 28_475 and stats["nodes"] == 100 and stats["max_size"] == 100


def test_generate_rejects_a_bad_parameter(tmp_path, capsys):
    assert (
        main(["workload", "generate", "jann97", "--set", "size_rule=sideways", "--out", str(tmp_path / "x.swf")]) == 2
    )
    assert "size_rule" in capsys.readouterr().err


CHILD = """
import json, sys
from tiersweep.core.spec import validate_spec
from tiersweep.core.workloads.build import build_workload
spec = validate_spec(json.loads(sys.argv[1]))
jobs = build_workload(spec["workload"], seed=spec["seed"], nodes=None).jobs
print(json.dumps([[j.submit_time, j.size, j.runtime, list(j.cpu_true)] for j in jobs]))
"""


@pytest.mark.parametrize("model", MODELS)
def test_model_workloads_are_identical_in_a_fresh_interpreter(model):
    import os
    import subprocess
    import sys
    from pathlib import Path

    spec = {"seed": 11, "workload": {"model": model, "jobs": 1500, "load": 0.75}}
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    child = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(spec)], cwd=root, env=env, capture_output=True, text=True, check=True
    )
    here = validate_spec(spec)
    jobs = build_workload(here["workload"], seed=11, nodes=None).jobs
    assert json.loads(child.stdout) == [[j.submit_time, j.size, j.runtime, list(j.cpu_true)] for j in jobs]


def test_bandwidth_hook_defaults_to_no_demand():
    spec = validate_spec({"workload": {"model": "jann97", "jobs": 100}})
    assert spec["workload"]["bandwidth"] == "none"
    jobs = build_workload(spec["workload"], seed=0, nodes=None).jobs
    assert all(j.bandwidth == 0.0 for j in jobs)
    with pytest.raises(SpecError, match="workload.bandwidth: unknown value 'huge'"):
        validate_spec({"workload": {"model": "jann97", "bandwidth": "huge"}})
