"""Platform ``shared_vms``: P machines, each hosting V VMs that share its CPU (paper 001).

Every VM carries three sharing parameters (paper 001, section II-A): ``min``, the capacity it
is guaranteed ("cannot be used by collocated VMs even when the VM is inactive"); ``max``, the
most it may use "even when there is free capacity"; and ``share``, which "apportions free
capacity among competing VMs". The parameters are given per VM position and are the same on
every machine (presets ``homogeneous`` = shares 1,1,1,1 and ``heterogeneous`` = 1,1,2,4,
section IV-C). One task per VM; a job's tasks may land on any VMs, several on one machine.

Progress model (DESIGN 4.2)
---------------------------
A machine's capacity is 1. A task is compute intensive: it would use its machine's whole CPU
(section IV-C), but tightly coupled tasks progress together, so every task of a job runs at
the job's rate ``r``, the rate of its slowest task (the ripple effect), and uses exactly ``r``
of its machine; the rest of what its VM could get is left to its neighbours. A job that would
take ``runtime`` seconds "in isolation (i.e. using the full CPU of the PM)" therefore takes
``runtime / r`` seconds at a constant rate r ("the execution time is assumed to increase
proportionally to the allotted share of the CPU given to a task", section IV-B): its progress
rate, in work-seconds per second, is ``r``. A VM's allocation is ``max(min, r)`` while it is
active (its guarantee is held even when its task cannot use it) and ``min`` while idle.

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
simulator reached. Here a settling (:meth:`SharedVms._settle`) starts from the previous
event's rates, the new job first, and runs the methods of :data:`SETTLE_PLAN` until one ends
with every job at its best response: Gauss-Seidel best responses; if they cycle, semi-smooth
Newton on the piecewise-linear best-response equations of the jobs that cycled (others held),
then best responses again; Newton over all running jobs; best responses under-relaxed where
they reverse; Levenberg-Marquardt on the squared residual; Newton and Levenberg-Marquardt
restarted from the Jacobi brackets of the fixed points. Where the equations leave rates
undetermined, jobs keep their current rates. The result is a deterministic function of the
event history, with hysteresis like a real proportional-share scheduler.

Should every method fail (none did in the paper's runs: 10,000 CTC-SP2 or LPC-EGEE jobs with
either share preset and any selector; nor in 30,000 random small states),
:meth:`SharedVms._fallback` sets a feasible allocation in which every job runs at a rate it can
sustain and no job could grow on spare capacity alone, but share-fairness is not guaranteed;
it is counted in the run metric ``allocation_fallbacks``, never silent
(``strict_allocation: true`` raises :class:`AllocationError` instead).

Computation: an event (a start or a release) marks the machines it touches; the jobs on them
are re-evaluated; a job whose rate changes by more than :data:`RATE_TOLERANCE` queues those
neighbours whose best response can see the change (one below its level on a shared machine;
a neighbour whose best response can only rise on a machine that does not bind it keeps its
rate). A job's best response is cached per machine, and only the machines where something
changed are re-computed. Work is proportional to how far the change ripples, never to the
cluster, and bounded (:data:`MAX_EVALUATIONS_PER_JOB`, :data:`MAX_NEWTON_STEPS`). Rates are
settled lazily, when the engine asks for rate changes or a policy asks for a PC, FC or
utilisation; finish times are exact for the settled rates. Newton's linear systems are
solved with plain Python floats (no BLAS), so a run is bit-identical on every machine.

Metrics of the paper (section V): ``equilibrium_capacity`` (EC) is a VM's allocation when
every VM of its machine contends (water-filling with every demand at ``max``; figure 2: 3/7
and 4/7); ``potential_capacity`` (PC) is what an idle VM would get now if its new task
contended, its neighbours keeping their current use (squeezed down to their fair share if
they use more); ``free_capacity`` (FC) is 1 minus the machine's current use. The time-weighted
statistics (utilisation U, efficiency eta over occupied machines, utilisation per occupancy
level) are integrated between events by :meth:`SharedVms.advance`.
"""

from __future__ import annotations

import math
from collections import deque
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

import numpy as np

from ..errors import SpecError, TiersweepError
from ..params import Param, boolean, positive_int
from .base import BasePlatform

if TYPE_CHECKING:
    from ..jobs import Job

__all__ = [
    "SharedVms",
    "SHARED_VMS_PARAMS",
    "AllocationError",
    "SHARE_PRESETS",
    "RATE_TOLERANCE",
    "MAX_EVALUATIONS_PER_JOB",
    "REVERSALS_BEFORE_SWITCH",
    "MAX_NEWTON_STEPS",
    "MAX_LM_STEPS",
    "BRACKET_ITERATIONS",
    "SETTLE_PLAN",
    "OCCUPANCY_BINS",
    "waterfill",
]

#: Shares of the VMs on each machine by preset name (paper 001, section IV-C).
SHARE_PRESETS: dict[str, tuple[float, ...] | None] = {
    "homogeneous": None,  # every VM share 1, whatever V
    "heterogeneous": (1.0, 1.0, 2.0, 4.0),  # defined for V = 4 only
}

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

#: The methods a settling tries in turn before the fallback (see :meth:`SharedVms._settle`).
SETTLE_PLAN = (
    "plain",
    "newton-cycling",
    "plain",
    "newton",
    "plain",
    "relaxed",
    "lm",
    "newton-low",
    "newton-high",
    "lm-mid",
)

#: Levenberg-Marquardt steps per solve (accepted or not).
MAX_LM_STEPS = 80

#: Jacobi rounds computing the brackets that the last Newton solves start from.
BRACKET_ITERATIONS = 30

# Fields of a (job, machine) pair record.
_SMIN, _SMAX, _K, _X, _MACHINE = range(5)

#: Floor of a rate a Newton step may propose (rates are positive).
MIN_RATE = 1e-9

#: Occupancy ratio bins of the flat utilisation-versus-occupancy metrics: bin ``b`` (10..100)
#: holds the instants when ``(b - 10)% < occupied machines / P <= b%``.
OCCUPANCY_BINS = tuple(range(10, 101, 10))


class AllocationError(TiersweepError, RuntimeError):
    """No fixed point of the CPU allocation was found within the work bound (``strict_allocation``)."""


def waterfill(shares: Sequence[float], lows: Sequence[float], highs: Sequence[float], capacity: float = 1.0) -> list[float]:
    """Share-weighted max-min fair split of ``capacity``: ``clamp(lam * share, low, high)`` each.

    ``lam`` is the level at which the allocations sum to ``capacity``; when even the highs fit,
    every VM gets its high. Requires ``sum(lows) <= capacity`` and ``low <= high``.
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


def _solve_sparse(rows: list[dict[int, float]], rhs: list[float], fallback: Sequence[float]) -> list[float]:
    """Solve the sparse system ``rows[i] . x = rhs[i]`` by Gaussian elimination.

    Columns are eliminated in order, each with the row of largest magnitude as pivot (ties:
    the lower row). A column without a usable pivot (a singular system) leaves its unknown
    free: it takes its ``fallback`` value. Plain Python floats only, so the result is the same
    on every machine.
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


def _per_vm(key: str, value: Any, vms: int, low: float, high: float, *, low_open: bool, high_open: bool) -> list[float]:
    """A number for every VM position, or a list of ``vms`` numbers, each within bounds."""
    values = [value] * vms if isinstance(value, (int, float)) and not isinstance(value, bool) else value
    if not isinstance(values, (list, tuple)) or len(values) != vms:
        raise SpecError(f"platform.{key}: expected a number or a list of {vms} numbers (one per VM of a machine), got {value!r}")
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise SpecError(f"platform.{key}: expected numbers, got {value!r}")
        if (v <= low if low_open else v < low) or (v >= high if high_open else v > high):
            lo_b, hi_b = "(" if low_open else "[", ")" if high_open else "]"
            raise SpecError(f"platform.{key}: every value must be in {lo_b}{low:g}, {high:g}{hi_b}, got {value!r}")
        out.append(float(v))
    return out


def _number_or_list(low: float, high: float, low_open: bool) -> Callable[[Any], float | list[float]]:
    """A number in the interval, or a list of such numbers (its length is checked by the platform)."""

    def inside(v: Any) -> bool:
        return (
            isinstance(v, (int, float))
            and not isinstance(v, bool)
            and (low < v if low_open else low <= v)
            and v <= high
        )

    interval = f"{'(' if low_open else '['}{low:g}, {high:g}]"

    def check(value: Any) -> float | list[float]:
        if inside(value):
            return float(value)
        if isinstance(value, (list, tuple)) and value and all(inside(v) for v in value):
            return [float(v) for v in value]
        raise ValueError(f"expected a number in {interval} or a list of them (one per VM of a machine), got {value!r}")

    return check


def _shares(value: Any) -> str | list[float]:
    if isinstance(value, str) and value in SHARE_PRESETS:
        return value
    if (
        isinstance(value, (list, tuple))
        and value
        and all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0 for v in value)
    ):
        return [float(v) for v in value]
    raise ValueError(f"expected {' or '.join(SHARE_PRESETS)} or a list of positive shares (one per VM of a machine), got {value!r}")


#: The spec keys of ``platform: {kind: shared_vms}`` (registered in :mod:`tiersweep.core.platforms`).
SHARED_VMS_PARAMS: dict[str, Param] = {
    "machines": Param(positive_int, default=64, doc="physical machines P, each of CPU capacity 1 (paper 001: 64)"),
    "vms": Param(positive_int, default=4, doc="VMs per machine V, one task each (paper 001: 4)"),
    "shares": Param(
        _shares,
        default="homogeneous",
        doc="VM shares by position on every machine: homogeneous (all 1), heterogeneous (1,1,2,4) or a list",
    ),
    "max": Param(_number_or_list(0.0, 1.0, True), default=1.0, doc="VM caps in (0, 1]: one for all, or a list by position"),
    "strict_allocation": Param(
        boolean,
        default=False,
        doc="raise if a CPU allocation settling finds no fixed point (default: a feasible fallback, counted)",
    ),
    "min": Param(
        _number_or_list(0.0, 1.0, False),
        default=0.0,
        doc="VM guarantees in [0, 1), held even when idle: one for all, or a list by position",
    ),
}


class SharedVms(BasePlatform):
    """``machines`` machines with ``vms`` shared VMs each.

    VM ``v`` is VM ``v % vms`` of machine ``v // vms``; a started job's ``nodes`` are its VMs.

    Args:
        machines: Number of physical machines P (each of CPU capacity 1).
        vms: VMs per machine V.
        shares: ``"homogeneous"`` (all 1), ``"heterogeneous"`` (1, 1, 2, 4; V = 4) or a list of
            V positive shares, by VM position.
        max: The VMs' caps, one number for all or a list by position, each in (0, 1].
        min: The VMs' guarantees, one number for all or a list by position, each in [0, 1);
            a machine's guarantees must leave every VM something (the others' sum below 1).
        strict_allocation: Raise :class:`AllocationError` when a settling finds no fixed point,
            instead of the counted fallback allocation.
        seed: Unused (the model has no randomness); accepted like every platform.
    """

    EXTRA_METRICS = (
        "efficiency",
        "allocation_fallbacks",
        "occupancy",
        "mean_xf_c",
        "median_xf_c",
        "p90_xf_c",
        *(f"util_at_occ_{b}" for b in OCCUPANCY_BINS),
        *(f"time_at_occ_{b}" for b in OCCUPANCY_BINS),
    )
    EXTRA_JOB_COLUMNS = ("xf_c", "machines")
    tracks_time = True

    def __init__(
        self,
        machines: int = 64,
        vms: int = 4,
        *,
        shares: str | Sequence[float] = "homogeneous",
        max: float | Sequence[float] = 1.0,  # noqa: A002 - the paper's name
        min: float | Sequence[float] = 0.0,  # noqa: A002
        strict_allocation: bool = False,
        seed: int = 0,
    ) -> None:
        if isinstance(machines, bool) or not isinstance(machines, int) or machines < 1:
            raise SpecError(f"platform.machines: expected a positive integer, got {machines!r}")
        if isinstance(vms, bool) or not isinstance(vms, int) or vms < 1:
            raise SpecError(f"platform.vms: expected a positive integer, got {vms!r}")
        if isinstance(shares, str):
            if shares not in SHARE_PRESETS:
                raise SpecError(f"platform.shares: unknown preset {shares!r}; valid choices: {', '.join(SHARE_PRESETS)} or a list")
            preset = SHARE_PRESETS[shares]
            if preset is None:
                share_list = [1.0] * vms
            elif len(preset) != vms:
                raise SpecError(
                    f"platform.shares: the {shares} preset is defined for {len(preset)} VMs per machine, "
                    f"not {vms}; give a list of {vms} shares"
                )
            else:
                share_list = list(preset)
        else:
            share_list = _per_vm("shares", shares, vms, 0.0, math.inf, low_open=True, high_open=True)
        max_list = _per_vm("max", max, vms, 0.0, 1.0, low_open=True, high_open=False)
        min_list = _per_vm("min", min, vms, 0.0, 1.0, low_open=False, high_open=True)
        total_min = sum(min_list)
        for i, (lo, hi) in enumerate(zip(min_list, max_list)):
            if lo > hi:
                raise SpecError(f"platform.min: VM {i} has min {lo:g} above its max {hi:g}")
            if total_min - lo >= 1.0:
                raise SpecError(
                    f"platform.min: the other VMs' guarantees ({total_min - lo:g}) leave VM {i} of each machine no capacity"
                )
        self.machines = machines
        self.vms = vms
        self.strict_allocation = bool(strict_allocation)
        self.capacity = machines  # utilisation denominator: physical machines
        self.tiers = 1
        self.position_shares = tuple(share_list)
        self.position_max = tuple(max_list)
        self.position_min = tuple(min_list)
        n = machines * vms
        #: Share, guarantee and cap of each VM (read-only for callers).
        self.share = share_list * machines
        self.vm_min = min_list * machines
        self.vm_max = max_list * machines
        self._mins = total_min > 0.0
        ec = waterfill(share_list, min_list, max_list)
        #: Equilibrium capacity of each VM (static: it depends on the sharing parameters only).
        self.ec = ec * machines
        #: Job index per VM, -1 when idle (read-only for callers).
        self.vm_job = [-1] * n
        self._idle = set(range(n))
        self._active = [0] * machines  # active VMs per machine
        self._occupied = 0  # machines with an active VM
        self._slots = [range(m * vms, (m + 1) * vms) for m in range(machines)]  # VMs of each machine
        self._version = [0] * machines  # bumped whenever a machine's use changes (PC cache)
        self._pc_cache: dict[int, tuple[int, float]] = {}
        # Running jobs, by job index.
        self._jobs: dict[int, Job] = {}
        self._rate: dict[int, float] = {}
        self._cap: dict[int, float] = {}
        self._groups: dict[int, dict[int, tuple[int, ...]]] = {}  # machine -> its VMs, by machine
        # One record per (job, machine) pair, reachable from both: [smallest share, largest
        # share, VMs there, cached best response there (None: stale, and the job is queued;
        # negative: stale, and minus a lower bound of it, the job needing no new look because
        # that machine does not bind it), machine]. See the _SMIN .. _MACHINE indexes.
        self._pairs: dict[int, list[list]] = {}  # job -> its pairs, by machine
        self._on: list[dict[int, list]] = [{} for _ in range(machines)]  # machine -> job -> pair
        self._pending: deque[int] = deque()
        self._reversed: set[int] = set()  # jobs whose best responses reversed in this settling
        self._queued: set[int] = set()
        self._reported: dict[int, float] = {}
        self._changed: set[int] = set()
        self._usage = 0.0  # CPU in use over the cluster (sum of task rates)
        self._placed_machines: dict[int, int] = {}  # job index -> machines of its last placement
        #: Best-response evaluations and Newton steps done so far (for profiling and tests).
        self.evaluations = 0
        self.newton_steps = 0
        #: Settlings that ended in :meth:`_fallback` (no fixed point found).
        self.allocation_fallbacks = 0
        # Time-weighted statistics.
        self._last_time = math.nan
        self._first_time = math.nan
        self._busy_integral = 0.0
        self._occupied_integral = 0.0
        self._occ_time = [0.0] * (machines + 1)
        self._occ_busy = [0.0] * (machines + 1)

    @classmethod
    def job_capacity(cls, params: Mapping[str, Any]) -> int | None:
        return int(params.get("machines", 64)) * int(params.get("vms", 4))

    # -- queries -----------------------------------------------------------------------------
    def free_count(self, tier: int = 0) -> int:
        return len(self._idle) if tier == 0 else 0

    def idle_vms(self) -> set[int]:
        """The idle VMs (read-only for callers)."""
        return self._idle

    def machine_of(self, vm: int) -> int:
        """The machine hosting ``vm``."""
        return vm // self.vms

    def active_count(self, machine: int) -> int:
        """Active VMs (VMs running a task) on ``machine``."""
        return self._active[machine]

    def job_rate(self, job_index: int) -> float:
        """The settled rate of running job ``job_index``."""
        self._settle()
        return self._rate[job_index]

    def machine_usage(self, machine: int) -> float:
        """CPU used on ``machine`` now: the sum of its tasks' rates."""
        self._settle()
        return self._machine_usage(machine)

    def _machine_usage(self, machine: int) -> float:
        rate, occ = self._rate, self.vm_job
        used = 0.0
        for w in range(machine * self.vms, (machine + 1) * self.vms):
            j = occ[w]
            if j >= 0:
                used += rate[j]
        return used

    def free_capacity(self, machine: int) -> float:
        """FC: the capacity of ``machine`` its tasks leave unused now (paper 001, section II-A)."""
        return 1.0 - self.machine_usage(machine)

    def allocation(self, vm: int) -> float:
        """The CPU ``vm`` is allocated now: ``max(min, its job's rate)`` if active, else ``min``."""
        self._settle()
        j = self.vm_job[vm]
        lo = self.vm_min[vm]
        return lo if j < 0 else (lo if lo > self._rate[j] else self._rate[j])

    def utilization(self) -> float:
        """Cluster utilisation now: CPU in use over P."""
        self._settle()
        return self._usage / self.machines

    def occupied_machines(self) -> int:
        """Machines running at least one task."""
        return self._occupied

    def potential_capacity(self, vm: int, placed: Sequence[int] = ()) -> float:
        """PC of idle ``vm``: what it would get now if a task started on it and contended.

        Its neighbours keep their current use (squeezed to their fair share if they use more);
        ``placed`` names other idle VMs of its machine already chosen for the same new job,
        counted as contending up to their ``max`` (a selector placing a job task by task).
        """
        self._settle()
        return self._pc(vm, placed)

    def potential_capacities(self) -> Callable[[int, Sequence[int]], float]:
        """Settle the allocation and return ``pc(vm, placed)`` (as :meth:`potential_capacity`),
        valid until the platform next changes: for selectors asking many times."""
        self._settle()
        return self._pc

    def idle_potential_capacities(self) -> dict[int, float]:
        """Settle the allocation and return the PC of every idle VM (a new dict)."""
        self._settle()
        cache, version, V, vmax, solve = self._pc_cache, self._version, self.vms, self.vm_max, self._solve
        out = {}
        for vm in self._idle:
            m = vm // V
            cached = cache.get(vm)
            if cached is not None and cached[0] == version[m]:
                out[vm] = cached[1]
            else:
                value = solve(m, (vm,), vmax[vm], -2, ())
                cache[vm] = (version[m], value)
                out[vm] = value
        return out

    def _pc(self, vm: int, placed: Sequence[int] = ()) -> float:
        m = vm // self.vms
        if not placed:
            cached = self._pc_cache.get(vm)
            if cached is not None and cached[0] == self._version[m]:
                return cached[1]
            value = self._solve(m, (vm,), self.vm_max[vm], -2, ())
            self._pc_cache[vm] = (self._version[m], value)
            return value
        return self._solve(m, (vm,), self.vm_max[vm], -2, placed)

    # -- resources ---------------------------------------------------------------------------
    def check_start(self, job: Job, tier: int, nodes: Sequence[int] | None) -> str | None:
        if tier != 0:
            return f"tier {tier} does not exist on a shared_vms platform (one task per VM, tier 0)"
        if nodes is None:
            free = len(self._idle)
            return None if job.size <= free else f"needs {job.size} VMs, {free} free"
        if len(nodes) != job.size:
            return f"names {len(nodes)} VMs for a job of size {job.size}"
        if len(set(nodes)) != len(nodes):
            return "names a VM twice (one task per VM)"
        n = self.machines * self.vms
        for vm in nodes:
            if isinstance(vm, bool) or not isinstance(vm, (int, np.integer)) or not 0 <= vm < n:
                return f"VM {vm!r} does not exist (0..{n - 1})"
            if self.vm_job[vm] != -1:
                return f"VM {vm} (machine {vm // self.vms}) is busy"
        return None

    def check_move(self, job: Job, tier: int, nodes: Sequence[int]) -> str | None:
        """Jobs cannot move between VMs on this platform."""
        return "shared_vms does not move running jobs"

    def start(self, job: Job, tier: int, nodes: Sequence[int] | None) -> tuple[list[int], float]:
        held = sorted(self._idle)[: job.size] if nodes is None else [int(v) for v in nodes]
        index = job.index
        occ, idle, active, version, V = self.vm_job, self._idle, self._active, self._version, self.vms
        by_machine: dict[int, list[int]] = {}
        for vm in held:
            occ[vm] = index
            idle.discard(vm)
            m = vm // V
            by_machine.setdefault(m, []).append(vm)
        groups = {m: tuple(by_machine[m]) for m in sorted(by_machine)}
        for m, vms in groups.items():
            if not active[m]:
                self._occupied += 1
            active[m] += len(vms)
            version[m] += 1
        self._jobs[index] = job
        self._rate[index] = 0.0
        self._reported[index] = 0.0
        vmax = self.vm_max
        self._cap[index] = min(vmax[vm] for vm in held)
        self._groups[index] = groups
        share = self.share
        pairs = []
        for m, vms in groups.items():
            pair = [min(share[v] for v in vms), max(share[v] for v in vms), len(vms), None, m]
            pairs.append(pair)
            self._on[m][index] = pair
        self._pairs[index] = pairs
        self._placed_machines[index] = len(groups)
        # The new job answers first, then its neighbours (in machine order).
        self._enqueue_first(index)
        for m in groups:
            self._touch_machine(m, index)
        self.rates_dirty = True
        return held, 0.0  # the real rate comes through rate_changes()

    def release(self, job: Job) -> None:
        index = job.index
        groups = self._groups.pop(index)
        rate = self._rate.pop(index)
        self._usage -= rate * job.size
        occ, idle, active, version = self.vm_job, self._idle, self._active, self._version
        for m, vms in groups.items():
            for vm in vms:
                occ[vm] = -1
                idle.add(vm)
            active[m] -= len(vms)
            if not active[m]:
                self._occupied -= 1
            version[m] += 1
            del self._on[m][index]
        del self._jobs[index], self._cap[index], self._pairs[index], self._reported[index]
        self._reversed.discard(index)
        self._changed.discard(index)
        if index in self._queued:
            self._queued.discard(index)
            self._pending = deque(j for j in self._pending if j != index)
        for m in groups:
            self._touch_machine(m, -1)
        if not self._jobs:
            self._usage = 0.0  # no drift survives an empty cluster
        self.rates_dirty = True

    # -- the allocation ----------------------------------------------------------------------
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

    def _settle(self) -> None:
        """Bring every job to its best response (to within :data:`RATE_TOLERANCE`).

        Gauss-Seidel best responses first: cheap, and local to the jobs a change reaches.
        The map is antitone (a job that takes more leaves its neighbours less), and with
        unequal shares its fixed points can be unstable (best responses, and the continuous
        dynamics they discretise, then oscillate around them) or form a continuum. A settling
        therefore runs the methods of :data:`SETTLE_PLAN` in turn until one ends with every
        job at its best response (see the module docstring): plain best responses stop once
        some job has reversed direction :data:`REVERSALS_BEFORE_SWITCH` times or the
        evaluations pass their allowance; Newton and Levenberg-Marquardt are bounded by
        :data:`MAX_NEWTON_STEPS` and :data:`MAX_LM_STEPS`. If all fail, :meth:`_fallback`
        (counted in :attr:`allocation_fallbacks`), or :class:`AllocationError` when
        ``strict_allocation``.
        """
        if not self._pending:
            return
        self._reversed = set()
        brackets = None
        for method in SETTLE_PLAN:
            if method == "newton":
                if self._newton(sorted(self._jobs)):
                    return
            elif method == "newton-cycling":
                if self._reversed and self._newton(sorted(self._reversed)):
                    return
            elif method in ("newton-low", "newton-high", "lm-mid"):
                if brackets is None:
                    brackets = self._brackets()
                low, high = brackets
                if method == "lm-mid":
                    self._restart({index: 0.5 * (low[index] + high[index]) for index in low})
                    if self._levenberg_marquardt():
                        return
                else:
                    self._restart(low if method == "newton-low" else high)
                    if self._newton(sorted(self._jobs)):
                        return
            elif method == "lm":
                if self._levenberg_marquardt():
                    return
            elif self._best_responses(relaxed=method == "relaxed"):
                return
        if self.strict_allocation:
            raise AllocationError(
                f"no fixed point of the CPU allocation found for {len(self._jobs)} running jobs "
                f"(methods tried: {', '.join(SETTLE_PLAN)})"
            )
        self._fallback()

    def _brackets(self) -> tuple[dict[int, float], dict[int, float]]:
        """The Jacobi brackets of the fixed points: ``low = R(high)``, ``high = R(low)`` from
        ``low = 0``, where R gives every job its best response to the others' rates. R is
        antitone, so ``low`` rises and ``high`` falls, and every fixed point lies between them
        (:data:`BRACKET_ITERATIONS` rounds)."""
        rate, cap_of, pairs_of = self._rate, self._cap, self._pairs
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

    def _levenberg_marquardt(self) -> bool:
        """Minimise the squared best-response residual over all running jobs (Levenberg-Marquardt).

        The residual of job j is ``best response(r) - r_j``; its Jacobian row is the local
        linear form of the best response on the binding machine (as in :meth:`_newton`) minus
        the identity. A step solves ``(J'J + mu diag(J'J)) d = -J'F`` (sparse, plain Python
        floats) and is kept only if the residual falls; ``mu`` shrinks after a kept step and
        grows after a rejected one. Slower than Newton, but it does not stall at the kinks
        where the binding machine changes as easily. Returns whether every job ended at its
        best response; if not, every job is queued for best responses again.
        """
        order = sorted(self._jobs)
        n = len(order)
        where = {index: i for i, index in enumerate(order)}
        rate, cap_of, groups_of, pairs_of = self._rate, self._cap, self._groups, self._pairs
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
            step = _solve_sparse(normal, [-g for g in gradient], [0.0] * n)
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
        self._usage = sum(rate[index] * job.size for index, job in self._jobs.items())
        self._changed.update(order)
        for m in range(self.machines):
            self._version[m] += 1
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

    def _restart(self, rates: dict[int, float]) -> None:
        """Set every running job's rate (for a Newton solve from there); every cache is stale."""
        for index, value in rates.items():
            self._rate[index] = value if value > MIN_RATE else MIN_RATE
            for pair in self._pairs[index]:
                pair[_X] = None
        self._usage = sum(self._rate[index] * job.size for index, job in self._jobs.items())
        self._changed.update(rates)
        for m in range(self.machines):
            self._version[m] += 1

    def _fallback(self) -> None:
        """A feasible allocation when no fixed point was found: sustainable rates, spare CPU filled.

        ``r = min(r, best response(r))`` makes every job's rate sustainable (its best response
        can only rise when others' rates fall), hence every machine within capacity; then each
        job in index order grows into the spare capacity of its machines, up to its best
        response, never squeezing another job. Every job keeps a rate it can sustain and no
        job could grow on spare capacity alone; share-fairness is not guaranteed.
        """
        self.allocation_fallbacks += 1
        order = sorted(self._jobs)
        rate, cap_of, groups_of, solve = self._rate, self._cap, self._groups, self._solve

        def best_response(index: int) -> float:
            cap = cap_of[index]
            return min(solve(m, vms, cap, index, ()) for m, vms in groups_of[index].items())

        responses = {index: best_response(index) for index in order}
        for index in order:
            value = min(rate[index], responses[index])
            rate[index] = value if value > MIN_RATE else MIN_RATE
        usage = {m: self._machine_usage(m) for m in range(self.machines)}
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
        self._usage = sum(rate[index] * job.size for index, job in self._jobs.items())
        self._changed.update(order)
        for m in range(self.machines):
            self._version[m] += 1
        self._pending.clear()
        self._queued.clear()
        br = self._br_general if self._mins else self._br
        for index in order:  # fresh caches at the final rates (no job stays queued)
            cap = cap_of[index]
            for pair in self._pairs[index]:
                pair[_X] = br(pair[_MACHINE], pair[_K], pair[_SMIN], cap, index)

    def _best_responses(self, relaxed: bool = False) -> bool:
        """Gauss-Seidel best responses over the queued jobs; False if they do not settle.

        ``relaxed``: a job whose move reverses its previous one moves only part of the way (the
        fraction halves at each reversal and grows back by half at each move in the same
        direction); such a job is examined again.
        """
        pending = self._pending
        queued, pairs_of, on, rate, cap_of = self._queued, self._pairs, self._on, self._rate, self._cap
        jobs, changed, version = self._jobs, self._changed, self._version
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
                    self._reversed.add(index)
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
                self._usage += step * jobs[index].size
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

    def _newton(self, order: list[int]) -> bool:
        """Solve the best-response fixed point of the jobs ``order`` by semi-smooth Newton.

        Each job's best response is piecewise linear in its neighbours' rates: on its binding
        machine (the one giving the smallest value) it is ``x`` with ``slope * x + sum of the
        rates of the neighbours saturated below its level = 1 - constants`` (or a constant: its
        cap, or a guarantee). Newton solves that linear system (the other jobs' rates held)
        and re-reads the pieces at the new point until every job in ``order`` is at its best
        response. Where the pieces leave rates undetermined (a continuum of fair points),
        those jobs keep their current rates. Returns whether every job ended at its best
        response; if not, every job is queued for best responses again.
        """
        n = len(order)
        where = {index: i for i, index in enumerate(order)}
        rate, cap_of, groups_of = self._rate, self._cap, self._groups
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
                solution = _solve_sparse(matrix, rhs, accepted)
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
        self._usage = sum(rate[index] * job.size for index, job in self._jobs.items())
        self._changed.update(order)
        for m in range(self.machines):
            self._version[m] += 1
        whole = n == len(self._jobs)
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
        for index in sorted(self._jobs):
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
        share, lo_of, occ, rate = self.share, self.vm_min, self.vm_job, self._rate
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

    def _br(self, m: int, k: int, smin: float, cap: float, index: int) -> float:
        """Best response on machine ``m`` of job ``index``, which has ``k`` VMs there, the
        smallest of share ``smin`` (no guarantees anywhere: the hot path of :meth:`_solve`).

        total(x) = k x + sum over the other tasks w of min(rate_w, x share_w / smin); the
        answer solves total(x) = 1 over the sorted breakpoints, capped at ``cap``.
        """
        occ, rate, share = self.vm_job, self._rate, self.share
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

    def _br_general(self, m: int, k: int, smin: float, cap: float, index: int) -> float:
        """:meth:`_br` with guarantees."""
        return self._solve_general(m, self._groups[index][m], cap, index, ())

    def _solve(self, m: int, own: tuple[int, ...], cap: float, index: int, placed: Sequence[int]) -> float:
        """The largest ``x <= cap`` that machine ``m`` grants each VM in ``own`` under water-filling.

        ``own`` are the VMs of job ``index`` on ``m`` (or one idle VM, ``index = -2``); every
        other VM demands its current use, or its ``max`` if it is in ``placed``.
        """
        if self._mins:
            return self._solve_general(m, own, cap, index, placed)
        # lo = 0 everywhere: total(x) = k x + sum_w min(hi_w, x * share_w / s*), s* the
        # smallest share among own; solve total(x) = 1 over the sorted breakpoints.
        V = self.vms
        base = m * V
        share, occ, rate = self.share, self.vm_job, self._rate
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

    def _solve_general(self, m: int, own: tuple[int, ...], cap: float, index: int, placed: Sequence[int]) -> float:
        """:meth:`_solve` with guarantees (``min > 0``): piecewise-linear search over breakpoints."""
        V = self.vms
        share, lo_of, vmax, occ, rate = self.share, self.vm_min, self.vm_max, self.vm_job, self._rate
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

    def rate_changes(self) -> list[tuple[Job, float]]:
        self.rates_dirty = False
        self._settle()
        if not self._changed:
            return []
        jobs, rate, reported = self._jobs, self._rate, self._reported
        changes = []
        for index in sorted(self._changed):
            new = rate[index]
            if new != reported[index]:
                reported[index] = new
                changes.append((jobs[index], new))
        self._changed.clear()
        return changes

    # -- statistics --------------------------------------------------------------------------
    def advance(self, now: float) -> None:
        last = self._last_time
        if last == last:  # not nan
            dt = now - last
            if dt > 0.0:
                usage = self._usage if self._usage > 0.0 else 0.0
                k = self._occupied
                self._busy_integral += usage * dt
                self._occupied_integral += k * dt
                self._occ_time[k] += dt
                self._occ_busy[k] += usage * dt
        else:
            self._first_time = now
        self._last_time = now

    def occupancy_profile(self) -> tuple[np.ndarray, np.ndarray]:
        """Seconds spent with k = 0..P machines occupied, and the mean utilisation U then (nan if never)."""
        seconds = np.array(self._occ_time)
        busy = np.array(self._occ_busy)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean_u = np.where(seconds > 0, busy / np.where(seconds > 0, seconds, 1.0) / self.machines, np.nan)
        return seconds, mean_u

    def extra_job_records(self, jobs: Sequence[Job]) -> dict[str, Any]:
        from ..metrics import BSLD_BOUND

        held = np.fromiter((j.tier_time[0] for j in jobs), np.float64, len(jobs))
        runtime = np.fromiter((j.runtime for j in jobs), np.float64, len(jobs))
        placed = self._placed_machines
        return {
            "xf_c": held / np.maximum(BSLD_BOUND, runtime),
            "machines": np.fromiter((placed.get(j.index, 0) for j in jobs), np.int64, len(jobs)),
        }

    def extra_metrics(self, records: Mapping[str, Any], span_start: float, span_end: float) -> dict[str, float]:
        """U (overriding the generic ``utilization``), eta, occupancy, XF_c and U per occupancy bin.

        * ``utilization``: CPU-seconds used over ``P x span``, integrated between events
          (equal to ``sum(size x runtime) / (P x span)``: a task uses its job's rate, whatever
          the workload's CPU-usage annotation says, which this platform ignores);
        * ``efficiency``: CPU-seconds used over occupied-machine-seconds (paper 001: "the
          average CPU utilization of occupied PMs"; equal to U over the mean occupancy);
        * ``occupancy``: mean fraction of machines running at least one task;
        * ``mean/median/p90_xf_c``: the compute part of the expansion factor;
        * ``util_at_occ_<b>``: mean U over the time the occupancy ratio was in
          ``((b - 10)%, b%]`` (nan if never), and ``time_at_occ_<b>``: the fraction of the
          span spent there (paper 001, figures 7 and 9).
        """
        span = span_end - span_start
        P = self.machines
        out: dict[str, float] = {}
        nan = float("nan")
        if span > 0:
            out["utilization"] = self._busy_integral / (P * span)
            out["occupancy"] = self._occupied_integral / (P * span)
        else:
            out["utilization"] = out["occupancy"] = nan
        out["efficiency"] = self._busy_integral / self._occupied_integral if self._occupied_integral > 0 else nan
        out["allocation_fallbacks"] = float(self.allocation_fallbacks)
        xf_c = np.asarray(records.get("xf_c", ()), dtype=np.float64)
        xf_c = xf_c[np.isfinite(np.asarray(records["finish_time"], dtype=np.float64))] if len(xf_c) else xf_c
        if len(xf_c):
            out["mean_xf_c"] = float(xf_c.mean())
            out["median_xf_c"] = float(np.median(xf_c))
            out["p90_xf_c"] = float(np.percentile(xf_c, 90))
        else:
            out["mean_xf_c"] = out["median_xf_c"] = out["p90_xf_c"] = nan
        seconds, busy = self._occ_time, self._occ_busy
        for b in OCCUPANCY_BINS:
            low, high = (b - 10) / 100.0, b / 100.0
            t = u = 0.0
            for k in range(1, P + 1):
                ratio = k / P
                if low < ratio <= high:
                    t += seconds[k]
                    u += busy[k]
            out[f"util_at_occ_{b}"] = u / (t * P) if t > 0 else nan
            out[f"time_at_occ_{b}"] = t / span if span > 0 else nan
        return out

    # -- invariants (for tests and debugging) ---------------------------------------------------
    def check_invariants(self, tolerance: float = 1e-9) -> None:
        """Raise AssertionError unless the settled allocation keeps every invariant of DESIGN 4.2.

        No machine above capacity; every active VM within [min, max]; every task at its job's
        rate; every job at its cap or bottlenecked (on some full machine, its tasks could gain
        only by taking from VMs whose share-weighted allocation is no larger than theirs).
        """
        self._settle()
        V = self.vms
        for index, groups in self._groups.items():
            r = self._rate[index]
            assert r > 0.0, f"job {self._jobs[index].job_id} has rate {r}"
            assert r <= self._cap[index] + tolerance
        for m in range(self.machines):
            vms = range(m * V, (m + 1) * V)
            alloc = [self.allocation(w) for w in vms]
            assert sum(alloc) <= 1.0 + tolerance, f"machine {m} allocates {sum(alloc)}"
            for w, a in zip(vms, alloc):
                assert self.vm_min[w] - tolerance <= a, f"VM {w} below its min"
                if self.vm_job[w] >= 0:
                    assert a <= self.vm_max[w] + tolerance, f"VM {w} above its max"
        for index, groups in self._groups.items():
            r = self._rate[index]
            if r >= self._cap[index] - tolerance:
                continue
            assert any(self._bottleneck(m, vms, index, r, tolerance) for m, vms in groups.items()), (
                f"job {self._jobs[index].job_id} (rate {r}) could gain on every machine it uses"
            )

    def _bottleneck(self, m: int, own: tuple[int, ...], index: int, r: float, tolerance: float) -> bool:
        """Whether job ``index`` (rate ``r``, VMs ``own``) is bottlenecked on machine ``m``."""
        V = self.vms
        vms = range(m * V, (m + 1) * V)
        used = sum(self.allocation(w) for w in vms)
        if used < 1.0 - tolerance:
            return False  # spare capacity: it could gain here
        # Its tasks that would have to grow (those not covered by their own guarantee).
        growing = [u for u in own if r >= self.vm_min[u] - tolerance]
        if not growing:
            return False
        # Its smallest-share growing task needs the highest level: r / share.
        level = max(r / self.share[u] for u in growing)
        for w in vms:
            if w in own:
                continue
            a = self.allocation(w)
            if a > self.vm_min[w] + tolerance and a / self.share[w] > level + tolerance:
                return False  # it could take from a VM with a larger share-weighted allocation
        return True
