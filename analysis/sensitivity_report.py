"""The report's sensitivity section for a sampled design: per metric, the indices with their
intervals (a table and a bar chart, the seed's share beside the parameters') and the
convergence curve (each parameter's ranking index at n/4, n/2 and n, with intervals)."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from .plots import _pyplot, _save
from .sensitivity import DEFAULT_METRICS, MetricSensitivity, analyse

__all__ = ["sampled_keys", "sensitivity_section", "indices_figure", "convergence_figure"]


def sampled_keys(config: Mapping[str, Any]) -> list[str]:
    """The spec keys a config's ``sample:`` section varies (empty without one)."""
    from ..core.spec import canonical_key

    sample = config.get("sample") if isinstance(config, Mapping) else None
    params = sample.get("params") if isinstance(sample, Mapping) else None
    return [canonical_key(str(k)) for k in params] if isinstance(params, Mapping) else []


def _slug(metric: MetricSensitivity) -> str:
    where = "_".join(f"{k}-{v}" for k, v in metric.group.items())
    text = f"{metric.metric}_{where}" if where else metric.metric
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)[:120]


def indices_figure(metric: MetricSensitivity, path: Path) -> Path:
    """Bars of each parameter's indices (and the seed's shares) with their intervals."""
    plt = _pyplot()
    names = ["S1", "ST"] if metric.method != "morris" else ["mu_star", "sigma"]
    table = metric.table
    rows = [r for r in table.index if r != "seed" or metric.method != "morris"]
    fig, ax = plt.subplots(figsize=(max(5.0, 1.2 * len(rows) + 2), 3.6))
    width = 0.8 / len(names)
    for k, name in enumerate(names):
        if name not in table.columns:
            continue
        values = table.loc[rows, name].astype(float)
        low = table.loc[rows, f"{name}_low"].astype(float) if f"{name}_low" in table.columns else values
        high = table.loc[rows, f"{name}_high"].astype(float) if f"{name}_high" in table.columns else values
        x = [i + (k - (len(names) - 1) / 2) * width for i in range(len(rows))]
        errors = [(values - low).clip(lower=0).fillna(0), (high - values).clip(lower=0).fillna(0)]
        ax.bar(x, values.fillna(0), width, yerr=errors, capsize=3, label=name)
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels([r.split(".")[-1] for r in rows], rotation=20)
    ax.axhline(0, color="black", linewidth=0.6)
    ax.set_ylabel("share of variance" if metric.method != "morris" else f"{metric.metric} per full range")
    size = f"{metric.units} units, {metric.seeds} seeds"
    ax.set_title(f"{metric.metric}: {metric.method} indices, 95% intervals ({size})", fontsize="medium")
    ax.legend()
    return _save(fig, path)


def convergence_figure(metric: MetricSensitivity, path: Path) -> Path:
    """Each parameter's ranking index against the units used, with its interval."""
    plt = _pyplot()
    frame = metric.convergence[metric.convergence["index"] == metric.score]
    fig, ax = plt.subplots(figsize=(6.0, 3.6))
    for parameter, rows in frame.groupby("parameter", sort=False):
        rows = rows.sort_values("units")
        ax.plot(rows["units"], rows["estimate"], marker="o", label=parameter.split(".")[-1])
        ax.fill_between(rows["units"], rows["low"], rows["high"], alpha=0.15)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("design units used")
    ax.set_ylabel(metric.score)
    verdict = "converged" if metric.converged else "n too small"
    ax.set_title(f"{metric.metric}: {metric.score} at n/4, n/2, n ({verdict})")
    ax.legend(fontsize="small")
    return _save(fig, path)


def _table_html(metric: MetricSensitivity) -> str:
    table = metric.table
    names = [c for c in table.columns if not c.endswith(("_low", "_high"))]
    head = "".join(f"<th>{html.escape(n)}</th>" for n in names)
    body = []
    for index, row in table.iterrows():
        cells = []
        for n in names:
            value, low, high = row[n], row.get(f"{n}_low"), row.get(f"{n}_high")
            text = "" if pd.isna(value) else f"{value:.3g}" + ("" if pd.isna(low) else f" [{low:.3g}, {high:.3g}]")
            cells.append(f"<td>{html.escape(text)}</td>")
        body.append(f"<tr><th>{html.escape(str(index))}</th>{''.join(cells)}</tr>")
    return f"<table><tr><th>parameter</th>{head}</tr>{''.join(body)}</table>"


def sensitivity_section(root: Path, metrics: Sequence[str], folder: Path, base: Path) -> str:
    """The HTML of the section (figures written to ``folder``, linked relative to ``base``)
    for those of ``metrics`` (the report's, that vary) that are among the sensitivity's
    default metrics (all of them when none is); a note instead when the design cannot be
    analysed yet."""
    from ..core.errors import TiersweepError

    esc = html.escape
    parts = ["<h2 id='sensitivity'>Sensitivity (indices with 95% bootstrap intervals)</h2>"]
    chosen = [m for m in metrics if m in DEFAULT_METRICS] or list(metrics)
    try:
        result = analyse(root, chosen, resamples=500)
    except TiersweepError as error:
        return "\n".join([*parts, f"<p class='note'>{esc(str(error))}</p>"])
    d = result.design
    parts.append(f"<p>{esc(d.method)} design, n={d.n} ({d.size} points), parameters {esc(', '.join(d.keys))}.</p>")
    for metric in result.metrics:
        where = ", ".join(f"{k}={v}" for k, v in metric.group.items())
        parts.append(f"<h3>{esc(metric.metric + (' at ' + where if where else ''))}</h3>")
        parts.append(_table_html(metric))
        for draw, kind in ((indices_figure, "indices"), (convergence_figure, "convergence")):
            path = draw(metric, folder / f"sensitivity_{kind}_{_slug(metric)}.png")
            caption = f"{metric.metric}: {kind}"
            src = esc(path.relative_to(base).as_posix())
            figure = f"<img src='{src}' alt='{esc(caption)}'><figcaption>{esc(caption)}</figcaption>"
            parts.append(f"<figure>{figure}</figure>")
        for text in metric.warnings:
            parts.append(f"<div class='warning'>{esc(text)}</div>")
    return "\n".join(parts)
