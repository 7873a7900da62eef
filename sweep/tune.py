"""Threshold tuning with Optuna, ask-and-tell, on the sweep machinery.

Each trial is a set of parameter values; its cells (one per seed and spec variant) run as sweep
cells through a :class:`CellRunner` on any backend, several trials in flight at once, and go
through the same Parquet store, so a cell already computed (by this study, an earlier run of
it, or a sweep writing to the same folder) is reused, never recomputed. The objective of a
trial is the mean of each metric over its cells; the spread (standard deviation) and the cell
ids are kept as trial attributes. A trial with a failed cell, or whose values make an invalid
spec, is told as failed (with the error) and the study goes on. With check seeds, the best
trial and the defaults run again on them once the trials are done (:class:`HeldOutCheck`).

With one objective, each cell's value is reported to Optuna as it finishes (the cell's index
is the step), and with a pruner (:mod:`~tiersweep.sweep.tune_pruning`) a trial runs its cells
a few at a time in the study's common order: once the pruner finds it worse than the best
trial it is told as pruned and its remaining cells are never run (their ids are kept as the
``skipped_cell_ids`` attribute); a failed cell stops its trial the same way.

The study lives in an Optuna storage (an SQLite file next to the results by default, or any
storage URL, ``journal:PATH`` for a journal file: see :mod:`~tiersweep.sweep.study_storage`);
re-running continues it, a trial an interrupted run left half done included. A trial it left
before drawing all its parameters (Optuna creates a trial, then draws its values) is no point
of the search space: it is told as failed, does not count towards the trials to reach, and a
fresh trial is asked in its place.

Setting ``TIERSWEEP_TUNE_PAUSE_AFTER_REPORT=PATH`` (:data:`PAUSE_VARIABLE`) makes the tuner,
right after a trial reports a cell's value, create the file ``PATH`` and wait until it is
removed (or the process is signalled): a test hook, so that a run can be interrupted at a known
point of a trial instead of by racing it.
"""

from __future__ import annotations

import json
import math
import os
import socket
import statistics
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from ..core.errors import SpecError, TiersweepError
from ..core.safe_files import atomic_writer
from ..core.spec import canonical_key
from .cells import Cell, cell_id, flatten, replicate_seed
from .driver import result_columns
from .folder_lock import FolderLock
from .reaper import start_time
from .records import Outcome
from .redact import redact
from .runner import CellRunner
from .store import Store, read_table, spec_column_types
from .study_storage import default_storage_url, make_storage, storage_errors, storage_url
from .tune_config import TuneConfig, _corners, trial_plan, trial_spec
from .tune_pruning import SKIPPED, instance_order, make_pruner, skipped_json

__all__ = ["TuneOutcome", "HeldOutCheck", "CheckPair", "run_tuning", "storage_url", "make_storage", "PAUSE_VARIABLE"]

#: The environment variable of the pause hook (see the module's docstring).
PAUSE_VARIABLE = "TIERSWEEP_TUNE_PAUSE_AFTER_REPORT"

#: The user attribute set on a trial failed because it was left before its parameters were all
#: drawn; such a trial does not count towards the trials to reach.
UNDRAWN = "tiersweep.undrawn"


@dataclass
class TuneOutcome:
    """What a tuning run produced.

    Attributes:
        study: The Optuna study.
        best: The best trial (single objective) or the Pareto front (several).
        baseline: Per objective, ``(mean, spread)`` with the parameters at their spec defaults,
            over the same seeds and variants.
        computed: Cells computed by this run; reused: cells taken from the store.
        root: The results folder.
        storage: The study's storage URL.
        check: The held-out check (see :class:`HeldOutCheck`), when the config asks one.
    """

    study: Any
    best: list[Any]
    baseline: dict[str, tuple[float, float]]
    baseline_params: dict[str, Any]
    computed: int
    reused: int
    root: Path
    storage: str = ""
    files: dict[str, Path] = field(default_factory=dict)
    #: Notices of the backend's start-up, for the closing summary (Ray's token notice).
    notes: list[str] = field(default_factory=list)
    #: How many cells computed now ran on each path (``CellRunner.paths``).
    paths: dict[str, int] = field(default_factory=dict)
    #: The held-out check (None: the config asks none, or no trial completed).
    check: HeldOutCheck | None = None


class CheckPair(NamedTuple):
    """One seed (of one variant) of the held-out check: the best trial's and the defaults' values."""

    variant: str  # the variant's spec keys and values, as JSON ("{}": the base spec)
    seed: int
    best: float
    defaults: float


@dataclass
class HeldOutCheck:
    """The best trial and the defaults run again on seeds the search never saw, in pairs.

    Attributes:
        metric, direction: The objective.
        trial: The best trial's number; params: its parameters.
        seeds: The check's seeds; pairs: one per variant and seed (variants outer, as a trial's
            cells), nan where a cell failed.
        best_is_defaults: The best trial's parameters are the defaults: nothing to compare, no
            cell run, no pair.
        error: The first failed cell's error (None: none failed).
    """

    metric: str
    direction: str
    trial: int
    params: dict[str, Any]
    seeds: list[int]
    pairs: list[CheckPair]
    best_is_defaults: bool = False
    error: str | None = None


def _sampler(config: TuneConfig, resumed_at: int = 0) -> Any:
    """The config's sampler. A study resumed after ``resumed_at`` trials gets a seed derived
    from the config's and that count, so that it does not propose its first points again;
    except a grid's: its seed fixes which point each grid id stands for (the grid skips the
    ids its trials have taken), so a grid re-seeded would run some points again and miss others."""
    import optuna

    seed = config.sampler_seed
    if seed is not None and resumed_at and config.sampler != "grid":
        seed = replicate_seed(seed, resumed_at)
    if config.sampler == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    if config.sampler == "grid":

        class AskTellGridSampler(optuna.samplers.GridSampler):
            """Optuna's grid sampler stops the study from ``after_trial`` once the grid is
            done, which works only inside ``optimize``; here the trial count is capped at the
            grid size instead."""

            def after_trial(self, study, trial, state, values) -> None:  # noqa: ANN001
                return None

        return AskTellGridSampler({p.key: list(p.choices) for p in config.params}, seed=seed)
    if config.sampler == "cmaes":
        return optuna.samplers.CmaEsSampler(seed=seed)
    return (
        optuna.samplers.TPESampler(seed=seed, multivariate=True)
        if len(config.objectives) == 1
        else optuna.samplers.TPESampler(seed=seed)
    )


def _grid_size(config: TuneConfig) -> int:
    size = 1
    for param in config.params:
        size *= len(param.choices)
    return size


@dataclass
class _Evaluation:
    """One trial under way: its cells (a cell's index is the step it reports), the order they
    run in, and what is known of them so far."""

    trial: Any
    cells: list[Cell]
    order: list[int]
    #: Steps reported before this run (a trial an interrupted run left behind).
    reported_before: frozenset[int] = frozenset()
    #: How many cells of ``order`` have been handed out (submitted, awaited or reused).
    started: int = 0
    #: Step -> the cell's row, once known.
    rows: dict[int, dict[str, Any]] = field(default_factory=dict)
    #: Why the trial stops before its last cell (``pruned``, ``failed``); the cells it has in
    #: flight are still awaited and reported.
    stopping: str | None = None

    def waiting(self) -> list[int]:
        """Steps handed out whose rows are not known yet."""
        return [step for step in self.order[: self.started] if step not in self.rows]

    @property
    def finished(self) -> bool:
        """Whether the trial can be told: nothing in flight, and stopped or run to the end."""
        return not self.waiting() and (self.stopping is not None or self.started == len(self.order))


class _Trials:
    """Trials under way, and the rows known so far (from the store or just computed).

    Each trial runs its cells in the study's common order, at most ``width`` of them in flight
    at once (all of them when the study is not pruned), so that a pruned trial leaves the rest
    unrun.
    """

    def __init__(self, config: TuneConfig, known: dict[str, dict[str, Any]], width: int | None) -> None:
        self.config = config
        self.known = known
        self.width = width
        self.order = instance_order(len(config.variants) * len(config.seeds), config.sampler_seed)
        self.next_index = 0
        self.pending: dict[int, _Evaluation] = {}  # trial number -> its evaluation
        self.submitted: set[str] = set()
        self.reused = 0

    def cells(self, values: Mapping[str, Any], seeds: list[int] | None = None) -> list[Cell]:
        """The cells of ``values``: one per variant and seed (by default the tuning seeds)."""
        cells = []
        for variant in self.config.variants:
            for replicate, seed in enumerate(self.config.seeds if seeds is None else seeds):
                plan = trial_plan(self.config, values, variant, seed)
                cells.append(Cell(self.next_index, cell_id(plan.spec), plan, {**variant, **values}, replicate))
                self.next_index += 1
        return cells

    def add(self, trial: Any, cells: list[Cell], reported_before: frozenset[int] = frozenset()) -> _Evaluation:
        """Register a trial (to be advanced with :meth:`hand_out`)."""
        evaluation = _Evaluation(trial, cells, self.order, reported_before)
        self.pending[trial.number] = evaluation
        return evaluation

    def hand_out(self, evaluation: _Evaluation) -> tuple[list[Cell], bool]:
        """Hand out the trial's next cells, up to its width in flight; return the cells that
        must be computed, and whether a known (stored) cell was handed out."""
        width = self.width or len(evaluation.order)
        todo, reused = [], False
        in_flight = len(evaluation.waiting())
        while evaluation.stopping is None and evaluation.started < len(evaluation.order) and in_flight < width:
            cell = evaluation.cells[evaluation.order[evaluation.started]]
            evaluation.started += 1
            in_flight += 1
            if cell.cell_id in self.known:
                self.reused += 1
                reused = True
            else:
                todo.extend(self.claim([cell]))
        return todo, reused

    def claim(self, cells: list[Cell]) -> list[Cell]:
        """Those of ``cells`` neither known nor submitted yet, now marked submitted: the cells
        to compute (a cell two trials, or a trial and the baseline, share is computed once)."""
        todo = [c for c in cells if c.cell_id not in self.known and c.cell_id not in self.submitted]
        self.submitted.update(c.cell_id for c in todo)
        return todo

    def record(self, outcomes: list[Outcome]) -> None:
        for outcome in outcomes:
            self.known[outcome.cell_id] = outcome.row

    def arrived(self, evaluation: _Evaluation) -> list[tuple[int, dict[str, Any]]]:
        """The trial's cells whose rows became known since last asked, in the common order,
        now recorded in ``evaluation.rows``."""
        new = []
        for step in evaluation.waiting():
            row = self.known.get(evaluation.cells[step].cell_id)
            if row is not None:
                evaluation.rows[step] = row
                new.append((step, row))
        return new


def _cell_value(config: TuneConfig, row: Mapping[str, Any]) -> float | None:
    """The first objective's value in a cell's row; None when the cell failed or it is nan."""
    if row.get("status") != "ok":
        return None
    value = float(row[config.objectives[0][0]])
    return None if math.isnan(value) else value


def _evaluate(config: TuneConfig, rows: list[Mapping[str, Any]]) -> tuple[list[float] | None, dict[str, Any]]:
    """Objective values (mean over cells) and attributes; None when a cell failed."""
    failed = [r for r in rows if r.get("status") != "ok"]
    attrs: dict[str, Any] = {"cell_ids": [r["cell_id"] for r in rows]}
    if failed:
        attrs["error"] = str(failed[0].get("error"))
        return None, attrs
    values = []
    for metric, _ in config.objectives:
        samples = [float(r[metric]) for r in rows]
        if any(math.isnan(v) for v in samples):
            attrs["error"] = f"{metric} is nan in a cell"
            return None, attrs
        values.append(statistics.fmean(samples))
        attrs[f"spread.{metric}"] = statistics.pstdev(samples) if len(samples) > 1 else 0.0
    return values, attrs


def _defaults(config: TuneConfig) -> dict[str, Any]:
    """Each tuned key's value in the base spec once defaults are filled in."""
    spec = flatten(trial_spec(config, {}, config.variants[0], config.seeds[0]))
    return {p.key: spec.get(canonical_key(p.key)) for p in config.params}


def _in_space(config: TuneConfig, values: Mapping[str, Any]) -> bool:
    for param in config.params:
        value = values.get(param.key)
        if param.kind == "categorical":
            if value not in param.choices:
                return False
        elif isinstance(value, bool) or not isinstance(value, (int, float)) or not param.low <= value <= param.high:
            return False
    return True


def _prepare_store(store: Store, config: TuneConfig, url: str) -> None:
    """Fix the store's schemas for every trial the space can produce and record the config,
    where it came from and the study's storage in the manifest: None for the folder's own
    ``study.db``, else the URL (passwords hidden: results folders and reports are shared, the
    database credentials are not)."""
    specs, flat = [], []
    for values in _corners(config.params):
        for variant in config.variants:
            spec = trial_spec(config, values, variant, config.seeds[0])
            specs.append(spec)
            flat.append({k: v for k, v in flatten(spec).items() if k != "seed"})
    text = None if config.source_text is None else redact(config.source_text)
    storage = None if url == default_storage_url(store.root) else redact(url)
    source = {"config_text": text, "overrides": [redact(o) for o in config.overrides], "storage": storage}
    store.prepare(_shown_config(config), spec_column_types(flat), *result_columns(specs), source=source)


def _shown_config(config: TuneConfig) -> dict[str, Any]:
    """The raw config as results files record it: its storage URL's password hidden."""
    raw = dict(config.raw)
    study = raw.get("study")
    if isinstance(study, Mapping) and isinstance(study.get("storage"), str):
        raw["study"] = {**study, "storage": redact(study["storage"])}
    return raw


def run_tuning(
    config: TuneConfig,
    out: str | Path,
    *,
    backend: str = "ray",
    backend_options: Mapping[str, Any] | None = None,
    trials: int | None = None,
    storage: str | None = None,
    progress: bool = True,
) -> TuneOutcome:
    """Run (or continue) the study of ``config`` until it has ``trials`` finished trials.

    One tuner per results folder (a second one is refused, naming the first: see
    :mod:`tiersweep.sweep.folder_lock`); a trial another live tuner is running (one that
    shares the study's storage from another folder) is left to it. A trial whose parameters
    make an invalid spec is told as failed, with the error, and the study goes on (it counts
    as finished); a trial an interrupted run left before drawing all its parameters is told as
    failed and does not count.

    Raises:
        TiersweepError: The storage cannot be opened, or fails while the study runs (deleted,
            damaged, a full disk: see :func:`~tiersweep.sweep.study_storage.storage_errors`).
    """
    if trials is not None and (isinstance(trials, bool) or not isinstance(trials, int) or trials < 1):
        raise SpecError(f"trials: expected a positive number of finished trials to reach, got {trials!r}")
    root = Path(out) / config.name
    with FolderLock(root, "tune"):
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        url = storage_url(config, root, storage)
        storage_object = make_storage(url)
        with storage_errors(url):
            study = _open_study(config, url, storage_object)
            outcome = _run_study(study, config, root, url, backend, backend_options, trials, progress)
            outcome.files["trials"] = write_trials(study, config, root)
            if outcome.check is not None and outcome.check.pairs:
                outcome.files["check"] = write_check(outcome.check, config, root)
            elif outcome.check is not None:
                # The best is the defaults now: an earlier run's check, of another best, is not this study's.
                (root / CHECK_FILE).unlink(missing_ok=True)
            return outcome


def _open_study(config: TuneConfig, url: str, storage: Any) -> Any:
    """The config's study in ``storage`` (created when new), with a sampler that does not
    repeat the proposals of the trials it already has."""
    import optuna

    directions = config.directions
    try:
        existing = 0
        try:
            existing = len(optuna.load_study(study_name=config.study_name, storage=storage).trials)
        except KeyError:
            pass  # a new study
        study = optuna.create_study(
            study_name=config.study_name,
            storage=storage,
            sampler=_sampler(config, existing),
            pruner=make_pruner(config.pruner, config.p_threshold, config.startup_steps),
            directions=directions,
            load_if_exists=True,
        )
    except ValueError as error:
        raise TiersweepError(redact(f"study {config.study_name!r} in {url}: {error}")) from None
    if [d.name.lower() for d in study.directions] != directions:
        raise TiersweepError(
            redact(
                f"study {config.study_name!r} in {url} optimises {[d.name.lower() for d in study.directions]}, "
                f"this config {directions}: use another study name"
            )
        )
    return study


def _run_study(
    study: Any,
    config: TuneConfig,
    root: Path,
    url: str,
    backend: str,
    backend_options: Mapping[str, Any] | None,
    trials: int | None,
    progress: bool,
) -> TuneOutcome:
    """Run trials of ``study`` until it has ``trials`` finished ones (see :func:`run_tuning`)."""
    import optuna

    store = Store(root)
    _prepare_store(store, config, url)  # only once the study is known to fit the config
    known = {row["cell_id"]: row for row in read_table(root / "runs").to_pylist()}
    target = config.trials if trials is None else trials
    if config.sampler == "grid":
        target = min(target, _grid_size(config))
    distributions = {p.key: p.distribution() for p in config.params}
    defaults = _defaults(config)
    enqueued = not study.trials and _in_space(config, defaults) and config.sampler != "grid"
    if enqueued:
        study.enqueue_trial(defaults)  # the paper's values are always one of the trials (a grid covers them)
    state = _Trials(config, known, None)
    # The default-parameter baseline's cells run first, beside the first trials: run after the
    # last trial, they were a tail of their own (at cluster scale, minutes) with workers idle and
    # the bar reading complete. Unless trial 0 computes them, they count as one more unit of the bar.
    baseline_cells = state.cells(defaults)
    baseline_ids = {c.cell_id for c in baseline_cells}
    own_baseline = not enqueued and not baseline_ids <= known.keys()
    runner = CellRunner(store, config.name, backend=backend, backend_options=backend_options, on_outcomes=state.record)
    # Trials left running by an interrupted run are evaluated now, under their own numbers;
    # only those whose tuner is gone (another live tuner is still running its own). The
    # cells they had finished are in the store, their values already reported. One left
    # before its parameters were all drawn never became a point of the space: it fails.
    owner = _owner()
    left = []
    for frozen in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
        if not _owner_gone(frozen.user_attrs.get(OWNER)):
            continue
        if distributions.keys() <= frozen.params.keys():
            left.append(frozen)
        else:
            _fail_undrawn(study, frozen, config, distributions)
    done = sum(_counts(t) for t in study.trials)
    bar = None
    # Intermediate values are reported for one objective only (Optuna's limit), pruned or not:
    # an unpruned study's trials then still pair with a later run's that prunes.
    reports = len(config.objectives) == 1
    pause = os.environ.get(PAUSE_VARIABLE)  # read once: nothing to look up per report

    def told() -> None:
        nonlocal done
        done += 1
        if bar is not None:
            bar.update(1)

    def submit(trial: Any, params: Mapping[str, Any], reported: frozenset[int] = frozenset()) -> None:
        """Start the trial's evaluation; a trial whose values make an invalid spec fails now,
        so that no later run resumes it (it would fail the same way, first, every time)."""
        try:
            cells = state.cells(params)
        except SpecError as error:
            trial.set_user_attr("error", str(error))
            study.tell(trial, state=optuna.trial.TrialState.FAIL)
            told()
            return
        advance(state.add(trial, cells, reported))

    def advance(evaluation: _Evaluation) -> None:
        """Report the trial's newly known cells, decide whether it stops, hand out its next
        cells, and tell it once it is finished."""
        while True:
            for step, row in state.arrived(evaluation):
                value = _cell_value(config, row)
                if value is None:
                    evaluation.stopping = evaluation.stopping or "failed"
                    continue
                if not reports:
                    continue
                if step not in evaluation.reported_before:
                    evaluation.trial.report(value, step)
                    if pause:
                        _pause(Path(pause), evaluation.trial.number, step)
                # (A trial with every cell handed out has nothing left to save: it completes.)
                more = evaluation.started < len(evaluation.order)
                if more and evaluation.stopping is None and config.pruner != "none" and evaluation.trial.should_prune():
                    evaluation.stopping = "pruned"
            todo, reused = state.hand_out(evaluation)
            runner.submit(todo)
            if not reused:
                break
        if evaluation.finished:
            del state.pending[evaluation.trial.number]
            finish(evaluation)

    def finish(evaluation: _Evaluation) -> None:
        trial = evaluation.trial
        rows = [evaluation.rows[step] for step in sorted(evaluation.rows)]
        values, attrs = _evaluate(config, rows)
        skipped = [evaluation.cells[step].cell_id for step in evaluation.order[evaluation.started :]]
        if skipped:
            attrs[SKIPPED] = skipped
        for key, value in attrs.items():
            trial.set_user_attr(key, value)
        if values is None:
            study.tell(trial, state=optuna.trial.TrialState.FAIL)
        elif evaluation.stopping == "pruned":
            # The mean over the cells it ran: not comparable with a complete trial's, kept
            # apart from the objective so that a pruned trial is never taken for the best.
            trial.set_user_attr(f"partial.{config.objectives[0][0]}", values[0])
            study.tell(trial, state=optuna.trial.TrialState.PRUNED)
        else:
            study.tell(trial, values if len(values) > 1 else values[0])
        told()

    def baseline_drawn() -> None:
        """Say on the bar how far the baseline's own cells are, and count it once they are in."""
        nonlocal own_baseline
        if bar is None or not own_baseline:
            return
        left = len(baseline_ids - state.known.keys())
        if left:
            bar.set_postfix_str(f"baseline: {len(baseline_ids) - left}/{len(baseline_ids)} cells", refresh=False)
            return
        own_baseline = False
        bar.set_postfix_str("", refresh=False)
        bar.update(1)

    parallel = config.parallel
    if progress and (target > done or own_baseline):
        from tqdm import tqdm

        bar = tqdm(
            total=target + int(own_baseline),
            initial=min(done, target),
            unit="trial",
            desc="trials + baseline" if own_baseline else "trials",
            dynamic_ncols=True,
        )
        baseline_drawn()
    try:
        with runner:
            runner.submit(state.claim(baseline_cells))
            workers = runner.workers if backend != "serial" else 1
            limit = parallel or workers
            if config.pruner != "none":
                # Each trial keeps only its share of the workers busy (one cell when there are
                # as many trials in flight as workers): a trial that is stopped then leaves
                # its remaining cells unrun.
                state.width = max(1, workers // limit)
            for frozen in left:
                trial = optuna.trial.Trial(study, frozen._trial_id)
                trial.set_user_attr(OWNER, owner)
                submit(trial, frozen.params, frozenset(frozen.intermediate_values))
            while done + len(state.pending) < target or state.pending:
                while done + len(state.pending) < target and len(state.pending) < limit:
                    trial = study.ask(distributions)
                    trial.set_user_attr(OWNER, owner)
                    submit(trial, trial.params)
                for evaluation in list(state.pending.values()):
                    advance(evaluation)
                if state.pending and runner.busy:
                    runner.step_drawing(bar)
                    baseline_drawn()
            while runner.busy:
                runner.step_drawing(bar)
                baseline_drawn()
            if bar is not None:
                bar.close()
                bar = None
            check = _held_out_check(study, config, state, runner, defaults, progress)
    finally:
        if bar is not None:
            bar.close()
    values, _ = _evaluate(config, [state.known[c.cell_id] for c in baseline_cells])
    baseline = {}
    for i, (metric, _) in enumerate(config.objectives):
        samples = [
            float(state.known[c.cell_id][metric]) for c in baseline_cells if state.known[c.cell_id]["status"] == "ok"
        ]
        mean = values[i] if values is not None else math.nan
        baseline[metric] = (mean, statistics.pstdev(samples) if len(samples) > 1 else 0.0)
    complete = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    best = (study.best_trials if len(config.directions) > 1 else [study.best_trial]) if complete else []
    return TuneOutcome(
        study,
        best,
        baseline,
        defaults,
        runner.computed,
        state.reused,
        root,
        storage=url,
        notes=runner.notes,
        paths=dict(runner.paths),
        check=check,
    )


def _held_out_check(
    study: Any, config: TuneConfig, state: _Trials, runner: CellRunner, defaults: dict[str, Any], progress: bool
) -> HeldOutCheck | None:
    """Run the best complete trial and the defaults on the config's check seeds (their cells
    stored and reused as any other) and pair their values; None without check seeds or a
    complete trial."""
    import optuna

    if not config.check_seeds or not study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,)):
        return None
    best = study.best_trial
    metric, direction = config.objectives[0]
    params = dict(best.params)
    check = HeldOutCheck(metric, direction, best.number, params, list(config.check_seeds), [], params == defaults)
    if check.best_is_defaults:
        return check  # (nothing to compare: no cell is run)
    best_cells = state.cells(best.params, config.check_seeds)
    default_cells = state.cells(defaults, config.check_seeds)
    ids = {c.cell_id for c in best_cells + default_cells}
    runner.submit(state.claim(best_cells + default_cells))
    bar = None
    if progress and not ids <= state.known.keys():
        from tqdm import tqdm

        bar = tqdm(total=len(ids), unit="cell", desc="held-out check", dynamic_ncols=True)
    try:
        while runner.busy:
            runner.step_drawing(bar)
            if bar is not None:
                bar.update(len(ids & state.known.keys()) - bar.n)
    finally:
        if bar is not None:
            bar.close()
    variants = [json.dumps(v, sort_keys=True) for v in config.variants for _ in config.check_seeds]
    for variant, mine, theirs in zip(variants, best_cells, default_cells):
        values = []
        for cell in (mine, theirs):
            row = state.known[cell.cell_id]
            value = _cell_value(config, row)
            if value is None and check.error is None:
                check.error = str(row.get("error") or f"{metric} is nan")
            values.append(math.nan if value is None else value)
        check.pairs.append(CheckPair(variant, int(mine.plan.spec["seed"]), values[0], values[1]))
    return check


def _fail_undrawn(study: Any, frozen: Any, config: TuneConfig, distributions: Mapping[str, Any]) -> None:
    """Fail a trial left before its parameters were all drawn, marked as not counted. Values
    it was already given are run by a trial enqueued in its place: an enqueued trial's (the
    base spec's values), or a grid trial's point (the grid counts the point of a failed trial
    as visited, and would never give it again)."""
    import optuna

    trial = optuna.trial.Trial(study, frozen._trial_id)
    trial.set_user_attr("error", "interrupted before its parameters were drawn; a fresh trial is run instead")
    trial.set_user_attr(UNDRAWN, True)
    study.tell(trial, state=optuna.trial.TrialState.FAIL)
    fixed = frozen.system_attrs.get("fixed_params")
    grid = {p.key: list(p.choices) for p in config.params} if config.sampler == "grid" else None
    if fixed is None and grid is not None and frozen.system_attrs.get("search_space") == grid:
        fixed = {key: study.sampler.sample_independent(study, frozen, key, dist) for key, dist in distributions.items()}
    if fixed is not None:
        study.enqueue_trial(fixed)


def _counts(trial: Any) -> bool:
    """Whether a trial counts towards the trials to reach: finished, and not one failed for
    having been left before its parameters were drawn."""
    return trial.state.is_finished() and not trial.user_attrs.get(UNDRAWN)


def _pause(marker: Path, trial: int, step: int) -> None:
    """The pause hook: create ``marker`` (naming the trial and the step it reported) and wait
    until it is removed; a signal ends the wait as it would end any other."""
    with atomic_writer(marker, "w") as handle:
        handle.write(f"trial {trial} step {step}\n")
    while marker.exists():
        time.sleep(0.01)


#: The trial attribute naming the tuner process that runs it: ``host:pid:start time``.
OWNER = "tiersweep.owner"


def _owner() -> str:
    """This process as a trial owner."""
    return f"{socket.gethostname()}:{os.getpid()}:{start_time(os.getpid())}"


def _owner_gone(owner: str | None) -> bool:
    """Whether the tuner that owns a RUNNING trial has exited (so that its trial was left
    behind). A trial without an owner predates owners and counts as left behind; a trial of
    another host cannot be checked and counts as still running."""
    if not owner:
        return True
    host, pid, start = owner.rsplit(":", 2)
    if host != socket.gethostname():
        return False
    return str(start_time(int(pid))) != start


def write_trials(study: Any, config: TuneConfig, root: Path) -> Path:
    """Write every trial to ``ROOT/trials/trials.parquet`` (replacing it): number, state, one
    ``params.<key>`` column per parameter, one column per objective (the mean), its spread,
    the cell ids it ran and those it skipped when stopped early (JSON), error and times."""
    rows = []
    for trial in study.trials:
        row: dict[str, Any] = {"number": trial.number, "state": trial.state.name}
        for param in config.params:
            row[f"params.{param.key}"] = _param_value(param, trial.params.get(param.key))
        values = trial.values or [None] * len(config.objectives)
        for (metric, _), value in zip(config.objectives, values):
            row[metric] = value
            row[f"spread.{metric}"] = trial.user_attrs.get(f"spread.{metric}")
        row["cell_ids"] = json.dumps(trial.user_attrs.get("cell_ids", []))
        row[SKIPPED] = skipped_json(trial)
        row["error"] = trial.user_attrs.get("error")
        row["datetime_start"] = trial.datetime_start
        row["datetime_complete"] = trial.datetime_complete
        rows.append(row)
    return _write_rows(rows, config, root / "trials" / "trials.parquet")


def write_check(check: HeldOutCheck, config: TuneConfig, root: Path) -> Path:
    """Write the held-out check to ``ROOT/check/check.parquet`` (replacing it): one row per
    variant and seed, with the best trial's and the defaults' value of the objective
    (``best.<metric>``, ``defaults.<metric>``), and on every row the objective's direction and
    the best trial's number and parameters (``params.<key>``)."""
    rows = []
    for pair in check.pairs:
        row: dict[str, Any] = {"trial": check.trial, "direction": check.direction, "variant": pair.variant}
        row["seed"] = pair.seed
        row[f"best.{check.metric}"] = pair.best
        row[f"defaults.{check.metric}"] = pair.defaults
        for param in config.params:
            row[f"params.{param.key}"] = _param_value(param, check.params.get(param.key))
        rows.append(row)
    return _write_rows(rows, config, root / CHECK_FILE)


#: Where the held-out check is written, under the results folder: a folder of its own, as a table
#: is a folder of part files (in ``trials/`` the trials' table would take its rows in).
CHECK_FILE = Path("check") / "check.parquet"


def _param_value(param: Any, value: Any) -> Any:
    """A tuned parameter's value as a trials or check column holds it: a categorical one as text
    (its choices may mix types), a number as a float (an int range's too), None if missing."""
    if value is None:
        return None
    return str(value) if param.kind == "categorical" else float(value)


def _write_rows(rows: list[dict[str, Any]], config: TuneConfig, path: Path) -> Path:
    """Write ``rows`` to the Parquet file ``path`` (replacing it, atomically), the config (its
    storage password hidden) in the file's metadata."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pylist(rows)
    shown = json.dumps(_shown_config(config), sort_keys=True).encode()
    table = table.replace_schema_metadata({b"tiersweep.config": shown})
    with atomic_writer(path) as handle:
        pq.write_table(table, handle)
    return path
