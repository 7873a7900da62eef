"""Shared fixtures: where the Parallel Workloads Archive logs are, and tiny workloads."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

#: The shared folder of real traces, beside the project checkout.
TRACES = Path(__file__).resolve().parents[1].parent / "shared" / "traces"


def trace_path(name: str) -> Path:
    """Path of a shared trace; fail under CI when it is missing, skip elsewhere."""
    path = TRACES / name
    if not path.exists():
        message = f"trace {name} not found in {TRACES} (the shared traces folder beside the project)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return path


@pytest.fixture
def kth_path() -> Path:
    """The KTH-SP2 log (28,476 jobs, 100 nodes)."""
    return trace_path("KTH-SP2-1996-2.1-cln.swf.gz")
