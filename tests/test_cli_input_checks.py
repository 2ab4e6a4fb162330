"""Bad inputs are one line and exit 2 before any model loads; writes where they do not belong are refused; a killed
run's temp figure files are cleaned on the next run (issue #36, deliverable 6). Inputs are written here by hand."""

from __future__ import annotations

import os
import shutil
import time
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from smmile import cli
from smmile.cli.judge import main as judge_main
from test_data_malformed_datasets import ORIGINAL, one_error_line, png, row, run_baseline, write_open, write_parquet

REPO = Path(__file__).resolve().parents[1]


def dataset(tmp_path: Path, **changes) -> Path:
    """Two problems of two rows; `changes` ({"b1_question": value}) replace the cells of problem b's query."""
    rows = [row("a", 0, "x"), row("a", 1, "y"), row("b", 0, "x"), row("b", 1, "y")]
    for key, value in changes.items():
        rows[3][key.removeprefix("b1_")] = value
    return write_parquet(tmp_path / "data", rows)


@pytest.mark.parametrize("column", ["question", "answer"])
def test_a_null_cell_is_one_line_naming_problem_and_row(tmp_path, capsys, column):
    assert run_baseline(dataset(tmp_path, **{f"b1_{column}": None}), tmp_path / "res") == 2
    line = one_error_line(capsys.readouterr().err)
    assert "problem b, row order 1" in line and f"{column} cell is empty" in line
    assert not (tmp_path / "res").exists() or not list((tmp_path / "res").glob("result_*"))


def test_a_question_column_of_non_utf8_bytes_is_refused_before_the_run(tmp_path, capsys):
    image = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    schema = pa.schema([("problem_id", pa.string()), ("order", pa.int64()), ("question", pa.binary()),
                        ("answer", pa.string()), ("image", image), ("image_url", pa.string())])
    rows = [{**row(pid, order, "x"), "question": b"\xff\xfe caf\xe9 ?"} for pid in "ab" for order in (0, 1)]
    (tmp_path / "data").mkdir()
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), tmp_path / "data" / "train.parquet")
    assert run_baseline(tmp_path / "data", tmp_path / "res") == 2
    line = one_error_line(capsys.readouterr().err)
    assert "question cell holds bytes that are not UTF-8" in line and "problem a, row order 0" in line
    assert not list((tmp_path / "res").glob("result_*")) if (tmp_path / "res").exists() else True


def test_utf8_bytes_in_the_question_column_are_read_as_text(tmp_path):
    from smmile.data.load import load_problems

    rows = [{**row("a", order, "x"), "question": "café?".encode()} for order in (0, 1)]
    image = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    schema = pa.schema([("problem_id", pa.string()), ("order", pa.int64()), ("question", pa.binary()),
                        ("answer", pa.string()), ("image", image), ("image_url", pa.string())])
    (tmp_path / "d").mkdir()
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), tmp_path / "d" / "train.parquet")
    assert load_problems(str(tmp_path / "d"))[0].query.question == "café?"


@pytest.mark.parametrize("judge, says", [
    ("openai-compatible:m@http://127.0.0.1:99999/v1", "port"),
    ("openai-compatible:m@not a url", "not an http"),
    ("openai-compatible:m@ftp://127.0.0.1/v1", "not an http"),
    ("ollama:llama3.3@@@", "not an http"),
    ("openai-compatible:m@http:///v1", "no host"),
])
def test_a_jury_url_that_cannot_work_is_one_line_before_any_request(tmp_path, capsys, judge, says):
    write_open(tmp_path / "res", "qwen7B", ORIGINAL)
    assert judge_main([str(tmp_path / "res"), "--jury", judge, "ollama:llama3.3"]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert judge in line and says in line
    assert not list((tmp_path / "res").glob("*_evaluationllm.json"))


@pytest.mark.parametrize("url, says", [
    ("not a url", "not an http"), ("ftp://127.0.0.1/v1", "not an http"), ("127.0.0.1:8000/v1", "not an http"),
    ("http://127.0.0.1:99999/v1", "port"), ("http:///v1", "no host"),
])
@pytest.mark.parametrize("argv", [
    ["judge", "{res}", "--judge-backend", "openai-compatible", "--judge-base-url"],
    ["run", "--backend", "openai-compatible", "--model", "m", "--dataset", "demo", "--output-dir", "{out}",
     "--base-url"],
    ["run", "--model", "llama33textonly", "--dataset", "demo", "--output-dir", "{out}", "--base-url"],
    ["run", "--model", "gpt-4o", "--dataset", "demo", "--output-dir", "{out}", "--base-url"],
])
def test_a_server_url_flag_that_cannot_work_is_one_line_before_anything_loads(tmp_path, capsys, argv, url, says):
    write_open(tmp_path / "res", "qwen7B", ORIGINAL)
    argv = [a.format(res=tmp_path / "res", out=tmp_path / "out") for a in argv] + [url]
    try:
        status = cli.main(argv)
    except SystemExit as exc:  # argparse's exit, as the console script ends
        status = exc.code
    assert status == 2
    line = one_error_line(capsys.readouterr().err)
    assert argv[-2] in line and repr(url) in line and says in line and "see smmile" in line
    assert not (tmp_path / "out").exists() and not list((tmp_path / "res").glob("*_evaluationllm.json"))


@pytest.mark.parametrize("url", ["ftp://user:SECRET-1@127.0.0.1/v1", "http://u:SECRET-1@127.0.0.1:99999/v1",
                                 "127.0.0.1:8000/v1?api-key=SECRET-1"])
def test_a_refused_server_url_does_not_echo_its_credentials(tmp_path, capsys, url):
    try:
        status = cli.main(["run", "--model", "gpt-4o", "--dataset", "demo", "--output-dir", str(tmp_path), "--base-url",
                           url])
    except SystemExit as exc:
        status = exc.code
    line = one_error_line(capsys.readouterr().err)
    assert status == 2 and "SECRET-1" not in line and "***" in line
    write_open(tmp_path / "res", "qwen7B", ORIGINAL)
    assert judge_main([str(tmp_path / "res"), "--jury", f"openai-compatible:m@{url}", "ollama:llama3.3"]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert "SECRET-1" not in line and "***" in line


@pytest.mark.parametrize("inside", ["", "results", "data/results"])
def test_an_output_folder_equal_to_or_inside_the_dataset_is_refused(tmp_path, capsys, inside):
    data = dataset(tmp_path)
    before = sorted(p.relative_to(data) for p in data.rglob("*"))
    assert run_baseline(data, data / inside) == 2
    line = one_error_line(capsys.readouterr().err)
    assert "dataset folder" in line and "--output-dir" in line
    assert sorted(p.relative_to(data) for p in data.rglob("*")) == before


@pytest.mark.parametrize("folder", ["tests", "docs", "scripts"])
def test_the_projects_tracked_folders_are_refused_even_with_force(tmp_path, capsys, folder, monkeypatch):
    monkeypatch.chdir(tmp_path)  # from any working folder (inside tests/ another refusal would come first)
    write_open(tmp_path / "res", "qwen7B", ORIGINAL)
    ours = (".never-", "stats_", ".smmile-output.json", ".smmile.lock")  # what stats would write there

    def written() -> set[str]:  # (a shared working tree: what someone else adds meanwhile is not ours)
        return {n for n in os.listdir(REPO / folder) if n.startswith(ours)}

    for target in (REPO / folder, REPO / folder / f".never-{uuid.uuid4().hex[:8]}"):
        before = written()
        try:
            assert cli.main(["stats", str(tmp_path / "res"), "--out", str(target), "--force"]) == 2
            assert "project's own tracked folders" in one_error_line(capsys.readouterr().err)
            assert written() == before
        finally:  # what a refusal that did not happen wrote goes again (the project is never left touched)
            for name in written() - before:
                left = REPO / folder / name
                shutil.rmtree(left) if left.is_dir() else left.unlink()


def test_a_killed_runs_hidden_temp_figure_is_removed_by_the_next_run(tmp_path, capsys):
    write_open(tmp_path / "res", "qwen7B", ORIGINAL)
    write_open(tmp_path / "res", "random", ORIGINAL)
    out = tmp_path / "figs"
    assert cli.main(["figures", str(tmp_path / "res"), "--out", str(out)]) in (0, 1)
    drawn = sorted(p.name for p in out.glob("[!.]*.svg"))
    assert drawn, capsys.readouterr().err
    stale = out / f".{drawn[0]}.k1l2m3.tmp.svg"  # what a SIGKILL during the save leaves (fsguard.atomic_path)
    stale.write_bytes(b"")
    recent = out / f".{drawn[0]}.n4o5p6.tmp.svg"  # a writer's file of a moment ago may be live: kept
    recent.write_bytes(b"")
    hour_ago = time.time() - 3600
    os.utime(stale, (hour_ago, hour_ago))
    assert cli.main(["figures", str(tmp_path / "res"), "--out", str(out)]) in (0, 1)
    assert not stale.exists() and recent.exists()
    assert sorted(p.name for p in out.glob("[!.]*.svg")) == drawn
