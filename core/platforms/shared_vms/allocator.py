"""The CPU allocation of the shared-VM platform: share-weighted max-min fairness with the ripple effect.

This is ``platform.allocation: fixed_point`` (the platform's default), the work-conserving
allocation. ``paper`` (:mod:`.one_pass`, what the paper-001 configs use) splits each machine
once by share and leaves idle what a throttled task cannot use. Both stand on the same
bookkeeping (:class:`~.bookkeeping.Bookkeeping`: the jobs, their VMs and rates, the queue of
jobs to re-examine, one machine's water-filling); this allocator adds the settling below, whose
methods are the functions of :mod:`.solver`.

Model (DESIGN 4.2, paper 001)
-----------------------------
Every task of a job runs at the job's rate ``r``, the rate of its slowest task (the ripple
effect), and uses exactly ``r`` of its machine; a VM's allocation is ``max(min, r)`` while it
is active (its guarantee is held even when its task cannot use it) and ``min`` while idle.

The rates are the share-weighted max-min fair allocation with the ripple coupling. Each job's
rate is its *best response* to its neighbours' current use: the largest ``x <= cap`` (cap =
the smallest ``max`` among its VMs) such that on every machine m holding its tasks, the
machine's water-filling, with the job's tasks there demanding ``x`` and every other VM w
demanding its own use (``max(min_w, r_w)`` if active, ``min_w`` if idle), grants each of the
job's tasks ``x``. Water-filling on one machine gives VM w ``clamp(lam * share_w, min_w,
demand_w)`` with the level ``lam`` set so that the machine's capacity is used up (or every
demand met). The allocation is a fixed point: every job is at its best response. Such a point
is exactly what the invariants ask for: no machine above capacity, every active VM within
[min, max], no task above its job's rate, and every job either at its cap or *bottlenecked*:
on some full machine its slowest task could gain only by taking from a VM whose share-weighted
allocation (``allocation / share``) is no larger than its own.

With equal shares this allocation is the classic max-min fair one and is unique; the paper's
worked examples (figures 3 and 4) are such cases, and best responses reach it exactly. With
unequal shares the fair points can form a continuum (two jobs that each hold the small share
on one machine and the large one on the other can split the two machines in any proportion
between the two shares' ratios), and some are unstable: best responses, like the continuous
dynamics they discretise, cycle around them. The paper does not say which point its
simulator reached. Here a settling (:meth:`Allocator.settle`) starts from the previous
event's rates, the new job first, and runs the methods of :data:`SETTLE_PLAN` (a tuple of
callables) until one ends with every job at its best response: Gauss-Seidel best responses;
if they cycle, semi-smooth Newton on the piecewise-linear best-response equations of the jobs
that cycled (others held), then best responses again; Newton over all running jobs; best
responses under-relaxed where they reverse; Levenberg-Marquardt on the squared residual;
Newton and Levenberg-Marquardt restarted from the Jacobi brackets of the fixed points. Where
the equations leave rates undetermined, jobs keep their current rates. The result is a
deterministic function of the event history, with hysteresis like a real proportional-share
scheduler.

Should every method fail (none did in the paper's runs: 10,000 CTC-SP2 or LPC-EGEE jobs with
either share preset and any selector; nor in 30,000 random small states),
:func:`~.solver.fallback` sets a feasible allocation in which every job runs at a rate it can
sustain and no job could grow on spare capacity alone, but share-fairness is not guaranteed;
it is counted in :attr:`Allocator.fallbacks` (the run metric ``allocation_fallbacks``), never
silent (``strict=True`` raises :class:`AllocationError` instead).

Computation: an event (a start or a release) marks the machines it touches; the jobs on them
are re-evaluated; a job whose rate changes by more than :data:`~.solver.RATE_TOLERANCE` queues those
neighbours whose best response can see the change (one below its level on a shared machine;
a neighbour whose best response can only rise on a machine that does not bind it keeps its
rate). A job's best response is cached per machine, and only the machines where something
changed are re-computed. Work is proportional to how far the change ripples, never to the
cluster, and bounded (:data:`~.solver.MAX_EVALUATIONS_PER_JOB`, :data:`~.solver.MAX_NEWTON_STEPS`). Rates are
settled lazily, when the platform is asked for rate changes, a PC, FC or utilisation; finish
times are exact for the settled rates. Newton's linear systems are solved with plain Python
floats (:func:`~.numerics.solve_sparse`), so a run is bit-identical on every machine.

Why not one-pass progressive filling
------------------------------------
Classic max-min fairness is computed in one pass by progressive filling: raise every running
job's rate together (here in proportion to a weight, the smallest share among its VMs), and
freeze a job when a machine where it consumes fills up or it reaches its cap. Measured against
this solver on the same states (the solver drove each run, and progressive filling was
evaluated at every newly settled state):

* the tests of the platform and of its backfilling policy (27,428 settled states): all 19,354
  states with equal shares agree to 2.2e-16 (among them the worked examples of figures 3 and
  4: 0.9, 7/8, 5/6, and 101 states with guarantees); of the 8,074 states with unequal shares,
  1,101 differ, by up to 0.339 in a rate. 16 of the 23 tests that settle a state agree
  everywhere; the 7 others all have unequal shares;
* CTC-SP2, 1,500 jobs, 64 machines x 4 VMs, ``vm_backfill`` with each of the 5 selectors:
  with homogeneous shares all 14,232 settled states agree to 1.7e-16; with heterogeneous
  shares 5,488 of 14,420 differ (21 to 54 % per selector), by up to 0.347 in a rate. Driving
  the runs by progressive filling instead: with homogeneous shares the schedules are
  identical for 4 selectors, and for ``pmvm`` 23 finish times move by up to 2.3e-10 s
  (rounding), with metrics equal to 3e-14 (relative) but not bit for bit; with heterogeneous
  shares 785 to 964 of the 1,500 start times change, and the makespan by -3.7 % to +2.7 %.

A weight of 1 for every job does worse: in the tests' unequal-share states it differs in
5,443 of 8,074, by up to 0.444.

The smallest state where they differ: 3 machines x 2 VMs of shares (1, 4), job 0 on VM 0
(machine 0, share 1) and VM 5 (machine 2, share 4), job 1 on VM 1 (machine 0, share 4) and
VM 2 (machine 1, share 1). Only machine 0 binds, where the shares give 1:4, so the unique fair
point is (0.2, 0.8), which the solver finds; progressive filling, whose weight for each job is
one number while a job's share differs from machine to machine, gives (0.5, 0.5), where job 1
could still take from job 0 on machine 0. No single weight per job fixes this in general:
which machine binds a job (hence which of its shares counts) depends on the outcome, and where
fair points form a continuum the one reached depends on the history. So the solver stays, and
progressive filling remains what the tests compare against for equal shares.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ...errors import TiersweepError
from . import solver
from .bookkeeping import Bookkeeping

__all__ = [
    "Allocator",
    "AllocationError",
    "SettleMethod",
    "SETTLE_PLAN",
    "best_responses",
    "newton_on_cycling",
    "newton_on_all",
    "relaxed_best_responses",
    "levenberg_marquardt",
    "newton_from_low_bracket",
    "newton_from_high_bracket",
    "levenberg_marquardt_from_mid_bracket",
]


class AllocationError(TiersweepError, RuntimeError):
    """No fixed point of the CPU allocation was found within the work bound (``strict_allocation``)."""


#: One method of a settling: it works on the allocator's state and returns whether every job
#: ended at its best response (if not, it leaves the jobs queued for the next method).
SettleMethod = Callable[["Allocator"], bool]


def best_responses(allocator: Allocator) -> bool:
    """Gauss-Seidel best responses over the queued jobs (:func:`~.solver.best_responses`)."""
    return solver.best_responses(allocator, allocator.reversed)


def newton_on_cycling(allocator: Allocator) -> bool:
    """Newton on the jobs whose best responses reversed in this settling, others held (none: skip)."""
    return bool(allocator.reversed) and solver.newton(allocator, sorted(allocator.reversed))


def newton_on_all(allocator: Allocator) -> bool:
    """Newton over every running job."""
    return solver.newton(allocator, sorted(allocator.jobs))


def relaxed_best_responses(allocator: Allocator) -> bool:
    """Best responses under-relaxed where they reverse."""
    return solver.best_responses(allocator, allocator.reversed, relaxed=True)


def levenberg_marquardt(allocator: Allocator) -> bool:
    """Levenberg-Marquardt on the squared best-response residual, from the current rates."""
    return solver.levenberg_marquardt(allocator)


def newton_from_low_bracket(allocator: Allocator) -> bool:
    """Newton over every running job, restarted from the low Jacobi bracket."""
    low, _ = allocator.settling_brackets()
    solver.restart(allocator, low)
    return solver.newton(allocator, sorted(allocator.jobs))


def newton_from_high_bracket(allocator: Allocator) -> bool:
    """Newton over every running job, restarted from the high Jacobi bracket."""
    _, high = allocator.settling_brackets()
    solver.restart(allocator, high)
    return solver.newton(allocator, sorted(allocator.jobs))


def levenberg_marquardt_from_mid_bracket(allocator: Allocator) -> bool:
    """Levenberg-Marquardt restarted halfway between the Jacobi brackets."""
    low, high = allocator.settling_brackets()
    solver.restart(allocator, {index: 0.5 * (low[index] + high[index]) for index in low})
    return solver.levenberg_marquardt(allocator)


#: The methods a settling tries in turn before the fallback (see :meth:`Allocator.settle`).
#: Cheap and local first; the global, more expensive ones only when best responses cycle.
SETTLE_PLAN: tuple[SettleMethod, ...] = (
    best_responses,
    newton_on_cycling,
    best_responses,
    newton_on_all,
    best_responses,
    relaxed_best_responses,
    levenberg_marquardt,
    newton_from_low_bracket,
    newton_from_high_bracket,
    levenberg_marquardt_from_mid_bracket,
)


class Allocator(Bookkeeping):
    """The running jobs' rates on a shared-VM cluster, kept at a fair fixed point.

    The bookkeeping (jobs, rates, caches, queue, versions, counters) is
    :class:`~.bookkeeping.Bookkeeping`'s; this class adds the settling: :meth:`settle` runs
    its :attr:`methods` (functions of :mod:`.solver`) in turn, only when something changed.

    Args:
        *args, **kwargs: :class:`~.bookkeeping.Bookkeeping`'s; with ``strict`` set,
            :meth:`settle` raises :class:`AllocationError` when no method finds a fixed point,
            instead of running the counted :func:`~.solver.fallback`.
        methods: The settling methods, tried in order (default: :data:`SETTLE_PLAN`).

    Attributes:
        methods: The settling methods.
        reversed: Jobs whose best responses reversed direction in the current settling.
    """

    def __init__(self, *args: Any, methods: Sequence[SettleMethod] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.methods = tuple(SETTLE_PLAN if methods is None else methods)
        self.reversed: set[int] = set()
        self._brackets: tuple[dict[int, float], dict[int, float]] | None = None

    def forget(self, index: int) -> None:
        """Drop what a settling keeps about job ``index``, which has left."""
        self.reversed.discard(index)
        super().forget(index)

    def settle(self) -> None:
        """Bring every job to its best response (to within :data:`~.solver.RATE_TOLERANCE`).

        Gauss-Seidel best responses first: cheap, and local to the jobs a change reaches.
        The map is antitone (a job that takes more leaves its neighbours less), and with
        unequal shares its fixed points can be unstable (best responses, and the continuous
        dynamics they discretise, then oscillate around them) or form a continuum. A settling
        therefore runs :attr:`methods` in turn until one ends with every job at its best
        response (see the module docstring): plain best responses stop once some job has
        reversed direction :data:`~.solver.REVERSALS_BEFORE_SWITCH` times or the evaluations pass
        their allowance; Newton and Levenberg-Marquardt are bounded by
        :data:`~.solver.MAX_NEWTON_STEPS` and :data:`~.solver.MAX_LM_STEPS`.

        Raises:
            AllocationError: If every method fails and :attr:`strict` is set; otherwise
                :func:`~.solver.fallback` runs (counted in :attr:`fallbacks`).
        """
        if not self.pending:
            return
        self.reversed = set()
        self._brackets = None
        for method in self.methods:
            if method(self):
                return
        if self.strict:
            raise AllocationError(
                f"no fixed point of the CPU allocation found for {len(self.jobs)} running jobs "
                f"(methods tried: {', '.join(getattr(m, '__name__', repr(m)) for m in self.methods)})"
            )
        solver.fallback(self)

    def settling_brackets(self) -> tuple[dict[int, float], dict[int, float]]:
        """The Jacobi brackets of the fixed points, computed once per settling (at the rates of
        the first call); see :func:`~.solver.brackets`."""
        if self._brackets is None:
            self._brackets = solver.brackets(self)
        return self._brackets
