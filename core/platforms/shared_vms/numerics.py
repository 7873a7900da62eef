"""Numerical kernels of the shared-VM model: water-filling one machine, and a sparse linear solve.

Both work on plain Python floats (no BLAS), so results are bit-identical on every machine and
independent of the numerical libraries installed.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["waterfill", "solve_sparse", "breakpoint_level", "granted_level"]


def waterfill(
    shares: Sequence[float], lows: Sequence[float], highs: Sequence[float], capacity: float = 1.0
) -> list[float]:
    """Share-weighted max-min fair split of ``capacity``: ``clamp(lam * share, low, high)`` each.

    ``lam`` is the level at which the allocations sum to ``capacity``; when even the highs fit,
    every VM gets its high.

    Args:
        shares: Positive share of each VM.
        lows: Each VM's guarantee; their sum must not exceed ``capacity``.
        highs: Each VM's demand or cap, at least its low.
        capacity: What is split (a machine's CPU, 1).

    Returns:
        Each VM's allocation, in the order given.
    """
    if sum(highs) <= capacity:
        return list(highs)
    # Breakpoints of the piecewise-linear total as a function of lam.
    points = sorted({lo / s for s, lo in zip(shares, lows)} | {hi / s for s, hi in zip(shares, highs)})
    previous = 0.0
    for point in points:
        total = sum(min(hi, max(lo, point * s)) for s, lo, hi in zip(shares, lows, highs))
        if total >= capacity:
            # Linear on [previous, point]: the VMs strictly between their bounds move with lam.
            mid = 0.5 * (previous + point)
            slope = sum(s for s, lo, hi in zip(shares, lows, highs) if lo < mid * s < hi)
            lam = point - (total - capacity) / slope if slope > 0 else point
            return [min(hi, max(lo, lam * s)) for s, lo, hi in zip(shares, lows, highs)]
        previous = point
    return list(highs)  # unreachable when sum(highs) > capacity


def solve_sparse(rows: list[dict[int, float]], rhs: list[float], fallback: Sequence[float]) -> list[float]:
    """Solve the sparse system ``rows[i] . x = rhs[i]`` by Gaussian elimination.

    Columns are eliminated in order, each with the row of largest magnitude as pivot (ties:
    the lower row), so the result does not depend on dict or set iteration order.

    Args:
        rows: One dict per equation, column index to coefficient (not modified).
        rhs: The right-hand sides.
        fallback: The value of each unknown left free by a singular system (a column without
            a usable pivot).

    Returns:
        The solution, one float per unknown.
    """
    n = len(rhs)
    rows = [dict(row) for row in rows]
    b = list(rhs)
    scale = max((abs(v) for row in rows for v in row.values()), default=1.0)
    tiny = 1e-12 * scale
    holders: list[set[int]] = [set() for _ in range(n)]  # column -> rows with an entry there
    for i, row in enumerate(rows):
        for j in row:
            holders[j].add(i)
    done: set[int] = set()
    pivots: list[tuple[int, int]] = []  # (column, row)
    for col in range(n):
        candidates = sorted(i for i in holders[col] if i not in done)
        if not candidates:
            continue
        pivot = max(candidates, key=lambda i: (abs(rows[i][col]), -i))
        a = rows[pivot][col]
        if abs(a) <= tiny:
            continue  # free unknown
        done.add(pivot)
        pivots.append((col, pivot))
        prow, pb = rows[pivot], b[pivot]
        for i in candidates:
            if i == pivot:
                continue
            row = rows[i]
            f = row[col] / a
            for j, v in prow.items():
                if j == col:
                    continue
                if j in row:
                    row[j] -= f * v
                else:
                    row[j] = -f * v
                    holders[j].add(i)
            del row[col]
            holders[col].discard(i)
            b[i] -= f * pb
    x = list(map(float, fallback))
    for col, pivot in reversed(pivots):
        row = rows[pivot]
        total = b[pivot]
        for j, v in row.items():
            if j != col:
                total -= v * x[j]
        x[col] = total / row[col]
    return x


def breakpoint_level(points: list[tuple[float, float, float]], slope: float, k: int, cap: float) -> float:
    """The ``x <= cap`` at which one machine's total use ``k x + sum min(hi, c x)`` reaches 1.

    Args:
        points: ``(hi / c, hi, c)`` of every other task that can take capacity (sorted here).
        slope: ``k`` plus the sum of every ``c``: the total's slope before any breakpoint.
        k: The asking job's tasks on the machine.
        cap: The most ``x`` may be.
    """
    if not points:
        x = 1.0 / k
        return cap if cap < x else x
    if len(points) > 1:
        points.sort()
    const = 0.0
    for xb, hi, c in points:
        x = (1.0 - const) / slope
        if x <= xb:
            return cap if cap < x else x
        const += hi
        slope -= c
    x = (1.0 - const) / slope
    return cap if cap < x else x


def granted_level(
    mine: Sequence[tuple[float, float]], others: Sequence[tuple[float, float, float]], cap: float
) -> float:
    """The largest ``x <= cap`` that one machine's water-filling grants each of a job's VMs.

    The job's VMs demand ``x``; the machine gives VM w ``clamp(lam * share_w, lo_w, hi_w)`` and
    the job's own VMs ``max(lo, x)``, with the level ``lam`` the largest ``x / share`` among the
    job's VMs above their guarantee. The total is piecewise linear in ``x``; the answer is
    where it reaches 1, found over its breakpoints.

    Args:
        mine: ``(share, lo)`` of each of the job's VMs on the machine.
        others: ``(share, lo, hi)`` of every other VM (``hi``: its demand, at least ``lo``).
        cap: The most ``x`` may be.
    """

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
