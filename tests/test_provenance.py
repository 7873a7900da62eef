"""Code provenance: every stored row says which simulator source produced it.

After ``pip install .`` and an edit of the source tree, Ray workers can run the edited tree
while the driver and the other backends run the installed copy: rows of two simulators must
not be stored under one cell id. These tests make that situation with a real edited copy of
the package and real Ray workers.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy
import pytest

from sweep_helpers import small_config, small_raw, write_swf
from tiersweep.analysis import MixedCodeWarning, NoResultsError, find_results, load
from tiersweep.core.spec import validate_spec
from tiersweep.core.version import code_digest, code_digest_of, code_folder, source_digest
from tiersweep.sweep.cells import cell_id
from tiersweep.sweep.driver import run_sweep
from tiersweep.sweep.store import read_table

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = code_folder().parent  # the tiersweep package this test process imports


def _copy_package(parent: Path) -> Path:
    """A copy of the imported tiersweep package at ``parent/tiersweep`` (what a source tree
    named ``tiersweep`` is to an import), without compiled caches."""
    target = parent / "tiersweep"
    shutil.copytree(
        PACKAGE,
        target,
        ignore=shutil.ignore_patterns("__pycache__", "tests", "results", ".git*", "*.egg-info", "build"),
    )
    return target


def _edit(package: Path) -> None:
    """An edit of the simulator's source that changes no result (a comment)."""
    engine = package / "core" / "engine.py"
    engine.write_text(engine.read_text() + "\n# an edit after installing\n")


# -- the digest ------------------------------------------------------------------------------------


def test_an_edited_source_changes_the_digest_and_a_moved_one_does_not(tmp_path):
    copy = _copy_package(tmp_path / "a")
    assert source_digest(copy / "core") == source_digest(code_folder())  # same files, another place
    assert code_digest_of(copy / "core", numpy.__version__) == code_digest()
    (copy / "core" / "__pycache__").mkdir(exist_ok=True)
    (copy / "core" / "__pycache__" / "engine.cpython-311.pyc").write_bytes(b"stale")
    assert code_digest_of(copy / "core", numpy.__version__) == code_digest()  # compiled caches are not source
    _edit(copy)
    assert source_digest(copy / "core") != source_digest(code_folder())
    assert code_digest_of(copy / "core", numpy.__version__) != code_digest()


def test_the_code_digest_is_part_of_the_cell_id():
    spec = validate_spec({"workload": {"model": "jann97", "jobs": 100}, "policy": {"name": "easy"}})
    assert cell_id(spec) == cell_id(spec, code_digest())
    assert cell_id(spec, "0" * 16) != cell_id(spec)


def test_a_trace_enters_the_cell_id_by_content_not_by_path(tmp_path):
    (tmp_path / "one").mkdir()
    first = write_swf(tmp_path / "one" / "log.swf")
    second = tmp_path / "elsewhere" / "renamed.swf"
    second.parent.mkdir()
    shutil.copy(first, second)

    def spec(path):
        return validate_spec({"workload": {"trace": str(path)}, "platform": {"nodes": 64}})

    assert cell_id(spec(first)) == cell_id(spec(second))
    second.write_text(second.read_text().replace("\n1 0 -1 60 1", "\n1 0 -1 61 1"))
    assert cell_id(spec(first)) != cell_id(spec(second))


def test_every_stored_row_carries_the_code_digest(tmp_path):
    run_sweep(small_config(seeds=1), tmp_path, backend="serial", progress=False)
    runs = read_table(tmp_path / "small" / "runs").to_pandas()
    assert len(runs) == 4 and set(runs["code_digest"]) == {code_digest()}


# -- mismatched workers ----------------------------------------------------------------------------

_DRIVER = """
import json, sys
import ray
ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False,
         runtime_env={"env_vars": {"PYTHONPATH": sys.argv[1]}})
from tiersweep.core.errors import TiersweepError
from tiersweep.sweep.config import parse_sweep_config
from tiersweep.sweep.driver import run_sweep
try:
    run_sweep(parse_sweep_config(json.loads(sys.argv[2])), sys.argv[3], backend="ray", progress=False)
except TiersweepError as error:
    print("REFUSED", error)
else:
    print("STORED")
"""


@pytest.mark.slow
@pytest.mark.ray
def test_the_driver_refuses_a_worker_running_other_code(tmp_path):
    # Workers whose import path starts with an edited copy of the package: they compute, but
    # their rows must not be stored under the driver's cell ids.
    edited = tmp_path / "edited"
    _edit(_copy_package(edited))
    raw = json.dumps(small_raw(seeds=1))
    done = subprocess.run(
        [sys.executable, "-c", _DRIVER, str(edited), raw, str(tmp_path / "out")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("REFUSED"), done.stdout + done.stderr[-2000:]
    assert "runs other simulator code than this driver" in done.stdout
    assert str(edited / "tiersweep" / "core") in done.stdout  # says where the worker's code came from
    assert not read_table(tmp_path / "out" / "small" / "runs").num_rows  # nothing stored


def _console_script() -> str:
    script = Path(sys.executable).with_name("tiersweep")
    return str(script) if script.exists() else shutil.which("tiersweep") or pytest.skip("no tiersweep console script")


@pytest.mark.slow
@pytest.mark.ray
def test_ray_workers_run_the_drivers_code_beside_a_source_tree_named_tiersweep(tmp_path):
    # The command run from the folder holding an edited source tree named ``tiersweep``: Ray
    # puts the driver's working directory first on its workers' import path, where they would
    # import that tree. They import what the driver imports, and Ray's token-authentication
    # notice stays off the progress bar (said once, at the end).
    _edit(_copy_package(tmp_path))
    config = tmp_path / "small.json"
    config.write_text(json.dumps(small_raw(seeds=1)))
    done = subprocess.run(
        [_console_script(), "sweep", str(config), "--out", "out", "--backend", "ray"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, "PYTHONPATH": ""},
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    runs = read_table(tmp_path / "out" / "small" / "runs").to_pandas()
    assert len(runs) == 4 and set(runs["code_digest"]) == {code_digest()}
    assert "Token authentication" not in done.stderr
    if "Token authentication" in done.stdout:  # (Ray versions before 2.59 have no such notice)
        assert done.stdout.count("Token authentication") == 1


# -- a folder of two codes -------------------------------------------------------------------------


def test_another_numpy_release_is_other_code(tmp_path):
    # numpy promises the same random streams only on the same build of numpy: a sweep computed
    # under another release may hold other numbers, so its cells are not this one's and its
    # rows say so. (The other release is this numpy reporting another version: no second
    # numpy can be installed here.)
    script = textwrap.dedent(
        """
        import json, sys
        import numpy
        from tiersweep.sweep.config import parse_sweep_config
        from tiersweep.sweep.driver import run_sweep
        numpy.__version__ = "1.26.4"  # (after pandas's import, which checks it)
        run_sweep(parse_sweep_config(json.loads(sys.argv[1])), sys.argv[2], backend="serial", progress=False)
        """
    )
    subprocess.run(
        [sys.executable, "-c", script, json.dumps(small_raw(seeds=1)), str(tmp_path / "out")],
        check=True,
        cwd=tmp_path,
        timeout=120,
    )
    other = read_table(tmp_path / "out" / "small" / "runs").to_pandas()
    assert len(other) == 4 and code_digest() not in set(other["code_digest"])
    outcome = run_sweep(small_config(seeds=1), tmp_path / "out", backend="serial", progress=False)
    assert outcome.computed == 4  # not taken for this numpy's results
    assert code_digest_of(code_folder(), "1.26.4") in set(other["code_digest"])


def test_a_folder_holding_rows_of_two_codes_warns_on_load(tmp_path):
    # The same sweep by an edited copy of the package (a real second code), then by this one.
    edited = tmp_path / "edited"
    _edit(_copy_package(edited))
    script = textwrap.dedent(
        """
        import json, sys
        from tiersweep.sweep.config import parse_sweep_config
        from tiersweep.sweep.driver import run_sweep
        run_sweep(parse_sweep_config(json.loads(sys.argv[1])), sys.argv[2], backend="serial", progress=False)
        """
    )
    raw = small_raw(seeds=1)
    subprocess.run(
        [sys.executable, "-c", script, json.dumps(raw), str(tmp_path / "out")],
        check=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(edited)},
        timeout=120,
    )
    other = read_table(tmp_path / "out" / "small" / "runs").to_pandas()
    assert len(other) == 4 and code_digest() not in set(other["code_digest"])
    outcome = run_sweep(small_config(seeds=1), tmp_path / "out", backend="serial", progress=False)
    assert outcome.computed == 4  # the other code's rows are not this code's cells
    with pytest.warns(MixedCodeWarning, match="2 versions of the simulator's code"):
        both = load(tmp_path / "out" / "small")
    assert len(both) == 8
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        latest = load(tmp_path / "out" / "small", code_digest="latest")
        assert set(latest["code_digest"]) == {code_digest()} and len(latest) == 4
        older = load(tmp_path / "out" / "small", code_digest=other["code_digest"].iloc[0])
        assert set(older["cell_id"]) == set(other["cell_id"])


# -- finding and loading results -------------------------------------------------------------------


def test_load_of_a_folder_without_runs_is_a_clear_error(tmp_path):
    with pytest.raises(NoResultsError, match="does not exist"):
        load(tmp_path / "missing")
    (tmp_path / "empty" / "runs").mkdir(parents=True)
    with pytest.raises(NoResultsError, match="has no stored runs"):
        load(tmp_path / "empty")


def test_results_are_found_from_a_notebooks_folder_below_the_project(tmp_path, monkeypatch):
    monkeypatch.delenv("TIERSWEEP_RESULTS", raising=False)
    run_sweep(small_config("quickstart", seeds=1), tmp_path / "results", backend="serial", progress=False)
    notebooks = tmp_path / "analysis" / "notebooks"
    notebooks.mkdir(parents=True)
    assert find_results("quickstart", notebooks) == tmp_path / "results" / "quickstart"
    monkeypatch.chdir(notebooks)
    assert len(load(find_results("quickstart"))) == 4
    with pytest.raises(NoResultsError) as error:
        find_results("quickstart", tmp_path.parent / "nowhere")
    assert str(tmp_path.parent / "nowhere" / "results" / "quickstart") in str(error.value)
    monkeypatch.setenv("TIERSWEEP_RESULTS", str(tmp_path / "results" / "quickstart"))
    assert find_results("quickstart", tmp_path.parent) == tmp_path / "results" / "quickstart"


# -- the contract suite lies outside the digest ---------------------------------------------------

_CELL_ID = """
import json, sys
from tiersweep.core.spec import validate_spec
from tiersweep.core.version import code_folder
from tiersweep.sweep.cells import cell_id
print(json.dumps([str(code_folder()), cell_id(validate_spec(json.loads(sys.argv[1])))]))
"""


def _cell_id_in(parent: Path, spec: dict) -> tuple[str, str]:
    """The code folder and a cell id as a fresh interpreter importing the copy in ``parent`` sees them."""
    done = subprocess.run(
        [sys.executable, "-c", _CELL_ID, json.dumps(spec)],
        cwd=parent,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(parent)},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    folder, identity = json.loads(done.stdout.strip().splitlines()[-1])
    return folder, identity


def test_editing_the_contract_suite_leaves_cell_ids_unchanged(tmp_path):
    # The contract suite is outside the code digest: an edit of a test helper that changed every
    # cell id would make a resume recompute every stored cell.
    spec = {"workload": {"model": "jann97", "jobs": 100}, "policy": {"name": "easy"}}
    copy = _copy_package(tmp_path / "a")
    contract = copy / "contract" / "policies.py"
    contract.write_text(contract.read_text() + "\n# an edit of the contract suite\n")
    folder, identity = _cell_id_in(tmp_path / "a", spec)
    assert folder == str(copy / "core")  # the edited copy is what ran
    assert identity == cell_id(validate_spec(spec))
    _edit(copy)  # while an edit of the simulator changes it
    assert _cell_id_in(tmp_path / "a", spec)[1] != identity
