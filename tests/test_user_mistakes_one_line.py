"""Issue #19, 7: mistakes and a full disk gave a traceback and exit 1 (which means "a problem failed"). Each
is now one line on stderr and exit 2, with nothing overwritten."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest

from smmile.cli import main as smmile

RUN = ["run", "--model", "majority", "--task_format", "mcqa", "--dataset", "demo"]
STEM = "result_majority_ICL_mcqa"


def one_line(err: str) -> str:
    """The error, alone on the last line of stderr (progress lines may come before it)."""
    lines = err.splitlines()
    assert "Traceback" not in err and [l for l in lines if l.startswith("error:")] == lines[-1:], err
    return lines[-1]


def disk_full(monkeypatch, after: int = 0) -> None:
    """Every fsync after the first `after` fails as on a full disk (the error names no file, as a write's does)."""
    calls = []
    real = os.fsync

    def fsync(fd):
        calls.append(fd)
        if len(calls) > after:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(fd)

    monkeypatch.setattr(os, "fsync", fsync)


def test_disk_full_while_writing_an_output_names_it_and_keeps_the_old_file(tmp_path, demo_dir, monkeypatch, capsys):
    out = tmp_path / "o"
    assert smmile([*RUN, "--output-dir", str(out)]) == 0
    csv = out / f"{STEM}.csv"
    before = csv.read_bytes()
    csv.write_bytes(before + b"an edit of the user's\n")  # what must survive the failed rewrite
    capsys.readouterr()
    disk_full(monkeypatch)
    assert smmile([*RUN, "--output-dir", str(out)]) == 2
    err = one_line(capsys.readouterr().err)
    assert f"no space left on the device to write {csv}" in err and "kept as it was" in err
    assert csv.read_bytes() == before + b"an edit of the user's\n"
    assert not [p.name for p in out.iterdir() if ".tmp" in p.name]


def test_disk_full_while_journaling_says_the_finished_problems_are_kept(tmp_path, demo_dir, monkeypatch, capsys):
    out = tmp_path / "o"
    disk_full(monkeypatch, after=2)
    assert smmile([*RUN, "--output-dir", str(out)]) == 2
    err = one_line(capsys.readouterr().err)
    journal = out / ".smmile" / f"{STEM}.journal.jsonl"
    assert f"no space left on the device to write {journal}: the problems finished so far are kept there" in err
    assert err.endswith("free some space and rerun the same command to resume")
    monkeypatch.undo()
    assert smmile([*RUN, "--output-dir", str(out)]) == 0  # the rerun resumes


@pytest.mark.parametrize("filename,says", [(None, "error: No space left on device; free some space and rerun"),
                                            ("/x/o.csv", "error: No space left on device: /x/o.csv; free some "
                                                         "space and rerun")])
def test_disk_full_anywhere_else_is_one_line_and_exit_2(capsys, filename, says):
    from smmile.cli import common as fd

    def full():
        raise OSError(errno.ENOSPC, "No space left on device", filename)

    assert fd.guarded(full) == 2
    assert capsys.readouterr().err == says + "\n"


def test_a_file_where_the_journal_folder_goes(tmp_path, demo_dir, capsys):
    out = tmp_path / "o"
    out.mkdir()
    (out / ".smmile").write_text("mine\n")
    assert smmile([*RUN, "--output-dir", str(out)]) == 2
    err = one_line(capsys.readouterr().err)
    assert f"{out / '.smmile'} is a file" in err
    assert (out / ".smmile").read_text() == "mine\n" and not (out / f"{STEM}.csv").exists()


@pytest.mark.parametrize("line", [
    [1, 2, 3],
    {"v": 2, "key": "k"},
    {"v": 2, "key": "k", "index": 0, "problem_id": "p", "status": "ok", "response": "B", "item": {}},
    {"v": 2, "key": "k", "index": 0, "problem_id": "p", "status": "ok", "response": {"txt": "B"}, "item": {}},
    {"v": 2, "key": "k", "index": 0, "problem_id": "p", "status": "ok", "response": {"usage": 3}, "item": {}},
    {"v": "2", "key": "k"},
], ids=["list", "no-fields", "response-not-object", "unknown-field", "usage-not-object", "version-text"])
def test_journal_lines_of_the_wrong_shape(tmp_path, demo_dir, capsys, line):
    out = tmp_path / "o"
    assert smmile([*RUN, "--output-dir", str(out)]) == 0
    journal = out / ".smmile" / f"{STEM}.journal.jsonl"
    lines = journal.read_text().splitlines()
    lines.insert(1, json.dumps(line))
    journal.write_text("\n".join(lines) + "\n")
    csv = (out / f"{STEM}.csv").read_bytes()
    capsys.readouterr()
    assert smmile([*RUN, "--output-dir", str(out)]) == 2
    err = one_line(capsys.readouterr().err)
    assert f"{journal} line 2 is not a record of this journal" in err and "delete that line" in err
    assert (out / f"{STEM}.csv").read_bytes() == csv


# ---------------------------------------------------------------- API flags


@pytest.mark.parametrize("flag,value,says", [
    ("--max-retries", "-1", "must be at least 0, not -1"),
    ("--max-cost", "-1", "must be at least 0, not -1"),
    ("--price", "abc", "'abc' is not IN:OUT"),
    ("--price", "1:2:3", "is not IN:OUT"),
    ("--price", "-1:2", "is not IN:OUT"),
    ("--timeout", "0", "must be above 0"),
    ("--concurrency", "0", "must be at least 1"),
    ("--max-cost", "nan", "must be at least 0"),
])
def test_bad_api_flags_are_refused_by_the_parser(tmp_path, monkeypatch, capsys, flag, value, says):
    from api_server import FakeApi
    from smmile.cli import api_models

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    with FakeApi() as api:
        with pytest.raises(SystemExit) as stop:
            api_models.anthropic_main(["--dataset", "demo", "--output-dir", str(tmp_path / "o"), "--base-url",
                                       api.url, "--inference_mode", "0-shot", f"{flag}={value}"])
        assert api.requests() == []
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "Traceback" not in err
    assert err.splitlines()[-1].endswith(f"argument {flag}: {says}") or says in err.splitlines()[-1], err
    assert not (tmp_path / "o").exists()


def test_smmile_run_refuses_them_too(tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        smmile(["run", "--model", "gpt-4o", "--output-dir", str(tmp_path / "o"), "--price", "abc"])
    assert stop.value.code == 2 and "--price: 'abc' is not IN:OUT" in capsys.readouterr().err


def test_good_api_flags_still_parse():
    from smmile.cli import api_models, common

    p = common.parser("t")
    api_models.add_api_flags(p)
    args = p.parse_args(["--max-retries", "0", "--max-cost", "0", "--price", "2.5:10", "--timeout", "0.5"])
    assert api_models.run_settings(args).as_dict() == {"max_retries": 0, "max_cost": 0.0, "price": "2.5:10",
                                                       "timeout": 0.5}
    assert p.parse_args(["--price", "3"]).price == "3"


@pytest.mark.parametrize("backend", ["nosuch", "nosuch:Backend", "smmile.models.api.openai_backend:Nope"])
def test_an_unknown_backend_is_one_line_naming_the_known_ones(backend, tmp_path, capsys):
    assert smmile(["run", "--model", "gpt-4o", "--backend", backend, "--dataset", "demo",
                   "--output-dir", str(tmp_path)]) == 2
    line = one_line(capsys.readouterr().err)
    assert f"unknown backend {backend!r}" in line and "openai-compatible" in line and "module:Class" in line
    assert not list(tmp_path.iterdir())
