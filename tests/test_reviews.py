"""`smmile agreement --reviews` on a hand-written reviews.json (format smmile-reviews/1); every expected number
is counted by hand below."""

import json

import pytest

from smmile.cli import agreement as agreement_cli

HEADER = "problem_id,final_question,true_answer,generated_answer,full_response\n"
# exact match: a0 1, a1 1, b0 0, b1 0, c0 0, c1 1 (SMMILE++ ids: base problems a, b, c)
ROWS = [("a_perm_0", "Red", "red"), ("a_perm_1", "Blue", "blue"), ("b_perm_0", "Green", "pink"),
        ("b_perm_1", "Cyan", "gray"), ("c_perm_0", "Gold", "black"), ("c_perm_1", "White", "white")]
JUDGE = ["ollama:llama3.3"]


def review(pid, shown, verdict, reviewer, time, judges=JUDGE, note=""):
    return {"problem_id": pid, "model": "llava_7b", "mode": "ICL", "format": "open", "judges": judges,
            "verdict_shown": shown, "review": verdict, "note": note, "reviewer": reviewer, "time": time}


ANN = [review("a_perm_0", 1, "agree", "ann", "2025-06-01T10:00:00Z"),       # label 1
       review("a_perm_1", 0, "disagree", "ann", "2025-06-01T10:01:00Z"),    # label 1
       review("b_perm_0", 1, "disagree", "ann", "2025-06-01T10:02:00Z"),    # label 0
       review("b_perm_1", 0, "agree", "ann", "2025-06-01T10:03:00Z"),       # label 0
       review("c_perm_0", 0, "unsure", "ann", "2025-06-01T10:04:00Z"),      # no label
       review("c_perm_1", None, "gold-wrong", "ann", "2025-06-01T10:05:00Z", judges=[], note="gold should be ivory")]
BOB = [review("a_perm_0", 1, "disagree", "bob", "2025-06-01T09:00:00Z"),    # replaced by his later review
       review("a_perm_0", 1, "agree", "bob", "2025-06-02T09:00:00Z"),       # label 1
       review("a_perm_1", 0, "agree", "bob", "2025-06-02T09:01:00Z"),       # label 0
       review("b_perm_0", 1, "disagree", "bob", "2025-06-02T09:02:00Z")]    # label 0


@pytest.fixture
def folder(tmp_path):
    d = tmp_path / "results"
    d.mkdir()
    (d / "result_llava_7b_ICL.csv").write_text(HEADER + "".join(f"{p},q,{g},{a},x\n" for p, g, a in ROWS))
    for name, reviews in (("ann.json", ANN), ("bob.json", BOB)):
        (tmp_path / name).write_text(json.dumps({"format": "smmile-reviews/1", "reviews": reviews}))
    return d


def test_reviews_agreement_matches_a_hand_count(folder, tmp_path, capsys):
    out = tmp_path / "agreement"
    assert agreement_cli.main([str(folder), "--reviews", str(tmp_path / "ann.json"), str(tmp_path / "bob.json"),
                               "--out", str(out), "--n-boot", "300"]) == 0
    data = json.loads((out / "agreement.json").read_text())
    rows = {(r["comparison"], r["mode"]): r for r in data["reviews"]}
    # cells (reviewers' majority): a0 1 (shown 1, EM 1); a1 tie (1 vs 0); b0 0 (shown 1, EM 0); b1 0 (shown 0, EM 0)
    judge = rows[("judge vs reviewers", "*")]  # judge [1, 1, 0] vs reviewers [1, 0, 0]
    assert (judge["n"], judge["ties_excluded"], judge["n_clusters"]) == (3, 1, 2)
    assert judge["percent"] == pytest.approx(200 / 3)
    assert judge["cohen_kappa"] == pytest.approx(0.4)  # p_o 2/3, p_e 2/3*1/3 + 1/3*2/3 = 4/9
    assert judge["kappa_low"] <= 0.4 <= judge["kappa_high"] and judge["percent_low"] <= 200 / 3 <= judge["percent_high"]
    em = rows[("exact match vs reviewers", "*")]  # EM [1, 0, 0] vs reviewers [1, 0, 0]
    assert (em["n"], em["percent"], em["cohen_kappa"]) == (3, 100.0, 1.0)
    assert rows[("judge vs reviewers", "ICL")]["cohen_kappa"] == pytest.approx(0.4)
    pair = rows[("reviewer pair", "*")]  # shared labels a0 (1, 1), a1 (1, 0), b0 (0, 0)
    assert (pair["rater_a"], pair["rater_b"], pair["n"]) == ("ann", "bob", 3)
    assert pair["percent"] == pytest.approx(200 / 3) and pair["cohen_kappa"] == pytest.approx(0.4)
    disputed = {r["problem_id"]: r for r in data["reviews_disputed"]}
    assert set(disputed) == {"a_perm_1", "b_perm_0", "c_perm_1"}  # a0: bob's disagree was replaced
    assert "gold should be ivory" in disputed["c_perm_1"]["notes"]
    printed = capsys.readouterr().out
    assert "disputed cells: 3" in printed


@pytest.mark.parametrize("content, says", [("{", "cannot read reviews"), ('{"format": "other", "reviews": []}',
                                           "not a reviews file"),
                                           (json.dumps({"format": "smmile-reviews/1", "reviews": [
                                               {**ANN[0], "review": "maybe"}]}), "reviews[0]: review 'maybe'")])
def test_unreadable_reviews_file_is_one_line_exit_2(folder, tmp_path, capsys, content, says):
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    assert agreement_cli.main([str(folder), "--reviews", str(bad), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and says in err
    assert not (tmp_path / "o").exists()
    assert agreement_cli.main([str(folder), "--reviews", str(tmp_path / "missing.json"), "--out",
                               str(tmp_path / "o")]) == 2


def test_report_rescores_judge_cells_with_the_reviews(folder, tmp_path):
    from smmile.cli import report as report_cli

    # a judge's published-style scores (no record): a0 1, a1 0, b0 1, b1 0, c0 0, c1 1 -> 50 %
    scores = {"a_perm_0": 100.0, "a_perm_1": 0.0, "b_perm_0": 100.0, "b_perm_1": 0.0, "c_perm_0": 0.0, "c_perm_1": 100.0}
    (folder / "result_llava_7b_ICL_evaluationllm.json").write_text(json.dumps({
        "model": "llava_7b", "inference_mode": "ICL", "total_examples": 6, "original_count": 6, "excluded_count": 0,
        "llm_err_count": 0, "correct_examples": 3, "accuracy": 50.0, "err_count": 0, "problem_accuracies": scores,
        "incorrect_examples": [], "word_count": 1.0}))
    out = tmp_path / "report"
    assert report_cli.main([str(folder), "--out", str(out), "--reviews", str(tmp_path / "ann.json"),
                            str(tmp_path / "bob.json"), "--jobs", "1", "--n-boot", "200", "--formats", "png"]) in (0, 1)
    page = (out / "index.html").read_text()
    # reviewed with a label: a0 -> 1 (was 1), b0 -> 0 (was 1), b1 -> 0 (was 0); a1 is a tie: kept
    # re-scored: a0 1, a1 0, b0 0, b1 0, c0 0, c1 1 -> 2/6 = 33.33 %; 3 reviewed, 1 changed
    assert "Reviewed answers" in page
    assert "<td>50.00</td><td>33.33</td><td>3</td><td>1</td>" in page
    assert "Disputed verdicts" in page and "gold should be ivory" in page


@pytest.mark.parametrize("deep, says", [(True, "nested too deeply"), (False, "larger than 64 MB")])
def test_hostile_reviews_files_are_one_line_exit_2(folder, tmp_path, capsys, deep, says):
    """200,000 levels of nesting, and /dev/zero (endless): one line each, exit 2, no traceback."""
    path = str(tmp_path / "deep.json") if deep else "/dev/zero"
    if deep:
        (tmp_path / "deep.json").write_text("[" * 200_000 + "]" * 200_000)
    for argv in (["agreement", str(folder), "--reviews", path, "--out", str(tmp_path / "o")],
                 ["report", str(folder), "--reviews", path, "--out", str(tmp_path / "r"), "--formats", "png"]):
        from smmile.cli import main as smmile

        assert smmile(argv) == 2
        err = capsys.readouterr().err
        errors = [line for line in err.splitlines() if not line.startswith("smmile report [")]  # stage lines
        assert len(errors) == 1 and says in errors[0] and "Traceback" not in err, err


def test_unknown_answers_refused_with_a_count_and_strict_exit_2(folder, tmp_path, capsys):
    """Two reviews of a problem the result lacks, one of a model no result has, one of a changed CSV (its
    sha256): refused and counted; the judge-vs-reviewers n stays at the known cells (3, as above)."""
    import hashlib

    sha = hashlib.sha256((folder / "result_llava_7b_ICL.csv").read_bytes()).hexdigest()
    extra = [review("zz_perm_0", 1, "correct", "ann", "2025-06-01T11:00:00Z"),
             review("zz_perm_1", 0, "incorrect", "ann", "2025-06-01T11:01:00Z"),
             {**review("a_perm_0", 1, "correct", "cy", "2025-06-01T11:02:00Z"), "model": "gpt4o"},
             {**review("b_perm_1", 0, "correct", "cy", "2025-06-01T11:03:00Z"), "result_sha256": "0" * 64},
             {**review("b_perm_1", 0, "incorrect", "dee", "2025-06-01T11:04:00Z"), "result_sha256": sha}]
    (tmp_path / "extra.json").write_text(json.dumps({"format": "smmile-reviews/1", "reviews": extra}))
    files = [str(tmp_path / n) for n in ("ann.json", "bob.json", "extra.json")]
    out = tmp_path / "agreement"
    assert agreement_cli.main([str(folder), "--reviews", *files, "--out", str(out), "--n-boot", "100"]) == 0
    err = capsys.readouterr().err
    # 6 (ann) + 3 (bob: his first a0 replaced) + 5 = 14; 4 refused, 10 kept
    assert ("4 of 14 review(s) refused: 1 of a model, mode and format no result has (first: cy on gpt4o ICL open "
            "a_perm_0); 2 of a problem its result does not have (first: ann on llava_7b ICL open zz_perm_0); 1 of a "
            "result file that has changed since (result_sha256) (first: cy on llava_7b ICL open b_perm_1)") in err
    assert "1 answer(s) reviewed differently by the same reviewer" in err and "bob on llava_7b ICL open a_perm_0: " \
        "disagree, then agree" in err
    rows = {(r["comparison"], r["mode"]): r for r in json.loads((out / "agreement.json").read_text())["reviews"]}
    # dee's b1 (shown 0, incorrect -> 0) joins ann's b1 label 0: still the same four cells, one tie
    assert rows[("judge vs reviewers", "*")]["n"] == rows[("exact match vs reviewers", "*")]["n"] == 3
    assert agreement_cli.main([str(folder), "--reviews", *files, "--out", str(tmp_path / "s"), "--strict"]) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if not line.startswith("warning:")]
    assert len(errors) == 1 and "4 of 14 review(s) refused" in errors[0] and "(--strict)" in errors[0]
    assert agreement_cli.main(["--reviews", files[0], "--out", str(tmp_path / "t")]) == 2
    assert "--reviews needs the result folders" in capsys.readouterr().err

    from smmile.cli import report as report_cli

    page_dir = tmp_path / "report"
    assert report_cli.main([str(folder), "--out", str(page_dir), "--reviews", *files, "--jobs", "1", "--n-boot",
                            "50", "--formats", "png"]) in (0, 1)
    page = (page_dir / "index.html").read_text()
    assert "10 review(s) from 3 file(s)" in page and "4 of 14 review(s) refused" in page
    said = [line for line in capsys.readouterr().err.splitlines() if "review(s) refused" in line]
    assert len(said) == 1 and said[0].startswith("warning: 4 of 14")  # once, its prefix once
    assert report_cli.main([str(folder), "--out", str(tmp_path / "r2"), "--reviews", *files, "--strict"]) == 2


def test_an_adjudication_settles_a_tie_and_the_judge_is_compared_with_it(folder, tmp_path):
    """a_perm_1 is a tie (ann 1, bob 0); an adjudicator says 0 (judge shown 0): the judge vs reviewers n rises
    from 3 to 4, judge vs adjudicated is 1 of 1, and the adjudicator is no third reviewer."""
    adj = {**review("a_perm_1", 0, "incorrect", "ann", "2025-06-03T10:00:00Z"), "adjudicated": True}
    (tmp_path / "adj.json").write_text(json.dumps({"format": "smmile-reviews/1", "reviews": [adj]}))
    out = tmp_path / "agreement"
    assert agreement_cli.main([str(folder), "--reviews", *(str(tmp_path / n) for n in ("ann.json", "bob.json", "adj.json")),
                               "--out", str(out), "--n-boot", "100"]) == 0
    data = json.loads((out / "agreement.json").read_text())
    rows = {(r["comparison"], r["mode"]): r for r in data["reviews"]}
    assert rows[("judge vs reviewers", "*")]["n"] == 4 and rows[("judge vs reviewers", "*")]["ties_excluded"] == 0
    assert (rows[("judge vs adjudicated", "*")]["n"], rows[("judge vs adjudicated", "*")]["percent"]) == (1, 100.0)
    assert rows[("reviewer pair", "*")]["n"] == 3  # ann's own review of a_perm_1 is kept beside her adjudication
    cell = next(c for c in data["reviewed_cells"] if c["problem_id"] == "a_perm_1")
    assert (cell["reviewed"], cell["adjudicated"], cell["n_labels"]) == (0.0, True, 2)
