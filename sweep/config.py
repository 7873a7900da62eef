"""Sweep configs: a base spec, a grid of dotted keys, zips, exclusions and seeds.

::

    name: quickstart
    base: {workload: {model: feitelson96, jobs: 10000}, platform: {tiers: 2}}
    grid:
      policy.name: [easy, ambf, amcbf]
      workload.load: [0.6, 0.8, 1.0]
    zip:                       # axes that vary together (equal lengths)
      - {platform.migration_cost: [0, 600], workload.cpu_accuracy: [1.0, 0.0]}
    exclude:                   # drop the cells matching every key of a rule
      - {policy.name: easy, workload.load: 1.0}
    # grids: [{...}, {...}]    # instead of grid: the union of several grids (one-at-a-time
    #                          # sensitivity studies); zip groups apply to each
    # sample: {method: sobol, n: 64, params: {workload.load: {low: 0.6, high: 1.0}}}
    #                          # a sampled design beside the grid (see tiersweep.sweep.design)
    seeds: 2                   # or a list of seeds [1, 2, 3]
    seed: 0                    # the sweep seed that a count of seeds derives from
    cell_timeout: 600          # seconds after which a cell is stopped and stored as failed
    #                          # (0: none; default: from each cell's expected cost)

The cells are the cartesian product of the grid axes and the zip groups (each group one
axis), times the points of the sampled design (if any), times the seeds, less the exclusions;
each is validated as a run spec before anything runs, and errors name the config key path and
the cells (every invalid cell, grouped by error, with what to change).

Relative trace paths in a config file (in ``base``, in axis values, in exclusion rules) are
taken from the file's folder; ``--set`` values (:func:`override_base`) from the current
directory.
"""

from __future__ import annotations

import itertools
import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..core.errors import SpecError, refuse_unknown_keys
from ..core.params import MAX_SEED
from ..core.spec import canonical_key, plan_run, set_key
from ..core.workloads.swf import not_a_regular_file
from .cells import Cell, cell_id, replicate_seed, trace_digest
from .design import Design, parse_design
from .specfile import (
    apply_overrides,
    check_kind,
    file_folder,
    parse_override,
    read_spec_file,
    resolve_key_traces,
    resolve_spec_traces,
)

__all__ = [
    "SweepConfig",
    "load_sweep_config",
    "parse_sweep_config",
    "override_base",
    "check_override_keys",
    "expand",
    "check_header",
    "parse_seeds",
    "check_cell_timeout",
    "MAX_CELLS",
]

#: The most cells a sweep (grid points x seeds) or one tuning trial (seeds x variants) may have.
MAX_CELLS = 1_000_000

_TOP_KEYS = (
    "name",
    "description",
    "base",
    "grid",
    "grids",
    "zip",
    "exclude",
    "sample",
    "seeds",
    "seed",
    "cell_timeout",
)
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


@dataclass(frozen=True)
class SweepConfig:
    """A validated sweep config (see the module docstring)."""

    name: str
    base: dict[str, Any]
    axes: list[dict[str, list[Any]]]  # each axis: one key, or a zip group of keys
    # (with ``grids``: one list of axes per grid; ``axes`` is then the first)
    exclude: list[dict[str, list[Any]]]
    seeds: list[int]
    raw: dict[str, Any]
    description: str = ""
    grids: list[list[dict[str, list[Any]]]] | None = None
    # Where the config came from, not what it is (so not compared): the study is the same
    # whether read from a file or built from a mapping.
    #: The config file's text as read (None for a config built from a mapping): the config as
    #: its author wrote it, relative paths and comments included (``raw`` has absolute paths).
    source_text: str | None = field(default=None, repr=False, compare=False)
    #: The ``--set KEY=VALUE`` overrides applied to ``base`` (``raw`` and ``base`` include them).
    overrides: tuple[str, ...] = field(default=(), compare=False)
    #: Seconds after which a cell is stopped and stored as failed (0: no limit; None: each
    #: cell's default from its expected cost). How the sweep runs, not what it computes.
    cell_timeout: float | None = field(default=None, compare=False)
    #: The sampled design (``sample:``), crossed with every grid point; None without one.
    design: Design | None = None

    @property
    def axis_sets(self) -> list[list[dict[str, list[Any]]]]:
        """One list of axes per grid (a single grid unless the config gives ``grids``)."""
        return self.grids if self.grids is not None else [self.axes]


def load_sweep_config(path: str | Path, overrides: Sequence[str] = ()) -> SweepConfig:
    """Read and validate a sweep config file (YAML, safe loader).

    Relative trace paths in the file are made absolute against the file's folder; then
    ``overrides`` (``KEY=VALUE``, as ``--set`` gives them) are applied to the base spec (see
    :func:`override_base`).

    Raises:
        SpecError: As :func:`parse_sweep_config` and :func:`override_base`; or the file is a
            run spec or a tuning config (the message names the command to use).
    """
    raw, text = read_spec_file(path)
    check_kind(raw, "sweep", str(path))
    config = parse_sweep_config(_resolve_traces(raw, file_folder(path)), source=str(path))
    config = replace(config, source_text=text)
    return override_base(config, overrides, source=str(path)) if overrides else config


def _resolve_traces(raw: Mapping[str, Any], folder: str) -> dict[str, Any]:
    """``raw`` with the relative trace paths of its base, axes and exclusion rules made
    absolute against ``folder`` (parts of the wrong shape are left for validation to report)."""

    def keyed(mapping: Any) -> Any:
        if not isinstance(mapping, Mapping):
            return mapping
        return {key: resolve_key_traces(key, values, folder) for key, values in mapping.items()}

    out = dict(raw)
    if "base" in out:
        out["base"] = resolve_spec_traces(out["base"], folder)
    if "grid" in out:
        out["grid"] = keyed(out["grid"])
    for name in ("grids", "zip", "exclude"):
        if isinstance(out.get(name), list):
            out[name] = [keyed(item) for item in out[name]]
    return out


def check_override_keys(overrides: Sequence[str], varied: Mapping[str, str], seeds_given: bool) -> None:
    """Refuse ``--set`` keys that a study sets itself in every cell: ``varied`` maps each
    canonical dotted key the study varies to where (``grid``, ``params``, ...). A key is refused
    when it is such a key, a section holding one or a key inside one, and ``seed`` when the
    config gives ``seeds`` (each cell's seed replaces the base spec's).

    The values of an axis are the config's to give: ``--set`` changes what every cell shares.

    Raises:
        SpecError: Naming the key, where the study varies it and what to change instead.
    """
    for text in overrides:
        given, _ = parse_override(text)
        key = canonical_key(given)
        if key == "seed" and seeds_given:
            raise SpecError(
                f"--set {given}: each cell runs a seed of the config's 'seeds', which replaces the base spec's seed; "
                "change 'seeds' (or the 'seed' a count of seeds derives from) in the config"
            )
        for other, where in varied.items():
            related = {key, other} == {"workload.model", "workload.trace"}  # one replaces the other
            if key == other or other.startswith(key + ".") or key.startswith(other + ".") or related:
                raise SpecError(
                    f"--set {given}: {other} is varied by the config's {where}, which sets it in every cell; "
                    f"change its values in the config instead"
                )


def override_base(config: SweepConfig, overrides: Sequence[str], source: str = "sweep config") -> SweepConfig:
    """``config`` with ``overrides`` (``KEY=VALUE``, the value read as YAML, as ``run --set``
    reads it) applied to its base spec, in order; relative trace paths in them are taken from
    the current directory. Cell ids change with the base, as they should.

    Raises:
        SpecError: A malformed override, or a key that a grid axis or zip group varies (or
            ``seed`` when the config gives ``seeds``): an axis's values belong to the config.
    """
    if not overrides:
        return config
    zipped = {canonical_key(key) for group in config.raw.get("zip") or [] for key in group}
    varied: dict[str, str] = {}
    for g, axes in enumerate(config.axis_sets):
        for axis in axes:
            for key in axis:
                varied.setdefault(key, "zip" if key in zipped else "grid" if config.grids is None else f"grids[{g}]")
    for key in config.design.keys if config.design is not None else ():
        varied.setdefault(key, "sample")
    check_override_keys(overrides, varied, "seeds" in config.raw)
    base = apply_overrides(dict(config.raw["base"]), overrides, folder=os.getcwd())
    changed = parse_sweep_config({**config.raw, "base": base}, source=source)
    return replace(changed, source_text=config.source_text, overrides=(*config.overrides, *overrides))


def _list(path: str, value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise SpecError(f"{path}: expected a list of values, got {value!r}")
    if not value:
        raise SpecError(f"{path}: empty axis; give at least one value")
    return value


def _not_seed(path: str, key: str) -> None:
    if key == "seed" or key.startswith("seed."):
        raise SpecError(f"{path}: give seeds with the top-level 'seeds' key, not as an axis")


def check_header(raw: Any, keys: tuple[str, ...], source: str) -> tuple[str, Mapping[str, Any]]:
    """Check what sweep and tuning configs share: a mapping of known ``keys`` with a ``name``
    fit for a folder name and a ``base`` run spec; return the name and the base."""
    if not isinstance(raw, Mapping):
        raise SpecError(f"{source}: expected a mapping, got {type(raw).__name__}")
    refuse_unknown_keys(raw, keys)
    name = raw.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise SpecError(f"name: expected a name of letters, digits, '.', '_' or '-', got {name!r}")
    base = raw.get("base")
    if not isinstance(base, Mapping):
        raise SpecError(f"base: expected a run spec (a mapping), got {base!r}")
    return name, base


def parse_sweep_config(raw: Mapping[str, Any], source: str = "sweep config") -> SweepConfig:
    """Validate a sweep config mapping.

    Raises:
        SpecError: Unknown keys, empty axes, zip groups of unequal lengths, bad seeds; the
            message names the key path.
    """
    name, base = check_header(raw, _TOP_KEYS, source)
    if "grid" in raw and "grids" in raw:
        raise SpecError("grids: give either 'grid' (one grid) or 'grids' (a list of grids), not both")
    grid_list = raw.get("grids")
    if grid_list is not None and (not isinstance(grid_list, list) or not grid_list):
        raise SpecError("grids: expected a non-empty list of grids (mappings of dotted spec keys to lists)")
    seen: set[str] = set()
    grid_axes: list[list[dict[str, list[Any]]]] = []
    for g, grid in enumerate(grid_list if grid_list is not None else [raw.get("grid") or {}]):
        path = f"grids[{g}]" if grid_list is not None else "grid"
        if not isinstance(grid, Mapping):
            raise SpecError(f"{path}: expected a mapping of dotted spec keys to lists, got {grid!r}")
        these = []
        for given_key, values in grid.items():
            _not_seed(f"{path}.{given_key}", given_key)
            key = canonical_key(given_key)  # a moved key is stored (and analysed) under its new name
            if any(key in axis for axis in these):
                raise SpecError(f"{path}.{given_key}: already an axis of this grid (as {key})")
            these.append({key: _list(f"{path}.{given_key}", values)})
            seen.add(key)
        grid_axes.append(these)
    zip_axes: list[dict[str, list[Any]]] = []
    zips = raw.get("zip") or []
    if not isinstance(zips, list):
        raise SpecError(f"zip: expected a list of groups, got {zips!r}")
    for i, group in enumerate(zips):
        if not isinstance(group, Mapping) or not group:
            raise SpecError(f"zip[{i}]: expected a mapping of dotted spec keys to lists of equal length")
        lengths = {key: len(_list(f"zip[{i}].{key}", values)) for key, values in group.items()}
        if len(set(lengths.values())) != 1:
            raise SpecError(f"zip[{i}]: the lists must have equal lengths, got {lengths}")
        for key in group:
            _not_seed(f"zip[{i}].{key}", key)
            if canonical_key(key) in seen:
                raise SpecError(f"zip[{i}].{key}: already an axis elsewhere in the grid")
            seen.add(canonical_key(key))
        zip_axes.append({canonical_key(key): list(values) for key, values in group.items()})
    exclude = []
    rules = raw.get("exclude") or []
    if not isinstance(rules, list):
        raise SpecError(f"exclude: expected a list of {{key: value(s)}} rules, got {rules!r}")
    for i, rule in enumerate(rules):
        if not isinstance(rule, Mapping) or not rule:
            raise SpecError(f"exclude[{i}]: expected a mapping of dotted spec keys to values")
        for key in rule:
            if canonical_key(key) not in seen:
                raise SpecError(f"exclude[{i}].{key}: not an axis of the grid; axes: {', '.join(sorted(seen))}")
        exclude.append({canonical_key(k): (v if isinstance(v, list) else [v]) for k, v in rule.items()})
    seeds = parse_seeds(raw, base)
    design = parse_design(raw["sample"], seen) if "sample" in raw else None
    sampled = design.size if design is not None else 1
    # Refuse an absurd grid before expanding it: a count of a billion seeds (or a product of
    # long axes) would otherwise build cells until memory runs out, with no message.
    count = sum(math.prod(len(next(iter(axis.values()))) for axis in these + zip_axes) for these in grid_axes)
    if count * sampled * len(seeds) > MAX_CELLS:
        times = f" x {sampled:,} design points" if design is not None else ""
        raise SpecError(
            f"{source}: the grid has {count:,} points{times} x {len(seeds):,} seeds = {count * sampled * len(seeds):,} "
            f"cells, more than {MAX_CELLS:,}; split the study into several sweeps"
        )
    description = raw.get("description", "")
    axis_sets = [these + zip_axes for these in grid_axes]
    grids = axis_sets if grid_list is not None else None
    timeout = raw.get("cell_timeout")
    if timeout is not None:
        check_cell_timeout(timeout, "cell_timeout")
    return SweepConfig(
        name,
        dict(base),
        axis_sets[0],
        exclude,
        list(seeds),
        dict(raw),
        str(description),
        grids,
        cell_timeout=timeout,
        design=design,
    )


#: The shortest cell time limit taken (seconds).
SHORTEST_CELL_TIMEOUT = 0.001


def check_cell_timeout(value: Any, where: str) -> None:
    """Refuse a cell time limit (``where``: the config key or option that gave it) that is not a
    number of seconds >= 0 (0: no limit)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < math.inf:
        raise SpecError(f"{where}: expected seconds (a number >= 0; 0 for no limit), got {value!r}")
    if 0 < value < SHORTEST_CELL_TIMEOUT:
        # (the timer's resolution: a shorter limit is rounded to none or stops every cell at once)
        raise SpecError(f"{where}: expected 0 (no limit) or at least {SHORTEST_CELL_TIMEOUT} s, got {value!r}")


def parse_seeds(
    raw: Mapping[str, Any], base: Mapping[str, Any], given: Any = None, *, key: str = "seeds", first: int = 0
) -> list[int]:
    """The seeds of a sweep or tuning config: ``seeds`` as a list, or a count of seeds derived
    from the config's ``seed`` (default: the base spec's seed alone).

    Args:
        given: The seeds to read instead of ``raw["seeds"]`` (a tuning config's check seeds),
            named ``key`` in messages; a count of them derives the replicates from ``first`` on
            (those after the tuning seeds' own).

    Raises:
        SpecError: Not a positive count or a non-empty list of distinct non-negative integers,
            or a count above :data:`MAX_CELLS` (refused before any seed is derived).
    """
    sweep_seed = raw.get("seed", 0)
    if isinstance(sweep_seed, bool) or not isinstance(sweep_seed, int) or not 0 <= sweep_seed <= MAX_SEED:
        raise SpecError(f"seed: expected an integer from 0 to {MAX_SEED:,}, got {sweep_seed!r}")
    seeds = raw.get("seeds") if given is None else given
    if seeds is None:
        return [base.get("seed", 0)]
    if isinstance(seeds, int) and not isinstance(seeds, bool):
        if not 1 <= seeds <= MAX_CELLS:
            raise SpecError(f"{key}: expected a count from 1 to {MAX_CELLS:,} or a list of seeds, got {seeds}")
        return [replicate_seed(sweep_seed, first + r) for r in range(seeds)]
    if not isinstance(seeds, list) or not seeds:
        raise SpecError(f"{key}: expected a positive count or a non-empty list of seeds, got {seeds!r}")
    for s in seeds:
        if isinstance(s, bool) or not isinstance(s, int) or not 0 <= s <= MAX_SEED:
            raise SpecError(f"{key}: expected integers from 0 to {MAX_SEED:,} (stored as 64-bit integers), got {s!r}")
    if len(set(seeds)) != len(seeds):
        raise SpecError(f"{key}: repeated seeds in {seeds}")
    return list(seeds)


def _excluded(point: Mapping[str, Any], rules: list[dict[str, list[Any]]]) -> bool:
    return any(all(point.get(key) in values for key, values in rule.items()) for rule in rules)


#: Invalid cells an error names at most per kind of error, and kinds of error it lists at most
#: (the rest are counted): enough to see the pattern without a screenful per cell.
LISTED_CELLS = 5
LISTED_ERRORS = 20
#: Most (grid point x key subset) checks spent finding which axis values cause an error.
_DIAGNOSIS_BUDGET = 200_000


def expand(config: SweepConfig) -> list[Cell]:
    """The cells of a sweep, in a fixed order: grid points (grid by grid; axes in config order,
    last axis fastest), then the sampled design's points (in design order), then seeds; excluded
    points dropped; cells with the same canonical spec kept once.

    Every grid point is validated before the error is raised, so that one message reports every
    invalid cell: grouped by error, each group naming its first cells and what to change (the
    axis value that fails wherever it appears; the combinations to ``exclude`` where only some
    combinations fail; the base spec where every cell fails).

    Raises:
        SpecError: Some cells' specs are invalid, or the exclusions leave no cell.
    """
    points = []
    for axes in config.axis_sets:
        choices = []
        for axis in axes:
            keys = list(axis)
            choices.append([dict(zip(keys, values)) for values in zip(*axis.values())])
        points.extend(itertools.product(*choices) if choices else [()])
    if config.design is not None:
        first: dict[str, Any] = {}
        for part in points[0]:
            first.update(part)
        _check_design(config, first)
        sampled = config.design.points()
        points = [(*combination, design_point) for combination in points for design_point in sampled]
    cells: list[Cell] = []
    seen: set[str] = set()
    kept: list[dict[str, Any]] = []  # the points left after the exclusions
    invalid: dict[str, list[dict[str, Any]]] = {}  # error -> its points, in order of first sight
    traces_found: set[str] = set()  # (each trace is looked for once, not once per cell)
    for combination in points:
        point: dict[str, Any] = {}
        for part in combination:
            point.update(part)
        if _excluded(point, config.exclude):
            continue
        kept.append(point)
        spec = dict(config.base)
        for key, value in point.items():
            spec = set_key(spec, key, value)
        for replicate, seed in enumerate(config.seeds):
            spec["seed"] = seed
            try:
                plan = plan_run(spec)
                trace = plan.workload["trace"]
                if trace is not None and trace not in traces_found:
                    _check_trace(trace)
                    traces_found.add(trace)
            except SpecError as error:
                invalid.setdefault(str(error), []).append(point)
                break  # (the seeds are checked with the config: another seed fails alike)
            if invalid:
                break  # the sweep will not run: no cell ids (a trace digest each) needed
            canonical = plan.spec
            digest = trace_digest(canonical)  # (one reading of the trace for the id and the check)
            identity = cell_id(canonical, trace_sha256=digest)
            if identity in seen:
                continue
            seen.add(identity)
            cells.append(Cell(len(cells), identity, plan, dict(point), replicate, digest))
    if invalid:
        raise SpecError(_invalid_cells_message(invalid, kept))
    if not cells:  # (axes and seeds are never empty: only the exclusions can remove every cell)
        raise SpecError("exclude: the rules drop every grid point, so the sweep has no cells to run")
    return cells


def _check_design(config: SweepConfig, point: Mapping[str, Any]) -> None:
    """Refuse a sampled parameter whose range ends (or one of whose choices) the spec does not
    accept at grid ``point`` though its middle is accepted there, naming the config key, before
    the design's points fail one by one with their own values (any other error is left to
    the cells' own validation).

    Raises:
        SpecError: ``sample.params.KEY.low`` (``high``, ``choices[i]``): the spec's error.
    """
    assert config.design is not None
    spec = dict(config.base)
    for key, value in point.items():
        spec = set_key(spec, key, value)

    def error_at(key: str, value: Any) -> str | None:
        try:
            plan_run(set_key(spec, key, value))
        except SpecError as error:
            return str(error)
        return None

    for factor in config.design.factors:
        if factor.choices is None:
            if error_at(factor.key, factor.value(0.5)) is not None:
                continue
            ends = {"low": factor.value(0.0), "high": factor.value(1.0)}
        else:
            ends = {f"choices[{i}]": choice for i, choice in enumerate(factor.choices)}
        for name, value in ends.items():
            error = error_at(factor.key, value)
            if error is not None:
                raise SpecError(f"sample.params.{factor.key}.{name}: {value!r} is not a valid value: {error}")


def _check_trace(trace: str) -> None:
    try:
        mode = os.stat(trace).st_mode
    except OSError:  # (as Path.exists: a path that cannot be looked at is not there)
        relative = "" if os.path.isabs(trace) else f" (relative paths are taken from {Path.cwd()})"
        raise SpecError(f"workload.trace: no such file {trace!r}{relative}") from None
    kind = not_a_regular_file(mode)
    if kind is not None:  # (a cell over a FIFO would block its worker, one over a device never end)
        raise SpecError(f"workload.trace: {trace} is {kind}, not a regular file; give the path of an SWF file")


def _identity(point: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """A hashable identity of a grid point (values may be lists or mappings)."""
    return tuple((key, repr(value)) for key, value in point.items())


def _show_point(point: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in point.items())


def _invalid_cells_message(invalid: dict[str, list[dict[str, Any]]], kept: list[dict[str, Any]]) -> str:
    """One line per kind of error: its first cells, how many more, and what to change; then,
    when there are several kinds, a count of the invalid grid points."""
    lines = []
    bad: set[tuple[tuple[str, str], ...]] = set()
    for error, given in list(invalid.items())[:LISTED_ERRORS]:
        points = list({_identity(p): p for p in given}.values())  # (a point may be in two grids)
        bad.update(_identity(p) for p in points)
        if not points[0]:
            lines.append(f"the base spec: {error}")
            continue
        line = f"cell {_show_point(points[0])}: {error}"
        if len(points) > 1:
            shown = "; ".join(_show_point(p) for p in points[1:LISTED_CELLS])
            rest = max(len(points) - LISTED_CELLS, 0)
            line += f" (also {len(points) - 1} more cell{'s' if len(points) > 2 else ''}: {shown}" + (
                f"; and {rest} more)" if rest else ")"
            )
        others = [p for other, given in invalid.items() if other != error for p in given]
        lines.append(line + _fix(error, points, others, kept))
    for given in list(invalid.values())[LISTED_ERRORS:]:
        bad.update(_identity(p) for p in given)
    if len(invalid) > 1:
        more = f", {len(invalid) - LISTED_ERRORS} not shown" if len(invalid) > LISTED_ERRORS else ""
        distinct = len({_identity(p) for p in kept})
        lines.append(
            f"{len(bad)} of {distinct} grid points are invalid ({len(invalid)} different errors{more}); nothing was run"
        )
    return "\n".join(lines)


def _fix(error: str, failing: list[dict[str, Any]], others: list[dict[str, Any]], kept: list[dict[str, Any]]) -> str:
    """What to change for ``error``, which the ``failing`` points have, found as the fewest
    axis keys whose values say which points fail: none (every cell fails: the base spec), one
    (a value that fails wherever it appears: change or drop it) or several (combinations that
    do not apply: ``exclude`` rules). Empty when that search would take too long.

    A point validation stopped at another error (``others``) may have this one too: it counts
    for neither side. Among key sets of one size, those naming keys the error names come first
    (in a zip group, the key at fault rather than its partner)."""
    keys = list(dict.fromkeys(key for point in kept for key in point))
    if len(kept) * 2 ** len(keys) > _DIAGNOSIS_BUDGET:
        return ""
    missing = object()

    def text_of(point: Mapping[str, Any]) -> tuple[str, ...]:
        # Values as text: they may be lists or mappings, which do not hash.
        return tuple(repr(point.get(key, missing)) for key in keys)

    texts = [text_of(point) for point in kept]
    failing_texts = {text_of(point): point for point in failing}
    unknown = {text_of(point) for point in others}
    named = [key in error for key in keys]
    for size in range(len(keys) + 1):
        subsets = sorted(itertools.combinations(range(len(keys)), size), key=lambda s: -sum(named[i] for i in s))
        for subset in subsets:
            causes = {tuple(text[i] for i in subset): point for text, point in failing_texts.items()}
            if all(
                text in failing_texts or text in unknown for text in texts if tuple(text[i] for i in subset) in causes
            ):
                return _fix_text(tuple(keys[i] for i in subset), list(causes.values()))
    return ""


def _fix_text(subset: tuple[str, ...], examples: list[dict[str, Any]]) -> str:
    if not subset:
        return "; every cell has this error: fix the base spec (or the axis value it names)"
    if any(key not in point for point in examples for key in subset):
        return ""  # (points of grids without one of these axes: no rule names them alone)
    if len(subset) == 1:
        key = subset[0]
        values = " or ".join(repr(point[key]) for point in examples[:LISTED_CELLS])
        more = f" (and {len(examples) - LISTED_CELLS} more values)" if len(examples) > LISTED_CELLS else ""
        return (
            f"; every cell with {key}={values}{more} has this error: change or drop "
            f"{'that value' if len(examples) == 1 else 'those values'} in the config"
        )
    rules = ", ".join(
        "{" + ", ".join(f"{key}: {_flow(point[key])}" for key in subset) + "}" for point in examples[:LISTED_CELLS]
    )
    more = f", ... ({len(examples)} rules in all)" if len(examples) > LISTED_CELLS else ""
    return f"; these combinations do not apply: drop them with exclude: [{rules}{more}]"


def _flow(value: Any) -> str:
    """``value`` as YAML flow text, for an ``exclude`` rule to paste into a config."""
    import json

    if (
        isinstance(value, str)
        and re.fullmatch(r"[A-Za-z_/][\w./-]*", value)
        and value.lower() not in ("true", "false", "null", "yes", "no", "on", "off")
    ):
        return value
    return json.dumps(value, default=str)
