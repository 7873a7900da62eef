"""Build of the optional compiled kernels (the package metadata is in ``pyproject.toml``).

The Cython extensions are optional: where no C compiler (or no Cython) is found, the install
still succeeds, says so in one line, and the simulator runs its Python reference code
(``tiersweep.core.compiled_path`` reports which path a run takes).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

#: The compiled kernels: (module, source), paths relative to the project root.
KERNELS = (
    ("tiersweep.core.platforms._nodes_fast", "core/platforms/_nodes_fast.pyx"),
    ("tiersweep.core.platforms._ranked", "core/platforms/_ranked.pyx"),
    ("tiersweep.core.platforms._tiered_run", "core/platforms/_tiered_run.pyx"),
    ("tiersweep.core.platforms._restart_floor", "core/platforms/_restart_floor.pyx"),
)
#: Where the kernels' ``.pxd`` files are found under their package's name (a build product).
CIMPORT_ROOT = Path("build") / "cython-include"
SKIPPED = "tiersweep: no C compiler, the compiled path is not built; the Python path will run"


def _build_errors() -> tuple[type[BaseException], ...]:
    """The errors that mean "this machine cannot compile", not "the sources are wrong"."""
    errors: list[type[BaseException]] = [OSError]
    for module, names in (
        ("setuptools.errors", ("CCompilerError", "CompileError", "ExecError", "PlatformError", "LinkError")),
        (
            "distutils.errors",
            ("CCompilerError", "CompileError", "DistutilsExecError", "DistutilsPlatformError", "LinkError"),
        ),
    ):
        try:
            imported = __import__(module, fromlist=list(names))
        except ImportError:
            continue
        errors.extend(getattr(imported, name) for name in names if hasattr(imported, name))
    return tuple(errors)


class OptionalBuildExt(build_ext):
    """``build_ext`` that skips the extensions, with one line, where they cannot be compiled.

    Once one fails, the rest are not tried: without a compiler none would build, and the whole
    run (which cimports its node index, built before it) is not built without its index. The
    install says so once.
    """

    _skipped = False

    def run(self) -> None:
        try:
            super().run()
        except _build_errors() as error:
            self._skip(error)

    def build_extension(self, ext) -> None:  # noqa: ANN001 (setuptools' own type)
        if self._skipped:
            return
        try:
            super().build_extension(ext)
        except _build_errors() as error:
            self._skip(error)

    def _skip(self, error: BaseException) -> None:
        if not self._skipped:
            print(f"{SKIPPED} ({type(error).__name__})", file=sys.stderr)
        self._skipped = True


class BuildPy(build_py):
    """``build_py`` that leaves this file out of the package (the project root is the
    ``tiersweep`` package, so it would otherwise ship as ``tiersweep.setup``)."""

    def find_package_modules(self, package, package_dir):  # noqa: ANN001, ANN201 (setuptools' own types)
        modules = super().find_package_modules(package, package_dir)
        return [m for m in modules if not (package == "tiersweep" and m[1] == "setup")]


def _cimport_root() -> str:
    """A folder holding ``tiersweep/core/platforms/*.pxd``, for the kernels' cimports of each other.

    The project root is the package ``tiersweep`` under another folder name, so Cython, which
    finds ``from ._ranked cimport ...`` by the package's name, would look for a ``tiersweep``
    folder that does not exist; the ``.pxd`` files are copied into one.
    """
    root = Path(__file__).resolve().parent
    include = root / CIMPORT_ROOT
    target = include / "tiersweep" / "core" / "platforms"
    shutil.rmtree(include / "tiersweep", ignore_errors=True)
    target.mkdir(parents=True)
    for package in (include / "tiersweep", target.parent, target):
        (package / "__init__.py").touch()
    for pxd in (root / "core" / "platforms").glob("*.pxd"):
        shutil.copy2(pxd, target / pxd.name)
    return str(include)


def _pxd_changed() -> bool:
    """Whether a ``.pxd`` is newer than a kernel's generated C. Cython's own check of what a
    source cimports names the source's package by its folders, which here are not called
    ``tiersweep``, so it misses the ``.pxd`` files, and a kernel compiled against an older
    declaration of another would crash at run time: then every kernel is translated again."""
    root = Path(__file__).resolve().parent
    newest = max((pxd.stat().st_mtime for pxd in (root / "core" / "platforms").glob("*.pxd")), default=0.0)
    for _, source in KERNELS:
        generated = (root / source).with_suffix(".c")
        if generated.exists() and generated.stat().st_mtime < newest:
            return True
    return False


def _extensions() -> list:
    try:
        from Cython.Build import cythonize
    except ImportError:
        print(
            "tiersweep: Cython is not installed, the compiled path is not built; the Python path will run",
            file=sys.stderr,
        )
        return []
    from setuptools import Extension

    # No contraction of a * b + c into one fused operation: the kernels must round exactly as
    # the Python reference does.
    flags = ["-ffp-contract=off"] if sys.platform != "win32" else []
    modules = [Extension(name, [source], extra_compile_args=flags) for name, source in KERNELS]
    return cythonize(
        modules,
        include_path=[_cimport_root()],
        force=_pxd_changed(),
        language_level=3,
        compiler_directives={"boundscheck": False, "wraparound": False},
    )


setup(ext_modules=_extensions(), cmdclass={"build_ext": OptionalBuildExt, "build_py": BuildPy})
