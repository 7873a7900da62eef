"""The base class of platforms (resource models)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

if TYPE_CHECKING:
    from ..jobs import Job

__all__ = ["BasePlatform"]


class BasePlatform(ABC):
    """A resource model: who holds what, and how fast each running job progresses.

    The engine calls :meth:`check_start` then :meth:`start` when a policy starts a job,
    :meth:`release` when a job finishes or is suspended, and, whenever :attr:`rates_dirty` is
    set after such a change, :meth:`rate_changes` to learn which running jobs now progress at a
    different rate (co-location, sharing, ...). A platform never touches job state itself.

    Attributes:
        capacity: Processing units (nodes, VMs' machines, slots) used as the utilisation
            denominator.
        tiers: Number of priority tiers per node (1 for dedicated resources).
        rates_dirty: Set by the platform when some running job's rate may have changed.
    """

    capacity: int
    tiers: int = 1
    rates_dirty: bool = False
    #: Run metrics this platform adds (names, for result schemas); see :meth:`extra_metrics`.
    EXTRA_METRICS: tuple[str, ...] = ()
    #: Per-job columns this platform adds; see :meth:`extra_job_records`.
    EXTRA_JOB_COLUMNS: tuple[str, ...] = ()
    #: Whether the engine calls :meth:`advance` at every new timestamp (for time-weighted
    #: statistics); off by default so that platforms without them pay nothing.
    tracks_time: bool = False
    #: CPU-seconds per second used beyond the capacity of the platform's units (0 unless the
    #: progress model can oversubscribe a unit); subtracted from the busy time.
    overflow_rate: float = 0.0

    @abstractmethod
    def free_count(self, tier: int = 0) -> int:
        """Free processing units in ``tier``."""

    @abstractmethod
    def check_start(self, job: Job, tier: int, nodes: Sequence[int] | None) -> str | None:
        """Say why ``job`` cannot start in ``tier`` on ``nodes`` (None: any), or None if it can."""

    @abstractmethod
    def start(self, job: Job, tier: int, nodes: Sequence[int] | None) -> tuple[list[int], float]:
        """Allocate resources to ``job``; return the units it holds and its initial rate."""

    @abstractmethod
    def release(self, job: Job) -> None:
        """Free everything ``job`` holds."""

    @classmethod
    def job_capacity(cls, params: Mapping[str, Any]) -> int | None:
        """The largest job this platform can hold, from its spec parameters (the workload
        rules drop larger jobs, and offered load is measured against it), or None when it
        comes from the trace (``nodes`` without a size)."""
        return None

    def advance(self, now: float) -> None:
        """Called with the new time before each timestamp's events (if :attr:`tracks_time`)."""

    def extra_metrics(self, records: Mapping[str, Any], span_start: float, span_end: float) -> dict[str, float]:
        """Run metrics of this platform's own (names in :attr:`EXTRA_METRICS`)."""
        return {}

    def extra_job_records(self, jobs: Sequence[Job]) -> dict[str, Any]:
        """Per-job columns of this platform's own (names in :attr:`EXTRA_JOB_COLUMNS`)."""
        return {}

    def rate_changes(self) -> Iterable[tuple[Job, float]]:
        """Running jobs whose progress rate changed since the last call, with the new rate.

        Called only when :attr:`rates_dirty` is set; an implementation clears the flag.
        Dedicated resources never change a rate, hence the empty default.
        """
        self.rates_dirty = False
        return ()
