"""The base class of scheduling policies."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, ClassVar, Protocol

from ..decisions import Decision

if TYPE_CHECKING:
    from ..jobs import Job
    from ..params import Param
    from ..platforms.base import BasePlatform

__all__ = ["BasePolicy", "Simulation"]


class Simulation(Protocol):
    """What a policy reads of the engine that runs it (read-only; the engine is one)."""

    #: The current simulated time.
    now: float
    #: Queued jobs by index, in queue order.
    queue: dict[int, Job]
    #: Running jobs by index.
    running: dict[int, Job]
    #: Every job of the run, by index.
    jobs: Sequence[Job]
    #: The platform the jobs run on.
    platform: BasePlatform


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
    A policy may call on the platform only what :class:`~tiersweep.core.platforms.base.BasePlatform`
    declares plus the members of the capabilities it :attr:`requires`.

    Subclasses declare, as class attributes, their registry :attr:`name`, the spec keys they take
    (:attr:`params`, passed to the constructor as keywords once checked) and the platform
    capabilities they need (:attr:`requires`); the spec validator refuses a platform that lacks
    one.
    """

    #: The registry name (``policy.name``).
    name: ClassVar[str] = ""
    #: The spec keys of this policy (besides ``name``), with their checks and defaults.
    params: ClassVar[Mapping[str, Param]] = {}
    #: The platform capabilities this policy needs (see :mod:`tiersweep.core.capabilities`).
    requires: ClassVar[frozenset[str]] = frozenset()
    #: Rough simulation time per job against EASY's per job (1), on the Python path. Sweeps
    #: only use the costs to start the costliest cells first, to estimate the time left and to
    #: set default time limits; they never change a result.
    relative_cost: ClassVar[float] = 1.0
    #: Rough simulation time per process of a job, in the same units, on the Python path: the
    #: part of the work that grows with the jobs' sizes (placing, rating and releasing process
    #: by process), 0 for a policy whose work per job does not.
    process_cost: ClassVar[float] = 0.0
    #: ``(relative_cost, process_cost)`` where the compiled whole run takes this policy's runs
    #: (see :func:`~tiersweep.core.compiled_run.takes_whole_run`); None: as on the Python path.
    compiled_costs: ClassVar[tuple[float, float] | None] = None

    def setup(self, sim: Simulation) -> None:
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
    def decide(self, sim: Simulation) -> Iterator[Decision]:
        """Yield the decisions to take now."""
