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


def _compiled_ranked():
    return pytest.importorskip("tiersweep.core.platforms._ranked")._Ranked


def _reference(keys: dict, skip, count: int) -> list:
    return [node for key, node in sorted((k, n) for n, k in keys.items() if n not in skip)][: max(count, 0)]


@settings(max_examples=300, deadline=None)
@given(
    space=st.integers(1, 60),
    start=st.sampled_from([0.0, np.inf]),
    batches=st.lists(
        st.dictionaries(st.integers(0, 59), st.one_of(st.none(), KEYS, st.just(-0.0)), max_size=40), max_size=6
    ),
    picks=st.lists(st.tuples(st.integers(-1, 70), st.sets(st.integers(0, 59))), min_size=1, max_size=3),
)
def test_compiled_ranked_picks_as_a_sort_of_few(space, start, batches, picks):
    # The compiled index (blocks of 16 ids under a tournament tree): updates between picks, so
    # that the picks read freshly cleaned blocks; ties, -0.0 and 0.0 alike, skips, any count.
    ranked = _compiled_ranked()(space, start)
    truth = dict.fromkeys(range(space), start)
    for changes in batches:
        changes = {node: key for node, key in changes.items() if node < space}
        ranked.put(list(changes), [np.inf if key is None else key for key in changes.values()])
        truth.update((node, np.inf if key is None else key) for node, key in changes.items())
        members = {node: key for node, key in truth.items() if key != np.inf}
        for count, skip in picks:
            skip = {node for node in skip if node < space}
            assert ranked.best(count, skip) == _reference(members, skip, count)


@settings(max_examples=120, deadline=None)
@given(
    space=st.integers(200, 4000),
    seed=st.integers(0, 2**32 - 1),
    shares=st.tuples(*[st.sampled_from([0.0, 0.05, 0.3, 0.9])] * 4),
    counts=st.lists(st.floats(0.0, 1.2), min_size=1, max_size=3),
    negative=st.booleans(),
)
def test_compiled_ranked_picks_as_a_sort_of_many(space, seed, shares, counts, negative):
    # Many members (the sorts for hundreds of ids and more): continuous keys in [0, 1) with a
    # share of zeros (signed alike), of a few common values, of near neighbours, of non-members
    # and of skips; counts from 0 to above the member count; negative keys (another sort).
    zeros, common, absent, skipped = shares
    rng = np.random.default_rng(seed)
    keys = rng.random(space) ** 3
    draw = rng.random(space)
    keys[draw < common] = rng.choice([0.25, 0.5, 0.75, 1e-300, 5e-324], space)[draw < common]
    zero = rng.random(space) < zeros
    keys[zero] = rng.choice([0.0, -0.0], space)[zero]
    near = rng.random(space) < 0.1
    keys[near] = np.nextafter(0.125, 1.0) + rng.integers(0, 4, space)[near] * 2.0**-55
    if negative:
        keys[rng.random(space) < 0.1] = -0.5
    keys[rng.random(space) < absent] = np.inf
    skip = set(np.flatnonzero(rng.random(space) < skipped).tolist())
    ranked = _compiled_ranked()(space, np.inf)
    order = rng.permutation(space)
    half = space // 2
    ranked.put(order[:half].tolist(), keys[order[:half]].tolist())
    ranked.best(space // 3, skip)  # a pick between the updates
    ranked.put(order[half:].tolist(), keys[order[half:]].tolist())
    members = {node: float(key) for node, key in enumerate(keys) if key != np.inf}
    for share in counts:
        count = int(share * len(members))
        assert ranked.best(count, skip) == _reference(members, skip, count)


@settings(max_examples=150, deadline=None)
@given(
    space=st.integers(1, 3000),
    seed=st.integers(0, 2**32 - 1),
    rounds=st.lists(
        st.tuples(
            st.sampled_from([0.0, 0.02, 0.3, 0.9]),  # the share of members that leave and come back
            st.sampled_from([0, 1, 3, 30, 400]),  # how many ids get another key (few: merged while read)
            st.sampled_from([0.0, 0.3, 1.0]),  # the share of every id re-keyed (many: sorted afresh)
            st.floats(0.0, 1.2),  # the count picked, as a share of the members
        ),
        min_size=1,
        max_size=8,
    ),
    odd=st.sampled_from([None, -0.5, np.nan]),
)
def test_the_standing_order_picks_as_a_sort_and_as_the_index_without_it(space, seed, rounds, odd):
    # The standing order keeps the members sorted between picks: ids that leave and come back
    # with their old keys (a background job's restart) keep their place; ids given other keys
    # are merged in while the order is read (few), merged into it (more), or all re-sorted
    # (many). Each pick must be a plain sort's, and the index without a standing order must
    # give the same, also with negative keys, and with a nan (the standing order then stops).
    compiled = _compiled_ranked()
    rng = np.random.default_rng(seed)
    keys = np.round(rng.random(space), 3)  # ties
    standing, plain = compiled(space, 0.0, True), compiled(space, 0.0, False)
    truth = dict.fromkeys(range(space), 0.0)
    for index, (churn, moved, rekeyed, share) in enumerate(rounds):
        before = dict(truth)
        changes = {}
        out = rng.random(space) < churn
        changes.update((node, np.inf) for node in np.flatnonzero(out).tolist())
        for node in rng.choice(space, min(moved, space), replace=False).tolist():
            changes[node] = float(rng.choice([0.125, 0.25, 0.5]))  # often one it had before
        if rekeyed:
            for node in np.flatnonzero(rng.random(space) < rekeyed).tolist():
                changes[node] = float(np.round(rng.random(), 3))
        if odd is not None and index == len(rounds) // 2:
            changes[int(rng.integers(space))] = odd
        for table in (standing, plain):
            table.put(list(changes), list(changes.values()))
        truth.update(changes)
        skip = set(np.flatnonzero(rng.random(space) < 0.05).tolist())
        members = {node: key for node, key in truth.items() if key != np.inf}
        count = int(share * len(members))
        chosen = standing.best(count, skip)
        assert chosen == plain.best(count, skip)
        if not any(key != key for key in members.values()):
            assert chosen == _reference(members, skip, count)
        # those that left come back with the keys they had (or new ones, if they had none)
        back = {node: keys[node] if before[node] == np.inf else before[node] for node in np.flatnonzero(out).tolist()}
        back = {node: key for node, key in back.items() if truth[node] == np.inf}
        for table in (standing, plain):
            table.put(list(back), list(back.values()))
        truth.update(back)


@pytest.mark.parametrize("moved", [10, 400, 1000], ids=["merged while read", "merged", "sorted afresh"])
def test_ids_given_back_their_earlier_keys_are_placed_by_them(moved):
    # Ids re-keyed (and picked, so that the order takes them in), then given back the keys they
    # had: the order must place them by their keys again, in each of its three ways.
    space = 2000
    rng = np.random.default_rng(moved)
    keys = rng.random(space)
    ranked = _compiled_ranked()(space, np.inf, True)
    ranked.put(list(range(space)), keys.tolist())
    assert ranked.best(space) == np.argsort(keys, kind="stable").tolist()
    nodes = rng.choice(space, moved, replace=False).tolist()
    for new in (rng.random(moved) + 1.0, keys[nodes]):  # moved to the back, then back again
        ranked.put(nodes, new.tolist())
        keys[nodes] = new
        assert ranked.best(space) == np.argsort(keys, kind="stable").tolist()
        assert (
            ranked.best(space // 2, set(nodes[:3]))
            == [n for n in np.argsort(keys, kind="stable").tolist() if n not in nodes[:3]][: space // 2]
        )
