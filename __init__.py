"""tiersweep: simulate, sweep and tune parallel-job scheduling on consolidated, virtualised clusters.

Subpackages (dependencies point one way, ``analysis -> sweep -> core``; :mod:`tiersweep.cli`
joins them):

* :mod:`tiersweep.core`: the deterministic simulator of one run (numpy and the standard library).
* :mod:`tiersweep.sweep`: grids of runs on Ray, the Parquet store, Optuna tuning.
* :mod:`tiersweep.analysis`: loading results, intervals, figures, the HTML report.

In the source tree these are the top-level folders ``core/``, ``sweep/`` and ``analysis/``;
``pyproject.toml`` maps them under this package, which is the wheel's only top-level name.
"""

__all__ = ["__version__"]


def __getattr__(name: str) -> str:
    # Looked up lazily: importlib.metadata costs start-up time that a run does not need.
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("tiersweep")
        except PackageNotFoundError:  # imported from an uninstalled source tree
            return "0+unknown"
    raise AttributeError(f"module 'tiersweep' has no attribute {name!r}")
