"""tiersweep.sweep: runs fanned out over grids of specs, and what keeps their results.

Sweep configs and cells (content-addressed specs), the Ray, process and serial backends, the
Parquet store with resume, the run/sweep/workload/bench commands and Optuna tuning. It imports
``tiersweep.core`` and never ``tiersweep.analysis`` (the command line joins the two).
"""
