"""From SWF records to jobs: the size, validity, order, overrun and estimate rules.

Every rule that drops or changes a job is counted in a :class:`WorkloadReport`, never silent.
Traces and (later) synthetic models both go through :func:`jobs_from_records`.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from ..collector import collector_paused
from ..jobs import Job
from .swf import SWF_FIELDS

__all__ = ["WorkloadReport", "jobs_from_records", "parse_estimate", "ESTIMATE_CHOICES"]

_COL = {name: i for i, name in enumerate(SWF_FIELDS)}

#: The forms the ``estimate`` rule takes.
ESTIMATE_CHOICES = ("requested", "exact", "factor:<f>")


@dataclass
class WorkloadReport:
    """What the workload rules did.

    Attributes:
        records: Job lines read.
        malformed_skipped: Malformed lines skipped (``lenient: true`` only).
        dropped_invalid: Jobs dropped for size <= 0, runtime < 0 or no submit time.
        dropped_too_large: Jobs dropped for needing more processors than the platform has.
        truncated: Valid jobs left out by the ``jobs`` limit.
        reordered: Jobs found out of submit-time order (the workload is stably sorted).
        size_fallback: Jobs whose size came from the other processor field because the chosen
            one was -1.
        overrun_killed: Jobs stopped at their requested time (``overrun: kill``).
        overrun_extended: Jobs allowed past their requested time (``overrun: extend``).
        missing_requested_time: Jobs with no requested time (-1 or 0 in the trace).
        estimate_from_runtime: Jobs whose estimate is their runtime because the ``requested``
            estimate was missing.
        no_user_id: Jobs with no user id (SWF field 12 is -1, negative or not a whole number;
            every job of a synthetic model). Runtime predictions from a user's history
            (``policy.prediction: last2``) fall back to the request for them.
    """

    records: int = 0
    malformed_skipped: int = 0
    dropped_invalid: int = 0
    dropped_too_large: int = 0
    truncated: int = 0
    reordered: int = 0
    size_fallback: int = 0
    overrun_killed: int = 0
    overrun_extended: int = 0
    missing_requested_time: int = 0
    estimate_from_runtime: int = 0
    no_user_id: int = 0

    @property
    def dropped(self) -> int:
        """Jobs not simulated because of a rule (malformed, invalid or too large)."""
        return self.malformed_skipped + self.dropped_invalid + self.dropped_too_large

    def as_dict(self) -> dict[str, int]:
        """The counts, plus the ``dropped`` total."""
        return {**asdict(self), "dropped": self.dropped}


def parse_estimate(rule: str) -> tuple[str, float]:
    """Split an estimate rule into its kind and factor; raise ValueError if it is none of
    ``requested``, ``exact`` or ``factor:<f>`` with ``f > 0``."""
    if rule in ("requested", "exact"):
        return rule, 1.0
    if isinstance(rule, str) and rule.startswith("factor:"):
        try:
            factor = float(rule[len("factor:") :])
        except ValueError:
            factor = math.nan
        if factor > 0 and math.isfinite(factor):
            return "factor", factor
    raise ValueError(f"expected one of {', '.join(ESTIMATE_CHOICES)} (f > 0), got {rule!r}")


def jobs_from_records(
    records: np.ndarray,
    *,
    capacity: int,
    jobs: int | None = None,
    size_field: str = "requested",
    overrun: str = "kill",
    estimate: str = "requested",
    report: WorkloadReport | None = None,
) -> tuple[list[Job], WorkloadReport]:
    """Turn an ``(n, 18)`` SWF table into the jobs a run simulates.

    Steps, in order: job size from ``size_field`` (``requested``: field 8, else field 5 when
    it is -1; ``allocated``: the reverse); drop jobs with size <= 0, runtime < 0 or submit
    time < 0 (runtime 0 is kept); drop jobs larger than ``capacity``; keep the first ``jobs``
    survivors in file order; stably sort by submit time; apply the ``overrun`` rule (``kill``:
    runtime = min(runtime, requested time); ``extend``: full runtime); set estimates
    (``requested``, falling back to the runtime when the trace has no request; ``exact``; or
    ``factor:<f>`` x runtime); read the user ids (field 12; -1 where there is none).

    Returns:
        The jobs, indexed in queue order, and the report of what each rule did.
    """
    report = report or WorkloadReport()
    kind, factor = parse_estimate(estimate)
    if size_field not in ("requested", "allocated"):
        raise ValueError(f"size_field: expected requested or allocated, got {size_field!r}")
    if overrun not in ("kill", "extend"):
        raise ValueError(f"overrun: expected kill or extend, got {overrun!r}")
    records = np.asarray(records, dtype=np.float64).reshape(-1, len(SWF_FIELDS))
    report.records += len(records)

    primary, secondary = _COL["requested_processors"], _COL["allocated_processors"]
    if size_field == "allocated":
        primary, secondary = secondary, primary
    size = records[:, primary].copy()
    fallback = size == -1
    size[fallback] = records[fallback, secondary]
    report.size_fallback += int(np.count_nonzero(fallback & (size > 0)))
    submit = records[:, _COL["submit_time"]]
    runtime = records[:, _COL["run_time"]]

    valid = (size > 0) & (runtime >= 0) & (submit >= 0)
    report.dropped_invalid += int(np.count_nonzero(~valid))
    fits = size <= capacity
    report.dropped_too_large += int(np.count_nonzero(valid & ~fits))
    keep = np.flatnonzero(valid & fits)
    if jobs is not None and len(keep) > jobs:
        report.truncated += len(keep) - jobs
        keep = keep[:jobs]
    table = records[keep]
    size = size[keep]

    submit = table[:, _COL["submit_time"]]
    if len(submit) > 1:
        report.reordered += int(np.count_nonzero(submit < np.maximum.accumulate(submit)))
    order = np.argsort(submit, kind="stable")
    table, size = table[order], size[order]

    submit = table[:, _COL["submit_time"]]
    runtime = table[:, _COL["run_time"]].copy()
    requested = table[:, _COL["requested_time"]].copy()
    missing = requested <= 0
    requested[missing] = np.nan
    report.missing_requested_time += int(np.count_nonzero(missing))
    over = runtime > requested  # False where requested is nan
    if overrun == "kill":
        runtime[over] = requested[over]
        report.overrun_killed += int(np.count_nonzero(over))
    else:
        report.overrun_extended += int(np.count_nonzero(over))

    if kind == "requested":
        estimates = np.where(missing, runtime, requested)
        report.estimate_from_runtime += int(np.count_nonzero(missing))
    elif kind == "exact":
        estimates = runtime
    else:
        estimates = runtime * factor

    users, no_user = _user_ids(table[:, _COL["user_id"]])
    report.no_user_id += no_user

    ids = table[:, _COL["job_number"]].astype(np.int64).tolist()
    with collector_paused():  # one Job per row, none of them garbage: see collector_paused
        built = Job.from_columns(
            ids,
            submit.tolist(),
            size.astype(np.int64).tolist(),
            runtime.tolist(),
            requested.tolist(),
            estimates.tolist(),
            users,
        )
    return built, report


def _user_ids(column: np.ndarray) -> tuple[list[int], int]:
    """The user ids of an SWF column as Python ints (-1 where a job has none: -1, negative, not
    a whole number or too large to be exact), and how many jobs have none.

    A log has a few hundred users over up to hundreds of thousands of jobs: the ints are shared,
    one object per user, rather than one per job as ``tolist`` would make them (8 MB on a log
    of 300,000 jobs).
    """
    column = np.ascontiguousarray(column)
    valid = (column >= 0) & (column < 2.0**53) & (column == np.floor(column))
    none = len(column) - int(np.count_nonzero(valid))
    if none == len(column):  # no user ids at all (every synthetic model)
        return [-1] * len(column), none
    codes = np.where(valid, column, -1.0).astype(np.int64)
    top = int(codes.max())
    if top <= 4 * len(codes) + 1024:  # ids numbered from 1, as the archive's logs are
        shared = np.array(range(-1, top + 1), dtype=object)
        return shared[codes + 1].tolist(), none
    distinct, inverse = np.unique(codes, return_inverse=True)
    return np.array(distinct.tolist(), dtype=object)[inverse].tolist(), none
