"""The fixed-point methods of the shared-VM allocation (``allocation: fixed_point``), one function each.

Each works on a :class:`~.bookkeeping.Bookkeeping` (the running jobs, their rates and the
queue of jobs to re-examine) and changes its rates in place; :mod:`.allocator` says in which
order a settling tries them (:data:`~.allocator.SETTLE_PLAN`), and its docstring gives the
model they solve. A job's *best response* is the value of its binding machine's
water-filling at the others' current rates (:meth:`~.bookkeeping.Bookkeeping.responder`);
a *fixed point* has every job at its best response.

* :func:`best_responses`: Gauss-Seidel best responses over the queued jobs (optionally
  under-relaxed where they reverse);
* :func:`newton`: semi-smooth Newton on the piecewise-linear best-response equations of
  some jobs, the others held; :func:`linear_form` gives one equation;
* :func:`levenberg_marquardt`: Levenberg-Marquardt on the squared residual of all jobs;
* :func:`brackets`: the Jacobi brackets that every fixed point lies between;
  :func:`restart` sets the rates a solve starts from;
* :func:`fallback`: a feasible allocation when every method failed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from .bookkeeping import Bookkeeping
from .numerics import solve_sparse

__all__ = [
    "RATE_TOLERANCE",
    "MAX_EVALUATIONS_PER_JOB",
    "REVERSALS_BEFORE_SWITCH",
    "NEWTON_ACCEPT",
    "MAX_NEWTON_STEPS",
    "MAX_LM_STEPS",
    "BRACKET_ITERATIONS",
    "MIN_RATE",
    "best_responses",
    "newton",
    "linear_form",
    "levenberg_marquardt",
    "brackets",
    "restart",
    "fallback",
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


def best_responses(state: Bookkeeping, reversed_: set[int], relaxed: bool = False) -> bool:
    """Gauss-Seidel best responses over the queued jobs.

    Args:
        state: The allocation; its queued jobs are examined, its rates and caches updated.
        reversed_: Collects the jobs whose move reversed direction (for a later Newton solve).
        relaxed: A job whose move reverses its previous one moves only part of the way
            (the fraction halves at each reversal and grows back by half at each move in
            the same direction); such a job is examined again.

    Returns:
        Whether the queue emptied (every job at its best response); False when some job
        reversed :data:`REVERSALS_BEFORE_SWITCH` times (not ``relaxed``) or the
        evaluations passed their allowance.
    """
    pending = state.pending
    queued, pairs_of, on, rate, cap_of = state.queued, state.pairs, state.on, state.rate, state.cap
    jobs, changed, version = state.jobs, state.changed, state.version
    solve = state.responder()
    prune = not state.mins
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
                x = pair.x
                if x is None or x < 0.0:
                    x = pair.x = solve(pair.machine, pair.k, pair.smin, cap, index)
                if x < best:
                    best = x
            old = rate[index]
            step = best - old
            if -RATE_TOLERANCE <= step <= RATE_TOLERANCE:
                continue
            up = step > 0.0
            part = 1.0
            if rising.get(index, up) != up:
                reversed_.add(index)
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
            state.usage += step * jobs[index].size
            changed.add(index)
            low = old if up else new
            for pair in pairs:
                m = pair.machine
                version[m] += 1
                largest = pair.smax
                for j, theirs in on[m].items():
                    if j == index:
                        continue
                    x = theirs.x
                    if x is None:
                        continue  # stale already, so queued
                    if x < 0.0:
                        # A lower bound: still one if this job's rate fell; else look again.
                        if up:
                            theirs.x = None
                            if j not in queued:
                                queued.add(j)
                                pending.append(j)
                        continue
                    # j's best response on m sees this job's use only while it is below
                    # j's level there: x_j * share / (j's smallest share on m).
                    if prune and low >= x * largest / theirs.smin:
                        continue
                    if prune and not up and rate[j] < x - RATE_TOLERANCE:
                        # This job's rate fell, so j's best response on m can only rise;
                        # m does not bind j, so j's rate stands: keep x as a lower bound.
                        theirs.x = -x
                        continue
                    theirs.x = None
                    if j not in queued:
                        queued.add(j)
                        pending.append(j)
        return True
    finally:
        state.evaluations += evaluations


def newton(state: Bookkeeping, order: list[int]) -> bool:
    """Solve the best-response fixed point of the jobs ``order`` by semi-smooth Newton.

    Each job's best response is piecewise linear in its neighbours' rates: on its binding
    machine (the one giving the smallest value) it is ``x`` with ``slope * x + sum of the
    rates of the neighbours saturated below its level = 1 - constants`` (or a constant: its
    cap, or a guarantee). Newton solves that linear system (the other jobs' rates held)
    and re-reads the pieces at the new point until every job in ``order`` is at its best
    response. Where the pieces leave rates undetermined (a continuum of fair points),
    those jobs keep their current rates.

    Args:
        state: The allocation; the rates of ``order`` are set, the others read.
        order: The jobs solved for, by index, in increasing order.

    Returns:
        Whether every job ended at its best response; if not, every job is queued for
        best responses again.
    """
    n = len(order)
    where = {index: i for i, index in enumerate(order)}
    rate, cap_of, groups_of = state.rate, state.cap, state.groups
    caps = [cap_of[index] for index in order]

    def assign(values: Sequence[float]) -> None:
        for index, value, cap in zip(order, values, caps):
            rate[index] = cap if value > cap else (MIN_RATE if value < MIN_RATE else value)

    accepted: list[float] | None = None  # the last point whose residual went down
    direction: list[float] = []
    fraction = 1.0
    best_norm = math.inf
    solve = state.responder()
    form, pairs_of, on = linear_form, state.pairs, state.on
    prune = not state.mins
    previous = [rate[index] for index in order]
    converged = False
    for _ in range(MAX_NEWTON_STEPS):
        state.newton_steps += 1
        matrix: list[dict[int, float]] = []
        rhs = [0.0] * n
        worst = 0.0
        norm = 0.0
        for i, index in enumerate(order):
            cap = caps[i]
            binding = -1
            x = math.inf
            for pair in pairs_of[index]:  # by machine: ties go to the lower machine
                value = pair.x
                if value is None or value < 0.0:
                    value = pair.x = solve(pair.machine, pair.k, pair.smin, cap, index)
                if value < x:
                    x, binding = value, pair.machine
            gap = abs(x - rate[index])
            norm += gap * gap
            if gap > worst:
                worst = gap
            slope, constant, saturated = form(state, binding, groups_of[index][binding], cap, index, x)
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
                largest = pair.smax
                for j, theirs in on[pair.machine].items():
                    if j == other or j not in where:
                        continue
                    cached = theirs.x
                    if cached is not None and (cached < 0.0 or not prune or low < cached * largest / theirs.smin):
                        theirs.x = None
    state.touch_all(order)
    whole = n == len(state.jobs)
    if whole or not converged:
        state.pending.clear()  # every job is settled, or is queued again just below
        state.queued.clear()
    if converged:
        if whole:
            return True
        # Jobs held fixed see new rates on the machines they share with the solved ones.
        for index in order:
            for m in groups_of[index]:
                for j, theirs in on[m].items():
                    if j not in where:
                        theirs.x = None
                        if j not in state.queued:
                            state.queued.add(j)
                            state.pending.append(j)
        return not state.pending
    for index in sorted(state.jobs):
        for pair in pairs_of[index]:
            pair.x = None
        state.queued.add(index)
        state.pending.append(index)
    return False


def linear_form(
    state: Bookkeeping, m: int, own: tuple[int, ...], cap: float, index: int, x: float
) -> tuple[float, float, list[int]]:
    """The local linear form of job ``index``'s best response ``x`` on machine ``m``.

    Returns ``(slope, constant, saturated)`` with ``slope * x + sum(rate[j] for j in
    saturated) = 1 - constant`` near the current rates, or ``slope = 0`` when ``x`` does
    not move with them (the job's cap, or one of its VMs' guarantee).
    """
    if x >= cap:
        return 0.0, 0.0, []
    share, lo_of, occ, rate = state.share, state.vm_min, state.vm_job, state.rate
    growing = [u for u in own if x > lo_of[u]]
    if not growing or any(abs(x - lo_of[u]) <= 1e-15 for u in own):
        return 0.0, 0.0, []
    sigma = min(share[u] for u in growing)
    lam = x / sigma
    slope = float(len(growing))
    constant = sum(lo_of[u] for u in own if u not in growing)
    saturated = []
    for w in range(m * state.vms, (m + 1) * state.vms):
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


def brackets(state: Bookkeeping) -> tuple[dict[int, float], dict[int, float]]:
    """The Jacobi brackets of the fixed points: ``low = R(high)``, ``high = R(low)`` from
    ``low = 0``, where R gives every job its best response to the others' rates. R is
    antitone, so ``low`` rises and ``high`` falls, and every fixed point lies between them
    (:data:`BRACKET_ITERATIONS` rounds). The rates are left as they were."""
    rate, cap_of, pairs_of = state.rate, state.cap, state.pairs
    solve = state.responder()
    saved = dict(rate)

    def respond(rates: dict[int, float]) -> dict[int, float]:
        rate.update(rates)
        out = {}
        for index, pairs in pairs_of.items():
            cap = cap_of[index]
            out[index] = min(solve(p.machine, p.k, p.smin, cap, index) for p in pairs)
        return out

    low = {index: 0.0 for index in rate}
    high = respond(low)
    for _ in range(BRACKET_ITERATIONS):
        low = respond(high)
        high = respond(low)
    rate.update(saved)
    return low, high


def levenberg_marquardt(state: Bookkeeping) -> bool:
    """Minimise the squared best-response residual over all running jobs (Levenberg-Marquardt).

    The residual of job j is ``best response(r) - r_j``; its Jacobian row is the local
    linear form of the best response on the binding machine (as in :func:`newton`) minus
    the identity. A step solves ``(J'J + mu diag(J'J)) d = -J'F`` (sparse, plain Python
    floats) and is kept only if the residual falls; ``mu`` shrinks after a kept step and
    grows after a rejected one. Slower than Newton, but it does not stall at the kinks
    where the binding machine changes as easily.

    Returns:
        Whether every job ended at its best response; if not, every job is queued for
        best responses again.
    """
    order = sorted(state.jobs)
    n = len(order)
    where = {index: i for i, index in enumerate(order)}
    rate, cap_of, groups_of, pairs_of = state.rate, state.cap, state.groups, state.pairs
    solve = state.responder()
    form = linear_form
    caps = [cap_of[index] for index in order]

    def evaluate() -> tuple[list[float], list[dict[int, float]]]:
        residual, rows = [], []
        for i, index in enumerate(order):
            cap = caps[i]
            x, binding = math.inf, -1
            for pair in pairs_of[index]:
                value = pair.x = solve(pair.machine, pair.k, pair.smin, cap, index)
                if value < x:
                    x, binding = value, pair.machine
            residual.append(x - rate[index])
            row = {i: -1.0}
            slope, _, saturated = form(state, binding, groups_of[index][binding], cap, index, x)
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
        state.newton_steps += 1
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
    state.touch_all(order)
    state.pending.clear()
    state.queued.clear()
    if converged:
        return True  # the pair caches were filled at these rates by the last evaluation
    for index in order:
        for pair in pairs_of[index]:
            pair.x = None
        state.queued.add(index)
        state.pending.append(index)
    return False


def restart(state: Bookkeeping, rates: dict[int, float]) -> None:
    """Set every running job's rate (for a Newton solve from there); every cache is stale."""
    for index, value in rates.items():
        state.rate[index] = value if value > MIN_RATE else MIN_RATE
        for pair in state.pairs[index]:
            pair.x = None
    state.touch_all(rates)


def fallback(state: Bookkeeping) -> None:
    """A feasible allocation when no fixed point was found: sustainable rates, spare CPU filled.

    ``r = min(r, best response(r))`` makes every job's rate sustainable (its best response
    can only rise when others' rates fall), hence every machine within capacity; then each
    job in index order grows into the spare capacity of its machines, up to its best
    response, never squeezing another job. Every job keeps a rate it can sustain and no
    job could grow on spare capacity alone; share-fairness is not guaranteed.
    """
    state.fallbacks += 1
    order = sorted(state.jobs)
    rate, cap_of, groups_of, solve = state.rate, state.cap, state.groups, state.solve

    def best_response(index: int) -> float:
        cap = cap_of[index]
        return min(solve(m, vms, cap, index, ()) for m, vms in groups_of[index].items())

    responses = {index: best_response(index) for index in order}
    for index in order:
        value = min(rate[index], responses[index])
        rate[index] = value if value > MIN_RATE else MIN_RATE
    usage = {m: state.machine_usage(m) for m in range(state.machines)}
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
    state.touch_all(order)
    state.pending.clear()
    state.queued.clear()
    br = state.responder()
    for index in order:  # fresh caches at the final rates (no job stays queued)
        cap = cap_of[index]
        for pair in state.pairs[index]:
            pair.x = br(pair.machine, pair.k, pair.smin, cap, index)
