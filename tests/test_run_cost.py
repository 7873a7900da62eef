"""The start-up and per-job cost of a run (issue "cluster-scale cost"): each shortcut taken for
speed gives exactly what the plain way gives, and a run imports only what it needs."""

from __future__ import annotations

import gc
import json
import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tiersweep.core.collector import collector_paused
from tiersweep.core.decisions import Start
from tiersweep.core.errors import SpecError
from tiersweep.core.jobs import Job
from tiersweep.core.metrics import _median, _percentile
from tiersweep.core.platforms import PLATFORMS
from tiersweep.core.policies import POLICIES, BasePolicy
from tiersweep.core.registry import Registry
from tiersweep.core.workloads.cpu import _CONTIGUOUS_FROM, _sequential_sums
from tiersweep.core.workloads.swf import _header
from tiersweep.sweep.specfile import load_spec_file

ROOT = Path(__file__).resolve().parents[1]

# Modules a dedicated-node EASY run has no use for.
NOT_FOR_EASY = (
    "tiersweep.core.policies.consolidation",
    "tiersweep.core.policies.embedding",
    "tiersweep.core.policies.vm_backfill",
    "tiersweep.core.policies.two_tier_easy",
    "tiersweep.core.policies.gang",
    "tiersweep.core.platforms.shared_vms",
    "tiersweep.core.platforms.fat_tree",
    "tiersweep.core.platforms.gang",
    "yaml",
    "numpy.ma",
)


def test_an_easy_run_from_a_json_spec_imports_no_other_plugin_nor_yaml(tmp_path, kth_path):
    spec = tmp_path / "easy.json"
    spec.write_text(json.dumps({"workload": {"trace": str(kth_path), "jobs": 2000}, "policy": {"name": "easy"}}))
    code = (
        "import sys, io, contextlib\n"
        "from tiersweep.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    assert main(['run', {str(spec)!r}, '--json']) == 0\n"
        f"print(sorted(m for m in {NOT_FOR_EASY!r} if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_registries_list_every_builtin_in_order_and_import_on_demand():
    assert list(POLICIES) == [
        "fcfs", "easy", "conservative", "selective", "cmbf", "ambf", "cmcbf", "amcbf", "smcbf",
        "bw_fcfs", "sbf", "sdf", "bgmbf", "bgmbfsdf", "bw_reject", "vm_backfill",
        "keasy", "reasy", "gs", "bgs", "mgs",
    ]  # fmt: skip
    assert list(PLATFORMS) == ["nodes", "shared_vms", "fat_tree", "gang"]
    for name, cls in POLICIES.items():
        assert cls.name == name and issubclass(cls, BasePolicy)
    assert [cls.kind for cls in PLATFORMS.values()] == list(PLATFORMS)
    from tiersweep.core.policies import Consolidation, VmBackfill

    assert issubclass(POLICIES["amcbf"], Consolidation) and POLICIES["vm_backfill"] is VmBackfill


def test_a_lazy_registration_is_checked_when_first_used():
    class Base:
        params: dict = {}

    registry = Registry("thing", Base, "name", ("name",))
    registry.register_lazy("wrong", "tiersweep.core.policies.backfill", "Easy")
    assert "wrong" in registry and list(registry) == ["wrong"]
    with pytest.raises(TypeError):  # Easy is no Base
        registry["wrong"]
    policies = Registry("policy", BasePolicy, "name", ("name",))
    policies.register_lazy("fifo", "tiersweep.core.policies.backfill", "Fcfs")
    with pytest.raises(TypeError, match="declares name 'fcfs'"):
        policies.lookup("fifo")
    with pytest.raises(SpecError, match="unknown value 'nope'; valid choices: fifo"):
        policies.lookup("nope")
    policies.register_lazy("fcfs", "tiersweep.core.policies.backfill", "Fcfs")
    assert policies.lookup("fcfs").name == "fcfs"
    with pytest.raises(TypeError, match="already registered"):
        policies.register_lazy("fcfs", "tiersweep.core.policies.backfill", "Fcfs")


def test_json_specs_are_read_as_json_and_anything_else_as_yaml(tmp_path):
    plain = tmp_path / "a.json"
    plain.write_text('{"workload": {"trace": "x.swf"}, "policy": {"name": "easy", "x": 1e3}}')
    assert load_spec_file(plain) == {"workload": {"trace": "x.swf"}, "policy": {"name": "easy", "x": 1000.0}}
    commented = tmp_path / "b.json"  # not JSON, but YAML: read as YAML
    commented.write_text('# a comment\n{"workload": {"trace": "x.swf"}}\n')
    assert load_spec_file(commented) == {"workload": {"trace": "x.swf"}}
    listed = tmp_path / "c.json"
    listed.write_text("[1, 2]")
    with pytest.raises(SpecError, match="expected a mapping of spec keys, got list"):
        load_spec_file(listed)


@pytest.mark.parametrize("n", [*range(1, 12), 100, 101, 28475])
def test_median_and_percentile_are_numpys(n):
    rng = np.random.default_rng(n)
    for scale in (1e-3, 1.0, 1e7):
        for values in (rng.normal(size=n) * scale, np.round(rng.exponential(size=n) * scale)):
            assert _median(values) == np.median(values)
            for q in (0, 10, 50, 90, 99, 100):
                assert _percentile(values, q) == np.percentile(values, q)
    with_nan = np.array([1.0, math.nan, 2.0][: max(n, 2)])
    assert math.isnan(_median(with_nan)) and math.isnan(_percentile(with_nan, 90))


def test_jobs_built_from_columns_are_the_jobs_the_constructor_builds():
    columns = ([7, 8], [0.0, 5.0], [1, 64], [10.0, 0.0], [math.nan, 30.0], [10.0, 30.0])
    bulk = Job.from_columns(*columns)
    for index, (job, row) in enumerate(zip(bulk, zip(*columns))):
        one = Job(index, *row)
        for name in Job.__slots__:
            a, b = getattr(job, name), getattr(one, name)
            assert a == b or (a != a and b != b), name
        assert job.cpu_true == one.cpu_true == (1.0,) * job.size and job.cpu_est == one.cpu_est


def test_a_job_without_cpu_values_has_dedicated_ones_on_first_read():
    job = Job(0, 1, 0.0, 3, 10.0)
    job.cpu_est = [0.5, 0.5, 0.5]
    assert job.cpu_true == (1.0, 1.0, 1.0) and job.cpu_est == [0.5, 0.5, 0.5] and job.cpu_sum == 3.0


def test_header_comments_are_found_as_a_regex_over_the_whole_file_finds_them():
    whole = re.compile(r"^[ \t]*;[ \t]*([A-Za-z][\w-]*)[ \t]*:[ \t]*(.*?)[ \t\r]*$", re.M)

    def expected(raw: bytes) -> dict[str, str]:
        header: dict[str, str] = {}
        for key, value in whole.findall(raw.decode("utf-8", errors="replace")):
            header.setdefault(key, value)
        return header

    cases = [
        b"; MaxProcs: 128\r\n;MaxNodes:64 ; x: y\n  \t; Note-1: caf\xe9 \t\r\n1 2 3 ; Late: 5\n;Last: 6",
        b";", b"\n;\n", b"; K: v\n; K: w", b";\xc3\xa9t\xc3\xa9: x\n; \xc3\xa9A: 1\n; A\xc3\xa9: \xe9\n",
        b"\r; X: 1\r; Y: 2\n", b";a:\n;b: \n;c:", b"1 2 3\n",
    ]  # fmt: skip
    for raw in cases:
        assert _header(raw) == expected(raw), raw


def test_cpu_sums_are_left_to_right_sums_whatever_the_job_size():
    rng = np.random.default_rng(3)
    sizes = rng.choice([2, 3, 17, _CONTIGUOUS_FROM - 1, _CONTIGUOUS_FROM, _CONTIGUOUS_FROM + 1, 1000], size=60)
    draws = rng.uniform(0.4, 1.0, int(sizes.sum()))
    sums = _sequential_sums(draws, sizes)
    start = 0
    for size, total in zip(sizes.tolist(), sums.tolist()):
        expected = 0.0
        for value in draws[start : start + size].tolist():
            expected += value  # 0.0 + d0 is d0: the same additions as the accumulation
        assert total == expected
        start += size


def test_a_start_is_a_value():
    job = Job(0, 1, 0.0, 1, 1.0)
    assert Start(job) == Start(job, 0, None) and hash(Start(job)) == hash(Start(job)) and Start(job) != Start(job, 1)


def test_the_collector_pause_restores_what_it_found():
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
