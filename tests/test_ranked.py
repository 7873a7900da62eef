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


@pytest.mark.parametrize("sort_below", [0, 10_000], ids=["selection", "whole sort"])
@settings(max_examples=150, deadline=None)
@given(batches=st.lists(CHANGES, max_size=12), single=st.booleans(), count=st.integers(0, 45), skip=st.sets(st.integers(0, 40)))
def test_members_come_out_by_key_then_node(sort_below, batches, single, count, skip):
    original = ranked_module._SORT_BELOW
    ranked_module._SORT_BELOW = sort_below
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
    finally:
        ranked_module._SORT_BELOW = original
