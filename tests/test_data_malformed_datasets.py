"""A new user's stumbles (issues #25 and #19): each refusal is one line on stderr saying what is wrong and
what to do (exit 2), never a traceback, and a partial input is analysed for what it holds.

The inputs are written here by hand (pandas / pyarrow / PIL), never by the code under test."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image

from smmile.cli.analyze import main as analyze_main
from smmile.cli.baselines import main as baselines_main
from smmile.cli.em import main as em_main
from smmile.data.load import load_problems
from smmile.errors import UserError

IDS = [f"p{i:02d}" for i in range(10)]
ORIGINAL = dict(zip(IDS, [1, 1, 1, 1, 1, 1, 0, 0, 0, 0]))  # 60 %
LAST = dict(zip(IDS, [1, 1, 1, 1, 1, 1, 1, 1, 0, 0]))  # 80 %: 2 gained, none lost


def write_open(folder: Path, name: str, correct: dict[str, int]) -> Path:
    """An open-format result CSV whose rows are right (1) or wrong (0) as given."""
    folder.mkdir(parents=True, exist_ok=True)
    rows = [{"problem_id": pid, "final_question": "q?", "true_answer": "Yes",
             "generated_answer": "Yes" if ok else "No", "full_response": "x"} for pid, ok in correct.items()]
    path = folder / f"result_{name}_ICL_open.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def png(size=(8, 8), colour=(200, 10, 10)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, colour).save(buffer, format="PNG")
    return buffer.getvalue()


def write_parquet(folder: Path, rows: list[dict], order_type=pa.int64(), image_type=None) -> Path:
    """A one-file SMMILE-schema dataset written with pyarrow directly (so `order` may be text)."""
    image_type = image_type or pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    schema = pa.schema([("problem_id", pa.string()), ("order", order_type), ("question", pa.string()),
                        ("answer", pa.string()), ("image", image_type), ("image_url", pa.string())])
    folder.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pylist(rows, schema=schema) if rows else schema.empty_table()
    pq.write_table(table, folder / "train-00000-of-00001.parquet")
    return folder


def row(pid: str, order, answer: str, image=None) -> dict:
    return {"problem_id": pid, "order": order, "question": f"question {answer}?", "answer": answer,
            "image": {"bytes": image if image is not None else png(), "path": None}, "image_url": f"u/{pid}-{order}"}


def one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert "Traceback" not in err
    assert len(lines) == 1, lines
    return lines[0]


# -- smmile analyze order with one of the two order variants --------------------------------------------------
def test_analyze_order_with_only_order_last_analyses_it_and_names_the_missing_one(tmp_path, capsys):
    write_open(tmp_path / "o", "qwen7B", ORIGINAL)
    write_open(tmp_path / "l", "qwen7B", LAST)
    out = tmp_path / "an"
    code = analyze_main(["order", f"original={tmp_path / 'o'}", f"order-last={tmp_path / 'l'}", "--out", str(out),
                         "--n-boot", "200"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "order-first" in err and "missing" in err
    summary = json.loads((out / "order.json").read_text())["summary"]
    assert [(r["variant"], r["reference"]) for r in summary] == [("order-last", "original")]
    (r,) = summary
    assert (r["accuracy_reference"], r["accuracy_variant"]) == pytest.approx((60.0, 80.0))
    assert (r["gained"], r["lost"], r["n_pairs"]) == (2, 0, 10)


# -- evaluate_EM.py on a result of a model the original's rules do not know ---------------------------------
def test_skipping_says_why_and_the_advice_makes_the_file_scorable(tmp_path, capsys):
    csv = write_open(tmp_path, "mymodel", ORIGINAL)
    assert em_main([str(tmp_path)]) == 2  # nothing could be scored
    captured = capsys.readouterr()
    assert f"Skipping: {csv}" in captured.out  # the original's line, kept
    line = one_error_line(captured.err)
    manifest = tmp_path / "result_mymodel_ICL_open.manifest.json"
    assert manifest.name in line and "model_id" in line and "rename" in line
    assert not list(tmp_path.glob("*_evaluation.json"))

    manifest.write_text(json.dumps({"model": {"model_id": "mymodel"}}))  # what the line says to do
    assert em_main([str(tmp_path)]) == 0
    scored = json.loads((tmp_path / "result_mymodel_ICL_open_evaluation.json").read_text())
    assert scored["accuracy"] == pytest.approx(60.0)


def test_judge_visualize_only_on_unknown_files_is_refused_saying_why(tmp_path, capsys):
    from smmile.cli.judge import main as judge_main

    csv = write_open(tmp_path, "mymodel", ORIGINAL)
    assert judge_main([str(tmp_path), "--visualize-only"]) == 2
    captured = capsys.readouterr()
    assert f"Skipping: {csv}" in captured.out
    assert "result_mymodel_ICL_open.manifest.json" in one_error_line(captured.err)


def test_skipping_beside_scorable_files_still_says_why(tmp_path, capsys):
    csv = write_open(tmp_path, "mymodel", ORIGINAL)
    write_open(tmp_path, "qwen7B", LAST)
    assert em_main([str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert f"Skipping: {csv}" in captured.out
    assert "result_mymodel_ICL_open.manifest.json" in captured.err


# -- datasets a new user might point a run at ----------------------------------------------------------------
def run_baseline(dataset: Path, out: Path) -> int:
    return baselines_main(["--baseline", "random", "--dataset", str(dataset), "--output-dir", str(out)])


def test_an_empty_dataset_is_called_empty(tmp_path, capsys):
    data = write_parquet(tmp_path / "empty", [])
    assert run_baseline(data, tmp_path / "res") == 2
    line = one_error_line(capsys.readouterr().err)
    assert "empty" in line and "missing images" not in line
    assert not (tmp_path / "res" / "result_random_ICL.csv").exists()


def test_a_cell_that_is_not_an_image_names_the_problem_and_the_row(tmp_path, capsys):
    rows = [row("a", 0, "x"), row("a", 1, "y"), row("b", 0, "x"), row("b", 1, "y", image=b"<html>not found</html>"),
            row("b", 2, "z")]
    data = write_parquet(tmp_path / "bad", rows)
    assert run_baseline(data, tmp_path / "res") == 2
    line = one_error_line(capsys.readouterr().err)
    assert "problem b" in line and "order 1" in line and "BytesIO" not in line
    assert not (tmp_path / "res" / "result_random_ICL.csv").exists()


def test_an_image_cell_of_the_wrong_type_names_the_problem_and_the_row(tmp_path):
    rows = [{**row("a", 0, "x"), "image": "a.png"}, {**row("a", 1, "y"), "image": "b.png"}]
    data = write_parquet(tmp_path / "text", rows, image_type=pa.string())
    with pytest.raises(UserError, match=r"problem a, row order 0"):
        load_problems(str(data))


def test_a_decompression_bomb_is_one_line_naming_problem_and_row(tmp_path, capsys, monkeypatch):
    rows = [row("a", 0, "x"), row("a", 1, "y", image=png((64, 64))), row("a", 2, "z")]
    data = write_parquet(tmp_path / "bomb", rows)
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 1000)  # 64x64 = 4096 > 2 x 1000: PIL's DecompressionBombError
    assert run_baseline(data, tmp_path / "res") == 2
    line = one_error_line(capsys.readouterr().err)
    assert "problem a" in line and "order 1" in line and "pixels" in line
    assert not (tmp_path / "res" / "result_random_ICL.csv").exists()


def test_a_decompression_bomb_warning_raised_as_error_is_one_line(tmp_path, capsys, monkeypatch):
    rows = [row("a", 0, "x"), row("a", 1, "y", image=png((40, 40))), row("a", 2, "z")]
    data = write_parquet(tmp_path / "bomb", rows)
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 1000)  # 1600: between 1x and 2x, PIL only warns
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", Image.DecompressionBombWarning)  # python -W error
        assert run_baseline(data, tmp_path / "res") == 2
    line = one_error_line(capsys.readouterr().err)
    assert "problem a" in line and "order 1" in line


# -- the order column ------------------------------------------------------------------------------------------
def test_order_stored_as_text_sorts_as_numbers(tmp_path):
    rows = [row("a", str(i), f"answer {i}") for i in range(11)]  # "10" sorts before "2" as text
    data = write_parquet(tmp_path / "text-order", rows, order_type=pa.string())
    (problem,) = load_problems(str(data))
    assert problem.query.answer == "answer 10"
    assert [r.answer for r in problem.examples] == [f"answer {i}" for i in range(10)]


def test_order_stored_as_text_keeps_every_image_in_the_report_explorer(tmp_path):
    from smmile.data.load import resolve
    from smmile.report.explorer import read_dataset

    rows = [row("a", str(i), f"answer {i}") for i in range(11)]
    data = write_parquet(tmp_path / "text-order", rows, order_type=pa.string())
    (problem,) = read_dataset(resolve(str(data)))
    assert problem.query.answer == "answer 10" and all(r.image is not None for r in problem.rows)


def test_order_stored_as_text_gives_the_right_query_in_a_run(tmp_path, capsys):
    rows = [row("a", str(i), f"answer {i}") for i in range(11)]
    data = write_parquet(tmp_path / "text-order", rows, order_type=pa.string())
    assert run_baseline(data, tmp_path / "res") == 0
    result = pd.read_csv(tmp_path / "res" / "result_random_ICL.csv")
    assert result["true_answer"].tolist() == ["answer 10"]
    assert result["generated_answer"].iloc[0] in {f"answer {i}" for i in range(10)}


def test_an_order_that_is_not_an_integer_is_refused_in_one_line(tmp_path, capsys):
    rows = [row("a", "0", "x"), row("a", "first", "y")]
    data = write_parquet(tmp_path / "bad-order", rows, order_type=pa.string())
    assert run_baseline(data, tmp_path / "res") == 2
    line = one_error_line(capsys.readouterr().err)
    assert "problem a" in line and "'first'" in line and "integer" in line


# -- smmile agreement with nothing to compare ------------------------------------------------------------------
def test_agreement_with_nothing_to_compare_says_what_to_add(tmp_path, capsys):
    from smmile.cli import main as smmile

    write_open(tmp_path / "res", "qwen7B", ORIGINAL)  # no judge results, no human labels
    assert smmile(["agreement", str(tmp_path / "res"), "--out", str(tmp_path / "agr")]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert "--labels" in line and "evaluate_LLMJudge.py" in line
