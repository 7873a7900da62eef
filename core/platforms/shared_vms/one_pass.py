"""The paper's one-pass CPU allocation of the shared-VM platform (``platform.allocation: paper``).

Model
-----
Each machine splits its CPU among its VMs by share-weighted water-filling in one pass: an
active VM (one running a task) gets its *entitlement* ``clamp(lam * share, min, max)``, an
idle VM holds its ``min``, with the level ``lam`` set so the machine's capacity is used up
(or every active VM is at its ``max``). The entitlements depend only on which VMs of the
machine are active, never on what their tasks use. Every task of a job then runs at the job's
rate, the smallest entitlement among the job's VMs (the ripple effect). That is the whole
allocation: the capacity a faster task was entitled to but cannot use (its job waits for the
slowest task) stays idle; it is *not* offered to the other VMs of its machine, and the
coupling between jobs is *not* iterated. The allocation is therefore not work-conserving;
:class:`~.allocator.Allocator` (``fixed_point``) is the work-conserving alternative, and gives
every job at least the rate this one does (each job's best response there is at least its
smallest entitlement, since the neighbours demand at most their ``max``).

What the paper says, and where we chose
---------------------------------------
Paper 001 (Delgado et al.), section II-A: ``min`` "cannot be used by collocated VMs even when
the VM is inactive"; ``max`` is "the maximum capacity that a VM can obtain even when there is
free capacity"; "the share distributes available capacity in relative proportion to each VM,
with its min and max as lower and upper bounds" (figure 2: EC 3/7 and 4/7). Section IV-C:
"unoccupied VMs consume no CPU cycles", so only the active VMs share the machine. Section
I: tightly coupled tasks "proceed in a 'synchronized' manner and the slowest task limits the
resource utilization of all other tasks", and section III: a job's "execution rate is limited
to that of its slowest executing task". Section IV-A: the resource states "are changed and
re-calculated upon job arrival and completion events", which a single pass per event does.

The paper never says in so many words whether the capacity a throttled task leaves is handed
to its neighbours; we chose *not*, for three reasons:

* the worked examples (figures 3 and 4) come out the same either way (they only have spare
  capacity where no neighbour could take it), so they do not decide;
* section V-B/D: with heterogeneous shares eta is 0.53-0.65 (Table II) on "workloads like
  the Grid'5000, consisting mostly of serial jobs", and section V-E: 56-58 % on CTC-SP2. A
  work-conserving allocation lets the serial jobs collocated with throttled tasks take up the
  slack (``fixed_point`` measures eta 0.90-0.92 on CTC-SP2); only capacity that stays idle
  gives figures that low;
* section I: "up to 47% average under-utilization of the CPU due to ripple effect" with a
  greedy selector, i.e. the 0.53 of PC-g.

Against it, section V-D's aside "serial jobs that consume all the compute cycles lost due to
the ripple effect" reads, taken literally, as if serial jobs did take up the slack; we read it
as what such jobs could do, since the numbers next to it rule out that they did.

Measured on the first 10,000 CTC-SP2 jobs (``configs/paper001_ctc.yaml``, selectors pc-sg and
pcfc-sg): eta 0.54 with heterogeneous shares and 0.976-0.977 with homogeneous ones (paper:
56-58 % and about 98 %); heterogeneous over homogeneous makespan 1.8x and median XF 2.0-2.8x
(paper: roughly doubled, nearly twice). ``fixed_point`` gives 0.92, 0.98, 1.07x and 0.7-0.9x.

Other choices, none stated by the paper: a VM's guarantee is held while its task uses less
(its allocation is ``max(min, rate)``, as in ``fixed_point``); the entitlement of a job with
several VMs on one machine is the smallest of theirs (each VM is a separate container); the
policies' queries are unchanged: EC is static, FC is 1 minus the use, and PC still reads the
neighbours' current *use* (section II-A: PC depends on "the current utilization of the
collocated VMs"), so under this allocation it is an optimistic ranking figure, not always the
rate a new task would get.

Computation: the entitlements of a machine change only when a task starts or ends on it, so an
event re-evaluates just the jobs with a VM on the machines it touched, each recomputing its
entitlement on those machines only (cached per (job, machine) pair otherwise). There is no
propagation: a job's new rate changes nobody else's. Rates are constant between events and
finish times exact; the result does not depend on the order jobs are evaluated in.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from .bookkeeping import Bookkeeping
from .numerics import waterfill

__all__ = ["OnePassAllocator", "entitlements"]


def entitlements(
    share: Sequence[float], vm_min: Sequence[float], vm_max: Sequence[float], active: Sequence[bool]
) -> list[float]:
    """One machine's one-pass split: each active VM between its min and max by share, each idle
    VM at its min (a guarantee is reserved even when idle; an idle VM takes nothing else).

    Args:
        share: Share of each VM of the machine.
        vm_min: Guarantee of each VM.
        vm_max: Cap of each VM.
        active: Whether each VM runs a task.

    Returns:
        Each VM's entitlement, in the order given.
    """
    highs = [hi if on else lo for lo, hi, on in zip(vm_min, vm_max, active)]
    return waterfill(share, vm_min, highs)


class OnePassAllocator(Bookkeeping):
    """The running jobs' rates under the paper's one-pass allocation (see the module docstring).

    Same interface as :class:`~.allocator.Allocator` (the platform cannot tell them apart:
    both are a :class:`~.bookkeeping.Bookkeeping`): :meth:`add` and :meth:`remove` queue the
    jobs on the machines they touch, :meth:`settle`
    gives each queued job the smallest entitlement among its VMs. Nothing can fail to settle,
    so :attr:`fallbacks` and :attr:`newton_steps` stay 0; :attr:`evaluations` counts jobs
    re-evaluated.

    Args:
        *args, **kwargs: :class:`~.bookkeeping.Bookkeeping`'s; ``strict`` changes nothing here,
            where nothing can fail to settle.
    """

    def machine_entitlements(self, m: int) -> list[float]:
        """The entitlement of each VM of machine ``m`` now (by position on the machine)."""
        slots = self.slots[m]
        occ = self.vm_job
        return entitlements(
            [self.share[w] for w in slots],
            [self.vm_min[w] for w in slots],
            [self.vm_max[w] for w in slots],
            [occ[w] >= 0 for w in slots],
        )

    def settle(self) -> None:
        """Give every queued job the smallest entitlement among its VMs (one pass, no iteration).

        A job is queued when a task starts or ends on one of its machines, and its cached
        entitlement there is cleared (:meth:`~.bookkeeping.Bookkeeping.add`,
        :meth:`~.bookkeeping.Bookkeeping.remove`); the others are still valid, since entitlements
        do not depend on rates. A job whose rate changes bumps the version of its machines
        (the platform caches PCs, which read the neighbours' use, by version).
        """
        pending = self.pending
        if not pending:
            return
        queued, pairs_of, groups_of = self.queued, self.pairs, self.groups
        rate, jobs, changed, version = self.rate, self.jobs, self.changed, self.version
        V = self.vms
        split: dict[int, list[float]] = {}  # this settling's machine entitlements
        evaluations = 0
        usage = self.usage
        while pending:
            index = pending.popleft()
            queued.discard(index)
            evaluations += 1
            groups = groups_of[index]
            best = math.inf
            for pair in pairs_of[index]:
                x = pair.x
                if x is None:
                    m = pair.machine
                    e = split.get(m)
                    if e is None:
                        e = split[m] = self.machine_entitlements(m)
                    base = m * V
                    x = pair.x = min(e[v - base] for v in groups[m])
                if x < best:
                    best = x
            old = rate[index]
            if best != old:
                rate[index] = best
                usage += (best - old) * jobs[index].size
                changed.add(index)
                for m in groups:
                    version[m] += 1
        self.usage = usage
        self.evaluations += evaluations
