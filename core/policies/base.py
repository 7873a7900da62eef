"""The base class of scheduling policies and the decisions they propose."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator, Sequence

if TYPE_CHECKING:
    from ..engine import Engine
    from ..jobs import Job

__all__ = ["BasePolicy", "Start", "Suspend", "Move", "Reject", "Decision"]


@dataclass(frozen=True, slots=True)
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


Decision = Start | Suspend | Move | Reject


class BasePolicy(ABC):
    """A scheduling policy: it proposes decisions; the engine checks and applies them.

    Lifecycle, all at the engine's current time ``sim.now``:

    * :meth:`setup` once, before the first event.
    * :meth:`on_submit`, :meth:`on_start`, :meth:`on_finish`, :meth:`on_suspend`,
      :meth:`on_move` as those things happen (hooks for the policy's own indexes; they do nothing by default).
    * :meth:`decide` once per timestamp at which something happened, after every finish,
      restore and arrival at that timestamp. It is a generator: each decision it yields is
      validated and applied before the generator resumes, so the policy always reads the
      current state (free nodes, queue, its own indexes).

    The engine object passed in is read-only for policies: ``sim.now``, ``sim.queue`` (a dict
    from job index to queued job, in queue order), ``sim.running`` and ``sim.platform``.
    """

    #: The registry name, set by subclasses.
    name: str = ""

    def setup(self, sim: Engine) -> None:
        """Called once before the run starts."""

    def on_submit(self, job: Job) -> None:
        """``job`` has just joined the queue for the first time."""

    def on_start(self, job: Job) -> None:
        """``job`` has just been started (or restarted)."""

    def on_finish(self, job: Job) -> None:
        """``job`` has just finished."""

    def on_suspend(self, job: Job) -> None:
        """``job`` has just been suspended and put back in the queue."""

    def on_reject(self, job: Job) -> None:
        """``job`` has just been turned away."""

    def on_move(self, job: Job, tier: int, nodes: Sequence[int]) -> None:
        """``job`` has just moved; ``tier`` and ``nodes`` are where it was before."""

    @abstractmethod
    def decide(self, sim: Engine) -> Iterator[Decision]:
        """Yield the decisions to take now."""
