"""Sweep configs: a base spec, a grid of dotted keys, zips, exclusions and seeds.

::

    name: quickstart
    base: {workload: {model: feitelson96, jobs: 10000}, platform: {tiers: 2}}
    grid:
      policy.name: [easy, ambf, amcbf]
      workload.load: [0.6, 0.8, 1.0]
    zip:                       # axes that vary together (equal lengths)
      - {policy.migration_cost: [0, 600], workload.cpu_accuracy: [1.0, 0.0]}
    exclude:                   # drop the cells matching every key of a rule
      - {policy.name: easy, workload.load: 1.0}
    # grids: [{...}, {...}]    # instead of grid: the union of several grids (one-at-a-time
    #                          # sensitivity studies); zip groups apply to each
    seeds: 2                   # or a list of seeds [1, 2, 3]
    seed: 0                    # the sweep seed that a count of seeds derives from

The cells are the cartesian product of the grid axes and the zip groups (each group one
axis), times the seeds, less the exclusions; each is validated as a run spec before anything
runs, and errors name the config key path and the cell.
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from ..core.errors import SpecError
from ..core.params import MAX_SEED
from ..core.spec import canonical_key, set_key, validate_spec

from .cells import Cell, cell_id, replicate_seed
from .specfile import load_spec_file

__all__ = ["SweepConfig", "load_sweep_config", "parse_sweep_config", "expand", "check_header", "parse_seeds", "MAX_CELLS"]

#: The most cells a sweep (grid points x seeds) or one tuning trial (seeds x variants) may have.
MAX_CELLS = 1_000_000

_TOP_KEYS = ("name", "description", "base", "grid", "grids", "zip", "exclude", "seeds", "seed")
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

    @property
    def axis_sets(self) -> list[list[dict[str, list[Any]]]]:
        """One list of axes per grid (a single grid unless the config gives ``grids``)."""
        return self.grids if self.grids is not None else [self.axes]


def load_sweep_config(path: str | Path) -> SweepConfig:
    """Read and validate a sweep config file (YAML, safe loader)."""
    return parse_sweep_config(load_spec_file(path), source=str(path))


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
    for key in raw:
        if key not in keys:
            raise SpecError(f"{key}: unknown key; valid keys: {', '.join(keys)}")
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
    # Refuse an absurd grid before expanding it: a count of a billion seeds (or a product of
    # long axes) would otherwise build cells until memory runs out, with no message.
    count = sum(math.prod(len(next(iter(axis.values()))) for axis in these + zip_axes) for these in grid_axes)
    if count * len(seeds) > MAX_CELLS:
        raise SpecError(
            f"{source}: the grid has {count:,} points x {len(seeds):,} seeds = {count * len(seeds):,} cells, "
            f"more than {MAX_CELLS:,}; split the study into several sweeps"
        )
    description = raw.get("description", "")
    axis_sets = [these + zip_axes for these in grid_axes]
    grids = axis_sets if grid_list is not None else None
    return SweepConfig(name, dict(base), axis_sets[0], exclude, list(seeds), dict(raw), str(description), grids)


def parse_seeds(raw: Mapping[str, Any], base: Mapping[str, Any]) -> list[int]:
    """The seeds of a sweep or tuning config: ``seeds`` as a list, or a count of seeds derived
    from the config's ``seed`` (default: the base spec's seed alone).

    Raises:
        SpecError: Not a positive count or a non-empty list of distinct non-negative integers,
            or a count above :data:`MAX_CELLS` (refused before any seed is derived).
    """
    sweep_seed = raw.get("seed", 0)
    if isinstance(sweep_seed, bool) or not isinstance(sweep_seed, int) or not 0 <= sweep_seed <= MAX_SEED:
        raise SpecError(f"seed: expected an integer from 0 to {MAX_SEED:,}, got {sweep_seed!r}")
    seeds = raw.get("seeds")
    if seeds is None:
        return [base.get("seed", 0)]
    if isinstance(seeds, int) and not isinstance(seeds, bool):
        if not 1 <= seeds <= MAX_CELLS:
            raise SpecError(f"seeds: expected a count from 1 to {MAX_CELLS:,} or a list of seeds, got {seeds}")
        return [replicate_seed(sweep_seed, r) for r in range(seeds)]
    if not isinstance(seeds, list) or not seeds:
        raise SpecError(f"seeds: expected a positive count or a non-empty list of seeds, got {seeds!r}")
    for s in seeds:
        if isinstance(s, bool) or not isinstance(s, int) or not 0 <= s <= MAX_SEED:
            raise SpecError(f"seeds: expected integers from 0 to {MAX_SEED:,} (stored as 64-bit integers), got {s!r}")
    if len(set(seeds)) != len(seeds):
        raise SpecError(f"seeds: repeated seeds in {seeds}")
    return list(seeds)


def _excluded(point: Mapping[str, Any], rules: list[dict[str, list[Any]]]) -> bool:
    return any(all(point.get(key) in values for key, values in rule.items()) for rule in rules)


def expand(config: SweepConfig) -> list[Cell]:
    """The cells of a sweep, in a fixed order: grid points (grid by grid; axes in config order,
    last axis fastest), then seeds; excluded points dropped; cells with the same canonical spec
    kept once.

    Raises:
        SpecError: A cell's spec is invalid (the message names the cell's grid values), or the
            exclusions leave no cell.
    """
    points = []
    for axes in config.axis_sets:
        choices = []
        for axis in axes:
            keys = list(axis)
            choices.append([dict(zip(keys, values)) for values in zip(*axis.values())])
        points.extend(itertools.product(*choices) if choices else [()])
    cells: list[Cell] = []
    seen: set[str] = set()
    for combination in points:
        point: dict[str, Any] = {}
        for part in combination:
            point.update(part)
        if _excluded(point, config.exclude):
            continue
        spec = dict(config.base)
        for key, value in point.items():
            spec = set_key(spec, key, value)
        for replicate, seed in enumerate(config.seeds):
            spec["seed"] = seed
            try:
                canonical = validate_spec(spec)
                trace = canonical["workload"]["trace"]
                if trace is not None and not Path(trace).exists():
                    raise SpecError(f"workload.trace: no such file {trace!r} (relative paths are taken from {Path.cwd()})")
            except SpecError as error:
                where = ", ".join(f"{k}={v!r}" for k, v in point.items()) or "the base spec"
                raise SpecError(f"cell {where}: {error} (use 'exclude' to drop combinations that do not apply)") from None
            identity = cell_id(canonical)
            if identity in seen:
                continue
            seen.add(identity)
            cells.append(Cell(len(cells), identity, canonical, dict(point), replicate))
    if not cells:  # (axes and seeds are never empty: only the exclusions can remove every cell)
        raise SpecError("exclude: the rules drop every grid point, so the sweep has no cells to run")
    return cells
