"""The records that cross the process boundary are typed: a frozen :class:`Task` goes to the
worker, a frozen :class:`Outcome` comes back, through every backend; a segment has one record
type, which the engine records, a run returns and the store's schema follows."""

from __future__ import annotations

import dataclasses
import os
import pickle
from typing import get_type_hints

import pyarrow as pa
import pytest

from helpers import make_jobs
from sweep_helpers import small_config, write_swf
from tiersweep.core import simulate
from tiersweep.core.engine import Engine
from tiersweep.core.platforms import Nodes
from tiersweep.core.policies import make_policy
from tiersweep.core.segments import SEGMENT_FIELDS, Segment
from tiersweep.sweep.backends import ProcessBackend, SerialBackend
from tiersweep.sweep.batch import task_for
from tiersweep.sweep.config import expand, parse_sweep_config
from tiersweep.sweep.driver import run_sweep
from tiersweep.sweep.records import Outcome, Task
from tiersweep.sweep.store import read_jobs


@pytest.fixture(scope="module")
def cells():
    return expand(small_config("records"))[:2]


def test_a_task_is_a_frozen_record_of_its_cell(cells):
    cell = cells[0]
    task = task_for(cell, "records", 12.5)
    assert isinstance(task, Task)
    assert (task.index, task.cell_id, task.sweep) == (cell.index, cell.cell_id, "records")
    assert task.replicate == cell.replicate
    assert (task.spec, task.trace_sha256, task.time_limit) == (cell.spec, cell.trace_sha256, 12.5)
    with pytest.raises(dataclasses.FrozenInstanceError):
        task.cell_id = "other"  # type: ignore[misc]
    assert not hasattr(task, "__dict__")  # slots: no stray fields
    assert pickle.loads(pickle.dumps(task)) == task


def test_a_task_runs_an_absolute_trace_path_and_stores_the_path_as_given(tmp_path, monkeypatch):
    write_swf(tmp_path / "log.swf")
    monkeypatch.chdir(tmp_path)
    base = {"workload": {"trace": "log.swf"}, "platform": {"nodes": 64}}
    raw = {"name": "rel", "base": base, "grid": {"policy.name": ["easy"]}}
    (cell,) = expand(parse_sweep_config(raw, str(tmp_path / "rel.yaml")))
    task = task_for(cell, "rel")
    assert os.path.isabs(task.plan.workload["trace"])
    assert task.spec["workload"]["trace"] == cell.spec["workload"]["trace"]


@pytest.mark.parametrize("backend", [SerialBackend, ProcessBackend])
def test_outcomes_come_back_typed_through_a_backend(cells, backend):
    runner = backend() if backend is SerialBackend else backend(workers=1)
    try:
        runner.submit(0, [task_for(c, "records") for c in cells], True)
        ((batch_id, outcomes),) = runner.wait()
    finally:
        runner.close()
    assert batch_id == 0 and all(isinstance(o, Outcome) for o in outcomes)
    assert [o.cell_id for o in outcomes] == [c.cell_id for c in cells]
    assert [(o.cell_index, o.status) for o in outcomes] == [(c.index, "ok") for c in cells]
    for outcome in outcomes:
        assert list(outcome.segments) == ["cell_id", *SEGMENT_FIELDS]
        assert set(outcome.jobs["cell_id"]) == {outcome.cell_id}
        assert outcome.code
        with pytest.raises(dataclasses.FrozenInstanceError):
            outcome.code = ""  # type: ignore[misc]
        again = pickle.loads(pickle.dumps(outcome))
        assert (again.row, again.segments) == (outcome.row, outcome.segments)


def test_the_engine_records_segment_records_and_a_run_returns_their_fields():
    jobs = make_jobs([(0, 100, 2, 200), (0, 50, 3, 100), (10, 30, 4, 60)], 4)
    engine = Engine(jobs, Nodes(4), make_policy("easy"), record_segments=True)
    engine.run()
    assert len(engine.segments) == 3 and all(isinstance(s, Segment) for s in engine.segments)
    assert {s.job_id for s in engine.segments} == {j.job_id for j in jobs}
    spec = {
        "workload": {"model": "jann97", "jobs": 80, "load": 0.9},
        "platform": {"nodes": 64, "tiers": 2},
        "policy": {"name": "amcbf"},
    }
    assert list(simulate(spec, record_segments=True).segments) == list(SEGMENT_FIELDS)


def test_the_stored_segments_have_the_records_fields_and_types(tmp_path):
    config = small_config("segments")
    run_sweep(config, tmp_path, backend="serial", with_jobs=True, progress=False, max_cells=1)
    schema = read_jobs(tmp_path / config.name, "segments").schema
    hints = get_type_hints(Segment)
    expected = {int: pa.int64(), float: pa.float64(), str: pa.string(), tuple[int, ...]: pa.list_(pa.int64())}
    assert schema.names[: len(SEGMENT_FIELDS) + 1] == ["cell_id", *SEGMENT_FIELDS]
    assert [schema.field(name).type for name in SEGMENT_FIELDS] == [expected[hints[name]] for name in SEGMENT_FIELDS]
