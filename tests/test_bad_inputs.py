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
        (
            {"platform": {"kind": "fat_tree", "k": 4, "slots": float("inf")}, "policy": {"name": "bw_fcfs"}},
            "platform.slots",
        ),
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


# -- spec files -----------------------------------------------------------------------------------
def _run_spec(tmp_path, capsys, content: bytes | str, name: str = "spec.yaml") -> str:
    """Run a spec file holding ``content``; return the one error line (exit 2 asserted)."""
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err.strip()


def test_a_spec_that_is_not_utf8_names_the_file_the_line_and_the_byte(tmp_path, capsys):
    err = _run_spec(tmp_path, capsys, b"seed: 1\nworkload: {model: jann97, name: \xff}\n")
    assert err == f"tiersweep: error: {tmp_path / 'spec.yaml'}:2: not UTF-8 text (byte 0xff); save the file as UTF-8"


@pytest.mark.parametrize(
    "content",
    [
        "a: " + "[" * 5000 + "]" * 5000 + "\n",
        "a: " + "{b: " * 5000 + "1" + "}" * 5000 + "\n",
        "a: " + "[" * 100 + "]" * 100 + "\n",  # parses, but deeper than any spec
    ],
    ids=["lists 5000 deep", "mappings 5000 deep", "lists 100 deep"],
)
@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_a_spec_nested_thousands_deep_is_refused(tmp_path, capsys, content, suffix):
    if suffix == ".json":
        content = content.replace("a: ", '{"a": ', 1).replace("{b: ", '{"b": ').rstrip("\n") + "}\n"
    err = _run_spec(tmp_path, capsys, content, "spec" + suffix)
    assert err.startswith(f"tiersweep: error: {tmp_path / ('spec' + suffix)}: nested too deeply")


@pytest.mark.parametrize(
    "content",
    [
        # the "billion laughs": nine levels of nine references
        "a: &a [x, x, x, x, x, x, x, x, x]\n"
        + "".join(f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(8))
        + "seed: 1\n",
        "a: &a [*a, *a]\n",  # a list that holds itself
    ],
    ids=["alias bomb", "recursive alias"],
)
def test_an_alias_bomb_or_a_recursive_alias_is_refused_before_it_is_walked(tmp_path, capsys, content):
    err = _run_spec(tmp_path, capsys, content)
    assert "once YAML aliases are expanded" in err or "nested too deeply" in err


@pytest.mark.parametrize(
    ("content", "line", "key"),
    [
        ("seed: 1\nworkload: {model: jann97, jobs: 50}\nseed: 2\n", 3, "seed"),
        ("workload:\n  model: jann97\n  jobs: 50\n  jobs: 60\n", 4, "jobs"),
        ("workload: {model: jann97, jobs: 50, model: lublin03}\n", 1, "model"),
    ],
)
def test_a_key_given_twice_is_refused_naming_both_lines(tmp_path, capsys, content, line, key):
    err = _run_spec(tmp_path, capsys, content)
    assert err.startswith(
        f"tiersweep: error: {tmp_path / 'spec.yaml'}:{line}: the key {key!r} is given twice (first on line"
    )


def test_a_json_spec_with_a_key_given_twice_is_refused_too(tmp_path, capsys):
    err = _run_spec(
        tmp_path, capsys, '{"seed": 1,\n "workload": {"model": "jann97", "jobs": 50},\n "seed": 2}', "spec.json"
    )
    assert err.startswith(
        f"tiersweep: error: {tmp_path / 'spec.json'}:3: the key 'seed' is given twice (first on line 1)"
    )


def test_merged_keys_may_still_be_overridden(tmp_path):
    from tiersweep.sweep.specfile import load_spec_file

    path = tmp_path / "spec.yaml"
    path.write_text("workload: &w {model: jann97, jobs: 50}\nplatform: {nodes: 32}\nx: {<<: *w, jobs: 60}\n")
    assert load_spec_file(path)["x"] == {"model": "jann97", "jobs": 60}


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1_000", "1_000"),
        ("1:30", "1:30"),
        ("yes", "yes"),
        ("on", "on"),
        ("0x10", "0x10"),
        ("2026-01-01", "2026-01-01"),
        ("010", 10),
        ("1e3", 1000.0),
        ("-2", -2),
        ("+3", 3),
        ("1.5", 1.5),
        (".inf", float("inf")),
        ("true", True),
        ("~", None),
    ],
)
def test_spec_scalars_follow_yaml_12_not_yaml_11(tmp_path, text, value):
    # YAML 1.1 (PyYAML's default) reads 1_000 as 1000, 1:30 as 90, yes as true and 010 as 8.
    from tiersweep.sweep.specfile import load_spec_file, parse_override

    path = tmp_path / "spec.yaml"
    path.write_text(f"a: {text}\n")
    assert load_spec_file(path) == {"a": value}
    assert parse_override(f"a={text}") == ("a", value)


@pytest.mark.parametrize("jobs", ["1_000", "'１０００'", "1:30"])
def test_a_number_written_as_text_is_refused_naming_the_key(tmp_path, capsys, jobs):
    err = _run_spec(tmp_path, capsys, f"workload: {{model: jann97, jobs: {jobs}}}\n")
    assert err.startswith("tiersweep: error: workload.jobs: expected an integer from 1 to 100,000,000")
    path = tmp_path / "ok.yaml"
    path.write_text("workload: {model: jann97}\n")
    assert main(["run", str(path), "--set", f"workload.jobs={jobs}"]) == 2
    assert capsys.readouterr().err.startswith("tiersweep: error: workload.jobs: expected an integer from 1")


# -- command-line numbers -------------------------------------------------------------------------
@pytest.mark.parametrize(
    "argv",
    [
        ["sweep", "--max-cells", "-1", "c.yaml"],
        ["sweep", "--max-cells", "0", "c.yaml"],
        ["sweep", "--max-cells", "1_0", "c.yaml"],
        ["sweep", "--max-cells", "１０", "c.yaml"],
        ["tune", "--trials", "0", "c.yaml"],
        ["tune", "--trials", "-5", "c.yaml"],
        ["workload", "generate", "jann97", "--out", "x.swf", "--jobs", "１０"],
        ["workload", "generate", "jann97", "--out", "x.swf", "--load", "０.８"],
        ["bench", "--repeat", "0"],
    ],
    ids=lambda argv: " ".join(argv[:3]),
)
def test_a_bad_count_on_the_command_line_is_refused_before_anything_runs(argv, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "error: argument --" in err and "expected a" in err and "Traceback" not in err


# -- sweep and tuning configs ---------------------------------------------------------------------
def _sweep_error(tmp_path, capsys, text: str, *extra: str) -> str:
    path = tmp_path / "sweep.yaml"
    path.write_text(text)
    assert main(["sweep", "--backend", "serial", "--out", str(tmp_path / "out"), *extra, str(path)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "out").exists()  # refused before anything ran or was written
    return err.strip()


BASE_TEXT = "name: s\nbase: {workload: {model: jann97, jobs: 50}, platform: {nodes: 16}}\n"


def test_a_sweep_whose_exclusions_leave_no_cell_is_refused(tmp_path, capsys):
    err = _sweep_error(
        tmp_path, capsys, BASE_TEXT + "grid: {policy.name: [easy, fcfs]}\nexclude: [{policy.name: [easy, fcfs]}]\n"
    )
    assert err == "tiersweep: error: exclude: the rules drop every grid point, so the sweep has no cells to run"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("seeds: 1000000000\n", "seeds: expected a count from 1 to 1,000,000"),
        (
            f"grid: {{workload.jobs: [{','.join(map(str, range(1, 2001)))}], "
            f"platform.nodes: [{','.join(map(str, range(16, 1016)))}]}}\n",
            "the grid has 2,000,000 points x 1 seeds = 2,000,000 cells, more than 1,000,000",
        ),
    ],
    ids=["a billion seeds", "two million grid points"],
)
def test_an_absurd_grid_is_refused_before_it_is_expanded(tmp_path, capsys, text, message):
    import time

    started = time.perf_counter()
    err = _sweep_error(tmp_path, capsys, BASE_TEXT + text, "--dry-run")
    assert message in err
    assert time.perf_counter() - started < 10  # (refused from the counts: expanding would take all memory)


@pytest.mark.parametrize(
    "text",
    [
        "grid:\n  policy.name: [easy]\n  policy.name: [fcfs]\n",
        "grid: {policy.name: [easy]}\ngrid: {workload.jobs: [50, 60]}\n",
    ],
    ids=["a repeated axis", "a repeated grid block"],
)
def test_a_repeated_axis_or_grid_block_is_refused(tmp_path, capsys, text):
    err = _sweep_error(tmp_path, capsys, BASE_TEXT + text, "--dry-run")
    assert "is given twice (first on line" in err


TUNE_TEXT = (
    "name: t\nbase: {workload: {model: jann97, jobs: 50}, platform: {nodes: 16, tiers: 2}, policy: {name: smcbf}}\n"
    "params:\n  policy.bg_threshold: {low: 0.5, high: 1.0}\nobjective: {mean_bsld: minimize}\nseeds: 1\ntrials: 2\n"
)


@pytest.mark.parametrize(
    ("text", "start"),
    [
        (
            TUNE_TEXT.replace("params:\n", "params:\n  seed: {low: 0, high: 100}\n"),
            "params.seed: the seed is not tuned",
        ),
        (TUNE_TEXT + "variants: [{seed: 3}]\n", "variants[0].seed: the seed is not tuned"),
    ],
    ids=["seed as a parameter", "seed in a variant"],
)
def test_the_seed_is_not_a_tuning_parameter(tmp_path, capsys, text, start):
    path = tmp_path / "tune.yaml"
    path.write_text(text)
    assert main(["tune", "--backend", "serial", "--no-plots", "--out", str(tmp_path / "out"), str(path)]) == 2
    assert capsys.readouterr().err.startswith(f"tiersweep: error: {start}")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "url",
    ["nosuch://x", "sqlite:////no/such/folder/x.db", "postgresql://u@127.0.0.1:1/db", "journal:/no/such/folder/j.log"],
)
def test_a_bad_storage_url_is_a_one_line_error_naming_it(tmp_path, capsys, url):
    path = tmp_path / "tune.yaml"
    path.write_text(TUNE_TEXT)
    assert (
        main(["tune", "--backend", "serial", "--no-plots", "--storage", url, "--out", str(tmp_path / "out"), str(path)])
        == 2
    )
    err = capsys.readouterr().err
    assert (
        err.startswith(f"tiersweep: error: storage {url!r}: cannot open this Optuna storage (")
        and "Traceback" not in err
    )
    assert len(err.strip().splitlines()) == 1


def test_a_trace_that_cannot_be_read_names_it_and_the_reason(tmp_path, capsys):
    # /proc/self/mem exists and opens, and reading it from its start fails (EIO): an unreadable
    # file even for root, whom permission bits do not stop.
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"workload": {"trace": "/proc/self/mem"}, "platform": {"nodes": 16}}))
    assert main(["run", str(spec)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tiersweep: error: /proc/self/mem: cannot be read (") and len(err.strip().splitlines()) == 1


def test_a_trace_whose_header_gives_no_processors_says_where_the_zero_came_from(tmp_path, capsys):
    trace = tmp_path / "log.swf"
    trace.write_text("; MaxProcs: 0\n1 0 0 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1\n")
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"workload": {"trace": str(trace)}}))
    assert main(["run", str(spec)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"tiersweep: error: platform.nodes: {trace} says its machine has 0 processors (MaxProcs)")
    assert main(["workload", "describe", str(trace)]) == 0  # (describing it takes the widest job's size)


@pytest.mark.parametrize("trials", [0, -5])
def test_a_tuning_run_asked_for_no_trials_is_refused_through_the_api_too(tmp_path, trials):
    # No trials is not "the config's count", and a negative count must not leave a waiting
    # trial in the study.
    import yaml

    from tiersweep.core.errors import SpecError
    from tiersweep.sweep.tune import run_tuning
    from tiersweep.sweep.tune_config import parse_tune_config

    config = parse_tune_config(yaml.safe_load(TUNE_TEXT))
    with pytest.raises(SpecError, match="^trials: expected a positive number"):
        run_tuning(config, tmp_path / "out", backend="serial", trials=trials, progress=False)
    study = tmp_path / "out" / "t" / "study.db"
    assert not study.exists()


# -- more a new user tries ------------------------------------------------------------------------
def test_a_ray_address_where_nothing_listens_is_refused_at_once(tmp_path, capsys):
    # ray.init retries a mistyped port for minutes with no message: it must not look like a hang.
    import socket
    import time

    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens there
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    path = tmp_path / "sweep.yaml"
    path.write_text(BASE_TEXT)
    started = time.perf_counter()
    argv = ["sweep", "--backend", "ray", "--address", f"127.0.0.1:{port}", "--out", str(tmp_path / "out"), str(path)]
    assert main(argv) == 2
    assert time.perf_counter() - started < 30
    err = capsys.readouterr().err
    assert err.startswith(f"tiersweep: error: --address 127.0.0.1:{port}: no Ray cluster answers there")


def test_output_files_get_their_folders_made_or_name_the_file_in_the_way(tmp_path, capsys):
    spec = tmp_path / "spec.yaml"
    spec.write_text("workload: {model: jann97, jobs: 30}\nplatform: {nodes: 16}\n")
    assert main(["run", str(spec), "--jobs-out", str(tmp_path / "new" / "deep" / "jobs.csv")]) == 0
    assert (tmp_path / "new" / "deep" / "jobs.csv").read_text().startswith("job_id")
    afile = tmp_path / "afile"
    afile.write_text("x")
    capsys.readouterr()
    for argv in (
        ["run", str(spec), "--jobs-out", str(afile / "jobs.csv")],
        ["workload", "generate", "jann97", "--jobs", "10", "--out", str(afile / "x.swf")],
    ):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert f"cannot make the folder {afile}: {afile} is a file, not a folder" in err and len(err.splitlines()) == 1


def test_a_load_the_model_cannot_reach_names_the_key(tmp_path, capsys):
    out = tmp_path / "x.swf"
    assert main(["workload", "generate", "feitelson96", "--jobs", "10", "--load", "100", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        "tiersweep: error: workload.load: feitelson96's arrivals cannot be scaled to an offered load of 100"
    )
