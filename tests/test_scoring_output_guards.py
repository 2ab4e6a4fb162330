"""Scoring never loses or overwrites what it should keep, and never scores a broken file as whole
(issue #10: evaluate_EM, stratify, variance_analysis)."""

import json
import os
from pathlib import Path

import pytest

from smmile.cli import em as em_cli
from smmile.cli import stratify as stratify_cli
from smmile.cli import variance as variance_cli
from smmile.scoring import stratify_run

HEADER = "problem_id,final_question,true_answer,generated_answer,full_response\n"
IDS = [f"p{i:02d}" for i in range(12)]


def rows(right, ids=IDS) -> str:
    return "".join(f"{pid},q,Red,{'red' if ok else 'blue'},x\n" for pid, ok in zip(ids, right))


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def folder(tmp_path: Path) -> Path:
    """Three whole open results of 12 problems."""
    write(tmp_path / "result_llava_7b_0-shot.csv", HEADER + rows([True] * 6 + [False] * 6))
    write(tmp_path / "result_llava_7b_ICL.csv", HEADER + rows([True] * 9 + [False] * 3))
    write(tmp_path / "result_qwen7B_ICL_open.csv", HEADER + rows([True] * 12))
    return tmp_path


def test_a_filtered_em_run_writes_its_own_comparison(tmp_path, capsys):
    folder(tmp_path)
    assert em_cli.main([str(tmp_path)]) == 0
    full = (tmp_path / "model_comparison.txt").read_bytes()
    assert em_cli.main([str(tmp_path), "--model", "llava_7b"]) == 0
    assert em_cli.main([str(tmp_path), "--inference-mode", "ICL"]) == 0
    assert (tmp_path / "model_comparison.txt").read_bytes() == full
    assert (tmp_path / "model_comparison_model-llava_7b.txt").read_text().count(" | 0/12 ") == 2
    assert (tmp_path / "model_comparison_mode-ICL.txt").read_text().count(" | 0/12 ") == 2
    assert "model_comparison_mode-ICL.txt" in capsys.readouterr().out
    write(tmp_path / "result_qwen7B_ICL_open.csv", HEADER)  # a broken file: the full comparison is kept
    assert em_cli.main([str(tmp_path)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "model_comparison.txt kept" in err[1] and "qwen7B ICL" in err[1]
    assert (tmp_path / "model_comparison.txt").read_bytes() == full


@pytest.mark.parametrize("broken", ["header only", "cut at a line break"])
def test_a_shorter_csv_does_not_replace_a_fuller_evaluation_json(tmp_path, capsys, broken):
    csv = write(tmp_path / "result_qwen7B_ICL_open.csv", HEADER + rows([True] * 12))
    assert em_cli.main([str(tmp_path)]) == 0
    good = (tmp_path / "result_qwen7B_ICL_open_evaluation.json").read_bytes()
    write(csv, HEADER if broken == "header only" else HEADER + rows([True] * 6))
    capsys.readouterr()
    assert em_cli.main([str(tmp_path)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "result_qwen7B_ICL_open" in err[0]
    assert (tmp_path / "result_qwen7B_ICL_open_evaluation.json").read_bytes() == good


BROKEN = {
    # a stray quote opens a field that closes one line later: pandas reads one short row, silently
    "result_gpt-4o_ICL_open.csv": HEADER + rows([True] * 3) + 'p03,q,"Red,red,x\np04,q,Red,blue",x\n'
                                  + rows([True] * 7, IDS[5:]),
    "result_medgemma_4b_ICL_open.csv": HEADER + rows([True] * 11) + "p11,q,Re",  # cut in half
    "result_MedVLM-R1_ICL_open.csv": HEADER + rows([True] * 6),  # cut at a line break: 6 of 12 problems
    "result_claude-3-7-sonnet_ICL_open.csv": HEADER,  # header only
}


def test_csvs_that_are_not_whole_are_named_and_not_scored(tmp_path, capsys):
    folder(tmp_path)
    for name, text in BROKEN.items():
        write(tmp_path / name, text)
    assert em_cli.main([str(tmp_path)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == len(BROKEN)
    for name in BROKEN:
        assert sum(name in line for line in err) == 1, name
        assert not (tmp_path / name.replace(".csv", "_evaluation.json")).exists()
    assert variance_cli.main([str(tmp_path), "--mean_only"]) == 1
    err = capsys.readouterr().err
    table = {line.split(" & ")[0]: line for line in (tmp_path / "evaluation_results.txt").read_text().split("\n")}
    for name in BROKEN:
        assert name in err
        model = name[len("result_"):-len("_ICL_open.csv")]
        assert table[model] == f"{model} & - & - & - & - & - & -"
    assert table["qwen7B"] == "qwen7B & - & - & - & 100.00 & - & -"


def test_stratify_keeps_the_full_file_when_one_json_cannot_be_read(tmp_path, capsys):
    from smmile.data.load import load_problems

    accuracies = {p.problem_id: 100.0 for p in load_problems("demo")}
    for name in ("result_qwen7B_ICL_open", "result_llava_7b_0-shot"):
        write(tmp_path / f"{name}_evaluation.json", json.dumps({"problem_accuracies": accuracies}))
    argv = [str(tmp_path), "--eval_type", "em", "--dataset", "demo"]
    assert stratify_cli.main(argv) == 0
    full = {p: (tmp_path / p).read_bytes() for p in ("model_stratification_em.json", "model_stratification_em_ci.json")}
    write(tmp_path / "result_llava_7b_0-shot_evaluation.json", "{broken")
    capsys.readouterr()
    assert stratify_cli.main(argv) == 1
    err = capsys.readouterr().err
    assert "result_llava_7b_0-shot_evaluation.json" in err and "model_stratification_em.json kept" in err
    assert {p: (tmp_path / p).read_bytes() for p in full} == full


def test_variance_keeps_tables_that_have_more_cells(tmp_path, capsys):
    folder(tmp_path)
    argv = [str(tmp_path), "--generate_table"]
    assert variance_cli.main(argv) == 0
    kept = {p: (tmp_path / p).read_bytes() for p in ("evaluation_results.txt", "latex_table.tex")}
    write(tmp_path / "result_llava_7b_ICL.csv", HEADER)
    capsys.readouterr()
    assert variance_cli.main(argv) == 1
    err = capsys.readouterr().err
    assert "evaluation_results.txt kept" in err and "latex_table.tex kept" in err
    assert {p: (tmp_path / p).read_bytes() for p in kept} == kept
    write(tmp_path / "result_llava_7b_ICL.csv", HEADER + rows([True] * 12))  # as many cells: replaced
    assert variance_cli.main(argv) == 0
    assert (tmp_path / "evaluation_results.txt").read_bytes() != kept["evaluation_results.txt"]


def test_output_places_are_checked_before_any_work(tmp_path, capsys, monkeypatch):
    folder(tmp_path)
    write(tmp_path / "blocker", "a file, not a folder")
    assert variance_cli.main([str(tmp_path), "--output", str(tmp_path / "blocker" / "table.txt")]) == 2
    captured = capsys.readouterr()
    assert "Processing" not in captured.out and "blocker" in captured.err
    # an unwritable results folder (simulated: permissions do not bind root)
    from smmile import fsguard

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(fsguard.tempfile, "TemporaryFile", refuse)
    monkeypatch.setattr(stratify_run, "load_dataset_problems", lambda *a: pytest.fail("dataset loaded first"))
    write(tmp_path / "result_qwen7B_ICL_open_evaluation.json", json.dumps({"problem_accuracies": {}}))
    assert stratify_cli.main([str(tmp_path), "--eval_type", "em", "--dataset", "demo"]) == 2
    assert em_cli.main([str(tmp_path)]) == 2
    assert "EXACT MATCH" not in capsys.readouterr().out
    assert not (tmp_path / "result_llava_7b_ICL_evaluation.json").exists()


def test_an_interrupted_write_leaves_the_old_json_whole(tmp_path, monkeypatch, capsys):
    csv = write(tmp_path / "result_qwen7B_ICL_open.csv", HEADER + rows([True] * 12))
    assert em_cli.main([str(tmp_path)]) == 0
    out = tmp_path / "result_qwen7B_ICL_open_evaluation.json"
    before = out.read_bytes()
    write(csv, HEADER + rows([False] * 12))

    def interrupted(fd):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupted)
    assert em_cli.main([str(tmp_path)]) == 130  # Ctrl-C: one line, no traceback
    assert "interrupted" in capsys.readouterr().err
    assert out.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [csv.name, out.name]
