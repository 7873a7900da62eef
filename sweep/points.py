"""Which columns of a runs table identify a point: the one place that decides what may be
averaged over seeds.

A point is one set of inputs run under several seeds. Its inputs are the spec columns
(``workload.*``, ``platform.*``, ``policy.*``), the content digest of its trace
(``trace_digest``: a log regenerated at the same path is another input) and the simulator that
ran it (``code_digest``, ``model_version``). A folder can hold rows that agree on the columns a
reader groups by and differ in another input: a config run again after its trace changed, two
configs under one ``name:``, one config with different ``--set`` values. Such rows are
different points, never more seeds of one: :func:`point_columns` adds every input column that
differs within a group to the grouping, and :func:`check_points` refuses a grouping that would
average them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..core.errors import TiersweepError
from ..core.spec import SPEC_SECTIONS

__all__ = ["INPUT_COLUMNS", "input_columns", "point_columns", "check_points", "repeated_seeds", "MixedPointsError"]

#: Stored columns besides the spec that make two runs different inputs (the trace's content,
#: the simulator's source and semantics), in the order they are added to a grouping.
INPUT_COLUMNS = ("trace_digest", "code_digest", "model_version")
_SEED = "seed"


class MixedPointsError(TiersweepError, ValueError):
    """Rows of different inputs would be averaged as seeds of one point."""


def input_columns(columns: Sequence[str]) -> list[str]:
    """The columns among ``columns`` that describe a run's inputs: spec columns (in the given
    order), then those of :data:`INPUT_COLUMNS` present."""
    spec = [c for c in columns if "." in c and c.split(".")[0] in SPEC_SECTIONS]
    return [*spec, *(c for c in INPUT_COLUMNS if c in columns)]


def _as_text(frame: Any, columns: Sequence[str]) -> Any:
    """``columns`` of ``frame`` as text, so that lists, mixed types and missing values group
    (each column converted once: a large folder's inputs are read many times below)."""
    return frame[list(dict.fromkeys(columns))].apply(lambda column: column.map(str))


def _varying(frame: Any, columns: Sequence[str]) -> list[str]:
    """The ``columns`` that take more than one value in ``frame`` (only these can differ
    within a group; most spec columns are the same in every row)."""
    out = []
    for column in columns:
        try:
            count = frame[column].nunique(dropna=False)
        except TypeError:  # unhashable values (lists)
            count = frame[column].map(str).nunique()
        if count > 1:
            out.append(column)
    return out


def _differs(text: Any, groups: Any, column: str) -> bool:
    """Whether ``column`` of the text frame takes more than one value in one of ``groups``
    (each row's group number)."""
    pairs = pd.DataFrame({"group": groups, "value": text[column].to_numpy()}).drop_duplicates()
    return bool(pairs["group"].duplicated().any())


def _groups(text: Any, keys: Sequence[str]) -> Any:
    """Each row's group number under ``keys`` (all rows one group without keys)."""
    return text.groupby(list(keys), sort=False).ngroup().to_numpy() if keys else np.zeros(len(text), dtype=int)


def _differing(text: Any, keys: Sequence[str], column: str) -> tuple[dict[str, str], list[str]]:
    """The first group of ``keys`` (in sorted order) in which ``column`` of the text frame
    takes more than one value: the group's key values and the column's values there."""
    groups = text.groupby(list(keys), sort=True)[column] if keys else [((), text[column])]
    for key, values in groups:
        distinct = sorted(set(values))
        if len(distinct) > 1:
            key = key if isinstance(key, tuple) else (key,)
            return dict(zip(keys, key)), distinct
    raise AssertionError(f"{column} takes one value in every group of {keys}")


def point_columns(frame: Any, keys: Sequence[str]) -> list[str]:
    """``keys``, then every input column (:func:`input_columns`) that differs between rows
    that the keys so far would group together: the columns that identify a point of
    ``frame``. A column that only repeats a distinction already made (the digest of a trace
    whose path differs anyway) is not added."""
    keys = list(keys)
    if frame.empty:
        return keys
    inputs = _varying(frame, [c for c in input_columns(list(frame.columns)) if c not in keys and c != _SEED])
    text = _as_text(frame, [*keys, *inputs])
    groups = _groups(text, keys)
    for column in inputs:
        if _differs(text, groups, column):
            keys.append(column)
            groups = _groups(text, keys)
    return keys


def _shown(value: str, column: str) -> str:
    return value[:12] if column in ("trace_digest", "code_digest") else value


def _where(group: dict[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in group.items()) or "all rows"


def check_points(frame: Any, by: Sequence[str], what: str = "summary") -> None:
    """Refuse to group ``frame`` by ``by`` when a group holds rows of different inputs.

    Raises:
        MixedPointsError: The first such group and input column, with its values and what to do.
    """
    if frame.empty:
        return
    inputs = _varying(frame, [c for c in input_columns(list(frame.columns)) if c not in by and c != _SEED])
    if not inputs:
        return
    text = _as_text(frame, [*by, *inputs])
    groups = _groups(text, by)
    for column in inputs:
        if _differs(text, groups, column):
            group, values = _differing(text, list(by), column)
            shown = ", ".join(_shown(v, column) for v in values[:6]) + (", ..." if len(values) > 6 else "")
            raise MixedPointsError(
                f"{what}: several rows of {_where(group)} differ in {column} ({shown}): they are different "
                f"runs, not more seeds of one; add it to by= (point_columns(runs, by) gives every such "
                f"column) or keep one value first"
            )


def repeated_seeds(frame: Any, keys: Sequence[str]) -> tuple[dict[str, str], str, list[str]] | None:
    """A group of ``keys`` in which one seed has more than one stored cell, which no stored
    column tells apart: its key values, the seed, and the cell ids (None when there is none)."""
    if frame.empty or _SEED not in frame.columns or "cell_id" not in frame.columns:
        return None
    text = _as_text(frame, [*keys, _SEED, "cell_id"])
    counts = text.groupby([*keys, _SEED], sort=True)["cell_id"].agg(lambda ids: sorted(set(ids)))
    for key, ids in counts.items():
        if len(ids) > 1:
            key = key if isinstance(key, tuple) else (key,)
            return dict(zip(keys, key[:-1])), key[-1], ids
    return None
