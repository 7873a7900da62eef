"""A cell is computed from exactly the trace bytes its id names, or fails: a trace edited while a
sweep runs is never stored as ``ok`` under the ids of its old content."""

from __future__ import annotations

import hashlib

import pytest

from sweep_helpers import runs_frame, swf_lines
from tiersweep.core.errors import TraceChangedError
from tiersweep.core.simulate import simulate
from tiersweep.sweep.config import expand, parse_sweep_config
from tiersweep.sweep.driver import run_sweep


def _config(trace) -> object:
    return parse_sweep_config(
        {
            "name": "edited",
            "base": {"workload": {"trace": str(trace)}, "platform": {"nodes": 64}},
            "grid": {"policy.name": ["fcfs", "easy", "conservative"]},
            "seeds": 2,
        }
    )


def test_a_trace_edited_mid_sweep_fails_the_cells_that_would_read_the_new_content(tmp_path):
    trace = tmp_path / "log.swf"
    old = "\n".join(swf_lines(40)) + "\n"
    new = "\n".join(swf_lines(41)) + "\n"  # one more job: other results
    trace.write_text(old)
    old_digest, new_digest = (hashlib.sha256(text.encode()).hexdigest() for text in (old, new))
    config = _config(trace)

    def edit(stored: int) -> None:
        if stored == 1:  # after the first cell, while the others are still to run
            trace.write_text(new)

    outcome = run_sweep(config, tmp_path / "out", backend="serial", progress=False, on_batch=edit)
    frame = runs_frame(outcome.store)
    assert len(frame) == 6
    ok, failed = frame[frame["status"] == "ok"], frame[frame["status"] == "failed"]
    assert len(ok) == 1 and len(failed) == 5
    assert outcome.failed == 5
    expected = (
        f"TraceChangedError: {trace}: the trace changed since the sweep was expanded: expected sha256 {old_digest}, "
        f"found {new_digest}; run the sweep again to use the new content"
    )
    assert all(error.startswith(expected) for error in failed["error"])

    # Run again: the cells of the new content have other ids and are all computed, from it.
    again = run_sweep(config, tmp_path / "out", backend="serial", progress=False)
    assert again.computed == 6 and again.failed == 0
    fresh = runs_frame(again.store)
    fresh = fresh[fresh["cell_id"].isin({c.cell_id for c in again.cells})]
    assert (fresh["status"] == "ok").all() and (fresh["report.records"] == 41).all()


def test_a_cell_carries_the_digest_its_id_was_made_from(tmp_path):
    trace = tmp_path / "log.swf"
    trace.write_text("\n".join(swf_lines(10)) + "\n")
    (cell,) = [c for c in expand(_config(trace)) if c.spec["policy"]["name"] == "fcfs" and c.replicate == 0]
    assert cell.trace_sha256 == hashlib.sha256(trace.read_bytes()).hexdigest()


def test_simulate_refuses_a_trace_whose_bytes_have_another_digest(tmp_path):
    trace = tmp_path / "log.swf"
    trace.write_text("\n".join(swf_lines(10)) + "\n")
    spec = {"workload": {"trace": str(trace)}, "platform": {"nodes": 64}}
    digest = hashlib.sha256(trace.read_bytes()).hexdigest()
    assert simulate(spec, trace_sha256=digest).report["records"] == 10
    with pytest.raises(TraceChangedError, match=f"expected sha256 {'0' * 64}, found {digest}"):
        simulate(spec, trace_sha256="0" * 64)
