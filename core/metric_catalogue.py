"""The metric catalogue: every per-run metric and per-job column a run produces, described once.

Each :class:`Metric` says what a metric is called, its stored type, how a table or an axis
names it (unit included), whether the sweep summary, the report and a run's table show it, whether it is a
per-run metric or a per-job column, and which code computes it. The result store's schema,
the sweep's closing summary, the report's tables and figures and the plots' axis labels all
read this catalogue; the computations live where the data is (:mod:`.metrics` for most,
:func:`~tiersweep.core.simulate.simulate`, the workload rules and the platforms for the rest).

Adding a metric is one entry here and its computation: a per-run metric from
:func:`~.metrics.run_metrics` (source :data:`METRICS`) or a per-job column from
:func:`~.metrics.job_records` is then stored, typed, labelled and shown as its entry says.

A name may be a family: ``{t}`` stands for a tier number (one metric per tier of the
platform), ``*`` for any key (the workload rules' counts). A platform's own metrics (its
``EXTRA_METRICS`` and ``EXTRA_JOB_COLUMNS``) need an entry only to be labelled, shown, or
stored as other than a float.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

__all__ = [
    "Metric",
    "CATALOGUE",
    "RUN",
    "JOB",
    "METRICS",
    "SIMULATE",
    "WORKLOAD",
    "STAT_COLUMNS",
    "SUMMARY_METRICS",
    "REPORT_METRICS",
    "TABLE_METRICS",
    "METRIC_LABELS",
    "entry",
    "dtype_of",
    "label_of",
    "is_fraction",
    "metric_names",
    "job_columns",
    "run_columns",
]

#: Scopes: one value per run, or one column with a value per job.
RUN, JOB = "run", "job"
#: Sources: :mod:`.metrics` (``run_metrics`` and ``job_records``), ``simulate`` itself, and
#: the workload rules' report (``report.*``). A platform's metrics name the platform's kind.
METRICS, SIMULATE, WORKLOAD = "metrics", "simulate", "workload"
#: The stored types a metric may have (numpy names; the store maps them to Arrow).
DTYPES = ("int64", "float64")


@dataclass(frozen=True, slots=True)
class Metric:
    """One metric or per-job column.

    Attributes:
        name: The column name; ``{t}`` in it stands for each tier, ``*`` for any key.
        scope: :data:`RUN` (one value per run) or :data:`JOB` (one value per job).
        dtype: ``int64`` or ``float64``: its type in the result store.
        label: How a table header or an axis names it, unit included ("" for the name itself).
        summary: Its place among the columns of the sweep's closing summary (1 first; 0: not
            shown). The report's summary table starts with the same columns.
        report: Its place among the metrics the report draws against each grid axis and adds
            to its table when they vary (1 first; 0: not drawn).
        table: Its place among the rows of the table ``tiersweep run`` prints (1 first; 0: shown
            only where that table says, such as the kills of a run that killed jobs).
        fraction: Whether its values are bounded in [0, 1] (a share of time, capacity or
            jobs): its intervals over seeds are then taken on the logit scale. The bound cannot
            be read from the data (a mean wait of 0.4 s is no fraction), hence declared.
        source: What computes it: :data:`METRICS`, :data:`SIMULATE`, :data:`WORKLOAD` or a
            platform's kind (one of its ``EXTRA_METRICS``).
    """

    name: str
    scope: str
    dtype: str = "float64"
    label: str = ""
    summary: int = 0
    report: int = 0
    table: int = 0
    fraction: bool = False
    source: str = METRICS

    def __post_init__(self) -> None:
        if self.scope not in (RUN, JOB):
            raise ValueError(f"metric {self.name}: scope {self.scope!r}, expected {RUN!r} or {JOB!r}")
        if self.dtype not in DTYPES:
            raise ValueError(f"metric {self.name}: dtype {self.dtype!r}, expected one of {', '.join(DTYPES)}")

    @property
    def per_tier(self) -> bool:
        """Whether the entry stands for one metric per tier (``{t}`` in its name)."""
        return "{t}" in self.name

    def names(self, tiers: int) -> list[str]:
        """The column names of this entry on a platform with ``tiers`` tiers."""
        return [self.name.format(t=t) for t in range(tiers)] if self.per_tier else [self.name]


#: The per-job columns of which :func:`~.metrics.run_metrics` gives the mean, median and 90th
#: percentile (``mean_wait``, ``median_wait``, ``p90_wait``, ...), with their label and unit.
STAT_COLUMNS = {
    "wait": ("wait", "s"),
    "response": ("response time", "s"),
    "bsld": ("bounded slowdown", ""),
    "xf": ("expansion factor", ""),
}
_STAT_KINDS = {"mean": "mean", "median": "median", "p90": "90th-percentile"}


def _label(text: str, unit: str) -> str:
    return f"{text} ({unit})" if unit else text


def _statistics() -> list[Metric]:
    """mean/median/p90 of each :data:`STAT_COLUMNS` column, column by column."""
    shown = {  # summary, report, table places
        "mean_wait": (1, 0, 3),
        "median_wait": (0, 0, 4),
        "p90_wait": (0, 0, 5),
        "mean_response": (0, 1, 6),
        "mean_bsld": (2, 2, 7),
        "median_bsld": (0, 0, 8),
        "p90_bsld": (0, 0, 9),
        "mean_xf": (0, 0, 10),
        "median_xf": (0, 6, 0),
        "p90_xf": (0, 7, 0),
    }
    entries = []
    for column, (text, unit) in STAT_COLUMNS.items():
        for kind, words in _STAT_KINDS.items():
            name = f"{kind}_{column}"
            summary, report, table = shown.get(name, (0, 0, 0))
            label = _label(f"{words} {text}", unit)
            entries.append(Metric(name, RUN, label=label, summary=summary, report=report, table=table))
    return entries


#: Every catalogued metric, per-job columns first (in the order of their columns).
CATALOGUE: tuple[Metric, ...] = (
    # Per-job records (job_records), in their column order.
    Metric("job_id", JOB, "int64", "job id"),
    Metric("submit_time", JOB, label="submit time (s)"),
    Metric("start_time", JOB, label="first start time (s)"),
    Metric("finish_time", JOB, label="finish time (s)"),
    Metric("size", JOB, "int64", "size (processes)"),
    Metric("runtime", JOB, label="runtime (s)"),
    Metric("requested_time", JOB, label="requested time (s)"),
    Metric("estimate", JOB, label="runtime estimate (s)"),
    Metric("wait", JOB, label="wait (s)"),
    Metric("response", JOB, label="response time (s)"),
    Metric("bsld", JOB, label="bounded slowdown"),
    Metric("xf", JOB, label="expansion factor"),
    Metric("migrations", JOB, "int64", "migrations"),
    Metric("kills", JOB, "int64", "kills"),
    Metric("cpu_mean", JOB, label="mean CPU usage"),
    Metric("tier{t}_duration", JOB, label="seconds held in tier {t} (s)"),
    # Per-run metrics (run_metrics).
    Metric("jobs", RUN, "int64", "jobs", table=1),
    *_statistics(),
    Metric("p95_wait", RUN, label="95th-percentile wait (s)"),
    Metric("migrations_per_job", RUN, label="migrations per job", summary=4, report=3, table=11),
    Metric("kills_per_job", RUN, label="kills per job"),
    Metric("lost_work", RUN, label="work lost to kills (CPU-s)"),
    Metric("utilization", RUN, label="utilisation", summary=3, report=4, table=12, fraction=True),
    Metric("makespan", RUN, label="makespan (s)", table=13),
    Metric("span_start_time", RUN, label="first submission (s)"),
    Metric("accept_rate", RUN, label="accept rate", report=5, fraction=True),
    Metric("tier{t}_share", RUN, label="share of VM-seconds in tier {t}", fraction=True),
    # What simulate adds, and the workload rules' counts.
    Metric("dropped", RUN, "int64", "jobs dropped", table=2, source=SIMULATE),
    Metric("offered_load", RUN, label="offered load (measured)", source=SIMULATE),
    Metric("load_scale", RUN, label="load scale", source=SIMULATE),
    Metric("report.*", RUN, "int64", source=WORKLOAD),
    # Platforms' own metrics that are shown, or fractions.
    Metric("efficiency", RUN, label="efficiency", report=8, fraction=True, source="shared_vms"),
    Metric("occupancy", RUN, label="occupancy", fraction=True, source="shared_vms"),
    Metric("util_at_occ_*", RUN, fraction=True, source="shared_vms"),
    Metric("time_at_occ_*", RUN, fraction=True, source="shared_vms"),
)


def _pattern(name: str) -> re.Pattern[str]:
    return re.compile(re.escape(name).replace(re.escape("{t}"), r"\d+").replace(re.escape("*"), r".+") + r"\Z")


_EXACT = {m.name: m for m in CATALOGUE if not m.per_tier and "*" not in m.name}
_FAMILIES = [(_pattern(m.name), m) for m in CATALOGUE if m.per_tier or "*" in m.name]


@lru_cache(maxsize=4096)
def entry(name: str) -> Metric | None:
    """The catalogue entry of the column ``name`` (a family's for ``tier1_share``), or None."""
    found = _EXACT.get(name)
    if found is not None:
        return found
    return next((metric for pattern, metric in _FAMILIES if pattern.match(name)), None)


def dtype_of(name: str) -> str:
    """The stored type of column ``name``: its entry's, ``float64`` for an uncatalogued one."""
    found = entry(name)
    return found.dtype if found is not None else "float64"


def is_fraction(name: str) -> bool:
    """Whether column ``name`` is catalogued as bounded in [0, 1]."""
    found = entry(name)
    return found is not None and found.fraction


def label_of(name: str) -> str:
    """How a table or an axis names column ``name`` (the name itself when it has no label)."""
    found = entry(name)
    if found is None or not found.label:
        return name
    tier = re.search(r"\d+", name) if found.per_tier else None
    return found.label.format(t=tier.group()) if tier else found.label


def _shown(key: str) -> tuple[str, ...]:
    places = sorted((getattr(m, key), m.name) for m in CATALOGUE if getattr(m, key))
    return tuple(name for _, name in places)


#: The sweep summary's metrics, in its column order.
SUMMARY_METRICS: tuple[str, ...] = _shown("summary")
#: The metrics the report draws (when the data has them and they vary), in its order.
REPORT_METRICS: tuple[str, ...] = _shown("report")
#: The rows of the table ``tiersweep run`` prints, in its order.
TABLE_METRICS: tuple[str, ...] = _shown("table")
#: Labels of the catalogued metrics with fixed names.
METRIC_LABELS: dict[str, str] = {name: m.label for name, m in _EXACT.items() if m.label}


def _names(metrics: Iterable[Metric], tiers: int) -> list[str]:
    return [name for m in metrics for name in m.names(tiers)]


def job_columns(tiers: int) -> list[str]:
    """The columns :func:`~.metrics.job_records` returns on a platform with ``tiers`` tiers."""
    return _names((m for m in CATALOGUE if m.scope == JOB and m.source == METRICS), tiers)


def metric_names(tiers: int) -> list[str]:
    """The keys :func:`~.metrics.run_metrics` returns on a platform with ``tiers`` tiers."""
    return _names((m for m in CATALOGUE if m.scope == RUN and m.source == METRICS), tiers)


def run_columns(tiers: int) -> list[str]:
    """Every per-run column each run has on a platform with ``tiers`` tiers: the metrics,
    what simulate adds and the workload rules' counts (``report.<key>``); a platform's own
    come on top."""
    from .workloads.rules import WorkloadReport  # (the rules module imports the workloads package)

    names = metric_names(tiers)
    names += _names((m for m in CATALOGUE if m.scope == RUN and m.source == SIMULATE), tiers)
    return names + [f"report.{key}" for key in WorkloadReport().as_dict()]
