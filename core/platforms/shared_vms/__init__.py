"""Platform ``shared_vms``: P machines, each hosting V VMs that share its CPU (paper 001, DESIGN 4.2).

The package is seven modules, one concept each:

* :mod:`.platform`: :class:`SharedVms`, the resources (which VM runs which job) and the
  queries policies make (EC, PC, FC, idle VMs), plus its spec parameters; ``allocation``
  picks the allocator (:data:`ALLOCATIONS`);
* :mod:`.bookkeeping`: :class:`Bookkeeping`, what both allocations keep: which job holds which
  VMs, the rates, the (job, machine) records, the queue of jobs to re-examine, and one
  machine's water-filling at the current rates;
* :mod:`.one_pass`: :class:`OnePassAllocator` (``allocation: paper``), paper 001's one-pass
  split on that bookkeeping: each VM its share of its machine, each job at its slowest VM's,
  the rest left idle;
* :mod:`.allocator`: :class:`Allocator` (``allocation: fixed_point``), the running jobs' rates
  under share-weighted max-min fairness with the ripple effect, settled by a tuple of methods
  (:data:`SETTLE_PLAN`): work-conserving;
* :mod:`.solver`: those methods, one function each (best responses, Newton,
  Levenberg-Marquardt, the Jacobi brackets, the fallback);
* :mod:`.numerics`: water-filling one machine and a deterministic sparse linear solve;
* :mod:`.stats`: :class:`OccupancyStats`, utilisation, efficiency and utilisation per
  occupancy level integrated over time.
"""

from __future__ import annotations

from .allocator import SETTLE_PLAN, AllocationError, Allocator
from .bookkeeping import Bookkeeping, Pair
from .numerics import solve_sparse, waterfill
from .one_pass import OnePassAllocator, entitlements
from .platform import ALLOCATIONS, SHARE_PRESETS, SHARED_VMS_PARAMS, SharedVms
from .solver import (
    BRACKET_ITERATIONS,
    MAX_EVALUATIONS_PER_JOB,
    MAX_LM_STEPS,
    MAX_NEWTON_STEPS,
    RATE_TOLERANCE,
    REVERSALS_BEFORE_SWITCH,
)
from .stats import OCCUPANCY_BINS, OccupancyStats

__all__ = [
    "SharedVms",
    "SHARED_VMS_PARAMS",
    "AllocationError",
    "Allocator",
    "Bookkeeping",
    "Pair",
    "OnePassAllocator",
    "ALLOCATIONS",
    "entitlements",
    "OccupancyStats",
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
    "solve_sparse",
]
