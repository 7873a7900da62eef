"""What both CPU allocations of the shared-VM platform keep: which job holds which VMs, and its rate.

:class:`Bookkeeping` is the state the platform sees through either allocator: the running
jobs, their rates and caps, their VMs by machine, one :class:`Pair` record per (job, machine)
with the job's cached value there, the queue of jobs to re-examine, the CPU in use, a version
counter per machine (for callers' caches) and the work counters. It answers the one-machine
water-filling questions (:meth:`Bookkeeping.solve`: a job's best response on a machine, an
idle VM's PC) at the current rates. How the queued jobs are settled is the subclass's:
:class:`~.one_pass.OnePassAllocator` in one pass, :class:`~.allocator.Allocator` by the
fixed-point methods of :mod:`.solver`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from .numerics import breakpoint_level, granted_level

if TYPE_CHECKING:
    from ...jobs import Job

__all__ = ["Bookkeeping", "Pair"]


class Pair:
    """One (job, machine) record, reachable from the job (:attr:`Bookkeeping.pairs`) and from
    the machine (:attr:`Bookkeeping.on`).

    Attributes:
        smin: Smallest share among the job's VMs on the machine.
        smax: Largest share among them.
        k: How many of the job's VMs the machine holds.
        x: The job's cached value on the machine: ``None`` when stale (the job is then
            queued); negative when stale but minus a lower bound of it (the machine does not
            bind the job, so the job needs no new look); otherwise the value itself.
        machine: The machine.
    """

    __slots__ = ("smin", "smax", "k", "x", "machine")

    def __init__(self, smin: float, smax: float, k: int, machine: int) -> None:
        self.smin = smin
        self.smax = smax
        self.k = k
        self.x: float | None = None
        self.machine = machine

    def __repr__(self) -> str:
        return f"Pair(smin={self.smin}, smax={self.smax}, k={self.k}, x={self.x}, machine={self.machine})"


class Bookkeeping:
    """The running jobs on a shared-VM cluster, their rates, and what must be re-examined.

    The platform tells it which job holds which VMs (:meth:`add`, :meth:`remove`) and asks
    for rates (:meth:`rate_changes`, :meth:`settle`); a subclass says how queued jobs settle.

    Args:
        machines: Number of physical machines P.
        vms: VMs per machine V.
        share: Share of each VM (VM ``v`` is VM ``v % vms`` of machine ``v // vms``).
        vm_min: Guarantee of each VM.
        vm_max: Cap of each VM.
        vm_job: Job index per VM, -1 when idle. The platform's own list, read here and
            updated in place by the platform before :meth:`add` and after :meth:`remove`.
        strict: Whether a settling that fails raises (the subclass's to honour).

    Attributes:
        rate: Rate of each running job, by job index (settled only after :meth:`settle`).
        cap: Cap of each running job (its VMs' smallest ``max``).
        groups: Each running job's VMs, by machine.
        jobs: The running jobs, by job index, in start order.
        pairs: Each running job's :class:`Pair` records, in machine order.
        on: Per machine, its jobs' :class:`Pair` records, by job index.
        pending: Jobs queued for re-examination, in order.
        queued: The same jobs, as a set.
        changed: Jobs whose rate may differ from the one last reported.
        usage: CPU in use over the cluster (sum of task rates).
        version: A counter per machine, bumped whenever its use may have changed.
        evaluations: Evaluations done so far (for profiling and tests).
        newton_steps: Newton and Levenberg-Marquardt steps done so far.
        fallbacks: Settlings that ended in a fallback allocation.
    """

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
    ) -> None:
        self.machines = machines
        self.vms = vms
        self.share = share
        self.vm_min = vm_min
        self.vm_max = vm_max
        self.vm_job = vm_job
        self.strict = strict
        # Without guarantees the best response has a faster closed form (:meth:`responder`), and
        # the exact pruning of neighbours that need no new look is valid.
        self.mins = any(lo > 0.0 for lo in vm_min)
        self.slots = [range(m * vms, (m + 1) * vms) for m in range(machines)]  # VMs of each machine
        self.version = [0] * machines
        self.jobs: dict[int, Job] = {}
        self.rate: dict[int, float] = {}
        self.cap: dict[int, float] = {}
        self.groups: dict[int, dict[int, tuple[int, ...]]] = {}
        self.pairs: dict[int, list[Pair]] = {}
        self.on: list[dict[int, Pair]] = [{} for _ in range(machines)]
        self.pending: deque[int] = deque()
        self.queued: set[int] = set()
        self.reported: dict[int, float] = {}
        self.changed: set[int] = set()
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
        self.reported[index] = 0.0
        vmax = self.vm_max
        self.cap[index] = min(vmax[vm] for vm in held)
        self.groups[index] = groups
        share = self.share
        pairs = []
        for m, vms in groups.items():
            pair = Pair(min(share[v] for v in vms), max(share[v] for v in vms), len(vms), m)
            pairs.append(pair)
            self.on[m][index] = pair
        self.pairs[index] = pairs
        # The new job answers first, then its neighbours (in machine order).
        self.enqueue_first(index)
        for m in groups:
            self.touch_machine(m, index)

    def remove(self, job: Job) -> dict[int, tuple[int, ...]]:
        """Job ``job`` has left; return the VMs it held, by machine."""
        index = job.index
        groups = self.groups.pop(index)
        rate = self.rate.pop(index)
        self.usage -= rate * job.size
        version = self.version
        for m in groups:
            version[m] += 1
            del self.on[m][index]
        del self.jobs[index], self.cap[index], self.pairs[index], self.reported[index]
        self.forget(index)
        if index in self.queued:
            self.queued.discard(index)
            self.pending = deque(j for j in self.pending if j != index)
        for m in groups:
            self.touch_machine(m, -1)
        if not self.jobs:
            self.usage = 0.0  # no drift survives an empty cluster
        return groups

    def forget(self, index: int) -> None:
        """Drop what a settling keeps about job ``index``, which has left."""
        self.changed.discard(index)

    def enqueue_first(self, index: int) -> None:
        """Queue job ``index`` ahead of every other (unless it is queued already)."""
        if index in self.queued:
            return
        self.queued.add(index)
        self.pending.appendleft(index)

    def touch_machine(self, m: int, skip: int) -> None:
        """Something on machine ``m`` changed: its other jobs (not ``skip``) must re-examine it."""
        queued, pending = self.queued, self.pending
        for j, pair in self.on[m].items():
            if j == skip:
                continue
            pair.x = None
            if j not in queued:
                queued.add(j)
                pending.append(j)

    def touch_all(self, order: Iterable[int]) -> None:
        """The rates of jobs ``order`` were set wholesale: recount the use, bump every machine."""
        self.usage = sum(self.rate[index] * job.size for index, job in self.jobs.items())
        self.changed.update(order)
        for m in range(self.machines):
            self.version[m] += 1

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

    def settle(self) -> None:
        """Bring every queued job to its rate (the subclass's rule)."""
        raise NotImplementedError

    def rate_changes(self) -> list[tuple[Job, float]]:
        """Settle, and return the jobs whose rate differs from the one last returned, with it."""
        self.settle()
        if not self.changed:
            return []
        jobs, rate, reported = self.jobs, self.rate, self.reported
        changes = []
        for index in sorted(self.changed):
            new = rate[index]
            if new != reported[index]:
                reported[index] = new
                changes.append((jobs[index], new))
        self.changed.clear()
        return changes

    # -- one machine's water-filling -----------------------------------------------------------
    def responder(self) -> Callable[[int, int, float, float, int], float]:
        """The best-response function ``(m, k, smin, cap, index) -> x`` at the current rates.

        Job ``index`` has ``k`` VMs on machine ``m``, the smallest of share ``smin``; ``x`` is the
        largest value ``<= cap`` the machine's water-filling grants each of them (see
        :meth:`solve`). Without guarantees anywhere it is a faster closed form.
        """
        return self._response_general if self.mins else self._response_free

    def _response_general(self, m: int, k: int, smin: float, cap: float, index: int) -> float:
        """:meth:`responder`'s function with guarantees."""
        return self._solve_general(m, self.groups[index][m], cap, index, ())

    def _response_free(self, m: int, k: int, smin: float, cap: float, index: int) -> float:
        """:meth:`responder`'s function without guarantees anywhere (the hot path of settling).

        total(x) = k x + sum over the other tasks w of min(rate_w, x share_w / smin); the
        answer solves total(x) = 1 over the sorted breakpoints, capped at ``cap``.
        """
        occ, rate, share = self.vm_job, self.rate, self.share
        slope = float(k)
        points = []
        for w in self.slots[m]:
            j = occ[w]
            if j >= 0 and j != index:
                hi = rate[j]
                if hi > 0.0:
                    c = share[w] / smin
                    slope += c
                    points.append((hi / c, hi, c))
        return breakpoint_level(points, slope, k, cap)

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
        if self.mins:
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
        """:meth:`solve` with guarantees (``min > 0``): each other VM demands its use (at least
        its guarantee), an idle placed one its ``max``; see :func:`~.numerics.granted_level`."""
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
        return granted_level(mine, others, cap)
