"""Issue #25: one malformed journal line was reported as "written by an earlier smmile version". The journal
now tells apart a record a kill cut short (ignored, its problem run again), a corrupt line, a line of the
wrong shape and a journal of another format, naming the file and the line and saying what to do."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from smmile.errors import UserError
from smmile.runner.executor import RESPONSES_FORMAT, Journal


def record(key: str, **extra) -> dict:
    return {"v": RESPONSES_FORMAT, "key": key, "index": 0, "problem_id": f"p{key}", "status": "ok",
            "response": {"text": "B", "full_text": None, "error": None, "usage": {"output_tokens": 3},
                         "seconds": 0.5, "extra": {}}, "item": {"mode": "ICL"}, "time": 1.0, **extra}


def journal_of(tmp_path: Path, *lines: str) -> Journal:
    path = tmp_path / ".smmile" / "result_x.journal.jsonl"
    path.parent.mkdir(exist_ok=True)
    path.write_text("".join(lines))
    return Journal(path, version=RESPONSES_FORMAT)


def line(rec) -> str:
    return json.dumps(rec) + "\n"


def test_a_last_record_cut_short_by_a_kill_is_ignored_wherever_it_was_cut(tmp_path):
    whole = json.dumps(record("b", note='é "quoted" \\ ☃ 😀', flag=True, nothing=None, n=-1.5e-3))
    for cut in range(1, len(whole)):
        journal = journal_of(tmp_path, line(record("a")), whole[:cut])
        assert list(journal.records()) == ["a"], whole[:cut]
    assert list(journal_of(tmp_path, line(record("a")), whole).records()) == ["a", "b"]  # only its newline missing


def test_a_record_cut_inside_a_character_is_ignored(tmp_path):
    torn = (json.dumps(record("b", note="é"), ensure_ascii=False)).encode()
    path = journal_of(tmp_path, line(record("a"))).path
    path.write_bytes(path.read_bytes() + torn[:torn.index("é".encode()) + 1])
    assert list(Journal(path, version=RESPONSES_FORMAT).records()) == ["a"]


def test_a_cut_record_that_a_resumed_run_moved_past_is_ignored(tmp_path):
    """The resumed run starts on a fresh line, so the cut record is no longer the last one."""
    journal = journal_of(tmp_path, line(record("a")), line(record("b"))[:60])
    journal.append(record("c"))
    journal.close()
    lines = journal.path.read_text().splitlines()
    assert len(lines) == 3 and json.loads(lines[2])["key"] == "c"
    assert list(Journal(journal.path, version=RESPONSES_FORMAT).records()) == ["a", "c"]


def test_zeros_left_by_a_crash_are_ignored(tmp_path):
    journal = journal_of(tmp_path, line(record("a")))
    journal.path.write_bytes(journal.path.read_bytes() + b"\0" * 64)
    assert list(journal.records()) == ["a"]


@pytest.mark.parametrize("bad,why", [
    ('{"v": 2, "key": "b", "status": "ok"} garbage\n', "corrupt"),
    ("not json at all\n", "corrupt"),
    ('{"v": 2, "key": "b", "status": Xok}\n', "corrupt"),
    (b'{"v": 2, "key": "\xff\xfe"}\n'.decode("latin-1"), "corrupt"),
])
def test_a_corrupt_line_in_the_middle_names_the_file_and_the_line(tmp_path, bad, why):
    journal = journal_of(tmp_path, line(record("a")), line(record("b")), bad, line(record("c")))
    if "\xff" in bad:
        journal.path.write_bytes(journal.path.read_bytes().replace(bad.encode(), bad.encode("latin-1")))
    with pytest.raises(UserError) as refused:
        journal.records()
    message = str(refused.value)
    assert message.startswith(f"{journal.path} line 3 is {why}")
    assert "delete that line" in message and "earlier smmile version" not in message


@pytest.mark.parametrize("rec", [
    ["a", "list"],
    "a string",
    {"v": 2, "status": "ok"},
    {**record("b"), "status": "maybe"},
    {**record("b"), "item": None},
    {**record("b"), "response": {**record("b")["response"], "seconds": "slow"}},
])
def test_a_line_of_the_wrong_shape_names_the_file_and_the_line(tmp_path, rec):
    journal = journal_of(tmp_path, line(record("a")), line(rec), line(record("c")))
    with pytest.raises(UserError, match=r"line 2 is not a record of this journal .*delete that line") as refused:
        journal.records()
    assert str(journal.path) in str(refused.value) and "earlier smmile version" not in str(refused.value)


def test_a_journal_of_the_earlier_format_is_named_as_such(tmp_path):
    old = {"key": "a", "status": "ok", "row": {"problem_id": "x"}}
    journal = journal_of(tmp_path, line(old))
    with pytest.raises(UserError, match=r"result_x\.journal\.jsonl was written by an earlier smmile version "
                                        r"\(line 1 has format 1, this one reads format 2\); move it aside"):
        journal.records()


def test_a_journal_of_a_later_format_is_not_called_earlier(tmp_path):
    journal = journal_of(tmp_path, line({**record("a"), "v": RESPONSES_FORMAT + 1}))
    with pytest.raises(UserError, match="written by a later smmile version"):
        journal.records()


def test_the_judge_cache_journal_keeps_its_free_form_records(tmp_path):
    """Without a version the journal checks only that a record is an object with a key."""
    path = tmp_path / "judge_cache.jsonl"
    path.write_text(line({"key": "a", "reply": "1"}) + line({"key": "b"}) + '{"key": "c", "rep')
    assert list(Journal(path).records()) == ["a", "b"]
    path.write_text(line({"key": "a"}) + line({"reply": "no key"}) + line({"key": "b"}))
    with pytest.raises(UserError, match="judge_cache.jsonl line 2 is not a record"):
        Journal(path).records()
