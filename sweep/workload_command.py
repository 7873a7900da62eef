"""``tiersweep workload generate`` and ``tiersweep workload describe``."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from ..core.errors import SpecError
from ..core.safe_files import save_figure
from ..core.spec import validate_spec
from ..core.workloads.build import MODEL_DEFAULT_NODES, build_workload, model_records
from ..core.workloads.describe import describe_jobs
from ..core.workloads.models import MODEL_NAMES
from ..core.workloads.rules import jobs_from_records
from ..core.workloads.swf import header_int, read_swf, write_swf
from .paths import output_file
from .specfile import apply_overrides, load_run_spec

__all__ = ["generate_command", "describe_command", "plot_suffixes"]

_LABELS = (
    ("jobs", "jobs", ""),
    ("nodes", "machine size", ""),
    ("serial_share", "serial jobs (size 1)", "share"),
    ("pow2_share", "powers of two among parallel", "share"),
    ("under20_share", "jobs below 20 processes", "share"),
    ("mean_size", "mean size", ""),
    ("median_size", "median size", ""),
    ("max_size", "largest size", ""),
    ("mean_runtime", "mean runtime", "s"),
    ("median_runtime", "median runtime", "s"),
    ("runtime_cv", "runtime CV", ""),
    ("mean_interarrival", "mean inter-arrival", "s"),
    ("median_interarrival", "median inter-arrival", "s"),
    ("span", "span of submits", "s"),
    ("offered_load", "offered load", ""),
)


def generate_command(
    model: str,
    out: str,
    *,
    jobs: int | None,
    load: float | None,
    seed: int,
    preset: str | None,
    nodes: int,
    max_size: int | None,
    overrides: list[str],
) -> int:
    """Generate a model workload and write it as SWF; print where and its summary."""
    workload: dict[str, Any] = {"model": model, "jobs": jobs, "load": load, "preset": preset, "max_size": max_size}
    # The machine size is the spec's platform.nodes, so that it has the same bounds as in a run.
    raw = {"seed": seed, "workload": workload, "platform": {"nodes": nodes}}
    spec = validate_spec(apply_overrides(raw, [f"workload.params.{o}" for o in overrides]))
    output_file(out, "--out")
    records, header, _ = model_records(spec["workload"], seed=seed, nodes=nodes)
    write_swf(out, records, header)
    built, _ = jobs_from_records(records, capacity=nodes)
    print(f"wrote {len(records):,} jobs of {model} ({spec['workload']['preset']}, seed {seed}) to {out}")
    print(_table(describe_jobs(built, nodes)))
    return 0


def describe_command(path: str, overrides: list[str], as_json: bool, plot: str | None) -> int:
    """Describe an SWF file, the workload of a run spec, or a model's workload (``path`` a
    model name such as ``feitelson96``, with the model's defaults unless ``overrides`` set
    spec keys such as ``workload.jobs`` or ``platform.nodes``)."""
    if plot is not None:
        output_file(plot, "--plot", plot_suffixes())
    is_model = path in MODEL_NAMES and not Path(path).exists()
    if path.endswith((".yaml", ".yml", ".json")) or is_model:
        raw = {"workload": {"model": path}} if is_model else load_run_spec(path)
        spec = validate_spec(apply_overrides(raw, overrides))
        built = build_workload(spec["workload"], seed=spec["seed"], nodes=spec["platform"].get("nodes"))
        jobs, nodes = built.jobs, built.nodes
    else:
        if not Path(path).exists():
            raise SpecError(
                f"{path}: no such file; give an SWF file (plain or gzip), a run spec (.yaml) "
                f"or a model ({', '.join(MODEL_NAMES)})"
            )
        if overrides:
            raise SpecError(
                f"--set {overrides[0]}: an SWF file is described as it is; to change its workload, "
                f"describe a run spec with workload.trace: {path}"
            )
        log = read_swf(path)
        nodes = header_int(log.header, "MaxProcs", "MaxNodes")
        if nodes is None or nodes < 1:
            # No usable machine size in the header: the widest job's, so that no job is
            # dropped as too large for a machine size the file never stated.
            widest = log.records[:, [4, 7]].max(initial=1)
            nodes = int(widest) if widest >= 1 else MODEL_DEFAULT_NODES
        jobs, _ = jobs_from_records(log.records, capacity=nodes)
    stats = describe_jobs(jobs, nodes)
    if as_json:
        print(json.dumps({k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in stats.items()}))
    else:
        print(f"{path}\n{_table(stats)}")
    if plot:
        _plot(jobs, nodes, plot, title=Path(path).name)
        if not as_json:
            print(f"plot written to {plot}")
    return 0


def plot_suffixes() -> tuple[str, ...]:
    """The file name endings of the formats matplotlib writes (``.png``, ``.pdf``, ``.svg``...):
    given another, or none, it would append ``.png`` to the name, or fail after the work."""
    from matplotlib.backend_bases import FigureCanvasBase

    return tuple(f".{kind}" for kind in FigureCanvasBase.get_supported_filetypes())


def _table(stats: dict[str, float]) -> str:
    width = max(len(label) for _, label, _ in _LABELS)
    lines = []
    for key, label, unit in _LABELS:
        if key not in stats:
            continue
        value = stats[key]
        if unit == "share":
            text = f"{value:.3f}"
        elif isinstance(value, int) or float(value).is_integer():
            text = f"{int(value):,}{' ' + unit if unit else ''}"
        else:
            text = f"{value:,.3f}{' ' + unit if unit else ''}"
        lines.append(f"  {label:<{width}}  {text:>16}")
    return "\n".join(lines)


def _plot(jobs: list, nodes: int, path: str, *, title: str) -> None:
    """Three panels: size histogram (log2 bins), runtime distribution, arrivals by hour."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    size = np.array([j.size for j in jobs])
    runtime = np.array([max(j.runtime, 1.0) for j in jobs])
    submit = np.array([j.submit_time for j in jobs])
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.4))
    bins = 2.0 ** np.arange(0, math.ceil(math.log2(max(size.max(), 2))) + 2) - 0.5
    axes[0].hist(size, bins=bins, color="0.35", edgecolor="black")
    axes[0].set_xscale("log", base=2)
    axes[0].set_xlabel("job size (processes)")
    axes[0].set_ylabel("jobs")
    axes[1].hist(np.log10(runtime), bins=40, color="0.6", edgecolor="black")
    axes[1].set_xlabel("log10 runtime (s)")
    hours = ((submit - submit.min()) / 3600.0) % 24
    axes[2].hist(hours, bins=24, range=(0, 24), color="0.8", edgecolor="black")
    axes[2].set_xlabel("hour of day (from the first submit)")
    fig.suptitle(f"{title}: {len(jobs):,} jobs on {nodes} nodes")
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
    plt.close(fig)
