"""Shared fixtures: where the Parallel Workloads Archive logs are, and tiny workloads."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tiersweep.contract import workloads as contract_workloads

#: The project root: the ``tiersweep`` package itself (it holds ``__init__.py``).
ROOT = Path(__file__).resolve().parents[1]
#: The shared folder of real traces, beside the project checkout.
TRACES = ROOT.parent / "shared" / "traces"


# The conformance suite (tiersweep.contract) finds the traces here too, wherever the
# tests are started from.
os.environ.setdefault("TIERSWEEP_TRACES", str(TRACES))


@pytest.fixture(scope="session", autouse=True)
def installed_copy_for_spawned_workers() -> None:
    """Take the project root's parent off ``sys.path`` again when ``tiersweep`` was imported
    from elsewhere (an installed copy), before any other fixture runs.

    The root is a package, and when pytest sets it up (before the first test's fixtures) it
    puts the root's parent first on ``sys.path``. The process backend's spawned workers
    inherit that ``sys.path`` and would import the checkout instead of the copy under test
    (compiled only if built in place): a silently slower other build.
    """
    import tiersweep

    if Path(tiersweep.__file__).resolve().parent != ROOT:
        parent = str(ROOT.parent)
        sys.path[:] = [entry for entry in sys.path if entry != parent]


def trace_path(name: str) -> Path:
    """Path of a shared trace; fail under CI when it is missing, skip elsewhere."""
    return contract_workloads.trace_path(name, TRACES)


@pytest.fixture
def kth_path() -> Path:
    """The KTH-SP2 log (28,476 jobs, 100 nodes)."""
    return trace_path("KTH-SP2-1996-2.1-cln.swf.gz")
