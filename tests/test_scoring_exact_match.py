"""Exact-match scoring (spec §4.4, §4.5) and reproduction of the published EM JSONs (§11.1)."""

import json
import math
from pathlib import Path

import pytest

from smmile.scoring import exact_match as em
from smmile.record.naming import evaluation_json_path
from smmile.record.result_csv import ResultFileError, read_result_csv

PUBLISHED = Path(__file__).resolve().parents[1].parent / "shared" / "published" / "smmile"
KEY_ORDER = ["model", "inference_mode", "total_examples", "original_count", "excluded_count",
             "correct_examples", "accuracy", "err_count", "problem_accuracies",
             "incorrect_examples", "word_count"]


@pytest.mark.parametrize("raw, norm", [
    ("Black.", "black"), ("  Multiple   words\there ", "multiple words here"),
    (float("nan"), "nan"), (3, "3"), ("", ""), ("Ünïcode–dash!", "ünïcode–dash"),
    ("a-b_c", "abc"), ("\n", ""),
])
def test_normalize_answer(raw, norm):
    assert em.normalize_answer(raw) == norm


def _write(path, text):
    path.write_text(text)
    return path


def test_calculate_exact_match_small(tmp_path):
    csv = _write(tmp_path / "result_qwen7B_ICL_open.csv",
                 "problem_id,final_question,true_answer,generated_answer,full_response\n"
                 "b,q,Black.,black,x\n"
                 "a,q,None,,x\n"
                 "c,q,Red,ERROR: API failed,x\n"
                 "c,q,Red,red!,x\n")
    stats = em.calculate_exact_match(csv)
    assert list(stats) == KEY_ORDER
    assert stats["model"] == "qwen7B" and stats["inference_mode"] == "ICL"
    assert stats["correct_examples"] == 3  # "None" and "" both read as NaN -> "nan" == "nan"
    assert stats["accuracy"] == 75.0
    assert stats["err_count"] == 1
    assert stats["problem_accuracies"] == {"a": 100.0, "b": 100.0, "c": 50.0}
    assert list(stats["problem_accuracies"]) == ["a", "b", "c"]
    assert stats["incorrect_examples"] == ["c"]
    assert stats["word_count"] == (1 + 1 + 3 + 1) / 4
    strict = em.calculate_exact_match(csv, strict=True)
    assert strict["correct_examples"] == 0


def test_empty_frame_accuracy_zero(tmp_path):
    csv = _write(tmp_path / "result_x_ICL.csv", "problem_id,true_answer,generated_answer\n")
    stats = em.calculate_exact_match(csv)
    assert stats["accuracy"] == 0 and stats["total_examples"] == 0 and math.isnan(stats["word_count"])


@pytest.mark.parametrize("content, fragment", [
    ("", "empty file"),
    ("problem_id,generated_answer\n1,a\n", "missing required column(s): true_answer"),
])
def test_bad_files(tmp_path, content, fragment):
    csv = _write(tmp_path / "result_x_ICL.csv", content)
    with pytest.raises(ResultFileError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        em.calculate_exact_match(csv)


def test_directory_and_missing(tmp_path):
    (tmp_path / "result_d_ICL.csv").mkdir()
    with pytest.raises(ResultFileError, match="is a directory"):
        read_result_csv(tmp_path / "result_d_ICL.csv")
    with pytest.raises(ResultFileError, match="not found"):
        read_result_csv(tmp_path / "nope.csv")


def test_json_text_default_format():
    assert em.json_text({"a": 1.5, "b": [1, 2]}) == '{"a": 1.5, "b": [1, 2]}'


def _published_pairs():
    if not PUBLISHED.is_dir():
        return []
    return [(csv, evaluation_json_path(csv)) for csv in sorted(PUBLISHED.glob("result_*.csv"))
            if evaluation_json_path(csv).exists()]


@pytest.mark.skipif(not PUBLISHED.is_dir(), reason="published SMMILE outputs not available")
def test_published_evaluation_jsons_reproduced_byte_for_byte():
    pairs = _published_pairs()
    assert len(pairs) == 34
    for csv, published in pairs:
        stats = em.calculate_exact_match(csv)
        expected = json.loads(published.read_text())
        assert list(stats) == list(expected), csv.name
        for key in expected:
            assert stats[key] == expected[key], (csv.name, key)
        assert json.dumps(stats) == published.read_text(), csv.name
