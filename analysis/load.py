"""Loading a sweep's (or study's) results as pandas DataFrames.

Each part file is read on its own and the parts are concatenated, so files written by older
versions of tiersweep (fewer or other columns) still load: a column missing from a file is
filled with missing values, and a spec key that has moved since (the one table of old spellings,
:data:`tiersweep.core.spec.KEY_ALIASES`) is read under its new name.
``runs`` keeps the newest row of each cell (``--force`` reruns); ``jobs`` and ``segments`` keep
the rows of those runs.

A cell's id includes the digest of the simulator's source, so a folder swept again after the
code changed holds the rows of both codes (under different cell ids). :func:`load` warns when
the rows it returns come from more than one code (:class:`MixedCodeWarning`) and can keep the
rows of one (``code_digest=``). A folder with no stored runs is an error, not an empty table.

A folder can also hold runs of different inputs under one grid point: a trace regenerated at
the same path (each row records its trace's content in ``trace_digest``), two configs of one
``name:``, one config run with other ``--set`` values. The rows keep them apart in their
columns; :func:`~tiersweep.sweep.points.point_columns` names the columns that identify a point,
and :func:`~tiersweep.analysis.stats.summary` refuses a grouping that would average them.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

from ..core.spec import KEY_ALIASES
from ..sweep.store import claimed_by, read_parts, write_order

__all__ = ["load", "find_results", "TABLES", "MixedCodeWarning", "NoResultsError"]

#: The tables of a results folder.
TABLES = ("runs", "jobs", "segments", "trials", "check")


def _read_folder(folder: Path) -> pd.DataFrame:
    read = read_parts(folder, lambda files: [(f, pq.read_table(f).to_pandas()) for f in files], pattern="*.parquet")
    if read is None:
        return pd.DataFrame()
    frames = [frame for _, frame in read if len(frame)]
    if not frames:
        return pd.DataFrame(columns=pq.read_schema(read[0][0]).names)
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


class MixedCodeWarning(UserWarning):
    """The rows loaded were computed by more than one version of the simulator's source."""


class NoResultsError(FileNotFoundError):
    """A results folder (or the folder a notebook looked for) holds no stored runs."""


#: The environment variable naming a results folder for :func:`find_results`.
RESULTS_VARIABLE = "TIERSWEEP_RESULTS"


def find_results(name: str, start: str | Path | None = None) -> Path:
    """The results folder of sweep ``name``: ``$TIERSWEEP_RESULTS`` if set, else the first
    ``results/NAME`` with stored runs in ``start`` (default: the current directory) or any
    folder above it.

    A notebook's kernel starts in the notebook's folder (``analysis/notebooks``), two levels
    below the project root where ``tiersweep sweep`` wrote ``results/``: looking upwards finds
    it from either place.

    Raises:
        NoResultsError: Nothing found; the message lists every place looked at.
    """
    given = os.environ.get(RESULTS_VARIABLE)
    if given:
        folder = Path(given)
        if not _has_runs(folder):
            raise NoResultsError(f"{RESULTS_VARIABLE}={given}: no stored runs there (expected {folder}/runs/*.parquet)")
        return folder
    here = Path(start or Path.cwd()).resolve()
    looked = []
    for folder in (here, *here.parents):
        candidate = folder / "results" / name
        looked.append(str(candidate))
        if _has_runs(candidate):
            return candidate
    raise NoResultsError(
        f"no results of sweep {name!r}: looked in {', '.join(looked)}; run `tiersweep sweep CONFIG` "
        f"(from the project root it writes results/{name}) or set {RESULTS_VARIABLE} to the folder"
    )


def _has_runs(folder: Path) -> bool:
    runs = folder / "runs"
    return runs.is_dir() and any(not p.name.startswith(".") for p in runs.glob("*.parquet"))


def load(path: str | Path, table: str = "runs", *, code_digest: str | None = None) -> pd.DataFrame:
    """Read ``table`` of the results folder ``path`` (``OUT/NAME``).

    Args:
        path: A sweep's results folder (or its ``runs`` folder).
        table: ``runs`` (one row per cell), ``jobs`` (per-job records), ``segments`` (stays
            of jobs on VMs), ``trials`` (a tuning study's trials) or ``check`` (its held-out
            check: the best trial's and the defaults' value per fresh seed).
        code_digest: Keep only the runs (and their records) computed by this code: a digest
            from the ``code_digest`` column, or ``"latest"`` for the code of the newest row.
            By default every row is kept, with a :class:`MixedCodeWarning` when they come
            from more than one code.

    Returns:
        A DataFrame (``jobs``, ``segments``, ``trials`` and ``check`` are empty when the sweep
        did not store them).

    Raises:
        NoResultsError: The folder has no stored runs (a path mistyped, or a sweep not run
            yet): said at once rather than as an empty table and a ``KeyError`` later.
    """
    if table not in TABLES:
        raise ValueError(f"table: expected one of {', '.join(TABLES)}, got {table!r}")
    root = Path(path)
    if root.name in TABLES and not (root / table).exists():
        root = root.parent
    if not _has_runs(root):
        where = "does not exist" if not root.exists() else f"has no stored runs (no {root / 'runs'}/*.parquet)"
        raise NoResultsError(
            f"{root}: {where}; give a sweep's results folder (OUT/NAME, e.g. results/quickstart), "
            f"or run `tiersweep sweep CONFIG` first"
        )
    frame = _read_folder(root / table)
    if table in ("trials", "check"):
        return frame
    if table == "runs":
        return _latest_runs(frame, code_digest, root)
    if frame.empty or "written_at" not in frame.columns:
        return frame
    runs = _latest_runs(_read_folder(root / "runs"), code_digest, root, quiet=True)
    if runs.empty or "written_at" not in runs.columns:
        return frame.reset_index(drop=True)
    return frame[claimed_by(frame, runs)].reset_index(drop=True)


def _latest_runs(frame: pd.DataFrame, code_digest: str | None, root: Path, quiet: bool = False) -> pd.DataFrame:
    """The newest row of each cell, of one code if asked, warning when codes are mixed."""
    if frame.empty or "written_at" not in frame.columns:
        return frame
    frame = frame.iloc[write_order(frame)].drop_duplicates("cell_id", keep="last")  # the newest row of each cell
    sort = "cell_index" if "cell_index" in frame.columns else "cell_id"
    frame = frame.sort_values(sort, kind="stable").reset_index(drop=True)
    codes = (
        frame["code_digest"].fillna("unrecorded")
        if "code_digest" in frame.columns
        else pd.Series("unrecorded", index=frame.index)
    )
    if code_digest is not None:
        wanted = codes.iloc[write_order(frame)[-1]] if code_digest == "latest" else code_digest
        if not (codes == wanted).any():
            raise ValueError(
                f"code_digest={code_digest!r}: no runs of that code in {root} (it has {', '.join(codes.unique())})"
            )
        return frame[codes == wanted].reset_index(drop=True)
    counts = codes.value_counts()
    if len(counts) > 1 and not quiet:
        warnings.warn(
            f"{root}: rows from {len(counts)} versions of the simulator's code ("
            + ", ".join(f"{code}: {n} rows" for code, n in counts.items())
            + "); results of different code are not comparable: load(..., code_digest='latest') keeps "
            "the newest code's rows, and `tiersweep sweep CONFIG` computes the config's cells with the current code",
            MixedCodeWarning,
            stacklevel=3,
        )
    return frame
