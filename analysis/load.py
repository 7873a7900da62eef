"""Loading a sweep's (or study's) results as pandas DataFrames.

Each part file is read on its own and the parts are concatenated, so files written by older
versions of tiersweep (fewer or other columns) still load: a column missing from a file is
filled with missing values, and a spec key that has moved since (``policy.migration_cost``, now
``platform.migration_cost``; :data:`tiersweep.core.spec.KEY_ALIASES`) is read under its new name.
``runs`` keeps the newest row of each cell (``--force`` reruns); ``jobs`` and ``segments`` keep
the rows of those runs.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ..core.spec import KEY_ALIASES
from ..sweep.store import unreadable_part

__all__ = ["load", "TABLES"]

#: The tables of a results folder.
TABLES = ("runs", "jobs", "segments", "trials")


def _read_folder(folder: Path) -> pd.DataFrame:
    files = sorted(folder.glob("*.parquet"))
    files = [f for f in files if not f.name.startswith(".")]
    if not files:
        return pd.DataFrame()
    try:
        frames = [pq.read_table(f).to_pandas() for f in files]
    except (pa.ArrowException, OSError) as error:
        raise unreadable_part([str(f) for f in files], error) from None
    frames = [f for f in frames if len(f)]
    if not frames:
        return pd.DataFrame(columns=pq.read_schema(files[0]).names)
    return _renamed_keys(pd.concat(frames, ignore_index=True, sort=False))


def _renamed_keys(frame: pd.DataFrame) -> pd.DataFrame:
    """Columns of moved spec keys under their new names (old files fill the new column)."""
    for old, new in KEY_ALIASES.items():
        if old not in frame.columns:
            continue
        if new in frame.columns:
            frame[new] = frame[new].fillna(frame[old])
            frame = frame.drop(columns=old)
        else:
            frame = frame.rename(columns={old: new})
    return frame


def load(path: str | Path, table: str = "runs") -> pd.DataFrame:
    """Read ``table`` of the results folder ``path`` (``OUT/NAME``).

    Args:
        path: A sweep's results folder (or its ``runs`` folder).
        table: ``runs`` (one row per cell), ``jobs`` (per-job records), ``segments`` (stays
            of jobs on VMs) or ``trials`` (a tuning study's trials).

    Returns:
        A DataFrame; empty when the table does not exist.
    """
    if table not in TABLES:
        raise ValueError(f"table: expected one of {', '.join(TABLES)}, got {table!r}")
    root = Path(path)
    if root.name in TABLES and not (root / table).exists():
        root = root.parent
    frame = _read_folder(root / table)
    if frame.empty or table == "trials":
        return frame
    if "written_at" not in frame.columns:
        return frame
    if table == "runs":
        frame = frame.sort_values("written_at", kind="stable").drop_duplicates("cell_id", keep="last")
        sort = "cell_index" if "cell_index" in frame.columns else "cell_id"
        return frame.sort_values(sort, kind="stable").reset_index(drop=True)
    runs = load(root, "runs")
    if runs.empty or "written_at" not in runs.columns:
        return frame.reset_index(drop=True)
    keep = frame.merge(runs[["cell_id", "written_at"]], on=["cell_id", "written_at"], how="inner")
    return keep.reset_index(drop=True)
