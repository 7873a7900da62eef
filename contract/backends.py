"""The contract of an execution backend (:mod:`tiersweep.sweep.backends`), as pytest tests.

A backend's test module subclasses :class:`BackendContract`, names the backend and the options
to build it with, and pytest runs the checks every backend must pass::

    from tiersweep.contract.backends import BackendContract

    class TestMyBackend(BackendContract):
        backend = "mine"
        options = {"workers": 2}

The checks submit tiny cells (a few tens of jobs each) and compare what comes back with
:func:`~tiersweep.sweep.batch.run_batch` run in the test's own process: every batch comes back
once, its outcomes in task order and equal to the in-process ones, whatever the batching and
the order of submission; a cell that fails is a ``failed`` row with its error while the other
cells of its batch complete; the backend is registered with the options it declares and
refuses others; a :meth:`~tiersweep.sweep.backends.Backend.wait` with a timeout comes back by
then and loses no batch; :meth:`~tiersweep.sweep.backends.Backend.cancel` abandons the batches
in flight.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest

from ..core.errors import TiersweepError
from ..sweep.backends import BACKENDS, Backend, backend_options, make_backend
from ..sweep.batch import run_batch, task_for
from ..sweep.config import expand, parse_sweep_config
from ..sweep.records import Task

__all__ = ["BackendContract", "tiny_tasks", "comparable"]

#: Row columns that legitimately differ between two computations of one cell.
VOLATILE = ("wall_seconds", "host")


def tiny_tasks(count: int, *, trace: str | Path | None = None, sweep: str = "contract") -> list[Task]:
    """Tasks of ``count`` tiny cells (20 jobs of a model workload on 16 nodes, one seed each);
    with ``trace``, of that SWF file instead (whose cells fail at run time if it is malformed)."""
    workload: dict[str, Any] = {"model": "jann97", "jobs": 20} if trace is None else {"trace": str(trace)}
    raw = {"name": sweep, "base": {"workload": workload, "platform": {"nodes": 16}}, "grid": {}, "seeds": count}
    if trace is not None:
        raw["base"]["workload"]["lenient"] = False
    return [task_for(cell, sweep) for cell in expand(parse_sweep_config(raw))]


def comparable(row: Mapping[str, Any]) -> dict[str, Any]:
    """``row`` without its volatile columns, NaN as a string (NaN never equals itself)."""
    return {
        key: "nan" if isinstance(value, float) and math.isnan(value) else value
        for key, value in row.items()
        if key not in VOLATILE
    }


class BackendContract:
    """Contract tests of one execution backend; subclass it as ``Test...``.

    Class attributes a subclass sets:
        backend: The backend's registry name.
        options: Its options (``--backend-opt``) for every test.
        wait_seconds: The longest a test waits for its batches before failing.
    """

    backend: ClassVar[str] = ""
    options: ClassVar[Mapping[str, Any]] = {}
    wait_seconds: ClassVar[float] = 120.0

    # -- helpers -------------------------------------------------------------------------------
    def make(self) -> Backend:
        """A new backend of :attr:`backend` built with :attr:`options`."""
        return make_backend(self.backend, self.options)

    def run_all(self, backend: Backend, batches: Sequence[tuple[int, list[Task]]]) -> dict[int, list]:
        """Submit ``batches`` (``(batch id, tasks)``) and wait for all of them; the outcomes by
        batch id, each id returned exactly once."""
        for batch_id, tasks in batches:
            backend.submit(batch_id, tasks, False)
        assert backend.pending() == len(batches)
        finished: dict[int, list] = {}
        deadline = time.monotonic() + self.wait_seconds
        while backend.pending():
            assert time.monotonic() < deadline, f"{self.backend}: batches still pending after {self.wait_seconds} s"
            for batch_id, outcomes in backend.wait():
                assert batch_id not in finished, f"{self.backend}: batch {batch_id} returned twice"
                finished[batch_id] = outcomes
        assert sorted(finished) == sorted(batch_id for batch_id, _ in batches)
        return finished

    # -- the tests ----------------------------------------------------------------------------------
    def test_is_registered_with_the_options_it_declares(self):
        """The name is registered, the test's options are among those declared, others are refused."""
        assert self.backend in BACKENDS, f"backend {self.backend!r} is not registered"
        cls = BACKENDS[self.backend]
        assert cls.name == self.backend and cls.doc, "a backend declares its name and a one-line doc"
        assert set(self.options) <= set(cls.params)
        with pytest.raises(TiersweepError, match=rf"backend '{self.backend}' takes no option 'no_such_option'"):
            backend_options(self.backend, {"no_such_option": 1})

    def test_tiny_cells_come_back_as_run_in_process(self):
        """Each batch comes back once, its outcomes in task order, rows equal to the in-process run."""
        tasks = tiny_tasks(6)
        expected = [comparable(outcome.row) for outcome in run_batch(tasks)]
        backend = self.make()
        try:
            assert backend.workers >= 1
            finished = self.run_all(backend, [(0, tasks[:1]), (1, tasks[1:4]), (2, tasks[4:])])
        finally:
            backend.close()
        rows = [comparable(outcome.row) for batch_id in (0, 1, 2) for outcome in finished[batch_id]]
        assert [row["status"] for row in rows] == ["ok"] * 6
        assert rows == expected

    def test_results_do_not_depend_on_batching_or_order(self):
        """The same cells, one per batch submitted last first, or all in one batch reversed,
        give the same row for each cell."""
        tasks = tiny_tasks(4)
        backend = self.make()
        try:
            singles = self.run_all(backend, [(10 + i, [task]) for i, task in reversed(list(enumerate(tasks)))])
            together = self.run_all(backend, [(20, list(reversed(tasks)))])
        finally:
            backend.close()
        by_cell = {o.cell_id: comparable(o.row) for outcomes in singles.values() for o in outcomes}
        assert [o.cell_id for o in together[20]] == [t.cell_id for t in reversed(tasks)]
        assert {o.cell_id: comparable(o.row) for o in together[20]} == by_cell

    def test_a_failing_cell_is_a_failed_row_and_its_batch_completes(self, tmp_path):
        """A cell whose trace is malformed comes back ``failed`` with the error; the cells
        beside it in its batch are ``ok``."""
        bad = tmp_path / "bad.swf"
        bad.write_text("; MaxProcs: 16\n1 0 -1 60 4 -1 -1 4 100 -1 1 1 1 -1 1 -1 -1 -1\n2 0 -1 x\n", encoding="ascii")
        good = tiny_tasks(2)
        failing = tiny_tasks(1, trace=bad, sweep="contract")
        backend = self.make()
        try:
            finished = self.run_all(backend, [(0, [good[0], *failing, good[1]])])
        finally:
            backend.close()
        rows = [outcome.row for outcome in finished[0]]
        assert [row["status"] for row in rows] == ["ok", "failed", "ok"]
        assert rows[1]["error"].startswith("TraceFormatError: ") and f"{bad}:3" in rows[1]["error"]
        assert rows[1]["cell_id"] == failing[0].cell_id and rows[0]["error"] is None

    def test_a_wait_with_a_timeout_returns_by_then_and_loses_nothing(self):
        """:meth:`wait` with a timeout comes back about then, with the batches finished by then
        (none, if none has); waits until all are back return each batch once, as run in process."""
        tasks = tiny_tasks(3)
        expected = {o.cell_id: comparable(o.row) for o in run_batch(tasks)}
        backend = self.make()
        finished: dict[int, list] = {}
        try:
            for batch_id, task in enumerate(tasks):
                backend.submit(batch_id, [task], False)
            deadline = time.monotonic() + self.wait_seconds
            while backend.pending():
                assert time.monotonic() < deadline, f"{self.backend}: batches still pending after {self.wait_seconds} s"
                started = time.monotonic()
                returned = backend.wait(timeout=0.05)
                # (A backend that runs the batch inside its wait, as the serial one does, takes
                # that batch's time: a tiny cell's, well within the bound.)
                assert time.monotonic() - started < 10.0, f"{self.backend}: a wait of 0.05 s took too long"
                for batch_id, outcomes in returned:
                    assert batch_id not in finished, f"{self.backend}: batch {batch_id} returned twice"
                    finished[batch_id] = outcomes
        finally:
            backend.close()
        assert sorted(finished) == [0, 1, 2]
        assert {o.cell_id: comparable(o.row) for outcomes in finished.values() for o in outcomes} == expected

    def test_cancel_abandons_the_batches_in_flight(self):
        """After :meth:`cancel` nothing is pending, and closing returns promptly."""
        backend = self.make()
        try:
            for batch_id in range(2 * backend.workers + 1):
                backend.submit(batch_id, tiny_tasks(2), False)
            backend.cancel()
            assert backend.pending() == 0
        finally:
            started = time.monotonic()
            backend.close()
        assert time.monotonic() - started < 30.0, f"{self.backend}: close after cancel took too long"
