"""The decisions a policy proposes and the engine checks, then applies.

Its own module so that the engine and the policies both import this vocabulary and neither
imports the other (SimPy's kernel imports its events; events do not import the kernel).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .jobs import Job

__all__ = ["Start", "Suspend", "Kill", "Move", "Reject", "Decision"]


# Decisions are values: a policy builds a new one rather than changing one. Start, made for
# every job of every run, does not enforce it: a frozen dataclass sets its fields through
# object.__setattr__, three times slower, which cost EASY about a twelfth of its scheduling
# time. It still compares and hashes by value, as the frozen ones do.
@dataclass(slots=True, unsafe_hash=True)
class Start:
    """Start (or restart) a queued job.

    Attributes:
        job: The job.
        tier: The tier its processes run in (0 = foreground / dedicated).
        nodes: The nodes to use, or None to let the platform choose.
    """

    job: Job
    tier: int = 0
    nodes: Sequence[int] | None = None


@dataclass(frozen=True, slots=True)
class Suspend:
    """Suspend a running job: it releases its resources and goes back to the queue."""

    job: Job


@dataclass(frozen=True, slots=True)
class Kill:
    """Kill a running job: it releases its resources, loses its progress and goes back to the
    queue at its original place, as if newly queued, to start again from zero (KEASY).

    Unlike :class:`Suspend`, nothing is saved, so nothing is restored: a restart costs no
    migration and is not counted as one. The engine counts the kill and the CPU-seconds the
    killed run had consumed (its progress times its processes' CPU usage). The policy hears of
    it through ``on_suspend`` (for its indexes a kill is a suspension: the job left its VMs
    and is queued again), with the job's progress already back at zero.
    """

    job: Job


@dataclass(frozen=True, slots=True)
class Move:
    """Move a running job to other VMs, keeping its progress.

    Keeping every process on its node and changing only the tier is a swap of VM priorities:
    free, and not a migration. Any other move saves the job's state and restores it on the
    new VMs: one migration, and the job holds its new VMs for the migration cost before it
    progresses again.

    Attributes:
        job: The job.
        tier: The tier it moves to.
        nodes: ``nodes[p]`` is the new node of process ``p``.
    """

    job: Job
    tier: int
    nodes: Sequence[int]


@dataclass(frozen=True, slots=True)
class Reject:
    """Turn away a queued job that never started (admission control): it never runs."""

    job: Job


Decision = Start | Suspend | Kill | Move | Reject
