"""`smmile agreement`: coefficients on textbook examples, synthetic labels with known answers, the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from smmile.analysis import agreement as ag
from smmile.cli.agreement import main as agreement_main

# -- coefficients -------------------------------------------------------------------------------------
# Fleiss (1971) as worked on Wikipedia's "Fleiss' kappa" page: 10 items, 14 raters, 5 categories.
FLEISS_EXAMPLE = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
                  [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]


def two_raters(both_yes=20, a_only=5, b_only=10, both_no=15):
    a = [1] * both_yes + [1] * a_only + [0] * b_only + [0] * both_no
    b = [1] * both_yes + [0] * a_only + [1] * b_only + [0] * both_no
    return a, b


def test_cohen_kappa_textbook():
    a, b = two_raters()  # p_o = 0.7, p_e = 0.5*0.6 + 0.5*0.4 = 0.5
    assert ag.cohen_kappa(a, b) == pytest.approx(0.4)
    assert ag.percent_agreement(a, b) == pytest.approx(70.0)
    assert ag.cohen_kappa([1, 0, 1], [1, 0, 1]) == 1.0
    assert np.isnan(ag.cohen_kappa([1, 1], [1, 1]))  # one category: undefined


def test_fleiss_kappa_textbook_and_scotts_pi():
    assert ag.fleiss_kappa(FLEISS_EXAMPLE) == pytest.approx(0.20993, abs=1e-5)
    a, b = two_raters()  # with two raters per item Fleiss' kappa is Scott's pi: p_e from pooled marginals
    counts = [[2 - x - y, x + y] for x, y in zip(a, b)]
    pooled = (sum(a) + sum(b)) / 100
    p_e = pooled ** 2 + (1 - pooled) ** 2
    assert ag.fleiss_kappa(counts) == pytest.approx((0.7 - p_e) / (1 - p_e))
    assert ag.fleiss_kappa([[3, 0], [0, 3], [3, 0]]) == 1.0
    assert np.isnan(ag.fleiss_kappa([[3, 0], [3, 0]]))


def test_fleiss_kappa_with_a_varying_number_of_raters():
    counts = [[2, 0], [0, 3], [1, 1], [4, 1]]
    p_items = [1.0, 1.0, 0.0, (16 + 1 - 5) / 20]
    p1 = (0 + 3 + 1 + 1) / 12
    p_e = p1 ** 2 + (1 - p1) ** 2
    assert ag.fleiss_kappa(counts + [[1, 0]]) == pytest.approx((np.mean(p_items) - p_e) / (1 - p_e))


def test_pearson_and_majority():
    assert ag.pearson([1, 2, 3], [2, 4, 6]) == pytest.approx(1.0)
    assert ag.pearson([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    assert np.isnan(ag.pearson([1, 1, 1], [1, 2, 3])) and np.isnan(ag.pearson([1], [2]))
    assert (ag.majority([1, 1, 0]), ag.majority([0, 0, 1])) == (1.0, 0.0) and np.isnan(ag.majority([1, 0]))


# -- synthetic labels ----------------------------------------------------------------------------------
RATERS = [f"expert{i}" for i in range(1, 6)]
MODELS = {"qwen72B": 0.6, "llava_7b": 0.3, "gpt-4o": 0.5}  # share of answers that are truly correct
N = 20


def truth() -> pd.DataFrame:
    rows = [{"model": m, "mode": mode, "problem_id": f"p{i:02d}", "truth": int(i < share * N)}
            for m, share in MODELS.items() for mode in ("0-shot", "ICL") for i in range(N)]
    return pd.DataFrame(rows)


def synthetic(tmp_path: Path) -> tuple[Path, pd.DataFrame]:
    """Five experts who copy the truth, except expert5 on two items and a 2-2 tie on one item (expert1
    missing there); the judge copies the truth except on its optimistic items (0 -> 1)."""
    t = truth()
    dissent = {("qwen72B", "ICL", "p00"), ("llava_7b", "0-shot", "p19")}
    tie = ("gpt-4o", "ICL", "p05")
    rows = []
    for r in t.itertuples():
        item = (r.model, r.mode, r.problem_id)
        for rater in RATERS:
            label = r.truth
            if rater == "expert5" and item in dissent:
                label = 1 - label
            if item == tie and rater == "expert1":
                continue
            if item == tie and rater in ("expert4", "expert5"):
                label = 1 - label
            rows.append({"problem_id": r.problem_id, "model": r.model, "mode": r.mode, "rater": rater, "label": label})
    t["judge"] = t["truth"]
    optimistic = (t["mode"] == "ICL") & (t["truth"] == 0) & (t["problem_id"].isin(["p18", "p19"]))
    t.loc[optimistic, "judge"] = 1
    rows += [{"problem_id": r.problem_id, "model": r.model, "mode": r.mode, "rater": "judge", "label": r.judge}
             for r in t.itertuples()]
    path = tmp_path / "labels.csv"
    pd.DataFrame(rows).sample(frac=1, random_state=0).to_csv(path, index=False)
    return path, t


def test_synthetic_labels_give_the_known_answers(tmp_path):
    path, t = synthetic(tmp_path)
    out = tmp_path / "out"
    assert agreement_main(["--labels", str(path), "--out", str(out)]) == 0
    report = json.loads((out / "agreement.json").read_text())
    inter = report["inter_rater"]
    n_items = len(t)
    assert (inter["n_raters"], inter["n_items_multi"]) == (5, n_items)
    # 2 items with one dissenter of 5 (6 of 10 pairs agree), the tie item 2-2 (2 of 6 pairs agree)
    assert inter["pairwise_percent"] == pytest.approx((100 * (n_items - 3) + 60 * 2 + 100 * 2 / 6) / n_items)
    assert inter["unanimous_percent"] == pytest.approx(100 * (n_items - 3) / n_items)
    versus = {(r["scope"], r["model"], r["mode"]): r for r in report["judge_vs_humans"]}
    everything = versus[("all", "*", "*")]
    assert everything["ties_excluded"] == 1 and everything["n"] == n_items - 1
    kept = t[~((t["model"] == "gpt-4o") & (t["mode"] == "ICL") & (t["problem_id"] == "p05"))]
    assert everything["percent"] == pytest.approx(100 * (kept["judge"] == kept["truth"]).mean())
    assert everything["cohen_kappa"] == pytest.approx(ag.cohen_kappa(kept["judge"], kept["truth"]))
    assert everything["judge_1_human_0"] == 6 and everything["judge_0_human_1"] == 0
    assert versus[("mode", "*", "0-shot")]["percent"] == 100.0
    assert versus[("model", "llava_7b", "ICL")]["bias"] == pytest.approx(100 * 2 / N)
    per_model = kept.groupby(["model", "mode"])[["judge", "truth"]].mean() * 100
    corr = {r["mode"]: r for r in report["judge_human_correlation"]}
    icl = per_model.xs("ICL", level="mode")
    assert corr["ICL"]["pearson_r"] == pytest.approx(np.corrcoef(icl["judge"], icl["truth"])[0, 1])
    assert corr["ICL"]["mean_bias"] == pytest.approx((icl["judge"] - icl["truth"]).mean())
    assert corr["0-shot"]["mean_bias"] == 0.0
    pairs = pd.read_csv(out / "agreement_rater_pairs.csv")
    assert len(pairs) == 10 and pairs[(pairs.rater_a == "expert1") & (pairs.rater_b == "expert2")].percent.item() == 100
    items = pd.read_csv(out / "agreement_items.csv")
    assert len(items) == n_items and items["human_majority"].isna().sum() == 1


def write_result(folder: Path, model: str, generated: dict, judge: dict) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    rows = [{"problem_id": pid, "final_question": "q", "true_answer": "Yes", "generated_answer": g,
             "full_response": g} for pid, g in generated.items()]
    pd.DataFrame(rows).to_csv(folder / f"result_{model}_ICL.csv", index=False)
    (folder / f"result_{model}_ICL_evaluationllm.json").write_text(
        json.dumps({"problem_accuracies": {k: 100.0 * v for k, v in judge.items()}}))


def test_judge_from_results_and_em_vs_judge(tmp_path):
    generated = {"a": "Yes", "b": "yes.", "c": "No", "d": "Yes, clearly", "e": "no"}
    judge = {"a": 1, "b": 1, "c": 0, "d": 1, "e": 1}  # EM: 1 1 0 0 0
    write_result(tmp_path / "res", "qwen7B", generated, judge)
    labels = pd.DataFrame([{"problem_id": pid, "model": "qwen7B", "mode": "ICL", "rater": r, "label": v}
                           for pid, v in {"a": 1, "b": 1, "c": 0, "d": 1, "e": 0}.items() for r in ("x", "y")])
    labels.to_csv(tmp_path / "labels.csv", index=False)
    out = tmp_path / "out"
    assert agreement_main([str(tmp_path / "res"), "--labels", str(tmp_path / "labels.csv"), "--out", str(out)]) == 0
    report = json.loads((out / "agreement.json").read_text())
    (em,) = report["em_vs_judge"]
    assert (em["n"], em["percent"], em["judge_accuracy"], em["em_accuracy"]) == (5, 60.0, 80.0, 40.0)
    assert em["bias"] == pytest.approx(40.0) and em["judge_1_em_0"] == 2
    overall = report["judge_vs_humans"][0]
    assert (overall["n"], overall["percent"], overall["judge_1_human_0"]) == (5, 80.0, 1)


def test_em_vs_judge_without_labels(tmp_path, capsys):
    write_result(tmp_path / "res", "llava_7b", {"a": "Yes", "b": "No"}, {"a": 1, "b": 1})
    assert agreement_main([str(tmp_path / "res"), "--out", str(tmp_path / "out")]) == 0
    assert "em_vs_judge llava_7b ICL: n=2 50.00% agree" in capsys.readouterr().out
    assert (tmp_path / "out" / "agreement_em_vs_judge.csv").is_file()


@pytest.mark.parametrize("content,needle", [
    ("problem_id,model,mode,rater\np,m,ICL,x\n", "missing column"),
    ("problem_id,model,mode,rater,label\np,m,ICL,x,maybe\n", "line 2"),
    ("problem_id,model,mode,rater,label\np,m,ICL,x,1\np,m,ICL,x,0\n", "twice"),
    ("problem_id,model,mode,rater,label\np,m,few,x,1\n", "not 0-shot or ICL"),
    ("problem_id,model,mode,rater,label\np,m,ICL,judge,1\n", "no human"),
])
def test_bad_labels_are_user_errors(tmp_path, capsys, content, needle):
    (tmp_path / "labels.csv").write_text(content)
    assert agreement_main(["--labels", str(tmp_path / "labels.csv"), "--out", str(tmp_path / "o")]) == 2
    assert needle in capsys.readouterr().err


# -- issue #12: every model's names, unmatched labels, fractional scores; issue #10: output folder --
def _labels(tmp_path: Path, rows: list[tuple]) -> Path:
    path = tmp_path / "labels.csv"
    pd.DataFrame([{"problem_id": p, "model": m, "mode": "ICL", "rater": r, "label": v} for p, m, r, v in rows]
                 ).to_csv(path, index=False)
    return path


def test_text_only_results_match_their_raw_file_token(tmp_path, capsys):
    write_result(tmp_path / "res", "llama33textonly", {"a": "Yes", "b": "No"}, {"a": 1, "b": 0})
    names = ("llama33textonly", "LLAMA33TEXTONLY", "llama33textonly (baseline)", "text only", "Text only*")
    rows = [(p, m, r, v) for m in names[:1] for p, v in (("a", 1), ("b", 1)) for r in ("x", "y")]
    out = tmp_path / "out"
    assert agreement_main([str(tmp_path / "res"), "--labels", str(_labels(tmp_path, rows)), "--out", str(out)]) == 0
    assert "warning" not in capsys.readouterr().err
    items = pd.read_csv(out / "agreement_items.csv")
    assert items["judge"].notna().all() and set(items["model"]) == {"text only"}
    for name in names[1:]:
        rows = [("a", name, r, 1) for r in ("x", "y")]
        assert agreement_main([str(tmp_path / "res"), "--labels", str(_labels(tmp_path, rows)), "--out", str(out)]) == 0
        assert pd.read_csv(out / "agreement_items.csv")["judge"].notna().all(), name


def test_labels_that_match_no_result_are_named(tmp_path, capsys):
    write_result(tmp_path / "res", "qwen7B", {"a": "Yes"}, {"a": 1})
    rows = [("a", "qwen7b", "x", 1), ("a", "qwen7b", "y", 1), ("a", "qwen-7", "x", 1), ("a", "qwen-7", "y", 0),
            ("zz", "qwen7B", "x", 0), ("zz", "qwen7B", "y", 0)]
    assert agreement_main([str(tmp_path / "res"), "--labels", str(_labels(tmp_path, rows)),
                           "--out", str(tmp_path / "out")]) == 0
    err = capsys.readouterr().err
    assert "labels name model(s) no result file has: qwen-7" in err
    assert "2 labelled item(s) have no judge label" in err


def test_fractional_judge_scores_are_left_out_not_rounded(tmp_path, capsys):
    """A problem with two rows, one judged right: its judge score is 0.5 (scoring.metrics); that is no
    single label, so it is left out of the agreement (it used to be rounded to 1)."""
    write_result(tmp_path / "res", "qwen7B", {"a": "Yes", "b": "Yes", "c": "No"}, {"a": 1, "b": 0.5, "c": 0})
    rows = [(p, "qwen7B", r, v) for p, v in (("a", 1), ("b", 1), ("c", 0)) for r in ("x", "y")]
    out = tmp_path / "out"
    assert agreement_main([str(tmp_path / "res"), "--labels", str(_labels(tmp_path, rows)), "--out", str(out)]) == 0
    assert "1 problem(s) with a fractional score" in capsys.readouterr().err
    report = json.loads((out / "agreement.json").read_text())
    assert report["judge_vs_humans"][0]["n"] == 2 and report["em_vs_judge"][0]["n"] == 2


def test_output_folder_is_checked_before_the_work(tmp_path, capsys):
    write_result(tmp_path / "res", "qwen7B", {"a": "Yes"}, {"a": 1})
    (tmp_path / "file").write_text("x")
    assert agreement_main([str(tmp_path / "res"), "--out", str(tmp_path / "file")]) == 2
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "keep.txt").write_text("mine")
    assert agreement_main([str(tmp_path / "res"), "--out", str(foreign)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "Traceback" not in "".join(err)
    assert [p.name for p in foreign.iterdir()] == ["keep.txt"]


def test_agreement_intervals_resample_the_answers_to_one_problem_together():
    """Ten models' answers to one problem are one resampling unit under --cluster auto (issue #33), not ten."""
    import pandas as pd

    from smmile.analysis.agreement import item_clusters, judge_rows

    assert item_clusters(["p1", "p1", "p2_perm_0", "p2_perm_1"], "auto") == ["p1", "p1", "p2", "p2"]
    assert item_clusters(["p1", "p1"], "none") is None
    table = pd.DataFrame({"model": ["m1", "m2", "m1", "m2"], "mode": "ICL", "format": "open",
                          "problem_id": ["p1", "p1", "p2", "p2"], "em": [1.0, 0.0, 1.0, 1.0],
                          "judge": [1.0, 0.0, 0.0, 1.0]})
    row = next(r for r in judge_rows(table, 50, 0, 0.95) if r["mode"] == "*")
    assert (row["n"], row["n_clusters"]) == (4, 2)


def test_an_interval_says_when_the_resamples_had_no_spread():
    """Two raters who always agree: every resample's kappa is 1, the percentile interval is empty and the bound
    that replaces it is named as such (issue #33); a varied pair keeps the percentile bootstrap."""
    from smmile.scoring.kappa import fleiss_agreement, pair_agreement

    same = pair_agreement([1, 0, 1, 0, 1, 0], [1, 0, 1, 0, 1, 0], None, 200)
    assert same["cohen_kappa"] == 1.0 and same["interval"].startswith("Wilson bound") and "no spread" in same["interval"]
    varied = pair_agreement([1, 0, 1, 0, 1, 0, 1, 1], [1, 0, 0, 0, 1, 1, 1, 0], None, 200)
    assert varied["interval"] == "percentile bootstrap"
    assert "interval" in fleiss_agreement([[1, 1], [2, 0], [0, 2]], None, 100)
