"""The summary table printed at the end of a sweep: main metrics per grid point, over seeds."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from .cells import Cell, flatten
from .points import point_columns
from .store import read_table

__all__ = ["summary_frame", "format_summary", "few_seeds_warning", "paths_lines", "failure_lines", "MIN_SEEDS"]

#: Fewer seeds than this per group get a warning: an interval from two values is too wide to
#: read (Student's t with one degree of freedom is 12.7) and says nothing of the spread.
MIN_SEEDS = 3


def few_seeds_warning(counts: Sequence[int]) -> str | None:
    """The warning to print when a group has fewer than :data:`MIN_SEEDS` seeds (None if none
    has); ``counts`` are the seeds of each group (groups with none are ignored). The sweep's
    summary prints it, and ``tiersweep.analysis`` warns with it."""
    counts = [int(n) for n in counts if int(n) > 0]
    if not counts or min(counts) >= MIN_SEEDS:
        return None
    few = sum(n < MIN_SEEDS for n in counts)
    return (
        f"warning: {few} of {len(counts)} group(s) have fewer than {MIN_SEEDS} seeds (fewest: {min(counts)}); "
        f"their intervals are too wide to read or missing: run more seeds"
    )


#: Distinct errors :func:`failure_lines` names, and the characters it keeps of each.
FAILURES_SHOWN = 3
ERROR_WIDTH = 300


def failure_lines(cells: Sequence[Cell], runs_folder: str) -> list[str]:
    """The lines saying why the failed cells among ``cells`` failed: a heading, then each
    distinct error of their stored rows with how many cells it stopped, most first (at most
    :data:`FAILURES_SHOWN`, each cut to :data:`ERROR_WIDTH` characters); none if none failed.
    A sweep that ends with failed cells says why, so that nobody needs to open its Parquet to
    learn that a time limit or a malformed line stopped them."""
    table = read_table(runs_folder, columns=("cell_id", "status", "error"))
    if not table.num_rows:
        return []
    ids = {c.cell_id for c in cells}
    errors = Counter(
        str(error)
        for cell_id, status, error in zip(*(table.column(name).to_pylist() for name in ("cell_id", "status", "error")))
        if cell_id in ids and status != "ok"
    )
    if not errors:
        return []
    total = sum(errors.values())
    lines = [f"{total} cell(s) failed (their rows' 'error' column says why):"]
    for error, count in sorted(errors.items(), key=lambda item: (-item[1], item[0]))[:FAILURES_SHOWN]:
        text = error if len(error) <= ERROR_WIDTH else error[: ERROR_WIDTH - 3] + "..."
        lines.append(f"  {count} x {text}")
    if len(errors) > FAILURES_SHOWN:
        lines.append(f"  and {len(errors) - FAILURES_SHOWN} other error(s)")
    return lines


def paths_lines(paths: Mapping[str, int]) -> list[str]:
    """The lines naming how the cells computed now ran (``paths``: path -> cells; see
    :attr:`~tiersweep.core.simulate.RunResult.path`): ``path: ...``, then each further path
    indented under the first, most cells first; none if no cell ran.

    A cell on the Python loop gives the same results as on the compiled whole run, only more
    slowly: saying so is what keeps a sweep that fell back (no compiler at install, the
    override set, a policy the compiled run does not cover) from being a silent slowdown.
    """
    counted = sorted(paths.items(), key=lambda item: (-item[1], item[0]))
    parts = [f"{n} cell{'s' if n != 1 else ''} on the {path}" for path, n in counted]
    return [("path: " if i == 0 else "      ") + part for i, part in enumerate(parts)]


def summary_frame(cells: Sequence[Cell], runs_folder: str, metrics: Sequence[str]):
    """A DataFrame with one row per grid point: the axis values (and any other input that
    differs under one grid point: :func:`~tiersweep.sweep.points.point_columns`), ``seeds``
    (ok rows), ``failed``, and the mean of each metric over seeds."""
    import pandas as pd

    table = read_table(runs_folder)
    if not table.num_rows:
        return pd.DataFrame()
    runs = table.to_pandas()
    ids = {c.cell_id for c in cells}
    runs = runs[runs["cell_id"].isin(ids)]
    # An axis whose values are mappings (``workload.params: [{mean_gap: 100}, ...]``) is stored
    # as one column per key (``workload.params.mean_gap``): group by those.
    points = [flatten(c.point) for c in cells]
    axes = list(dict.fromkeys(key for point in points for key in point))
    # (Rows of the config's cells: another input differing under one grid point would be
    # a config's own mistake, but is kept apart all the same, as the report does.)
    axes = point_columns(runs, axes)
    if not axes:
        runs = runs.assign(_all="all")
        axes = ["_all"]
    for axis in axes:
        runs[axis] = runs[axis].astype(str) if runs[axis].dtype == object else runs[axis]
    ok = runs["status"] == "ok"
    present = [m for m in metrics if m in runs.columns]
    # Metrics over the ok rows only; every grid point gets a row, also when all its seeds failed.
    counts = runs.assign(_ok=ok, _failed=~ok).groupby(axes, sort=False, dropna=False)[["_ok", "_failed"]].sum()
    grouped = runs[ok].groupby(axes, sort=False, dropna=False)[present].mean().reindex(counts.index)
    grouped.insert(0, "seeds", counts["_ok"].astype(int))
    grouped.insert(1, "failed", counts["_failed"].astype(int))
    order = {tuple(str(point.get(a, "all")) for a in axes): i for i, point in reversed(list(enumerate(points)))}
    frame = grouped.reset_index()
    key = frame[axes].astype(str).apply(tuple, axis=1).map(order)
    return frame.assign(_order=key).sort_values("_order").drop(columns="_order").reset_index(drop=True)


def format_summary(frame) -> str:
    """The frame as an aligned text table, followed by the few-seeds warning
    (:func:`few_seeds_warning`) when a grid point has fewer than
    three ok seeds (grid points where every seed failed are counted in ``failed`` instead)."""
    if frame.empty:
        return "(no results)"
    # Grid values (the columns before ``seeds``) as the config gave them: a number axis that
    # only some grids set is a float column with gaps, and printed as metrics it read
    # ``2.000`` and ``NaN`` (``platform.tiers`` beside a gang grid); here ``2`` and ``-``.
    axes = list(frame.columns[: list(frame.columns).index("seeds")]) if "seeds" in frame.columns else []
    shown = frame.assign(**{axis: _grid_column(frame[axis]) for axis in axes})
    text = shown.to_string(index=False, float_format=lambda v: f"{v:,.3f}")
    if "seeds" in frame.columns:
        warning = few_seeds_warning(frame["seeds"].fillna(0).astype(int).tolist())
        if warning:
            text += "\n" + warning
    return text


def _grid_column(column) -> list[str]:
    """A grid column as text: missing values as ``-``; a number column whose values are all
    whole (integers stored as floats because of the gaps) without decimals; others as given
    (a load axis keeps ``1.0`` beside ``0.6``)."""
    present = [v for v in column if not _missing(v)]
    whole = bool(present) and all(isinstance(v, float) and v.is_integer() for v in present)
    return ["-" if _missing(v) else str(int(v)) if whole else str(v) for v in column]


def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and value != value)
