"""The shared-VM allocation's parts, each on a small case computed by hand.

* :mod:`numerics`: water-filling three VMs, the breakpoint level, the granted level with a
  guarantee;
* :mod:`bookkeeping`: named (job, machine) records, the queue order of an arrival;
* :mod:`solver`: best responses, the linear form, a Newton solve on a known root (all jobs,
  and one job with its neighbour held), Levenberg-Marquardt, the Jacobi brackets of a
  continuum of fixed points, restart and the fallback;
* the one-pass rule stands on the bookkeeping alone, not on the fixed-point solver.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tiersweep.core.jobs import Job
from tiersweep.core.platforms.shared_vms import Allocator, Bookkeeping, OnePassAllocator, Pair, solver
from tiersweep.core.platforms.shared_vms.numerics import breakpoint_level, granted_level, waterfill

TOL = 1e-12
PACKAGE = Path(__file__).resolve().parents[1] / "core" / "platforms" / "shared_vms"


def cluster(shares: list[float], placement: dict[int, list[int]], machines: int = 1, mins: float = 0.0) -> Allocator:
    """An allocator over ``machines`` machines of ``len(shares)`` VMs each, the jobs of ``placement``
    (job index -> its VMs) added in index order, serial or not, none settled."""
    vms = len(shares)
    share = shares * machines
    vm_job = [-1] * (machines * vms)
    allocator = Allocator(machines, vms, share, [mins] * len(share), [1.0] * len(share), vm_job)
    for index, held in placement.items():
        for vm in held:
            vm_job[vm] = index
        groups: dict[int, list[int]] = {}
        for vm in held:
            groups.setdefault(vm // vms, []).append(vm)
        allocator.add(Job(index, index + 1, 0.0, len(held), 100.0), held, {m: tuple(v) for m, v in groups.items()})
    return allocator


# -- numerics ---------------------------------------------------------------------------------


def test_waterfill_three_vms_one_capped():
    # Shares 1, 1, 2; the second demands only 0.1: it gets 0.1, the other 0.9 splits 1:2.
    assert waterfill([1.0, 1.0, 2.0], [0.0, 0.0, 0.0], [1.0, 0.1, 1.0]) == pytest.approx([0.3, 0.1, 0.6], abs=TOL)


def test_waterfill_gives_every_high_when_they_fit():
    assert waterfill([1.0, 3.0, 2.0], [0.0, 0.0, 0.0], [0.2, 0.3, 0.1]) == [0.2, 0.3, 0.1]


def test_breakpoint_level_past_a_saturated_neighbour():
    # x + min(0.2, x) = 1: the neighbour saturates at 0.2, so x = 0.8.
    assert breakpoint_level([(0.2, 0.2, 1.0)], 2.0, 1, 1.0) == pytest.approx(0.8, abs=TOL)
    # Before the breakpoint: x + min(0.9, x) = 1 gives x = 0.5; a cap of 0.4 binds.
    assert breakpoint_level([(0.9, 0.9, 1.0)], 2.0, 1, 1.0) == pytest.approx(0.5, abs=TOL)
    assert breakpoint_level([(0.9, 0.9, 1.0)], 2.0, 1, 0.4) == 0.4


def test_granted_level_with_a_held_guarantee():
    # Own VM share 1; an idle VM holding its guarantee 0.3; an active VM of share 1 demanding 1.
    # total(x) = x + 0.3 + x = 1, so x = 0.35.
    assert granted_level([(1.0, 0.0)], [(1.0, 0.3, 0.3), (1.0, 0.0, 1.0)], 1.0) == pytest.approx(0.35, abs=TOL)
    # Two other VMs of shares 1 and 2 demanding 1: x + x + 2x = 1.
    assert granted_level([(1.0, 0.0)], [(1.0, 0.0, 1.0), (2.0, 0.0, 1.0)], 1.0) == pytest.approx(0.25, abs=TOL)
    # Everything fits under the cap: the cap.
    assert granted_level([(1.0, 0.0)], [(1.0, 0.0, 0.1)], 0.5) == 0.5


# -- bookkeeping --------------------------------------------------------------------------------


def test_pairs_are_named_records_reachable_from_job_and_machine():
    allocator = cluster([1.0, 2.0, 4.0], {0: [0, 2], 1: [1]})
    pair = allocator.pairs[0][0]
    assert isinstance(pair, Pair)
    assert (pair.smin, pair.smax, pair.k, pair.x, pair.machine) == (1.0, 4.0, 2, None, 0)
    assert allocator.on[0][0] is pair
    with pytest.raises(AttributeError):
        pair.other = 1  # slotted: no stray fields


def test_an_arrival_answers_first_then_its_neighbours():
    allocator = cluster([1.0, 1.0, 1.0], {0: [0], 1: [1]})
    assert list(allocator.pending) == [1, 0]
    assert allocator.version == [2]


def test_one_pass_rule_stands_on_the_bookkeeping_not_on_the_solver():
    assert issubclass(OnePassAllocator, Bookkeeping) and not issubclass(OnePassAllocator, Allocator)
    tree = ast.parse((PACKAGE / "one_pass.py").read_text())
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert "allocator" not in imported and "solver" not in imported
    assert "bookkeeping" in imported


# -- solver -------------------------------------------------------------------------------------


def test_best_responses_settle_two_equal_jobs_and_note_the_reversal():
    # Job 1 answers first (alone: 1), then job 0 (x + min(1, x) = 1: 0.5), then job 1 again
    # (0.5): job 1 went up, then down.
    allocator = cluster([1.0, 1.0], {0: [0], 1: [1]})
    reversed_: set[int] = set()
    assert solver.best_responses(allocator, reversed_)
    assert allocator.rate == pytest.approx({0: 0.5, 1: 0.5}, abs=TOL)
    assert reversed_ == {1}
    assert not allocator.pending


def test_linear_form_of_a_job_bound_by_a_saturated_neighbour():
    # Shares 1 and 3, rates 0.25 and 0.75: job 0's level is 0.25, where job 1's VM (0.75 at
    # share 3) is just saturated: 1 * x + rate[1] = 1.
    allocator = cluster([1.0, 3.0], {0: [0], 1: [1]})
    allocator.rate.update({0: 0.25, 1: 0.75})
    assert solver.linear_form(allocator, 0, (0,), 1.0, 0, 0.25) == (1.0, 0.0, [1])
    # At its cap, the best response is a constant.
    assert solver.linear_form(allocator, 0, (0,), 0.25, 0, 0.25) == (0.0, 0.0, [])


def test_newton_converges_on_the_known_root():
    # One machine, shares 1 and 3: the fair point is (1/4, 3/4).
    allocator = cluster([1.0, 3.0], {0: [0], 1: [1]})
    assert solver.newton(allocator, [0, 1])
    assert allocator.rate == pytest.approx({0: 0.25, 1: 0.75}, abs=TOL)
    assert 0 < allocator.newton_steps <= solver.MAX_NEWTON_STEPS
    assert allocator.usage == pytest.approx(1.0, abs=TOL)


def test_newton_on_one_job_holds_the_others():
    # Job 1 held at 0.5: job 0's best response solves x + min(0.5, 3x) = 1, so x = 0.5.
    allocator = cluster([1.0, 3.0], {0: [0], 1: [1]})
    allocator.rate[1] = 0.5
    solver.newton(allocator, [0])
    assert allocator.rate[0] == pytest.approx(0.5, abs=TOL)
    assert allocator.rate[1] == 0.5
    assert 1 in allocator.queued  # the held neighbour sees a new rate: it must look again


def test_levenberg_marquardt_converges_on_the_known_root():
    allocator = cluster([1.0, 3.0], {0: [0], 1: [1]})
    allocator.rate.update({0: 0.5, 1: 0.5})
    assert solver.levenberg_marquardt(allocator)
    assert allocator.rate == pytest.approx({0: 0.25, 1: 0.75}, abs=1e-9)
    assert not allocator.pending


def test_brackets_enclose_a_continuum_of_fixed_points():
    # Two machines of shares (1, 2): job 0 has the small share on machine 0 and the large on
    # machine 1, job 1 the reverse. From 0: R(0) = (1, 1); R(1, 1) = (1/3, 1/3) (machine 0:
    # x + min(1, 2x) = 1); R(1/3, 1/3) = (2/3, 2/3); and so on: every split r0 + r1 = 1 with
    # r in [1/3, 2/3] is a fixed point, and the brackets are exactly those bounds.
    allocator = cluster([1.0, 2.0], {0: [0, 3], 1: [1, 2]}, machines=2)
    allocator.rate.update({0: 0.4, 1: 0.6})
    low, high = solver.brackets(allocator)
    assert low == pytest.approx({0: 1 / 3, 1: 1 / 3}, abs=TOL)
    assert high == pytest.approx({0: 2 / 3, 1: 2 / 3}, abs=TOL)
    assert allocator.rate == {0: 0.4, 1: 0.6}  # left as they were


def test_restart_sets_rates_floored_and_forgets_the_caches():
    allocator = cluster([1.0, 3.0], {0: [0], 1: [1]})
    allocator.pairs[0][0].x = 0.3
    before = list(allocator.version)
    solver.restart(allocator, {0: 0.0, 1: 0.5})
    assert allocator.rate == {0: solver.MIN_RATE, 1: 0.5}
    assert allocator.pairs[0][0].x is None
    assert allocator.usage == pytest.approx(0.5 + solver.MIN_RATE)
    assert allocator.version == [before[0] + 1]


def test_fallback_makes_rates_sustainable_and_counts_itself():
    # Rates (1, 1) overload the machine; each is cut to its best response to the other's:
    # job 0: x + min(1, 3x) = 1 -> 1/4; job 1: x + min(1, x/3) = 1 -> 3/4. No room is left.
    allocator = cluster([1.0, 3.0], {0: [0], 1: [1]})
    allocator.rate.update({0: 1.0, 1: 1.0})
    solver.fallback(allocator)
    assert allocator.rate == pytest.approx({0: 0.25, 1: 0.75}, abs=TOL)
    assert allocator.fallbacks == 1
    assert not allocator.pending
    assert all(pair.x is not None for pairs in allocator.pairs.values() for pair in pairs)
