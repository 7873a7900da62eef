"""Figures (matplotlib, PNG), drawn to read in black and white: one marker and line style per
series, grey levels, error bars from t intervals over seeds.

* :func:`metric_grid` - each metric against one axis (load, migration cost, ...), one line per
  policy: paper 000 figures 3-4 (:data:`PAPER000_METRICS` against ``workload.load``), the
  sensitivity curves, paper 004's waiting time (what its "response time" rpt measures),
  bounded slowdown and migrations against load and accept rate against mean bandwidth, paper
  001's utilisation against occupancy. A panel whose values span more than a decade gets a
  log axis (:func:`log_axes`), so that one policy far above the others does not flatten them.
* :func:`gantt` - one run's schedule from its ``segments``: nodes x time, foreground dark,
  background light, suspensions marked; the whole run or a time window.
* :func:`utilisation_over_time` - the share of each tier's VMs held over time, from the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..core.metric_catalogue import METRIC_LABELS
from ..core.safe_files import save_figure
from .stats import POLICY, summary

__all__ = [
    "metric_grid",
    "log_axes",
    "spans_decades",
    "gantt",
    "utilisation_over_time",
    "utilisation_vs_occupancy",
    "PAPER000_METRICS",
    "LABELS",
]

#: Paper 000 figures 3-4: response time, bounded slowdown, migrations per job, utilisation.
PAPER000_METRICS = ("mean_response", "mean_bsld", "migrations_per_job", "utilization")
#: Axis labels of common columns: the metric catalogue's, and those of common grid axes.
LABELS = {
    **METRIC_LABELS,
    "workload.load": "offered load",
    "platform.migration_cost": "migration cost (s)",
    "workload.cpu_accuracy": "CPU-estimate accuracy",
}
#: How a Gantt chart marks a stay that ended other than by finishing or moving.
_END_MARKERS = {"suspend": "x", "kill": "v"}
_END_LABELS = {"suspend": "suspended", "kill": "killed (progress lost)"}
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">")
_STYLES = ("-", "--", "-.", ":")


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: str | Path, *, tight: bool = True) -> Path:
    """Write ``fig`` as a PNG and close it."""
    plt = _pyplot()
    if tight:
        fig.tight_layout()
    path = save_figure(fig, path, dpi=110)
    plt.close(fig)
    return path


def _numeric(series: pd.Series) -> pd.Series:
    converted = pd.to_numeric(series, errors="coerce")
    return converted if converted.notna().all() else series


def spans_decades(values: Sequence[float] | np.ndarray) -> bool:
    """Whether ``values`` (nan ignored) are all positive and the largest is more than ten times
    the smallest: on a linear axis the small ones would be flattened against zero. A zero or a
    negative value cannot be shown on a log axis, so such values never span decades."""
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    return len(values) > 1 and bool((values > 0).all()) and values.max() > 10 * values.min()


def log_axes(runs: pd.DataFrame, x: str, metrics: Sequence[str], *, by: str = POLICY) -> list[str]:
    """The metrics of ``metrics`` whose means over seeds (per value of ``by`` and ``x``) span
    more than a decade (:func:`spans_decades`): the panels :func:`metric_grid` draws on a log
    axis by default."""
    table = summary(runs, by=[by, x], metrics=metrics)
    return [m for m in metrics if f"{m}_mean" in table and spans_decades(table[f"{m}_mean"])]


def _ordered(names: Sequence[Any], order: Sequence[Any] | None) -> list[Any]:
    """``names`` in the order of ``order`` (compared as text), the others after, sorted."""
    if not order:
        return list(names)
    rank = {str(value): i for i, value in enumerate(order)}
    return sorted(names, key=lambda name: (rank.get(str(name), len(rank)), str(name)))


def metric_grid(
    runs: pd.DataFrame,
    x: str,
    metrics: Sequence[str],
    path: str | Path,
    *,
    by: str = POLICY,
    title: str = "",
    log_y: Sequence[str] | str = "auto",
    order: Sequence[Any] | None = None,
) -> Path:
    """Each metric against ``x``, one line per value of ``by``, mean and 95 % interval over
    seeds; one panel per metric. Returns the PNG path.

    Args:
        log_y: The metrics drawn on a log axis, or ``"auto"`` for those whose values span more
            than a decade (:func:`log_axes`).
        order: The values of ``by`` in legend order (a sweep config's list order); values not
            in it come after, sorted.
    """
    plt = _pyplot()
    frame = runs.copy()
    frame[x] = _numeric(frame[x])
    table = summary(frame, by=[by, x], metrics=metrics)
    if isinstance(log_y, str):
        if log_y != "auto":
            raise ValueError(f"log_y: expected 'auto' or a list of metrics, got {log_y!r}")
        log_y = [m for m in metrics if spans_decades(table[f"{m}_mean"])]
    columns = 2 if len(metrics) > 1 else 1
    rows = int(np.ceil(len(metrics) / columns))
    fig, axes = plt.subplots(rows, columns, figsize=(5.2 * columns, 3.6 * rows), squeeze=False)
    grouped = dict(list(table.groupby(by, sort=True)))
    groups = [(name, grouped[name]) for name in _ordered(list(grouped), order)]
    for panel, metric in zip(axes.flat, metrics):
        log = metric in log_y
        for i, (name, group) in enumerate(groups):
            group = group.sort_values(x)
            mean = group[f"{metric}_mean"].to_numpy(float)
            low = group[f"{metric}_ci_low"].to_numpy(float)
            high = group[f"{metric}_ci_high"].to_numpy(float)
            if log:  # an interval reaching zero or below would hide the point on a log axis
                low = np.where(low > 0, low, mean)
            err = np.vstack([np.nan_to_num(mean - low), np.nan_to_num(high - mean)])
            grey = str(0.15 + 0.6 * i / max(1, len(groups) - 1))
            panel.errorbar(
                group[x],
                mean,
                yerr=err,
                label=str(name),
                color=grey,
                marker=_MARKERS[i % len(_MARKERS)],
                linestyle=_STYLES[i % len(_STYLES)],
                markerfacecolor="white" if i % 2 else grey,
                capsize=3,
                linewidth=1.4,
            )
        panel.set_xlabel(LABELS.get(x, x))
        panel.set_ylabel(LABELS.get(metric, metric) + (" (log scale)" if log else ""))
        if log:
            panel.set_yscale("log")
        panel.grid(True, which="major", color="0.85", linewidth=0.6)
    for panel in list(axes.flat)[len(metrics) :]:
        panel.axis("off")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=min(len(labels), 6), frameon=False, bbox_to_anchor=(0.5, 1.0))
    if title:
        fig.suptitle(title, y=1.04)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.22 / (3.6 * rows)))  # a legend's height above the panels
    path = save_figure(fig, path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path


#: Above this many bars a Gantt chart draws them without outlines and hatching: at that
#: density outlines turn the chart black and hatching takes minutes to render.
_DETAILED_BARS = 5_000


def _window_bounds(segments: pd.DataFrame, window: tuple[float | None, float | None] | None) -> tuple[float, float]:
    """The time range to draw: ``window`` (either end may be None: the run's), else the run's."""
    first = float(segments["start_time"].min()) if len(segments) else 0.0
    last = float(segments["end_time"].max()) if len(segments) else 1.0
    low, high = window if window is not None else (None, None)
    low = first if low is None else float(low)
    high = last if high is None else float(high)
    if not high > low:
        raise ValueError(f"window: the end ({high:g} s) must come after the start ({low:g} s)")
    return low, high


def _seconds_axis(ax: Any) -> None:
    """Thousands separators on a time axis in seconds (runs last 10^5-10^7 s)."""
    from matplotlib.ticker import FuncFormatter

    ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:,.0f}"))


def gantt(
    segments: pd.DataFrame,
    path: str | Path,
    *,
    title: str = "",
    window: tuple[float | None, float | None] | None = None,
    max_jobs: int | None = None,
) -> Path:
    """One run's schedule: a bar per (node, stay) from its ``segments``; foreground dark,
    background tiers lighter (and hatched while there are few bars), a cross where a job was
    suspended.

    Args:
        segments: The segments of one cell (columns job_id, tier, start_time, end_time,
            nodes, end).
        window: ``(start, end)`` in seconds of simulated time: draw that part of the run only
            (stays are cut at its edges; either end may be None for the run's own). Default:
            the whole run.
        max_jobs: Draw the stays of the first jobs only (by start time); default all.
    """
    plt = _pyplot()
    from matplotlib.collections import PolyCollection
    from matplotlib.patches import Patch

    frame = segments.sort_values("start_time", kind="stable")
    if max_jobs is not None:
        keep = frame["job_id"].drop_duplicates().head(max_jobs)
        frame = frame[frame["job_id"].isin(keep)]
    low, high = _window_bounds(frame, window)
    frame = frame[(frame["end_time"] >= low) & (frame["start_time"] <= high)]
    fig, ax = plt.subplots(figsize=(11, 5))
    shades = {0: ("0.25", None), 1: ("0.65", "//"), 2: ("0.85", "xx")}
    tiers = int(frame["tier"].max()) + 1 if len(frame) else 1
    band = 1.0 / tiers  # each node's row holds one band per tier, foreground at the bottom
    # One row per (stay, node), drawn as one collection per tier: a whole run has hundreds of
    # thousands of bars, far too many for a patch each.
    bars = frame[["tier", "start_time", "end_time", "nodes", "end"]].explode("nodes").dropna(subset=["nodes"])
    detailed = len(bars) <= _DETAILED_BARS
    nodes_used = 0
    ends_seen: set[str] = set()
    for tier, group in bars.groupby("tier"):
        color, hatch = shades.get(int(tier), ("0.9", ".."))
        start = group["start_time"].to_numpy(float).clip(low, high)
        stop = group["end_time"].to_numpy(float).clip(low, high)
        bottom = group["nodes"].to_numpy(float) + int(tier) * band
        top = bottom + band * 0.92
        verts = np.stack(
            [np.column_stack(pair) for pair in ((start, bottom), (start, top), (stop, top), (stop, bottom))], axis=1
        )
        ax.add_collection(
            PolyCollection(
                verts,
                facecolors=color,
                edgecolors="black",
                linewidths=0.2 if detailed else 0.0,
                hatch=hatch if detailed else None,
            )
        )
        nodes_used = max(nodes_used, int(group["nodes"].max()) + 1)
        shown = group["end_time"].to_numpy(float) <= high
        for end, marker in _END_MARKERS.items():
            marked = (group["end"] == end).to_numpy() & shown
            if marked.any():
                ax.scatter(
                    group["end_time"].to_numpy(float)[marked],
                    bottom[marked] + band / 2,
                    marker=marker,
                    color="black",
                    s=12,
                    zorder=3,
                    linewidths=0.8,
                )
        ends_seen.update(e for e in _END_MARKERS if (group["end"] == e).any())
    ax.set_xlim(low, high)
    ax.set_ylim(0, max(1, nodes_used))
    _seconds_axis(ax)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("node")
    ax.legend(
        handles=[
            Patch(facecolor="0.25", label="foreground"),
            Patch(facecolor="0.65", hatch="//" if detailed else None, label="background"),
            *(
                plt.Line2D([], [], marker=marker, color="black", linestyle="", label=_END_LABELS[end])
                for end, marker in _END_MARKERS.items()
                if end == "suspend" or end in ends_seen
            ),
        ],
        # Above the chart, right of the title: inside, it would hide bars of the top nodes.
        loc="lower right",
        bbox_to_anchor=(1.0, 1.0),
        ncol=3,
        fontsize=8,
        frameon=False,
    )
    if title:
        ax.set_title(title, loc="left")
    return _save(fig, path)


def utilisation_over_time(
    segments: pd.DataFrame,
    nodes: int,
    path: str | Path,
    *,
    title: str = "",
    window: tuple[float | None, float | None] | None = None,
) -> Path:
    """The share of each tier's VMs held over time, from one run's ``segments``; the whole
    run, or ``window`` ``(start, end)`` in seconds as in :func:`gantt`."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(11, 3.4))
    for tier, group in sorted(segments.groupby("tier")):
        sizes = group["nodes"].map(len).to_numpy(float)
        times = np.concatenate([group["start_time"].to_numpy(float), group["end_time"].to_numpy(float)])
        deltas = np.concatenate([sizes, -sizes])
        order = np.argsort(times, kind="stable")
        held = np.cumsum(deltas[order]) / nodes
        ax.step(
            times[order],
            held,
            where="post",
            color="0.2" if tier == 0 else "0.6",
            linestyle=_STYLES[int(tier) % 4],
            label=f"tier {tier}",
        )
    ax.set_xlim(*_window_bounds(segments, window))
    _seconds_axis(ax)
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("share of VMs held")
    ax.legend(loc="lower right", fontsize=8)
    if title:
        ax.set_title(title, loc="left")
    return _save(fig, path)


def utilisation_vs_occupancy(
    runs: pd.DataFrame, path: str | Path, *, by: str = "policy.selector", title: str = ""
) -> Path:
    """Paper 001 figures 7-9: mean utilisation at each occupancy level (share of machines
    occupied, in tenths), one line per value of ``by``, from the shared-VM platform's
    ``util_at_occ_<p>`` metrics (levels never visited are left out); the grey bars give the
    share of time spent at each level, averaged over the lines."""
    plt = _pyplot()
    levels = sorted(int(c.rsplit("_", 1)[1]) for c in runs.columns if c.startswith("util_at_occ_"))
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    time_share = runs[[f"time_at_occ_{p}" for p in levels]].mean().to_numpy(float) if levels else []
    twin = ax.twinx()
    twin.bar([p / 100 for p in levels], time_share, width=0.06, color="0.88", edgecolor="0.6", zorder=0)
    twin.set_ylabel("share of time at this occupancy")
    ax.set_zorder(twin.get_zorder() + 1)
    ax.patch.set_visible(False)
    for i, (name, group) in enumerate(sorted(runs.groupby(by))):
        means = group[[f"util_at_occ_{p}" for p in levels]].mean()
        x = [p / 100 for p, v in zip(levels, means) if pd.notna(v)]
        y = [v for v in means if pd.notna(v)]
        grey = str(0.1 + 0.6 * i / max(1, runs[by].nunique() - 1))
        ax.plot(
            x,
            y,
            marker=_MARKERS[i % len(_MARKERS)],
            linestyle=_STYLES[i % len(_STYLES)],
            color=grey,
            label=str(name),
            markerfacecolor="white" if i % 2 else grey,
        )
    ax.plot([0, 1], [0, 1], color="0.7", linewidth=0.8, linestyle=":", label="utilisation = occupancy")
    ax.set_xlim(0, 1.05)
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("occupancy (share of machines running a task)")
    ax.set_ylabel("utilisation")
    ax.legend(loc="upper left", fontsize=8)
    if title:
        ax.set_title(title)
    return _save(fig, path)
