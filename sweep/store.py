"""The Parquet result store of a sweep: ``OUT/NAME/runs/`` and ``OUT/NAME/jobs/``.

* ``runs/``: one row per cell (see :func:`tiersweep.sweep.batch.run_batch` for the columns).
* ``jobs/``: per-job records keyed by ``cell_id`` (only with ``--jobs``).
* ``segments/``: every stay of a job on its VMs (tier, start, end, nodes, how it ended), keyed
  by ``cell_id`` (only with ``--jobs``): the data of Gantt charts.
* ``manifest.json``: the sweep config (parsed, and the file's text as written, with any
  ``--set`` overrides), the column schema and the time it last changed.

Only the driver writes. Each completed batch becomes one new file per table, written under a
temporary name and renamed into place, with its rows sorted by cell index, so a reader never
sees a partial file and an interrupted sweep loses only the cells in flight. Every file of a
sweep shares one schema, fixed from the sweep's cells when the sweep starts (missing columns
are nulls), so ``pandas.read_parquet(OUT/NAME/runs)`` and ``pyarrow.dataset`` read the
folder as one table. The config is also stored in each file's schema metadata.
A cell recomputed with ``--force`` gets a newer row; readers keep the newest row of a cell
(:func:`read_table`), and :func:`compact` rewrites the folder without the older ones.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import uuid
from pathlib import Path
from typing import Any, Collection, Iterable, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute  # noqa: F401 (pa.compute)
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from ..core.errors import SpecError, TiersweepError, first_line
from ..core.safe_files import atomic_writer, write_atomic
from .folder_lock import FolderLock

__all__ = ["Store", "read_table", "read_jobs", "compact", "spec_column_types", "read_manifest", "unreadable_part"]

_FIXED = [
    ("cell_id", pa.string()),
    ("cell_index", pa.int64()),
    ("sweep", pa.string()),
    ("status", pa.string()),
    ("error", pa.string()),
    ("wall_seconds", pa.float64()),
    ("model_version", pa.string()),
    ("code_digest", pa.string()),
    ("package_version", pa.string()),
    ("seed", pa.int64()),
    ("replicate", pa.int64()),
    ("host", pa.string()),
    ("written_at", pa.timestamp("us", tz="UTC")),
]
_INT_METRICS = {"jobs", "dropped"}


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"not JSON serialisable: {value!r}")


def spec_column_types(specs: Iterable[Mapping[str, Any]]) -> dict[str, pa.DataType]:
    """Arrow types of flattened spec columns over ``specs`` (dotted key -> type).

    A column whose values are all booleans, all integers, all numbers or all strings gets that
    type; anything else (lists, mixtures such as ``adaptive`` and ``10.0``) is stored as text.
    """
    values: dict[str, list[Any]] = {}
    for spec in specs:
        for key, value in spec.items():
            values.setdefault(key, [])
            if value is not None:
                values[key].append(value)
    types: dict[str, pa.DataType] = {}
    for key, seen in values.items():
        if seen and all(isinstance(v, bool) for v in seen):
            types[key] = pa.bool_()
        elif seen and all(isinstance(v, int) and not isinstance(v, bool) for v in seen):
            types[key] = pa.int64()
        elif seen and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in seen):
            types[key] = pa.float64()
        else:
            types[key] = pa.string()
    return types


def _type_name(kind: pa.DataType) -> str:
    """A column type as a user reads it."""
    if pa.types.is_boolean(kind):
        return "true/false"
    if pa.types.is_integer(kind):
        return "integer"
    if pa.types.is_floating(kind):
        return "number"
    return "text (or mixed)"


def _to_text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, (list, dict)):
        return json.dumps(value, sort_keys=True, default=_json_default)
    return str(value)


class Store:
    """The folder of one sweep's results.

    Args:
        root: ``OUT/NAME``.
    """

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.runs = self.root / "runs"
        self.jobs = self.root / "jobs"
        self.segments = self.root / "segments"

    # -- writing -----------------------------------------------------------------------------
    def prepare(
        self,
        config: Mapping[str, Any],
        spec_types: Mapping[str, pa.DataType],
        metric_names: Sequence[str],
        job_columns: Sequence[str],
        source: Mapping[str, Any] | None = None,
    ) -> None:
        """Create the folders and fix this sweep's schemas; record the manifest.

        ``source`` adds what the manifest should say of where the config came from:
        ``config_text`` (the file as the user wrote it) and ``overrides`` (``--set``).

        Raises:
            SpecError: A spec column already stored with one type would now need another that
                its stored rows cannot share (nothing has been run or written).
        """
        spec_types = self._stored_compatible(spec_types)
        for folder in (self.runs, self.jobs, self.segments):
            folder.mkdir(parents=True, exist_ok=True)
        fields = [pa.field(name, kind) for name, kind in _FIXED]
        fields += [pa.field(name, kind) for name, kind in sorted(spec_types.items())]
        fields += [
            pa.field(name, pa.int64() if name in _INT_METRICS or name.startswith("report.") else pa.float64())
            for name in sorted(metric_names)
        ]
        metadata = {b"tiersweep.config": json.dumps(config, sort_keys=True, default=_json_default).encode()}
        self.schema = pa.schema(fields, metadata=metadata)
        self._spec_types = dict(spec_types)
        job_fields = [pa.field("cell_id", pa.string())]
        job_fields += [
            pa.field(name, pa.int64() if name in ("job_id", "size", "migrations", "kills") else pa.float64()) for name in job_columns
        ]
        job_fields.append(pa.field("written_at", pa.timestamp("us", tz="UTC")))
        self.job_schema = pa.schema(job_fields, metadata=metadata)
        self.segment_schema = pa.schema(
            [
                pa.field("cell_id", pa.string()),
                pa.field("job_id", pa.int64()),
                pa.field("tier", pa.int64()),
                pa.field("start_time", pa.float64()),
                pa.field("end_time", pa.float64()),
                pa.field("nodes", pa.list_(pa.int64())),
                pa.field("end", pa.string()),
                pa.field("written_at", pa.timestamp("us", tz="UTC")),
            ],
            metadata=metadata,
        )
        manifest = {
            "config": json.loads(json.dumps(config, default=_json_default)),
            **dict(source or {}),
            "schema": {field.name: str(field.type) for field in self.schema},
        }
        try:
            stored = read_manifest(self.root)
        except TiersweepError:
            stored = {}  # a damaged manifest is replaced
        # Written only when it changes, so that a run with nothing new to say about the folder
        # writes nothing (a read-only folder of finished results can be re-run).
        if {key: stored.get(key) for key in manifest} != manifest:
            manifest["updated_at"] = dt.datetime.now(dt.timezone.utc).isoformat()
            self._write_bytes(self.root / "manifest.json", json.dumps(manifest, indent=2).encode())

    def _stored_compatible(self, spec_types: Mapping[str, pa.DataType]) -> dict[str, pa.DataType]:
        """``spec_types`` reconciled with the types the folder's rows already have, so that
        every part file of a column shares one type (readers such as ``pandas.read_parquet``
        of the folder fail on a column that is a number in one file and text in another).

        A column stored as text takes any value (as text); a number column takes integers
        into a float column; anything else is refused, naming the column and both types.
        """
        files = _parts(self.runs)
        if not files:
            return dict(spec_types)
        try:
            stored = pq.read_schema(files[-1])
        except (pa.ArrowException, OSError) as error:
            raise unreadable_part(files[-1:], error) from None
        reconciled = dict(spec_types)
        for name, wanted in spec_types.items():
            if name not in stored.names:
                continue
            have = stored.field(name).type
            if have == wanted or pa.types.is_string(have) or (pa.types.is_floating(have) and pa.types.is_integer(wanted)):
                reconciled[name] = have
                continue
            raise SpecError(
                f"{name}: {self.root} stores this column as {_type_name(have)}, but the grid now also "
                f"has {_type_name(wanted)} values; a column keeps one type per results folder: run "
                f"this grid into another folder (--out) or under another sweep name"
            )
        return reconciled

    def write(self, outcomes: Sequence[Mapping[str, Any]]) -> None:
        """Write one batch: a jobs file and a segments file when any outcome carries them, then
        a runs file (which is what makes its cells stored)."""
        now = dt.datetime.now(dt.timezone.utc)
        rows = sorted((o["row"] for o in outcomes), key=lambda r: r["cell_index"])
        columns: dict[str, list[Any]] = {field.name: [] for field in self.schema}
        for row in rows:
            for field in self.schema:
                value = row.get(field.name)
                if field.name == "written_at":
                    value = now
                elif pa.types.is_string(field.type) and field.name in self._spec_types:
                    value = _to_text(value)
                elif isinstance(value, float) and math.isnan(value) and pa.types.is_integer(field.type):
                    value = None
                columns[field.name].append(value)
        extra = sorted({key for row in rows for key in row} - set(columns))
        if extra:
            raise ValueError(f"result columns not in the sweep's schema: {extra}")
        runs = pa.table(columns, schema=self.schema)
        with_jobs = [o["jobs"] for o in sorted(outcomes, key=lambda o: o["row"]["cell_index"]) if o["jobs"] is not None]
        if with_jobs:
            count = sum(len(jobs["job_id"]) for jobs in with_jobs)
            merged = {}
            for field in self.job_schema:
                if field.name == "written_at":
                    merged[field.name] = pa.array([now] * count, field.type)
                    continue
                parts = [
                    jobs[field.name] if field.name in jobs else np.full(len(jobs["job_id"]), np.nan)
                    for jobs in with_jobs
                ]
                merged[field.name] = pa.array(np.concatenate(parts), field.type, from_pandas=True)
            self._write_table(self.jobs, pa.table(merged, schema=self.job_schema))
        with_segments = [o.get("segments") for o in sorted(outcomes, key=lambda o: o["row"]["cell_index"])]
        with_segments = [seg for seg in with_segments if seg is not None]
        if with_segments:
            columns = {
                field.name: [value for seg in with_segments for value in seg[field.name]]
                for field in self.segment_schema
                if field.name != "written_at"
            }
            columns["nodes"] = [list(nodes) for nodes in columns["nodes"]]
            columns["written_at"] = [now] * len(columns["cell_id"])
            self._write_table(self.segments, pa.table(columns, schema=self.segment_schema))
        # The runs file last: a cell is stored (and skipped by a re-run) once its runs row
        # exists, so that row must never exist without the cell's per-job records and
        # segments. If a write above fails (a full disk), the batch has no runs rows and is
        # redone; the files it did write match no runs row and no reader returns them.
        self._write_table(self.runs, runs)

    def _write_table(self, folder: Path, table: pa.Table) -> None:
        name = f"part-{dt.datetime.now(dt.timezone.utc):%Y%m%dT%H%M%S%f}-{uuid.uuid4().hex[:8]}.parquet"
        with atomic_writer(folder / name) as handle:
            pq.write_table(table, handle)

    @staticmethod
    def _write_bytes(path: Path, data: bytes) -> None:
        write_atomic(path, data)

    # -- reading -----------------------------------------------------------------------------
    def stored_ids(self) -> dict[str, str]:
        """cell_id -> status of every cell already stored (newest row wins)."""
        files = _parts(self.runs)
        if not files:
            return {}
        try:
            table = ds.dataset(files, format="parquet").to_table(columns=["cell_id", "status", "written_at"])
        except (pa.ArrowException, OSError) as error:
            raise unreadable_part(files, error) from None
        order = np.argsort(table.column("written_at").to_numpy(), kind="stable")
        ids = table.column("cell_id").to_numpy(zero_copy_only=False)[order]
        status = table.column("status").to_numpy(zero_copy_only=False)[order]
        return dict(zip(ids.tolist(), status.tolist()))

    def without_jobs(self) -> set[str]:
        """Cells stored as ``ok`` whose newest run has no per-job records (stored by a sweep run
        without ``--jobs``)."""
        runs = read_table(self.runs, columns=["cell_id", "status", "written_at"])
        if not runs.num_rows:
            return set()
        runs = runs.select(["cell_id", "status", "written_at"]).filter(pa.compute.equal(runs.column("status"), "ok"))
        files = _parts(self.jobs)
        with_records: set[tuple[str, Any]] = set()
        if files:
            try:
                jobs = ds.dataset(files, format="parquet").to_table(columns=["cell_id", "written_at"])
            except (pa.ArrowException, OSError) as error:
                raise unreadable_part(files, error) from None
            pairs = jobs.group_by(["cell_id", "written_at"]).aggregate([])
            with_records = set(zip(pairs.column("cell_id").to_pylist(), pairs.column("written_at").to_pylist()))
        return {
            cell
            for cell, written in zip(runs.column("cell_id").to_pylist(), runs.column("written_at").to_pylist())
            if (cell, written) not in with_records
        }


#: How to recover from a damaged file, by the table it belongs to.
_RECOVERY = {
    "runs": "move it out of the folder: the next `tiersweep sweep` computes the cells it held again",
    "jobs": "move it out of the folder: its cells stay stored, and `tiersweep sweep --jobs` computes their per-job records again",
    "segments": "move it out of the folder: its cells stay stored, and `tiersweep sweep --jobs` computes their segments again",
}


def unreadable_part(files: Sequence[str | Path], error: BaseException) -> TiersweepError:
    """The error for a set of part files that could not be read together: it names the first
    file that cannot be read on its own (or, if each reads, the files' disagreement) and says
    how to recover."""
    for name in files:
        try:
            pq.read_table(name)
        except (pa.ArrowException, OSError) as problem:
            table = Path(name).parent.name
            hint = _RECOVERY.get(table, "move it out of the folder and compute what it held again")
            return TiersweepError(f"{name}: not a readable Parquet file ({first_line(problem)}); {hint}")
    return TiersweepError(f"{Path(files[0]).parent}: its Parquet files do not read as one table ({first_line(error)})")


def read_manifest(root: str | Path) -> dict[str, Any]:
    """The ``manifest.json`` of a results folder (an empty mapping if there is none).

    Raises:
        TiersweepError: The file is not a JSON object; the message names it and says how to
            recover (the manifest is rewritten by the next run that stores a cell).
    """
    path = Path(root) / "manifest.json"
    try:
        manifest = json.loads(path.read_bytes())
    except FileNotFoundError:
        return {}
    except (ValueError, UnicodeDecodeError) as error:
        manifest = error
    if not isinstance(manifest, dict):
        raise TiersweepError(
            f"{path}: damaged (not a JSON object); delete it: the next `tiersweep sweep` of this "
            f"folder's config writes it again (the stored cells are not in it)"
        )
    return manifest


def _parts(folder: Path) -> list[str]:
    if not folder.is_dir():
        return []
    return sorted(str(p) for p in folder.glob("part-*.parquet"))


def read_table(
    folder: str | Path,
    *,
    latest_only: bool = True,
    files: Sequence[str] | None = None,
    columns: Collection[str] | None = None,
) -> pa.Table:
    """All part files of ``folder`` (or just ``files``) as one table (schemas unified; missing
    columns null).

    For ``runs``, ``latest_only`` keeps the newest row of each cell. ``columns`` reads only
    those of them the folder has (Parquet reads columns apart: a large folder's few columns
    cost a fraction of the whole).
    """
    files = _parts(Path(folder)) if files is None else list(files)
    if not files:
        return pa.table({})
    try:
        schema = pa.unify_schemas([pq.read_schema(f) for f in files], promote_options="permissive")
        names = None
        if columns is not None:
            wanted = set(columns) | ({"cell_id", "written_at", "cell_index"} if latest_only else set())
            names = [name for name in schema.names if name in wanted]
        table = ds.dataset(files, schema=schema, format="parquet").to_table(columns=names)
    except (pa.ArrowException, OSError) as error:
        raise unreadable_part(files, error) from None
    if latest_only and "written_at" in table.column_names and table.num_rows:
        frame = table.select(["cell_id", "written_at"]).to_pandas()
        frame["row"] = np.arange(len(frame))
        keep = frame.sort_values(["written_at", "row"]).drop_duplicates("cell_id", keep="last")["row"]
        table = table.take(pa.array(np.sort(keep.to_numpy())))
        table = table.sort_by("cell_index")
    return table


def read_jobs(root: str | Path, table: str = "jobs") -> pa.Table:
    """The per-job records of ``root/jobs`` (or the segments of ``root/segments``), only those
    of each cell's newest run."""
    rows = read_table(Path(root) / table, latest_only=False)
    if not rows.num_rows:
        return rows
    runs = read_table(Path(root) / "runs")
    if not runs.num_rows:
        return rows.slice(0, 0)  # records that no stored run claims (a batch a full disk cut short)
    runs = runs.select(["cell_id", "written_at"])
    keys = {(c, w) for c, w in zip(runs.column("cell_id").to_pylist(), runs.column("written_at").to_pylist())}
    mask = [(c, w) in keys for c, w in zip(rows.column("cell_id").to_pylist(), rows.column("written_at").to_pylist())]
    return rows.filter(pa.array(mask))


def compact(root: str | Path) -> tuple[int, int]:
    """Merge the part files of ``root/runs`` (newest row per cell), ``root/jobs`` and
    ``root/segments`` into one file each; return the number of files before and after.

    Holds the folder's lock (no sweep writes meanwhile) and, besides, merges and deletes only
    the files it listed at the start: a file that appears later is left as it is. The runs
    files are listed before the others, and a batch writes its runs file last, so every runs
    row listed has its per-job records among the files listed. Per-job records and segments
    are dropped only where a newer run of their cell supersedes them; records that no listed
    run claims (a batch still being written, or one a full disk interrupted) are kept.
    """
    root = Path(root)
    if not (root / "runs").is_dir():
        raise TiersweepError(f"{root}: not a sweep's results folder (it has no runs/ folder)")
    with FolderLock(root, "compact"):
        listed = {name: _parts(root / name) for name in ("runs", "jobs", "segments")}
        before = sum(len(files) for files in listed.values())
        runs = read_table(root / "runs", files=listed["runs"])
        latest = {}
        if runs.num_rows:
            latest = dict(zip(runs.column("cell_id").to_pylist(), runs.column("written_at").to_pylist()))
        after = 0
        for name, files in listed.items():
            if len(files) <= 1:
                after += len(files)
                continue
            table = runs if name == "runs" else _not_superseded(read_table(root / name, latest_only=False, files=files), latest)
            Store(root)._write_table(root / name, table)
            for f in files:
                os.remove(f)
            after += 1
        return before, after


def _not_superseded(rows: pa.Table, latest: dict[str, Any]) -> pa.Table:
    """The per-job rows (or segments) not superseded by a newer run of their cell (``latest``:
    cell_id -> written_at of its newest stored run)."""
    if not rows.num_rows:
        return rows
    keep = [
        cell not in latest or written >= latest[cell]
        for cell, written in zip(rows.column("cell_id").to_pylist(), rows.column("written_at").to_pylist())
    ]
    return rows.filter(pa.array(keep))
