"""The unit of work every backend runs: a batch of cells, each simulated and turned into a row.

:func:`run_batch` is a pure function of its arguments (the cells' specs), importable by any
worker process; a cell that raises becomes a ``failed`` row with the error text, and a cell
that runs past its time limit is stopped and becomes a ``failed`` row saying so, so one bad cell
never takes a batch or a sweep down.
"""

from __future__ import annotations

import os
import time
import traceback
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core.simulate import run_plan
from ..core.version import MODEL_VERSION, code_digest, code_origin
from . import trace_cache
from .cells import Cell, flatten
from .records import Outcome, Task
from .time_limit import CellTimeout, time_limit

__all__ = ["run_batch", "package_version", "task_for", "failed_outcomes"]


def package_version() -> str:
    """The installed tiersweep version (``0+unknown`` when run from a source tree)."""
    try:
        from importlib.metadata import version

        return version("tiersweep")
    except Exception:  # noqa: BLE001 - any failure means "not installed"
        return "0+unknown"


def task_for(cell: Cell, sweep: str, time_limit: float | None = None) -> Task:
    """The task a worker runs of ``cell``; ``time_limit``: the seconds after which the worker
    stops the cell and stores it as failed (None: no limit)."""
    spec = cell.spec
    trace = spec["workload"]["trace"]
    plan = cell.plan
    if trace is not None and not os.path.isabs(trace):
        # Workers may start elsewhere: run with the absolute path, store the path as given.
        plan = plan.with_trace(os.path.abspath(trace))
    return Task(
        index=cell.index,
        cell_id=cell.cell_id,
        sweep=sweep,
        spec=spec,
        plan=plan,
        replicate=cell.replicate,
        trace_sha256=cell.trace_sha256,
        time_limit=time_limit,
    )


def _base_row(task: Task, version: str, host: str) -> dict[str, Any]:
    row: dict[str, Any] = {
        "cell_id": task.cell_id,
        "cell_index": task.index,
        "sweep": task.sweep,
        "status": "ok",
        "error": None,
        "wall_seconds": 0.0,
        "model_version": MODEL_VERSION,
        "code_digest": code_digest(),
        "package_version": version,
        "seed": task.spec["seed"],
        "replicate": task.replicate,
        # The path is stored as given and the content too, so that a log regenerated at the
        # same path reads as another input (the worker has checked the bytes it read match).
        "trace_digest": task.trace_sha256,
        "host": host,
    }
    row.update({key: value for key, value in flatten(task.spec).items() if key != "seed"})
    return row


def failed_outcomes(tasks: Sequence[Task], error: BaseException | str) -> list[Outcome]:
    """Outcomes marking every task of a batch failed (its worker was lost for good)."""
    text = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
    outcomes = []
    for task in tasks:
        row = _base_row(task, package_version(), "")
        row.update(status="failed", error=text)
        outcomes.append(Outcome(row))
    return outcomes


def run_batch(tasks: Sequence[Task], with_jobs: bool = False) -> list[Outcome]:
    """Simulate each task's spec; return one :class:`~.records.Outcome` per task, in order.

    Each outcome has ``row`` (cell_id, cell_index, sweep, status ``ok``/``failed``, error,
    wall_seconds, model_version, code_digest, package_version, seed, replicate, trace_digest, host,
    flattened spec columns, ``report.*`` counts and the run metrics), ``jobs`` (per-job
    columns) and ``segments`` (every stay of a job on its VMs), the last two only
    ``with_jobs``, and ``code`` (the folder of the simulator's source this worker imported).
    """
    version = package_version()
    host = os.uname().nodename
    outcomes = []
    for task in tasks:
        started = time.perf_counter()
        row = _base_row(task, version, host)
        jobs = segments = None
        path = ""
        limit = task.time_limit
        try:
            with time_limit(limit):
                result = run_plan(
                    task.plan,
                    record_segments=with_jobs,
                    trace_sha256=task.trace_sha256,
                    read_trace=trace_cache.read_trace,
                )
        except CellTimeout:
            row["status"] = "failed"
            row["error"] = (
                f"CellTimeout: stopped after its time limit of {limit:g} s; if the cell is merely slow, give a "
                f"longer limit (--cell-timeout SECONDS or the config's cell_timeout; 0 for none) and run again "
                f"with --retry-failed"
            )
        except Exception as error:  # noqa: BLE001 - a failing cell is data, not a crash
            row["status"] = "failed"
            last = traceback.extract_tb(error.__traceback__)[-1:]
            where = f" (at {last[0].filename}:{last[0].lineno})" if last else ""
            row["error"] = f"{type(error).__name__}: {error}{where}"
        else:
            row.update({f"report.{key}": value for key, value in result.report.items()})
            row.update(result.metrics)
            path = result.path
            if with_jobs:
                jobs = {"cell_id": np.full(len(result.jobs["job_id"]), task.cell_id), **result.jobs}
                segments = {"cell_id": [task.cell_id] * len(result.segments["job_id"]), **result.segments}
        row["wall_seconds"] = time.perf_counter() - started
        outcomes.append(Outcome(row, jobs, segments, code_origin(), path))
    return outcomes
