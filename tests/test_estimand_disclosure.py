"""Issue #20 items 3-5: gold mismatches excluded by default, failures disclosed, nothing dropped silently."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from smmile.analysis import result_sets as rs
from smmile.analysis.variants import analyse
from smmile.cli import stats as stats_cli
from smmile.cli.analyze import main as analyze_main
from smmile.scoring import metrics
from stats_fixtures import write_mcqa, write_open

IDS = [f"p{i}" for i in range(10)]
TRUTH = ["Yes", "No"] * 5
REFUSAL = ("ERROR: API Request Failed - Error code: 400 - {'error': {'inner_error': {'code': "
           "'ResponsibleAIPolicyViolation', 'content_filter_results': {}}}}")


def _stats(root, out, *extra):
    return stats_cli.main([str(root), "--out", str(out), "--n-boot", "100", *extra])


# -- item 3 -------------------------------------------------------------------------------------------
def test_gold_mismatches_are_excluded_by_default_in_analyze_and_stats(tmp_path, capsys):
    other = TRUTH[:7] + ["Maybe"] * 3
    for label, truth, em in (("o", TRUTH, [1] * 10), ("v", other, [1] * 7 + [0] * 3)):
        write_open(tmp_path / label, "qwen7B", "ICL", IDS, truth, em)
    out = tmp_path / "a"
    assert analyze_main(["noise", f"original={tmp_path / 'o'}", f"noise-random={tmp_path / 'v'}", "--out", str(out),
                         "--n-boot", "100"]) == 0
    doc = json.loads((out / "noise.json").read_text())
    row = doc["summary"][0]
    assert (row["n_pairs"], row["gold_mismatches"], row["gold_mismatches_included"]) == (7, 3, False)
    assert row["difference"] == 0.0 and doc["settings"]["include_gold_mismatch"] is False
    assert analyze_main(["noise", f"original={tmp_path / 'o'}", f"noise-random={tmp_path / 'v'}", "--out", str(out),
                         "--n-boot", "100", "--include-gold-mismatch"]) == 0
    row = json.loads((out / "noise.json").read_text())["summary"][0]
    assert (row["n_pairs"], row["gold_mismatches_included"]) == (10, True)
    assert row["difference"] == pytest.approx(-30.0)


# -- item 4 -------------------------------------------------------------------------------------------
def _with_failures(root: Path) -> None:
    """gpt-4o ICL open: rows 0-1 content-filter refusals, row 2 an API error, row 3 empty; rows 4-9 answered
    (4, 5, 6 right). MCQA: row 0 refused (selected ERROR), row 1 EXTRACTION_FAILED with an empty response."""
    path = write_open(root, "gpt-4o", "ICL", IDS, TRUTH, [0, 0, 0, 0, 1, 1, 1, 0, 0, 0])
    frame = pd.read_csv(path, keep_default_na=False)
    frame.loc[0:1, ["generated_answer", "full_response"]] = REFUSAL
    frame.loc[2, ["generated_answer", "full_response"]] = "ERROR: CUDA OOM"
    frame.loc[3, ["generated_answer", "full_response"]] = ""
    frame.to_csv(path, index=False)
    write_open(root, "gpt-4o", "0-shot", IDS, TRUTH, [0, 0, 0, 0, 1, 0, 0, 0, 0, 0])
    mcqa = write_mcqa(root, "gpt-4o", "ICL", IDS, TRUTH, [0, 0, 1, 1, 1, 1, 0, 0, 0, 0])
    frame = pd.read_csv(mcqa, keep_default_na=False)
    frame.loc[0, ["generated_answer", "selected_option"]] = [REFUSAL, "ERROR"]
    frame.loc[1, ["generated_answer", "selected_option"]] = ["INVALID_OPTION:EXTRACTION_FAILED", "EXTRACTION_FAILED"]
    frame["full_response"] = frame["generated_answer"]
    frame.loc[1, "full_response"] = ""
    frame.to_csv(mcqa, index=False)


def test_row_failures_by_hand(tmp_path):
    _with_failures(tmp_path)
    frame = pd.read_csv(tmp_path / "result_gpt-4o_ICL_open.csv", keep_default_na=False)
    assert metrics.row_failures(frame) == ["refused", "refused", "failed", "empty"] + [""] * 6
    frame = pd.read_csv(tmp_path / "result_gpt-4o_ICL_mcqa.csv", keep_default_na=False)
    assert metrics.row_failures(frame) == ["refused", "empty"] + [""] * 8


def test_every_estimate_counts_failures_and_the_rule_is_recorded(tmp_path, capsys):
    """Issue #31: a transport failure (row 2, ERROR) is not an answer and is left out by default; refusals (rows
    0-1) and the empty row 3 are the model's answers, scored wrong; the paper's rule is --failures wrong."""
    _with_failures(tmp_path / "r")
    assert _stats(tmp_path / "r", tmp_path / "o") == 0
    out = capsys.readouterr().out
    est = pd.read_csv(tmp_path / "o" / "stats_estimates.csv").set_index(["model", "metric", "mode"])
    em = est.loc[("gpt-4o", "EM", "ICL")]
    assert (em.n_refused, em.n_failed, em.n_empty, em.failures) == (2, 1, 1, "exclude")
    assert em.accuracy == pytest.approx(100 * 3 / 9) and em.n_rows == 9  # refusals and the empty row: wrong
    assert em.accuracy_other_rule == pytest.approx(30.0)  # the paper's rule, 3 of 10
    line = next(x for x in out.splitlines() if x.startswith("gpt-4o") and " EM " in x and "ICL" in x)
    assert line.endswith("2/1/1 (wrong: 30.00)")  # 33.33 vs 30.00: more than 1 pp apart, shown beside
    assert "1 transport failure(s) in 1 result(s) are not answers and were left out" in out
    mcqa = est.loc[("gpt-4o", "MCQA", "ICL")]
    assert (mcqa.n_refused, mcqa.n_failed, mcqa.n_empty, mcqa.n_rows) == (1, 0, 1, 10)
    settings = json.loads((tmp_path / "o" / "stats_estimates.json").read_text())["settings"]
    assert settings["failures"] == "exclude"
    comp = pd.read_csv(tmp_path / "o" / "stats_comparisons.csv").set_index("metric")
    assert comp.loc["EM", "n_pairs"] == 9 and comp.loc["EM", "failure_pairs_excluded"] == 1
    assert (comp.loc["EM", "n_refused_a"], comp.loc["EM", "n_failed_a"], comp.loc["EM", "n_empty_a"]) == (2, 1, 1)
    assert comp.loc["EM", "difference_other_rule"] == pytest.approx(100 * (3 - 1) / 10)
    assert "refused/failed/empty ICL 2/1/1, 0-shot 0/0/0" in out

    assert _stats(tmp_path / "r", tmp_path / "x", "--failures", "wrong", "--compare", "icl") == 0
    est = pd.read_csv(tmp_path / "x" / "stats_estimates.csv").set_index(["model", "metric", "mode"])
    em = est.loc[("gpt-4o", "EM", "ICL")]
    assert em.accuracy == pytest.approx(30.0) and em.n_rows == 10 and em.n_refused == 2
    assert json.loads((tmp_path / "x" / "stats_estimates.json").read_text())["settings"]["failures"] == "wrong"


def test_report_cell_shows_the_failures(tmp_path):
    from smmile.report import sections

    cell = {"n_refused": 45, "n_failed": 2, "n_empty": 0, "failures": "wrong"}
    tip, marker = sections._failures_note(cell)
    assert "45 refused" in tip and "scored wrong" in tip and "47 failed" in marker
    assert sections._failures_note({**cell, "n_refused": 0, "n_failed": 0})[1] == ""


# -- item 5 -------------------------------------------------------------------------------------------
def test_judge_json_without_its_csv_is_scored_from_the_json(tmp_path, capsys):
    write_open(tmp_path / "r", "llama33textonly", "ICL", IDS, TRUTH, [1] * 10, [1] * 5 + [0] * 5)
    zero = {"problem_accuracies": {pid: 100.0 * ok for pid, ok in zip(IDS, [1, 1, 0, 0, 0, 0, 0, 0, 0, 0])}}
    (tmp_path / "r" / "result_llama33textonly_0-shot_evaluationllm.json").write_text(json.dumps(zero))
    assert _stats(tmp_path / "r", tmp_path / "o") == 0
    err = capsys.readouterr().err
    assert "result_llama33textonly_0-shot_evaluationllm.json: no result CSV" in err
    est = pd.read_csv(tmp_path / "o" / "stats_estimates.csv").set_index(["model", "metric", "mode"])
    cell = est.loc[("text only", "LLM", "0-shot")]
    assert cell.accuracy == pytest.approx(20.0) and pd.isna(cell.n_refused)
    comp = pd.read_csv(tmp_path / "o" / "stats_comparisons.csv").set_index("metric")
    assert comp.loc["LLM", "difference"] == pytest.approx(50.0 - 20.0)


def test_judge_json_without_scores_is_a_warning(tmp_path, capsys):
    write_mcqa(tmp_path / "r", "qwen7B", "ICL", IDS, TRUTH, [1] * 10)
    (tmp_path / "r" / "result_qwen7B_0-shot_open_evaluationllm.json").write_text(json.dumps({"accuracy": 7.34}))
    assert _stats(tmp_path / "r", tmp_path / "o") == 1
    assert "judge results without their result CSV" in capsys.readouterr().err


def test_analyze_names_results_in_one_set_only_and_averages_say_how_many_models(tmp_path):
    for model, ref, var in (("qwen7B", [1] * 5 + [0] * 5, [1] * 6 + [0] * 4), ("llava_7b", [0] * 10, [1] + [0] * 9)):
        write_mcqa(tmp_path / "o", model, "ICL", IDS, TRUTH, ref)
        write_mcqa(tmp_path / "v", model, "ICL", IDS, TRUTH, var)
    write_mcqa(tmp_path / "v", "gpt-4o", "ICL", IDS, TRUTH, [1] * 10)
    sets = rs.load_sets([f"original={tmp_path / 'o'}", f"noise-random={tmp_path / 'v'}"])
    notes: list[str] = []
    report = analyse("noise", sets, {"n_boot": 100, "seed": 0, "level": 0.95}, notes)
    assert any("gpt-4o MCQA ICL: scored in 'noise-random'" in n and "but not in 'original'" in n for n in notes)
    (average,) = report.averages
    assert (average["n_models"], average["n_models_relative"]) == (2, 1)
    assert average["models_without_relative_change"] == "llava_7b"
    assert average["mean_of_relative_changes"] == pytest.approx(20.0)  # qwen7B only: 50 -> 60


def test_exact_match_json_without_its_csv_is_scored_from_the_json(tmp_path, capsys):
    """Issue #31: the paper's SMMILE++ text-only exact-match 0-shot result is an EM JSON without its CSV; it was
    ignored without a word (44 comparisons instead of 45)."""
    write_open(tmp_path / "r", "llama33textonly", "ICL", IDS, TRUTH, [1] * 6 + [0] * 4)
    zero = {"model": "llama33textonly", "inference_mode": "0-shot",
            "problem_accuracies": {pid: 100.0 * ok for pid, ok in zip(IDS, [1, 0, 0, 0, 0, 0, 0, 0, 0, 0])}}
    (tmp_path / "r" / "result_llama33textonly_0-shot_evaluation.json").write_text(json.dumps(zero))
    (tmp_path / "r" / "result_orphan_ICL_evaluation.json").write_text(json.dumps(zero))
    assert _stats(tmp_path / "r", tmp_path / "o") == 0
    err = capsys.readouterr().err
    assert "result_llama33textonly_0-shot_evaluation.json: no result CSV; exact match scored" in err
    assert "result_orphan_ICL_evaluation.json: exact-match results without their result CSV" in err
    est = pd.read_csv(tmp_path / "o" / "stats_estimates.csv").set_index(["model", "metric", "mode"])
    assert est.loc[("text only", "EM", "0-shot")].accuracy == pytest.approx(10.0)
    comp = pd.read_csv(tmp_path / "o" / "stats_comparisons.csv").set_index("metric")
    assert comp.loc["EM", "difference"] == pytest.approx(60.0 - 10.0)


def test_gold_answers_that_differ_between_results_are_flagged_in_the_estimates(tmp_path, capsys):
    other = TRUTH[:7] + ["Maybe"] * 3
    write_open(tmp_path / "r", "qwen7B", "ICL", IDS, other, [1] * 10)
    write_open(tmp_path / "r", "qwen7B", "0-shot", IDS, TRUTH, [1] * 10)
    write_open(tmp_path / "r", "gpt-4o", "ICL", IDS, TRUTH, [1] * 10)
    assert _stats(tmp_path / "r", tmp_path / "o", "--compare", "none") == 0
    err = capsys.readouterr().err
    assert "result_qwen7B_ICL_open.csv: 3 problem(s) have another gold answer" in err and "(first: p7)" in err
    est = pd.read_csv(tmp_path / "o" / "stats_estimates.csv").set_index(["model", "metric", "mode"])
    assert est.loc[("qwen7B", "EM", "ICL")].gold_differs == 3 and est.loc[("gpt-4o", "EM", "ICL")].gold_differs == 0


def test_report_cell_names_the_rule_and_the_other_weighting():
    from smmile.report import sections

    cell = {"n_refused": 2, "n_failed": 1, "n_empty": 0, "failures": "exclude"}
    tip, _ = sections._failures_note(cell)
    assert "transport failures, left out" in tip and "refused and empty: scored wrong" in tip


def test_gold_answers_that_differ_from_the_datasets_are_flagged(tmp_path, capsys):
    from smmile.scoring import estimates
    from smmile.scoring.scores import load_records

    other = TRUTH[:8] + ["Maybe", "Perhaps"]
    write_open(tmp_path / "r", "qwen7B", "ICL", IDS, other, [1] * 10)
    write_open(tmp_path / "r", "gpt-4o", "ICL", IDS, TRUTH, [1] * 10)
    records = load_records(str(tmp_path / "r"))
    dataset = pd.Series(dict(zip(IDS, [t.lower() + "." for t in TRUTH])), dtype=object)  # compared as EM compares
    capsys.readouterr()
    rows = estimates.estimates(records, 50, 0, "auto", 0.95, gold=dataset)
    counts = {(r["model"], r["metric"]): r["gold_vs_dataset"] for r in rows}
    assert counts[("qwen7B", "EM")] == 2 and counts[("gpt-4o", "EM")] == 0
    assert ("result_qwen7B_ICL_open.csv: 2 problem(s) have another gold answer (true_answer) than the dataset's "
            "(first: p8)") in capsys.readouterr().err


def test_the_answer_none_is_an_answer_not_an_empty_row(tmp_path):
    """Issue #31: pandas reads the literal answer ``None`` as missing, so it was counted as an empty response."""
    path = write_open(tmp_path / "r", "qwen7B", "ICL", IDS, TRUTH, [1] * 8 + [0, 0])
    frame = pd.read_csv(path, keep_default_na=False)
    frame.loc[8, ["generated_answer", "full_response"]] = "None"
    frame.loc[9, ["generated_answer", "full_response"]] = ""
    frame.to_csv(path, index=False)
    assert _stats(tmp_path / "r", tmp_path / "o", "--compare", "none") == 0
    est = pd.read_csv(tmp_path / "o" / "stats_estimates.csv").set_index(["model", "metric", "mode"])
    assert est.loc[("qwen7B", "EM", "ICL")].n_empty == 1  # row 9 only; "None" is the model's (wrong) answer


def test_no_answer_rate_is_estimated_on_every_row_and_not_compared(tmp_path):
    """NOANS measures failures: the default rule (transport failures left out) does not apply to it, and it is
    not one of the compared metrics."""
    _with_failures(tmp_path / "r")
    assert _stats(tmp_path / "r", tmp_path / "o") == 0
    est = pd.read_csv(tmp_path / "o" / "stats_estimates.csv")
    noans = est[(est.model == "gpt-4o") & (est.metric == "NOANS") & (est["mode"] == "ICL")]
    assert len(noans) and (noans.n_rows == 10).all()  # the transport failure is counted, not left out
    comp = pd.read_csv(tmp_path / "o" / "stats_comparisons.csv")
    assert set(comp.metric) == {"EM"}  # the paper's metrics only (MCQA has no 0-shot here)
