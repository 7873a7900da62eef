"""Execution backends (``sweep/backends.py``) and the driver's batching (``sweep/driver.py``):
serial, process and Ray runs of one config store identical rows; a failing cell becomes a
``failed`` row with its error while the others complete (and the command line exits 1);
batch sizes follow the measured cell durations.

Ray tests share one local Ray per session (2 CPUs, no dashboard) started by the ``ray_cluster``
fixture; :class:`tiersweep.sweep.backends.RayBackend` uses it because Ray is already initialised.
"""

from __future__ import annotations

import math
import os
import re

import pandas as pd
import pytest

from sweep_helpers import runs_frame, small_config, small_raw, write_malformed_swf, write_swf, write_yaml
from tiersweep.cli import main
from tiersweep.contract.backends import BackendContract, tiny_tasks
from tiersweep.core import simulate
from tiersweep.core.errors import TiersweepError, TraceFormatError
from tiersweep.core.params import Param, any_string
from tiersweep.sweep.backends import (
    BACKENDS,
    Backend,
    SerialBackend,
    backend_options,
    make_backend,
    parse_backend_options,
)
from tiersweep.sweep.batch import failed_outcomes, run_batch, task_for
from tiersweep.sweep.config import expand, parse_sweep_config
from tiersweep.sweep.driver import BATCH_SECONDS, SUMMARY_METRICS, run_sweep
from tiersweep.sweep.runner import _batch_size
from tiersweep.sweep.store import read_jobs
from tiersweep.sweep.summary import summary_frame
from tiersweep.sweep.worker_env import BLAS_ENV, blas_threads


@pytest.fixture(scope="session")
def ray_cluster():
    """A local Ray for the whole session (shut down at its end if this fixture started it)."""
    ray = pytest.importorskip("ray")
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, include_dashboard=False, object_store_memory=200 * 1024 * 1024, log_to_driver=False)
    yield ray
    if started:
        ray.shutdown()


@pytest.fixture(scope="module")
def serial_run(tmp_path_factory):
    """The small sweep (8 cells) with per-job records, run serially: the reference."""
    out = tmp_path_factory.mktemp("serial")
    outcome = run_sweep(small_config("same"), out, backend="serial", with_jobs=True, progress=False)
    assert (outcome.computed, outcome.failed) == (8, 0)
    return out / "same"


def _jobs_frame(root):
    return (
        read_jobs(root)
        .to_pandas()
        .drop(columns=["written_at", "write_seq"])
        .sort_values(["cell_id", "job_id"])
        .reset_index(drop=True)
    )


def _check_same_as_serial(root, serial_root):
    reference = runs_frame(serial_root)
    assert len(reference) == 8 and set(reference["status"]) == {"ok"}
    pd.testing.assert_frame_equal(runs_frame(root), reference, check_exact=True)
    pd.testing.assert_frame_equal(_jobs_frame(root), _jobs_frame(serial_root), check_exact=True)


# -- identical results on every backend ------------------------------------------------------


def test_process_backend_stores_the_same_rows_as_serial(tmp_path, serial_run):
    outcome = run_sweep(small_config("same"), tmp_path, backend="process", with_jobs=True, progress=False)
    assert (outcome.computed, outcome.failed, outcome.backend) == (8, 0, "process")
    _check_same_as_serial(tmp_path / "same", serial_run)


@pytest.mark.slow
@pytest.mark.ray
def test_ray_backend_stores_the_same_rows_as_serial(tmp_path, serial_run, ray_cluster):
    outcome = run_sweep(small_config("same"), tmp_path, backend="ray", with_jobs=True, progress=False)
    assert (outcome.computed, outcome.failed, outcome.backend) == (8, 0, "ray")
    _check_same_as_serial(tmp_path / "same", serial_run)
    assert ray_cluster.is_initialized()  # the backend leaves a Ray it did not start running


def test_unknown_backend_is_an_error_listing_the_choices():
    with pytest.raises(
        TiersweepError, match=r"^--backend: unknown backend 'dask'; valid choices: ray, process, serial$"
    ):
        make_backend("dask")
    assert list(BACKENDS) == ["ray", "process", "serial"]
    assert isinstance(make_backend("serial"), SerialBackend)


# -- the registry and the backends' options ---------------------------------------------------


class TestSerialBackendContract(BackendContract):
    backend = "serial"


class TestProcessBackendContract(BackendContract):
    backend = "process"
    options = {"workers": 2}


@pytest.mark.ray
class TestRayBackendContract(BackendContract):
    backend = "ray"

    @pytest.fixture(autouse=True)
    def _ray(self, ray_cluster):
        """Ray's backend joins the session's local Ray (it is already initialised)."""


def test_an_unknown_option_names_the_backend_and_its_options():
    message = r"^--backend-opt address: backend 'process' takes no option 'address'; its options: workers, max_retries$"
    with pytest.raises(TiersweepError, match=message):
        make_backend("process", {"address": "auto"})
    message = r"^--backend-opt workers: backend 'serial' takes no option 'workers'; its options: none$"
    with pytest.raises(TiersweepError, match=message):
        backend_options("serial", {"workers": 2})
    message = r"^--backend-opt workers: expected a positive integer, got 0 \(backend 'process'\)$"
    with pytest.raises(TiersweepError, match=message):
        backend_options("process", {"workers": 0})


def test_options_reach_the_backend():
    backend = make_backend("process", parse_backend_options(["workers=1", "max_retries=0"]))
    try:
        assert (backend.workers, backend.max_retries) == (1, 0)
    finally:
        backend.close()


def test_backend_opt_values_are_read_as_integers_booleans_or_text():
    assert parse_backend_options(["workers=2", "flag=true", "address=10.0.0.1:6379"]) == {
        "workers": 2,
        "flag": True,
        "address": "10.0.0.1:6379",
    }
    assert parse_backend_options([], "auto") == {"address": "auto"}  # --address is address=
    for bad in ("workers", "=2", "workers="):
        with pytest.raises(TiersweepError, match=r"expected KEY=VALUE"):
            parse_backend_options([bad])
    with pytest.raises(TiersweepError, match=r"^--backend-opt address: given twice"):
        parse_backend_options(["address=auto"], "auto")


def test_the_command_line_checks_backend_options_before_reading_the_config(tmp_path, capsys):
    missing = str(tmp_path / "missing.yaml")
    assert main(["sweep", missing, "--backend", "process", "--backend-opt", "workers=0"]) == 2
    expected = "tiersweep: error: --backend-opt workers: expected a positive integer, got 0 (backend 'process')"
    assert expected in capsys.readouterr().err
    assert main(["tune", missing, "--backend", "serial", "--backend-opt", "address=auto"]) == 2
    assert "backend 'serial' takes no option 'address'; its options: none" in capsys.readouterr().err


def test_a_registered_backend_is_a_choice_of_the_command_line_and_listed_in_its_help(tmp_path, capsys, monkeypatch):
    class Echo(SerialBackend):
        """A serial backend under another name, with one option."""

        name = "echo"
        doc = "the serial backend under another name"
        params = {"label": Param(any_string, doc="a label it ignores")}

        def __init__(self, label: str = "") -> None:
            super().__init__()

    BACKENDS.register(Echo)
    try:
        with pytest.raises(SystemExit):
            main(["sweep", "--help"])
        out = capsys.readouterr().out
        assert "  echo: the serial backend under another name\n    label: a label it ignores" in out
        assert "  process: a pool of worker processes on this machine\n    workers: " in out
        config = write_yaml(tmp_path / "echo.yaml", small_raw("echo", seeds=1))
        argv = ["sweep", str(config), "--out", str(tmp_path / "out"), "--backend", "echo", "--backend-opt", "label=x"]
        assert main(argv) == 0
        assert re.search(r"4 computed now \([0-9.]+ s on echo\)", capsys.readouterr().out)
    finally:
        BACKENDS.pop("echo")
    with pytest.raises(SystemExit):  # argparse: unregistered, not a choice
        main(["sweep", str(config), "--backend", "echo"])
    assert "invalid choice: 'echo' (choose from 'ray', 'process', 'serial')" in capsys.readouterr().err


# -- failing cells ---------------------------------------------------------------------------


@pytest.fixture
def failing_config(tmp_path):
    """2 traces x 2 policies, seed 0: the cells on ``bad.swf`` fail at run time."""
    good = write_swf(tmp_path / "good.swf")
    bad = write_malformed_swf(tmp_path / "bad.swf")
    raw = small_raw(
        "failing",
        base={"workload": {"trace": str(good)}, "platform": {"nodes": 64, "tiers": 2}},
        grid={"workload.trace": [str(good), str(bad)], "policy.name": ["easy", "amcbf"]},
        seeds=[0],
    )
    return {"raw": raw, "good": str(good), "bad": str(bad), "path": write_yaml(tmp_path / "failing.yaml", raw)}


def _expected_error(spec) -> str:
    with pytest.raises(TraceFormatError) as info:
        simulate(spec)
    return f"TraceFormatError: {info.value}"


@pytest.mark.parametrize("backend", ["serial", "process", pytest.param("ray", marks=pytest.mark.ray)])
def test_a_failing_cell_is_a_failed_row_and_the_others_complete(backend, failing_config, tmp_path, request):
    if backend == "ray":
        request.getfixturevalue("ray_cluster")
    config = parse_sweep_config(failing_config["raw"])
    cells = expand(config)
    outcome = run_sweep(config, tmp_path / "out", backend=backend, progress=False)
    assert (outcome.computed, outcome.failed) == (4, 2)
    frame = runs_frame(tmp_path / "out" / "failing")
    assert frame["cell_id"].tolist() == [c.cell_id for c in cells]
    for cell, row in zip(cells, frame.to_dict("records")):
        if cell.spec["workload"]["trace"] == failing_config["bad"]:
            assert row["status"] == "failed"
            assert row["error"].startswith(_expected_error(cell.spec))
            assert f"{failing_config['bad']}:4: malformed job line" in row["error"]
            assert pd.isna(row["jobs"]) and pd.isna(row["mean_wait"])
        else:
            assert row["status"] == "ok" and pd.isna(row["error"])
            assert row["jobs"] == 30 and row["mean_wait"] == simulate(cell.spec).metrics["mean_wait"]


def test_the_command_line_exits_1_and_says_how_many_cells_failed_and_why(failing_config, tmp_path, capsys):
    argv = ["sweep", str(failing_config["path"]), "--out", str(tmp_path / "out"), "--backend", "serial"]
    assert main(argv) == 1
    out = capsys.readouterr().out
    assert "sweep failing: 4 cells; 4 computed now" in out
    assert "0 already stored, 2 failed" in out
    # It says why, without opening the store: the two cells on the bad log share one error.
    error = f"TraceFormatError: {failing_config['bad']}:4: malformed job line"
    lines = out.splitlines()
    at = lines.index("2 cell(s) failed (their rows' 'error' column says why):")
    assert lines[at + 1].startswith(f"  2 x {error}") and len(lines) == at + 2
    # Failed cells are stored: a rerun computes nothing and still reports them...
    assert main(argv) == 1
    out = capsys.readouterr().out
    assert "4 cells; 0 computed now" in out and "4 already stored, 2 failed" in out
    # ...unless asked to retry them.
    assert main([*argv, "--retry-failed"]) == 1
    assert "4 cells; 2 computed now" in capsys.readouterr().out


def test_the_summary_has_a_row_for_every_grid_point_with_its_failures(failing_config, tmp_path):
    config = parse_sweep_config(failing_config["raw"])
    outcome = run_sweep(config, tmp_path / "out", backend="serial", progress=False)
    frame = summary_frame(outcome.cells, str(outcome.store / "runs"), SUMMARY_METRICS)
    rows = {(r["workload.trace"], r["policy.name"]): (r["seeds"], r["failed"]) for r in frame.to_dict("records")}
    good, bad = failing_config["good"], failing_config["bad"]
    assert rows == {(good, "easy"): (1, 0), (good, "amcbf"): (1, 0), (bad, "easy"): (0, 1), (bad, "amcbf"): (0, 1)}


def test_failed_outcomes_mark_a_lost_batch_failed(tmp_path):
    cells = expand(small_config("lost"))[:3]
    tasks = [task_for(c, "lost") for c in cells]
    outcomes = failed_outcomes(tasks, RuntimeError("worker died"))
    assert [o.cell_id for o in outcomes] == [c.cell_id for c in cells]
    for outcome, cell in zip(outcomes, cells):
        assert outcome.jobs is None
        assert (outcome.status, outcome.row["error"]) == ("failed", "RuntimeError: worker died")
        assert (outcome.row["seed"], outcome.row["policy.name"]) == (cell.seed, cell.point["policy.name"])


def test_run_batch_returns_one_outcome_per_task_in_order():
    cells = expand(small_config("batch"))[:3]
    outcomes = run_batch([task_for(c, "batch") for c in reversed(cells)], with_jobs=False)
    assert [o.cell_index for o in outcomes] == [2, 1, 0]
    assert all(o.jobs is None and o.status == "ok" for o in outcomes)


# -- batch sizing ----------------------------------------------------------------------------


def test_one_cell_per_batch_until_durations_are_known():
    assert _batch_size([], remaining=1000, workers=2) == 1


@pytest.mark.parametrize("typical", [0.05, 0.1, 0.3, 1.0])
def test_batches_hold_about_batch_seconds_of_work(typical):
    size = _batch_size([typical] * 20, remaining=10_000, workers=2)
    assert size * typical <= BATCH_SECONDS < (size + 1) * typical


def test_batch_size_is_bounded_by_64_and_by_the_work_left_per_worker():
    assert _batch_size([0.001] * 5, remaining=10_000, workers=2) == 64
    assert _batch_size([0.0] * 5, remaining=10_000, workers=2) == 64
    assert _batch_size([0.001] * 5, remaining=10, workers=4) == math.ceil(10 / 4)
    assert _batch_size([0.001] * 5, remaining=1, workers=8) == 1


def test_cells_slower_than_a_batch_run_one_per_batch():
    assert _batch_size([10.0, 12.0], remaining=100, workers=2) == 1


def test_batch_size_follows_the_median_of_recent_durations():
    assert _batch_size([0.1] * 9 + [100.0], remaining=10_000, workers=1) == _batch_size(
        [0.1], remaining=10_000, workers=1
    )
    assert _batch_size([10.0] * 100 + [0.1] * 50, remaining=10_000, workers=1) == _batch_size([0.1], 10_000, 1)


def test_the_driver_starts_with_single_cell_batches(tmp_path, monkeypatch):
    sizes = []
    original = SerialBackend.submit

    def recording_submit(self, batch_id, tasks, with_jobs):
        sizes.append(len(tasks))
        original(self, batch_id, tasks, with_jobs)

    monkeypatch.setattr(SerialBackend, "submit", recording_submit)
    stored = []
    outcome = run_sweep(small_config("sizes"), tmp_path, backend="serial", progress=False, on_batch=stored.append)
    assert outcome.computed == 8 and sum(sizes) == 8
    # Two batches in flight per worker before any duration is known: both of one cell.
    assert sizes[:2] == [1, 1]
    assert stored == list(pd.Series(sizes).cumsum())
    assert len(sizes) < 8  # later batches group cells


def test_a_batch_submitted_after_a_worker_died_is_run_on_a_new_pool():
    # A race: a worker dies between two waits, and the driver submits its next batch to the
    # broken pool before a wait has noticed. Raising BrokenProcessPool there would take the
    # sweep down: the batch is handed to the next wait as lost with the pool instead.
    import os
    import signal
    import time
    from concurrent.futures.process import BrokenProcessPool

    from tiersweep.sweep.backends import ProcessBackend

    cells = expand(small_config("broken"))[:4]
    tasks = [task_for(c, "broken") for c in cells]
    backend = ProcessBackend(workers=1)
    try:
        backend.submit(0, tasks[:2], False)
        while not getattr(backend._pool, "_processes", None):
            time.sleep(0.01)
        os.kill(next(iter(backend._pool._processes)), signal.SIGKILL)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # until the pool knows it is broken
            try:
                probe = backend._pool.submit(int, 0)
            except BrokenProcessPool:
                break
            probe.cancel()
            time.sleep(0.05)
        else:
            pytest.fail("the pool never broke")
        backend.submit(1, tasks[2:], False)  # no BrokenProcessPool here
        finished = {}
        while backend.pending():
            finished.update(backend.wait())
    finally:
        backend.close()
    assert sorted(finished) == [0, 1]
    rows = [outcome.row for batch in finished.values() for outcome in batch]
    assert sorted(row["cell_id"] for row in rows) == sorted(c.cell_id for c in cells)
    assert all(row["status"] == "ok" for row in rows), [row.get("error") for row in rows]


# -- one BLAS thread per worker ---------------------------------------------------------------


def _unpinned_blas_threads() -> int:
    """BLAS threads of a fresh interpreter of this environment (what a worker had unpinned)."""
    import subprocess
    import sys

    code = "from tiersweep.sweep.worker_env import blas_threads; print(blas_threads())"
    environment = {k: v for k, v in os.environ.items() if k not in BLAS_ENV}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=environment, timeout=120, check=True
    )
    return int(done.stdout)


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one CPU: BLAS runs one thread anyway")
def test_process_workers_run_one_blas_thread():
    assert _unpinned_blas_threads() > 1  # else the check below could not fail
    backend = make_backend("process", {"workers": 1})
    try:
        backend.submit(0, tiny_tasks(1), False)
        assert [o.status for _, outcomes in backend.wait() for o in outcomes] == ["ok"]
        assert backend._pool.submit(blas_threads).result(timeout=60) == 1
    finally:
        backend.close()


@pytest.mark.ray
def test_ray_workers_run_one_blas_thread(ray_cluster):
    # (Ray itself sets OMP_NUM_THREADS to a task's CPUs when it is unset, which OpenBLAS reads;
    # the backend's tasks say so themselves, whatever Ray's default.)
    backend = make_backend("ray")
    try:
        assert backend.remote_options["runtime_env"]["env_vars"] == BLAS_ENV
        pinned = ray_cluster.remote(**backend.remote_options)(blas_threads)
        assert ray_cluster.get(pinned.remote(), timeout=120) == 1
    finally:
        backend.close()


def test_the_failures_named_are_the_commonest_few_each_cut_short(tmp_path, capsys):
    """Four distinct errors (a malformed line at four places, one log with two cells): the
    commonest first, three named and the rest counted; a long error is cut with an ellipsis."""
    good = write_swf(tmp_path / "good.swf")
    bad = []
    for i, at in enumerate((3, 5, 7, 9)):
        lines = good.read_text(encoding="ascii").splitlines()
        lines.insert(at, "4 360 -1 x")
        # (The first in a folder of a long name: its error, which names the file, is long.)
        path = (tmp_path / ("long" * 50) if i == 0 else tmp_path) / f"bad{i}.swf"
        path.parent.mkdir(exist_ok=True)
        path.write_text("\n".join(lines) + "\n", encoding="ascii")
        bad.append(str(path))
    raw = small_raw("many", base={"workload": {"trace": str(good)}, "platform": {"nodes": 64, "tiers": 2}}, seeds=[0])
    del raw["grid"]
    raw["grids"] = [
        {"workload.trace": [bad[0]], "policy.name": ["easy", "amcbf"]},
        {"workload.trace": bad[1:] + [str(good)], "policy.name": ["easy"]},
    ]
    config = write_yaml(tmp_path / "many.yaml", raw)
    argv = ["sweep", str(config), "--out", str(tmp_path / "out"), "--backend", "serial"]
    assert main(argv) == 1
    lines = capsys.readouterr().out.splitlines()
    at = lines.index("5 cell(s) failed (their rows' 'error' column says why):")
    named = lines[at + 1 : at + 4]
    assert named[0].startswith(f"  2 x TraceFormatError: {bad[0][:100]}") and named[0].endswith("...")
    assert len(named[0]) == len("  2 x ") + 300
    assert [line[:6] for line in named[1:]] == ["  1 x ", "  1 x "]
    assert lines[at + 4] == "  and 1 other error(s)" and len(lines) == at + 5


def test_a_backend_whose_wait_takes_no_timeout_still_runs_a_sweep_with_a_bar(tmp_path, capsys):
    """A plug-in backend written before :meth:`Backend.wait` took a timeout (``wait(self)``) runs
    a sweep with its progress bar (then drawn only when batches finish), storing what the
    serial backend stores."""

    class Untimed(Backend):
        name = "untimed"
        doc = "in this process, each batch when waited for, with a wait that takes no timeout"

        def __init__(self) -> None:
            self.workers = 1
            self._queue: list = []

        def submit(self, batch_id, tasks, with_jobs):
            self._queue.append((batch_id, run_batch(tasks, with_jobs)))

        def wait(self):  # type: ignore[override]  # (the old signature, on purpose)
            done, self._queue = self._queue, []
            return done

        def pending(self):
            return len(self._queue)

    BACKENDS.register(Untimed)
    try:
        config = small_config("untimed", seeds=1)
        outcome = run_sweep(config, tmp_path / "untimed", backend="untimed", progress=True)
        assert (outcome.computed, outcome.failed) == (4, 0)
        assert "4/4 [" in capsys.readouterr().err
    finally:
        BACKENDS.pop("untimed")
    run_sweep(config, tmp_path / "serial", backend="serial", progress=False)
    assert runs_frame(tmp_path / "untimed" / "untimed").equals(runs_frame(tmp_path / "serial" / "untimed"))
