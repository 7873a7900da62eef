"""Small sweep configs, SWF files and store readers shared by the ``test_sweep_*`` files.

The standard small sweep is 2 policies x 2 loads x 2 seeds = 8 cells of 300 jann97 jobs on 64
two-tier nodes; each cell takes a few tens of milliseconds.
"""

from __future__ import annotations

import copy
import signal
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from tiersweep.sweep.config import SweepConfig, parse_sweep_config
from tiersweep.sweep.store import read_table

#: The base spec of the small sweeps.
BASE: dict[str, Any] = {"workload": {"model": "jann97", "jobs": 300}, "platform": {"nodes": 64, "tiers": 2}}
#: Its grid, in config order.
GRID: dict[str, list[Any]] = {"policy.name": ["easy", "amcbf"], "workload.load": [0.6, 0.9]}
#: Columns that legitimately differ between two computations of the same cell.
VOLATILE = ["wall_seconds", "written_at", "write_seq", "host"]


def small_raw(name: str = "small", **changes: Any) -> dict[str, Any]:
    """The raw mapping of the small sweep (8 cells), with top-level keys replaced by ``changes``."""
    raw: dict[str, Any] = {"name": name, "base": copy.deepcopy(BASE), "grid": copy.deepcopy(GRID), "seeds": 2}
    raw.update(changes)
    return raw


def small_config(name: str = "small", **changes: Any) -> SweepConfig:
    """The small sweep, parsed."""
    return parse_sweep_config(small_raw(name, **changes))


def write_yaml(path: Path, data: Any) -> Path:
    """Write ``data`` as YAML to ``path``; return the path."""
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def swf_lines(jobs: int = 30, nodes: int = 64) -> list[str]:
    """A small, valid SWF log: a MaxProcs header and ``jobs`` job lines of 18 fields."""
    lines = [f"; MaxProcs: {nodes}"]
    for i in range(jobs):
        size = 1 + (7 * i) % 16
        runtime = 60 + 37 * i
        fields = [i + 1, 120 * i, -1, runtime, size, -1, -1, size, runtime + 100, -1, 1, 1, 1, -1, 1, -1, -1, -1]
        lines.append(" ".join(str(v) for v in fields))
    return lines


def write_swf(path: Path, jobs: int = 30, nodes: int = 64) -> Path:
    """Write :func:`swf_lines` to ``path``; return the path."""
    path.write_text("\n".join(swf_lines(jobs, nodes)) + "\n", encoding="ascii")
    return path


def write_malformed_swf(path: Path, jobs: int = 30, nodes: int = 64) -> Path:
    """An SWF log with one job line of 4 fields: a valid spec whose run raises TraceFormatError."""
    lines = swf_lines(jobs, nodes)
    lines.insert(3, "4 360 -1 x")
    path.write_text("\n".join(lines) + "\n", encoding="ascii")
    return path


def runs_frame(root: Path) -> pd.DataFrame:
    """The newest row of each cell of ``root/runs``, sorted by cell index, volatile columns
    dropped, index reset."""
    frame = read_table(root / "runs").to_pandas()
    return frame.drop(columns=VOLATILE).sort_values("cell_index").reset_index(drop=True)


def tiny_tune_raw(name: str = "tiny", *, jobs: int = 60, **changes: Any) -> dict[str, Any]:
    """A tuning config of AMCBF on ``jobs`` jann97 jobs, one seed, one trial, one parameter
    (``policy.bg_threshold``), with top-level keys replaced by ``changes``."""
    raw: dict[str, Any] = {
        "name": name,
        "base": {
            "workload": {"model": "jann97", "jobs": jobs},
            "platform": {"nodes": 64, "tiers": 2},
            "policy": {"name": "amcbf"},
        },
        "params": {"policy.bg_threshold": {"low": 0.5, "high": 1.0}},
        "objective": {"mean_bsld": "minimize"},
        "seeds": 1,
        "trials": 1,
        "sampler": {"name": "random", "seed": 0},
    }
    raw.update(changes)
    return raw


def default_sigint() -> None:
    """Undo an inherited SIG_IGN, as a child process's ``preexec_fn``: a shell's background job
    ignores SIGINT, and so would a run started from it, never turning Ctrl-C into
    KeyboardInterrupt (a user's terminal gives the default)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
