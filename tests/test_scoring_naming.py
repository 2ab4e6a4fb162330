"""Result-file naming (spec §4.2, §4.3, §7.2)."""

import os

import pytest

from smmile.record import naming
from smmile.scoring.scores import find_result_files


@pytest.mark.parametrize("name, model, mode", [
    ("result_llava_7b_ICL.csv", "llava_7B", "ICL"),
    ("result_llavamed_0-shot.csv", "llavamed_7B", "0-shot"),
    ("result_llava_13b_0-shot.csv", "llava_13B", "0-shot"),
    ("result_llavanext_7b_ICL.csv", "llavanext_7B", "ICL"),
    ("result_llavaonevision_0.5b_ICL.csv", "llavaonevision_0.5B", "ICL"),
    ("result_llavaonevision_7b_0-shot.csv", "llavaonevision_7B", "0-shot"),
    ("result_qwen72B_ICL_open.csv", "qwen72B", "ICL"),
    ("result_Qwen7b_with_answers.csv", "qwen7b", "ICL"),
    ("result_qwenX_few-shot.csv", "qwen", "ICL"),
    ("result_llama33textonly_0-shot.csv", "llama33textonly (baseline)", "0-shot"),
    ("result_random_ICL.csv", "random (baseline)", "ICL"),
    ("result_majority_0-shot.csv", "majority (baseline)", "unknown"),
    ("result_gpt-4o_few-shot.csv", "gpt-4o", "ICL"),
    ("result_llava_7b_few-shot.csv", "llava_7B", "unknown"),
    ("result_MedVLM-R1_0-shot_open.csv", "MedVLM-R1", "0-shot"),
    ("result_medgemma_4b_ICL_open.csv", "medgemma_4b", "ICL"),
    ("result_claude-3-7-sonnet_ICL_open.csv", "claude-3-7-sonnet", "ICL"),
    ("result_llama32_vision_90b_0-shot_open.csv", "llama32_vision_90b", "0-shot"),
    ("/some/dir/result_foo_ICL.csv", "unknown", "unknown"),
])
def test_get_model_info(name, model, mode):
    info = naming.get_model_info(name)
    assert (info.model, info.mode) == (model, mode)


def test_rule_table_order_matters():
    # `llavamed` also contains no `llava_7b`; `llava_7b` must win over the later rules
    assert naming.get_model_info("result_llava_7b_llavamed_ICL.csv").model == "llava_7B"


@pytest.mark.parametrize("name, model, mode", [
    ("result_llama33textonly_ICL_mcqa.csv", "text only", "ICL"),
    ("result_qwen72B_0-shot_open.csv", "qwen72B", "0-shot"),
    ("result_llava_7b_few-shot.csv", "llava_7b", "ICL"),
    ("result_llavaonevision_0.5b_ICL.csv", "llavaonevision_0.5b", "ICL"),
    ("accuracy_summary.csv", "unknown", "unknown"),
])
def test_extract_model_info(name, model, mode):
    info = naming.extract_model_info(name)
    assert (info.model, info.mode) == (model, mode)


def test_em_patterns():
    assert naming.em_patterns("qwen72B", "ICL") == ["result_qwen72B_ICL.csv"]
    assert naming.em_patterns("x") == ["result_x_0-shot.csv", "result_x_0-shot_open.csv",
                                       "result_x_ICL.csv", "result_x_ICL_open.csv", "result_x_few-shot.csv"]
    assert naming.em_patterns(mode="ICL") == ["result_*_ICL.csv", "result_*_ICL_open.csv", "result_*_few-shot.csv"]
    assert naming.em_patterns(mode="0-shot") == ["result_*_0-shot.csv", "result_*_0-shot_open.csv"]
    assert naming.em_patterns()[-1] == "result_*_with_answers.csv" and len(naming.em_patterns()) == 6


def test_judge_and_stratify_patterns():
    assert naming.judge_patterns("m", "ICL") == ["result_m_ICL.csv", "result_m_ICL_open.csv"]
    assert naming.judge_patterns() == naming.em_patterns()
    assert naming.stratify_patterns("evaluationllm", mode="0-shot") == [
        "result_*_0-shot_evaluationllm.json", "result_*_0-shot_open_evaluationllm.json"]
    assert naming.stratify_patterns("evaluation", "m", "ICL") == [
        "result_m_ICL_evaluation.json", "result_m_ICL_open_evaluation.json"]


def test_discover_order_and_fallback(tmp_path, monkeypatch):
    for name in ["result_b_ICL.csv", "result_a_ICL.csv", "result_a_0-shot_open.csv", "result_a_ICL_mcqa.csv"]:
        (tmp_path / name).write_text("x")
    found = [r.path.name for r in find_result_files(tmp_path, naming.em_patterns(), None, None)]
    assert found == ["result_a_0-shot_open.csv", "result_a_ICL.csv", "result_b_ICL.csv"]
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.chdir(tmp_path)
    assert [r.path.name for r in find_result_files(empty, naming.em_patterns(mode="ICL"), None, None)] == [
        "result_a_ICL.csv", "result_b_ICL.csv"]


def test_output_names():
    assert str(naming.evaluation_json_path("d/result_x_ICL.csv")) == os.path.join("d", "result_x_ICL_evaluation.json")
    assert naming.evaluationllm_json_path("result_x_ICL_open.csv").name == "result_x_ICL_open_evaluationllm.json"
    assert naming.judgements_path("result_x_ICL.csv").name == "result_x_ICL_judgements.jsonl"


def test_question_column():
    assert naming.question_column(["problem_id", "final_question"]) == "final_question"
    assert naming.question_column(["original_question", "correct_letter"]) == "original_question"
    with pytest.raises(KeyError):
        naming.question_column(["problem_id"])
