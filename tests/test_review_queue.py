"""Review keyed by content and the blind review queue (issue #33, deliverables 1 and 2), in the system Chromium
opened from disk: a second report with the same label and problem count (one result fewer) shows none of the
first's reviews, nor does another reviewer on the same browser; two reviewers each review the same seeded sample
of 30 answers through the queue with the keyboard alone (model and verdicts hidden until they decide), their
exports merge in `smmile agreement --reviews` and `smmile report --reviews`, and Cohen's kappa and the re-scored
judge accuracies match a count made here from the keys pressed."""

from __future__ import annotations

import json
import re
import shutil
import statistics
import time

import pytest

from smmile.cli import main as smmile
from smmile.report import names
from smmile.scoring import scores as stats
from test_explorer_review import no_figures, open_page, payload  # noqa: F401 (fixture)

pytestmark = pytest.mark.slow


def export(page, path):
    with page.expect_download() as info:
        page.click("[data-review-export]")
    info.value.save_as(path)
    return json.loads(path.read_text())["reviews"]


def name(page, who: str) -> None:
    page.fill("#ex-reviewer", who)
    page.dispatch_event("#ex-reviewer", "change")


def test_reviews_are_keyed_by_the_reports_results_and_the_reviewer(browser, reports, tmp_path, no_figures):
    other = tmp_path / "other" / reports["res"].name
    shutil.copytree(reports["res"], other)
    for path in other.glob("result_toy_0-shot*"):
        path.unlink()
    out = tmp_path / "second"
    assert smmile(["report", str(other), "--dataset", "demo", "--out", str(out), "--n-boot", "20", "--jobs", "1"]) == 0
    first, second = payload(reports["main"] / "index.html"), payload(out / "index.html")
    assert [s["label"] for s in first["sets"]] == [s["label"] for s in second["sets"]]
    assert len(first["problems"]) == len(second["problems"]) and len(first["results"]) == len(second["results"]) + 1

    context = browser.new_context(accept_downloads=True)  # one browser: both pages share file://'s storage
    page = context.new_page()
    page.goto((reports["main"] / "index.html").resolve().as_uri() + "#problems?model=toy&mode=ICL&metric=LLM")
    page.wait_for_selector("#explorer-data[data-ready]", state="attached")
    page.on("dialog", lambda d: pytest.fail("a blocking dialog: " + d.message))
    page.locator("#ex-list tr.picked").first.locator('button[data-review="incorrect"]').click()
    assert page.evaluate("document.getElementById('ex-reviewer').classList.contains('ask')"), "asked for a name"
    name(page, "ann")  # the review made before the name goes to the name
    page.locator("#ex-list tr.picked").nth(1).locator('button[data-review="correct"]').click()
    assert page.inner_text("#ex-count") == "2"
    assert {r["reviewer"] for r in export(page, tmp_path / "ann.json")} == {"ann"}
    name(page, "bob")
    assert page.inner_text("#ex-count") == "0" and page.locator("button.on[data-review]").count() == 0
    name(page, "ann")
    assert page.inner_text("#ex-count") == "2"

    later = context.new_page()
    later.goto((out / "index.html").resolve().as_uri() + "#problems?model=toy&mode=ICL&metric=LLM")
    later.wait_for_selector("#explorer-data[data-ready]", state="attached")
    assert later.input_value("#ex-reviewer") == "ann", "named once per session"
    assert later.inner_text("#ex-count") == "0" and later.locator("button.on[data-review]").count() == 0
    later.select_option('select[data-f="special"]', "reviewed")
    assert later.locator("#ex-list .pcard").count() == 0
    assert export(later, tmp_path / "none.json") == []
    context.close()


def walk(page, size: int, seed: int, flip) -> tuple[list, list]:
    """The queue walked with the keyboard: 1 where the gold answer is in the answer, else 0 (``flip(i)``: the
    other); j to the next. Returns the labels given and the seconds of page work per answer."""
    if not page.evaluate("document.querySelector('.rqbox').open"):
        page.click(".rqbox > summary")
    page.fill("#rq-size", str(size))
    page.fill("#rq-seed", str(seed))
    page.click("#rq-start")
    labels, seconds = [], []
    for i in range(size):
        text = page.inner_text("#rq-item")
        assert "hidden until you decide" in text and "your review" not in text, f"item {i} is blind"
        gold = page.inner_text("#rq-item .gold").removeprefix("Gold: ").strip().lower()
        answer = page.inner_text("#rq-item .qans").removeprefix("Answer:").strip().splitlines()[0].lower()
        label = int(bool(gold) and gold in answer) ^ int(flip(i))
        started = time.perf_counter()
        page.keyboard.press(str(label))
        revealed = page.inner_text("#rq-item .reveal")
        page.keyboard.press("j")
        seconds.append(time.perf_counter() - started)
        assert "hidden" not in revealed and " · " in revealed, "model and verdicts shown once decided"
        labels.append(label)
    assert page.inner_text("#rq-progress").startswith(f"{size} of {size} · {size} reviewed")
    page.keyboard.press("n")
    page.keyboard.type("looks fine")
    page.keyboard.press("Enter")
    page.keyboard.press("k")
    page.keyboard.press("g")
    page.keyboard.type("gold is a synonym")
    page.keyboard.press("Enter")
    return labels, seconds


def test_two_reviewers_walk_the_blind_queue_and_their_reviews_count(browser, reports, tmp_path, no_figures):
    page, errors = open_page(browser, reports["main"] / "index.html", "#problems")
    files, labels, works = [], {}, []
    for who, flip in (("ann", lambda i: False), ("bob", lambda i: i % 4 == 0)):
        name(page, who)
        labels[who], seconds = walk(page, 30, 7, flip)
        works += seconds
        files.append(tmp_path / f"{who}.json")
        exported = export(page, files[-1])
        answers = [r for r in exported if r["model"]]
        assert len(answers) == 30 and all(r["blind"] and r["seconds"] >= 0 and r["reviewer"] == who for r in answers)
        assert [r["review"] for r in exported if r["review"] == "gold-wrong"] == ["gold-wrong"]
        assert sum(r["note"] == "looks fine" for r in answers) == 1
    assert statistics.median(works) < 2.0, f"median page work per answer {statistics.median(works):.2f} s"
    ann, bob = (json.loads(f.read_text())["reviews"] for f in files)
    cells = lambda rs: sorted((r["problem_id"], r["model"], r["mode"], r["format"]) for r in rs if r["model"])
    assert cells(ann) == cells(bob), "the same seed and size give both reviewers the same answers"
    assert {r["format"] for r in ann} >= {"open", "mcqa"} and len({r["model"] for r in ann if r["model"]}) >= 3
    assert not errors

    # Cohen's kappa of the two reviewers, counted here from the keys pressed (every answer labelled)
    a, b = labels["ann"], labels["bob"]
    p_o = sum(x == y for x, y in zip(a, b)) / 30
    pa, pb = sum(a) / 30, sum(b) / 30
    p_e = pa * pb + (1 - pa) * (1 - pb)
    out = tmp_path / "agreement"
    assert smmile(["agreement", str(reports["res"]), "--reviews", *map(str, files), "--out", str(out), "--n-boot", "50"]) == 0
    pair = next(r for r in json.loads((out / "agreement.json").read_text())["reviews"] if r["comparison"] == "reviewer pair")
    assert (pair["rater_a"], pair["rater_b"], pair["n"]) == ("ann", "bob", 30)
    assert pair["cohen_kappa"] == pytest.approx((p_o - p_e) / (1 - p_e))

    # the judge's accuracy re-scored: each toy answer both reviewers labelled alike takes their label
    walked = {who: sorted((r for r in rs if r["model"]), key=lambda r: r["time"]) for who, rs in (("ann", ann), ("bob", bob))}
    for who, rs in walked.items():  # exported as pressed, in the order walked
        assert [{"correct": 1, "incorrect": 0}[r["review"]] for r in rs] == labels[who]
    by_key = {(r["problem_id"], r["model"], r["mode"], r["format"]): (x, y) for r, x, y in zip(walked["ann"], a, b)}
    report = tmp_path / "report"
    assert smmile(["report", str(reports["res"]), "--reviews", *map(str, files), "--out", str(report), "--n-boot", "20",
                   "--jobs", "1"]) == 0
    page_text = (report / "index.html").read_text()
    for record in (r for r in stats.load_records(str(reports["res"])) if r.metric == "LLM"):
        scores = {str(k): v for k, v in record.scores.items()}
        agreed = {pid: x for (pid, m, mode, fmt), (x, y) in by_key.items()
                  if (m, mode, fmt) == (record.model, record.mode, "open") and x == y and pid in scores}
        if not agreed:
            continue
        changed = sum(scores[pid] != v for pid, v in agreed.items())
        rescored = 100 * sum({**scores, **agreed}.values()) / len(scores)
        row = (f"<td>{names.display(record.model)}</td><td>{record.mode}</td><td>{100 * sum(scores.values()) / len(scores):.2f}</td>"
               f"<td>{rescored:.2f}</td><td>{len(agreed)}</td><td>{changed}</td>")
        assert row in page_text, row
