"""Sweep configs: grid expansion, zips, exclusions, seeds, canonical cells and content-addressed
ids, with the error messages users see (``sweep/config.py`` and ``sweep/cells.py``).

Expected cell lists are built independently here (``itertools.product`` over the axes in
config order, then the seeds) and compared with :func:`tiersweep.sweep.config.expand`.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import tiersweep.sweep.cells
from sweep_helpers import BASE, GRID, small_config, small_raw, write_swf, write_yaml
from tiersweep.cli import main
from tiersweep.core.errors import SpecError
from tiersweep.core.spec import validate_spec
from tiersweep.sweep.cells import canonical_json, cell_id, flatten, replicate_seed
from tiersweep.sweep.config import expand, load_sweep_config, parse_sweep_config
from tiersweep.sweep.driver import run_sweep
from tiersweep.sweep.estimate import CellEstimate, expected_time_line

ROOT = Path(__file__).resolve().parents[1]


def spec_error(raw: dict) -> str:
    """The message of the SpecError that parsing and expanding ``raw`` raises."""
    with pytest.raises(SpecError) as info:
        expand(parse_sweep_config(raw))
    return str(info.value)


# -- the cartesian product -------------------------------------------------------------------


def test_grid_is_the_cartesian_product_in_config_order_then_seeds():
    cells = expand(small_config())
    seeds = [replicate_seed(0, 0), replicate_seed(0, 1)]
    expected = [
        ({"policy.name": name, "workload.load": load}, replicate, seed)
        for name, load in itertools.product(GRID["policy.name"], GRID["workload.load"])
        for replicate, seed in enumerate(seeds)
    ]
    assert len(cells) == 2 * 2 * 2
    assert [c.index for c in cells] == list(range(len(cells)))
    assert [(c.point, c.replicate, c.seed) for c in cells] == expected
    for cell in cells:
        # The point is the grid values only; the spec carries them, validated and complete.
        assert cell.spec == validate_spec(
            {
                **BASE,
                "seed": cell.seed,
                "policy": {"name": cell.point["policy.name"]},
                "workload": {**BASE["workload"], "load": cell.point["workload.load"]},
            }
        )


def test_axis_order_follows_the_config_and_the_last_axis_varies_fastest():
    raw = small_raw(
        grid={"workload.load": [0.6, 0.9], "policy.name": ["easy", "cmbf"], "platform.tiers": [1, 2]}, seeds=[5]
    )
    points = [c.point for c in expand(parse_sweep_config(raw))]
    assert points == [
        {"workload.load": load, "policy.name": name, "platform.tiers": tiers}
        for load, name, tiers in itertools.product([0.6, 0.9], ["easy", "cmbf"], [1, 2])
    ]
    assert list(points[0]) == ["workload.load", "policy.name", "platform.tiers"]


def test_a_config_without_a_grid_is_one_cell_per_seed():
    cells = expand(parse_sweep_config({"name": "one", "base": BASE, "seeds": [3, 4]}))
    assert [(c.index, c.point, c.seed) for c in cells] == [(0, {}, 3), (1, {}, 4)]


def test_load_sweep_config_reads_yaml_like_the_mapping(tmp_path):
    path = write_yaml(tmp_path / "small.yaml", small_raw())
    from_file = load_sweep_config(path)
    assert from_file == small_config()
    assert [c.cell_id for c in expand(from_file)] == [c.cell_id for c in expand(small_config())]


def test_the_quickstart_config_expands_to_its_documented_size():
    config = load_sweep_config(ROOT / "configs" / "quickstart.yaml")
    cells = expand(config)
    assert config.name == "quickstart"
    assert len(cells) == 4 * 3 * 3  # four policies x three loads x three seeds


# -- zip groups ------------------------------------------------------------------------------


def test_zip_groups_vary_together_after_the_grid_axes():
    raw = small_raw(
        grid={"policy.name": ["easy", "amcbf"]},
        zip=[{"policy.migration_cost": [0, 600], "workload.cpu_accuracy": [1.0, 0.0]}],
        seeds=[1],
    )
    cells = expand(parse_sweep_config(raw))
    assert [c.point for c in cells] == [
        # policy.migration_cost, the key's old name, is stored under its new one
        {"policy.name": name, "platform.migration_cost": cost, "workload.cpu_accuracy": accuracy}
        for name in ["easy", "amcbf"]
        for cost, accuracy in [(0, 1.0), (600, 0.0)]
    ]
    for cell in cells:
        assert cell.spec["platform"]["migration_cost"] == cell.point["platform.migration_cost"]
        assert cell.spec["workload"]["cpu_accuracy"] == cell.point["workload.cpu_accuracy"]


def test_zip_lists_of_unequal_lengths_are_an_error_naming_the_group_and_lengths():
    raw = small_raw(zip=[{"policy.migration_cost": [0, 600], "workload.cpu_accuracy": [1.0, 0.5, 0.0]}])
    with pytest.raises(SpecError) as info:
        parse_sweep_config(raw)
    message = str(info.value)
    assert message.startswith("zip[0]")
    assert "'policy.migration_cost': 2" in message and "'workload.cpu_accuracy': 3" in message


def test_the_second_zip_group_is_named_by_its_index():
    raw = small_raw(
        zip=[{"policy.migration_cost": [0]}, {"workload.cpu_accuracy": [1.0, 0.5], "workload.cpu_prior": [1.0]}]
    )
    with pytest.raises(SpecError, match=r"^zip\[1\]"):
        parse_sweep_config(raw)


def test_a_key_in_both_grid_and_zip_is_an_error():
    raw = small_raw(zip=[{"policy.name": ["easy", "fcfs"], "policy.migration_cost": [0, 600]}])
    with pytest.raises(SpecError, match=r"^zip\[0\]\.policy\.name: already an axis"):
        parse_sweep_config(raw)


def test_a_key_in_two_zip_groups_is_an_error():
    raw = small_raw(grid={}, zip=[{"policy.migration_cost": [0, 600]}, {"policy.migration_cost": [1, 2]}])
    with pytest.raises(SpecError, match=r"^zip\[1\]\.policy\.migration_cost: already an axis"):
        parse_sweep_config(raw)


@pytest.mark.parametrize(
    "changes",
    [{"grid": {}, "zip": [{"seed": [1, 2], "policy.name": ["easy", "amcbf"]}]}, {"grid": {"seed.x": [1, 2]}}],
    ids=["zip-seed", "grid-seed-dotted"],
)
def test_seed_is_not_accepted_as_an_axis_anywhere(changes):
    raw = small_raw(**changes)
    raw.pop("seeds")
    with pytest.raises(SpecError, match=r"seed"):
        expand(parse_sweep_config(raw))


# -- exclusions ------------------------------------------------------------------------------


def test_exclude_with_scalar_values_drops_the_points_matching_every_key():
    raw = small_raw(exclude=[{"policy.name": "easy", "workload.load": 0.9}])
    cells = expand(parse_sweep_config(raw))
    kept = [(c.point["policy.name"], c.point["workload.load"]) for c in cells]
    assert kept == [
        (name, level)
        for name, level in itertools.product(GRID["policy.name"], GRID["workload.load"])
        if (name, level) != ("easy", 0.9)
        for _ in range(2)
    ]
    assert [c.index for c in cells] == list(range(6))


def test_exclude_with_a_list_value_matches_any_of_them():
    raw = small_raw(exclude=[{"policy.name": "amcbf", "workload.load": [0.6, 0.9]}])
    cells = expand(parse_sweep_config(raw))
    assert len(cells) == 4
    assert {c.point["policy.name"] for c in cells} == {"easy"}


def test_exclude_can_name_a_zip_key():
    raw = small_raw(
        zip=[{"policy.migration_cost": [0, 600], "workload.cpu_accuracy": [1.0, 0.0]}],
        exclude=[{"policy.migration_cost": 600}],
    )
    cells = expand(parse_sweep_config(raw))
    assert len(cells) == 8
    assert {c.point["platform.migration_cost"] for c in cells} == {0}


def test_an_exclude_key_that_is_not_an_axis_is_an_error_naming_it():
    raw = small_raw(exclude=[{"policy.name": "easy"}, {"policy.bg_threshold": 0.5}])
    with pytest.raises(SpecError) as info:
        parse_sweep_config(raw)
    message = str(info.value)
    assert message.startswith("exclude[1].policy.bg_threshold: not an axis")
    assert "policy.name" in message and "workload.load" in message  # the valid axes are listed


# -- seeds -----------------------------------------------------------------------------------


def test_a_seed_count_derives_one_seed_per_replicate_shared_by_every_policy():
    cells = expand(small_config(seeds=3, seed=5))
    derived = [replicate_seed(5, r) for r in range(3)]
    assert len(set(derived)) == 3 and all(0 <= s < 2**32 for s in derived)
    for replicate in range(3):
        # Common random numbers: every grid point of a replicate runs the same seed.
        assert {c.seed for c in cells if c.replicate == replicate} == {derived[replicate]}
    # A different sweep seed gives different replicate seeds.
    assert not set(derived) & {replicate_seed(6, r) for r in range(3)}


def test_replicate_seeds_do_not_depend_on_axis_order_or_order_of_computation():
    forward = expand(small_config(seeds=3, seed=9))
    backward = expand(
        small_config(seeds=3, seed=9, grid={"workload.load": [0.9, 0.6], "policy.name": ["amcbf", "easy"]})
    )

    def seeds(cells):
        return {(c.point["policy.name"], c.point["workload.load"], c.replicate): c.seed for c in cells}

    assert seeds(forward) == seeds(backward)
    assert {c.cell_id for c in forward} == {c.cell_id for c in backward}
    late_first = [replicate_seed(9, r) for r in (2, 1, 0)][::-1]
    assert late_first == [replicate_seed(9, r) for r in range(3)]


def test_a_seed_list_is_used_as_given_in_order():
    cells = expand(small_config(seeds=[11, 3, 7]))
    assert [c.seed for c in cells[:3]] == [11, 3, 7]
    assert [c.replicate for c in cells[:3]] == [0, 1, 2]
    assert len(cells) == 4 * 3


def test_without_seeds_the_base_seed_is_used():
    raw = small_raw(base={**BASE, "seed": 42})
    raw.pop("seeds")
    cells = expand(parse_sweep_config(raw))
    assert len(cells) == 4 and {c.seed for c in cells} == {42}


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"seeds": [1, 2, 1]}, r"^seeds: repeated seeds in \[1, 2, 1\]"),
        ({"seeds": [1, -2]}, r"^seeds: expected integers from 0 to 9,223,372,036,854,775,807 .*, got -2"),
        ({"seeds": [1.5]}, r"^seeds: expected integers from 0 .*, got 1\.5"),
        ({"seeds": 0}, r"^seeds: expected a count from 1 to 1,000,000"),
        ({"seeds": -3}, r"^seeds: expected a count from 1"),
        ({"seeds": []}, r"^seeds: expected a positive count or a non-empty list"),
        ({"seeds": True}, r"^seeds: expected a positive count or a non-empty list"),
        ({"seed": -1}, r"^seed: expected an integer from 0 to 9,223,372,036,854,775,807, got -1"),
        ({"seed": "zero"}, r"^seed: expected an integer from 0"),
    ],
)
def test_bad_seeds_are_errors(changes, message):
    with pytest.raises(SpecError, match=message):
        parse_sweep_config(small_raw(**changes))


def test_seeds_change_cell_ids():
    one = expand(small_config(seeds=[1]))
    two = expand(small_config(seeds=[2]))
    assert len(one) == len(two) == 4
    assert not {c.cell_id for c in one} & {c.cell_id for c in two}


# -- structural errors -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (
            {**small_raw(), "gird": {}},
            r"^gird: unknown key; valid keys: name, description, base, grid, grids, zip, exclude, sample, seeds, seed, "
            r"cell_timeout$",
        ),
        ({k: v for k, v in small_raw().items() if k != "name"}, r"^name: expected a name of letters, digits.*got None"),
        (small_raw(name="../escape"), r"^name: expected a name.*got '\.\./escape'"),
        (small_raw(name="a b"), r"^name: expected a name"),
        (small_raw(name=7), r"^name: expected a name"),
        ({k: v for k, v in small_raw().items() if k != "base"}, r"^base: expected a run spec"),
        (small_raw(grid={"policy.name": []}), r"^grid\.policy\.name: empty axis"),
        (small_raw(grid={"workload.load": 0.6}), r"^grid\.workload\.load: expected a list of values, got 0\.6"),
        (small_raw(grid=["policy.name"]), r"^grid: expected a mapping"),
        (small_raw(grid={"seed": [1, 2]}), r"^grid\.seed: give seeds with the top-level 'seeds' key"),
        (small_raw(zip={"policy.name": ["easy"]}), r"^zip: expected a list of groups"),
        (small_raw(zip=[{"policy.migration_cost": []}]), r"^zip\[0\]\.policy\.migration_cost: empty axis"),
        (small_raw(exclude=[{}]), r"^exclude\[0\]: expected a mapping"),
    ],
    ids=[
        "unknown-key",
        "missing-name",
        "path-name",
        "space-name",
        "number-name",
        "missing-base",
        "empty-axis",
        "scalar-axis",
        "grid-list",
        "grid-seed",
        "zip-mapping",
        "empty-zip-axis",
        "empty-exclude",
    ],
)
def test_structural_errors_name_the_key_path(raw, message):
    with pytest.raises(SpecError, match=message):
        parse_sweep_config(raw)


def test_a_value_a_spec_rejects_fails_at_expand_naming_the_cell_and_key_path():
    config = parse_sweep_config(small_raw(grid={"workload.load": [0.6, 0.9], "policy.name": ["easy", "eazy"]}))
    with pytest.raises(SpecError) as info:
        expand(config)
    message = str(info.value)
    assert message.startswith("cell workload.load=0.6, policy.name='eazy': policy.name: unknown value 'eazy'")
    assert "valid choices: " in message and "amcbf" in message


def test_an_unknown_spec_key_in_the_grid_fails_at_expand_naming_it():
    message = spec_error(small_raw(grid={"policy.nmae": ["easy"]}))
    assert message.startswith("cell policy.nmae='easy': policy.nmae: unknown key")


def test_a_missing_trace_fails_at_expand(tmp_path):
    missing = str(tmp_path / "missing.swf")
    message = spec_error(
        small_raw(
            base={"workload": {"trace": missing}, "platform": {"nodes": 64}}, grid={"policy.name": ["easy"]}, seeds=[0]
        )
    )
    assert message.startswith(f"cell policy.name='easy': workload.trace: no such file {missing!r}")


def test_an_invalid_cell_stops_the_sweep_before_anything_runs_or_is_written(tmp_path, capsys):
    raw = small_raw(name="bad", grid={"policy.name": ["easy", "eazy"]})
    with pytest.raises(SpecError, match="policy.name='eazy'"):
        run_sweep(parse_sweep_config(raw), tmp_path / "out", backend="serial", progress=False)
    assert not (tmp_path / "out").exists()
    # Through the command line: exit status 2 and the message on stderr, nothing written.
    path = write_yaml(tmp_path / "bad.yaml", raw)
    assert main(["sweep", str(path), "--out", str(tmp_path / "out"), "--backend", "serial"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tiersweep: error: cell policy.name='eazy': policy.name: unknown value 'eazy'")
    assert not (tmp_path / "out").exists()


# -- canonical specs and cell ids ------------------------------------------------------------


def test_grid_points_with_identical_canonical_specs_are_one_cell():
    # null means the default (20 s), so the first two points are the same run.
    cells = expand(small_config(grid={"policy.migration_cost": [None, 20, 600]}))
    assert [(c.index, c.point["platform.migration_cost"], c.spec["platform"]["migration_cost"]) for c in cells] == [
        (0, None, 20.0),
        (1, None, 20.0),
        (2, 600, 600.0),
        (3, 600, 600.0),
    ]
    assert len({c.cell_id for c in cells}) == 4


def _changed(value):
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1
    if isinstance(value, str):
        return value + "x"
    if isinstance(value, list):
        return [*value, 0.5]
    return "set"  # None


def _with(spec: dict, dotted: str, value) -> dict:
    out = json.loads(json.dumps(spec))
    node = out
    *parents, last = dotted.split(".")
    for part in parents:
        node = node[part]
    node[last] = value
    return out


def test_cell_id_changes_when_any_spec_value_changes():
    spec = validate_spec({**BASE, "policy": {"name": "amcbf"}, "seed": 3})
    original = cell_id(spec)
    ids = {original}
    keys = list(flatten(spec))
    assert len(keys) > 15
    for key in keys:
        ids.add(cell_id(_with(spec, key, _changed(flatten(spec)[key]))))
    assert len(ids) == len(keys) + 1
    assert cell_id(json.loads(json.dumps(spec))) == original  # same content, same id
    assert re.fullmatch(r"[0-9a-f]{16}", original)


def test_canonical_json_is_independent_of_key_order():
    spec = validate_spec(BASE)
    reordered = {
        k: (dict(reversed(list(v.items()))) if isinstance(v, dict) else v) for k, v in reversed(list(spec.items()))
    }
    assert canonical_json(reordered) == canonical_json(spec)
    assert cell_id(reordered) == cell_id(spec)


_IDS_SCRIPT = """
import json, sys
from tiersweep.sweep.config import expand, parse_sweep_config
print(json.dumps([c.cell_id for c in expand(parse_sweep_config(json.loads(sys.stdin.read())))]))
"""


def test_cell_ids_are_stable_across_processes_and_hash_seeds():
    raw = small_raw()
    here = [c.cell_id for c in expand(parse_sweep_config(raw))]
    for hash_seed in ("1", "987654"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        done = subprocess.run(
            [sys.executable, "-c", _IDS_SCRIPT],
            input=json.dumps(raw),
            capture_output=True,
            text=True,
            env=env,
            cwd=ROOT,
            check=True,
        )
        assert json.loads(done.stdout) == here


def test_cell_ids_change_with_the_model_version(monkeypatch):
    before = [c.cell_id for c in expand(small_config())]
    monkeypatch.setattr(tiersweep.sweep.cells, "MODEL_VERSION", tiersweep.sweep.cells.MODEL_VERSION + "-changed")
    changed = [c.cell_id for c in expand(small_config())]
    assert not set(before) & set(changed)
    monkeypatch.undo()
    assert [c.cell_id for c in expand(small_config())] == before


def _trace_config(trace: str):
    return small_raw(
        name="trace",
        base={"workload": {"trace": trace}, "platform": {"nodes": 64}},
        grid={"policy.name": ["easy", "fcfs"]},
        seeds=[0],
    )


def test_cell_ids_follow_the_trace_content_not_only_its_path(tmp_path, monkeypatch):
    # The same relative path in two folders: identical specs, so only the content can differ.
    first, second, third = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    for folder in (first, second, third):
        folder.mkdir()
        write_swf(folder / "trace.swf")
    text = (second / "trace.swf").read_text()
    index = text.index("\n1 0 -1 60 1") + len("\n1 0 -1 6")
    (second / "trace.swf").write_text(text[:index] + "1" + text[index + 1 :])  # runtime 60 -> 61: one byte
    assert len((second / "trace.swf").read_bytes()) == len((first / "trace.swf").read_bytes())

    def ids(folder):
        monkeypatch.chdir(folder)
        cells = expand(parse_sweep_config(_trace_config("trace.swf")))
        assert {c.spec["workload"]["trace"] for c in cells} == {"trace.swf"}
        return [c.cell_id for c in cells]

    assert ids(first) == ids(third)  # same content, same ids
    assert not set(ids(first)) & set(ids(second))


def test_editing_a_trace_in_place_changes_the_cell_ids(tmp_path):
    trace = write_swf(tmp_path / "trace.swf")
    config = parse_sweep_config(_trace_config(str(trace)))
    before = [c.cell_id for c in expand(config)]
    stat = trace.stat()
    data = bytearray(trace.read_bytes())
    data[data.index(b"\n1 0 -1 60 1") + len(b"\n1 0 -1 6")] = ord("1")
    trace.write_bytes(bytes(data))
    # The digest is cached per (path, size, mtime): make sure the edit shows in the mtime even
    # on file systems with coarse timestamps.
    os.utime(trace, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    after = [c.cell_id for c in expand(config)]
    assert not set(before) & set(after)


@pytest.mark.parametrize(
    ("key", "as_int", "as_float"),
    [
        ("workload.load", 1, 1.0),
        ("policy.migration_cost", 600, 600.0),
        ("platform.nodes", 64, 64.0),
        ("workload.cpu_accuracy", 0, 0.0),
    ],
)
def test_numbers_are_normalised_so_int_and_float_spellings_are_one_cell(key, as_int, as_float):
    ints = expand(small_config(grid={key: [as_int]}))
    floats = expand(small_config(grid={key: [as_float]}))
    assert [c.cell_id for c in ints] == [c.cell_id for c in floats]
    assert [canonical_json(c.spec) for c in ints] == [canonical_json(c.spec) for c in floats]


# -- dry run ---------------------------------------------------------------------------------


def _dry_run(capsys, config_path: Path, out: Path) -> tuple[str, list[str]]:
    assert main(["sweep", str(config_path), "--out", str(out), "--dry-run"]) == 0
    lines = capsys.readouterr().out.splitlines()
    return lines[0], lines[1:]


def _split_expected(rows: list[str]) -> tuple[list[str], str]:
    """The cell rows of a dry run, and its closing line of expected time."""
    assert rows[-1].startswith("expected time: "), rows[-1]
    return rows[:-1], rows[-1]


def test_dry_run_lists_the_cells_and_what_is_stored(tmp_path, capsys):
    raw = small_raw(name="dry")
    path = write_yaml(tmp_path / "dry.yaml", raw)
    out = tmp_path / "out"
    cells = expand(parse_sweep_config(raw))

    header, rows = _dry_run(capsys, path, out)
    rows, expected = _split_expected(rows)
    assert re.search(r"\b8 cells, 0 stored\b.*, 8 to compute$", header), header
    # Nothing stored: the cost formula has no unit yet, and the line says how to get one.
    assert expected.startswith("expected time: not known before some of its cells are stored")
    assert expected.endswith("--max-cells 4 and dry-run again")
    assert len(rows) == 8
    for cell, row in zip(cells, rows):
        assert row.split()[:2] == [str(cell.index), cell.cell_id]
        assert f"seed={cell.seed}" in row and "todo" in row
        assert "policy.name=" + cell.point["policy.name"] in row
    assert not out.exists()  # a dry run writes nothing

    run_sweep(parse_sweep_config(raw), out, backend="serial", max_cells=3, progress=False)
    header, rows = _dry_run(capsys, path, out)
    rows, expected = _split_expected(rows)
    assert re.search(r"\b8 cells, 3 stored\b.*, 5 to compute$", header), header
    assert [row.split()[3] for row in rows] == ["stored"] * 3 + ["todo"] * 5
    # Cell 3 is cell 2 at its other seed (its stored wall time stands for it); the four AMCBF
    # cells come from the formula scaled by the three stored runs.
    assert re.fullmatch(
        r"expected time: about [0-9hms]+ of CPU for the 5 cells to compute \(1 from their other seeds' stored runs; "
        r"4 from the cost formula scaled by 3 stored runs\), some [0-9hms]+ on this machine's \d+ CPUs",
        expected,
    ), expected


def test_the_expected_time_line_adds_the_cells_and_divides_by_the_cpus():
    estimate = CellEstimate([30.0, 60.0, 6000.0], True, [True, False, False], [1.0, 2.0, 200.0], 7)
    assert expected_time_line(estimate, cpus=2) == (
        "expected time: about 1h41m of CPU for the 3 cells to compute (1 from their other seeds' stored runs; "
        "2 from the cost formula scaled by 7 stored runs), some 50m45s on this machine's 2 CPUs"
    )
    assert expected_time_line(CellEstimate([], True, [], [], 1)) == "expected time: none (nothing to compute)"
    unscaled = CellEstimate([1.0, 2.0], False, [False, False], [1.0, 2.0])
    assert "--max-cells 2 and dry-run again" in expected_time_line(unscaled)


def test_grids_are_the_union_of_their_cartesian_products():
    # One-at-a-time sensitivity: migration cost varies at accuracy 1, accuracy varies at cost 20;
    # the shared point (cost 20, accuracy 1.0) appears in both grids and is kept once.
    raw = small_raw(grid=None)
    raw.pop("grid")
    raw["grids"] = [
        {"policy.migration_cost": [0, 20, 600], "workload.cpu_accuracy": [1.0]},
        {"policy.migration_cost": [20], "workload.cpu_accuracy": [0.0, 0.5, 1.0]},
    ]
    raw["seeds"] = [7]
    cells = expand(parse_sweep_config(raw))
    points = [(c.spec["platform"]["migration_cost"], c.spec["workload"]["cpu_accuracy"]) for c in cells]
    assert points == [(0.0, 1.0), (20.0, 1.0), (600.0, 1.0), (20.0, 0.0), (20.0, 0.5)]
    assert [c.index for c in cells] == list(range(5))


def test_grid_and_grids_together_is_an_error():
    raw = small_raw()
    raw["grids"] = [{"policy.name": ["easy"]}]
    with pytest.raises(SpecError, match=r"^grids: give either 'grid'"):
        parse_sweep_config(raw)
