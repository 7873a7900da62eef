"""Tuning configs: a base spec, parameters with ranges, objectives, seeds, sampler and study.

::

    name: tune_smcbf
    base: {workload: {model: feitelson96, jobs: 10000, load: 0.95},
           platform: {tiers: 2}, policy: {name: smcbf}}
    params:
      policy.bg_threshold: {low: 0.5, high: 1.0}                # float
      policy.xfactor_threshold: {low: 1, high: 100, log: true}  # float, log scale
      platform.migration_cost: {low: 0, high: 600, type: int}   # integer
      platform.tiers: {choices: [2, 3]}                         # categorical
    objective: {mean_bsld: minimize}          # or several: {mean_bsld: minimize, utilization: maximize}
    seeds: 2                                  # each trial averages over these seeds ...
    variants: [{workload.load: 0.9}, {workload.load: 1.0}]   # ... and these spec variants
    trials: 30
    parallel: 2                               # trials in flight (default: the backend's workers)
    sampler: {name: tpe, seed: 0}             # tpe | random | grid | cmaes
    pruner: {name: wilcoxon, p_threshold: 0.1, startup_steps: 2}   # or none (default: this, for one objective)
    check: {seeds: 8}                         # held-out check on fresh seeds (a count or a list; default: none)
    study: {name: tune_smcbf, storage: null}  # default: sqlite file next to the results

The pruner stops a trial whose first cells are significantly worse than the best trial's on
the same cells (see :mod:`~tiersweep.sweep.tune_pruning`); ``pruner: none`` runs every cell of
every trial. It is on by default for one objective and off for several (Optuna prunes
single-objective studies only).

The best trial is chosen on the tuning seeds, so its gain over the defaults on those seeds is
optimistic (the winner's curse: among many trials, one is best partly by chance). ``check``
runs the best trial and the defaults again on seeds the search never saw, paired seed by seed
(one objective only). A count of seeds continues the tuning seeds' derivation past them (the
replicates after the last tuning one); a list must not share a seed with ``seeds``.

Relative trace paths in a config file (in ``base``, in ``variants``, in a parameter's
``choices``) are taken from the file's folder; ``--set`` values from the current directory.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..core.errors import SpecError, refuse_unknown_keys
from ..core.plan import RunPlan
from ..core.spec import canonical_key, plan_run, set_key
from .config import MAX_CELLS, check_header, check_override_keys, parse_seeds
from .specfile import apply_overrides, check_kind, file_folder, read_spec_file, resolve_key_traces, resolve_spec_traces
from .tune_pruning import DEFAULT_P_THRESHOLD, PRUNERS

__all__ = ["Param", "TuneConfig", "load_tune_config", "parse_tune_config", "override_base", "SAMPLERS"]

_TOP_KEYS = (
    "name",
    "description",
    "base",
    "params",
    "objective",
    "seeds",
    "seed",
    "variants",
    "trials",
    "parallel",
    "sampler",
    "pruner",
    "check",
    "study",
)
#: Samplers by config name.
SAMPLERS = ("tpe", "random", "grid", "cmaes")


@dataclass(frozen=True)
class Param:
    """One tuned spec key: a float or int range, or a list of choices."""

    key: str
    kind: str  # "float", "int" or "categorical"
    low: float | None = None
    high: float | None = None
    log: bool = False
    choices: tuple[Any, ...] = ()

    def distribution(self) -> Any:
        """The Optuna distribution of this parameter."""
        from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

        if self.kind == "float":
            return FloatDistribution(self.low, self.high, log=self.log)
        if self.kind == "int":
            return IntDistribution(int(self.low), int(self.high), log=self.log)
        return CategoricalDistribution(self.choices)

    def extremes(self) -> list[Any]:
        """Values that span the parameter (for checking and typing the spec)."""
        return list(self.choices) if self.kind == "categorical" else [self.low, self.high]


@dataclass(frozen=True)
class TuneConfig:
    """A validated tuning config (see the module docstring)."""

    name: str
    base: dict[str, Any]
    params: list[Param]
    objectives: list[tuple[str, str]]  # (metric, "minimize" | "maximize")
    seeds: list[int]
    variants: list[dict[str, Any]]
    trials: int
    parallel: int | None
    sampler: str
    sampler_seed: int | None
    study_name: str
    storage: str | None
    #: ``wilcoxon`` or ``none`` (see :mod:`~tiersweep.sweep.tune_pruning`).
    pruner: str = "none"
    #: The pruner's p-value threshold, and the paired cells it needs before it may stop a trial.
    p_threshold: float = DEFAULT_P_THRESHOLD
    startup_steps: int = 2
    #: The held-out check's seeds (none: no check): the best trial and the defaults run on them
    #: after the study, none of them a tuning seed.
    check_seeds: list[int] = field(default_factory=list)
    raw: dict[str, Any] = field(repr=False, default_factory=dict)
    #: The config file's text as read (None for a config built from a mapping; not compared:
    #: where the config came from, not what it is).
    source_text: str | None = field(repr=False, default=None, compare=False)
    #: The ``--set KEY=VALUE`` overrides applied to ``base`` (``raw`` and ``base`` include them).
    overrides: tuple[str, ...] = field(default=(), compare=False)

    @property
    def directions(self) -> list[str]:
        """Optuna directions, one per objective."""
        return [direction for _, direction in self.objectives]


def _check_seeds(raw: Mapping[str, Any], base: Mapping[str, Any], seeds: list[int], objectives: int) -> list[int]:
    """The held-out check's seeds of ``check: {seeds: ...}`` (none without it). A count takes the
    replicate seeds that follow the tuning ones; a list is taken as given. Either way no check
    seed may be a tuning seed: the check is only worth having on seeds the search did not see."""
    check = raw.get("check")
    if check is None:
        return []
    if not isinstance(check, Mapping) or "seeds" not in check:
        raise SpecError(f"check: expected {{seeds: a count or a list of seeds}}, got {check!r}")
    refuse_unknown_keys(check, ("seeds",), "check")
    if objectives > 1:
        raise SpecError("check: needs one objective (a Pareto front has no one best trial to check)")
    if check["seeds"] is None:  # (to parse_seeds, no seeds given: the base spec's seed)
        raise SpecError("check.seeds: expected a positive count or a non-empty list of seeds, got None")
    chosen = parse_seeds(raw, base, check["seeds"], key="check.seeds", first=len(seeds))
    shared = sorted(set(chosen) & set(seeds))
    if shared:
        raise SpecError(
            f"check.seeds: {shared} are also tuning seeds; the held-out check needs seeds the search did not see"
        )
    return chosen


def load_tune_config(path: str | Path, overrides: Sequence[str] = ()) -> TuneConfig:
    """Read and validate a tuning config file (YAML, safe loader).

    Relative trace paths in the file are made absolute against the file's folder; then
    ``overrides`` (``KEY=VALUE``, as ``--set`` gives them) are applied to the base spec (see
    :func:`override_base`).

    Raises:
        SpecError: As :func:`parse_tune_config` and :func:`override_base`; or the file is a run
            spec or a sweep config (the message names the command to use).
    """
    raw, text = read_spec_file(path)
    check_kind(raw, "tune", str(path))
    raw = _resolve_traces(raw, file_folder(path))
    if overrides:
        raw = _override_raw(raw, overrides)
    config = parse_tune_config(raw)
    return replace(config, source_text=text, overrides=tuple(overrides))


def _resolve_traces(raw: Mapping[str, Any], folder: str) -> dict[str, Any]:
    """``raw`` with the relative trace paths of its base, variants and parameter choices made
    absolute against ``folder`` (parts of the wrong shape are left for validation to report)."""
    out = dict(raw)
    if "base" in out:
        out["base"] = resolve_spec_traces(out["base"], folder)
    if isinstance(out.get("variants"), list):
        out["variants"] = [
            {k: resolve_key_traces(k, v, folder) for k, v in variant.items()}
            if isinstance(variant, Mapping)
            else variant
            for variant in out["variants"]
        ]
    if isinstance(out.get("params"), Mapping):
        out["params"] = {
            key: {**given, "choices": resolve_key_traces(key, given["choices"], folder)}
            if isinstance(given, Mapping) and isinstance(given.get("choices"), list)
            else given
            for key, given in out["params"].items()
        }
    return out


def _override_raw(raw: Mapping[str, Any], overrides: Sequence[str]) -> dict[str, Any]:
    """``raw`` with ``overrides`` applied to its base spec; keys the study tunes or its variants
    set are refused (see :func:`~tiersweep.sweep.config.check_override_keys`)."""
    varied: dict[str, str] = {}
    if isinstance(raw.get("params"), Mapping):
        varied.update({canonical_key(str(key)): "params" for key in raw["params"]})
    if isinstance(raw.get("variants"), list):
        for i, variant in enumerate(raw["variants"]):
            if isinstance(variant, Mapping):
                for key in variant:
                    varied.setdefault(canonical_key(str(key)), f"variants[{i}]")
    check_override_keys(overrides, varied, "seeds" in raw)
    base = raw.get("base")
    if not isinstance(base, Mapping):
        return dict(raw)  # (parsing reports the missing base)
    return {**raw, "base": apply_overrides(dict(base), overrides, folder=os.getcwd())}


def override_base(config: TuneConfig, overrides: Sequence[str]) -> TuneConfig:
    """``config`` with ``overrides`` (``KEY=VALUE``, the value read as YAML, as ``run --set``
    reads it) applied to its base spec, in order; relative trace paths in them are taken from
    the current directory.

    Raises:
        SpecError: A malformed override, or a key the study tunes (``params``) or its
            ``variants`` set (or ``seed`` when the config gives ``seeds``).
    """
    if not overrides:
        return config
    changed = parse_tune_config(_override_raw(config.raw, overrides))
    return replace(changed, source_text=config.source_text, overrides=(*config.overrides, *overrides))


#: Why the seed is neither a tuning parameter nor part of a variant: each trial runs every seed
#: of ``seeds`` and overwrites the spec's seed, so every trial would run the same cells.
_SEED_IS_NOT_TUNED = (
    "the seed is not tuned: every trial runs each seed of the top-level 'seeds' (a count or a list); "
    "tune policy or platform keys"
)


def _param(key: str, raw: Any) -> Param:
    path = f"params.{key}"
    if key == "seed":
        raise SpecError(f"{path}: {_SEED_IS_NOT_TUNED}")
    if not isinstance(raw, Mapping):
        raise SpecError(f"{path}: expected {{low: ..., high: ...}} or {{choices: [...]}}, got {raw!r}")
    unknown = set(raw) - {"low", "high", "log", "type", "choices"}
    if unknown:
        raise SpecError(f"{path}.{sorted(unknown)[0]}: unknown key; valid keys: choices, high, log, low, type")
    if "choices" in raw:
        choices = raw["choices"]
        if not isinstance(choices, list) or not choices:
            raise SpecError(f"{path}.choices: expected a non-empty list, got {choices!r}")
        return Param(key, "categorical", choices=tuple(choices))
    low, high = raw.get("low"), raw.get("high")
    for name, value in (("low", low), ("high", high)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise SpecError(f"{path}.{name}: expected a number, got {value!r}")
    if not low < high:
        raise SpecError(f"{path}: expected low < high, got low={low}, high={high}")
    kind = raw.get("type", "float")
    if kind not in ("float", "int"):
        raise SpecError(f"{path}.type: unknown value {kind!r}; valid choices: float, int")
    log = raw.get("log", False)
    if not isinstance(log, bool):
        raise SpecError(f"{path}.log: expected true or false, got {log!r}")
    if log and low <= 0:
        raise SpecError(f"{path}: a log scale needs low > 0, got {low}")
    if kind == "int" and (low != int(low) or high != int(high)):
        raise SpecError(f"{path}: an int range needs whole bounds, got {low}..{high}")
    return Param(key, kind, float(low), float(high), log)


def parse_tune_config(raw: Mapping[str, Any]) -> TuneConfig:
    """Validate a tuning config mapping; every trial spec the ranges can produce is checked at
    the range ends before anything runs.

    Raises:
        SpecError: The message names the key path.
    """
    name, base = check_header(raw, _TOP_KEYS, "tuning config")
    params_raw = raw.get("params")
    if not isinstance(params_raw, Mapping) or not params_raw:
        raise SpecError("params: expected a mapping of dotted spec keys to ranges or choices")
    params = [_param(key, value) for key, value in params_raw.items()]
    objective = raw.get("objective")
    if isinstance(objective, str):
        objective = {objective: "minimize"}
    if not isinstance(objective, Mapping) or not objective:
        raise SpecError("objective: expected {metric: minimize|maximize, ...}")
    objectives = []
    for metric, direction in objective.items():
        if direction not in ("minimize", "maximize"):
            raise SpecError(f"objective.{metric}: expected minimize or maximize, got {direction!r}")
        objectives.append((metric, direction))
    seeds = parse_seeds(raw, base)
    variants = raw.get("variants") or [{}]
    if not isinstance(variants, list) or not all(isinstance(v, Mapping) for v in variants):
        raise SpecError("variants: expected a list of {dotted spec key: value} mappings")
    for i, variant in enumerate(variants):
        if "seed" in variant:
            raise SpecError(f"variants[{i}].seed: {_SEED_IS_NOT_TUNED}")
    if len(seeds) * len(variants) > MAX_CELLS:
        raise SpecError(f"seeds x variants: {len(seeds) * len(variants):,} cells per trial, more than {MAX_CELLS:,}")
    trials = raw.get("trials", 20)
    if isinstance(trials, bool) or not isinstance(trials, int) or trials < 1:
        raise SpecError(f"trials: expected a positive integer, got {trials!r}")
    parallel = raw.get("parallel")
    if parallel is not None and (isinstance(parallel, bool) or not isinstance(parallel, int) or parallel < 1):
        raise SpecError(f"parallel: expected a positive integer, got {parallel!r}")
    sampler = raw.get("sampler", {"name": "tpe"})
    if isinstance(sampler, str):
        sampler = {"name": sampler}
    if not isinstance(sampler, Mapping):
        raise SpecError(f"sampler: expected {{name: ..., seed: ...}}, got {sampler!r}")
    refuse_unknown_keys(sampler, ("name", "seed"), "sampler")
    sampler_name = sampler.get("name", "tpe")
    if sampler_name not in SAMPLERS:
        raise SpecError(f"sampler.name: unknown value {sampler_name!r}; valid choices: {', '.join(SAMPLERS)}")
    sampler_seed = sampler.get("seed")
    if sampler_seed is not None and (
        isinstance(sampler_seed, bool) or not isinstance(sampler_seed, int) or sampler_seed < 0
    ):
        raise SpecError(f"sampler.seed: expected a non-negative integer, got {sampler_seed!r}")
    if sampler_name == "grid" and any(p.kind != "categorical" for p in params):
        raise SpecError("sampler: grid needs every parameter given as choices")
    if sampler_name == "cmaes" and (len(objectives) > 1 or any(p.kind == "categorical" for p in params)):
        raise SpecError("sampler: cmaes needs one objective and numeric ranges only")
    pruner, p_threshold, startup_steps = _pruner(raw.get("pruner", _UNSET), len(objectives))
    check_seeds = _check_seeds(raw, base, seeds, len(objectives))
    study = raw.get("study") or {}
    if not isinstance(study, Mapping):
        raise SpecError("study: expected {name: ..., storage: ...}")
    refuse_unknown_keys(study, ("name", "storage"), "study")
    for key in study:
        if study[key] is not None and not isinstance(study[key], str):
            raise SpecError(f"study.{key}: expected a string, got {study[key]!r}")
    config = TuneConfig(
        name=name,
        base=dict(base),
        params=params,
        objectives=objectives,
        seeds=list(seeds),
        variants=[dict(v) for v in variants],
        trials=trials,
        parallel=parallel,
        sampler=sampler_name,
        sampler_seed=sampler_seed,
        study_name=study.get("name", name),
        storage=study.get("storage"),
        pruner=pruner,
        p_threshold=p_threshold,
        startup_steps=startup_steps,
        check_seeds=check_seeds,
        raw=dict(raw),
    )
    specs = [
        trial_spec(config, values, variant, config.seeds[0])
        for values in _corners(params)
        for variant in config.variants
    ]
    from .driver import result_columns  # (lazy: the driver imports this module's users)

    _check_float_ranges(config)
    known = result_columns(specs)[0]
    for metric, _ in objectives:
        if metric not in known or metric.startswith("report.") or metric == "span_start_time":
            valid = sorted(m for m in known if not m.startswith("report.") and m != "span_start_time")
            raise SpecError(f"objective.{metric}: unknown metric; valid metrics for these runs: {', '.join(valid)}")
    return config


#: A config without a ``pruner`` key.
_UNSET = object()


def _pruner(raw: Any, objectives: int) -> tuple[str, float, int]:
    """``(name, p_threshold, startup_steps)`` of the config's ``pruner`` (:data:`_UNSET` when
    the key is absent: Wilcoxon for one objective, none for several)."""
    if raw is _UNSET:
        raw = "wilcoxon" if objectives == 1 else "none"
    if raw is None or raw is False:
        raw = "none"
    if isinstance(raw, str):
        raw = {"name": raw}
    if not isinstance(raw, Mapping):
        raise SpecError(f"pruner: expected none, wilcoxon or {{name: wilcoxon, p_threshold: ...}}, got {raw!r}")
    for key in raw:
        if key not in ("name", "p_threshold", "startup_steps"):
            raise SpecError(f"pruner.{key}: unknown key; valid keys: name, p_threshold, startup_steps")
    name = raw.get("name", "wilcoxon")
    if name not in PRUNERS:
        raise SpecError(f"pruner.name: unknown value {name!r}; valid choices: {', '.join(PRUNERS)}")
    if name != "none" and objectives > 1:
        raise SpecError(
            "pruner: a study of several objectives cannot be pruned (Optuna prunes one objective); use none"
        )
    p_threshold = raw.get("p_threshold", DEFAULT_P_THRESHOLD)
    if isinstance(p_threshold, bool) or not isinstance(p_threshold, (int, float)) or not 0 < p_threshold < 1:
        raise SpecError(f"pruner.p_threshold: expected a p-value between 0 and 1 (exclusive), got {p_threshold!r}")
    startup = raw.get("startup_steps", 2)
    if isinstance(startup, bool) or not isinstance(startup, int) or startup < 0:
        raise SpecError(f"pruner.startup_steps: expected a non-negative integer, got {startup!r}")
    return name, float(p_threshold), startup


def _fractional_inside(param: Param) -> float:
    """A value strictly inside a float range, with a fractional part (every range has one)."""
    middle = (param.low + param.high) / 2
    if middle != int(middle):
        return middle
    return middle + min(0.5, (param.high - param.low) / 4)


def _check_float_ranges(config: TuneConfig) -> None:
    """Refuse a float range whose inside values the spec rejects, before any trial runs: its
    ends (checked with the corners) may be whole numbers that an integer key such as
    ``platform.tiers`` takes, while the values a sampler proposes between them are not."""
    from .cells import flatten  # (lazy, as result_columns: the cell helpers import the specs')

    for param in config.params:
        if param.kind != "float":
            continue
        value = _fractional_inside(param)
        for variant in config.variants:
            try:
                trial_spec(config, {param.key: value}, variant, config.seeds[0])
            except SpecError as error:
                end_spec = trial_spec(config, {param.key: param.low}, variant, config.seeds[0])
                end = flatten(end_spec).get(canonical_key(param.key))
                if isinstance(end, int) and not isinstance(end, bool):
                    raise SpecError(
                        f"params.{param.key}: {param.key} takes whole numbers, and a float range proposes values "
                        f"such as {value:g}; give the range as {{low: {param.low:g}, high: {param.high:g}, type: int}}"
                    ) from None
                raise SpecError(f"params.{param.key}: values inside the range are refused: {error}") from None


def _corners(params: list[Param]) -> list[dict[str, Any]]:
    """The parameter values at the ends of each range (one parameter at a time)."""
    corners = [{}]
    for param in params:
        for value in param.extremes():
            corners.append({param.key: int(value) if param.kind == "int" else value})
    return corners


def trial_spec(config: TuneConfig, values: Mapping[str, Any], variant: Mapping[str, Any], seed: int) -> dict[str, Any]:
    """The validated spec of one trial cell."""
    return trial_plan(config, values, variant, seed).spec


def trial_plan(config: TuneConfig, values: Mapping[str, Any], variant: Mapping[str, Any], seed: int) -> RunPlan:
    """The run plan of one trial cell."""
    spec = dict(config.base)
    for key, value in {**variant, **values}.items():
        spec = set_key(spec, key, value)
    spec["seed"] = seed
    try:
        return plan_run(spec)
    except SpecError as error:
        where = ", ".join(f"{k}={v!r}" for k, v in {**variant, **values}.items()) or "the base spec"
        raise SpecError(f"trial with {where}: {error}") from None
