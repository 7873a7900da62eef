"""``tiersweep sweep`` and ``tiersweep compact``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .config import load_sweep_config
from .driver import SUMMARY_METRICS, estimate_todo, plan, run_sweep
from .estimate import expected_time_line
from .store import compact
from .summary import failure_lines, format_summary, paths_lines, summary_frame

__all__ = ["sweep_command", "compact_command"]


def sweep_command(
    config_path: str,
    *,
    out: str,
    backend: str,
    backend_options: Mapping[str, Any] | None,
    with_jobs: bool,
    force: bool,
    retry_failed: bool,
    max_cells: int | None,
    dry_run: bool,
    overrides: Sequence[str] = (),
    cell_timeout: float | None = None,
) -> int:
    """Run (or, with ``dry_run``, list) a sweep; print its summary. Exit status 1 if any cell failed.

    Args:
        overrides: ``KEY=VALUE`` overrides of the config's base spec (``--set``).
        cell_timeout: ``--cell-timeout`` (see :func:`~.driver.run_sweep`).
    """
    config = load_sweep_config(config_path, overrides)
    if dry_run:
        cells, todo, store, lacking = plan(config, out, force=force, retry_failed=retry_failed, with_jobs=with_jobs)
        pending = {c.cell_id for c in todo}
        print(
            f"sweep {config.name}: {len(cells)} cells, {len(cells) - len(todo)} stored in {store.root}, "
            f"{len(todo)} to compute"
        )
        for cell in cells:
            point = ", ".join(f"{k}={v}" for k, v in cell.point.items())
            state = "no jobs" if cell.cell_id in lacking else "todo" if cell.cell_id in pending else "stored"
            print(f"  {cell.index:>5}  {cell.cell_id}  seed={cell.seed:<10}  {state:<7}  {point}")
        print(expected_time_line(estimate_todo(store, todo)))
        return 0
    outcome = run_sweep(
        config,
        out,
        backend=backend,
        backend_options=backend_options,
        with_jobs=with_jobs,
        force=force,
        retry_failed=retry_failed,
        max_cells=max_cells,
        cell_timeout=cell_timeout,
    )
    frame = summary_frame(outcome.cells, str(outcome.store / "runs"), SUMMARY_METRICS)
    print(format_summary(frame))
    print(
        f"\nsweep {config.name}: {len(outcome.cells)} cells; {outcome.computed} computed now "
        f"({outcome.elapsed_seconds:.1f} s on {outcome.backend}), {outcome.stored_before} already stored, "
        f"{outcome.failed} failed"
    )
    if outcome.extra.get("again_for_jobs"):
        print(
            f"{outcome.extra['again_for_jobs']} of the computed cells were stored without per-job records "
            f"or segments (a run without --jobs, or their file moved out) and were computed again for them"
        )
    if outcome.computed:
        print(
            f"driver overhead {outcome.overhead_per_cell_ms:.1f} ms per cell; "
            f"backend start-up {outcome.extra['startup_seconds']:.1f} s"
        )
    for line in paths_lines(outcome.extra.get("paths", {})):
        print(line)
    for note in outcome.extra.get("notes", []):
        print(f"note: {note}; see the README's Ray section")
    runs = Path(outcome.store) / "runs"
    print(f"results: {runs} (Parquet: pandas.read_parquet('{runs}'))")
    if outcome.failed:
        for line in failure_lines(outcome.cells, str(runs)):
            print(line)
        return 1
    return 0


def compact_command(root: str) -> int:
    """Merge a sweep's part files."""
    before, after = compact(root)
    print(f"{root}: {before} files -> {after}")
    return 0
