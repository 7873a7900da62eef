"""``tiersweep report``: every figure the data of a results folder supports, and an HTML page.

The page (``index.html``) holds, in this order: a warning when a grid point has fewer than three
seeds; the summary table (per grid point, in the config's order, the sweep summary's metrics and
the figures' metrics that vary: mean and 95 % interval over seeds, four significant digits);
the failed cells; for a sampled design (``sample:``), the sensitivity section (indices with
intervals and their convergence, :mod:`~tiersweep.analysis.sensitivity_report`); the figures;
the versions and provenance of the rows; and every config run
into the folder as the YAML the user wrote, with its ``--set`` values.

A grid point is one set of inputs: rows under one grid point that differ in another input (a
trace regenerated at the same path, another config of the same name, other ``--set`` values)
are points of their own, in the table and the figures, with the differing column shown
(:func:`~tiersweep.sweep.points.point_columns`); one seed of one point stored as several cells
that no column tells apart is refused.

The figures: each metric against every numeric grid axis (one line per policy, one figure per
combination of the other axes; a metric that is the same in every run gets no panel, and a
panel whose values span more than a decade gets a log axis); when the sweep stored segments
(``--jobs``), a Gantt chart and the VMs held over time of one run per policy, all at the same
grid point and seed (the first, or the one ``gantt_at`` picks), over the whole run or a window;
and a tuning study's plots, with the default-parameter baseline and the spread over seeds.
"""

from __future__ import annotations

import hashlib
import html
import math
import re
import warnings
from collections.abc import Callable, Mapping, Sequence
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from ..core.errors import TiersweepError
from ..core.metric_catalogue import REPORT_METRICS, SUMMARY_METRICS
from ..core.safe_files import refuse_link, write_atomic
from ..core.spec import canonical_key
from ..sweep.points import point_columns, repeated_seeds
from ..sweep.store import read_configs, read_manifest
from .load import load
from .plots import LABELS, gantt, log_axes, metric_grid, utilisation_over_time, utilisation_vs_occupancy
from .sensitivity_report import sampled_keys, sensitivity_section
from .stats import POLICY, SEED, FewSeedsWarning, few_seeds_warning, summary

__all__ = ["write_report", "REPORT_METRICS", "format_number", "parse_window", "parse_assignments"]

_MAX_FACETS = 12
#: At most this many Gantt charts (one per policy).
_MAX_GANTT = 8

Window = tuple[float | None, float | None]


def format_number(value: Any) -> str:
    """A number as the report's table shows it: four significant digits, thousands separated
    (``0.5`` -> ``0.5000``, ``1234.5`` -> ``1,235``, ``123456`` -> ``123,500``); below 0.001 in
    scientific notation; missing -> empty."""
    if value is None:
        return ""
    number = float(value)
    if math.isnan(number):
        return ""
    if math.isinf(number):
        return "inf" if number > 0 else "-inf"
    if number == 0:
        return "0"
    exponent = math.floor(math.log10(abs(number)))
    if exponent < -3:
        return f"{number:.3e}"
    # Rounded half away from zero, as a reader rounds (Python's own rounding goes to even:
    # 1234.5 would read 1,234), from the shortest decimal text of the float.
    decimals = 3 - exponent
    rounded = Decimal(repr(number)).quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP)
    if abs(rounded) >= Decimal(10) ** (exponent + 1):  # 9.9996 rounds up to 10.00: one decimal fewer
        decimals -= 1
        rounded = rounded.quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP)
    return f"{rounded:,.{max(decimals, 0)}f}"


def parse_window(text: str | None) -> Window | None:
    """``START:END`` in seconds of simulated time (either may be left out: ``:3600``,
    ``86400:``) as ``(start, end)``; None for None.

    Raises:
        TiersweepError: Not of that form, or the end does not come after the start.
    """
    if text is None:
        return None
    parts = text.split(":")
    try:
        if len(parts) != 2:
            raise ValueError
        start, end = (float(p) if p.strip() else None for p in parts)
    except ValueError:
        raise TiersweepError(
            f"--window: expected START:END in seconds (e.g. 0:86400, or :3600), got {text!r}"
        ) from None
    if any(v is not None and not math.isfinite(v) for v in (start, end)):
        raise TiersweepError(f"--window: expected finite seconds, got {text!r}")
    if start is not None and end is not None and not end > start:
        raise TiersweepError(f"--window: the end ({end:g} s) must come after the start ({start:g} s)")
    return (start, end)


def parse_assignments(items: Sequence[str] | None, option: str = "--gantt-at") -> dict[str, str]:
    """``KEY=VALUE`` strings as a mapping (keys under their current names).

    Raises:
        TiersweepError: An item without ``=``.
    """
    chosen: dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise TiersweepError(f"{option}: expected KEY=VALUE (e.g. workload.load=0.9 or seed=2), got {item!r}")
        chosen[canonical_key(key.strip())] = value.strip()
    return chosen


def _slug(text: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_") or "all"
    if len(slug) > 60:  # keep names short and still distinct
        slug = f"{slug[:50]}_{hashlib.sha1(text.encode()).hexdigest()[:8]}"
    return slug


#: Digest columns shown by their first digits (as git shows a commit).
_DIGESTS = {"trace_digest": "trace digest", "code_digest": "code digest"}


def _short(key: str, value: Any) -> str:
    """A value for a title or a table: a trace by its file name, a digest by its first 12
    digits (missing: ``unrecorded``), a float in short form."""
    if key.endswith("trace") and isinstance(value, str):
        return Path(value).name
    if key in _DIGESTS:
        return value[:12] if isinstance(value, str) else "unrecorded"
    if isinstance(value, (float, np.floating)):
        return "" if math.isnan(value) else f"{float(value):.6g}"
    return str(value)


def _label(combo: dict[str, str]) -> str:
    """``key=value`` pairs for a title: a trace shows its file name only; a key the cells
    leave unset (the other grids of ``grids``) says so."""
    return ", ".join(
        f"{k.split('.')[-1]} not set" if v in ("nan", "None") else f"{k.split('.')[-1]}={_short(k, v)}"
        for k, v in combo.items()
    )


def _axes(configs: Sequence[Mapping[str, Any]], runs: pd.DataFrame) -> list[str]:
    """The grid keys of every config run into the folder that the runs have, in config order."""
    keys: list[str] = []
    for config in configs:
        keys += list((config.get("grid") or {}).keys())
        for grid in config.get("grids") or []:
            keys += list(grid.keys())
        for group in config.get("zip") or []:
            keys += list(group.keys())
        # (A tuning study's params are not axes: its own plots show them.)
    keys = [canonical_key(k) for k in keys]  # configs may name a moved key by its old name
    return [k for k in dict.fromkeys(keys) if k in runs.columns]


def _config_order(configs: Sequence[Mapping[str, Any]]) -> dict[str, list[Any]]:
    """Each axis's values in the order the configs list them (grid, then grids, then zips;
    the newest config first)."""
    orders: dict[str, list[Any]] = {}
    mappings = []
    for config in reversed(configs):
        mappings += [config.get("grid") or {}, *(config.get("grids") or []), *(config.get("zip") or [])]
    for mapping in mappings:
        for key, values in mapping.items():
            if isinstance(values, list):
                seen = orders.setdefault(canonical_key(key), [])
                seen += [v for v in values if v not in seen]
    return orders


def _same(value: Any, given: Any) -> bool:
    """Whether a stored value is a config's (or the user's) value: numbers by value, a trace
    also by file name, anything else as text."""
    try:
        return math.isclose(float(value), float(given), rel_tol=1e-9, abs_tol=1e-12)
    except (TypeError, ValueError):
        pass
    if str(value) == str(given):
        return True
    return isinstance(value, str) and isinstance(given, str) and "/" in value and Path(value).name == Path(given).name


def _sort_key(value: Any, order: list[Any] | None) -> tuple:
    """Config position first, then (values the config does not list) numbers before text."""
    rank = next((i for i, given in enumerate(order or []) if _same(value, given)), len(order or []))
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return (rank, 2, 0.0, "")  # a key a cell lacks (grids of other axes): last
    try:
        return (rank, 0, float(value), "")
    except (TypeError, ValueError):
        return (rank, 1, 0.0, str(value))


def _in_config_order(frame: pd.DataFrame, keys: Sequence[str], orders: Mapping[str, list[Any]]) -> pd.DataFrame:
    """``frame``'s rows sorted by ``keys``, each in the config's order of its values."""
    if frame.empty or not keys:
        return frame
    rows = frame[list(keys)].to_dict("records")
    positions = sorted(range(len(rows)), key=lambda i: tuple(_sort_key(rows[i][k], orders.get(k)) for k in keys))
    return frame.iloc[positions].reset_index(drop=True)


def _varying(runs: pd.DataFrame, column: str) -> bool:
    return column in runs.columns and runs[column].map(str).nunique(dropna=False) > 1


def _constant(values: pd.Series) -> bool:
    """Whether a metric is the same in every run (or missing): a panel of it says nothing,
    as accept rate on a platform that never turns a job away."""
    numbers = pd.to_numeric(values, errors="coerce").dropna()
    if numbers.empty:
        return True
    low, high = float(numbers.min()), float(numbers.max())
    return math.isclose(low, high, rel_tol=1e-9, abs_tol=1e-12)


def _facets(ok: pd.DataFrame, others: list[str]):
    """``(label, rows)`` for each combination of the values of ``others`` present in ``ok``."""
    combos = ok[others].apply(lambda column: column.map(str)).drop_duplicates().to_dict("records") if others else [{}]
    for combo in combos[:_MAX_FACETS]:
        subset = ok
        for key, value in combo.items():
            subset = subset[subset[key].map(str) == value]
        yield _label(combo), subset


def _numeric(runs: pd.DataFrame, column: str) -> bool:
    return pd.to_numeric(runs[column], errors="coerce").notna().all()


def _names(metrics: Sequence[str]) -> str:
    return ", ".join(LABELS.get(m, m) for m in metrics)


def write_report(
    root: str | Path,
    out: str | Path | None = None,
    *,
    window: Window | None = None,
    gantt_at: Mapping[str, Any] | None = None,
    on_warning: Callable[[str], None] | None = None,
) -> Path:
    """Write the figures and ``index.html`` of the results folder ``root``; return the page.

    Args:
        out: The report folder [``ROOT/report``].
        window: ``(start, end)`` in seconds: the part of each run the Gantt and VMs-held charts
            show (either end None for the run's own); default the whole run.
        gantt_at: Spec keys (and ``seed``) to the values of the runs to chart, e.g.
            ``{"workload.load": "0.9", "seed": "2"}``; default the first grid point and seed.
        on_warning: Called with the few-seeds warning when a grid point has fewer than three
            seeds (the page shows it above the summary table either way).

    Raises:
        FileNotFoundError: No runs are stored under ``root``.
        TiersweepError: ``gantt_at`` names a column the runs lack or matches no run, or
            ``window`` or ``gantt_at`` is given for a folder without per-job records (nothing
            is written then).
    """
    root = Path(root)
    out = Path(out) if out is not None else root / "report"
    refuse_link(out / "index.html")  # before any figure is drawn, not after
    runs = load(root)
    if runs.empty:
        raise FileNotFoundError(f"{root}: no runs stored (expected {root}/runs/*.parquet)")
    manifest = read_manifest(root)
    config = manifest.get("config") or {}
    configs = read_configs(root, manifest)
    grids = [entry["config"] for entry in configs if isinstance(entry.get("config"), Mapping)]
    orders = _config_order(grids)
    ok = runs[runs["status"] == "ok"]
    by = POLICY if POLICY in runs.columns else None
    # The grid keys, then every other input that differs between rows the grid keys would
    # average together (another trace at the same path, another config of the same name,
    # other --set values): those rows are other points, in the table and the figures alike.
    axes = point_columns(runs, _axes(grids, runs) or ([by] if by else []))
    keys = axes or ["sweep"]
    _refuse_indistinct(root, runs, keys)
    metrics = [m for m in REPORT_METRICS if m in ok.columns and ok[m].notna().any()]
    policies = _policy_order(ok, by, orders)
    # The runs to chart are chosen first: a choice that matches nothing is refused before
    # anything is drawn.
    segments = load(root, "segments")
    varying = [a for a in axes if _varying(ok, a)]
    charted = _gantt_choice(root, segments, ok, varying, by, policies, window, gantt_at)
    figures_dir = out / "figures"
    figures_dir.mkdir(parents=True, exist_ok=True)
    figures: list[tuple[str, str, Path]] = []  # (section, caption, path)
    # The page says once that some grid points have few seeds; each figure's and table's
    # summary would otherwise repeat it.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FewSeedsWarning)
        # A sampled design's parameters are no axes to draw curves along (its points scatter
        # over all of them at once): the sensitivity section shows what they do.
        sampled = sampled_keys(config)
        drawn = [a for a in axes if a not in sampled]
        figures += _metric_figures(ok, drawn, by, metrics, policies, figures_dir)
        figures += _occupancy_figures(ok, drawn, figures_dir)
        figures += _gantt_figures(segments, charted, varying, by, figures_dir, window)
        figures += _tuning_figures(root, figures_dir, config, ok)
        table_metrics = _table_metrics(ok, metrics)
        table = _in_config_order(summary(runs, by=keys, metrics=table_metrics), keys, orders)
    seeds = ok.groupby(keys, dropna=False).size().tolist() if len(ok) else []
    warning = few_seeds_warning(seeds)
    if warning and on_warning is not None:
        on_warning(warning)
    constant = [m for m in metrics if _constant(ok[m])]
    page = out / "index.html"
    section = sensitivity_section(root, metrics, figures_dir, page.parent) if sampled else ""
    section += _held_out_html(load(root, "check"))
    write_atomic(page, _html(root, manifest, runs, table, keys, warning, figures, constant, ok, page.parent, section))
    return page


def _refuse_indistinct(root: Path, runs: pd.DataFrame, keys: list[str]) -> None:
    """Refuse a folder in which one seed of one point has several cells that no stored column
    tells apart: their average would count one seed twice.

    Raises:
        TiersweepError: Naming the point, the seed and the cells.
    """
    repeated = repeated_seeds(runs, keys)
    if repeated is None:
        return
    group, seed, ids = repeated
    where = ", ".join(f"{k}={_short(k, v)}" for k, v in group.items())
    raise TiersweepError(
        f"{root}: {len(ids)} runs of {where} at seed {seed} are different cells ({', '.join(ids)}) that no "
        f"stored column tells apart (a trace changed at the same path before runs recorded its digest?); "
        f"sweep the config again into a fresh folder (--out) and report on that one"
    )


def _policy_order(ok: pd.DataFrame, by: str | None, orders: Mapping[str, list[Any]]) -> list[Any]:
    """The policies of the runs in the config's order (then the others, as stored)."""
    if by is None or by not in ok.columns:
        return []
    present = list(dict.fromkeys(ok[by].tolist()))
    return sorted(present, key=lambda p: _sort_key(p, orders.get(by))[:1])


def _table_metrics(ok: pd.DataFrame, metrics: Sequence[str]) -> list[str]:
    """The sweep summary's metrics (as ``tiersweep sweep`` prints them), then the figures'
    metrics that vary."""
    chosen = [m for m in SUMMARY_METRICS if m in ok.columns and ok[m].notna().any()]
    chosen += [m for m in metrics if m not in chosen and not _constant(ok[m])]
    return chosen


def _metric_figures(
    ok: pd.DataFrame, axes: list[str], by: str | None, metrics: list[str], policies: list[Any], folder: Path
) -> list[tuple[str, str, Path]]:
    figures = []
    for x in [a for a in axes if a != by]:
        # The runs that set x: with ``grids`` (one-at-a-time sensitivity studies) the cells of
        # the other grids leave it missing.
        given = ok[pd.to_numeric(ok[x], errors="coerce").notna()]
        if given.empty or not _varying(given, x) or not _numeric(given, x):
            continue
        others = [a for a in axes if a not in (x, by) and _varying(given, a)]
        for label, subset in _facets(given, others):
            shown = [m for m in metrics if not _constant(subset[m])]
            if not shown or subset.empty or subset[x].nunique() < 2:
                continue  # nothing varies, or a single point: no curve to draw
            name = f"{_slug(x)}__{_slug(label)}.png"
            frame = subset.copy()
            frame[x] = pd.to_numeric(frame[x])
            log = log_axes(frame, x, shown, by=by or x)
            metric_grid(frame, x, shown, folder / name, by=by or x, title=label, log_y=log, order=policies)
            caption = f"{_names(shown)} against {LABELS.get(x, x)}" + (f" ({label})" if label else "")
            if log:
                caption += f"; log axis: {_names(log)} (values span more than a decade)"
            figures.append((f"Metrics against {LABELS.get(x, x)}", caption, folder / name))
    return figures


def _occupancy_figures(ok: pd.DataFrame, axes: list[str], folder: Path) -> list[tuple[str, str, Path]]:
    figures = []
    if any(c.startswith("util_at_occ_") for c in ok.columns) and "policy.selector" in ok.columns:
        others = [a for a in axes if a != "policy.selector" and _varying(ok, a)]
        for label, subset in _facets(ok, others):
            name = f"occupancy__{_slug(label)}.png"
            utilisation_vs_occupancy(subset, folder / name, title=label)
            caption = "utilisation against occupancy (paper 001 figures 7-9)" + (f" ({label})" if label else "")
            figures.append(("Utilisation against occupancy", caption, folder / name))
    return figures


def _gantt_rows(
    ok: pd.DataFrame, axes: list[str], by: str | None, policies: list[Any], at: Mapping[str, Any] | None
) -> pd.DataFrame:
    """One run per policy to chart, all at one grid point and seed: the first run of the
    candidates (those matching ``at``) fixes the other axes and the seed; a policy without a
    run there (grids of their own) gets its first candidate."""
    candidates = ok
    for key, value in (at or {}).items():
        if key not in ok.columns:
            raise TiersweepError(f"--gantt-at {key}: the runs have no such column; give a grid key or seed")
        candidates = candidates[candidates[key].map(lambda v, value=value: _same(v, value))]
        if candidates.empty:
            raise TiersweepError(
                f"--gantt-at {key}={value}: no successful run with per-job records has this value "
                f"(values stored: {', '.join(sorted(ok[key].map(str).unique())[:10])})"
            )
    if candidates.empty:
        return candidates
    if by is None:
        return candidates.head(1)
    first = candidates.iloc[0]
    fixed = [k for k in [*axes, SEED] if k != by and k in candidates.columns]
    point = candidates
    for key in fixed:
        point = point[point[key].map(str) == str(first[key])]
    chosen = []
    for policy in policies[:_MAX_GANTT]:
        rows = point[point[by] == policy]
        rows = rows if len(rows) else candidates[candidates[by] == policy]
        if len(rows):
            chosen.append(rows.iloc[0])
    return pd.DataFrame(chosen)


def _run_title(row: pd.Series, axes: list[str], by: str | None) -> str:
    """A run named by its policy, load, the other grid values and its seed."""
    parts = [str(row[by])] if by else []
    load_value = row.get("workload.load")
    if load_value is not None and not (isinstance(load_value, float) and math.isnan(load_value)):
        parts.append(f"load {_short('workload.load', load_value)}")
    for key in axes:
        if key not in (by, "workload.load"):
            parts.append(f"{key.split('.')[-1]} {_short(key, row[key])}")
    if SEED in row.index:
        parts.append(f"seed {row[SEED]}")
    return ", ".join(parts)


def _window_text(window: Window | None) -> str:
    if window is None:
        return "whole run"
    start, end = window
    return f"t = {_bound_text(start, 'start')} to {_bound_text(end, 'end')} s"


def _bound_text(value: float | None, open_end: str) -> str:
    """A window bound as the user gave it, thousands separated: not rounded to the table's
    four digits (123,456 stays 123,456)."""
    if value is None:
        return open_end
    return f"{int(value):,}" if float(value).is_integer() else f"{value:,}"


def _gantt_choice(
    root: Path,
    segments: pd.DataFrame,
    ok: pd.DataFrame,
    varying: list[str],
    by: str | None,
    policies: list[Any],
    window: Window | None,
    at: Mapping[str, Any] | None,
) -> pd.DataFrame:
    """The runs to chart (:func:`_gantt_rows`) among those with per-job records.

    Raises:
        TiersweepError: A window or a choice of runs for a folder without per-job records, or a
            choice that matches no run.
    """
    if segments.empty:
        if at or window is not None:
            option = "--gantt-at" if at else "--window"
            raise TiersweepError(f"{option}: {root} has no per-job records to chart (run the sweep with --jobs)")
        return ok.iloc[0:0]
    with_segments = ok[ok["cell_id"].isin(set(segments["cell_id"]))]
    return _gantt_rows(with_segments, varying, by, policies, at)


def _gantt_figures(
    segments: pd.DataFrame,
    charted: pd.DataFrame,
    varying: list[str],
    by: str | None,
    folder: Path,
    window: Window | None,
) -> list[tuple[str, str, Path]]:
    """A Gantt chart and the VMs held over time of each charted run, titled by its policy,
    load, other grid values and seed, over the whole run or ``window``."""
    figures = []
    span = _window_text(window)
    for _, row in charted.iterrows():
        cell_segments = segments[segments["cell_id"] == row["cell_id"]]
        title = _run_title(row, varying, by)
        slug = _slug(title)
        nodes = _machine_size(row, cell_segments)
        gantt(cell_segments, folder / f"gantt_{slug}.png", title=f"{title} ({span})", window=window)
        figures.append(("Schedules", f"Gantt chart: {title}, {span}", folder / f"gantt_{slug}.png"))
        utilisation_over_time(
            cell_segments, nodes, folder / f"occupancy_{slug}.png", title=f"VMs held: {title} ({span})", window=window
        )
        figures.append(("Schedules", f"VMs held over time: {title}, {span}", folder / f"occupancy_{slug}.png"))
    return figures


def _machine_size(row: Any, segments: Any) -> int:
    """The cell's node count: ``platform.nodes`` when the spec gave it, else (a trace's
    ``MaxProcs`` resolved at run time, stored as missing) one past the highest node used."""
    given = row.get("platform.nodes") if hasattr(row, "get") else None
    if given is not None and given == given:  # not missing, not nan
        return int(given)
    return int(max(max(nodes) for nodes in segments["nodes"]) + 1)


def _tuning_baseline(config: Mapping[str, Any], ok: pd.DataFrame) -> tuple[str | None, dict[str, tuple[float, float]]]:
    """The study name and, per objective, ``(mean, spread)`` of the runs with the tuned keys
    at their spec defaults over the study's seeds and variants (the tuner always runs these
    cells; the spread is the tuner's, the population standard deviation over the cells).
    Nothing when the config is not a tuning config or a baseline cell is missing."""
    from ..sweep.cells import flatten
    from ..sweep.tune_config import parse_tune_config, trial_spec

    if not config or "params" not in config:
        return None, {}
    try:
        tune = parse_tune_config(config)
        spec = flatten(trial_spec(tune, {}, tune.variants[0], tune.seeds[0]))
    except (TiersweepError, OSError):
        return None, {}  # e.g. a base spec file that has moved since
    defaults = {canonical_key(p.key): spec.get(canonical_key(p.key)) for p in tune.params}
    rows = ok[ok[SEED].isin(tune.seeds)] if SEED in ok.columns else ok.iloc[0:0]
    for key, value in defaults.items():
        if key not in rows.columns:
            return tune.study_name, {}
        rows = rows[rows[key].map(lambda v, value=value: _same(v, value))]
    matching = []
    for variant in tune.variants:
        cells = rows
        for key, value in variant.items():
            key = canonical_key(key)
            cells = (
                cells[cells[key].map(lambda v, value=value: _same(v, value))]
                if key in cells.columns
                else cells.iloc[0:0]
            )
        matching.append(cells)
    cells = pd.concat(matching).drop_duplicates("cell_id")
    if len(cells) < len(tune.seeds) * len(tune.variants):
        return tune.study_name, {}
    baseline = {}
    for metric, _ in tune.objectives:
        values = cells[metric].astype(float).to_numpy()
        baseline[metric] = (float(values.mean()), float(values.std(ddof=0)) if len(values) > 1 else 0.0)
    return tune.study_name, baseline


def _tuning_figures(
    root: Path, folder: Path, config: Mapping[str, Any], ok: pd.DataFrame
) -> list[tuple[str, str, Path]]:
    """The plots of the tuning studies in ``ROOT/study.db`` (none for a folder without trials,
    or whose study the tuner kept in another storage).

    Raises:
        TiersweepError: ``ROOT/study.db`` is damaged (see
            :func:`~tiersweep.sweep.study_storage.storage_errors`), or missing while
            ``ROOT/trials`` lists trials of its study; one line naming it and the recovery.
    """
    from ..sweep.study_storage import START_OVER, default_storage_url, make_storage, storage_errors

    study_db = root / "study.db"
    trials = load(root, "trials")
    if trials.empty:
        return []
    if not study_db.exists():
        if read_manifest(root).get("storage"):
            return []  # the study is on a server or in a file the tuner was given
        raise TiersweepError(
            f"study storage {study_db} is missing, while {root / 'trials'} lists {len(trials)} trials of its study: "
            f"restore it from a backup, {START_OVER}, or delete {root / 'trials'} to report without it"
        )
    import optuna

    from .tune_plots import write_tuning_plots

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    url = default_storage_url(root)
    study_name, baseline = _tuning_baseline(config, ok)
    out = []
    with storage_errors(url):
        storage = make_storage(url)
        for name in optuna.get_all_study_names(storage):
            study = optuna.load_study(study_name=name, storage=storage)
            metrics = [c for c in trials.columns if f"spread.{c}" in trials.columns]
            # The baseline from the stored runs when they are this study's; else the tuner's trial 0.
            given = baseline if name == study_name and baseline else None
            written = write_tuning_plots(study, metrics, folder / f"tuning_{_slug(name)}", baseline=given)
            for kind, path in written.items():
                caption = f"study {name}: {kind.replace('_', ' ')}"
                if kind.startswith("history"):
                    caption += (
                        " (each trial's mean over seeds with its standard deviation; dashed: the default parameters)"
                    )
                out.append(("Tuning", caption, path))
    return out


_STYLE = """
body{font-family:sans-serif;margin:2em;max-width:1200px;color:#222}
table{border-collapse:collapse;font-size:13px}
td,th{border:1px solid #bbb;padding:3px 8px;text-align:right;vertical-align:top}
th{background:#eee} td.key{text-align:left;font-weight:600}
td .ci{display:block;color:#666;font-size:11px;white-space:nowrap}
img{max-width:100%;border:1px solid #ddd} figure{margin:1.5em 0}
figcaption{font-size:13px;color:#444}
pre{background:#f6f6f6;padding:1em;overflow:auto}
.warning{background:#fff3cd;border:1px solid #d39e00;border-left:8px solid #d39e00;padding:.8em 1em;
font-weight:600;margin:1em 0}
.note{color:#555;font-size:13px}
"""


def _held_out_html(check: pd.DataFrame) -> str:
    """The section of a tuning study's held-out check (none without one): the best trial
    against the defaults on fresh seeds, as ``tiersweep tune`` printed it."""
    if check.empty:
        return ""
    from .tune_check import held_out_lines, stored_check

    text = "\n".join(held_out_lines(stored_check(check)))
    return f"<h2>Tuning: held-out check</h2><pre id='held-out-check'>{html.escape(text)}</pre>"


def _html(
    root: Path,
    manifest: Mapping[str, Any],
    runs: pd.DataFrame,
    table: pd.DataFrame,
    keys: list[str],
    warning: str | None,
    figures: list[tuple[str, str, Path]],
    constant: list[str],
    ok: pd.DataFrame,
    base: Path,
    sections: str = "",
) -> str:
    """The page; ``sections``: the HTML of the sensitivity and held-out check sections (between
    the summary and the figures; empty when the folder has neither)."""
    failed = runs[runs["status"] != "ok"]
    versions = {
        col: sorted(runs[col].dropna().map(str).unique()) for col in ("model_version", "package_version") if col in runs
    }
    written = pd.to_datetime(runs["written_at"]) if "written_at" in runs else pd.Series(dtype="datetime64[ns]")
    hosts = sorted(runs["host"].dropna().map(str).unique()) if "host" in runs else []
    esc = html.escape
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>tiersweep report: {esc(root.name)}</title>",
        f"<style>{_STYLE}</style></head><body>",
        f"<h1>tiersweep report: {esc(root.name)}</h1>",
        f"<p>{len(runs)} cells ({len(runs) - len(failed)} ok, {len(failed)} failed) "
        f"from <code>{esc(str(root))}</code>.</p>",
        "<h2>Summary (mean and 95% interval over seeds)</h2>",
    ]
    if warning:
        parts.append(f"<div class='warning' id='few-seeds' role='alert'>{esc(warning)}</div>")
    parts.append(_summary_html(table, keys))
    if len(failed):
        parts += ["<h2>Failed cells</h2>", failed[["cell_id", "error"]].to_html(index=False, escape=True)]
    if sections:
        parts.append(sections)
    parts.append("<h2>Figures</h2>")
    if constant:
        same = "; ".join(f"{LABELS.get(m, m)} = {format_number(ok[m].dropna().iloc[0])}" for m in constant)
        parts.append(f"<p class='note'>Not drawn, the same in every run: {esc(same)}.</p>")
    section = None
    for heading, caption, path in figures:
        if heading != section:
            parts.append(f"<h3>{esc(heading)}</h3>")
            section = heading
        src = esc(path.relative_to(base).as_posix())
        parts.append(f"<figure><img src='{src}' alt='{esc(caption)}'><figcaption>{esc(caption)}</figcaption></figure>")
    parts += [
        "<h2>Provenance</h2><ul>",
        *(f"<li>{esc(k)}: {esc(', '.join(v))}</li>" for k, v in versions.items()),
        f"<li>hosts: {esc(', '.join(hosts))}</li>",
        f"<li>rows written: {esc(str(written.min()))} to {esc(str(written.max()))}</li>" if len(written) else "",
        "</ul>",
        *_configs_html(read_configs(root, manifest)),
        "</body></html>",
    ]
    return "\n".join(parts)


def _configs_html(configs: Sequence[Mapping[str, Any]]) -> list[str]:
    """The Config section: every config run into the folder (with its ``--set`` values), so
    that each point of the table has its config on the page."""
    esc = html.escape
    if len(configs) <= 1:
        return ["<h2>Config</h2>", f"<pre id='config'>{esc(_config_text(configs[0] if configs else {}))}</pre>"]
    parts = [
        f"<h2>Configs ({len(configs)})</h2>",
        f"<p class='note'>{len(configs)} configs were run into this folder, oldest first; the table keeps "
        "apart the rows whose inputs differ.</p>",
    ]
    for number, entry in enumerate(configs, 1):
        text = esc(_config_text(entry))
        parts += [f"<h3>Config {number}</h3>", f"<pre class='config' id='config-{number}'>{text}</pre>"]
    return parts


def _config_text(entry: Mapping[str, Any]) -> str:
    """A config's file text as the user wrote it when the folder kept it, else its mapping as
    YAML in the order it was given; its ``--set`` values first, as a comment."""
    overrides = entry.get("overrides") or []
    given = "".join(f"# --set {item}\n" for item in overrides)
    text = entry.get("config_text")
    if isinstance(text, str) and text.strip():
        return given + text
    config = entry.get("config")
    if not config:
        return "(no config recorded)"
    return given + yaml.safe_dump(config, sort_keys=False, allow_unicode=True, default_flow_style=None)


def _key_header(key: str) -> str:
    return {POLICY: "policy", "sweep": "sweep", **_DIGESTS}.get(key, LABELS.get(key, key))


def _summary_html(table: pd.DataFrame, keys: list[str]) -> str:
    """The summary as an HTML table: the grid values, then per metric the mean over seeds with
    its 95 % interval beneath, then the seeds."""
    if table.empty:
        return "<p>(no successful cells)</p>"
    esc = html.escape
    metrics = [c[: -len("_mean")] for c in table.columns if c.endswith("_mean")]
    header = [*(_key_header(k) for k in keys), *(LABELS.get(m, m) for m in metrics), "seeds"]
    lines = [
        "<table id='summary'>",
        "<thead><tr>" + "".join(f"<th>{esc(h)}</th>" for h in header) + "</tr></thead>",
        "<tbody>",
    ]
    for _, row in table.iterrows():
        cells = [f"<td class='key'>{esc(_short(k, row[k]))}</td>" for k in keys]
        for metric in metrics:
            mean, low, high = row[f"{metric}_mean"], row[f"{metric}_ci_low"], row[f"{metric}_ci_high"]
            # (No interval when there is none, or when every seed gave the same value.)
            shown = pd.notna(low) and pd.notna(high) and low != high
            interval = (
                f"<span class='ci'>{esc(format_number(low))} – {esc(format_number(high))}</span>" if shown else ""
            )
            cells.append(f"<td>{esc(format_number(mean))}{interval}</td>")
        seeds = max((int(row[f"{m}_n"]) for m in metrics), default=0)
        cells.append(f"<td>{seeds}</td>")
        lines.append("<tr>" + "".join(cells) + "</tr>")
    lines += ["</tbody>", "</table>"]
    return "\n".join(lines)
