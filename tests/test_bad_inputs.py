"""Bad input ends in a one-line ``tiersweep: error:`` (exit 2) naming the file or the key, never
a traceback: damaged trace files and infinite numbers where integers belong."""

from __future__ import annotations

import gzip
import json

import pytest

from tiersweep.cli import main


@pytest.fixture
def swf_gz(tmp_path, kth_path):
    """The KTH log's gzip bytes."""
    return kth_path.read_bytes()


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda data: data[:3000], "the gzip data is truncated"),
        (lambda data: data + b"garbage", "corrupt gzip data"),
        (None, "is a folder, not an SWF file"),
    ],
    ids=["truncated gzip", "trailing garbage", "a folder"],
)
def test_a_damaged_trace_is_a_one_line_error_naming_it(tmp_path, swf_gz, capsys, damage, message):
    trace = tmp_path / "log.swf.gz"
    if damage is None:
        trace.mkdir()
    else:
        trace.write_bytes(damage(swf_gz))
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"workload": {"trace": str(trace), "jobs": 100}}))
    assert main(["run", str(spec)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"tiersweep: error: {trace}: {message}") and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_an_intact_gzip_trace_still_reads(tmp_path, swf_gz, capsys):
    trace = tmp_path / "log.swf.gz"
    trace.write_bytes(gzip.compress(gzip.decompress(swf_gz)))
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"workload": {"trace": str(trace), "jobs": 100}}))
    assert main(["run", str(spec)]) == 0


@pytest.mark.parametrize(
    ("spec", "key"),
    [
        ({"seed": float("inf")}, "seed"),
        ({"workload": {"model": "jann97", "jobs": float("inf")}}, "workload.jobs"),
        ({"platform": {"nodes": float("inf")}}, "platform.nodes"),
        ({"platform": {"kind": "fat_tree", "k": float("inf")}, "policy": {"name": "bw_fcfs"}}, "platform.k"),
        ({"platform": {"kind": "fat_tree", "k": 4, "slots": float("inf")}, "policy": {"name": "bw_fcfs"}}, "platform.slots"),
        ({"platform": {"nodes": float("nan")}}, "platform.nodes"),
    ],
)
def test_an_infinite_or_missing_number_where_an_integer_belongs_names_the_key(tmp_path, capsys, spec, key):
    full = {"workload": {"model": "jann97", "jobs": 100}, "platform": {"nodes": 16}}
    full.update(spec)  # a section given replaces the default one
    path = tmp_path / "spec.yaml"
    path.write_text(json.dumps(full).replace("Infinity", ".inf").replace("NaN", ".nan"))
    assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"tiersweep: error: {key}: expected") and "Traceback" not in err
