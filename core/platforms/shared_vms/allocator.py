"""The CPU allocation of the shared-VM platform: share-weighted max-min fairness with the ripple effect.

This is ``platform.allocation: fixed_point`` (the platform's default), the work-conserving
allocation. ``paper`` (:mod:`.one_pass`, what the paper-001 configs use) splits each machine
once by share and leaves idle what a throttled task cannot use; it reuses this module's
bookkeeping (:meth:`Allocator.add`, :meth:`Allocator.remove`, the PC solve) with its own
:meth:`~.one_pass.OnePassAllocator.settle`.

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
:meth:`Allocator.fallback` sets a feasible allocation in which every job runs at a rate it can
sustain and no job could grow on spare capacity alone, but share-fairness is not guaranteed;
it is counted in :attr:`Allocator.fallbacks` (the run metric ``allocation_fallbacks``), never
silent (``strict=True`` raises :class:`AllocationError` instead).

Computation: an event (a start or a release) marks the machines it touches; the jobs on them
are re-evaluated; a job whose rate changes by more than :data:`RATE_TOLERANCE` queues those
neighbours whose best response can see the change (one below its level on a shared machine;
a neighbour whose best response can only rise on a machine that does not bind it keeps its
rate). A job's best response is cached per machine, and only the machines where something
changed are re-computed. Work is proportional to how far the change ripples, never to the
cluster, and bounded (:data:`MAX_EVALUATIONS_PER_JOB`, :data:`MAX_NEWTON_STEPS`). Rates are
settled lazily, when the platform is asked for rate changes, a PC, FC or utilisation; finish
times are exact for the settled rates. Newton's linear systems are solved with plain Python
floats (:func:`~.numerics.solve_sparse`), so a run is bit-identical on every machine.

Why not one-pass progressive filling
------------------------------------
Classic max-min fairness is computed in one pass by progressive filling: raise every running
job's rate together (here in proportion to a weight, the smallest share among its VMs), and
freeze a job when a machine where it consumes fills up or it reaches its cap. It was measured
against this solver before the solver was given this module (same states: the solver drove
each run, and progressive filling was evaluated at every newly settled state):

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

import math
from collections import deque
from typing import TYPE_CHECKING, Callable, Sequence

from ...errors import TiersweepError
from .numerics import breakpoint_level, solve_sparse

if TYPE_CHECKING:
    from ...jobs import Job

__all__ = [
    "Allocator",
    "AllocationError",
    "SettleMethod",
    "SETTLE_PLAN",
    "RATE_TOLERANCE",
    "MAX_EVALUATIONS_PER_JOB",
    "REVERSALS_BEFORE_SWITCH",
    "NEWTON_ACCEPT",
    "MAX_NEWTON_STEPS",
    "MAX_LM_STEPS",
    "BRACKET_ITERATIONS",
    "MIN_RATE",
    "best_responses",
    "newton_on_cycling",
    "newton_on_all",
    "relaxed_best_responses",
    "levenberg_marquardt",
    "newton_from_low_bracket",
    "newton_from_high_bracket",
    "levenberg_marquardt_from_mid_bracket",
]

#: A job's rate is updated (and its neighbours re-examined) only when its best response moves
#: by more than this; rates are within a few tolerances of the exact fixed point.
RATE_TOLERANCE = 1e-12

#: Best-response evaluations per running job (beyond a fixed allowance) in one run of them.
MAX_EVALUATIONS_PER_JOB = 30

#: Plain best responses stop (and the next method of the plan takes over) once some job has
#: reversed direction this many times in one run of them.
REVERSALS_BEFORE_SWITCH = 4

#: A Newton step is taken back (and halved) when it leaves the squared residual above this
#: multiple of the last accepted one.
NEWTON_ACCEPT = 4.0

#: Newton steps per solve.
MAX_NEWTON_STEPS = 25

#: Levenberg-Marquardt steps per solve (accepted or not).
MAX_LM_STEPS = 80

#: Jacobi rounds computing the brackets that the last Newton solves start from.
BRACKET_ITERATIONS = 30

#: Floor of a rate a Newton step may propose (rates are positive).
MIN_RATE = 1e-9

# Fields of a (job, machine) pair record.
_SMIN, _SMAX, _K, _X, _MACHINE = range(5)


class AllocationError(TiersweepError, RuntimeError):
    """No fixed point of the CPU allocation was found within the work bound (``strict_allocation``)."""


#: One method of a settling: it works on the allocator's state and returns whether every job
#: ended at its best response (if not, it leaves the jobs queued for the next method).
SettleMethod = Callable[["Allocator"], bool]


def best_responses(allocator: Allocator) -> bool:
    """Gauss-Seidel best responses over the queued jobs (:meth:`Allocator.best_responses`)."""
    return allocator.best_responses()


def newton_on_cycling(allocator: Allocator) -> bool:
    """Newton on the jobs whose best responses reversed in this settling, others held (none: skip)."""
    return bool(allocator.reversed) and allocator.newton(sorted(allocator.reversed))


def newton_on_all(allocator: Allocator) -> bool:
    """Newton over every running job."""
    return allocator.newton(sorted(allocator.jobs))


def relaxed_best_responses(allocator: Allocator) -> bool:
    """Best responses under-relaxed where they reverse."""
    return allocator.best_responses(relaxed=True)


def levenberg_marquardt(allocator: Allocator) -> bool:
    """Levenberg-Marquardt on the squared best-response residual, from the current rates."""
    return allocator.levenberg_marquardt()


def newton_from_low_bracket(allocator: Allocator) -> bool:
    """Newton over every running job, restarted from the low Jacobi bracket."""
    low, _ = allocator.settling_brackets()
    allocator.restart(low)
    return allocator.newton(sorted(allocator.jobs))


def newton_from_high_bracket(allocator: Allocator) -> bool:
    """Newton over every running job, restarted from the high Jacobi bracket."""
    _, high = allocator.settling_brackets()
    allocator.restart(high)
    return allocator.newton(sorted(allocator.jobs))


def levenberg_marquardt_from_mid_bracket(allocator: Allocator) -> bool:
    """Levenberg-Marquardt restarted halfway between the Jacobi brackets."""
    low, high = allocator.settling_brackets()
    allocator.restart({index: 0.5 * (low[index] + high[index]) for index in low})
    return allocator.levenberg_marquardt()


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


class Allocator:
    """The running jobs' rates on a shared-VM cluster, kept at a fair fixed point.

    The platform tells it which job holds which VMs (:meth:`add`, :meth:`remove`); the
    allocator owns everything else about the allocation: rates, caps, the per-(job, machine)
    best-response caches, the queue of jobs to re-examine, the CPU in use, a version counter
    per machine (bumped whenever a machine's use may have changed, for callers' caches) and
    the work counters. Settling is lazy: :meth:`settle` runs only when something changed.

    Args:
        machines: Number of physical machines P.
        vms: VMs per machine V.
        share: Share of each VM (VM ``v`` is VM ``v % vms`` of machine ``v // vms``).
        vm_min: Guarantee of each VM.
        vm_max: Cap of each VM.
        vm_job: Job index per VM, -1 when idle. The platform's own list, read here and
            updated in place by the platform before :meth:`add` and after :meth:`remove`.
        strict: Raise :class:`AllocationError` when no method finds a fixed point, instead of
            the counted :meth:`fallback`.
        methods: The settling methods, tried in order (default: the class's :attr:`settle_plan`).

    Attributes:
        rate: Rate of each running job, by job index (settled only after :meth:`settle`).
        cap: Cap of each running job (its VMs' smallest ``max``).
        groups: Each running job's VMs, by machine.
        jobs: The running jobs, by job index, in start order.
        usage: CPU in use over the cluster (sum of task rates).
        version: A counter per machine, bumped whenever its use may have changed.
        reversed: Jobs whose best responses reversed direction in the current settling.
        evaluations: Best-response evaluations done so far (for profiling and tests).
        newton_steps: Newton and Levenberg-Marquardt steps done so far.
        fallbacks: Settlings that ended in :meth:`fallback`.
    """

    #: The settling methods tried in turn when none is given (a subclass that settles
    #: otherwise, such as the one-pass allocation, has none).
    settle_plan: tuple[SettleMethod, ...] = SETTLE_PLAN

    def __init__(
        self,
        machines: int,
        vms: int,
        share: Sequence[float],
        vm_min: Sequence[float],
        vm_max: Sequence[float],
        vm_job: list[int],
        *,
        strict: bool = False,
        methods: Sequence[SettleMethod] | None = None,
    ) -> None:
        self.machines = machines
        self.vms = vms
        self.share = share
        self.vm_min = vm_min
        self.vm_max = vm_max
        self.vm_job = vm_job
        self.strict = strict
        self.methods = tuple(self.settle_plan if methods is None else methods)
        # Without guarantees the best response has a faster closed form (:meth:`_br`), and the
        # exact pruning of neighbours that need no new look is valid.
        self._mins = any(lo > 0.0 for lo in vm_min)
        self._slots = [range(m * vms, (m + 1) * vms) for m in range(machines)]  # VMs of each machine
        self.version = [0] * machines
        self.jobs: dict[int, Job] = {}
        self.rate: dict[int, float] = {}
        self.cap: dict[int, float] = {}
        self.groups: dict[int, dict[int, tuple[int, ...]]] = {}
        # One record per (job, machine) pair, reachable from both: [smallest share, largest
        # share, VMs there, cached best response there (None: stale, and the job is queued;
        # negative: stale, and minus a lower bound of it, the job needing no new look because
        # that machine does not bind it), machine]. See the _SMIN .. _MACHINE indexes.
        self._pairs: dict[int, list[list]] = {}  # job -> its pairs, by machine
        self._on: list[dict[int, list]] = [{} for _ in range(machines)]  # machine -> job -> pair
        self._pending: deque[int] = deque()
        self.reversed: set[int] = set()
        self._queued: set[int] = set()
        self._reported: dict[int, float] = {}
        self._changed: set[int] = set()
        self._brackets: tuple[dict[int, float], dict[int, float]] | None = None
        self.usage = 0.0
        self.evaluations = 0
        self.newton_steps = 0
        self.fallbacks = 0

    # -- jobs arriving and leaving -------------------------------------------------------------
    def add(self, job: Job, held: Sequence[int], groups: dict[int, tuple[int, ...]]) -> None:
        """Job ``job`` now holds VMs ``held`` (``groups``: the same, by machine, in machine order).

        Its rate starts at 0 and is set by the next settling, where it answers first.
        """
        index = job.index
        version = self.version
        for m in groups:
            version[m] += 1
        self.jobs[index] = job
        self.rate[index] = 0.0
        self._reported[index] = 0.0
        vmax = self.vm_max
        self.cap[index] = min(vmax[vm] for vm in held)
        self.groups[index] = groups
        share = self.share
        pairs = []
        for m, vms in groups.items():
            pair = [min(share[v] for v in vms), max(share[v] for v in vms), len(vms), None, m]
            pairs.append(pair)
            self._on[m][index] = pair
        self._pairs[index] = pairs
        # The new job answers first, then its neighbours (in machine order).
        self._enqueue_first(index)
        for m in groups:
            self._touch_machine(m, index)

    def remove(self, job: Job) -> dict[int, tuple[int, ...]]:
        """Job ``job`` has left; return the VMs it held, by machine."""
        index = job.index
        groups = self.groups.pop(index)
        rate = self.rate.pop(index)
        self.usage -= rate * job.size
        version = self.version
        for m in groups:
            version[m] += 1
            del self._on[m][index]
        del self.jobs[index], self.cap[index], self._pairs[index], self._reported[index]
        self.reversed.discard(index)
        self._changed.discard(index)
        if index in self._queued:
            self._queued.discard(index)
            self._pending = deque(j for j in self._pending if j != index)
        for m in groups:
            self._touch_machine(m, -1)
        if not self.jobs:
            self.usage = 0.0  # no drift survives an empty cluster
        return groups

    def _enqueue_first(self, index: int) -> None:
        if index in self._queued:
            return
        self._queued.add(index)
        self._pending.appendleft(index)

    def _touch_machine(self, m: int, skip: int) -> None:
        """Something on machine ``m`` changed: its other jobs must re-examine it."""
        queued, pending = self._queued, self._pending
        for j, pair in self._on[m].items():
            if j == skip:
                continue
            pair[_X] = None
            if j not in queued:
                queued.add(j)
                pending.append(j)

    # -- reading the allocation ----------------------------------------------------------------
    def machine_usage(self, machine: int) -> float:
        """CPU used on ``machine`` at the current (not necessarily settled) rates."""
        rate, occ = self.rate, self.vm_job
        used = 0.0
        for w in range(machine * self.vms, (machine + 1) * self.vms):
            j = occ[w]
            if j >= 0:
                used += rate[j]
        return used

    def rate_changes(self) -> list[tuple[Job, float]]:
        """Settle, and return the jobs whose rate differs from the one last returned, with it."""
        self.settle()
        if not self._changed:
            return []
        jobs, rate, reported = self.jobs, self.rate, self._reported
        changes = []
        for index in sorted(self._changed):
            new = rate[index]
            if new != reported[index]:
                reported[index] = new
                changes.append((jobs[index], new))
        self._changed.clear()
        return changes

    # -- settling ------------------------------------------------------------------------------
    def settle(self) -> None:
        """Bring every job to its best response (to within :data:`RATE_TOLERANCE`).

        Gauss-Seidel best responses first: cheap, and local to the jobs a change reaches.
        The map is antitone (a job that takes more leaves its neighbours less), and with
        unequal shares its fixed points can be unstable (best responses, and the continuous
        dynamics they discretise, then oscillate around them) or form a continuum. A settling
        therefore runs :attr:`methods` in turn until one ends with every job at its best
        response (see the module docstring): plain best responses stop once some job has
        reversed direction :data:`REVERSALS_BEFORE_SWITCH` times or the evaluations pass
        their allowance; Newton and Levenberg-Marquardt are bounded by
        :data:`MAX_NEWTON_STEPS` and :data:`MAX_LM_STEPS`.

        Raises:
            AllocationError: If every method fails and :attr:`strict` is set; otherwise
                :meth:`fallback` runs (counted in :attr:`fallbacks`).
        """
        if not self._pending:
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
        self.fallback()

    def settling_brackets(self) -> tuple[dict[int, float], dict[int, float]]:
        """The Jacobi brackets of the fixed points, computed once per settling (at the rates of
        the first call); see :meth:`brackets`."""
        if self._brackets is None:
            self._brackets = self.brackets()
        return self._brackets

    def brackets(self) -> tuple[dict[int, float], dict[int, float]]:
        """The Jacobi brackets of the fixed points: ``low = R(high)``, ``high = R(low)`` from
        ``low = 0``, where R gives every job its best response to the others' rates. R is
        antitone, so ``low`` rises and ``high`` falls, and every fixed point lies between them
        (:data:`BRACKET_ITERATIONS` rounds). The rates are left as they were."""
        rate, cap_of, pairs_of = self.rate, self.cap, self._pairs
        solve = self._br_general if self._mins else self._br
        saved = dict(rate)

        def respond(rates: dict[int, float]) -> dict[int, float]:
            rate.update(rates)
            out = {}
            for index, pairs in pairs_of.items():
                cap = cap_of[index]
                out[index] = min(solve(p[_MACHINE], p[_K], p[_SMIN], cap, index) for p in pairs)
            return out

        low = {index: 0.0 for index in rate}
        high = respond(low)
        for _ in range(BRACKET_ITERATIONS):
            low = respond(high)
            high = respond(low)
        rate.update(saved)
        return low, high

    def levenberg_marquardt(self) -> bool:
        """Minimise the squared best-response residual over all running jobs (Levenberg-Marquardt).

        The residual of job j is ``best response(r) - r_j``; its Jacobian row is the local
        linear form of the best response on the binding machine (as in :meth:`newton`) minus
        the identity. A step solves ``(J'J + mu diag(J'J)) d = -J'F`` (sparse, plain Python
        floats) and is kept only if the residual falls; ``mu`` shrinks after a kept step and
        grows after a rejected one. Slower than Newton, but it does not stall at the kinks
        where the binding machine changes as easily.

        Returns:
            Whether every job ended at its best response; if not, every job is queued for
            best responses again.
        """
        order = sorted(self.jobs)
        n = len(order)
        where = {index: i for i, index in enumerate(order)}
        rate, cap_of, groups_of, pairs_of = self.rate, self.cap, self.groups, self._pairs
        solve = self._br_general if self._mins else self._br
        form = self._linear_form
        caps = [cap_of[index] for index in order]

        def evaluate() -> tuple[list[float], list[dict[int, float]]]:
            residual, rows = [], []
            for i, index in enumerate(order):
                cap = caps[i]
                x, binding = math.inf, None
                for pair in pairs_of[index]:
                    value = pair[_X] = solve(pair[_MACHINE], pair[_K], pair[_SMIN], cap, index)
                    if value < x:
                        x, binding = value, pair[_MACHINE]
                residual.append(x - rate[index])
                row = {i: -1.0}
                slope, _, saturated = form(binding, groups_of[index][binding], cap, index, x)
                if slope:
                    for other in saturated:
                        k = where[other]
                        row[k] = row.get(k, 0.0) - 1.0 / slope
                rows.append(row)
            return residual, rows

        residual, rows = evaluate()
        cost = sum(f * f for f in residual)
        mu = 1e-3
        converged = False
        for _ in range(MAX_LM_STEPS):
            self.newton_steps += 1
            if max(abs(f) for f in residual) <= RATE_TOLERANCE:
                converged = True
                break
            normal: list[dict[int, float]] = [{} for _ in range(n)]
            gradient = [0.0] * n
            for row, f in zip(rows, residual):
                items = list(row.items())
                for a, va in items:
                    gradient[a] += va * f
                    target = normal[a]
                    for b, vb in items:
                        target[b] = target.get(b, 0.0) + va * vb
            for a in range(n):
                d = normal[a].get(a, 0.0)
                normal[a][a] = d + mu * (d if d > 1e-12 else 1e-12)
            step = solve_sparse(normal, [-g for g in gradient], [0.0] * n)
            saved = [rate[index] for index in order]
            for i, index in enumerate(order):
                value = saved[i] + step[i]
                rate[index] = caps[i] if value > caps[i] else (MIN_RATE if value < MIN_RATE else value)
            trial, trial_rows = evaluate()
            trial_cost = sum(f * f for f in trial)
            if trial_cost < cost:
                residual, rows, cost = trial, trial_rows, trial_cost
                mu = max(mu / 3.0, 1e-12)
            else:
                for i, index in enumerate(order):
                    rate[index] = saved[i]
                residual, rows = evaluate()
                mu *= 4.0
                if mu > 1e12:
                    break
        self.usage = sum(rate[index] * job.size for index, job in self.jobs.items())
        self._changed.update(order)
        for m in range(self.machines):
            self.version[m] += 1
        self._pending.clear()
        self._queued.clear()
        if converged:
            return True  # the pair caches were filled at these rates by the last evaluation
        for index in order:
            for pair in pairs_of[index]:
                pair[_X] = None
            self._queued.add(index)
            self._pending.append(index)
        return False

    def restart(self, rates: dict[int, float]) -> None:
        """Set every running job's rate (for a Newton solve from there); every cache is stale."""
        for index, value in rates.items():
            self.rate[index] = value if value > MIN_RATE else MIN_RATE
            for pair in self._pairs[index]:
                pair[_X] = None
        self.usage = sum(self.rate[index] * job.size for index, job in self.jobs.items())
        self._changed.update(rates)
        for m in range(self.machines):
            self.version[m] += 1

    def fallback(self) -> None:
        """A feasible allocation when no fixed point was found: sustainable rates, spare CPU filled.

        ``r = min(r, best response(r))`` makes every job's rate sustainable (its best response
        can only rise when others' rates fall), hence every machine within capacity; then each
        job in index order grows into the spare capacity of its machines, up to its best
        response, never squeezing another job. Every job keeps a rate it can sustain and no
        job could grow on spare capacity alone; share-fairness is not guaranteed.
        """
        self.fallbacks += 1
        order = sorted(self.jobs)
        rate, cap_of, groups_of, solve = self.rate, self.cap, self.groups, self.solve

        def best_response(index: int) -> float:
            cap = cap_of[index]
            return min(solve(m, vms, cap, index, ()) for m, vms in groups_of[index].items())

        responses = {index: best_response(index) for index in order}
        for index in order:
            value = min(rate[index], responses[index])
            rate[index] = value if value > MIN_RATE else MIN_RATE
        usage = {m: self.machine_usage(m) for m in range(self.machines)}
        for index in order:
            groups = groups_of[index]
            room = min((1.0 - usage[m]) / len(vms) for m, vms in groups.items())
            if room <= RATE_TOLERANCE:
                continue
            target = min(best_response(index), rate[index] + room)
            grow = target - rate[index]
            if grow <= 0.0:
                continue
            rate[index] = target
            for m, vms in groups.items():
                usage[m] += grow * len(vms)
        self.usage = sum(rate[index] * job.size for index, job in self.jobs.items())
        self._changed.update(order)
        for m in range(self.machines):
            self.version[m] += 1
        self._pending.clear()
        self._queued.clear()
        br = self._br_general if self._mins else self._br
        for index in order:  # fresh caches at the final rates (no job stays queued)
            cap = cap_of[index]
            for pair in self._pairs[index]:
                pair[_X] = br(pair[_MACHINE], pair[_K], pair[_SMIN], cap, index)

    def best_responses(self, relaxed: bool = False) -> bool:
        """Gauss-Seidel best responses over the queued jobs.

        Args:
            relaxed: A job whose move reverses its previous one moves only part of the way
                (the fraction halves at each reversal and grows back by half at each move in
                the same direction); such a job is examined again.

        Returns:
            Whether the queue emptied (every job at its best response); False when some job
            reversed :data:`REVERSALS_BEFORE_SWITCH` times (not ``relaxed``) or the
            evaluations passed their allowance.
        """
        pending = self._pending
        queued, pairs_of, on, rate, cap_of = self._queued, self._pairs, self._on, self.rate, self.cap
        jobs, changed, version = self.jobs, self._changed, self.version
        solve = self._br_general if self._mins else self._br
        prune = not self._mins
        allowance = 1000 + MAX_EVALUATIONS_PER_JOB * len(jobs)
        evaluations = 0
        rising: dict[int, bool] = {}
        reversals: dict[int, int] = {}
        fraction: dict[int, float] = {}
        try:
            while pending:
                if evaluations >= allowance:
                    return False
                index = pending.popleft()
                queued.discard(index)
                evaluations += 1
                pairs = pairs_of[index]
                best = math.inf
                cap = cap_of[index]
                for pair in pairs:
                    x = pair[_X]
                    if x is None or x < 0.0:
                        x = pair[_X] = solve(pair[_MACHINE], pair[_K], pair[_SMIN], cap, index)
                    if x < best:
                        best = x
                old = rate[index]
                step = best - old
                if -RATE_TOLERANCE <= step <= RATE_TOLERANCE:
                    continue
                up = step > 0.0
                part = 1.0
                if rising.get(index, up) != up:
                    self.reversed.add(index)
                    count = reversals[index] = reversals.get(index, 0) + 1
                    if relaxed:
                        part = fraction[index] = fraction.get(index, 1.0) * 0.5
                    elif count >= REVERSALS_BEFORE_SWITCH:
                        queued.add(index)
                        pending.appendleft(index)
                        return False
                elif relaxed and index in fraction:
                    part = fraction[index] = min(1.0, fraction[index] * 1.5)
                rising[index] = up
                if part < 1.0:
                    step *= part
                    if index not in queued:
                        queued.add(index)
                        pending.append(index)  # short of its best response: look again
                new = old + step
                rate[index] = new
                self.usage += step * jobs[index].size
                changed.add(index)
                low = old if up else new
                for pair in pairs:
                    m = pair[_MACHINE]
                    version[m] += 1
                    largest = pair[_SMAX]
                    for j, theirs in on[m].items():
                        if j == index:
                            continue
                        x = theirs[_X]
                        if x is None:
                            continue  # stale already, so queued
                        if x < 0.0:
                            # A lower bound: still one if this job's rate fell; else look again.
                            if up:
                                theirs[_X] = None
                                if j not in queued:
                                    queued.add(j)
                                    pending.append(j)
                            continue
                        # j's best response on m sees this job's use only while it is below
                        # j's level there: x_j * share / (j's smallest share on m).
                        if prune and low >= x * largest / theirs[_SMIN]:
                            continue
                        if prune and not up and rate[j] < x - RATE_TOLERANCE:
                            # This job's rate fell, so j's best response on m can only rise;
                            # m does not bind j, so j's rate stands: keep x as a lower bound.
                            theirs[_X] = -x
                            continue
                        theirs[_X] = None
                        if j not in queued:
                            queued.add(j)
                            pending.append(j)
            return True
        finally:
            self.evaluations += evaluations

    def newton(self, order: list[int]) -> bool:
        """Solve the best-response fixed point of the jobs ``order`` by semi-smooth Newton.

        Each job's best response is piecewise linear in its neighbours' rates: on its binding
        machine (the one giving the smallest value) it is ``x`` with ``slope * x + sum of the
        rates of the neighbours saturated below its level = 1 - constants`` (or a constant: its
        cap, or a guarantee). Newton solves that linear system (the other jobs' rates held)
        and re-reads the pieces at the new point until every job in ``order`` is at its best
        response. Where the pieces leave rates undetermined (a continuum of fair points),
        those jobs keep their current rates.

        Args:
            order: The jobs solved for, by index, in increasing order.

        Returns:
            Whether every job ended at its best response; if not, every job is queued for
            best responses again.
        """
        n = len(order)
        where = {index: i for i, index in enumerate(order)}
        rate, cap_of, groups_of = self.rate, self.cap, self.groups
        caps = [cap_of[index] for index in order]

        def assign(values: Sequence[float]) -> None:
            for index, value, cap in zip(order, values, caps):
                rate[index] = cap if value > cap else (MIN_RATE if value < MIN_RATE else value)

        accepted: list[float] | None = None  # the last point whose residual went down
        direction: list[float] = []
        fraction = 1.0
        best_norm = math.inf
        solve = self._br_general if self._mins else self._br
        form, pairs_of, on = self._linear_form, self._pairs, self._on
        prune = not self._mins
        previous = [rate[index] for index in order]
        converged = False
        for _ in range(MAX_NEWTON_STEPS):
            self.newton_steps += 1
            matrix: list[dict[int, float]] = []
            rhs = [0.0] * n
            worst = 0.0
            norm = 0.0
            for i, index in enumerate(order):
                cap = caps[i]
                binding = None
                x = math.inf
                for pair in pairs_of[index]:  # by machine: ties go to the lower machine
                    value = pair[_X]
                    if value is None or value < 0.0:
                        value = pair[_X] = solve(pair[_MACHINE], pair[_K], pair[_SMIN], cap, index)
                    if value < x:
                        x, binding = value, pair[_MACHINE]
                gap = abs(x - rate[index])
                norm += gap * gap
                if gap > worst:
                    worst = gap
                slope, constant, saturated = form(binding, groups_of[index][binding], cap, index, x)
                if slope == 0.0:  # the cap, or a guarantee: a constant
                    matrix.append({i: 1.0})
                    rhs[i] = x
                    continue
                row = {i: slope}
                total = 1.0 - constant
                for other in saturated:
                    k = where.get(other)
                    if k is None:
                        total -= rate[other]  # held
                    else:
                        row[k] = row.get(k, 0.0) + 1.0
                matrix.append(row)
                rhs[i] = total
            if worst <= RATE_TOLERANCE:
                converged = True
                break
            if accepted is not None and norm >= NEWTON_ACCEPT * best_norm and fraction > 1.0 / 1024:
                # No progress: back to the last accepted point, half the step (line search).
                fraction *= 0.5
                assign([a + fraction * d for a, d in zip(accepted, direction)])
            else:
                best_norm = norm
                accepted = [rate[index] for index in order]
                solution = solve_sparse(matrix, rhs, accepted)
                direction = [b - a for a, b in zip(accepted, solution)]
                fraction = 1.0
                assign(solution)
            # A job's best response on a machine moves only if a neighbour there was or is
            # below its level (the exact pruning of best responses): forget those. (Held jobs
            # are dealt with at the end.)
            for k, other in enumerate(order):
                new = rate[other]
                old = previous[k]
                if new == old:
                    continue
                previous[k] = new
                low = old if old < new else new
                for pair in pairs_of[other]:
                    largest = pair[_SMAX]
                    for j, theirs in on[pair[_MACHINE]].items():
                        if j == other or j not in where:
                            continue
                        x = theirs[_X]
                        if x is not None and (x < 0.0 or not prune or low < x * largest / theirs[_SMIN]):
                            theirs[_X] = None
        self.usage = sum(rate[index] * job.size for index, job in self.jobs.items())
        self._changed.update(order)
        for m in range(self.machines):
            self.version[m] += 1
        whole = n == len(self.jobs)
        if whole or not converged:
            self._pending.clear()  # every job is settled, or is queued again just below
            self._queued.clear()
        if converged:
            if whole:
                return True
            # Jobs held fixed see new rates on the machines they share with the solved ones.
            for index in order:
                for m in groups_of[index]:
                    for j, theirs in on[m].items():
                        if j not in where:
                            theirs[_X] = None
                            if j not in self._queued:
                                self._queued.add(j)
                                self._pending.append(j)
            return not self._pending
        for index in sorted(self.jobs):
            for pair in pairs_of[index]:
                pair[_X] = None
            self._queued.add(index)
            self._pending.append(index)
        return False

    def _linear_form(self, m: int, own: tuple[int, ...], cap: float, index: int, x: float) -> tuple[float, float, list[int]]:
        """The local linear form of job ``index``'s best response ``x`` on machine ``m``.

        Returns ``(slope, constant, saturated)`` with ``slope * x + sum(rate[j] for j in
        saturated) = 1 - constant`` near the current rates, or ``slope = 0`` when ``x`` does
        not move with them (the job's cap, or one of its VMs' guarantee).
        """
        if x >= cap:
            return 0.0, 0.0, []
        share, lo_of, occ, rate = self.share, self.vm_min, self.vm_job, self.rate
        growing = [u for u in own if x > lo_of[u]]
        if not growing or any(abs(x - lo_of[u]) <= 1e-15 for u in own):
            return 0.0, 0.0, []
        sigma = min(share[u] for u in growing)
        lam = x / sigma
        slope = float(len(growing))
        constant = sum(lo_of[u] for u in own if u not in growing)
        saturated = []
        for w in range(m * self.vms, (m + 1) * self.vms):
            if w in own:
                continue
            j = occ[w]
            lo = lo_of[w]
            hi = lo if j < 0 else (rate[j] if rate[j] > lo else lo)
            a = lam * share[w]
            if a >= hi:
                if j >= 0 and rate[j] > lo:
                    saturated.append(j)
                else:
                    constant += lo
            elif a <= lo:
                constant += lo
            else:
                slope += share[w] / sigma
        return slope, constant, saturated

    # -- one machine's water-filling -----------------------------------------------------------
    def _br(self, m: int, k: int, smin: float, cap: float, index: int) -> float:
        """Best response on machine ``m`` of job ``index``, which has ``k`` VMs there, the
        smallest of share ``smin`` (no guarantees anywhere: the hot path of :meth:`solve`).

        total(x) = k x + sum over the other tasks w of min(rate_w, x share_w / smin); the
        answer solves total(x) = 1 over the sorted breakpoints, capped at ``cap``.
        """
        occ, rate, share = self.vm_job, self.rate, self.share
        slope = float(k)
        points = []
        for w in self._slots[m]:
            j = occ[w]
            if j >= 0 and j != index:
                hi = rate[j]
                if hi > 0.0:
                    c = share[w] / smin
                    slope += c
                    points.append((hi / c, hi, c))
        return breakpoint_level(points, slope, k, cap)

    def _br_general(self, m: int, k: int, smin: float, cap: float, index: int) -> float:
        """:meth:`_br` with guarantees."""
        return self._solve_general(m, self.groups[index][m], cap, index, ())

    def solve(self, m: int, own: tuple[int, ...], cap: float, index: int, placed: Sequence[int]) -> float:
        """The largest ``x <= cap`` that machine ``m`` grants each VM in ``own`` under water-filling.

        Args:
            m: The machine.
            own: The VMs of job ``index`` on ``m``, or one idle VM (``index = -2``: its PC).
            cap: The most ``x`` may be.
            index: The job asking (its own VMs' use is ``x``), or -2.
            placed: Idle VMs of ``m`` counted as demanding their ``max`` (tasks of a new job
                already chosen); every other VM demands its current use.

        Returns:
            The largest ``x`` granted, at the current rates.
        """
        if self._mins:
            return self._solve_general(m, own, cap, index, placed)
        # lo = 0 everywhere: total(x) = k x + sum_w min(hi_w, x * share_w / s*), s* the
        # smallest share among own; solve total(x) = 1 over the sorted breakpoints.
        V = self.vms
        base = m * V
        share, occ, rate = self.share, self.vm_job, self.rate
        k = len(own)
        smin = share[own[0]] if k == 1 else min(share[u] for u in own)
        slope = float(k)
        points = []
        for w in range(base, base + V):
            j = occ[w]
            if j < 0:
                if not placed or w not in placed or w in own:
                    continue  # idle, no guarantee: takes nothing
                hi = self.vm_max[w]
            elif j == index:
                continue
            else:
                hi = rate[j]
                if hi <= 0.0:
                    continue
            c = share[w] / smin
            slope += c
            points.append((hi / c, hi, c))
        return breakpoint_level(points, slope, k, cap)

    def _solve_general(self, m: int, own: tuple[int, ...], cap: float, index: int, placed: Sequence[int]) -> float:
        """:meth:`solve` with guarantees (``min > 0``): piecewise-linear search over breakpoints."""
        V = self.vms
        share, lo_of, vmax, occ, rate = self.share, self.vm_min, self.vm_max, self.vm_job, self.rate
        mine = [(share[u], lo_of[u]) for u in own]
        others = []
        for w in range(m * V, (m + 1) * V):
            if w in own:
                continue
            j = occ[w]
            lo = lo_of[w]
            if j >= 0 and j != index:
                hi = rate[j] if rate[j] > lo else lo
            elif placed and w in placed:
                hi = vmax[w]
            else:
                hi = lo
            others.append((share[w], lo, hi))

        def total(x: float) -> float:
            lam = 0.0
            used = 0.0
            for s, lo in mine:
                if x > lo:
                    if x / s > lam:
                        lam = x / s
                    used += x
                else:
                    used += lo
            for s, lo, hi in others:
                a = lam * s
                used += hi if a > hi else (lo if a < lo else a)
            return used

        if total(cap) <= 1.0:
            return cap
        sigmas = {s for s, _ in mine}
        points = {0.0, cap}
        points.update(lo for _, lo in mine if lo < cap)
        for sigma in sigmas:
            for s, lo, hi in others:
                for bound in (lo, hi):
                    x = sigma * bound / s
                    if 0.0 < x < cap:
                        points.add(x)
        ordered = sorted(points)
        previous = 0.0
        for point in ordered[1:]:
            value = total(point)
            if value > 1.0:
                # Linear on (previous, point]; a jump just after previous (a guarantee of its
                # own reached) leaves previous as the answer.
                mid = previous + 0.5 * (point - previous)
                if not previous < mid < point:
                    return previous
                slope = (value - total(mid)) / (point - mid)
                if slope <= 0.0:
                    return previous
                x = point - (value - 1.0) / slope
                return previous if x <= previous else x
            previous = point
        return cap  # unreachable: total(cap) > 1
