"""No file is written through a symbolic link (``core/safe_files.py``).

A symbolic link at ``OUT/NAME/.tiersweep.lock`` written through would make ``sweep``,
``tune`` and ``compact`` truncate and overwrite the link's target, and ``report`` write
``index.html`` through a link: anyone who can write to a shared results folder could have
tiersweep overwrite any file its user may write. Each command is run for real (a subprocess, tiny
configs) with a link pointing at a victim file: the command refuses in one line, and the
victim and the link are left as they were.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sweep_helpers import small_raw, tiny_tune_raw, write_yaml
from tiersweep.core.safe_files import LinkRefusedError, atomic_writer, open_in_place, write_atomic
from tiersweep.sweep.folder_lock import LOCK_NAME

PROJECT = Path(__file__).resolve().parents[1]
VICTIM_TEXT = "precious data that tiersweep must never touch\n"


def _victim(tmp_path: Path) -> Path:
    victim = tmp_path / "victim.txt"
    victim.write_text(VICTIM_TEXT)
    return victim


def _tiersweep(*args: str) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items() if key != "RAY_ADDRESS"}
    return subprocess.run(
        [sys.executable, "-m", "tiersweep", *args], cwd=PROJECT, env=env, capture_output=True, text=True, timeout=300
    )


def _assert_refused(result: subprocess.CompletedProcess, link: Path, victim: Path) -> None:
    assert result.returncode == 2, result.stdout + result.stderr
    assert (
        result.stderr == f"tiersweep: error: {link}: is a symbolic link; tiersweep writes no file through a link "
        "or onto a special file: remove it, or write somewhere else\n"
    ), result.stderr
    assert victim.read_text() == VICTIM_TEXT
    assert link.is_symlink() and os.readlink(link) == str(victim)


# -- the commands ---------------------------------------------------------------------------------
@pytest.mark.parametrize("command", ["sweep", "tune"])
def test_a_link_at_the_lock_is_refused_by_sweep_and_tune(tmp_path, command):
    victim = _victim(tmp_path)
    raw = small_raw("s") if command == "sweep" else tiny_tune_raw("s")
    config = write_yaml(tmp_path / "s.yaml", raw)
    folder = tmp_path / "out" / "s"
    folder.mkdir(parents=True)
    lock = folder / LOCK_NAME
    lock.symlink_to(victim)
    extra = ["--no-plots"] if command == "tune" else []
    result = _tiersweep(command, str(config), "--out", str(tmp_path / "out"), "--backend", "serial", *extra)
    _assert_refused(result, lock, victim)
    assert not (folder / "runs").exists()  # refused before anything ran


def test_a_link_at_the_study_storage_is_refused_by_tune(tmp_path):
    """SQLite opens the study's file itself, following links: tune checks the name first."""
    victim = _victim(tmp_path)
    config = write_yaml(tmp_path / "s.yaml", tiny_tune_raw("s"))
    folder = tmp_path / "out" / "s"
    folder.mkdir(parents=True)
    study = folder / "study.db"
    study.symlink_to(victim)
    result = _tiersweep("tune", str(config), "--out", str(tmp_path / "out"), "--backend", "serial", "--no-plots")
    _assert_refused(result, study, victim)


@pytest.mark.slow
def test_a_link_at_the_lock_is_refused_by_compact(tmp_path):
    victim = _victim(tmp_path)
    config = write_yaml(tmp_path / "s.yaml", small_raw("s", seeds=1))
    out = tmp_path / "out"
    for _ in range(2):  # two part files, so that there is something to compact
        assert _tiersweep("sweep", str(config), "--out", str(out), "--backend", "serial", "--force").returncode == 0
    folder = out / "s"
    parts = sorted(p.name for p in (folder / "runs").iterdir())
    assert len(parts) >= 2
    lock = folder / LOCK_NAME
    lock.unlink()
    lock.symlink_to(victim)
    _assert_refused(_tiersweep("compact", str(folder)), lock, victim)
    assert sorted(p.name for p in (folder / "runs").iterdir()) == parts


@pytest.mark.slow
def test_report_refuses_a_link_at_index_html(tmp_path):
    victim = _victim(tmp_path)
    config = write_yaml(tmp_path / "s.yaml", small_raw("s", seeds=1))
    out = tmp_path / "out"
    assert _tiersweep("sweep", str(config), "--out", str(out), "--backend", "serial").returncode == 0
    report = tmp_path / "report"
    report.mkdir()
    page = report / "index.html"
    page.symlink_to(victim)
    _assert_refused(_tiersweep("report", str(out / "s"), "--out", str(report)), page, victim)
    assert not [p for p in report.iterdir() if p.name.endswith(".tmp")]  # no temporary file left behind


def test_a_hard_link_at_the_lock_is_refused(tmp_path):
    # A second name of the victim would be written through as a symbolic link would.
    victim = _victim(tmp_path)
    folder = tmp_path / "out" / "s"
    folder.mkdir(parents=True)
    os.link(victim, folder / LOCK_NAME)
    config = write_yaml(tmp_path / "s.yaml", small_raw("s"))
    result = _tiersweep("sweep", str(config), "--out", str(tmp_path / "out"), "--backend", "serial")
    assert result.returncode == 2 and "is not a plain file with one name" in result.stderr, result.stderr
    assert victim.read_text() == VICTIM_TEXT


# -- the helpers ------------------------------------------------------------------------------------
def test_atomic_write_replaces_the_file_and_leaves_no_temporary_file(tmp_path):
    path = tmp_path / "a.json"
    path.write_text("old")
    os.chmod(path, 0o600)
    write_atomic(path, "new")
    assert path.read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json"]


def test_a_failed_atomic_write_leaves_the_old_file_whole(tmp_path):
    path = tmp_path / "a.txt"
    path.write_text("old")
    with pytest.raises(RuntimeError):
        with atomic_writer(path, "w", encoding="utf-8") as handle:
            handle.write("half of the new")
            raise RuntimeError("a write that fails half way")
    assert path.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt"]


def test_links_planted_at_every_guessable_temporary_name_are_not_followed(tmp_path, monkeypatch):
    # ``.NAME.tmp-PID`` and the like are guessable: a link planted there must not be written through.
    victim = _victim(tmp_path)
    folder = tmp_path / "out"
    folder.mkdir()
    for name in (f".manifest.json.tmp-{os.getpid()}", ".manifest.json.tmp", ".manifest.json.0.tmp"):
        (folder / name).symlink_to(victim)
    write_atomic(folder / "manifest.json", "{}")
    assert (folder / "manifest.json").read_text() == "{}" and not (folder / "manifest.json").is_symlink()
    assert victim.read_text() == VICTIM_TEXT


def test_the_lock_is_never_opened_through_a_link(tmp_path):
    victim = _victim(tmp_path)
    link = tmp_path / "lock"
    link.symlink_to(victim)
    with pytest.raises(LinkRefusedError, match=r"is a symbolic link"):
        open_in_place(link, os.O_RDWR | os.O_CREAT)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(LinkRefusedError, match=r"is a special file"):
        open_in_place(fifo, os.O_RDWR | os.O_CREAT)
    assert victim.read_text() == VICTIM_TEXT
