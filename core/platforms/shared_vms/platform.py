"""Platform ``shared_vms``: P machines, each hosting V VMs that share its CPU (paper 001).

Every VM carries three sharing parameters (paper 001, section II-A): ``min``, the capacity it
is guaranteed ("cannot be used by collocated VMs even when the VM is inactive"); ``max``, the
most it may use "even when there is free capacity"; and ``share``, which "apportions free
capacity among competing VMs". The parameters are given per VM position and are the same on
every machine (presets ``homogeneous`` = shares 1,1,1,1 and ``heterogeneous`` = 1,1,2,4,
section IV-C). One task per VM; a job's tasks may land on any VMs, several on one machine.

A task is compute intensive: it would use its machine's whole CPU (section IV-C), but tightly
coupled tasks progress together, so every task of a job runs at the job's rate ``r``, the rate
of its slowest task (the ripple effect). A job that would take ``runtime`` seconds "in
isolation (i.e. using the full CPU of the PM)" therefore takes ``runtime / r`` seconds at a
constant rate r ("the execution time is assumed to increase proportionally to the allotted
share of the CPU given to a task", section IV-B). The rates are set by the platform's
allocator, chosen by ``allocation`` (:data:`ALLOCATIONS`): ``fixed_point``, the
work-conserving share-weighted max-min fair fixed point of the ripple coupling
(:class:`~.allocator.Allocator`, the platform's default), or ``paper``, the paper's one-pass
split in which capacity a throttled task cannot use stays idle
(:class:`~.one_pass.OnePassAllocator`; the reproduction configs use it). This module holds
the resources (which VM runs which job) and the queries policies make.

Metrics of the paper (section V): ``equilibrium_capacity`` (EC) is a VM's allocation when
every VM of its machine contends (water-filling with every demand at ``max``; figure 2: 3/7
and 4/7); ``potential_capacity`` (PC) is what an idle VM would get now if its new task
contended, its neighbours keeping their current use (squeezed down to their fair share if
they use more); ``free_capacity`` (FC) is 1 minus the machine's current use. The time-weighted
statistics (utilisation U, efficiency eta over occupied machines, utilisation per occupancy
level) are kept by an :class:`~.stats.OccupancyStats` fed from :meth:`SharedVms.advance`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ...capabilities import PLACEMENT, TIME_TRACKING, VM_CAPACITIES
from ...errors import SpecError
from ...params import Param, boolean, int_in, one_of
from ..base import BasePlatform
from .allocator import Allocator
from .bookkeeping import Bookkeeping
from .numerics import waterfill
from .one_pass import OnePassAllocator, entitlements
from .stats import OCCUPANCY_BINS, OccupancyStats

if TYPE_CHECKING:
    from ...jobs import Job

__all__ = ["SharedVms", "SHARED_VMS_PARAMS", "SHARE_PRESETS", "ALLOCATIONS"]

#: Shares of the VMs on each machine by preset name (paper 001, section IV-C).
SHARE_PRESETS: dict[str, tuple[float, ...] | None] = {
    "homogeneous": None,  # every VM share 1, whatever V
    "heterogeneous": (1.0, 1.0, 2.0, 4.0),  # defined for V = 4 only
}

#: Allocator class by ``platform.allocation``. ``fixed_point``, the work-conserving one, is the
#: platform's default (a spec that names no allocation keeps its stored results); ``paper``
#: gives every job at most the rate ``fixed_point`` does (see :mod:`.one_pass`).
ALLOCATIONS: dict[str, type[Bookkeeping]] = {
    "fixed_point": Allocator,
    "paper": OnePassAllocator,
}


def _per_vm(key: str, value: Any, vms: int, low: float, high: float, *, low_open: bool, high_open: bool) -> list[float]:
    """A number for every VM position, or a list of ``vms`` numbers, each within bounds."""
    values = [value] * vms if isinstance(value, (int, float)) and not isinstance(value, bool) else value
    if not isinstance(values, (list, tuple)) or len(values) != vms:
        raise SpecError(
            f"platform.{key}: expected a number or a list of {vms} numbers (one per VM of a machine), got {value!r}"
        )
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
    raise ValueError(
        f"expected {' or '.join(SHARE_PRESETS)} or a list of positive shares (one per VM of a machine), got {value!r}"
    )


#: The spec keys of ``platform: {kind: shared_vms}`` (registered in :mod:`tiersweep.core.platforms`).
SHARED_VMS_PARAMS: dict[str, Param] = {
    "machines": Param(
        int_in(1, 10_000_000, "each machine's VMs take memory"),
        default=64,
        doc="physical machines P, each of CPU capacity 1 (paper 001: 64)",
    ),
    "vms": Param(
        int_in(1, 4096, "each VM holds one task"), default=4, doc="VMs per machine V, one task each (paper 001: 4)"
    ),
    "shares": Param(
        _shares,
        default="homogeneous",
        doc="VM shares by position on every machine: homogeneous (all 1), heterogeneous (1,1,2,4) or a list",
    ),
    "max": Param(
        _number_or_list(0.0, 1.0, True), default=1.0, doc="VM caps in (0, 1]: one for all, or a list by position"
    ),
    "allocation": Param(
        one_of(*ALLOCATIONS),
        default="fixed_point",
        doc="CPU split: fixed_point (work-conserving fair fixed point of the ripple coupling) or "
        "paper (paper 001's one pass: CPU a throttled task cannot use stays idle)",
    ),
    "strict_allocation": Param(
        boolean,
        default=False,
        doc="fixed_point: raise if a settling finds no fixed point (default: a feasible fallback, counted)",
    ),
    "min": Param(
        _number_or_list(0.0, 1.0, False),
        default=0.0,
        doc="VM guarantees in [0, 1), held even when idle: one for all, or a list by position",
    ),
}


def _sharing(
    vms: int,
    shares: str | Sequence[float],
    max: float | Sequence[float],
    min: float | Sequence[float],  # noqa: A002
) -> tuple[list[float], list[float], list[float]]:
    """The per-position shares, caps and guarantees, checked together (the checks that involve
    more than one key; each key alone is checked by its Param).

    Raises:
        SpecError: A preset that does not fit ``vms``, a min above its max, or guarantees that
            leave a VM nothing; the message names the key.
    """
    if isinstance(shares, str):
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
    return share_list, max_list, min_list


class SharedVms(BasePlatform):
    """``machines`` machines with ``vms`` shared VMs each.

    VM ``v`` is VM ``v % vms`` of machine ``v // vms``; a started job's ``nodes`` are its VMs.
    The platform keeps the resources (which VM runs which job, occupied machines) and answers
    the policies' queries; the rates come from its :attr:`allocator`, the time-weighted
    statistics from its :attr:`stats`.

    Args:
        machines: Number of physical machines P (each of CPU capacity 1).
        vms: VMs per machine V.
        shares: ``"homogeneous"`` (all 1), ``"heterogeneous"`` (1, 1, 2, 4; V = 4) or a list of
            V positive shares, by VM position.
        max: The VMs' caps, one number for all or a list by position, each in (0, 1].
        min: The VMs' guarantees, one number for all or a list by position, each in [0, 1);
            a machine's guarantees must leave every VM something (the others' sum below 1).
        allocation: ``"fixed_point"`` (default) or ``"paper"``: the allocator class, by
            :data:`ALLOCATIONS`.
        strict_allocation: Raise :class:`~.allocator.AllocationError` when a settling finds no
            fixed point, instead of the counted fallback allocation (``fixed_point`` only;
            the one pass of ``paper`` cannot fail).
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
    kind = "shared_vms"
    params = SHARED_VMS_PARAMS
    #: The platform places a job on any idle VMs itself; policies may rank VMs by EC and PC.
    #: Jobs never move between VMs (no ``moves``).
    CAPABILITIES = frozenset({PLACEMENT, TIME_TRACKING, VM_CAPACITIES})

    @classmethod
    def check_params(cls, params: Mapping[str, Any]) -> None:
        _sharing(params["vms"], params["shares"], params["max"], params["min"])

    def __init__(
        self,
        machines: int = 64,
        vms: int = 4,
        *,
        shares: str | Sequence[float] = "homogeneous",
        max: float | Sequence[float] = 1.0,  # noqa: A002 - the paper's name
        min: float | Sequence[float] = 0.0,  # noqa: A002
        allocation: str = "fixed_point",
        strict_allocation: bool = False,
        seed: int = 0,
    ) -> None:
        share_list, max_list, min_list = _sharing(vms, shares, max, min)
        if allocation not in ALLOCATIONS:
            raise SpecError(
                f"platform.allocation: unknown value {allocation!r}; valid choices: {', '.join(ALLOCATIONS)}"
            )
        self.machines = machines
        self.vms = vms
        #: The allocation's name (a key of :data:`ALLOCATIONS`).
        self.allocation_kind = allocation
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
        ec = waterfill(share_list, min_list, max_list)
        #: Equilibrium capacity of each VM (static: it depends on the sharing parameters only).
        self.ec = ec * machines
        #: Job index per VM, -1 when idle (read-only for callers; the allocator reads it too).
        self.vm_job = [-1] * n
        self._idle = set(range(n))
        self._active = [0] * machines  # active VMs per machine
        self._occupied = 0  # machines with an active VM
        # PC of idle VMs, valid while their machine's version (kept by the allocator) stands.
        self._pc_cache: dict[int, tuple[int, float]] = {}
        self._placed_machines: dict[int, int] = {}  # job index -> machines of its last placement
        #: The running jobs' rates (by ``allocation``: the fair fixed point or the paper's one pass).
        self.allocator = ALLOCATIONS[allocation](
            machines, vms, self.share, self.vm_min, self.vm_max, self.vm_job, strict=self.strict_allocation
        )
        #: Utilisation, efficiency and utilisation per occupancy level, integrated over time.
        self.stats = OccupancyStats(machines)

    @classmethod
    def job_capacity(cls, params: Mapping[str, Any]) -> int | None:
        return int(params.get("machines", 64)) * int(params.get("vms", 4))

    # -- the allocator's counters ----------------------------------------------------------------
    @property
    def evaluations(self) -> int:
        """Best-response evaluations done so far (for profiling and tests)."""
        return self.allocator.evaluations

    @property
    def newton_steps(self) -> int:
        """Newton and Levenberg-Marquardt steps done so far (for profiling and tests)."""
        return self.allocator.newton_steps

    @property
    def allocation_fallbacks(self) -> int:
        """Settlings that ended in the fallback allocation (no fixed point found)."""
        return self.allocator.fallbacks

    @property
    def _busy_integral(self) -> float:
        # Kept for callers that read the CPU-seconds integral from the platform (tests did).
        return self.stats.busy_integral

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
        self.allocator.settle()
        return self.allocator.rate[job_index]

    def machine_usage(self, machine: int) -> float:
        """CPU used on ``machine`` now: the sum of its tasks' rates."""
        self.allocator.settle()
        return self.allocator.machine_usage(machine)

    def free_capacity(self, machine: int) -> float:
        """FC: the capacity of ``machine`` its tasks leave unused now (paper 001, section II-A)."""
        return 1.0 - self.machine_usage(machine)

    def allocation(self, vm: int) -> float:
        """The CPU ``vm`` is allocated now: ``max(min, its job's rate)`` if active, else ``min``."""
        self.allocator.settle()
        j = self.vm_job[vm]
        lo = self.vm_min[vm]
        rate = self.allocator.rate
        return lo if j < 0 else (lo if lo > rate[j] else rate[j])

    def utilization(self) -> float:
        """Cluster utilisation now: CPU in use over P."""
        self.allocator.settle()
        return self.allocator.usage / self.machines

    def occupied_machines(self) -> int:
        """Machines running at least one task."""
        return self._occupied

    def potential_capacity(self, vm: int, placed: Sequence[int] = ()) -> float:
        """PC of idle ``vm``: what it would get now if a task started on it and contended.

        Its neighbours keep their current use (squeezed to their fair share if they use more);
        ``placed`` names other idle VMs of its machine already chosen for the same new job,
        counted as contending up to their ``max`` (a selector placing a job task by task).
        """
        self.allocator.settle()
        return self._pc(vm, placed)

    def potential_capacities(self) -> Callable[[int, Sequence[int]], float]:
        """Settle the allocation and return ``pc(vm, placed)`` (as :meth:`potential_capacity`),
        valid until the platform next changes: for selectors asking many times."""
        self.allocator.settle()
        return self._pc

    def idle_potential_capacities(self) -> dict[int, float]:
        """Settle the allocation and return the PC of every idle VM (a new dict)."""
        allocator = self.allocator
        allocator.settle()
        cache, version, V, vmax, solve = self._pc_cache, allocator.version, self.vms, self.vm_max, allocator.solve
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
        version = self.allocator.version
        if not placed:
            cached = self._pc_cache.get(vm)
            if cached is not None and cached[0] == version[m]:
                return cached[1]
            value = self.allocator.solve(m, (vm,), self.vm_max[vm], -2, ())
            self._pc_cache[vm] = (version[m], value)
            return value
        return self.allocator.solve(m, (vm,), self.vm_max[vm], -2, placed)

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

    def start(self, job: Job, tier: int, nodes: Sequence[int] | None) -> tuple[list[int], float]:
        held = sorted(self._idle)[: job.size] if nodes is None else [int(v) for v in nodes]
        index = job.index
        occ, idle, active, V = self.vm_job, self._idle, self._active, self.vms
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
        self._placed_machines[index] = len(groups)
        self.allocator.add(job, held, groups)
        self.rates_dirty = True
        return held, 0.0  # the real rate comes through rate_changes()

    def release(self, job: Job) -> None:
        groups = self.allocator.remove(job)
        occ, idle, active = self.vm_job, self._idle, self._active
        for m, vms in groups.items():
            for vm in vms:
                occ[vm] = -1
                idle.add(vm)
            active[m] -= len(vms)
            if not active[m]:
                self._occupied -= 1
        self.rates_dirty = True

    def rate_changes(self) -> list[tuple[Job, float]]:
        self.rates_dirty = False
        return self.allocator.rate_changes()

    # -- statistics --------------------------------------------------------------------------
    def advance(self, now: float) -> None:
        # The use and occupancy held since the last event: the engine has asked for the rate
        # changes (which settle the allocation) before time moves on.
        self.stats.advance(now, self.allocator.usage, self._occupied)

    def occupancy_profile(self) -> tuple[np.ndarray, np.ndarray]:
        """Seconds spent with k = 0..P machines occupied, and the mean utilisation U then (nan if never)."""
        return self.stats.occupancy_profile()

    def extra_job_records(self, jobs: Sequence[Job]) -> dict[str, Any]:
        from ...metrics import BSLD_BOUND

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
        * ``allocation_fallbacks``: settlings that found no fixed point (see the allocator);
        * ``mean/median/p90_xf_c``: the compute part of the expansion factor;
        * ``util_at_occ_<b>``: mean U over the time the occupancy ratio was in
          ``((b - 10)%, b%]`` (nan if never), and ``time_at_occ_<b>``: the fraction of the
          span spent there (paper 001, figures 7 and 9).
        """
        span = span_end - span_start
        nan = float("nan")
        out = self.stats.totals(span)
        out["allocation_fallbacks"] = float(self.allocator.fallbacks)
        xf_c = np.asarray(records.get("xf_c", ()), dtype=np.float64)
        xf_c = xf_c[np.isfinite(np.asarray(records["finish_time"], dtype=np.float64))] if len(xf_c) else xf_c
        if len(xf_c):
            out["mean_xf_c"] = float(xf_c.mean())
            out["median_xf_c"] = float(np.median(xf_c))
            out["p90_xf_c"] = float(np.percentile(xf_c, 90))
        else:
            out["mean_xf_c"] = out["median_xf_c"] = out["p90_xf_c"] = nan
        out.update(self.stats.by_occupancy(span))
        return out

    # -- invariants (for tests and debugging) ---------------------------------------------------
    def check_invariants(self, tolerance: float = 1e-9) -> None:
        """Raise AssertionError unless the settled allocation keeps every invariant of DESIGN 4.2.

        No machine above capacity; every active VM within [min, max]; every task at its job's
        rate. Under ``fixed_point``, every job at its cap or bottlenecked (on some full machine,
        its tasks could gain only by taking from VMs whose share-weighted allocation is no
        larger than theirs); under ``paper``, every job at the smallest one-pass entitlement
        of its VMs (recomputed here from scratch).
        """
        allocator = self.allocator
        allocator.settle()
        rate, cap, jobs = allocator.rate, allocator.cap, allocator.jobs
        V = self.vms
        for index in allocator.groups:
            r = rate[index]
            assert r > 0.0, f"job {jobs[index].job_id} has rate {r}"
            assert r <= cap[index] + tolerance
        for m in range(self.machines):
            vms = range(m * V, (m + 1) * V)
            alloc = [self.allocation(w) for w in vms]
            assert sum(alloc) <= 1.0 + tolerance, f"machine {m} allocates {sum(alloc)}"
            for w, a in zip(vms, alloc):
                assert self.vm_min[w] - tolerance <= a, f"VM {w} below its min"
                if self.vm_job[w] >= 0:
                    assert a <= self.vm_max[w] + tolerance, f"VM {w} above its max"
        if self.allocation_kind == "paper":
            split = {
                m: entitlements(
                    self.position_shares,
                    self.position_min,
                    self.position_max,
                    [self.vm_job[w] >= 0 for w in range(m * V, (m + 1) * V)],
                )
                for m in range(self.machines)
            }
            for index, groups in allocator.groups.items():
                expected = min(split[m][w - m * V] for m, vms in groups.items() for w in vms)
                assert abs(rate[index] - expected) <= tolerance, (
                    f"job {jobs[index].job_id} has rate {rate[index]}, not its smallest entitlement {expected}"
                )
            return
        for index, groups in allocator.groups.items():
            r = rate[index]
            if r >= cap[index] - tolerance:
                continue
            assert any(self._bottleneck(m, vms, r, tolerance) for m, vms in groups.items()), (
                f"job {jobs[index].job_id} (rate {r}) could gain on every machine it uses"
            )

    def _bottleneck(self, m: int, own: tuple[int, ...], r: float, tolerance: float) -> bool:
        """Whether a job at rate ``r`` with VMs ``own`` on machine ``m`` is bottlenecked there."""
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
