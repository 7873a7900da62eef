"""Shared fixtures: where the Parallel Workloads Archive logs are, and tiny workloads."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tiersweep.contract import workloads as contract_workloads

#: The shared folder of real traces, beside the project checkout.
TRACES = Path(__file__).resolve().parents[1].parent / "shared" / "traces"


# The conformance suite (tiersweep.contract) finds the traces here too, wherever the
# tests are started from.
os.environ.setdefault("TIERSWEEP_TRACES", str(TRACES))


def trace_path(name: str) -> Path:
    """Path of a shared trace; fail under CI when it is missing, skip elsewhere."""
    return contract_workloads.trace_path(name, TRACES)


@pytest.fixture
def kth_path() -> Path:
    """The KTH-SP2 log (28,476 jobs, 100 nodes)."""
    return trace_path("KTH-SP2-1996-2.1-cln.swf.gz")
