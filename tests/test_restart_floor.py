"""The floor of a background restart (``core/platforms/_restart_floor.pyx``): does its passes.

It is a bench figure, not part of any run; these tests check that each restart really places
the job where the passes say (the first eligible nodes of the standing order), that the rate
and overflow passes compute what a shared node gives, and that it refuses what it cannot do.
"""

from __future__ import annotations

import os

import numpy as np
import pytest


def _floor():
    """The floor's module; a skip where the extension is not built (a failure under CI)."""
    try:
        from tiersweep.core.platforms import _restart_floor
    except ImportError as error:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI has a C compiler, yet the floor is not built: {error}")
        pytest.skip(f"the compiled extension is not built here ({error})")
    return _restart_floor


def _machine(nodes: int, busy: float, seed: int) -> np.ndarray:
    """The foreground estimates the floor draws first from its seed (0: no foreground)."""
    rng = np.random.default_rng(seed)
    return np.where(rng.random(nodes) < busy, rng.random(nodes), 0.0)


@pytest.mark.parametrize(("nodes", "size", "busy"), [(5_000, 1_200, 0.8), (2_000, 1, 0.5), (1_000, 600, 0.0)])
def test_each_restart_holds_the_first_eligible_nodes_of_the_order(nodes, size, busy):
    floor = _floor()
    result = floor.restart_floor(nodes, size, 3, busy=busy, seed=7)
    estimates = _machine(nodes, busy, 7)
    eligible = [node for node in np.lexsort((np.arange(nodes), estimates)) if estimates[node] < 0.6]
    assert result["held"].tolist() == sorted(eligible[:size])
    assert list(result["phases"]) == list(floor.PASSES)
    assert all(ns >= 0 for ns in result["phases"].values())
    assert result["ns_per_process"] == pytest.approx(sum(result["phases"].values()))
    assert 0 < result["slowest"] <= 1.0 and result["overflow"] >= 0.0


def test_a_machine_without_foreground_runs_the_background_at_full_rate():
    floor = _floor()
    result = floor.restart_floor(1_000, 600, 2, busy=0.0)
    assert result["slowest"] == 1.0 and result["overflow"] == 0.0


def test_the_rate_pass_throttles_a_background_that_needs_more_than_the_foreground_leaves():
    floor = _floor()
    # The job fills the eligible nodes of a busy machine: some of its processes share a node
    # with a foreground that leaves them less than they need.
    estimates = _machine(4_000, 0.9, 1)
    wide = int((estimates < 0.6).sum())
    result = floor.restart_floor(4_000, wide, 2, busy=0.9, seed=1)
    assert 0 < result["slowest"] < 1.0


def test_it_refuses_a_job_wider_than_the_eligible_nodes_and_counts_below_one():
    floor = _floor()
    estimates = _machine(1_000, 0.8, 0)
    eligible = int((estimates < 0.6).sum())
    with pytest.raises(ValueError, match=f"{eligible} eligible nodes"):
        floor.restart_floor(1_000, eligible + 1, 1)
    for nodes, size, restarts in ((0, 1, 1), (10, 0, 1), (10, 1, 0)):
        with pytest.raises(ValueError, match="at least 1"):
            floor.restart_floor(nodes, size, restarts)
