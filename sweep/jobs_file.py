"""Writing per-job records to CSV or Parquet."""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from ..core.safe_files import atomic_writer
from .paths import output_file

__all__ = ["write_job_records", "JOB_FILE_SUFFIXES"]

#: The file name endings of per-job records, one per format.
JOB_FILE_SUFFIXES = (".csv", ".parquet")


def write_job_records(records: Mapping[str, np.ndarray], path: str | Path) -> None:
    """Write one row per job to ``path``: ``.csv`` (standard library) or ``.parquet`` (pyarrow).

    Unknown values (nan) are written as empty CSV cells or Parquet nulls. The file is written
    under a temporary name and renamed into place (a symbolic link at ``path`` is refused).
    """
    path = output_file(path, "--jobs-out", JOB_FILE_SUFFIXES)
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.table({name: pa.array(values, from_pandas=True) for name, values in records.items()})
        with atomic_writer(path) as handle:
            pq.write_table(table, handle)
    else:
        columns = list(records)
        rows = zip(*(records[c].tolist() for c in columns))
        with atomic_writer(path, "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(columns)
            for row in rows:
                writer.writerow(["" if isinstance(v, float) and math.isnan(v) else _compact(v) for v in row])


def _compact(value: object) -> object:
    # 600.0 -> 600, so that times read as the trace's integers where they are integral.
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value
