"""The problem explorer's data (smmile.report.explorer) as embedded in the page: every problem, each
image once, answers with the report's own scores, MCQA option text, judge replies, problems the
dataset lacks, SMMILE++ permutations with their base problem."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from report_fixtures import demo_reports, system_chromium
from smmile.cli import main as smmile
from smmile.data.load import load_problems
from smmile.protocol.options import unique_answers
from smmile.report.explorer_page import unpacked
from smmile.scoring import scores as stats

EXTRA = "not-in-the-dataset"


def payload(page: Path) -> dict:
    found = re.search(r'<script type="application/json" id="explorer-data">(.*?)</script>', page.read_text(), re.S)
    return unpacked(json.loads(found.group(1).replace("<\\/", "</")))


def text(data: dict, index: int) -> str | None:
    return None if index is None or index < 0 else data["strings"][index]


@pytest.fixture(scope="module")
def small(tmp_path_factory, demo_dir):
    """An MCQA file without option text (MedVLM-R1 layout), an open file with a fractional judge score and
    raw replies, and a problem id the dataset does not have."""
    root = tmp_path_factory.mktemp("explorer")
    res = root / "res"
    res.mkdir()
    problems = load_problems("demo")
    rows = [{"problem_id": p.problem_id, "original_question": p.query.question, "correct_letter": "?",
             "correct_answer": p.query.answer, "extracted_answer": "A",
             "is_correct": unique_answers(p)[0] == p.query.answer, "full_response": "<answer>A</answer>"}
            for p in problems]
    rows.append({**rows[0], "problem_id": EXTRA})
    pd.DataFrame(rows).to_csv(res / "result_MedVLM-R1_ICL_mcqa.csv", index=False)
    open_rows = [{"problem_id": p.problem_id, "final_question": p.query.question, "true_answer": p.query.answer,
                  "generated_answer": p.query.answer if i % 2 else "no idea", "full_response": "x"}
                 for i, p in enumerate(problems)]
    open_rows.append({"problem_id": EXTRA, "final_question": "Where is it?", "true_answer": "Here",
                      "generated_answer": "Here", "full_response": "Here"})
    pd.DataFrame(open_rows).to_csv(res / "result_gpt-4o_ICL_open.csv", index=False)
    judged = {r["problem_id"]: (100.0 if i % 2 else 0.0) for i, r in enumerate(open_rows)}
    judged[problems[0].problem_id] = 50.0
    (res / "result_gpt-4o_ICL_open_evaluationllm.json").write_text(json.dumps({"problem_accuracies": judged}))
    replies = [{"row": i, "problem_id": r["problem_id"], "status": "ok", "reply": f"reply {i}"}
               for i, r in enumerate(open_rows)]
    (res / "result_gpt-4o_ICL_open_judgements.jsonl").write_text("".join(json.dumps(r) + "\n" for r in replies))
    out = root / "out"
    assert smmile(["report", str(res), "--dataset", "demo", "--out", str(out), "--n-boot", "50",
                   "--formats", "svg"]) == 0  # page written (issue #20 item 9); the extra problem named in a warning
    return res, out, problems


def test_every_problem_and_the_extra_one(small):
    _, out, problems = small
    assert f"1 problem(s) of SMMILE are not in its dataset (first: {EXTRA})" in (out / "index.html").read_text()
    data = payload(out / "index.html")
    ids = [p["id"] for p in data["problems"]]
    assert ids == [p.problem_id for p in problems] + [EXTRA]
    extra = data["problems"][-1]
    assert extra["csv"] == 1 and "ex" not in extra and "img" not in extra and extra["ans"], "shown from the CSV alone"
    # as the first result file (in name order: the MCQA file, whose extra row copies problem 0's) gives them
    assert text(data, extra["q"]) == problems[0].query.question and text(data, extra["gold"]) == problems[0].query.answer
    first = data["problems"][0]
    assert text(data, first["q"]) == problems[0].query.question
    assert [text(data, e[2]) for e in first["ex"]] == [r.answer for r in problems[0].examples]


def test_each_image_once(small):
    _, out, problems = small
    page = (out / "index.html").read_text()
    data = payload(out / "index.html")
    digests = {r.image.digest for p in problems for r in p.rows if r.image is not None}
    assert len(data["images"]) == len(digests) == len(set(data["images"]))
    assert all(page.count(uri) == 1 for uri in data["images"])
    assert all(uri.startswith("data:image/jpeg;base64,") for uri in data["images"])


def test_scores_are_the_reports_own(small):
    res, out, problems = small
    data = payload(out / "index.html")
    results = {(r["fmt"], r["model"]): i for i, r in enumerate(data["results"])}
    models = [m["key"] for m in data["models"]]
    open_index = results[("open", models.index("gpt-4o"))]
    records = {r.metric: r.scores for r in stats.load_records(str(res)) if r.model == "gpt-4o"}
    for entry in data["problems"]:
        answer = entry["ans"][str(open_index)]
        assert answer[1] == pytest.approx(records["EM"][entry["id"]])
        assert answer[2] == pytest.approx(records["LLM"][entry["id"]])
    first = data["problems"][0]["ans"][str(open_index)]
    assert first[2] == 0.5 and text(data, first[3]) == "reply 0"


def test_mcqa_letter_and_option(small):
    _, out, problems = small
    data = payload(out / "index.html")
    index = next(i for i, r in enumerate(data["results"]) if r["fmt"] == "mcqa")
    for entry, problem in zip(data["problems"], problems):  # the extra problem (last) has no options
        letter, option, correct = entry["ans"][str(index)]
        assert text(data, letter) == "A" and option == -1  # no option text in this CSV ...
        assert [text(data, i) for i in entry["opts"]] == unique_answers(problem)  # ... the page maps A to opts[0]
        assert correct == float(unique_answers(problem)[0] == problem.query.answer)


def test_mcqa_option_shown_in_the_browser(small):
    _, out, problems = small
    with system_chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto((out / "index.html").resolve().as_uri() + "#problems?model=MedVLM-R1&metric=MCQA")
        cell = page.locator("#ex-list .pcard").first.locator("table.answers tr.picked td").last
        assert cell.inner_text().startswith(f"A. {unique_answers(problems[0])[0]}")


def test_plusplus_grouped_and_sharing_images(tmp_path_factory, demo_dir):
    reports = demo_reports(tmp_path_factory)
    data = payload(reports["sets"] / "index.html")
    plus = [p for p in data["problems"] if data["sets"][p["set"]]["label"] == "SMMILE++"]
    assert len(plus) == len(load_problems("demo-plusplus"))
    assert all(p["id"].startswith(p["base"] + "_perm_") for p in plus)
    digests = {r.image.digest for p in load_problems("demo") for r in p.rows if r.image is not None}
    assert len(data["images"]) == len(digests), "the permutations reuse SMMILE's images"


def test_judge_named_by_its_record_without_the_replies_file(small, tmp_path):
    """Without ``_judgements.jsonl`` the explorer names the judge its record (``_evaluationllm.manifest.json``)
    names, not "unrecorded judge" (the record is under RunInfo.judge["record"])."""
    res, _, _ = small
    copy = tmp_path / "res"
    shutil.copytree(res, copy)
    stem = copy / "result_gpt-4o_ICL_open"
    Path(f"{stem}_judgements.jsonl").unlink()
    Path(f"{stem}_evaluationllm.manifest.json").write_text(json.dumps(
        {"judge": {"backend": "ollama", "model": "llama3.3", "protocol": "paper"}}))
    out = tmp_path / "out"
    assert smmile(["report", str(copy), "--dataset", "demo", "--out", str(out), "--n-boot", "50",
                   "--formats", "svg"]) == 0
    judged = [r for r in payload(out / "index.html")["results"] if "LLM" in r["metrics"]]
    assert [r.get("judges") for r in judged] == [["ollama:llama3.3"]]
