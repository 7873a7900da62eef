"""Which code path a run takes: the compiled kernels, or the Python reference.

The tiered platform's hot loops have compiled twins (Cython, built by ``pip install .`` where a
C compiler exists; see ``setup.py``). Both give the very same results, so the choice is never
part of a spec or a cell id; it is reported instead, in one line, by ``tiersweep run`` and
``tiersweep bench``, so that a slow run is never silently slow.

Setting the environment variable ``TIERSWEEP_PURE_PYTHON=1`` forces the Python reference (to
compare the two, or to rule the compiled code out). It is read when a platform is made.
"""

from __future__ import annotations

import importlib
import os
from functools import cache
from types import ModuleType

__all__ = ["PURE_PYTHON_ENV", "compiled_available", "nodes_kernels", "path_line", "why_python"]

#: Environment variable that, set to anything but ``""`` or ``"0"``, forces the Python path.
PURE_PYTHON_ENV = "TIERSWEEP_PURE_PYTHON"
_NODES = "tiersweep.core.platforms._nodes_fast"


@cache
def _load(module: str) -> tuple[ModuleType | None, str]:
    try:
        return importlib.import_module(module), ""
    except ImportError as error:
        return None, str(error) or type(error).__name__


def _forced() -> bool:
    return os.environ.get(PURE_PYTHON_ENV, "") not in ("", "0")


def compiled_available() -> bool:
    """Whether the compiled extension was built and imports (whatever the override says)."""
    return _load(_NODES)[0] is not None


def why_python() -> str | None:
    """Why this process runs the Python path, or None when it runs the compiled one."""
    if _forced():
        return f"{PURE_PYTHON_ENV} is set"
    module, error = _load(_NODES)
    return None if module is not None else f"compiled extension not built: {error}"


def nodes_kernels() -> ModuleType | None:
    """The compiled kernels of the ``nodes`` platform, or None where the Python path runs."""
    return None if why_python() else _load(_NODES)[0]


def path_line() -> str:
    """One line naming the path: ``path: compiled (Cython)`` or ``path: python (<why>)``."""
    reason = why_python()
    return "path: compiled (Cython)" if reason is None else f"path: python ({reason})"
