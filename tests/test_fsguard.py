"""smmile.fsguard: atomic writes, writable checks, owned output folders, output locks."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from smmile import fsguard
from smmile.errors import UserError

REPO = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------ atomic writes

def test_atomic_write_replaces_whole_file_and_keeps_mode(tmp_path):
    target = tmp_path / "out.json"
    target.write_text("old")
    target.chmod(0o640)
    fsguard.atomic_write_json(target, {"a": 1})
    assert json.loads(target.read_text()) == {"a": 1}
    assert target.stat().st_mode & 0o777 == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_new_file_gets_umask_mode_not_0600(tmp_path):
    old = os.umask(0o022)
    try:
        fsguard.atomic_write_text(tmp_path / "new.txt", "x")
    finally:
        os.umask(old)
    assert (tmp_path / "new.txt").stat().st_mode & 0o777 == 0o644


@pytest.mark.parametrize("exc", [RuntimeError, KeyboardInterrupt])
def test_interrupted_write_leaves_old_file_and_no_temp(tmp_path, exc):
    target = tmp_path / "table.csv"
    target.write_text("complete old table\n")
    with pytest.raises(exc):
        with fsguard.atomic_path(target) as tmp:
            assert tmp.parent == tmp_path and tmp.suffix == ".csv"
            tmp.write_text("half of a new ta")
            raise exc()
    assert target.read_text() == "complete old table\n"
    assert [p.name for p in tmp_path.iterdir()] == ["table.csv"]


def test_atomic_write_text_and_bytes(tmp_path):
    fsguard.atomic_write_text(tmp_path / "a.txt", "héllo")
    fsguard.atomic_write_bytes(tmp_path / "b.bin", b"\x00\x01")
    assert (tmp_path / "a.txt").read_text(encoding="utf-8") == "héllo"
    assert (tmp_path / "b.bin").read_bytes() == b"\x00\x01"


# ------------------------------------------------------------ writable checks

def test_check_writable_dir_accepts_new_nested_folder_without_creating_it(tmp_path):
    target = tmp_path / "a" / "b"
    assert fsguard.check_writable_dir(target, "output folder") == target
    assert not (tmp_path / "a").exists()
    assert list(tmp_path.iterdir()) == []


def test_check_writable_dir_refuses_a_file_and_a_path_below_a_file(tmp_path):
    (tmp_path / "f").write_text("keep")
    with pytest.raises(UserError, match="f is a file, not a folder"):
        fsguard.check_writable_dir(tmp_path / "f", "output folder")
    with pytest.raises(UserError, match=r"sub cannot be created: .*f is a file"):
        fsguard.check_writable_dir(tmp_path / "f" / "sub", "output folder")
    assert (tmp_path / "f").read_text() == "keep"


def test_check_writable_dir_refuses_an_unwritable_folder(tmp_path, monkeypatch):
    # The suite may run as root, for whom chmod does not protect; fail the probe itself instead.
    def no_space(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(fsguard.tempfile, "TemporaryFile", no_space)
    with pytest.raises(UserError, match="cannot write the report folder .*No space left"):
        fsguard.check_writable_dir(tmp_path, "report folder")


def test_check_writable_file_refuses_a_folder(tmp_path):
    with pytest.raises(UserError, match="is a folder"):
        fsguard.check_writable_file(tmp_path, "comparison table")
    assert fsguard.check_writable_file(tmp_path / "x.txt", "comparison table") == tmp_path / "x.txt"


# ------------------------------------------------------------ owned output folders

def test_new_folder_is_created_and_marked(tmp_path):
    out = fsguard.prepare_output_dir(tmp_path / "rep", "smmile report")
    assert fsguard.read_marker(out)["owner"] == "smmile report"


def test_foreign_files_are_refused_and_survive(tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "thesis.tex").write_text("years of work")
    with pytest.raises(UserError, match="not empty and was not written by `smmile report`.*--force"):
        fsguard.prepare_output_dir(out, "smmile report")
    assert (out / "thesis.tex").read_text() == "years of work"
    assert not (out / fsguard.MARKER).exists()


def test_own_marker_is_reused_other_owner_refused_force_allows(tmp_path):
    out = fsguard.prepare_output_dir(tmp_path / "o", "smmile report")
    (out / "report.md").write_text("old report")
    assert fsguard.prepare_output_dir(out, "smmile report") == out
    with pytest.raises(UserError, match="written by `smmile report`"):
        fsguard.prepare_output_dir(out, "smmile figures")
    fsguard.prepare_output_dir(out, "smmile figures", force=True)
    assert fsguard.read_marker(out)["owner"] == "smmile figures"
    assert (out / "report.md").read_text() == "old report"


def test_empty_folder_and_folder_with_only_a_lock_are_usable(tmp_path):
    (tmp_path / "e").mkdir()
    fsguard.prepare_output_dir(tmp_path / "e", "smmile stats")
    (tmp_path / "l").mkdir()
    with fsguard.OutputLock(tmp_path / "l", "stats"):
        fsguard.prepare_output_dir(tmp_path / "l", "smmile stats")


@pytest.mark.parametrize("force", [False, True])
def test_dangerous_folders_are_refused_even_with_force(tmp_path, monkeypatch, force):
    work = tmp_path / "home" / "me" / "work"
    work.mkdir(parents=True)
    (work / "data.csv").write_text("x")
    monkeypatch.setenv("HOME", str(tmp_path / "home" / "me"))
    monkeypatch.chdir(work)
    for danger, why in [(".", "working folder"), ("..", "home folder"), (str(tmp_path / "home"), "home folder"),
                        ("/", "root folder"), (str(REPO), "smmile project"),
                        (str(REPO / "inference_and_evaluation"), "smmile project"),
                        (str(REPO / "inference_and_evaluation" / "smmile" / "data"), "smmile code")]:
        with pytest.raises(UserError, match=why):
            fsguard.prepare_output_dir(danger, "smmile data variant", force=force)
    assert (work / "data.csv").read_text() == "x"
    assert sorted(p.name for p in work.iterdir()) == ["data.csv"]


def test_a_file_is_not_an_output_folder(tmp_path):
    (tmp_path / "f").write_text("keep")
    with pytest.raises(UserError, match="is a file"):
        fsguard.prepare_output_dir(tmp_path / "f", "smmile report", force=True)
    assert (tmp_path / "f").read_text() == "keep"


# ------------------------------------------------------------ locks

_HOLD = """
import sys, time
from smmile.fsguard import OutputLock
with OutputLock(sys.argv[1], "test output"):
    print("ready", flush=True)
    time.sleep(60)
"""


def _holder(path: Path) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(REPO / "inference_and_evaluation"))
    proc = subprocess.Popen([sys.executable, "-c", _HOLD, str(path)], stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout.readline().strip() == "ready"
    return proc


def test_second_process_is_refused_naming_the_holder_then_takes_over_after_kill(tmp_path):
    target = tmp_path / "results.csv"
    proc = _holder(target)
    try:
        with pytest.raises(UserError, match=rf"test2 is being written by process {proc.pid} \(`-c"):
            with fsguard.OutputLock(target, "test2"):
                pass
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert (tmp_path / "results.csv.lock").exists()  # left behind by the killed holder
    with fsguard.OutputLock(target, "test2") as lock:
        assert json.loads(lock.file.read_text())["pid"] == os.getpid()
    assert not (tmp_path / "results.csv.lock").exists()


def test_folder_lock_lives_inside_and_is_exclusive_within_one_process(tmp_path):
    with fsguard.OutputLock(tmp_path, "the judge's results folder") as lock:
        assert lock.file == tmp_path / fsguard.LOCK_IN_FOLDER
        with pytest.raises(UserError, match=rf"process {os.getpid()}"):
            fsguard.OutputLock(tmp_path, "the judge's results folder").acquire()
    with fsguard.OutputLock(tmp_path, "again"):
        pass


def test_a_folder_holding_only_its_gitkeep_counts_as_empty(tmp_path):
    from smmile import fsguard

    (tmp_path / "figures").mkdir()
    (tmp_path / "figures" / ".gitkeep").write_text("")
    fsguard.prepare_output_dir(tmp_path / "figures", "smmile figures")
    assert (tmp_path / "figures" / ".gitkeep").exists()
