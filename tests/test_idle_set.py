"""IdleSet: vectorised take, extend and remove keep exactly the idle nodes, against a set."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tiersweep.core.platforms.nodes import IdleSet

NODES = 30


@settings(max_examples=200, deadline=None)
@given(
    ops=st.lists(
        st.tuples(st.sampled_from(["take", "free", "remove"]), st.integers(0, NODES), st.integers(0, 2**16)),
        max_size=40,
    )
)
def test_idle_set_tracks_exactly_the_idle_nodes(ops):
    idle, truth = IdleSet(NODES), set(range(NODES))
    assert idle.take(3).tolist() == [0, 1, 2]  # an empty machine hands out 0, 1, 2, ... first
    truth -= {0, 1, 2}
    for op, count, salt in ops:
        rng = np.random.default_rng(salt)
        if op == "take":
            count = min(count, len(truth))
            taken = idle.take(count).tolist()
            assert len(set(taken)) == count and set(taken) <= truth
            truth -= set(taken)
        elif op == "free":
            busy = sorted(set(range(NODES)) - truth)
            chosen = rng.permutation(busy)[: min(count, len(busy))]
            idle.extend(chosen.astype(np.int64))
            truth |= set(chosen.tolist())
        else:
            members = sorted(truth)
            chosen = rng.permutation(members)[: min(count, len(members))]
            idle.remove(chosen.astype(np.int64))
            truth -= set(chosen.tolist())
        assert len(idle) == len(truth)
        assert sorted(idle) == sorted(truth)
        assert all((node in idle) == (node in truth) for node in range(NODES))
