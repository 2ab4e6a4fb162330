"""Metrics declared once and the one per-row loader (scoring/metrics.py)."""

import json
import math

import pytest

from smmile.scoring import metrics
from smmile.record.run_record import read, scan as load_results
from smmile.record.result_csv import ResultFileError

OPEN = ("problem_id,final_question,true_answer,generated_answer,full_response\n"
        "b,q,Black.,black,x\n"  # flexible match
        "a,q,None,,x\n"  # "None" and "" both read as NaN -> "nan" == "nan" (pandas NA semantics, spec §4.4)
        "c,q,Red,ERROR: API failed,x\n"
        "c,q,Red,red!,x\n")


def test_declarations():
    assert list(metrics.METRICS) == ["LLM", "EM", "MCQA", "NOANS"]  # the tables' column order (spec §7.3)
    assert [m.name for m in metrics.metrics_for("open")] == ["EM", "LLM"]  # EM first: the bootstrap stream order
    assert [m.name for m in metrics.metrics_for("mcqa")] == ["MCQA"]
    assert [m.name for m in metrics.metrics_for("open", paper=False)] == ["EM", "NOANS", "LLM"]
    assert [m.name for m in metrics.metrics_for("mcqa", paper=False)] == ["MCQA", "NOANS"]
    assert metrics.get_metric("LLM").source == "judge" and metrics.get_metric(metrics.EM) is metrics.EM
    with pytest.raises(ValueError, match="unknown metric"):
        metrics.get_metric("F1")


def test_em_and_mcqa_rows_in_file_order(tmp_path):
    csv = tmp_path / "result_qwen7B_ICL_open.csv"
    csv.write_text(OPEN)
    scores = metrics.metric_scores(read(csv), "EM")
    assert list(scores.index) == ["b", "a", "c", "c"] and list(scores) == [1.0, 1.0, 0.0, 1.0]
    mcqa = tmp_path / "result_qwen7B_ICL_mcqa.csv"
    mcqa.write_text("problem_id,is_correct\n1,True\n2,false\n3,\n4,TRUE\n")
    scores = metrics.metric_scores(next(r for r in load_results(tmp_path) if r.fmt == "mcqa"), "MCQA")
    assert list(scores.index) == ["1", "2", "3", "4"] and list(scores) == [1.0, 0.0, 0.0, 1.0]
    with pytest.raises(ResultFileError, match="is_correct"):
        metrics.metric_scores(read(csv), "MCQA")


def test_judge_scores_one_rule_and_the_legacy_floor(tmp_path):
    csv = tmp_path / "result_x_ICL_open.csv"
    csv.write_text(OPEN)
    assert metrics.metric_scores(read(csv), "LLM") is None  # the judge was not run
    judged = tmp_path / "result_x_ICL_open_evaluationllm.json"
    judged.write_text(json.dumps({"problem_accuracies": {"a": 100.0, "b": 0.0, "c": 50.0}}))
    assert list(metrics.metric_scores(read(csv), "LLM")) == [1.0, 0.0, 0.5]  # fraction of the problem's rows
    assert list(metrics.metric_scores(read(csv), "LLM", legacy_floor=True)) == [1.0, 0.0, 0.0]  # the original's // 100
    for bad in ('{"problem_accuracies": {"a": "x"}}', '{"problem_accuracies": {"a": 150}}', "[]", "{"):
        judged.write_text(bad)
        with pytest.raises(ResultFileError, match="unusable judge file"):
            metrics.metric_scores(read(csv), "LLM")


def test_a_file_that_is_not_whole_is_not_scored(tmp_path):
    csv = tmp_path / "result_x_ICL_open.csv"
    csv.write_text(OPEN + 'd,"q,Red,red,x\n')  # a stray quote
    with pytest.raises(ResultFileError, match="result_x_ICL_open.csv"):
        metrics.metric_scores(read(csv), "EM")
    csv.write_text(OPEN.split("\n")[0] + "\n")
    with pytest.raises(ResultFileError, match="header only"):
        metrics.metric_scores(read(csv), "EM")
    csv.write_text(OPEN)
    frame = metrics.read_rows(read(csv), "EM")
    assert math.isclose(metrics.metric_scores(read(csv), "EM", frame=frame).mean(), 0.75)
