"""What ``tiersweep tune`` and ``tiersweep report`` say when the study's storage fails, when the
search space cannot be sampled, when a trial's values make an invalid spec, and that a storage
URL's or a Ray address's password is never printed.

Every failure is real: a real SQLite study (``study.db``) deleted while a tuner runs, truncated,
overwritten with random bytes or with one random page, on a full tmpfs, past a file size limit
(``RLIMIT_FSIZE``); the command line runs in a child process (``python -m tiersweep``). Each
must end in exactly one line, no traceback, naming the file and the recovery, with exit status
2. URLs with passwords point at closed ports of localhost, or need a driver that is not
installed: nothing leaves the machine.

The study is the tiny one of ``test_tune.py``: AMCBF on 300 jann97 jobs over 64 two-tier nodes,
``policy.bg_threshold`` in [0.5, 1.0], two seeds, serial backend.
"""

from __future__ import annotations

import copy
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from sweep_helpers import tiny_tune_raw, write_yaml
from tiersweep.cli import main
from tiersweep.core.errors import SpecError
from tiersweep.sweep.redact import redact
from tiersweep.sweep.study_storage import START_OVER
from tiersweep.sweep.tune import run_tuning
from tiersweep.sweep.tune_config import load_tune_config, parse_tune_config

SECRET = "s3cr3tPa55"
BG = "policy.bg_threshold"


def tiny_raw(name: str = "tiny", **changes: Any) -> dict[str, Any]:
    """The tiny tuning config of 300 jann97 jobs, 2 seeds, 3 TPE trials, with top-level keys
    replaced by ``changes``."""
    defaults = {"seeds": 2, "trials": 3, "sampler": {"name": "tpe", "seed": 0}}
    return tiny_tune_raw(name, jobs=300, **{**defaults, **copy.deepcopy(changes)})


def cli(
    *args: str, preexec_fn: Any = None, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess:
    """``tiersweep ARGS`` in a child process, serial backend where it tunes."""
    return subprocess.run(
        [sys.executable, "-m", "tiersweep", *args],
        capture_output=True,
        text=True,
        preexec_fn=preexec_fn,
        env=env,
        timeout=timeout,
    )


def error_line(stderr: str) -> str:
    """The one error line of a failed command, checked: no traceback, exactly one line that
    starts with ``tiersweep:``, and nothing after it (the progress bar may come before)."""
    assert "Traceback" not in stderr, stderr
    lines = [line for line in re.split(r"[\r\n]", stderr) if line.strip()]
    errors = [line for line in lines if line.startswith("tiersweep:")]
    assert len(errors) == 1, stderr
    assert lines[-1] == errors[0], stderr
    return errors[0]


def assert_fails_with(done: subprocess.CompletedProcess, *fragments: str) -> str:
    """A command that failed with status 2 and one error line holding every fragment."""
    line = error_line(done.stderr)
    assert done.returncode == 2, (done.returncode, done.stderr)
    for fragment in fragments:
        assert fragment in line, (fragment, line)
    return line


def trial_states(url: str, name: str = "tiny") -> list[str]:
    import optuna

    return [t.state.name for t in optuna.load_study(study_name=name, storage=url).trials]


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    """A results folder holding the tiny study after 3 trials (``OUT/tiny``, with its
    ``study.db``), and the config file beside it (``OUT/tune.yaml``). Tests copy it."""
    out = tmp_path_factory.mktemp("finished")
    write_yaml(out / "tune.yaml", tiny_raw())
    run_tuning(load_tune_config(out / "tune.yaml"), out, backend="serial", progress=False)
    assert (out / "tiny" / "study.db").stat().st_size > 30_000
    return out


@pytest.fixture
def study_copy(finished, tmp_path) -> Path:
    """A copy of the finished study's folder: ``OUT`` with ``tune.yaml`` and ``tiny/``."""
    out = tmp_path / "out"
    shutil.copytree(finished, out)
    return out


def tune_args(out: Path, *more: str) -> list[str]:
    return ["tune", str(out / "tune.yaml"), "--out", str(out), "--backend", "serial", "--no-plots", *more]


# -- a damaged, deleted or full storage -----------------------------------------------------------


def _truncate(path: Path) -> None:
    os.truncate(path, path.stat().st_size // 3)


def _garbage(path: Path) -> None:
    path.write_bytes(os.urandom(path.stat().st_size))


def _one_page(path: Path) -> None:
    # A page in the middle of the file: the header still says SQLite, so the storage opens and
    # the damage shows when a table on that page is read.
    with path.open("r+b") as file:
        file.seek(20480)
        file.write(os.urandom(4096))


DAMAGE = {"truncated": _truncate, "random bytes": _garbage, "one random page": _one_page}


@pytest.mark.slow
@pytest.mark.parametrize("damage", list(DAMAGE.values()), ids=list(DAMAGE))
def test_a_damaged_storage_is_one_line_naming_the_file_and_the_recovery(study_copy, capsys, damage):
    db = study_copy / "tiny" / "study.db"
    damage(db)
    expected = (
        f"study storage {db.resolve()} is damaged (",
        f"restore it from a backup, or delete it and {START_OVER}",
    )
    assert_fails_with(cli(*tune_args(study_copy, "--trials", "5")), *expected)
    # The report reads the study for its plots: the same line, and no page.
    assert main(["report", str(study_copy / "tiny")]) == 2
    line = error_line(capsys.readouterr().err)
    assert line.startswith("tiersweep: error: ") and all(fragment in line for fragment in expected)
    assert not (study_copy / "tiny" / "report" / "index.html").exists()
    # The recovery works: without the file the study starts over, and the stored cells serve it.
    db.unlink()
    again = run_tuning(load_tune_config(study_copy / "tune.yaml"), study_copy, backend="serial", progress=False)
    assert [t.state.name for t in again.study.trials] == ["COMPLETE"] * 3
    assert again.computed == 0


@pytest.mark.slow
def test_a_storage_deleted_while_the_tuner_runs(study_copy):
    root = study_copy / "tiny"
    parts_before = set((root / "runs").glob("*.parquet"))
    child = subprocess.Popen(
        [sys.executable, "-m", "tiersweep", *tune_args(study_copy, "--trials", "300")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # The tuner has opened the study once it stores its first new cells.
        deadline = time.monotonic() + 240
        while set((root / "runs").glob("*.parquet")) == parts_before and child.poll() is None:
            assert time.monotonic() < deadline, "the tuner stored no cell"
            time.sleep(0.05)
        (root / "study.db").unlink()
        stdout, stderr = child.communicate(timeout=240)
    finally:
        if child.poll() is None:
            child.kill()
    done = subprocess.CompletedProcess(child.args, child.returncode, stdout, stderr)
    assert_fails_with(done, f"study storage {(root / 'study.db').resolve()} was deleted while in use: {START_OVER}")
    # A report of the folder cannot draw the study its trials table lists.
    missing = f"study storage {root / 'study.db'} is missing, while {root / 'trials'} lists"
    line = assert_fails_with(cli("report", str(root)), missing)
    assert START_OVER in line and f"or delete {root / 'trials'} to report without it" in line
    assert not (root / "report" / "index.html").exists()


@pytest.fixture
def tiny_disk(tmp_path):
    """A 256 KiB tmpfs (root only), unmounted afterwards."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mount = tmp_path / "disk"
    mount.mkdir()
    command = ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        # (lazily: this process may still hold the study's database open)
        subprocess.run(["umount", "--lazy", str(mount)], check=True)


@pytest.mark.slow
def test_a_full_disk_is_one_line_and_the_study_resumes_after(study_copy, tiny_disk):
    db = tiny_disk / "study.db"
    shutil.copy(study_copy / "tiny" / "study.db", db)
    filler = tiny_disk / "filler"
    filler.write_bytes(b"\0" * (256 * 1024 - db.stat().st_size - 12 * 1024))  # room for a few trials
    url = f"sqlite:///{db}"
    done = cli(*tune_args(study_copy, "--trials", "300", "--storage", url))
    assert_fails_with(
        done,
        f"study storage {db}: the disk is full (database or disk is full): "
        "free some space and run the same command again",
    )
    stopped = trial_states(url)
    assert stopped == ["COMPLETE"] * len(stopped) and len(stopped) >= 3  # its file still reads whole
    filler.unlink()
    config = load_tune_config(study_copy / "tune.yaml")
    resumed = run_tuning(config, study_copy, backend="serial", progress=False, trials=len(stopped) + 1, storage=url)
    assert [t.state.name for t in resumed.study.trials] == ["COMPLETE"] * (len(stopped) + 1)


@pytest.mark.slow
def test_a_file_size_limit_is_one_line(study_copy):
    db = study_copy / "tiny" / "study.db"
    limit = db.stat().st_size + 4096  # the file cannot grow by more than a page

    def limited() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # so that the write fails with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    done = cli(*tune_args(study_copy, "--trials", "300"), preexec_fn=limited)
    assert_fails_with(
        done, f"study storage {db.resolve()} cannot be written or read (disk I/O error", "run the same command again"
    )


# -- the search space -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key, low, high, inside",
    [("platform.tiers", 2, 4, 3.5), ("workload.jobs", 100, 300, 200.5), ("platform.nodes", 32, 64, 48.5)],
)
def test_a_float_range_on_an_integer_key_is_refused_before_the_study_starts(tmp_path, capsys, key, low, high, inside):
    raw = tiny_raw(params={key: {"low": low, "high": high}})
    message = (
        f"params.{key}: {key} takes whole numbers, and a float range proposes values such as {inside:g}; "
        f"give the range as {{low: {low}, high: {high}, type: int}}"
    )
    with pytest.raises(SpecError) as raised:
        parse_tune_config(raw)
    assert str(raised.value) == message
    out = tmp_path / "out"
    config = write_yaml(tmp_path / "tune.yaml", raw)
    assert main(["tune", str(config), "--out", str(out), "--backend", "serial", "--no-plots"]) == 2
    assert capsys.readouterr().err == f"tiersweep: error: {message}\n"
    assert not out.exists()
    # As the message says: an int range over the same ends is a valid space.
    assert parse_tune_config(tiny_raw(params={key: {"low": low, "high": high, "type": "int"}})).params[0].kind == "int"


#: Each choice is valid with the base spec's other values, but AMCBF needs two tiers: a trial
#: proposing one tier and AMCBF is an invalid spec that no range end shows.
COMBO = tiny_raw(
    "combo",
    base={
        "workload": {"model": "jann97", "jobs": 300},
        "platform": {"nodes": 64, "tiers": 2},
        "policy": {"name": "easy"},
    },
    params={"platform.tiers": {"choices": [1, 2]}, "policy.name": {"choices": ["easy", "amcbf"]}},
    seeds=1,
    trials=8,
    sampler={"name": "random", "seed": 0},
)


def invalid(params: dict[str, Any]) -> bool:
    return params == {"platform.tiers": 1, "policy.name": "amcbf"}


@pytest.mark.slow
def test_a_trial_whose_values_make_an_invalid_spec_fails_and_is_not_resumed(tmp_path):
    import optuna

    out = tmp_path / "out"
    config = write_yaml(tmp_path / "tune.yaml", COMBO)
    first = cli("tune", str(config), "--out", str(out), "--backend", "serial", "--no-plots")
    assert first.returncode == 0, first.stderr
    url = f"sqlite:///{out / 'combo' / 'study.db'}"
    trials = optuna.load_study(study_name="combo", storage=url).trials
    failed = [t for t in trials if t.state.name == "FAIL"]
    assert len(trials) == 8 and failed  # (seed 0 proposes the invalid pair)
    assert all(invalid(t.params) for t in failed)
    assert all(t.state.name == "COMPLETE" for t in trials if not invalid(t.params))
    assert all("policy 'amcbf' needs 'tiers'" in t.user_attrs["error"] for t in failed)
    assert f"8 trials ({8 - len(failed)} complete, {len(failed)} fail)" in first.stdout
    # A later run continues: nothing is left running to be resumed first.
    second = cli("tune", str(config), "--out", str(out), "--backend", "serial", "--no-plots", "--trials", "10")
    assert second.returncode == 0, second.stderr
    again = optuna.load_study(study_name="combo", storage=url).trials
    assert len(again) == 10 and [t.state for t in again[:8]] == [t.state for t in trials]
    assert "RUNNING" not in {t.state.name for t in again}


@pytest.mark.slow
def test_a_study_left_with_an_invalid_running_trial_recovers(tmp_path):
    # As an earlier version left it: the invalid trial RUNNING, with no owner, resumed (and
    # failing) first on every run.
    import optuna

    out = tmp_path / "out"
    config = write_yaml(tmp_path / "tune.yaml", {**COMBO, "trials": 3})
    url = f"sqlite:///{out / 'combo' / 'study.db'}"
    (out / "combo").mkdir(parents=True)
    study = optuna.create_study(study_name="combo", storage=url, directions=["minimize"])
    study.enqueue_trial({"platform.tiers": 1, "policy.name": "amcbf"})
    left = study.ask({p.key: p.distribution() for p in parse_tune_config(COMBO).params})
    assert invalid(left.params)
    done = cli("tune", str(config), "--out", str(out), "--backend", "serial", "--no-plots")
    assert done.returncode == 0, done.stderr
    trials = optuna.load_study(study_name="combo", storage=url).trials
    assert len(trials) == 3 and trials[0].state.name == "FAIL" and invalid(trials[0].params)
    assert "policy 'amcbf' needs 'tiers'" in trials[0].user_attrs["error"]


# -- passwords --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url, shown",
    [
        (f"postgresql://user:{SECRET}@127.0.0.1:9/db", "postgresql://user:***@127.0.0.1:9/db"),
        (f"mysql://user:{SECRET}@127.0.0.1:9/db", "mysql://user:***@127.0.0.1:9/db"),
        (f"postgresql://user:{SECRET}@127.0.0.1:notaport/db", "postgresql://user:***@127.0.0.1:notaport/db"),
        (f"postgresql://user@127.0.0.1:9/db?password={SECRET}", "postgresql://user@127.0.0.1:9/db?password=***"),
        (f"nosuch://user:{SECRET}@127.0.0.1:9/db", "nosuch://user:***@127.0.0.1:9/db"),
    ],
    ids=["postgresql", "mysql", "bad port", "password parameter", "unknown scheme"],
)
def test_a_storage_password_is_never_printed(tmp_path, capsys, url, shown):
    config = write_yaml(tmp_path / "tune.yaml", tiny_raw())
    args = ["tune", str(config), "--out", str(tmp_path / "out"), "--backend", "serial", "--no-plots", "--storage", url]
    assert main(args) == 2
    captured = capsys.readouterr()
    assert SECRET not in captured.out + captured.err
    line = error_line(captured.err)
    assert line.startswith(f"tiersweep: error: storage {shown!r}: cannot open this Optuna storage (")


def test_a_configured_storage_password_is_in_no_output_and_no_file(tmp_path, capsys):
    # The config names a server (with its password); --storage runs the study in a local file.
    server = f"postgresql://tuner:{SECRET}@127.0.0.1:9/studies"
    raw_text = write_yaml(tmp_path / "x.yaml", tiny_raw(study={"storage": server})).read_text()
    text = f"# shared study: {server}\n" + raw_text
    (tmp_path / "tune.yaml").write_text(text)
    out = tmp_path / "out"
    local = f"sqlite:///{tmp_path / 'local.db'}"
    args = ["tune", str(tmp_path / "tune.yaml"), "--out", str(out), "--backend", "serial", "--storage", local]
    assert main(args) == 0
    assert main(["report", str(out / "tiny")]) == 0
    captured = capsys.readouterr()
    assert SECRET not in captured.out + captured.err
    files = [p for p in out.rglob("*") if p.is_file()]
    assert any(p.name == "manifest.json" for p in files) and any(p.name == "index.html" for p in files)
    leaking = [p for p in files if SECRET.encode() in p.read_bytes()]
    assert leaking == []
    assert "postgresql://tuner:***@127.0.0.1:9/studies" in (out / "tiny" / "manifest.json").read_text()


@pytest.mark.slow
def test_a_ray_address_password_is_never_printed(tmp_path):
    config = write_yaml(tmp_path / "tune.yaml", tiny_raw())
    address = f"ray://user:{SECRET}@127.0.0.1:9"
    out = str(tmp_path / "out")
    done = cli("tune", str(config), "--out", out, "--backend", "ray", "--no-plots", "--address", address)
    assert SECRET not in done.stdout + done.stderr
    assert_fails_with(done, "--address ray://user:***@127.0.0.1:9: no Ray cluster answers there")
    # The same address from the environment, to a sweep.
    sweep_raw = {"name": "s", "base": tiny_raw()["base"], "grid": {"workload.load": [0.5]}}
    sweep = write_yaml(tmp_path / "sweep.yaml", sweep_raw)
    done = cli("sweep", str(sweep), "--out", out, "--backend", "ray", env={**os.environ, "RAY_ADDRESS": address})
    assert SECRET not in done.stdout + done.stderr
    assert_fails_with(done, "ray://user:***@127.0.0.1:9: no Ray cluster answers there")


_URL_TEXT = st.text(
    st.characters(min_codepoint=33, max_codepoint=126, blacklist_characters="'\""), min_size=1, max_size=20
)


@settings(max_examples=60, deadline=None)
@given(
    scheme=st.sampled_from(["postgresql", "postgresql+psycopg2", "mysql", "ray", "redis"]),
    user=st.text(st.characters(min_codepoint=33, max_codepoint=126, blacklist_characters="'\":/@"), max_size=10),
    password=_URL_TEXT,
    host=st.from_regex(r"[a-z0-9]([a-z0-9.-]{0,15}[a-z0-9])?(:[0-9]{1,5})?", fullmatch=True),
    before=st.sampled_from(["", "storage '", "--address ", "cannot open ("]),
    after=st.sampled_from(["", "'", ": no Ray cluster answers there", " (Connection refused)"]),
)
def test_redact_hides_any_password_and_keeps_the_rest(scheme, user, password, host, before, after):
    assume(password not in f"{before}{scheme}://{user}:@{host}/db{after}" and password != "***")
    text = f"{before}{scheme}://{user}:{password}@{host}/db{after}"
    assert redact(text) == f"{before}{scheme}://{user}:***@{host}/db{after}"
    assert redact(redact(text)) == redact(text)
