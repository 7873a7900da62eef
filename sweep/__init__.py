"""The platform around the simulator: the ``tiersweep`` command line, benchmarks, and (to
come) parameter sweeps on Ray, the Parquet result store and Optuna tuning."""
