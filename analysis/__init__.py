"""Analysis of sweep results: loading, summary tables, plots (built on the sweep store)."""
