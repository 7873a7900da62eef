"""``tiersweep bench``: how fast the simulator is, on real logs, reproducibly.

For each log and policy it times, best of ``repeat`` runs, the workload load (SWF parse,
workload rules, CPU annotation) and the simulation proper, and prints jobs simulated per
second. Then the consolidation case that every sweep leans on: AMCBF (and CMCBF) on 320 nodes
with two tiers over the first 20,000 jobs of CTC-SP2. Last, ``tiersweep run`` of EASY on the
KTH-SP2 log as a whole process, interpreter start included.

``tiersweep bench --sweep`` times sweeps on the backends instead, each against the serial
backend measured in the same run: a 60-cell sweep of cells of about a second, and 200 tiny
cells, whose wall time per cell is the backend's per-cell overhead.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ..core.compiled_path import path_line
from ..core.engine import ENGINE_PARAMS, Engine
from ..core.errors import TiersweepError
from ..core.platforms import Nodes
from ..core.policies import make_policy
from ..core.workloads.cpu import annotate_cpu
from ..core.workloads.rules import jobs_from_records
from ..core.workloads.swf import header_int, read_swf

__all__ = ["BENCH_TRACES", "bench_command", "sweep_bench_command", "tiny_bench_config", "SWEEP_BENCH_CONFIG"]

#: The sweep benchmark: 60 cells of about a second each (Ray's start and stop, ~5-8 s, are
#: part of the measured time).
SWEEP_BENCH_CONFIG = {
    "name": "bench",
    "base": {"workload": {"model": "feitelson96", "jobs": 10000}, "platform": {"tiers": 2}},
    "grid": {"policy.name": ["amcbf", "cmcbf"], "workload.load": [0.5, 0.6, 0.7, 0.8, 0.9]},
    "seeds": 6,
}

#: The tiny-cell sweep (:func:`tiny_bench_config`): cells, jobs per cell, jobs of its trace.
TINY_CELLS = 200
TINY_JOBS = 50
TINY_TRACE_JOBS = 28_000

#: The logs benchmarked, smallest first.
BENCH_TRACES = (
    "KTH-SP2-1996-2.1-cln.swf.gz",
    "CTC-SP2-1996-3.1-cln.swf.gz",
    "HPC2N-2002-2.2-cln.swf.gz",
)
BENCH_POLICIES = ("fcfs", "easy")
#: The consolidation case: (log, jobs, nodes, tiers).
CONSOLIDATION_CASE = ("CTC-SP2-1996-3.1-cln.swf.gz", 20_000, 320, 2)
CONSOLIDATION_POLICIES = ("amcbf", "cmcbf")


def _time_in_process(
    path: Path, policy: str, *, jobs: int | None = None, nodes: int | None = None, tiers: int = 1
) -> tuple[int, float, float]:
    started = time.perf_counter()
    log = read_swf(path)
    nodes = nodes or header_int(log.header, "MaxProcs", "MaxNodes")
    workload, _ = jobs_from_records(log.records, capacity=nodes, jobs=jobs)
    annotate_cpu(workload, seed=1)
    loaded = time.perf_counter()
    policy_object = make_policy(policy)
    engine_keys = {key: param.default for key, param in ENGINE_PARAMS.items()}  # as a spec that gives none
    Engine(workload, Nodes(nodes, tiers, seed=1), policy_object, **engine_keys).run()
    return len(workload), loaded - started, time.perf_counter() - loaded


def _time_whole_process(path: Path) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "bench.yaml"
        spec.write_text(f"workload: {{trace: '{path}'}}\npolicy: {{name: easy}}\n", encoding="utf-8")
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "tiersweep", "run", str(spec), "--json"],
            check=True,
            stdout=subprocess.DEVNULL,
            env={**os.environ, "PYTHONDONTWRITEBYTECODE": "0"},
        )
        return time.perf_counter() - started


def bench_command(traces: str, repeat: int, quick: bool) -> int:
    """Print the benchmark table; return the exit status."""
    folder = Path(traces)
    names = BENCH_TRACES[:1] if quick else BENCH_TRACES
    missing = [n for n in names if not (folder / n).exists()]
    if missing:
        raise TiersweepError(f"--traces {folder}: missing {', '.join(missing)} (the Parallel Workloads Archive logs)")
    from .scale_bench import machine_description

    print(f"best of {repeat} runs; machine: {machine_description()}")
    print(f"{path_line()}\n")
    print(f"{'log':<30} {'policy':<7} {'jobs':>8} {'load s':>8} {'simulate s':>11} {'jobs/s':>10}")
    for name in names:
        for policy in BENCH_POLICIES:
            timings = [_time_in_process(folder / name, policy) for _ in range(repeat)]
            jobs = timings[0][0]
            load = min(t[1] for t in timings)
            sim = min(t[2] for t in timings)
            print(
                f"{name.removesuffix('.swf.gz'):<30} {policy:<7} {jobs:>8,} {load:>8.3f} "
                f"{sim:>11.3f} {jobs / sim:>10,.0f}"
            )
    name, count, nodes, tiers = CONSOLIDATION_CASE
    if not quick:
        print(f"\nconsolidation: first {count:,} jobs of {name.removesuffix('.swf.gz')}, {nodes} nodes, {tiers} tiers")
        for policy in CONSOLIDATION_POLICIES:
            timings = [
                _time_in_process(folder / name, policy, jobs=count, nodes=nodes, tiers=tiers) for _ in range(repeat)
            ]
            jobs, load, sim = timings[0][0], min(t[1] for t in timings), min(t[2] for t in timings)
            print(f"{'':<30} {policy:<7} {jobs:>8,} {load:>8.3f} {sim:>11.3f} {jobs / sim:>10,.0f}")
    whole = min(_time_whole_process(folder / BENCH_TRACES[0]) for _ in range(repeat))
    print(f"\n`tiersweep run` of easy on {BENCH_TRACES[0].removesuffix('.swf.gz')}, whole process: {whole:.3f} s")
    return 0


def _sweep_timings(config: Any, backend: str) -> dict[str, float]:
    """Run ``config`` on ``backend`` into a fresh store; its timings."""
    from .driver import run_sweep
    from .store import read_table

    with tempfile.TemporaryDirectory() as out:
        outcome = run_sweep(config, out, backend=backend, progress=False)
        cell_seconds = sum(read_table(outcome.store / "runs").column("wall_seconds").to_pylist())
    startup = outcome.extra["startup_seconds"]
    return {
        "cells": outcome.computed,
        "wall": outcome.elapsed_seconds,
        "cell": cell_seconds,
        "startup": startup,
        # Wall time per cell once the backend is up (its start and stop are reported apart).
        "per_cell_ms": 1000 * (outcome.elapsed_seconds - startup) / max(outcome.computed, 1),
        "driver_ms": outcome.overhead_per_cell_ms,
    }


def tiny_bench_config(folder: str | Path) -> dict[str, Any]:
    """The tiny-cell sweep: :data:`TINY_CELLS` cells of the first :data:`TINY_JOBS` jobs of a
    generated trace as long as the KTH-SP2 log (written to ``folder``), where reading the trace
    and dispatching the cell are most of a cell's cost."""
    from ..core.spec import validate_spec
    from ..core.workloads.build import model_records
    from ..core.workloads.swf import write_swf

    workload = validate_spec({"workload": {"model": "feitelson96", "jobs": TINY_TRACE_JOBS}})["workload"]
    records, header, _ = model_records(workload, seed=1, nodes=100)
    trace = Path(folder) / "tiny-bench.swf.gz"
    write_swf(trace, records, {**header, "MaxProcs": 100})
    return {
        "name": "tiny",
        "base": {"workload": {"trace": str(trace), "jobs": TINY_JOBS}},
        "grid": {"policy.name": ["easy", "fcfs"]},
        "seeds": TINY_CELLS // 2,
    }


def sweep_bench_command(backends: list[str]) -> int:
    """Time two sweeps on each backend, the serial one first as the reference measured in the
    same run: the 60-cell benchmark (wall time, speed-up over serial, driver overhead per cell,
    backend start-up), then :data:`TINY_CELLS` tiny cells, whose wall time per cell (the
    backend's start and stop apart) is the per-cell overhead, printed against serial's."""
    from .config import parse_sweep_config

    backends = ["serial", *(b for b in dict.fromkeys(backends) if b != "serial")]
    config = parse_sweep_config(SWEEP_BENCH_CONFIG)
    print(
        f"sweep benchmark: {SWEEP_BENCH_CONFIG['grid']} x {SWEEP_BENCH_CONFIG['seeds']} seeds; {os.cpu_count()} cpus\n"
    )
    print(
        f"{'backend':<9} {'cells':>6} {'wall s':>8} {'cell s':>8} {'speed-up':>9} "
        f"{'overhead ms/cell':>17} {'start+stop s':>13}"
    )
    first = None
    for backend in backends:
        t = _sweep_timings(config, backend)
        first = first or t["wall"]
        print(
            f"{backend:<9} {t['cells']:>6} {t['wall']:>8.1f} {t['cell']:>8.1f} {first / t['wall']:>8.2f}x "
            f"{t['driver_ms']:>17.1f} {t['startup']:>13.1f}"
        )
    with tempfile.TemporaryDirectory() as folder:
        tiny = parse_sweep_config(tiny_bench_config(folder))
        print(
            f"\ntiny cells: {TINY_CELLS} cells of the first {TINY_JOBS} jobs of a {TINY_TRACE_JOBS:,}-job trace "
            f"(per cell: wall time with the backend up; against serial: minus serial's)\n"
        )
        columns = ("cells", 6), ("wall s", 8), ("start+stop s", 13), ("ms/cell", 8), ("vs serial ms/cell", 18)
        print(f"{'backend':<9} " + " ".join(f"{name:>{width}}" for name, width in columns))
        reference = None
        for backend in backends:
            t = _sweep_timings(tiny, backend)
            reference = t["per_cell_ms"] if reference is None else reference
            print(
                f"{backend:<9} {t['cells']:>6} {t['wall']:>8.1f} {t['startup']:>13.1f} {t['per_cell_ms']:>8.1f} "
                f"{t['per_cell_ms'] - reference:>+18.1f}"
            )
    return 0
