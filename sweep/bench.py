"""``tiersweep bench``: how fast the simulator is, on real logs, reproducibly.

For each log and policy it times, best of ``repeat`` runs, the workload load (SWF parse,
workload rules, CPU annotation) and the simulation proper, and prints jobs simulated per
second. Then the consolidation case that every sweep leans on: AMCBF (and CMCBF) on 320 nodes
with two tiers over the first 20,000 jobs of CTC-SP2. Last, ``tiersweep run`` of EASY on the
KTH-SP2 log as a whole process, interpreter start included.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ..core.compiled_path import path_line
from ..core.engine import ENGINE_PARAMS, Engine
from ..core.errors import TiersweepError
from ..core.platforms import Nodes
from ..core.policies import make_policy
from ..core.workloads.cpu import annotate_cpu
from ..core.workloads.rules import jobs_from_records
from ..core.workloads.swf import header_int, read_swf

__all__ = ["BENCH_TRACES", "bench_command", "sweep_bench_command", "SWEEP_BENCH_CONFIG"]

#: The sweep benchmark: 60 cells of about a second each (Ray's start and stop, ~5-8 s, are
#: part of the measured time).
SWEEP_BENCH_CONFIG = {
    "name": "bench",
    "base": {"workload": {"model": "feitelson96", "jobs": 10000}, "platform": {"tiers": 2}},
    "grid": {"policy.name": ["amcbf", "cmcbf"], "workload.load": [0.5, 0.6, 0.7, 0.8, 0.9]},
    "seeds": 6,
}

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
            print(f"{name.removesuffix('.swf.gz'):<30} {policy:<7} {jobs:>8,} {load:>8.3f} {sim:>11.3f} {jobs / sim:>10,.0f}")
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


def sweep_bench_command(backends: list[str]) -> int:
    """Run the 60-cell benchmark sweep on each backend (fresh store each) and print wall time,
    speed-up over the first backend, driver overhead per cell and backend start-up."""
    from .config import parse_sweep_config
    from .driver import run_sweep

    config = parse_sweep_config(SWEEP_BENCH_CONFIG)
    print(f"sweep benchmark: {SWEEP_BENCH_CONFIG['grid']} x {SWEEP_BENCH_CONFIG['seeds']} seeds; {os.cpu_count()} cpus\n")
    print(f"{'backend':<9} {'cells':>6} {'wall s':>8} {'cell s':>8} {'speed-up':>9} {'overhead ms/cell':>17} {'start+stop s':>13}")
    first = None
    for backend in backends:
        with tempfile.TemporaryDirectory() as out:
            outcome = run_sweep(config, out, backend=backend, progress=False)
            from .store import read_table

            cell_seconds = sum(read_table(outcome.store / "runs").column("wall_seconds").to_pylist())
        first = first or outcome.elapsed_seconds
        print(
            f"{backend:<9} {outcome.computed:>6} {outcome.elapsed_seconds:>8.1f} {cell_seconds:>8.1f} "
            f"{first / outcome.elapsed_seconds:>8.2f}x {outcome.overhead_per_cell_ms:>17.1f} "
            f"{outcome.extra['startup_seconds']:>13.1f}"
        )
    return 0
