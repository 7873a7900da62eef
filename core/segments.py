"""The segment record: one stay of a job on its VMs, the data of Gantt charts.

The engine records one :class:`Segment` per stay (with ``record_segments``), :func:`segment_columns`
turns them into the columns a run returns, and the result store's ``segments`` table has
these fields, in this order, with the types of their annotations.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

__all__ = ["Segment", "SEGMENT_FIELDS", "segment_columns"]


class Segment(NamedTuple):
    """One stay of a job on its VMs.

    Attributes:
        job_id: The job.
        tier: The tier of its VMs.
        start_time: When the stay began.
        end_time: When it ended.
        nodes: The nodes (or units) it held.
        end: How it ended: ``finish``, ``suspend``, ``kill`` or ``move``.
    """

    job_id: int
    tier: int
    start_time: float
    end_time: float
    nodes: tuple[int, ...]
    end: str


#: The fields of a segment, in column order.
SEGMENT_FIELDS: tuple[str, ...] = Segment._fields


def segment_columns(segments: Sequence[Segment]) -> dict[str, list]:
    """``segments`` as one list per field (:data:`SEGMENT_FIELDS`), in recording order."""
    return {name: [row[i] for row in segments] for i, name in enumerate(SEGMENT_FIELDS)}
