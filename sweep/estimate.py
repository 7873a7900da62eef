"""How long a cell is expected to take: the order a sweep submits its cells in, and its ETA.

A sweep's cells differ in cost by two orders of magnitude (FCFS at load 0.6 against AMCBF at
load 1.0 on the same jobs). Run in grid order, the costliest come last: the last worker is
still busy with one long cell while the others idle, and an ETA from the cells finished so
far (the cheap ones) runs far short. So the driver submits cells costliest first and
estimates the time left from each cell's expected cost, not from cell counts.

The expected cost of a cell is, in order of preference:

1. the median wall time of stored runs of the same spec but for the seed (earlier replicates,
   or runs by earlier code, whose rows stay in the folder under other cell ids);
2. otherwise ``jobs x (per_job + per_process x processes per job) x (0.5 + load)``, scaled to
   seconds by the median ratio of wall time to this formula over the stored runs it could be
   matched with (without any, the numbers are in unnamed units: good for ordering, and the ETA
   then calibrates itself as cells finish, see :class:`Eta`).

``per_job`` and ``per_process`` are the policy's declared costs against EASY's per job
(``relative_cost`` and ``process_cost``, or ``compiled_costs`` where the compiled whole run
takes the policy's runs in this process, as this machine's build tells: there the
consolidation policies cost about what EASY does per job, against ten times on the Python
path). The processes per job are the mean size of the cell's jobs (evenly spaced lines of
those of its trace it reads, or jobs drawn from its model on its machine;
:data:`SIZE_SAMPLE_JOBS` at most): a model's sizes grow with the machine, and with them the
work of the policies that place process by process, so a study over machine sizes would
otherwise expect the same of 1,000 nodes and of 93,312.

The expected cost also sets each cell's default time limit (:func:`cell_time_limits`), which
errs long where the estimate is the formula's.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from functools import lru_cache
from typing import Any, NamedTuple

from ..core.compiled_run import takes_whole_run
from ..core.errors import TiersweepError
from ..core.policies import POLICIES
from ..core.workloads.build import MODEL_DEFAULT_NODES
from ..core.workloads.models import check_model, generate_checked
from ..core.workloads.rules import jobs_from_records
from ..core.workloads.swf import header_int, read_swf
from .cells import Cell, flatten

__all__ = [
    "expected_costs",
    "estimate_costs",
    "default_time_limits",
    "cell_time_limits",
    "estimate_cells",
    "CellEstimate",
    "expected_time_line",
    "duration_text",
    "columns_read",
    "formula_cost",
    "point_key",
    "Eta",
    "cell_points",
    "policy_costs",
    "processes_per_job",
    "SIZE_SAMPLE_JOBS",
    "CELL_TIMEOUT_FACTOR",
    "MIN_CELL_TIMEOUT",
]

#: A guess of a trace's job count from its size when the spec does not give ``jobs``: an SWF
#: line is about 80 bytes, and gzip shrinks logs about eightfold.
_BYTES_PER_JOB = 80
_GZIP_RATIO = 8


def _trace_jobs(path: str | None) -> float:
    if not path:
        return 10_000.0
    try:
        size = os.path.getsize(path)
    except OSError:
        return 10_000.0
    return size * (_GZIP_RATIO if path.endswith(".gz") else 1) / _BYTES_PER_JOB


def formula_cost(spec: Mapping[str, Any]) -> float:
    """``jobs x (per_job + per_process x processes per job) x (0.5 + load)`` of a validated spec
    (unnamed units; see the module).

    Queues grow with the load, and with them the work per event of backfilling and
    consolidation; the linear term is a rough fit of the quickstart's wall times.
    """
    return _formula(flatten(spec))


#: The spec keys :func:`formula_cost` reads.
_FORMULA_KEYS = (
    "workload.jobs",
    "workload.trace",
    "workload.load",
    "workload.model",
    "workload.preset",
    "workload.params",
    "workload.max_size",
    "workload.size_field",
    "workload.lenient",
    "platform.kind",
    "platform.nodes",
    "policy.name",
)

#: How many jobs :func:`processes_per_job` draws from a model, or evenly spaced lines it reads
#: of a trace: sizes are heavy-tailed (the mean of 1,000 Lublin jobs on 10,000 nodes ranges
#: over 39-170 from seed to seed, of 20,000 over 95-134, as the runs' own do), and 20,000 cost
#: tens of milliseconds per grid point.
SIZE_SAMPLE_JOBS = 20_000


def policy_costs(name: Any, platform_kind: Any = None) -> tuple[float, float]:
    """``(per job, per process)``: what policy ``name``'s runs on ``platform_kind`` are expected
    to cost against EASY's per job, on the path they take in this process (see the module);
    ``(1, 0)`` for a name no policy has."""
    cls = POLICIES[name] if isinstance(name, str) and name in POLICIES else None
    if cls is None:
        return 1.0, 0.0
    compiled = getattr(cls, "compiled_costs", None)
    kind = platform_kind if isinstance(platform_kind, str) else None
    if compiled is not None and takes_whole_run(name, kind):
        return float(compiled[0]), float(compiled[1])
    return float(getattr(cls, "relative_cost", 1.0)), float(getattr(cls, "process_cost", 0.0))


def _given(value: Any) -> Any:
    """A spec value as a flattened spec or a stored row holds it; None where missing (a NaN)."""
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else value


def _count(value: Any) -> int | None:
    """A positive whole number, or None."""
    value = _given(value)
    return int(value) if isinstance(value, (int, float)) and value >= 1 else None


def processes_per_job(flat: Mapping[str, Any]) -> float:
    """The mean job size of the workload of a flattened spec or stored row, as its runs read the
    sizes: of evenly spaced lines of those it reads of its trace, or of jobs drawn from its model
    on its machine (:data:`SIZE_SAMPLE_JOBS` at most); 1 where they cannot be had (a missing
    trace, a bad parameter: the run itself will say what is wrong)."""
    params = _given(flat.get("workload.params"))
    if isinstance(params, str):
        try:
            params = json.loads(params)
        except ValueError:
            return 1.0
    jobs = _count(flat.get("workload.jobs"))
    key = (
        _given(flat.get("workload.trace")),
        _given(flat.get("workload.model")),
        _given(flat.get("workload.preset")),
        json.dumps(params or {}, sort_keys=True),
        _count(flat.get("workload.max_size")),
        _given(flat.get("workload.size_field")) or "requested",
        bool(_given(flat.get("workload.lenient"))),
        _count(flat.get("platform.nodes")),
        jobs,
    )
    return _sampled_processes_per_job(*key)


@lru_cache(maxsize=4)
def _parsed_trace(path: str, lenient: bool, stamp: tuple[int, int]) -> Any:
    """The parsed log at ``path`` (``stamp``: its modification time and size, so that a file
    written again is read again): the cells of one trace differ in jobs and machine. Cleared by
    :func:`estimate_cells` once it is done (a large log's table is tens of megabytes)."""
    return read_swf(path, lenient=lenient)


@lru_cache(maxsize=256)
def _sampled_processes_per_job(
    trace: str | None,
    model: str | None,
    preset: Any,
    params: str,
    max_size: int | None,
    size_field: str,
    lenient: bool,
    nodes: int | None,
    jobs: int | None,
) -> float:
    try:
        if trace is not None:
            # The jobs the cell reads (a log's first thousand jobs can be of another size than
            # the rest: CEA-Curie's average 298 processes, its whole log 696).
            # Evenly spaced lines of them stand for the rest (a machine-size study of one log
            # estimates each of its sizes in milliseconds, not in a pass over every job).
            status = os.stat(trace)
            log = _parsed_trace(trace, lenient, (status.st_mtime_ns, status.st_size))
            records = log.records[:jobs] if jobs else log.records
            records = records[:: max(1, len(records) // SIZE_SAMPLE_JOBS)]
            jobs = None
            nodes = nodes or header_int(log.header, "MaxProcs", "MaxNodes")
        elif model is not None:
            nodes = nodes or MODEL_DEFAULT_NODES
            jobs = min(jobs or SIZE_SAMPLE_JOBS, SIZE_SAMPLE_JOBS)
            checked = check_model(model, preset, json.loads(params), machine_size=nodes, max_size=max_size)
            records = generate_checked(checked, jobs, seed=0).records
        else:
            return 1.0
        sample, _ = jobs_from_records(records, capacity=nodes, jobs=jobs, size_field=size_field)
    except (TiersweepError, ValueError, TypeError, OSError):
        return 1.0  # (an estimate never stops a sweep: the cell's own run says what is wrong)
    return sum(job.size for job in sample) / len(sample) if sample else 1.0


def _formula(flat: Mapping[str, Any]) -> float:
    """:func:`formula_cost` of a flattened spec or a stored row (dotted keys)."""
    jobs = _count(flat.get("workload.jobs")) or _trace_jobs(flat.get("workload.trace"))
    load = flat.get("workload.load")
    load = float(load) if isinstance(load, (int, float)) and math.isfinite(load) else 1.0
    per_job, per_process = policy_costs(flat.get("policy.name"), _given(flat.get("platform.kind")))
    weight = per_job + (per_process * processes_per_job(flat) if per_process else 0.0)
    return float(jobs) * weight * (0.5 + max(load, 0.0))


def _text(value: Any) -> str:
    """A spec value as a comparable text: numbers as stored, lists and mappings as sorted
    JSON (how the store keeps them), missing as empty."""
    if _given(value) is None:
        return ""
    if isinstance(value, (list, dict)):
        return json.dumps(value, sort_keys=True)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))  # an int stored in a float column matches the spec's int
    return str(value)


def point_key(flat: Mapping[str, Any], keys: Sequence[str]) -> tuple[str, ...]:
    """The comparable values of ``keys`` in a flattened spec (or stored row)."""
    return tuple(_text(flat.get(key)) for key in keys)


def _flats(cells: Sequence[Cell]) -> list[dict[str, Any]]:
    """The cells' specs flattened to dotted keys, the seed left out (replicates match)."""
    return [{k: v for k, v in flatten(c.spec).items() if k != "seed"} for c in cells]


def cell_points(cells: Sequence[Cell]) -> list[str]:
    """Each cell's point: its spec but for the seed, as a text (the cells of one point are
    replicates, expected to take the same time; see :class:`Eta`)."""
    return [json.dumps(flat, sort_keys=True, default=str) for flat in _flats(cells)]


def columns_read(cells: Sequence[Cell]) -> set[str]:
    """The stored-run columns :func:`expected_costs` reads for ``cells`` (all a driver needs
    to load of a large folder)."""
    return {"status", "wall_seconds", *_FORMULA_KEYS, *(k for flat in _flats(cells) for k in flat)}


def expected_costs(cells: Sequence[Cell], stored: Any = None) -> list[float]:
    """The expected cost of each cell (seconds when the store allows it; see the module).

    Args:
        cells: The cells to estimate.
        stored: The folder's stored runs as a DataFrame (any code; its ``ok`` rows are used), or
            None; the columns of :func:`columns_read` suffice.
    """
    return estimate_costs(cells, stored)[0]


def estimate_costs(cells: Sequence[Cell], stored: Any = None) -> tuple[list[float], bool]:
    """:func:`expected_costs`, and whether they are seconds (stored runs calibrated them)."""
    estimate = estimate_cells(cells, stored)
    return estimate.costs, estimate.in_seconds


class CellEstimate(NamedTuple):
    """What :func:`estimate_cells` knows of each cell's cost."""

    #: The expected costs (:func:`expected_costs`).
    costs: list[float]
    #: Whether they are seconds (stored runs calibrated them).
    in_seconds: bool
    #: Per cell, whether its cost is its replicates' stored wall time.
    measured: list[bool]
    #: Per cell, :func:`formula_cost` (unnamed units).
    formula: list[float]
    #: Stored runs the formula was scaled to seconds by (0: not in seconds).
    calibrating_runs: int = 0


def estimate_cells(cells: Sequence[Cell], stored: Any = None) -> CellEstimate:
    """The expected cost of each cell, whether each is measured, and its formula (see
    :func:`expected_costs` for ``stored``): one pass over the stored runs serves both the
    order of the cells and their time limits (:func:`cell_time_limits`)."""
    try:
        return _estimate_cells(cells, stored)
    finally:
        _parsed_trace.cache_clear()


def _estimate_cells(cells: Sequence[Cell], stored: Any) -> CellEstimate:
    flats = _flats(cells)
    formula = [_formula(flat) for flat in flats]
    none_measured = [False] * len(cells)
    if stored is None or not len(stored) or "wall_seconds" not in stored.columns:
        return CellEstimate(formula, False, none_measured, formula)
    ok = stored[(stored["status"] == "ok") & stored["wall_seconds"].notna()] if "status" in stored.columns else stored
    if ok.empty:
        return CellEstimate(formula, False, none_measured, formula)
    keys = sorted({k for flat in flats for k in flat} & set(ok.columns))
    seen: dict[tuple[str, ...], list[float]] = {}
    ratios = []
    wanted = sorted((set(keys) | set(_FORMULA_KEYS)) & set(ok.columns))  # (stores can be large)
    for row, wall in zip(ok[wanted].to_dict("records"), ok["wall_seconds"].tolist()):
        seen.setdefault(point_key(row, keys), []).append(float(wall))
        cost = _formula(row)
        if cost > 0:
            ratios.append(float(wall) / cost)
    scale = statistics.median(ratios) if ratios else 1.0
    out, measured = [], []
    for flat, cost in zip(flats, formula):
        walls = seen.get(point_key(flat, keys))
        out.append(statistics.median(walls) if walls else cost * scale)
        measured.append(bool(walls))
    return CellEstimate(out, bool(ratios), measured, formula, len(ratios))


def duration_text(seconds: float) -> str:
    """A duration as the progress bar and the dry run give it: ``45s``, ``3m05s`` or ``1h02m``."""
    whole = int(round(seconds))
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


def expected_time_line(estimate: CellEstimate, cpus: int | None = None) -> str:
    """One line for a dry run: the CPU time the cells of ``estimate`` are expected to take, and
    what it rests on, or how to get an estimate where nothing is stored yet.

    The total is what to read: the formula orders cells well but misses what a parameter does
    to the schedule (a migration cost, a threshold), and the errors of single cells largely
    cancel in a sum. Morris screens of AMCBF on 10,000 CEA-Curie jobs: 452 s expected for 40
    cells from 32 stored runs, 546 s taken; 28 min expected for 68 cells from the design's 4
    first (``--max-cells 4``; 23-28 s each, against 16 s on average), 18 min taken.
    """
    count = len(estimate.costs)
    if not count:
        return "expected time: none (nothing to compute)"
    if not estimate.in_seconds:
        return (
            f"expected time: not known before some of its cells are stored (the cost formula is in no unit "
            f"until runs scale it): compute a few with --max-cells {min(count, 4)} and dry-run again"
        )
    total = float(sum(estimate.costs))
    measured = sum(estimate.measured)
    parts = []
    if measured:
        parts.append(f"{measured} from their other seeds' stored runs")
    if count - measured:
        parts.append(f"{count - measured} from the cost formula scaled by {estimate.calibrating_runs} stored runs")
    cpus = cpus or os.cpu_count() or 1
    return (
        f"expected time: about {duration_text(total)} of CPU for the {count} cells to compute "
        f"({'; '.join(parts)}), some {duration_text(total / cpus)} on this machine's {cpus} CPUs"
    )


#: A cell's default time limit is this many times its expected seconds...
CELL_TIMEOUT_FACTOR = 20.0
#: ...and at least this many seconds (start-up, a slow or busy machine, a poor estimate).
MIN_CELL_TIMEOUT = 60.0
#: Seconds per unit of :func:`formula_cost` assumed when no stored run calibrates it: about ten
#: times what cells of 2,000 jobs took on a busy two-core machine (1e-4), so that an estimate
#: not yet calibrated errs towards a long limit.
UNCALIBRATED_SECONDS_PER_UNIT = 1e-3


def default_time_limits(costs: Sequence[float], in_seconds: bool) -> list[float]:
    """The default time limit of cells of expected ``costs`` (as :func:`estimate_costs` gives
    them): ``max(MIN_CELL_TIMEOUT, CELL_TIMEOUT_FACTOR x expected seconds)``, the costs taken as
    seconds when ``in_seconds``, else converted by :data:`UNCALIBRATED_SECONDS_PER_UNIT`.

    Far above a cell's expected time, so that only a cell that will not end (or a grossly wrong
    estimate) reaches it; a cell stopped by it says how to give a longer limit.
    """
    per_unit = 1.0 if in_seconds else UNCALIBRATED_SECONDS_PER_UNIT
    return [max(MIN_CELL_TIMEOUT, CELL_TIMEOUT_FACTOR * cost * per_unit) for cost in costs]


def cell_time_limits(estimate: CellEstimate) -> list[float]:
    """The default time limit of each cell of ``estimate`` (:func:`estimate_cells`):
    :func:`default_time_limits` of its expected seconds.

    A cell whose replicates are stored expects their median wall time. Any other cell expects
    the larger of the formula calibrated on the stored runs and the formula at the pessimistic
    :data:`UNCALIBRATED_SECONDS_PER_UNIT`: the formula counts jobs, not processes, so runs of
    other grid points can be of far less work per job (a study over machine sizes or logs: the
    same 3,000 Lublin jobs take some 40 times longer on 93,312 nodes than on 16), and a limit
    calibrated on them stopped the larger cells. The limit stops cells that never end, not
    slow ones: where the estimate is a guess, it errs long.
    """
    guessed = default_time_limits(estimate.formula, False)
    if not estimate.in_seconds:
        return guessed
    calibrated = default_time_limits(estimate.costs, True)
    return [
        limit if known else max(limit, guess) for limit, guess, known in zip(calibrated, guessed, estimate.measured)
    ]


class Eta:
    """The time left of a run whose tasks have expected costs, calibrated as tasks finish.

    ``remaining = (expected wall time left) x (elapsed / wall time finished)``, where a task's
    expected wall time is what the finished tasks of its point took (its other seeds), else its
    expected cost at the ratio of wall time to expected cost of all finished tasks. With costs
    proportional to the true times this is ``(expected cost left) x (elapsed / expected cost
    finished)``: right however unequal the tasks are, where an ETA from task counts is not. The
    points correct what the costs get wrong once a point's first seed is in (a cost formula is
    a compromise between workloads), and the ratio of elapsed to wall time is the workers'
    parallelism. Before the first task finishes there is no estimate.

    Args:
        costs: Expected cost of every task (any unit).
        clock: Seconds since an arbitrary origin (a parameter for tests).
        points: The point of every task (any hashable; tasks of one point are expected to take
            the same time), or None (no task stands for another).
        seconds_per_cost: Seconds per unit of cost where stored runs calibrated the costs
            (:func:`estimate_cells`: 1.0 when its costs are in seconds), or None. With it, the
            time left before the first task finishes is the costs' seconds over the workers
            (:meth:`restart`), not unknown: a sweep of cells of minutes says from its start.
    """

    def __init__(
        self,
        costs: Sequence[float],
        clock: Callable[[], float] = time.monotonic,
        points: Sequence[Hashable] | None = None,
        seconds_per_cost: float | None = None,
    ) -> None:
        self.total = float(sum(costs))
        self.done = 0.0
        self._walls = 0.0  # the finished tasks' wall times (their costs where none is given)
        self._clock = clock
        self._started = clock()
        self._seconds_per_cost = seconds_per_cost
        self._workers = 1
        # Per point: the tasks left and their expected cost; the wall times of those finished.
        self._left: dict[Hashable, list[float]] = {}
        self._measured: dict[Hashable, list[float]] = {}
        for point, cost in zip(points or (), costs):
            left = self._left.setdefault(point, [0.0, 0.0])
            left[0] += 1
            left[1] += float(cost)
        # Over the measured points with tasks left, kept as tasks finish (so that the time left
        # costs the same whatever the number of points): their tasks' expected wall time, and
        # their expected cost (taken out of the cost left, which is otherwise priced per cost).
        self._measured_wall = 0.0
        self._measured_cost = 0.0

    def restart(self, workers: int = 1) -> None:
        """Count elapsed time from now (the work starts now, on ``workers`` at once)."""
        self._started = self._clock()
        self._workers = max(1, int(workers))

    def finished(self, cost: float, *, point: Hashable = None, wall: float | None = None) -> None:
        """A task of expected cost ``cost`` has finished (of ``point``, taking ``wall`` seconds of
        its own, when known)."""
        self.done += float(cost)
        self._walls += float(cost) if wall is None else float(wall)
        left = self._left.get(point)
        if left is None:
            return
        self._count_measured(point, -1.0)
        left[0] -= 1
        left[1] -= float(cost)
        if wall is not None:
            measured = self._measured.setdefault(point, [0.0, 0.0])
            measured[0] += 1
            measured[1] += float(wall)
        self._count_measured(point, 1.0)

    def _count_measured(self, point: Hashable, sign: float) -> None:
        """Add (``sign`` 1) or take out (-1) ``point``'s part of the measured points' sums."""
        measured = self._measured.get(point)
        if measured is None:
            return
        count, cost = self._left[point]
        if count > 0:
            self._measured_wall += sign * count * measured[1] / measured[0]
            self._measured_cost += sign * cost

    def remaining_seconds(self) -> float | None:
        """Seconds left, or None before anything finished (unless the costs are calibrated:
        then their seconds over the workers, standing until a task finishes)."""
        if self.done <= 0 or self._walls <= 0:
            if self._seconds_per_cost is None or self.done > 0:
                return None
            return self.total * self._seconds_per_cost / self._workers
        elapsed = self._clock() - self._started
        per_cost = self._walls / self.done
        left = (self.total - self.done - self._measured_cost) * per_cost + self._measured_wall
        return max(0.0, left * elapsed / self._walls)

    def text(self) -> str:
        """The time left for a progress bar: ``?``, ``45s``, ``3m05s`` or ``1h02m``."""
        left = self.remaining_seconds()
        return "?" if left is None else duration_text(left)
