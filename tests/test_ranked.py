"""RankedSet: the n best nodes by (key, node), under single and batched updates, against a
plain sort of the same members, on small id spaces (sorted whole) and large ones (selected)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tiersweep.core import ranked as ranked_module
from tiersweep.core.ranked import RankedSet

KEYS = st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.96, 1.0])
CHANGES = st.dictionaries(st.integers(0, 40), st.one_of(st.none(), KEYS), max_size=40)
SPACE = 41


def _apply(ranked: RankedSet, changes: dict) -> None:
    nodes = np.array(list(changes), dtype=np.int64)
    keys = np.array([np.inf if key is None else key for key in changes.values()])
    ranked.update(nodes, keys)


@pytest.mark.parametrize(
    "sort_below, shift", [(0, 2), (0, 4), (10_000, 8)], ids=["blocks of 4", "blocks of 16", "whole sort"]
)
@settings(max_examples=150, deadline=None)
@given(
    batches=st.lists(CHANGES, max_size=12),
    single=st.booleans(),
    count=st.integers(0, 45),
    skip=st.sets(st.integers(0, 40)),
)
def test_members_come_out_by_key_then_node(sort_below, shift, batches, single, count, skip):
    original = ranked_module._SORT_BELOW, ranked_module._BLOCK_SHIFT
    ranked_module._SORT_BELOW, ranked_module._BLOCK_SHIFT = sort_below, shift
    try:
        ranked = RankedSet(SPACE, range(20), 0.0)
        truth = dict.fromkeys(range(20), 0.0)
        for changes in batches:
            if single:
                for node, key in changes.items():  # one change at a time
                    _apply(ranked, {node: key})
            else:
                _apply(ranked, changes)
            for node, key in changes.items():
                if key is None:
                    truth.pop(node, None)
                else:
                    truth[node] = key
            assert len(ranked) == len(truth)
            assert all(node in ranked for node in truth)
            assert not any(node in ranked for node in set(range(SPACE)) - set(truth))
        expected = [node for key, node in sorted((k, n) for n, k in truth.items()) if node not in skip][:count]
        chosen = ranked.smallest(count, np.array(sorted(skip), dtype=np.int64) if skip else None)
        assert chosen.tolist() == expected
        assert len(ranked) == len(truth)  # the skipped ids are members again
    finally:
        ranked_module._SORT_BELOW, ranked_module._BLOCK_SHIFT = original


class CountingNumpy:
    """numpy as seen by the module under test, recording the largest array any call is given."""

    def __init__(self) -> None:
        self.largest = 0

    def __getattr__(self, name):
        value = getattr(np, name)
        if not callable(value) or isinstance(value, type):
            return value

        def recorded(*args, **kwargs):
            sizes = [arg.size for arg in args if isinstance(arg, np.ndarray)]
            self.largest = max([self.largest, *sizes])
            return value(*args, **kwargs)

        return recorded


@pytest.mark.parametrize("skip", [None, [2, 5, 7, 999_999]])
@pytest.mark.parametrize("spread", [False, True], ids=["idle ties", "distinct loads"])
def test_picking_a_few_nodes_does_not_read_the_whole_machine(monkeypatch, skip, spread):
    # Partitioning every node's key at each pick would take most of AMCBF's time on large
    # machines. Picking 8 of 2,000,000 nodes reads one key per block and a few blocks.
    nodes = 2_000_000
    ranked = RankedSet(nodes, range(nodes), 0.0)
    busy = np.arange(0, nodes, 3, dtype=np.int64)
    ranked.update(busy, np.full(len(busy), np.inf))  # a third of the machine busy
    loaded = busy[: len(busy) // 2] + 1
    ranked.update(loaded, np.linspace(0.9, 0.1, len(loaded)))  # loads on the first half
    if spread:  # every member loaded, no two alike
        members = np.flatnonzero(np.arange(nodes) % 3)
        ranked.update(members, np.random.default_rng(1).permutation(len(members)) / len(members) + 0.01)
    keys = ranked._keys.copy()
    counting = CountingNumpy()
    monkeypatch.setattr(ranked_module, "np", counting)
    chosen = ranked.smallest(8, None if skip is None else np.array(skip, dtype=np.int64))
    monkeypatch.undo()
    assert counting.largest <= 40_000  # (15,625 blocks)
    if skip is not None:
        keys[skip] = np.inf
    assert chosen.tolist() == np.lexsort((np.arange(nodes), keys))[:8].tolist()


@pytest.mark.parametrize("policy", ["amcbf", "cmcbf"])
@pytest.mark.parametrize("nodes", [300, 2100], ids=["lists", "typed arrays"])
def test_blocks_give_the_schedule_of_a_whole_sort(monkeypatch, policy, nodes):
    # The consolidation policies on a busy two-tier machine (small: per-VM lists; large:
    # typed arrays and vectorised wide jobs): the same records whether the nodes are picked
    # from blocks or by sorting every key (loads at which background tiers and migrations are used).
    from tiersweep.core.simulate import simulate

    load = 2.5 if nodes > 1_000 else 0.9
    spec = {
        "seed": 5,
        "workload": {"model": "lublin03", "jobs": 400, "max_size": nodes * 2 // 3, "load": load},
        "platform": {"nodes": nodes, "tiers": 2},
        "policy": {"name": policy},
    }
    runs = []
    for sort_below, shift in [(10_000, 8), (0, 3), (0, 5)]:
        monkeypatch.setattr(ranked_module, "_SORT_BELOW", sort_below)
        monkeypatch.setattr(ranked_module, "_BLOCK_SHIFT", shift)
        runs.append(simulate(spec).jobs)
    for other in runs[1:]:
        for column in ("start_time", "finish_time", "migrations"):
            assert np.array_equal(np.asarray(runs[0][column]), np.asarray(other[column]), equal_nan=True), column
