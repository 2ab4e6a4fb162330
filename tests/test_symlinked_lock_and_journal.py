"""Issue #19, 7: a symbolic link where smmile keeps its lock or its journal was followed: the lock truncated and
overwrote the link's target, the journal appended to it. Both are now refused in one line (exit 2), the
target untouched."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from smmile import fsguard
from smmile.cli import main as smmile
from smmile.errors import UserError
from smmile.runner.executor import RESPONSES_FORMAT, Journal

PRECIOUS = "a file of the user's that no smmile command may change\n"


@pytest.fixture
def precious(tmp_path) -> Path:
    target = tmp_path / "elsewhere" / "notes.txt"
    target.parent.mkdir()
    target.write_text(PRECIOUS)
    return target


def test_a_lock_file_that_is_a_link_is_refused_and_its_target_kept(tmp_path, precious):
    out = tmp_path / "o"
    out.mkdir()
    link = out / "result_x.csv.lock"
    link.symlink_to(precious)
    with pytest.raises(UserError, match=r"lock file .*result_x\.csv\.lock is a symbolic link"):
        fsguard.OutputLock(out / "result_x.csv", "the results").acquire()
    assert precious.read_text() == PRECIOUS and link.is_symlink()


def test_a_lock_link_inside_an_output_folder_is_refused(tmp_path, precious):
    (tmp_path / "o").mkdir()
    (tmp_path / "o" / fsguard.LOCK_IN_FOLDER).symlink_to(precious)
    with pytest.raises(UserError, match="is a symbolic link"):
        with fsguard.OutputLock(tmp_path / "o", "the report"):
            pass
    assert precious.read_text() == PRECIOUS


def test_a_dangling_lock_link_creates_nothing(tmp_path):
    (tmp_path / "results.csv.lock").symlink_to(tmp_path / "made-by-smmile")
    with pytest.raises(UserError, match="is a symbolic link"):
        fsguard.OutputLock(tmp_path / "results.csv", "the results").acquire()
    assert not (tmp_path / "made-by-smmile").exists()


def test_a_journal_that_is_a_link_is_refused_before_reading_and_appending(tmp_path, precious):
    path = tmp_path / ".smmile" / "result_x.journal.jsonl"
    path.parent.mkdir()
    path.symlink_to(precious)
    journal = Journal(path, version=RESPONSES_FORMAT)
    with pytest.raises(UserError, match=r"journal .*result_x\.journal\.jsonl is a symbolic link"):
        journal.records()
    with pytest.raises(UserError, match="is a symbolic link"):
        journal.append({"key": "k"})
    assert precious.read_text() == PRECIOUS


def test_smmile_run_refuses_a_linked_lock_and_a_linked_journal_in_one_line(tmp_path, precious, demo_dir, capsys):
    out = tmp_path / "o"
    out.mkdir()
    run = ["run", "--model", "majority", "--task_format", "mcqa", "--dataset", "demo", "--output-dir", str(out)]
    lock = out / "result_majority_ICL_mcqa.csv.lock"
    lock.symlink_to(precious)
    assert smmile(run) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "symbolic link" in err and "Traceback" not in err
    lock.unlink()
    journal = out / ".smmile" / "result_majority_ICL_mcqa.journal.jsonl"
    journal.parent.mkdir()
    journal.symlink_to(precious)
    assert smmile(run) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "symbolic link" in err
    assert precious.read_text() == PRECIOUS
    assert not (out / "result_majority_ICL_mcqa.csv").exists()


def test_a_journal_of_its_own_is_still_written_and_read(tmp_path):
    journal = Journal(tmp_path / ".smmile" / "j.jsonl")
    journal.append({"key": "a", "status": "ok", "reply": "1"})
    journal.close()
    assert json.loads((tmp_path / ".smmile" / "j.jsonl").read_text())["key"] == "a"
    assert list(Journal(tmp_path / ".smmile" / "j.jsonl").records()) == ["a"]
