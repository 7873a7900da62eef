"""``tiersweep report``: every figure the data of a results folder supports, and an HTML page.

The page (``index.html``) holds the summary table (mean and 95 % interval over seeds per grid
point), the failed cells, the config, the versions and provenance of the rows, and the
figures: each metric against every numeric grid axis (one line per policy; one figure per
combination of the other axes), Gantt charts and VM occupancy over time of one run per policy
when the sweep stored segments (``--jobs``), and a tuning study's plots.
"""

from __future__ import annotations

import hashlib
import html
import json
import re
from pathlib import Path
from typing import Any

import pandas as pd

from ..core.spec import canonical_key
from ..sweep.store import read_manifest
from .load import load
from .plots import LABELS, gantt, metric_grid, utilisation_over_time, utilisation_vs_occupancy
from .stats import POLICY, summary

__all__ = ["write_report", "REPORT_METRICS"]

#: Metrics drawn when the data has them and they vary.
REPORT_METRICS = (
    "mean_response",
    "mean_bsld",
    "migrations_per_job",
    "utilization",
    "accept_rate",
    "median_xf",
    "p90_xf",
    "efficiency",
)
_MAX_FACETS = 12


def _slug(text: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_") or "all"
    if len(slug) > 60:  # keep names short and still distinct
        slug = f"{slug[:50]}_{hashlib.sha1(text.encode()).hexdigest()[:8]}"
    return slug


def _label(combo: dict[str, str]) -> str:
    """``key=value`` pairs for a title: a trace shows its file name only."""
    return ", ".join(f"{k.split('.')[-1]}={Path(v).name if k.endswith('trace') else v}" for k, v in combo.items())


def _axes(root: Path, runs: pd.DataFrame) -> list[str]:
    keys: list[str] = []
    config = read_manifest(root).get("config")
    if config:
        keys += list((config.get("grid") or {}).keys())
        for grid in config.get("grids") or []:
            keys += list(grid.keys())
        for group in config.get("zip") or []:
            keys += list(group.keys())
        # (A tuning study's params are not axes: its own plots show them.)
    keys = [canonical_key(k) for k in keys]  # configs may name a moved key by its old name
    return [k for k in dict.fromkeys(keys) if k in runs.columns]


def _varying(runs: pd.DataFrame, column: str) -> bool:
    return column in runs.columns and runs[column].map(str).nunique(dropna=False) > 1


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


def write_report(root: str | Path, out: str | Path | None = None) -> Path:
    """Write the figures and ``index.html`` of the results folder ``root``; return the page."""
    root = Path(root)
    out = Path(out) if out is not None else root / "report"
    figures_dir = out / "figures"
    figures_dir.mkdir(parents=True, exist_ok=True)
    runs = load(root)
    if runs.empty:
        raise FileNotFoundError(f"{root}: no runs stored (expected {root}/runs/*.parquet)")
    ok = runs[runs["status"] == "ok"]
    axes = _axes(root, runs)
    by = POLICY if POLICY in runs.columns else None
    metrics = [m for m in REPORT_METRICS if m in ok.columns and ok[m].notna().any()]
    figures: list[tuple[str, Path]] = []
    for x in [a for a in axes if a != by and _varying(ok, a) and _numeric(ok, a)]:
        others = [a for a in axes if a not in (x, by) and _varying(ok, a)]
        for label, subset in _facets(ok, others):
            name = f"{_slug(x)}__{_slug(label)}.png"
            shown = [m for m in metrics if subset[m].notna().any()]
            if not shown or subset.empty:
                continue
            metric_grid(subset, x, shown, figures_dir / name, by=by or x, title=label, log_y=["mean_bsld"])
            figures.append((f"{', '.join(LABELS.get(m, m) for m in shown)} against {LABELS.get(x, x)}" + (f" ({label})" if label else ""), figures_dir / name))
    if any(c.startswith("util_at_occ_") for c in ok.columns) and "policy.selector" in ok.columns:
        others = [a for a in axes if a != "policy.selector" and _varying(ok, a)]
        for label, subset in _facets(ok, others):
            name = f"occupancy__{_slug(label)}.png"
            utilisation_vs_occupancy(subset, figures_dir / name, title=label)
            figures.append((f"utilisation against occupancy (paper 001 figures 7-9)" + (f" ({label})" if label else ""), figures_dir / name))
    segments = load(root, "segments")
    if not segments.empty:
        chosen = ok.drop_duplicates(by).head(4) if by else ok.head(1)
        for row in chosen.itertuples(index=False):
            cell = getattr(row, "cell_id")
            cell_segments = segments[segments["cell_id"] == cell]
            if cell_segments.empty:
                continue
            policy = runs.loc[runs["cell_id"] == cell, by].iloc[0] if by else cell
            nodes = _machine_size(runs.loc[runs["cell_id"] == cell].iloc[0], cell_segments)
            gantt(cell_segments, figures_dir / f"gantt_{_slug(str(policy))}.png", title=f"{policy}: cell {cell}")
            figures.append((f"Gantt chart of {policy} (cell {cell}, first jobs)", figures_dir / f"gantt_{_slug(str(policy))}.png"))
            utilisation_over_time(cell_segments, nodes, figures_dir / f"occupancy_{_slug(str(policy))}.png", title=f"{policy}: VMs held over time")
            figures.append((f"VMs held over time, {policy}", figures_dir / f"occupancy_{_slug(str(policy))}.png"))
    figures += _tuning_figures(root, figures_dir)
    table = summary(runs, by=[a for a in axes if a in runs.columns] or ([by] if by else ["sweep"]), metrics=metrics)
    page = out / "index.html"
    page.write_text(_html(root, runs, table, figures, page.parent), encoding="utf-8")
    return page


def _machine_size(row: Any, segments: Any) -> int:
    """The cell's node count: ``platform.nodes`` when the spec gave it, else (a trace's
    ``MaxProcs`` resolved at run time, stored as missing) one past the highest node used."""
    given = row.get("platform.nodes") if hasattr(row, "get") else None
    if given is not None and given == given:  # not missing, not nan
        return int(given)
    return int(max(max(nodes) for nodes in segments["nodes"]) + 1)


def _tuning_figures(root: Path, folder: Path) -> list[tuple[str, Path]]:
    study_db = root / "study.db"
    trials = load(root, "trials")
    if not study_db.exists() or trials.empty:
        return []
    import optuna

    from .tune_plots import write_tuning_plots

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    names = optuna.get_all_study_names(f"sqlite:///{study_db.resolve()}")
    out = []
    for name in names:
        study = optuna.load_study(study_name=name, storage=f"sqlite:///{study_db.resolve()}")
        metrics = [c for c in trials.columns if f"spread.{c}" in trials.columns]
        for kind, path in write_tuning_plots(study, metrics, folder / f"tuning_{_slug(name)}").items():
            out.append((f"study {name}: {kind.replace('_', ' ')}", path))
    return out


def _html(root: Path, runs: pd.DataFrame, table: pd.DataFrame, figures: list[tuple[str, Path]], base: Path) -> str:
    config = read_manifest(root).get("config", {})
    failed = runs[runs["status"] != "ok"]
    versions = {col: sorted(runs[col].dropna().map(str).unique()) for col in ("model_version", "package_version") if col in runs}
    written = pd.to_datetime(runs["written_at"]) if "written_at" in runs else pd.Series(dtype="datetime64[ns]")
    hosts = sorted(runs["host"].dropna().map(str).unique()) if "host" in runs else []
    esc = html.escape
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>tiersweep report: {esc(root.name)}</title>",
        "<style>body{font-family:sans-serif;margin:2em;max-width:1200px} table{border-collapse:collapse;font-size:12px}"
        "td,th{border:1px solid #bbb;padding:3px 6px;text-align:right} th{background:#eee} img{max-width:100%;border:1px solid #ddd}"
        "figure{margin:1.5em 0} pre{background:#f6f6f6;padding:1em;overflow:auto}</style></head><body>",
        f"<h1>tiersweep report: {esc(root.name)}</h1>",
        f"<p>{len(runs)} cells ({len(runs) - len(failed)} ok, {len(failed)} failed) from <code>{esc(str(root))}</code>.</p>",
        "<h2>Summary (mean and 95% interval over seeds)</h2>",
        _summary_html(table),
    ]
    if len(failed):
        parts += ["<h2>Failed cells</h2>", failed[["cell_id", "error"]].to_html(index=False, escape=True)]
    parts.append("<h2>Figures</h2>")
    for caption, path in figures:
        parts.append(f"<figure><img src='{esc(str(path.relative_to(base)))}' alt='{esc(caption)}'><figcaption>{esc(caption)}</figcaption></figure>")
    parts += [
        "<h2>Provenance</h2><ul>",
        *(f"<li>{esc(k)}: {esc(', '.join(v))}</li>" for k, v in versions.items()),
        f"<li>hosts: {esc(', '.join(hosts))}</li>",
        f"<li>rows written: {esc(str(written.min()))} to {esc(str(written.max()))}</li>" if len(written) else "",
        "</ul>",
        "<h2>Config</h2>",
        f"<pre>{esc(json.dumps(config, indent=2, sort_keys=True, default=str))}</pre>",
        "</body></html>",
    ]
    return "\n".join(parts)


def _summary_html(table: pd.DataFrame) -> str:
    if table.empty:
        return "<p>(no successful cells)</p>"
    metrics = [c[: -len("_mean")] for c in table.columns if c.endswith("_mean")]
    keys = [c for c in table.columns if not any(c.startswith(f"{m}_") for m in metrics)]
    shown = table[keys].copy()
    for metric in metrics:
        shown[metric] = [
            f"{m:.4g} [{lo:.4g}, {hi:.4g}]" if pd.notna(lo) else (f"{m:.4g}" if pd.notna(m) else "")
            for m, lo, hi in zip(table[f"{metric}_mean"], table[f"{metric}_ci_low"], table[f"{metric}_ci_high"])
        ]
    shown["n"] = table[f"{metrics[0]}_n"] if metrics else 0
    return shown.to_html(index=False, escape=True)
