"""No cell can hold a sweep forever: a cell that runs past its time limit is stopped inside its
worker and stored as ``failed`` with the reason, and the sweep goes on with the other cells.

The slow cell is real: AMCBF over 30,000 jobs takes far longer than the few seconds it is given
(about a minute on a quiet machine), so without a limit the test would store it ``ok``.
"""

from __future__ import annotations

import signal
import threading
import time

import pytest

from sweep_helpers import write_yaml
from tiersweep.cli import main
from tiersweep.core.errors import SpecError
from tiersweep.sweep import estimate
from tiersweep.sweep.cells import flatten
from tiersweep.sweep.config import expand, parse_sweep_config
from tiersweep.sweep.driver import run_sweep
from tiersweep.sweep.estimate import (
    MIN_CELL_TIMEOUT,
    cell_time_limits,
    default_time_limits,
    estimate_cells,
    estimate_costs,
    formula_cost,
    policy_costs,
    processes_per_job,
)
from tiersweep.sweep.store import read_table
from tiersweep.sweep.time_limit import CellTimeout, time_limit

#: The limit the slow cell runs into: enough for the quick cell on a busy machine.
LIMIT = 3.0


def _raw(**changes) -> dict:
    raw = {
        "name": "slow",
        "base": {"workload": {"model": "jann97", "load": 0.9}, "platform": {"nodes": 64, "tiers": 2}},
        "zip": [{"workload.jobs": [30, 300_000], "policy.name": ["easy", "amcbf"]}],
    }
    raw.update(changes)
    return raw


def _check_stored(root) -> None:
    frame = read_table(root / "runs").to_pandas().set_index("workload.jobs")
    assert frame.loc[30, "status"] == "ok" and frame.loc[30, "report.records"] == 30
    slow = frame.loc[300_000]
    assert slow["status"] == "failed"
    assert slow["error"].startswith(
        f"CellTimeout: stopped after its time limit of {LIMIT:g} s; if the cell is merely slow, give a longer limit "
        "(--cell-timeout SECONDS or the config's cell_timeout; 0 for none) and run again with --retry-failed"
    )
    assert LIMIT <= slow["wall_seconds"] < LIMIT + 15


def test_the_serial_backend_stops_a_slow_cell_and_restores_the_alarm(tmp_path, capsys):
    handler = signal.getsignal(signal.SIGALRM)
    config = write_yaml(tmp_path / "slow.yaml", _raw())
    code = main(
        ["sweep", str(config), "--backend", "serial", "--cell-timeout", f"{LIMIT:g}", "--out", str(tmp_path / "out")]
    )
    assert code == 1
    assert "1 failed" in capsys.readouterr().out
    _check_stored(tmp_path / "out" / "slow")
    assert signal.getsignal(signal.SIGALRM) is handler
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_the_process_backend_stops_a_slow_cell_from_the_config_key(tmp_path):
    outcome = run_sweep(parse_sweep_config(_raw(cell_timeout=LIMIT)), tmp_path, backend="process", progress=False)
    assert (outcome.computed, outcome.failed) == (2, 1)
    _check_stored(outcome.store)


@pytest.mark.ray
@pytest.mark.slow
def test_the_ray_backend_stops_a_slow_cell(tmp_path):
    ray = pytest.importorskip("ray")
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, include_dashboard=False, object_store_memory=200 * 1024 * 1024, log_to_driver=False)
    try:
        outcome = run_sweep(parse_sweep_config(_raw()), tmp_path, backend="ray", progress=False, cell_timeout=LIMIT)
    finally:
        if started:
            ray.shutdown()
    assert (outcome.computed, outcome.failed) == (2, 1)
    _check_stored(outcome.store)


def test_a_cell_timeout_that_is_not_seconds_is_refused():
    with pytest.raises(SpecError, match=r"^cell_timeout: expected seconds \(a number >= 0; 0 for no limit\), got -1$"):
        parse_sweep_config(_raw(cell_timeout=-1))
    with pytest.raises(SpecError, match=r"^--cell-timeout: expected seconds"):
        run_sweep(parse_sweep_config(_raw()), "unused", backend="serial", progress=False, cell_timeout=float("inf"))


def test_default_limits_are_twenty_times_the_expected_seconds_and_at_least_a_minute():
    assert default_time_limits([1.0, 10.0, 100.0], True) == [MIN_CELL_TIMEOUT, 200.0, 2000.0]
    # Uncalibrated costs are unnamed units, taken at a pessimistic 1 ms each.
    assert default_time_limits([1_000.0, 100_000.0], False) == [MIN_CELL_TIMEOUT, 2000.0]
    cells = expand(parse_sweep_config(_raw()))
    costs, in_seconds = estimate_costs(cells)
    (amcbf_job, amcbf_process), sizes = policy_costs("amcbf"), processes_per_job(flatten(cells[1].spec))
    assert policy_costs("easy") == (1.0, 0.0)
    assert not in_seconds and costs == [30 * 1.0 * 1.4, 300_000 * (amcbf_job + amcbf_process * sizes) * 1.4]


def test_a_cell_whose_replicates_are_not_stored_keeps_a_limit_its_formula_allows(tmp_path, monkeypatch):
    # A scale study: the same jobs on a small and a large machine. The formula counts jobs, so
    # the small machine's stored cell calibrated the large machine's estimate to its own time,
    # and the large cell (some 40 times the work) was stopped by a limit of twenty times that.
    # (With the one-minute floor lowered to half a second, so that seconds-long cells show it.)
    monkeypatch.setattr(estimate, "MIN_CELL_TIMEOUT", 0.5)
    workload = {"model": "lublin03", "jobs": 3000, "load": 0.8}
    base = {"workload": workload, "platform": {"tiers": 2}, "policy": {"name": "amcbf"}}
    config = parse_sweep_config({"name": "scale", "base": base, "grid": {"platform.nodes": [16, 93_312]}})
    small = run_sweep(config, tmp_path, backend="serial", progress=False, max_cells=1)
    assert (small.computed, small.failed) == (1, 0)
    stored = read_table(tmp_path / "scale" / "runs").to_pandas()
    assert stored["platform.nodes"].tolist() == [16]
    large = expand(config)[1]
    costs, in_seconds = estimate_costs([large], stored)
    # Calibrated on the small one, and scaled by the processes of the large one's jobs.
    small_wall = stored["wall_seconds"].iloc[0]
    scale = formula_cost(large.spec) / formula_cost(expand(config)[0].spec)
    assert scale > 5 and in_seconds and costs[0] == pytest.approx(small_wall * scale)
    [limit] = cell_time_limits(estimate_cells([large], stored))
    assert limit >= estimate.CELL_TIMEOUT_FACTOR * formula_cost(large.spec) * estimate.UNCALIBRATED_SECONDS_PER_UNIT
    # (Twenty times the small cell's time, the limit it had, stopped it after about a second.)
    rest = run_sweep(config, tmp_path, backend="serial", progress=False)
    assert (rest.computed, rest.failed) == (1, 0)


def test_a_limit_off_the_main_thread_interrupts_a_busy_loop():
    caught = []

    def spin() -> None:
        started = time.monotonic()
        try:
            with time_limit(0.5):
                while time.monotonic() - started < 30:
                    pass
        except CellTimeout:
            caught.append(time.monotonic() - started)

    thread = threading.Thread(target=spin)
    thread.start()
    thread.join(40)
    assert len(caught) == 1 and 0.5 <= caught[0] < 10


def test_a_block_that_ends_in_time_leaves_no_alarm_behind():
    handler = signal.getsignal(signal.SIGALRM)
    with time_limit(5):
        pass
    assert signal.getsignal(signal.SIGALRM) is handler and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_a_timer_of_the_caller_is_restored_with_what_is_left_of_it():
    fired = []
    previous = signal.signal(signal.SIGALRM, lambda signum, frame: fired.append(signum))
    try:
        signal.setitimer(signal.ITIMER_REAL, 30)
        with time_limit(5):
            time.sleep(0.2)
        left, _ = signal.getitimer(signal.ITIMER_REAL)
        assert 25 < left <= 29.9 and not fired
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


class _SlowFinaliser:
    """An object whose finaliser runs past the limit: an exception raised inside a finaliser (or
    a gc callback, as in the CI run where this was found) is printed and swallowed by Python."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def __del__(self) -> None:
        started = time.monotonic()
        while time.monotonic() - started < self.seconds:
            pass


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.parametrize("on_main_thread", [True, False], ids=["signal", "thread"])
def test_a_limit_whose_first_interrupt_is_swallowed_still_stops_the_block(on_main_thread):
    caught = []

    def guarded() -> None:
        started = time.monotonic()
        try:
            with time_limit(0.2):
                _SlowFinaliser(0.6)  # dropped at once: the limit expires inside its finaliser, which swallows it
                while time.monotonic() - started < 20:
                    pass
        except CellTimeout:
            caught.append(time.monotonic() - started)

    if on_main_thread:
        guarded()
    else:
        thread = threading.Thread(target=guarded)
        thread.start()
        thread.join(30)
    assert len(caught) == 1 and 0.2 <= caught[0] < 5  # (without the repeat: the whole 20 s)
