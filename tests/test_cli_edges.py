"""Command-line cases where an easy answer would be broken or misleading, one test each:

* ``tiersweep workload describe feitelson96`` (a model name) describes the model, not "no such
  file";
* a sweep config given to ``run`` is named as a sweep config, not refused on its first key
  (``name: unknown key``) (likewise a run spec given to ``sweep``, a tuning config to either);
* ``--set`` works for ``run``, ``sweep`` and ``tune`` alike;
* an invalid sweep reports every invalid cell, one line per error, and suggests ``exclude``
  only where it fits;
* ``describe`` of a trace spec with ``--set workload.model=...`` describes the model (not "give
  exactly one of workload.trace or workload.model");
* the ``policy`` line of ``run``'s table shows only parameters the policy uses, and the
  platform line shows ``migration_cost`` only where something can be suspended or moved.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from conftest import trace_path
from sweep_helpers import BASE, read_table, small_raw, tiny_tune_raw, write_yaml
from tiersweep.cli import main
from tiersweep.core.simulate import simulate
from tiersweep.sweep.config import expand, load_sweep_config
from tiersweep.sweep.run_command import summary_table
from tiersweep.sweep.summary import format_summary

ROOT = Path(__file__).resolve().parents[1]


# -- workload describe MODEL ----------------------------------------------------------------------


def test_describe_a_model_by_name(capsys):
    assert main(["workload", "describe", "feitelson96", "--json", "--set", "workload.jobs=500"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["jobs"] == 500 and stats["nodes"] == 320
    # An unknown name says what may be given.
    assert main(["workload", "describe", "feitelson69"]) == 2
    err = capsys.readouterr().err
    assert "feitelson69: no such file" in err and "feitelson96" in err and "run spec" in err


# -- the wrong kind of file -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "raw", "said"),
    [
        ("run", small_raw(), "this is a sweep config, not a run spec: use tiersweep sweep"),
        ("run", tiny_tune_raw(), "this is a tuning config, not a run spec: use tiersweep tune"),
        ("sweep", {"workload": {"model": "jann97"}}, "this is a run spec, not a sweep config: use tiersweep run"),
        ("sweep", tiny_tune_raw(), "this is a tuning config, not a sweep config: use tiersweep tune"),
        ("tune", small_raw(), "this is a sweep config, not a tuning config: use tiersweep sweep"),
        ("tune", {"workload": {"model": "jann97"}}, "this is a run spec, not a tuning config: use tiersweep run"),
    ],
    ids=["run-sweep", "run-tune", "sweep-run", "sweep-tune", "tune-sweep", "tune-run"],
)
def test_a_config_of_another_command_names_the_command(tmp_path, capsys, command, raw, said):
    path = write_yaml(tmp_path / "c.yaml", raw)
    assert main([command, str(path), "--out", str(tmp_path / "out")] if command != "run" else [command, str(path)]) == 2
    assert capsys.readouterr().err == f"tiersweep: error: {path}: {said} {path}\n"
    assert not (tmp_path / "out").exists()


# -- --set for sweep and tune ---------------------------------------------------------------------


def test_sweep_set_overrides_the_base_spec(tmp_path, capsys):
    path = write_yaml(tmp_path / "s.yaml", small_raw("setbase", seeds=1))
    plain = expand(load_sweep_config(path))
    changed = expand(load_sweep_config(path, ["workload.jobs=40", "platform.migration_cost=5"]))
    assert {c.spec["workload"]["jobs"] for c in changed} == {40}
    assert {c.spec["platform"]["migration_cost"] for c in changed} == {5}
    assert not {c.cell_id for c in plain} & {c.cell_id for c in changed}  # another base, other cells
    out = tmp_path / "out"
    assert main(["sweep", str(path), "--backend", "serial", "--out", str(out), "--set", "workload.jobs=40"]) == 0
    capsys.readouterr()
    runs = read_table(out / "setbase" / "runs").to_pandas()
    assert len(runs) == 4 and set(runs["workload.jobs"]) == {40} and set(runs["jobs"]) == {40}


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("policy.name=fcfs", "--set policy.name: policy.name is varied by the config's grid"),
        ("workload={model: jann97}", "--set workload: workload.load is varied by the config's grid"),
        ("seed=4", "--set seed: each cell runs a seed of the config's 'seeds'"),
        ("nonsense", "expected KEY=VALUE"),
    ],
)
def test_sweep_set_refuses_what_the_grid_varies(tmp_path, capsys, override, message):
    path = write_yaml(tmp_path / "s.yaml", small_raw())
    assert main(["sweep", str(path), "--dry-run", "--out", str(tmp_path / "out"), "--set", override]) == 2
    assert message in capsys.readouterr().err


def test_tune_set_overrides_the_base_spec_and_refuses_tuned_keys(tmp_path, capsys):
    path = write_yaml(tmp_path / "t.yaml", tiny_tune_raw("settune"))
    out = tmp_path / "out"
    argv = ["tune", str(path), "--backend", "serial", "--no-plots", "--out", str(out)]
    assert main([*argv, "--set", "workload.jobs=30"]) == 0
    capsys.readouterr()
    runs = read_table(out / "settune" / "runs").to_pandas()
    assert len(runs) and set(runs["workload.jobs"]) == {30}
    assert main([*argv, "--set", "policy.bg_threshold=0.7"]) == 2
    assert "--set policy.bg_threshold: policy.bg_threshold is varied by the config's params" in capsys.readouterr().err


# -- every invalid cell, before anything runs -----------------------------------------------------


def test_every_invalid_cell_is_reported_with_what_to_change(tmp_path, capsys):
    raw = small_raw(
        "bad",
        base={**BASE, "platform": {"nodes": 64}},
        grid={"platform.tiers": [1, 2], "policy.name": ["easy", "amcbf", "eazy"], "workload.load": [0.6, 0.9]},
    )
    path = write_yaml(tmp_path / "bad.yaml", raw)
    assert main(["sweep", str(path), "--backend", "serial", "--out", str(tmp_path / "out")]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 3, lines
    # AMCBF needs two tiers: only its one-tier combinations fail, so 'exclude' is the fix.
    tiers = lines[0]
    assert tiers.startswith(
        "tiersweep: error: cell platform.tiers=1, policy.name='amcbf', workload.load=0.6: policy.name: "
    )
    assert "(also 1 more cell: platform.tiers=1, policy.name='amcbf', workload.load=0.9)" in tiers
    assert tiers.endswith("drop them with exclude: [{platform.tiers: 1, policy.name: amcbf}]")
    # A misspelt policy fails wherever it appears: the value is to change, not to exclude.
    typo = lines[1]
    assert typo.startswith(
        "cell platform.tiers=1, policy.name='eazy', workload.load=0.6: policy.name: unknown value 'eazy'"
    )
    assert "also 3 more cells" in typo and "exclude" not in typo
    assert typo.endswith("every cell with policy.name='eazy' has this error: change or drop that value in the config")
    assert lines[2] == "6 of 12 grid points are invalid (2 different errors); nothing was run"
    assert not (tmp_path / "out").exists()


def test_an_invalid_base_spec_says_so_once(tmp_path, capsys):
    raw = small_raw("badbase", base={**BASE, "platform": {"nodes": 64, "tiers": 2, "migration_cost": -1}})
    path = write_yaml(tmp_path / "bad.yaml", raw)
    assert main(["sweep", str(path), "--dry-run", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "platform.migration_cost: expected" in err and "also 3 more cells" in err
    assert err.rstrip().endswith("every cell has this error: fix the base spec (or the axis value it names)")


def test_many_invalid_cells_are_listed_up_to_a_cap(tmp_path, capsys):
    raw = small_raw("many", grid={"policy.name": ["eazy"], "workload.load": [0.1 * i for i in range(1, 31)]})
    path = write_yaml(tmp_path / "many.yaml", raw)
    assert main(["sweep", str(path), "--dry-run", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "also 29 more cells" in err and "; and 25 more)" in err
    assert err.count("policy.name='eazy', workload.load=") == 5


# -- describe a trace spec as a model -------------------------------------------------------------


def test_describe_a_trace_spec_with_a_model_override_describes_the_model(tmp_path, capsys):
    kth = trace_path("KTH-SP2-1996-2.1-cln.swf.gz")
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"workload: {{trace: '{kth}', jobs: 400, size_field: allocated}}\nplatform: {{nodes: 100}}\n")
    assert (
        main(
            [
                "workload",
                "describe",
                str(spec),
                "--json",
                "--set",
                "workload.model=jann97",
                "--set",
                "workload.jobs=300",
            ]
        )
        == 0
    )
    model = json.loads(capsys.readouterr().out)
    assert model["jobs"] == 300 and model["nodes"] == 100
    assert main(["workload", "describe", str(spec), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["jobs"] == 400
    # And back: a trace replaces a model (and the model-only keys).
    model_spec = tmp_path / "model.yaml"
    model_spec.write_text(
        "workload: {model: lublin03, preset: lublin_256, max_size: 64, jobs: 50}\nplatform: {nodes: 100}\n"
    )
    assert main(["workload", "describe", str(model_spec), "--json", "--set", f"workload.trace={kth}"]) == 0
    assert json.loads(capsys.readouterr().out)["jobs"] == 50


# -- the run table's policy and platform lines ----------------------------------------------------


def test_the_policy_line_shows_only_the_policys_parameters():
    base = {"workload": {"model": "jann97", "jobs": 200}, "seed": 1}
    easy = summary_table(
        simulate({**base, "platform": {"nodes": 64}, "policy": {"name": "easy", "migration_cost": 30}})
    )
    lines = easy.splitlines()
    assert lines[0].startswith("workload  jann97 (") and lines[0].endswith(", 200 jobs")  # (not "None")
    assert lines[1] == "platform  nodes, 64 nodes"  # EASY never suspends: no migration cost
    assert lines[2].startswith("policy    easy, estimate")
    amcbf = summary_table(
        simulate(
            {
                **base,
                "platform": {"nodes": 64, "tiers": 2},
                "policy": {"name": "amcbf", "bg_threshold": 0.9, "migration_cost": 30},
            }
        )
    ).splitlines()
    assert amcbf[1] == "platform  nodes, 64 nodes, 2 tiers, migration cost 30 s"
    assert amcbf[2].startswith("policy    amcbf (bg_threshold=0.9), estimate")
    shared = summary_table(
        simulate(
            {
                **base,
                "platform": {"kind": "shared_vms", "machines": 16, "vms": 4},
                "policy": {"name": "vm_backfill", "selector": "ec"},
            }
        )
    ).splitlines()
    assert "migration_cost" not in shared[1] and shared[1].startswith("platform  shared_vms, machines=16, vms=4")
    assert shared[2].startswith("policy    vm_backfill (selector=ec), estimate")
    # Parameters at their defaults are not spelled out (EASY++'s keys on every backfilling run).
    default = summary_table(
        simulate({**base, "platform": {"nodes": 64}, "policy": {"name": "easy", "prediction": "user"}})
    )
    assert default.splitlines()[2].startswith("policy    easy, estimate")


# -- the sweep summary of grids that set different keys -------------------------------------------


def test_the_summary_prints_grid_values_as_given_when_grids_set_different_keys(tmp_path, capsys):
    # A number axis that only one grid sets (platform.tiers beside a gang grid) is printed as
    # given, not as metrics are ("2.000" and "NaN").
    config = {
        "name": "mixed",
        "base": {"workload": {"model": "jann97", "jobs": 60}, "platform": {"nodes": 32}},
        "grids": [
            {"policy.name": ["easy"], "platform.tiers": [2]},
            {"policy.name": ["bgs"], "platform.kind": ["gang"], "platform.mpl": [2]},
        ],
        "seeds": 1,
    }
    path = write_yaml(tmp_path / "mixed.yaml", config)
    assert main(["sweep", str(path), "--out", str(tmp_path / "out"), "--backend", "serial"]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = lines[0].split()
    easy = dict(zip(header, lines[1].split()))
    bgs = dict(zip(header, lines[2].split()))
    assert (easy["policy.name"], easy["platform.tiers"], easy["platform.mpl"]) == ("easy", "2", "-")
    assert (bgs["policy.name"], bgs["platform.tiers"], bgs["platform.mpl"], bgs["platform.kind"]) == (
        "bgs",
        "-",
        "2",
        "gang",
    )
    assert "." in easy["mean_wait"]  # metrics keep their number format
    # A float axis keeps its spelling: 1.0 beside 0.6, not 1.
    frame = pd.DataFrame({"workload.load": [0.6, 1.0], "seeds": [3, 3], "mean_wait": [1.0, 2.0]})
    assert [line.split()[0] for line in format_summary(frame).splitlines()[1:3]] == ["0.6", "1.0"]
