"""RankedSet: the n best nodes by (key, node), under single and batched updates, against a
plain sort of the same members."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tiersweep.core.ranked import RankedSet

KEYS = st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.96, 1.0])
CHANGES = st.dictionaries(st.integers(0, 40), st.one_of(st.none(), KEYS), max_size=40)


@settings(max_examples=200, deadline=None)
@given(batches=st.lists(CHANGES, max_size=12), single=st.booleans(), count=st.integers(0, 45), skip=st.sets(st.integers(0, 40)))
def test_members_come_out_by_key_then_node(batches, single, count, skip):
    ranked = RankedSet(range(20), 0.0)
    truth = dict.fromkeys(range(20), 0.0)
    for changes in batches:
        if single:
            for node, key in changes.items():  # one change at a time
                ranked.update({node: key})
        else:
            ranked.update(changes)
        for node, key in changes.items():
            if key is None:
                truth.pop(node, None)
            else:
                truth[node] = key
        assert len(ranked) == len(truth)
        assert all(node in ranked for node in truth)
    expected = [node for key, node in sorted((k, n) for n, k in truth.items()) if node not in skip][:count]
    assert ranked.smallest(count, skip) == expected
