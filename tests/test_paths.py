"""Relative trace paths: a spec or config file names its traces relative to its own folder, so
it runs from any working directory; ``--set`` paths and mappings built in Python are taken from
the current directory.

So ``tiersweep run configs/paper001_ctc.yaml`` runs from any directory, though the configs
name ``../shared/traces/...`` relative to their own folder.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import TRACES, trace_path
from sweep_helpers import write_swf, write_yaml
from tiersweep.cli import main
from tiersweep.sweep.config import expand, load_sweep_config, parse_sweep_config
from tiersweep.sweep.specfile import config_kind, load_run_spec, load_spec_file, resolve_path
from tiersweep.sweep.tune_config import load_tune_config

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "configs"


def traces_in(value: Any, key: str = "") -> Iterator[str]:
    """Every trace path a config mapping holds: values of ``workload.trace`` keys (dotted or
    nested), in bases, axes, exclusion rules, variants and choices."""
    if isinstance(value, dict):
        for k, v in value.items():
            if isinstance(k, str) and k.endswith("workload.trace"):
                yield from (t for t in (v if isinstance(v, list) else [v]) if isinstance(t, str))
                if isinstance(v, dict) and isinstance(v.get("choices"), list):
                    yield from v["choices"]
            elif k == "trace" and key.endswith("workload") and isinstance(v, str):
                yield v
            else:
                yield from traces_in(v, f"{key}.{k}" if key else str(k))
    elif isinstance(value, list):
        for item in value:
            yield from traces_in(item, key)


# -- the paper configs from any directory -------------------------------------------------------


@pytest.mark.parametrize("where", ["tmp", "configs"])
def test_a_paper_config_runs_from_any_directory(tmp_path, where):
    trace_path("KTH-SP2-1996-2.1-cln.swf.gz")  # (skips without the shared traces)
    cwd = tmp_path if where == "tmp" else CONFIGS
    config = CONFIGS / "kth_easy.yaml"
    argv = [sys.executable, "-m", "tiersweep", "run", str(config), "--json", "--set", "workload.jobs=200"]
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["jobs"] == 200
    assert out["spec"]["workload"]["trace"] == str(TRACES / "KTH-SP2-1996-2.1-cln.swf.gz")


def test_every_trace_every_config_names_exists_from_another_directory(tmp_path, monkeypatch):
    trace_path("KTH-SP2-1996-2.1-cln.swf.gz")
    monkeypatch.chdir(tmp_path)
    checked = 0
    for path in sorted(CONFIGS.glob("*.yaml")):
        kind = config_kind(load_spec_file(path))
        raw = {
            "run": load_run_spec,
            "sweep": lambda p: load_sweep_config(p).raw,
            "tune": lambda p: load_tune_config(p).raw,
        }[kind](path)
        for trace in traces_in(raw):
            assert os.path.isabs(trace), (path.name, trace)
            assert Path(trace).is_file(), (path.name, trace)
            checked += 1
    assert checked >= 15  # (the trace-based configs name about twenty)


# -- what is resolved, against what ------------------------------------------------------------


def layout(tmp_path: Path) -> tuple[Path, Path, Path]:
    """``tmp/data/a.swf``, ``tmp/data/b.swf`` (two different logs: a cell addresses a trace by
    its content) and empty folders ``tmp/configs`` and ``tmp/elsewhere`` beside them."""
    data = tmp_path / "data"
    data.mkdir()
    (tmp_path / "configs").mkdir()
    (tmp_path / "elsewhere").mkdir()
    return write_swf(data / "a.swf"), write_swf(data / "b.swf", jobs=40), tmp_path / "configs"


def test_a_run_spec_file_takes_its_trace_from_its_folder(tmp_path, monkeypatch, capsys):
    a, _, configs = layout(tmp_path)
    spec = configs / "spec.yaml"
    spec.write_text("workload: {trace: ../data/a.swf, jobs: 20}\nplatform: {nodes: 64}\n")
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert load_run_spec(spec)["workload"]["trace"] == str(a)
    assert load_spec_file(spec)["workload"]["trace"] == "../data/a.swf"  # the plain reader keeps the text
    # A relative spec path, too: its folder is taken from the current directory.
    monkeypatch.chdir(tmp_path)
    assert load_run_spec("configs/spec.yaml")["workload"]["trace"] == str(a)
    assert main(["run", "configs/spec.yaml", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["jobs"] == 20


def test_a_set_trace_is_taken_from_the_current_directory(tmp_path, monkeypatch, capsys):
    _, b, configs = layout(tmp_path)
    spec = configs / "spec.yaml"
    spec.write_text("workload: {trace: ../data/a.swf, jobs: 20}\nplatform: {nodes: 64}\n")
    monkeypatch.chdir(tmp_path / "data")
    assert main(["run", str(spec), "--json", "--set", "workload.trace=b.swf"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert Path(out["spec"]["workload"]["trace"]).resolve() == b
    # A sweep's --set is made absolute at once (its cells may run in other directories).
    sweep = write_yaml(
        configs / "sweep.yaml",
        {"name": "s", "base": {"workload": {"trace": "../data/a.swf"}, "platform": {"nodes": 64}}},
    )
    assert load_sweep_config(sweep, ["workload.trace=b.swf"]).base["workload"]["trace"] == str(b)
    assert load_sweep_config(sweep, ["workload={trace: b.swf}"]).base["workload"] == {"trace": str(b)}


def test_a_sweep_config_resolves_base_axes_zips_and_exclusions_from_its_folder(tmp_path, monkeypatch):
    a, b, configs = layout(tmp_path)
    raw = {
        "name": "paths",
        "base": {"workload": {"trace": "../data/a.swf", "jobs": 20}, "platform": {"nodes": 64}},
        "grid": {"workload.trace": ["../data/a.swf", "../data/b.swf"], "policy.name": ["easy", "fcfs"]},
        "exclude": [{"workload.trace": "../data/b.swf", "policy.name": "fcfs"}],
        "seeds": [1],
    }
    path = write_yaml(configs / "sweep.yaml", raw)
    monkeypatch.chdir(tmp_path / "elsewhere")
    config = load_sweep_config(path)
    assert config.base["workload"]["trace"] == str(a)
    assert config.axes[0] == {"workload.trace": [str(a), str(b)]}
    assert config.exclude == [{"workload.trace": [str(b)], "policy.name": ["fcfs"]}]
    cells = expand(config)  # the exclusion still matches its point: three cells
    assert [(Path(c.point["workload.trace"]).name, c.point["policy.name"]) for c in cells] == [
        ("a.swf", "easy"),
        ("a.swf", "fcfs"),
        ("b.swf", "easy"),
    ]
    # From another directory the same cells (the same specs, so the same ids).
    monkeypatch.chdir(configs)
    assert [c.cell_id for c in expand(load_sweep_config("sweep.yaml"))] == [c.cell_id for c in cells]
    # The file's own text is kept, as written (relative paths, order), for the results folder.
    assert config.source_text == path.read_text()
    assert parse_sweep_config(raw).source_text is None


def test_zips_and_grids_of_a_sweep_config_are_resolved_too(tmp_path, monkeypatch):
    a, b, configs = layout(tmp_path)
    raw = {
        "name": "zipped",
        "base": {"workload": {"model": "jann97", "jobs": 20}, "platform": {"nodes": 64}},
        "grids": [{"policy.name": ["easy"]}, {"workload": [{"trace": "../data/b.swf", "jobs": 20}]}],
        "zip": [{"workload.trace": ["../data/a.swf", None], "workload.model": [None, "jann97"]}],
    }
    monkeypatch.chdir(tmp_path / "elsewhere")
    config = load_sweep_config(write_yaml(configs / "zipped.yaml", raw))
    assert config.axis_sets[0][1] == {"workload.trace": [str(a), None], "workload.model": [None, "jann97"]}
    assert config.axis_sets[1][0] == {"workload": [{"trace": str(b), "jobs": 20}]}


def test_a_missing_trace_names_the_resolved_path(tmp_path, monkeypatch, capsys):
    _, _, configs = layout(tmp_path)
    raw = {"name": "gone", "base": {"workload": {"trace": "../data/gone.swf"}, "platform": {"nodes": 64}}}
    path = write_yaml(configs / "gone.yaml", raw)
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert main(["sweep", str(path), "--backend", "serial", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert f"no such file {str(tmp_path / 'data' / 'gone.swf')!r}" in err
    assert "relative paths are taken from" not in err  # (the path shown is the one looked for)


def test_a_tuning_config_resolves_base_variants_and_choices_from_its_folder(tmp_path, monkeypatch):
    a, b, configs = layout(tmp_path)
    raw = {
        "name": "tpaths",
        "base": {
            "workload": {"trace": "../data/a.swf", "jobs": 20},
            "platform": {"nodes": 64, "tiers": 2},
            "policy": {"name": "amcbf"},
        },
        "params": {
            "policy.bg_threshold": {"low": 0.5, "high": 1.0},
            "workload.trace": {"choices": ["../data/a.swf", "../data/b.swf"]},
        },
        "variants": [{"workload.trace": "../data/b.swf"}],
        "objective": {"mean_bsld": "minimize"},
    }
    path = write_yaml(configs / "tune.yaml", raw)
    monkeypatch.chdir(tmp_path / "elsewhere")
    config = load_tune_config(path)
    assert config.base["workload"]["trace"] == str(a)
    assert config.variants == [{"workload.trace": str(b)}]
    assert [p.choices for p in config.params if p.key == "workload.trace"] == [(str(a), str(b))]
    assert config.source_text == path.read_text()


def test_mappings_and_absolute_paths_are_left_as_given(tmp_path):
    assert resolve_path("/abs/x.swf", tmp_path) == "/abs/x.swf"
    assert resolve_path(None, tmp_path) is None and resolve_path(3, tmp_path) == 3
    assert resolve_path("x.swf", tmp_path) == str(tmp_path / "x.swf")
    assert resolve_path("../x.swf", tmp_path / "sub") == str(tmp_path / "x.swf")  # '..' folded away
    raw = {"name": "m", "base": {"workload": {"trace": "rel.swf"}}, "grid": {"workload.trace": ["rel.swf"]}}
    config = parse_sweep_config(raw)
    assert config.base["workload"]["trace"] == "rel.swf" and config.axes == [{"workload.trace": ["rel.swf"]}]


def test_a_symlinked_folder_on_the_way_is_followed_as_the_file_system_does(tmp_path):
    # configs/link -> deep/inner: "link/../x" is deep/x for the file system, not configs/x.
    (tmp_path / "deep" / "inner").mkdir(parents=True)
    (tmp_path / "deep" / "x.swf").write_text("x")
    (tmp_path / "configs").mkdir()
    os.symlink(tmp_path / "deep" / "inner", tmp_path / "configs" / "link")
    resolved = resolve_path("link/../x.swf", tmp_path / "configs")
    assert Path(resolved).is_file() and Path(resolved).resolve() == tmp_path / "deep" / "x.swf"
