"""Analysis of sweep results: loading, summary tables with confidence intervals, comparisons,
plots and the HTML report.

>>> from tiersweep.analysis import load, summary, compare
>>> runs = load("results/quickstart")
>>> summary(runs, by=point_columns(runs, ["policy.name", "workload.load"]), metrics=["mean_bsld"])
"""

from .load import MixedCodeWarning, NoResultsError, find_results, load
from .stats import MixedPointsError, compare, point_columns, summary, t_interval

__all__ = [
    "load",
    "find_results",
    "summary",
    "compare",
    "point_columns",
    "t_interval",
    "MixedCodeWarning",
    "MixedPointsError",
    "NoResultsError",
]
