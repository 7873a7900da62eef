"""Packaging: one import package, ``tiersweep``, whose subpackages are the top-level folders.

Generic top-level packages (``core``, ``sweep``, ``analysis``) would clash with other
distributions, and Ray workers started in the project root would import the source tree rather
than the installed copy. These tests check the mapping in ``pyproject.toml``, that nothing at run time
imports a top-level ``core``/``sweep``/``analysis`` (even from the project root, where those
folders are importable by name), and that the wheel has a single top-level name.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SUBPACKAGES = ("core", "sweep", "analysis", "contract")
#: Where the compiled kernels and their Cython sources lie in the wheel.
PLATFORMS = "tiersweep/core/platforms/"


def test_every_package_folder_of_the_tree_is_mapped_under_tiersweep():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert config["package-dir"] == {"tiersweep": "."}
    folders = {
        "tiersweep." + ".".join(init.parent.relative_to(ROOT).parts)
        for top in SUBPACKAGES
        for init in (ROOT / top).rglob("__init__.py")
        if "__pycache__" not in init.parts
    }
    assert set(config["packages"]) == {"tiersweep", *folders}
    assert (ROOT / "__init__.py").exists() and (ROOT / "cli.py").exists()


def test_nothing_imports_the_source_folders_by_their_own_names():
    # Started in the project root, as Ray workers and `python -c` are, the folders core/, sweep/
    # and analysis/ are importable by name: nothing may import them so.
    code = (
        "import sys\n"
        "import tiersweep.cli, tiersweep.sweep.batch, tiersweep.sweep.backends, tiersweep.analysis\n"
        "from tiersweep.core import simulate\n"
        "simulate({'workload': {'model': 'jann97', 'jobs': 50}, 'platform': {'nodes': 64}})\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {SUBPACKAGES!r}))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_no_build_metadata_is_tracked():
    done = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip("not a git checkout")
    assert not [path for path in done.stdout.splitlines() if ".egg-info" in path]


def _git_status() -> str | None:
    """``git status`` of the project, untracked files listed one by one (None outside git)."""
    done = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"], cwd=ROOT, capture_output=True, text=True
    )
    return done.stdout if done.returncode == 0 else None


@pytest.mark.slow
def test_the_wheel_has_a_single_top_level_name(tmp_path):
    # Building (what `pip install .` does) must not leave the git tree dirty either: no build
    # files beside the sources.
    before = _git_status()
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(tmp_path), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert _git_status() == before
    (wheel,) = tmp_path.glob("tiersweep-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    tops = {name.split("/")[0] for name in names}
    assert tops == {"tiersweep", next(t for t in tops if t.endswith(".dist-info"))}
    for sub in SUBPACKAGES:
        assert f"tiersweep/{sub}/__init__.py" in names
    assert "tiersweep/cli.py" in names and "tiersweep/contract/policies.py" in names
    assert "tiersweep/setup.py" not in names  # the build script of the compiled kernels
    assert "tiersweep/analysis/notebooks/explore.ipynb" in names
    assert not [n for n in names if n.startswith("tiersweep/tests/") or n.startswith("tiersweep/configs/")]


@pytest.mark.slow
@pytest.mark.parametrize("compiler", ["cc", "none"])
def test_the_wheel_builds_the_compiled_kernels_where_a_compiler_exists_and_skips_them_where_none_does(
    tmp_path, compiler
):
    """``pip install .`` builds the compiled path with a C compiler, and without one (``CC`` a
    program that always fails) still succeeds, says so, and ships the Python reference only."""
    if compiler == "cc" and shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler on this machine")
    source = tmp_path / "src"
    # A copy without build products: a kernel built in place must not reach the wheel.
    shutil.copytree(
        ROOT, source, ignore=shutil.ignore_patterns(".git", "*.so", "build", "*.egg-info", "*.c", ".*venv*")
    )
    env = {**os.environ, "CC": "/bin/false", "LDSHARED": "/bin/false"} if compiler == "none" else dict(os.environ)
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-v", "-w", str(tmp_path / "wheel"), str(source)],
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    # No deprecated metadata: setuptools refuses the licence as a table from 2027-02-18, which
    # would break `pip install .` on a fresh machine (until then it warns of `project.license`).
    assert "project.license" not in done.stdout + done.stderr
    (wheel,) = (tmp_path / "wheel").glob("tiersweep-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        metadata = archive.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert "License-Expression: MIT" in metadata.splitlines()
    kernels = sorted(n.split("/")[-1].split(".")[0] for n in names if n.startswith(PLATFORMS) and n.endswith(".so"))
    # The Cython sources ship either way (the code digest reads them), the .pxd the kernels
    # cimport from each other included.
    for name in ("_nodes_fast.pyx", "_tiered_run.pyx", "_ranked.pyx", "_restart_floor.pyx", "_ranked.pxd", "_bits.pxd"):
        assert PLATFORMS + name in names
    if compiler == "cc":
        assert kernels == ["_nodes_fast", "_ranked", "_restart_floor", "_tiered_run"]
    else:
        assert kernels == []
        # One line for the install, not one per kernel.
        assert (done.stdout + done.stderr).count("the compiled path is not built; the Python path will run") == 1


def test_dependencies_point_one_way():
    # Imports point one way (analysis -> sweep -> core; policies -> decisions): importing every
    # module of sweep must not import analysis, and the decisions must import neither engine
    # nor policies.
    code = (
        "import sys, pkgutil, importlib, tiersweep.sweep\n"
        "for m in pkgutil.iter_modules(tiersweep.sweep.__path__):\n"
        "    importlib.import_module('tiersweep.sweep.' + m.name)\n"
        "bad = sorted(m for m in sys.modules if m.startswith('tiersweep.analysis'))\n"
        "import tiersweep.core.decisions\n"
        "print(bad)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
    # Nor does any module of sweep import analysis anywhere, even lazily inside a function (the
    # command line, which joins them, is tiersweep.cli).
    for module in (ROOT / "sweep").glob("*.py"):
        names = {
            f"{'.' * node.level}{node.module or ''}"
            for node in ast.walk(ast.parse(module.read_text()))
            if isinstance(node, ast.ImportFrom)
        }
        assert not {n for n in names if n.lstrip(".").startswith("analysis")}, module.name

    # Module-level imports (those under ``if TYPE_CHECKING`` do not run): the vocabulary imports
    # neither side, and no policy imports the engine.
    def runtime_imports(path: Path) -> set[str]:
        tree = ast.parse(path.read_text())
        return {f"{'.' * node.level}{node.module or ''}" for node in tree.body if isinstance(node, ast.ImportFrom)}

    assert not {m for m in runtime_imports(ROOT / "core" / "decisions.py") if "engine" in m or "policies" in m}
    for module in (ROOT / "core" / "policies").glob("*.py"):
        assert "..engine" not in runtime_imports(module), module.name
