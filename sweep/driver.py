"""The sweep driver: expand, skip what is stored, run the rest (:class:`CellRunner`), summarise."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import TiersweepError
from ..core.metric_catalogue import SUMMARY_METRICS, job_columns, run_columns
from ..core.platforms import PLATFORMS
from .cells import Cell, flatten
from .config import SweepConfig, check_cell_timeout, expand
from .estimate import CellEstimate, Eta, cell_points, cell_time_limits, columns_read, estimate_cells
from .folder_lock import FolderLock
from .records import Outcome
from .runner import BATCH_SECONDS, CellRunner
from .store import Store, read_table, spec_column_types

__all__ = ["SweepOutcome", "run_sweep", "plan", "estimate_todo", "BATCH_SECONDS", "SUMMARY_METRICS"]


@dataclass
class SweepOutcome:
    """What a sweep run did.

    Attributes:
        cells: Every cell of the config.
        stored_before: Cells already in the store when the run began (and not recomputed).
        computed: Cells computed by this run.
        failed: Cells of the config whose stored row is ``failed`` after this run.
        elapsed_seconds: Wall time of this run, backend start-up included.
        driver_seconds: Driver time neither waiting for workers nor starting the backend:
            expansion, store reads and writes, dispatch (the sweep's overhead).
        store: The store folder.
    """

    cells: list[Cell]
    stored_before: int
    computed: int
    failed: int
    elapsed_seconds: float
    driver_seconds: float
    store: Path
    backend: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def overhead_per_cell_ms(self) -> float:
        """Driver overhead per computed cell, in milliseconds."""
        return 1000 * self.driver_seconds / self.computed if self.computed else 0.0


def plan(
    config: SweepConfig,
    out: str | Path,
    *,
    force: bool = False,
    retry_failed: bool = False,
    with_jobs: bool = False,
    cells: list[Cell] | None = None,
) -> tuple[list[Cell], list[Cell], Store, set[str]]:
    """The config's cells (``cells``, if already expanded), those still to compute, the store,
    and the ids of the stored cells among them that lack per-job records or segments.

    To compute: not stored, or as ``force`` says, or (``with_jobs``) stored without per-job
    records or segments (:meth:`Store.without_jobs`), which a run with ``--jobs`` computes
    again rather than leave missing."""
    cells = expand(config) if cells is None else cells
    store = Store(Path(out) / config.name)
    stored = {} if force else store.stored_ids()
    lacking = store.without_jobs() if with_jobs and stored else set()
    todo = [
        c
        for c in cells
        if c.cell_id not in stored or (retry_failed and stored[c.cell_id] != "ok") or c.cell_id in lacking
    ]
    return cells, todo, store, lacking


def _prepare(store: Store, config: SweepConfig, cells: list[Cell]) -> None:
    specs = [{k: v for k, v in flatten(c.spec).items() if k != "seed"} for c in cells]
    source = {"config_text": config.source_text, "overrides": list(config.overrides)}
    store.prepare(config.raw, spec_column_types(specs), *result_columns([c.spec for c in cells]), source=source)


def result_columns(specs: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """Metric names and per-job column names that runs of ``specs`` can produce."""
    tiers = max(PLATFORMS[s["platform"]["kind"]].tiers_of(s["platform"]) for s in specs)
    metrics = run_columns(tiers)
    jobs = job_columns(tiers)
    for kind in dict.fromkeys(s["platform"]["kind"] for s in specs):
        metrics += [m for m in PLATFORMS[kind].EXTRA_METRICS if m not in metrics]
        jobs += [c for c in PLATFORMS[kind].EXTRA_JOB_COLUMNS if c not in jobs]
    return metrics, jobs


def run_sweep(
    config: SweepConfig,
    out: str | Path,
    *,
    backend: str = "ray",
    backend_options: Mapping[str, Any] | None = None,
    with_jobs: bool = False,
    force: bool = False,
    retry_failed: bool = False,
    max_cells: int | None = None,
    progress: bool = True,
    on_batch: Callable[[int], None] | None = None,
    cell_timeout: float | None = None,
) -> SweepOutcome:
    """Run the cells of ``config`` that the store under ``out`` lacks.

    Args:
        config: The sweep.
        out: Results folder; the sweep writes ``out/NAME``.
        backend: A registered backend's name (:data:`~.backends.BACKENDS`).
        backend_options: Its options (:func:`~.backends.backend_options`), such as Ray's ``address``.
        with_jobs: Also store per-job records.
        force: Recompute every cell (readers keep the newest row).
        retry_failed: Recompute cells stored as failed.
        max_cells: Compute at most this many cells in this run.
        progress: Show a progress bar.
        on_batch: Called with the number of cells stored so far after each batch (for tests).
        cell_timeout: Seconds after which a cell is stopped and stored as failed (0: no limit);
            None takes the config's ``cell_timeout``, else each cell's default from its expected
            cost (:func:`~.estimate.cell_time_limits`).
    """
    if cell_timeout is not None:
        check_cell_timeout(cell_timeout, "--cell-timeout")
    cells = expand(config)  # every cell validated before anything is written, the lock included
    # Planned under the folder's lock, so that no other writer stores a cell between this one
    # reading what is stored and writing what is not.
    with FolderLock(Path(out) / config.name, "sweep") as lock:
        started = time.perf_counter()
        cells, todo, store, lacking = plan(
            config, out, force=force, retry_failed=retry_failed, cells=cells, with_jobs=with_jobs
        )
        stored_before = len(cells) - len(todo)
        if max_cells is not None:
            todo = todo[:max_cells]  # (the first in grid order: which cells, not when)
        estimate = estimate_todo(store, todo)
        costs = estimate.costs
        limit = config.cell_timeout if cell_timeout is None else cell_timeout
        limits = cell_time_limits(estimate) if limit is None else [limit or None] * len(todo)
        # Costliest first, so that no long cell starts last while the other workers idle.
        order = sorted(range(len(todo)), key=lambda i: -costs[i])
        todo = [todo[i] for i in order]
        limits = [limits[i] for i in order]
        cost_of = {todo[k].cell_id: costs[i] for k, i in enumerate(order)}
        points = cell_points(todo)
        point_of = {cell.cell_id: point for cell, point in zip(todo, points)}
        # (Restarted once the backend is up: its start-up is not work.)
        eta = Eta(
            [cost_of[cell.cell_id] for cell in todo],
            points=points,
            seconds_per_cost=1.0 if estimate.in_seconds else None,
        )
        again_for_jobs = sum(1 for c in todo if c.cell_id in lacking)  # stored, computed again for --jobs
        if todo and lock.read_only:
            raise TiersweepError(
                f"{store.root}: cannot store results here (read-only or not ours): {len(todo)} cell(s) "
                f"to compute; give another --out"
            )
        if not lock.read_only:  # (writes the manifest only if it changes)
            _prepare(store, config, cells)
        bar = None  # shown once the backend has started (a backend that fails to start says so alone)
        failures = 0

        def advance(outcomes: list[Outcome]) -> None:
            nonlocal failures
            failures += sum(o.status != "ok" for o in outcomes)
            for outcome in outcomes:
                # (A failed cell's time says nothing of its point's other seeds.)
                wall = outcome.row.get("wall_seconds") if outcome.status == "ok" else None
                eta.finished(cost_of.get(outcome.cell_id, 0.0), point=point_of.get(outcome.cell_id), wall=wall)
            if bar is not None:
                bar.set_postfix_str(f"{eta.text()} left, failed={failures}", refresh=False)
                bar.update(len(outcomes))
            if on_batch is not None:
                on_batch(runner.computed)

        runner = CellRunner(
            store,
            config.name,
            backend=backend,
            backend_options=backend_options,
            with_jobs=with_jobs,
            on_outcomes=advance,
        )
        try:
            with runner:
                if todo:
                    runner.start()
                    eta.restart(runner.workers)
                    bar = _progress(len(todo), progress, f"{eta.text()} left")
                runner.submit(todo, limits)
                while runner.busy:
                    runner.step_drawing(bar)
        finally:
            if bar is not None:
                bar.close()
        stored = store.stored_ids()
        failed = sum(1 for c in cells if stored.get(c.cell_id) == "failed")
        elapsed = time.perf_counter() - started
        driver = elapsed - runner.waited_seconds - runner.startup_seconds
        return SweepOutcome(
            cells,
            stored_before,
            runner.computed,
            failed,
            elapsed,
            driver,
            store.root,
            backend,
            {
                "startup_seconds": runner.startup_seconds,
                "again_for_jobs": again_for_jobs,
                "notes": runner.notes,
                "paths": dict(runner.paths),
            },
        )


def estimate_todo(store: Store, todo: Sequence[Cell]) -> CellEstimate:
    """The expected cost of the cells ``todo`` (:func:`~.estimate.estimate_cells`) from every
    run ``store`` holds (all code digests), reading only the columns the estimate needs: what
    a sweep orders and limits its cells by, and what its dry run reports."""
    if not todo:
        return estimate_cells(todo, None)
    table = read_table(store.runs, latest_only=False, columns=columns_read(todo))
    return estimate_cells(todo, table.to_pandas() if table.num_rows else None)


def _progress(total: int, enabled: bool, postfix: str = "? left") -> Any:
    """A progress bar in cells whose time left is the cost-weighted estimate (:class:`Eta`,
    in the postfix, first ``postfix``), not tqdm's own from cell counts."""
    if not enabled:
        return None
    from tqdm import tqdm

    return tqdm(
        total=total,
        unit="cell",
        desc="cells",
        dynamic_ncols=True,
        bar_format="{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} [{elapsed}{postfix}]",
        postfix=postfix,
    )
