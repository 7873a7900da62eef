"""Running cells on a backend and storing their rows: the engine room of sweeps and tuning.

A :class:`CellRunner` takes cells in any order (:meth:`submit`), keeps a bounded number of
batches in flight (two per worker), sizes batches to about ``BATCH_SECONDS`` of work from the
cells finished so far (one cell per batch until it knows), writes every finished batch to the
store at once, and hands the outcomes back (:meth:`step`). Only the driver process that owns
the runner writes. On interruption it abandons the batches in flight and nothing else.
"""

from __future__ import annotations

import inspect
import math
import statistics
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..core.errors import TiersweepError
from ..core.version import code_digest, code_origin
from .backends import Backend, make_backend
from .batch import task_for
from .cells import Cell
from .estimate import cell_time_limits, estimate_cells
from .records import Outcome, Task
from .store import Store

__all__ = ["CellRunner", "BATCH_SECONDS", "BAR_REFRESH_SECONDS"]

#: Target seconds of work per batch: long enough to amortise dispatch, short enough that an
#: interruption loses little.
BATCH_SECONDS = 3.0
#: The longest a progress bar goes without a redraw while cells run (:meth:`CellRunner.step_drawing`):
#: a cluster-scale cell can take minutes, and a bar drawn only when a cell finished stood at
#: 00:00 and looked hung. (The serial backend computes each batch inside its wait, so its bar
#: moves only between batches.)
BAR_REFRESH_SECONDS = 1.0


def _takes_timeout(backend: Backend) -> bool:
    """Whether ``backend.wait`` takes a ``timeout``: a backend written before it did still runs
    (its bar is then drawn only when batches finish)."""
    return "timeout" in inspect.signature(backend.wait).parameters


def _batch_size(durations: list[float], remaining: int, workers: int) -> int:
    if not durations:
        return 1
    typical = statistics.median(durations[-50:])
    size = int(BATCH_SECONDS / typical) if typical > 0 else 64
    return max(1, min(size, 64, math.ceil(remaining / workers)))


class CellRunner:
    """Runs cells on a backend (started on first use) and writes their rows to ``store``.

    Args:
        store: A prepared store.
        sweep: The sweep (or study) name written in each row.
        backend: A registered backend's name (:data:`~.backends.BACKENDS`).
        backend_options: Its options (:func:`~.backends.backend_options`).
        with_jobs: Also store per-job records.
        on_outcomes: Called with each finished batch's outcomes after it is stored.
    """

    def __init__(
        self,
        store: Store,
        sweep: str,
        *,
        backend: str = "ray",
        backend_options: Mapping[str, Any] | None = None,
        with_jobs: bool = False,
        on_outcomes: Callable[[list[Outcome]], None] | None = None,
    ) -> None:
        self.store = store
        self.sweep = sweep
        self.backend_name = backend
        self.backend_options = dict(backend_options or {})
        self.with_jobs = with_jobs
        self.on_outcomes = on_outcomes
        self._backend: Backend | None = None
        self._wait_takes_timeout = False  # (read off the backend's wait once, when it starts)
        self._queue: list[Task] = []
        self._durations: list[float] = []
        self._batch_id = 0
        #: Seconds spent starting and stopping the backend.
        self.startup_seconds = 0.0
        #: Seconds spent blocked waiting for workers.
        self.waited_seconds = 0.0
        #: Cells computed and stored.
        self.computed = 0
        #: Notices of the backend's start-up, for the closing summary.
        self.notes: list[str] = []
        #: How many computed cells ran on each path (``Outcome.path``; failed cells not counted).
        self.paths: Counter[str] = Counter()

    @property
    def workers(self) -> int:
        """Batches that can run at once (starts the backend)."""
        return self._start().workers

    def start(self) -> None:
        """Start the backend now (it otherwise starts with the first step)."""
        self._start()

    def _start(self) -> Backend:
        if self._backend is None:
            before = time.perf_counter()
            self._backend = make_backend(self.backend_name, self.backend_options)
            self._wait_takes_timeout = _takes_timeout(self._backend)
            self.startup_seconds += time.perf_counter() - before
            self.notes = list(self._backend.notes)
        return self._backend

    def submit(self, cells: Sequence[Cell], time_limits: Sequence[float | None] | None = None) -> None:
        """Queue cells to compute, each stopped and stored as failed once it runs past its time
        limit (seconds, None for no limit); without ``time_limits``, the default limits of
        their uncalibrated expected costs (:func:`~.estimate.cell_time_limits`)."""
        if time_limits is None:
            time_limits = cell_time_limits(estimate_cells(cells))
        self._queue.extend(task_for(cell, self.sweep, limit) for cell, limit in zip(cells, time_limits, strict=True))

    @property
    def busy(self) -> bool:
        """Whether cells are queued or in flight."""
        return bool(self._queue) or (self._backend is not None and self._backend.pending() > 0)

    def step(self, timeout: float | None = None) -> list[Outcome]:
        """Dispatch queued cells, wait for at least one batch (or at most ``timeout`` seconds,
        None: no limit), store what finished; return its outcomes (none if the time ran out)."""
        backend = self._start()
        while self._queue and backend.pending() < 2 * backend.workers:
            size = _batch_size(self._durations, len(self._queue), backend.workers)
            backend.submit(self._batch_id, self._queue[:size], self.with_jobs)
            del self._queue[:size]
            self._batch_id += 1
        before = time.perf_counter()
        finished = backend.wait(timeout=timeout) if timeout is not None and self._wait_takes_timeout else backend.wait()
        self.waited_seconds += time.perf_counter() - before
        done: list[Outcome] = []
        for _, outcomes in finished:
            self._check_code(outcomes)
            self.store.write(outcomes)
            self.computed += len(outcomes)
            self._durations.extend(o.row["wall_seconds"] for o in outcomes)
            self.paths.update(o.path for o in outcomes if o.path)
            if self.on_outcomes is not None:
                self.on_outcomes(outcomes)
            done.extend(outcomes)
        return done

    def step_drawing(self, bar: Any) -> list[Outcome]:
        """:meth:`step`, then redraw the progress bar ``bar`` (a tqdm bar; None: none): with a
        bar, the wait ends after :data:`BAR_REFRESH_SECONDS` when no cell has finished, so that
        the bar's elapsed time goes on while cells run."""
        outcomes = self.step(BAR_REFRESH_SECONDS if bar is not None else None)
        if bar is not None:
            bar.refresh()
        return outcomes

    def _check_code(self, outcomes: list[Outcome]) -> None:
        """Refuse outcomes computed by other simulator code than the driver's."""
        ours = code_digest()
        for outcome in outcomes:
            theirs = outcome.row.get("code_digest")
            if theirs != ours:
                host = outcome.row.get("host") or "a worker"
                raise TiersweepError(
                    f"worker on {host} runs other simulator code than this driver (code digest {theirs} "
                    f"from {outcome.code or '?'}; the driver has {ours} from {code_origin()}): its "
                    f"results would be stored under the driver's cell ids. Run every worker on the same "
                    f"tiersweep and numpy (reinstall them with `pip install .` on each node, or run the driver "
                    f"from the same environment); nothing of that batch was stored"
                )

    def cancel(self) -> None:
        """Abandon queued and in-flight cells."""
        self._queue.clear()
        if self._backend is not None:
            self._backend.cancel()

    def __enter__(self) -> CellRunner:
        return self

    def __exit__(self, kind: type | None, error: BaseException | None, traceback: object) -> None:
        """Abandon the cells in flight if the block failed (or was interrupted); stop the backend."""
        if kind is not None:
            self.cancel()
        self.close()

    def close(self) -> None:
        """Stop the backend."""
        if self._backend is not None:
            before = time.perf_counter()
            self._backend.close()
            self.startup_seconds += time.perf_counter() - before
            self._backend = None
