"""The Parquet result store of a sweep: ``OUT/NAME/runs/`` and ``OUT/NAME/jobs/``.

* ``runs/``: one row per cell (see :func:`tiersweep.sweep.batch.run_batch` for the columns).
* ``jobs/``: per-job records keyed by ``cell_id`` (only with ``--jobs``).
* ``segments/``: every stay of a job on its VMs (tier, start, end, nodes, how it ended), keyed
  by ``cell_id`` (only with ``--jobs``): the data of Gantt charts.
* ``manifest.json``: the sweep config (parsed, and the file's text as written, with any
  ``--set`` overrides), every config run into the folder before (``configs``), the column
  schema and the time it last changed.

Only the driver writes, holding the folder's lock (:mod:`tiersweep.sweep.folder_lock`). Each
completed batch becomes one new file per table, written under a temporary name and renamed
into place, with its rows sorted by cell index, so a reader never sees a partial file and an
interrupted sweep loses only the cells in flight. Every file of a sweep shares one schema,
fixed from the sweep's cells when the sweep starts (missing columns are nulls), so
``pandas.read_parquet(OUT/NAME/runs)`` and ``pyarrow.dataset`` read the folder as one table.
The config is also stored in each file's schema metadata.

**Which row is newest.** A cell recomputed (``--force``, ``--retry-failed``) gets a newer row;
readers keep the newest row of each cell (:func:`read_table`), and the per-job records and
segments of that run only (:func:`read_jobs`). Newest means the largest ``write_seq``: a
counter of the folder, one number per batch shared by the batch's runs, jobs and segments
files, one more than any part file of the folder holds (the number is in each file's name,
``part-SEQ-RANDOM.parquet``). A wall clock can move back (a corrected clock, another host);
the counter cannot, so ``written_at`` is kept only as information. Rows an older version
stored have no counter: they count as older than every row that has one, and among
themselves the latest ``written_at`` wins, as it did when they were written. A run's records
are those with its cell and counter (or, without counters, its time of writing).

**Compaction** (:func:`compact`) rewrites each table as one file without superseded rows,
and is atomic as readers see it, however it is stopped (SIGKILL included): the merged file
(``part-SEQ-RANDOM-merged.parquet``) names, in its schema metadata, the part files it
replaces, so the one rename that puts it in place also retires them. Readers list a table
with :func:`live_parts`, which skips retired files; deleting them is only tidying, done
idempotently by this compaction, the next one or the next sweep of the folder (a retired
merged file goes only after the files it retired, or they would count again). A compaction
merges only live files, so an interrupted one is never merged twice. Only a reader that lists
the files itself (``pandas.read_parquet`` of the folder, DuckDB) can see retired files, and
only between a killed compaction and the next sweep, tune or compaction of the folder.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import re
import uuid
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar, get_type_hints

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from ..core.errors import SpecError, TiersweepError, first_line
from ..core.metric_catalogue import dtype_of
from ..core.safe_files import atomic_writer, write_atomic
from ..core.segments import SEGMENT_FIELDS, Segment
from .folder_lock import FolderLock
from .records import Outcome

__all__ = [
    "Store",
    "read_table",
    "read_jobs",
    "compact",
    "spec_column_types",
    "read_manifest",
    "read_configs",
    "unreadable_part",
    "live_parts",
    "read_parts",
    "write_order",
    "run_keys",
    "claimed_by",
    "SEQ",
]

#: The store's write counter column: every file a batch writes (runs, jobs, segments) carries
#: one number, larger than any the folder held before; the newest row is the largest.
SEQ = "write_seq"
#: A part file's name: ``part-SEQ-RANDOM.parquet``, ``-merged`` for a compaction's file.
_PART = re.compile(r"^part-(\d+)-[0-9a-f]{8}(-merged)?\.parquet$")
#: The schema metadata key of a merged file: the JSON list of the part names it replaces.
_REPLACES = b"tiersweep.replaces"
#: The tables of a results folder the store writes.
_TABLES = ("runs", "jobs", "segments")
_T = TypeVar("_T")

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
    ("trace_digest", pa.string()),
    ("host", pa.string()),
    ("written_at", pa.timestamp("us", tz="UTC")),
    (SEQ, pa.int64()),
]


def _metric_type(name: str) -> pa.DataType:
    """The Arrow type of a metric or per-job column, as the metric catalogue gives it."""
    return pa.from_numpy_dtype(np.dtype(dtype_of(name)))


#: The Arrow types of the annotations of :class:`~tiersweep.core.segments.Segment`'s fields.
_ANNOTATION_TYPES = {int: pa.int64(), float: pa.float64(), str: pa.string(), tuple[int, ...]: pa.list_(pa.int64())}
#: The columns of a segment, in order, with their stored types.
_SEGMENT_COLUMNS = [(name, _ANNOTATION_TYPES[get_type_hints(Segment)[name]]) for name in SEGMENT_FIELDS]


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
            _remove_replaced(folder)  # what an interrupted compaction left (readers ignore it already)
        fields = [pa.field(name, kind) for name, kind in _FIXED]
        fields += [pa.field(name, kind) for name, kind in sorted(spec_types.items())]
        fields += [pa.field(name, _metric_type(name)) for name in sorted(metric_names)]
        metadata = {b"tiersweep.config": json.dumps(config, sort_keys=True, default=_json_default).encode()}
        self.schema = pa.schema(fields, metadata=metadata)
        self._spec_types = dict(spec_types)
        job_fields = [pa.field("cell_id", pa.string())]
        job_fields += [pa.field(name, _metric_type(name)) for name in job_columns]
        job_fields += [pa.field("written_at", pa.timestamp("us", tz="UTC")), pa.field(SEQ, pa.int64())]
        self.job_schema = pa.schema(job_fields, metadata=metadata)
        self.segment_schema = pa.schema(
            [
                pa.field("cell_id", pa.string()),
                *(pa.field(name, kind) for name, kind in _SEGMENT_COLUMNS),
                pa.field("written_at", pa.timestamp("us", tz="UTC")),
                pa.field(SEQ, pa.int64()),
            ],
            metadata=metadata,
        )
        used = {"config": json.loads(json.dumps(config, default=_json_default)), **dict(source or {})}
        try:
            stored = read_manifest(self.root)
        except TiersweepError:
            stored = {}  # a damaged manifest is replaced
        # Every config ever run into the folder, not only the last: its rows are theirs too.
        history = _history(stored)
        manifest = {
            **used,
            "configs": history + ([] if used in history else [used]),
            "schema": {field.name: str(field.type) for field in self.schema},
        }
        # Written only when it changes, so that a run with nothing new to say about the folder
        # writes nothing (a read-only folder of finished results can be re-run).
        if {key: stored.get(key) for key in manifest} != manifest:
            manifest["updated_at"] = dt.datetime.now(dt.UTC).isoformat()
            self._write_bytes(self.root / "manifest.json", json.dumps(manifest, indent=2).encode())

    def _stored_compatible(self, spec_types: Mapping[str, pa.DataType]) -> dict[str, pa.DataType]:
        """``spec_types`` reconciled with the types the folder's rows already have, so that
        every part file of a column shares one type (readers such as ``pandas.read_parquet``
        of the folder fail on a column that is a number in one file and text in another).

        A column stored as text takes any value (as text); a number column takes integers
        into a float column; anything else is refused, naming the column and both types.
        """
        files = live_parts(self.runs)
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
            if (
                have == wanted
                or pa.types.is_string(have)
                or (pa.types.is_floating(have) and pa.types.is_integer(wanted))
            ):
                reconciled[name] = have
                continue
            raise SpecError(
                f"{name}: {self.root} stores this column as {_type_name(have)}, but the grid now also "
                f"has {_type_name(wanted)} values; a column keeps one type per results folder: run "
                f"this grid into another folder (--out) or under another sweep name"
            )
        return reconciled

    def write(self, outcomes: Sequence[Outcome]) -> None:
        """Write one batch: a jobs file and a segments file when any outcome carries them, then
        a runs file (which is what makes its cells stored)."""
        now = dt.datetime.now(dt.UTC)
        seq = self._next_seq()
        outcomes = sorted(outcomes, key=lambda o: o.cell_index)
        rows = [o.row for o in outcomes]
        columns: dict[str, list[Any]] = {field.name: [] for field in self.schema}
        for row in rows:
            for field in self.schema:
                value = row.get(field.name)
                if field.name == "written_at":
                    value = now
                elif field.name == SEQ:
                    value = seq
                elif pa.types.is_string(field.type) and field.name in self._spec_types:
                    value = _to_text(value)
                elif isinstance(value, float) and math.isnan(value) and pa.types.is_integer(field.type):
                    value = None
                columns[field.name].append(value)
        extra = sorted({key for row in rows for key in row} - set(columns))
        if extra:
            raise ValueError(f"result columns not in the sweep's schema: {extra}")
        runs = pa.table(columns, schema=self.schema)
        with_jobs = [o.jobs for o in outcomes if o.jobs is not None]
        if with_jobs:
            count = sum(len(jobs["job_id"]) for jobs in with_jobs)
            merged = {}
            for field in self.job_schema:
                if field.name in ("written_at", SEQ):
                    merged[field.name] = pa.array([now if field.name == "written_at" else seq] * count, field.type)
                    continue
                parts = [
                    jobs[field.name] if field.name in jobs else np.full(len(jobs["job_id"]), np.nan)
                    for jobs in with_jobs
                ]
                merged[field.name] = pa.array(np.concatenate(parts), field.type, from_pandas=True)
            _write_part(self.jobs, pa.table(merged, schema=self.job_schema), seq)
        with_segments = [o.segments for o in outcomes if o.segments is not None]
        if with_segments:
            columns = {
                field.name: [value for seg in with_segments for value in seg[field.name]]
                for field in self.segment_schema
                if field.name not in ("written_at", SEQ)
            }
            columns["nodes"] = [list(nodes) for nodes in columns["nodes"]]
            columns["written_at"] = [now] * len(columns["cell_id"])
            columns[SEQ] = [seq] * len(columns["cell_id"])
            _write_part(self.segments, pa.table(columns, schema=self.segment_schema), seq)
        # The runs file last: a cell is stored (and skipped by a re-run) once its runs row
        # exists, so that row must never exist without the cell's per-job records and
        # segments. If a write above fails (a full disk), the batch has no runs rows and is
        # redone; the files it did write match no runs row and no reader returns them.
        _write_part(self.runs, runs, seq)

    def _next_seq(self) -> int:
        """The write counter of the next batch: one more than any part file of the folder has.

        Read from the file names, so that it takes no file reads, survives any crash (a
        number is taken once its file is in place) and never goes back (a compaction's file
        carries the largest number of those it replaces). Only the holder of the folder's
        lock writes, so no two writers take the same number.
        """
        names = [name for folder in (self.runs, self.jobs, self.segments) for name in _part_names(folder)]
        return 1 + max((_seq_of(name) for name in names), default=0)

    @staticmethod
    def _write_bytes(path: Path, data: bytes) -> None:
        write_atomic(path, data)

    # -- reading -----------------------------------------------------------------------------
    def stored_ids(self) -> dict[str, str]:
        """cell_id -> status of every cell already stored (newest row wins)."""
        runs = read_table(self.runs, columns=["status"])
        if not runs.num_rows:
            return {}
        return dict(zip(runs.column("cell_id").to_pylist(), runs.column("status").to_pylist()))

    def without_jobs(self) -> set[str]:
        """Cells stored as ``ok`` whose newest run lacks its per-job records (stored by a sweep
        run without ``--jobs``, or their file moved out) or its segments (their file moved out:
        a run whose records show a job that started has segments)."""
        runs = read_table(self.runs, columns=["status"]).to_pandas()
        if runs.empty:
            return set()
        runs = runs[runs["status"] == "ok"]
        columns = ["cell_id", "written_at", SEQ, "start_time"]
        jobs = read_table(self.jobs, latest_only=False, columns=columns).to_pandas()
        with_records: set[tuple[Any, Any]] = set()
        started: set[tuple[Any, Any]] = set()
        if not jobs.empty:
            keys = [name for name in ("cell_id", "written_at", SEQ) if name in jobs.columns]
            with_records = set(run_keys(jobs[keys].drop_duplicates()))
            started = set(run_keys(jobs.loc[jobs["start_time"].notna(), keys].drop_duplicates()))
        segments = read_table(self.segments, latest_only=False, columns=["cell_id", "written_at", SEQ]).to_pandas()
        with_segments = set(run_keys(segments.drop_duplicates())) if not segments.empty else set()
        return {
            cell
            for cell, key in zip(runs["cell_id"], run_keys(runs))
            if key not in with_records or (key in started and key not in with_segments)
        }


#: How to recover from a damaged file, by the table it belongs to.
_RECOVERY = {
    "runs": "move it out of the folder: the next `tiersweep sweep` computes the cells it held again",
    "jobs": (
        "move it out of the folder: its cells stay stored, "
        "and `tiersweep sweep --jobs` computes their per-job records again"
    ),
    "segments": (
        "move it out of the folder: its cells stay stored, and `tiersweep sweep --jobs` computes their segments again"
    ),
    "trials": "move it out of the folder: the next `tiersweep tune` of the study writes it again from its storage",
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


_SOURCE_KEYS = ("config", "config_text", "overrides")


def _history(manifest: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The configs a manifest records (one written before manifests kept them all: its last)."""
    if isinstance(manifest.get("configs"), list):
        return [dict(entry) for entry in manifest["configs"] if isinstance(entry, Mapping)]
    if manifest.get("config"):
        return [{key: manifest[key] for key in _SOURCE_KEYS if key in manifest}]
    return []


def read_configs(root: str | Path, manifest: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """Every config run into the results folder ``root``, oldest first: mappings with
    ``config`` and, when known, ``config_text`` (the file as written) and ``overrides``
    (``--set``).

    A folder written before its manifest kept every config adds the configs stored in the
    metadata of its runs files that the manifest does not hold (without their text).
    ``manifest`` is the folder's manifest when the caller has read it already.
    """
    root = Path(root)
    manifest = read_manifest(root) if manifest is None else manifest
    configs = _history(manifest)
    if "configs" in manifest:
        return configs
    known = [entry.get("config") for entry in configs]
    older = []
    for name in live_parts(root / "runs"):
        try:
            metadata = pq.read_schema(name).metadata or {}
            config = json.loads(metadata.get(b"tiersweep.config", b"null"))
        except (pa.ArrowException, OSError, ValueError):
            continue  # an unreadable part is reported by the reader of its rows
        if config and config not in known:
            known.append(config)
            older.append({"config": config})
    return older + configs


def _seq_of(name: str) -> int:
    """The write counter in a part file's name (0 for a name an older version wrote)."""
    match = _PART.match(name)
    return int(match.group(1)) if match else 0


def _part_names(folder: Path, pattern: str = "part-*.parquet") -> list[str]:
    """Names of the part files of ``folder`` (temporary files excluded), oldest write first."""
    if not folder.is_dir():
        return []
    names = [path.name for path in folder.glob(pattern) if not path.name.startswith(".")]
    return sorted(names, key=lambda name: (_seq_of(name), name))


def _replaced_by(folder: Path, names: Sequence[str]) -> dict[str, list[str]]:
    """merged file -> the part names it replaces, for each merged file among ``names``."""
    replaces = {}
    for name in names:
        match = _PART.match(name)
        if not (match and match.group(2)):
            continue
        try:
            listed = json.loads(pq.read_schema(folder / name).metadata[_REPLACES])
        except (pa.ArrowException, OSError, KeyError, TypeError, ValueError):
            listed = []  # unreadable: it replaces nothing, and reading it says so, naming it
        replaces[name] = [str(item) for item in listed] if isinstance(listed, list) else []
    return replaces


def live_parts(folder: str | Path, pattern: str = "part-*.parquet") -> list[str]:
    """The part files of ``folder`` that hold its rows, oldest write first: every one but
    those a completed compaction replaced (see :func:`compact`)."""
    folder = Path(folder)
    names = _part_names(folder, pattern)
    replaced = {name for listed in _replaced_by(folder, names).values() for name in listed}
    return [str(folder / name) for name in names if name not in replaced]


def _remove_replaced(folder: Path) -> None:
    """Delete the files of ``folder`` that a completed compaction replaced; idempotent.

    A merged file that is itself replaced goes only once the files it replaces are gone:
    deleted before them, it would let them count again.
    """
    names = _part_names(folder)
    replaces = _replaced_by(folder, names)
    present = set(names)
    pending = [name for name in names if name in {item for listed in replaces.values() for item in listed}]
    while pending:
        left = [name for name in pending if any(item in present for item in replaces.get(name, ()))]
        for name in pending:
            if name not in left:
                try:
                    os.remove(folder / name)
                except FileNotFoundError:
                    pass
                present.discard(name)
        if len(left) == len(pending):
            break  # (a merged file replaces only files older than itself: never reached)
        pending = left


def _write_part(folder: Path, table: pa.Table, seq: int, replaces: Sequence[str] | None = None) -> None:
    """Write ``table`` as a part file of ``folder`` with write counter ``seq``: under a
    temporary name, renamed into place. With ``replaces`` (part names), a merged file that
    makes those files obsolete in the same rename."""
    suffix = ""
    if replaces is not None:
        suffix = "-merged"
        metadata = {**(table.schema.metadata or {}), _REPLACES: json.dumps(sorted(replaces)).encode()}
        table = table.replace_schema_metadata(metadata)
    name = f"part-{seq:012d}-{uuid.uuid4().hex[:8]}{suffix}.parquet"
    with atomic_writer(folder / name) as handle:
        pq.write_table(table, handle)


def _placing(table: pa.Table) -> pd.DataFrame:
    """The columns of ``table`` that say which write each row comes from."""
    return table.select([name for name in ("cell_id", "written_at", SEQ) if name in table.column_names]).to_pandas()


def _order_keys(frame: pd.DataFrame) -> list[tuple[int, Any]]:
    """Each row's place in the store's write order: ``(write_seq, written_at)``.

    Rows an older version stored have no write counter: they count as older than every row
    that has one (-1), and among themselves by their time of writing, as they did then.
    """
    seqs = frame[SEQ].tolist() if SEQ in frame.columns else [None] * len(frame)
    return [(-1 if pd.isna(seq) else int(seq), at) for seq, at in zip(seqs, frame["written_at"].tolist())]


def write_order(frame: pd.DataFrame) -> np.ndarray:
    """Positions of the rows of ``frame`` (with ``written_at`` and, if stored, ``write_seq``)
    from the oldest write to the newest; rows of one write keep their order."""
    keys = _order_keys(frame)
    return np.array(sorted(range(len(keys)), key=keys.__getitem__), dtype=np.int64)


def run_keys(frame: pd.DataFrame) -> list[tuple[Any, Any]]:
    """The stored run each row of ``frame`` (runs rows, per-job records or segments) belongs to:
    its cell and write counter (a batch writes a cell once), or its cell and time of writing
    for rows an older version stored."""
    cells = frame["cell_id"].tolist()
    return [(cell, ("seq", seq) if seq >= 0 else ("at", at)) for cell, (seq, at) in zip(cells, _order_keys(frame))]


def claimed_by(records: pd.DataFrame, runs: pd.DataFrame) -> np.ndarray:
    """Which rows of ``records`` (per-job records or segments) belong to a run of ``runs``
    (:func:`run_keys`), as a boolean array."""
    keys = set(run_keys(runs))
    return _per_write(records, lambda writes: [key in keys for key in run_keys(writes)])


def _per_write(frame: pd.DataFrame, decide: Callable[[pd.DataFrame], Sequence[bool]]) -> np.ndarray:
    """``decide`` of each row of ``frame``, asked once per distinct write (cell, counter, time)
    rather than once per row: a cell's thousands of records share one answer."""
    columns = [name for name in ("cell_id", "written_at", SEQ) if name in frame.columns]
    placing = frame[columns]
    groups = placing.groupby(columns, dropna=False, sort=False).ngroup().to_numpy()
    return np.asarray(decide(placing.drop_duplicates(columns)), dtype=bool)[groups]


def read_parts(
    folder: str | Path,
    read: Callable[[list[str]], _T],
    *,
    files: Sequence[str] | None = None,
    pattern: str = "part-*.parquet",
) -> _T | None:
    """``read`` of the :func:`live_parts` of ``folder`` (or of ``files``); None when there are none.

    Raises:
        TiersweepError: A file cannot be read (:func:`unreadable_part`). A file that is gone
            because a compaction or sweep deleted it as retired meanwhile is no error: the
            folder is listed again, once.
    """
    for attempt in (1, 2):
        listed = live_parts(folder, pattern) if files is None else list(files)
        if not listed:
            return None
        try:
            return read(listed)
        except (pa.ArrowException, OSError) as error:
            if files is None and attempt == 1 and not all(os.path.exists(f) for f in listed):
                continue
            raise unreadable_part(listed, error) from None
    raise AssertionError("unreachable")


def read_table(
    folder: str | Path,
    *,
    latest_only: bool = True,
    files: Sequence[str] | None = None,
    columns: Collection[str] | None = None,
) -> pa.Table:
    """All part files of ``folder`` (or just ``files``) as one table (schemas unified; missing
    columns null). By default the files are :func:`live_parts`.

    For ``runs``, ``latest_only`` keeps the newest row of each cell (:func:`write_order`).
    ``columns`` reads only those of them the folder has (Parquet reads columns apart: a large
    folder's few columns cost a fraction of the whole).
    """

    def read(files: list[str]) -> pa.Table:
        schema = pa.unify_schemas([pq.read_schema(f) for f in files], promote_options="permissive")
        names = None
        if columns is not None:
            wanted = set(columns) | ({"cell_id", "written_at", SEQ, "cell_index"} if latest_only else set())
            names = [name for name in schema.names if name in wanted]
        return ds.dataset(files, schema=schema, format="parquet").to_table(columns=names)

    table = read_parts(folder, read, files=files)
    if table is None:
        return pa.table({})
    if latest_only and "written_at" in table.column_names and table.num_rows:
        frame = _placing(table)
        keep = frame.iloc[write_order(frame)].drop_duplicates("cell_id", keep="last").index.to_numpy()
        table = table.take(pa.array(np.sort(keep)))
        table = table.sort_by("cell_index")
    return table


def read_jobs(root: str | Path, table: str = "jobs") -> pa.Table:
    """The per-job records of ``root/jobs`` (or the segments of ``root/segments``), only those
    of each cell's newest run."""
    rows = read_table(Path(root) / table, latest_only=False)
    if not rows.num_rows:
        return rows
    runs = read_table(Path(root) / "runs", columns=[])
    if not runs.num_rows:
        return rows.slice(0, 0)  # records that no stored run claims (a batch a full disk cut short)
    return rows.filter(pa.array(claimed_by(_placing(rows), runs.to_pandas())))


def compact(root: str | Path) -> tuple[int, int]:
    """Merge the part files of ``root/runs`` (newest row per cell), ``root/jobs`` and
    ``root/segments`` into one file each; return the number of files before and after.

    Holds the folder's lock (no sweep writes meanwhile) and, besides, merges and deletes only
    the files it listed at the start: a file that appears later is left as it is. The runs
    files are listed before the others, and a batch writes its runs file last, so every runs
    row listed has its per-job records among the files listed. Per-job records and segments
    are dropped only where a newer run of their cell supersedes them; records that no listed
    run claims (a batch still being written, or one a full disk interrupted) are kept.

    Atomic as readers see it, however it is stopped: see the module's description. It first
    deletes what an interrupted compaction retired, then merges only live files.
    """
    root = Path(root)
    if not (root / "runs").is_dir():
        raise TiersweepError(f"{root}: not a sweep's results folder (it has no runs/ folder)")
    with FolderLock(root, "compact"):
        for name in _TABLES:
            _remove_replaced(root / name)
        listed = {name: live_parts(root / name) for name in _TABLES}
        before = sum(len(files) for files in listed.values())
        runs = read_table(root / "runs", files=listed["runs"])
        latest = {}
        if runs.num_rows:
            frame = _placing(runs)
            latest = dict(zip(frame["cell_id"].tolist(), _order_keys(frame)))
        after = 0
        for name, files in listed.items():
            if len(files) <= 1:
                after += len(files)
                continue
            table = (
                runs
                if name == "runs"
                else _not_superseded(read_table(root / name, latest_only=False, files=files), latest)
            )
            names = [Path(f).name for f in files]
            _write_part(root / name, table, max(_seq_of(n) for n in names), replaces=names)
            _remove_replaced(root / name)
            after += 1
        return before, after


def _not_superseded(rows: pa.Table, latest: dict[str, tuple[int, Any]]) -> pa.Table:
    """The per-job rows (or segments) not superseded by a newer run of their cell (``latest``:
    cell_id -> :func:`_order_keys` of its newest stored run)."""
    if not rows.num_rows:
        return rows

    def newest(writes: pd.DataFrame) -> list[bool]:
        cells = writes["cell_id"].tolist()
        return [cell not in latest or key >= latest[cell] for cell, key in zip(cells, _order_keys(writes))]

    return rows.filter(pa.array(_per_write(_placing(rows), newest)))
