"""The base class of platforms (resource models): the whole boundary the engine and policies see
(declared member by member in :mod:`tiersweep.core.capabilities`)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ..capabilities import MOVES, PLACEMENT, TIME_TRACKING

if TYPE_CHECKING:
    from ..jobs import Job
    from ..params import Param

__all__ = ["BasePlatform"]


class BasePlatform(ABC):
    """A resource model: who holds what, and how fast each running job progresses.

    A platform never touches job state itself; the engine does, from what the platform
    returns. When each method is called:

    * :meth:`job_capacity` (class method) while the spec is resolved, before the workload is
      built: the largest job the platform can hold.
    * ``__init__(**params, seed=seed)`` once, with the platform's own keys of the run plan (every
      key of :attr:`params`, checked once; the engine takes the section's other keys,
      :data:`~tiersweep.core.engine.ENGINE_PARAMS`).
    * :meth:`prepare` once, by the engine before the first event, with what the policy
      requires and whether the units each job holds are recorded.
    * :meth:`free_count` by policies, at any time.
    * :meth:`check_start` then :meth:`start` when a policy yields ``Start``: the check says why
      the start is impossible (the engine raises ``PolicyError`` with that reason) and must
      have no side effect; ``start`` then allocates.
    * :meth:`check_move` then :meth:`move` when a policy yields ``Move`` (only on platforms
      with the ``moves`` capability).
    * :meth:`release` when a job finishes or is suspended.
    * :meth:`rate_changes` whenever :attr:`rates_dirty` is set after a start, move or release.
    * :meth:`advance` at every new timestamp, before its events (``time_tracking`` only).
    * :meth:`extra_job_records` and :meth:`extra_metrics` once, after the run.

    The engine checks what the platform reports on the hot path (rates within [0, 1], as many
    units held as the job has processes) and raises ``PlatformError`` naming the platform.

    Subclasses declare, as class attributes, their registry :attr:`kind`, the spec keys they take
    (:attr:`params`) and the :attr:`CAPABILITIES` they offer (see
    :mod:`tiersweep.core.capabilities`); :meth:`capabilities_of` narrows them by the parameters.

    Attributes:
        capacity: Processing units (nodes, VMs' machines, slots) used as the utilisation
            denominator.
        tiers: Number of priority tiers per node (1 for dedicated resources).
        rates_dirty: Set by the platform when some running job's rate may have changed.
        overflow_rate: CPU-seconds per second used beyond the capacity of the platform's units
            (0 unless the progress model can oversubscribe a unit); the engine integrates it
            and the metrics subtract it from the busy time.
    """

    #: The registry name (``platform.kind``).
    kind: ClassVar[str] = ""
    #: The spec keys of this platform (besides ``kind`` and the common keys), with their checks
    #: and defaults; passed to the constructor as keywords.
    params: ClassVar[Mapping[str, Param]] = {}
    #: What this platform offers; see :mod:`tiersweep.core.capabilities`.
    CAPABILITIES: ClassVar[frozenset[str]] = frozenset({PLACEMENT})
    #: Run metrics this platform adds (names, for result schemas); see :meth:`extra_metrics`.
    EXTRA_METRICS: ClassVar[tuple[str, ...]] = ()
    #: Per-job columns this platform adds; see :meth:`extra_job_records`.
    EXTRA_JOB_COLUMNS: ClassVar[tuple[str, ...]] = ()
    #: Whether the platform keeps state for each VM (:meth:`job_capacity` x :meth:`tiers_of`),
    #: so that the spec validator bounds their product; False where memory does not grow so.
    STATE_PER_VM: ClassVar[bool] = True

    capacity: int
    tiers: int = 1
    rates_dirty: bool = False
    overflow_rate: float = 0.0

    if TYPE_CHECKING:
        # The constructor every platform offers (see above); declared for the checker only, so
        # that a platform lacking one still fails at once when built.
        def __init__(self, *, seed: int, **params: Any) -> None: ...

    @classmethod
    def capabilities_of(cls, params: Mapping[str, Any]) -> frozenset[str]:
        """The capabilities an instance with spec parameters ``params`` offers (default: all
        of :attr:`CAPABILITIES`; a platform narrows them, e.g. ``nodes`` with one tier has no
        background tiers)."""
        return cls.CAPABILITIES

    @classmethod
    def tiers_of(cls, params: Mapping[str, Any]) -> int:
        """How many tiers the records of a run with spec parameters ``params`` have (the
        ``tier<k>_share`` metrics and ``tier<k>_duration`` columns a sweep's result schema
        must hold): ``params["tiers"]`` by default; a platform whose tiers are called
        otherwise (``gang``'s rows, ``mpl``) says so here."""
        return int(params.get("tiers") or 1)

    @classmethod
    def check_params(cls, params: Mapping[str, Any]) -> None:
        """Checks that involve several keys of the validated section ``params`` (each key alone
        is checked by its Param); raise ``SpecError`` naming the key. Called by the spec
        validator and :func:`~tiersweep.core.platforms.make_platform`, before anything runs."""

    @classmethod
    def label(cls, params: Mapping[str, Any]) -> str:
        """How messages name this platform with spec parameters ``params``: its kind, plus the
        parameters that narrow its capabilities (see :meth:`capabilities_of`)."""
        return repr(cls.kind)

    @property
    def capabilities(self) -> frozenset[str]:
        """The capabilities this instance offers (a platform whose parameters narrow them
        overrides this to agree with :meth:`capabilities_of`)."""
        return self.CAPABILITIES

    @property
    def tracks_time(self) -> bool:
        """Whether the engine calls :meth:`advance` at every new timestamp."""
        return TIME_TRACKING in self.capabilities

    @classmethod
    def job_capacity(cls, params: Mapping[str, Any]) -> int | None:
        """The largest job this platform can hold, from its spec parameters (the workload
        rules drop larger jobs, and offered load is measured against it), or None when it
        comes from the trace (``nodes`` without a size)."""
        return None

    def prepare(self, requires: frozenset[str], record_units: bool) -> None:
        """Called once before the run with the capabilities the policy requires and whether the
        units of every stay are recorded (segments): a platform may then drop bookkeeping that
        nobody reads (``nodes`` with one tier counts free nodes instead of tracking ids when
        neither needs them). Does nothing by default."""

    # -- resources -------------------------------------------------------------------------
    @abstractmethod
    def free_count(self, tier: int = 0) -> int:
        """Free processing units in ``tier``."""

    @abstractmethod
    def check_start(self, job: Job, tier: int, nodes: Sequence[int] | None) -> str | None:
        """Say why ``job`` cannot start in ``tier`` on ``nodes`` (None: the platform chooses),
        or None if it can. Must not change any state."""

    @abstractmethod
    def start(self, job: Job, tier: int, nodes: Sequence[int] | None) -> tuple[Sequence[int], float]:
        """Allocate resources to ``job`` (after :meth:`check_start` said yes); return the units
        it holds, one per process, and its initial rate in [0, 1]."""

    @abstractmethod
    def release(self, job: Job) -> None:
        """Free everything ``job`` holds (it finished or was suspended)."""

    def check_move(self, job: Job, tier: int, nodes: Sequence[int]) -> str | None:
        """Say why running ``job`` cannot move to ``nodes`` in ``tier``, or None if it can.

        Platforms with the ``moves`` capability override this and :meth:`move`."""
        return f"platform {self.kind!r} cannot move running jobs (no {MOVES!r} capability)"

    def move(self, job: Job, tier: int, nodes: Sequence[int]) -> tuple[Sequence[int], float]:
        """Move running ``job`` to ``nodes`` in ``tier`` (after :meth:`check_move` said yes);
        return the units it holds and its rate. The engine decides what the move costs."""
        raise NotImplementedError(f"platform {self.kind!r} cannot move running jobs")

    def same_units(self, units: Sequence[int], other: Sequence[int]) -> bool:
        """Whether two placements name the same unit for every process (a move between them is
        a priority swap, not a migration). The platform alone knows how it represents units:
        here any sequences of ints, compared element by element."""
        if type(units) is list and type(other) is list:
            return units == other  # the common small case, without numpy's fixed cost
        return bool(np.array_equal(units, other))

    # -- progress --------------------------------------------------------------------------
    def rate_changes(self) -> Iterable[tuple[Job, float]]:
        """Running jobs whose progress rate changed since the last call, with the new rate.

        Called only when :attr:`rates_dirty` is set; an implementation clears the flag.
        Dedicated resources never change a rate, hence the empty default.
        """
        self.rates_dirty = False
        return ()

    def advance(self, now: float) -> None:
        """Called with the new time before each timestamp's events (``time_tracking`` only)."""

    # -- results ---------------------------------------------------------------------------
    def extra_metrics(self, records: Mapping[str, Any], span_start: float, span_end: float) -> dict[str, float]:
        """Run metrics of this platform's own (names in :attr:`EXTRA_METRICS`)."""
        return {}

    def extra_job_records(self, jobs: Sequence[Job]) -> dict[str, Any]:
        """Per-job columns of this platform's own (names in :attr:`EXTRA_JOB_COLUMNS`)."""
        return {}
