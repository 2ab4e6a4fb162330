"""The problem explorer fit for review (issue #22 items 3-5), in the system Chromium opened from disk:
reviews marked on three problems and downloaded as reviews.json (checked against the scores
smmile.scoring.stats_run computes and the judge the replies file names, and fed to `smmile agreement
--reviews`, whose counts are checked by hand); no sideways scroll at 390 px with the filters folded; sorting,
a problem's link and the CSV download; full-resolution images beside the page; and the explorer built from
the published SMMILE outputs alone (111 problems, every result file's answers compared with the CSVs)."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from smmile.cli import main as smmile
from smmile.errors import MissingDependency
from smmile.report.explorer_page import unpacked
from smmile.scoring import scores as stats
from smmile import plotting

pytestmark = pytest.mark.slow


def payload(page: Path) -> dict:
    found = re.search(r'<script type="application/json" id="explorer-data">(.*?)</script>', page.read_text(), re.S)
    return unpacked(json.loads(found.group(1).replace("<\\/", "</")))


@pytest.fixture
def no_figures(monkeypatch):
    def missing():
        raise MissingDependency("matplotlib", "plots", why="figures")

    monkeypatch.setattr(plotting, "pyplot", missing)


def open_page(browser, path: Path, hash_: str = "#problems", width: int = 1280, height: int = 900):
    page = browser.new_page(viewport={"width": width, "height": height}, accept_downloads=True)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(path.resolve().as_uri() + hash_)
    page.wait_for_selector("#explorer-data[data-ready]", state="attached")
    return page, errors


def shown_ids(page) -> list[str]:
    return page.eval_on_selector_all("#ex-list .pcard", "cards => cards.map(c => c.dataset.problem)")


def toy_llm(res: Path) -> dict:
    return {r.mode: r.scores for r in stats.load_records(str(res)) if r.model == "toy" and r.metric == "LLM"}


def test_reviews_marked_exported_and_counted(browser, reports, tmp_path):
    """Three problems: one ICL answer reviewed correct, another wrong, a third unsure, and the gold answer of
    the third flagged with a note; reloaded (localStorage) and downloaded. The reviewer is named in the box,
    never in a blocking prompt."""
    page, errors = open_page(browser, reports["main"] / "index.html", "#problems?model=toy&mode=ICL&metric=LLM")
    page.on("dialog", lambda d: errors.append("a blocking dialog: " + d.message))
    page.fill("#ex-reviewer", "ann")
    page.dispatch_event("#ex-reviewer", "change")
    ids = shown_ids(page)[:3]
    marks = {ids[0]: "correct", ids[1]: "incorrect", ids[2]: "unsure"}
    for pid, review in marks.items():
        card = page.locator(f'#ex-list .pcard[data-problem="{pid}"]')
        card.locator("table.answers tr.picked").locator(f'button[data-review="{review}"]').click()
    note = page.locator(f'#ex-list .pcard[data-problem="{ids[1]}"] tr.picked input[data-note]')
    note.fill("the answer names the finding")
    note.dispatch_event("change")
    card = page.locator(f'#ex-list .pcard[data-problem="{ids[2]}"]')
    card.locator("input[data-gold-note]").fill("the image shows <b>blue</b>, \"not\" red")
    card.locator("input[data-gold-note]").dispatch_event("change")
    assert card.locator("input[data-gold]").is_checked()
    assert page.inner_text("#ex-count") == "4"
    page.reload()
    page.wait_for_selector("#explorer-data[data-ready]", state="attached")
    assert page.inner_text("#ex-count") == "4", "kept in the browser's local storage"
    assert page.locator(f'.pcard[data-problem="{ids[0]}"] tr.picked button.on[data-review="correct"]').count() == 1
    with page.expect_download() as info:
        page.click("[data-review-export]")
    assert info.value.suggested_filename == "reviews-ann.json", "one file per reviewer, none overwriting another's"
    exported = tmp_path / "reviews.json"
    info.value.save_as(exported)
    data = json.loads(exported.read_text())
    assert data["format"] == "smmile-reviews/1" and len(data["reviews"]) == 4
    icl = toy_llm(reports["res"])["ICL"]
    by = {(r["problem_id"], r["review"]): r for r in data["reviews"]}
    for pid, review in marks.items():
        r = by[(pid, review)]
        assert (r["model"], r["mode"], r["format"], r["judges"]) == ("toy", "ICL", "open", ["ollama:llama3.3"])
        assert r["verdict_shown"] == int(icl[pid] >= 0.5) and r["reviewer"] == "ann"
        assert r["note"] == ("the answer names the finding" if pid == ids[1] else ""), "a note per answer"
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", r["time"])
    toy_csv = next(reports["res"].glob("result_toy_ICL*.csv"))
    assert {r["result_sha256"] for r in by.values() if r["model"]} == {hashlib.sha256(toy_csv.read_bytes()).hexdigest()}
    gold = by[(ids[2], "gold-wrong")]
    assert gold["judges"] == [] and gold["verdict_shown"] is None and gold["note"] == "the image shows <b>blue</b>, \"not\" red"
    assert (gold["model"], gold["mode"], gold["format"]) == ("", "", ""), "a gold flag is the problem's, no model's"
    assert set(gold) == {"problem_id", "model", "mode", "format", "judges", "verdict_shown", "review", "note",
                         "reviewer", "time", "result_sha256"}
    assert not errors

    # the agreement helper's reader takes the file; its table counts what was marked, by hand:
    # correct -> 1, incorrect -> 0, unsure and gold-wrong: no label
    from smmile.analysis import reviews as rv

    table = rv.review_table(rv.read_reviews([str(exported)]), stats.load_records(str(reports["res"])))
    labelled = table.dropna(subset=["reviewed"]).set_index("problem_id")["reviewed"].to_dict()
    assert labelled == {ids[0]: 1.0, ids[1]: 0.0}
    out = tmp_path / "agreement"
    assert smmile(["agreement", str(reports["res"]), "--reviews", str(exported), "--out", str(out), "--n-boot", "50"]) == 0
    assert any(out.iterdir())


def test_phone_layout_no_sideways_scroll(browser, reports, tmp_path):
    page, errors = open_page(browser, reports["main"] / "index.html", "#problems", 390, 844)
    assert page.evaluate("document.scrollingElement.scrollWidth") <= 390
    assert not page.evaluate("document.getElementById('ex-fbox').open"), "the filters start folded on a phone"
    assert page.evaluate("getComputedStyle(document.getElementById('ex-fbox')).position") != "sticky"
    page.click("#ex-fbox > summary")
    assert page.evaluate("document.getElementById('ex-fbox').open")
    page.locator("#ex-list .pcard table.answers").first.scroll_into_view_if_needed()
    assert page.evaluate("document.scrollingElement.scrollWidth") <= 390
    full = page.eval_on_selector_all("figure img", "is => is.map(i => i.closest('a') && i.closest('a').getAttribute('href'))")
    assert full and all(href and (reports["main"] / href).is_file() for href in full), "a tap opens each figure full size"
    sizes = page.eval_on_selector_all("#ex-list .rv button", "bs => bs.map(b => b.getBoundingClientRect().height)")
    assert sizes and min(sizes) >= 44, "touch targets of at least 44 px on a phone"
    page.screenshot(path=str(tmp_path / "phone.png"))
    wide, _ = open_page(browser, reports["main"] / "index.html", "#problems", 1440, 900)
    assert wide.evaluate("document.getElementById('ex-fbox').open")
    assert wide.evaluate("getComputedStyle(document.getElementById('ex-fbox')).position") != "sticky"
    wide.locator("#ex-list .pcard").nth(3).evaluate("c => c.scrollIntoView()")
    covered = wide.locator("#ex-list .pcard").nth(3).evaluate(
        "c => { const r = c.getBoundingClientRect(); return !c.contains(document.elementFromPoint(r.left + 20, r.top + 5)); }")
    assert not covered, "the filter panel never covers the card scrolled to"
    wide.locator("#ex-list img.thumb").first.click()
    assert wide.evaluate("getComputedStyle(document.getElementById('zoom')).display") == "flex"
    assert wide.evaluate("getComputedStyle(document.getElementById('zoom')).backgroundColor") == "rgba(0, 0, 0, 0.88)"
    wide.keyboard.press("Escape")
    assert wide.evaluate("getComputedStyle(document.getElementById('zoom')).display") == "none", "Esc closes the viewer"
    assert not errors


def test_sort_link_and_csv(browser, reports, tmp_path):
    records = [r for r in stats.load_records(str(reports["res"])) if r.metric == "EM"]
    page, errors = open_page(browser, reports["main"] / "index.html", "#problems?metric=EM&sort=right-asc")
    right = {}
    for r in records:
        for pid, v in r.scores.items():
            right.setdefault(pid, [0, 0])
            right[pid][0] += v >= 0.5
            right[pid][1] += 1
    order = list(dict.fromkeys(pid for r in records for pid in r.scores.index))
    from smmile.data.load import load_problems

    dataset_order = [p.problem_id for p in load_problems("demo")]
    expected = sorted(dataset_order, key=lambda pid: (right[pid][0], dataset_order.index(pid)))
    assert shown_ids(page) == expected[:20] and set(order) == set(dataset_order)
    page.select_option('select[data-f="sort"]', "disagree")
    expected = sorted(dataset_order, key=lambda pid: (-min(right[pid][0], right[pid][1] - right[pid][0]),
                                                       dataset_order.index(pid)))
    assert shown_ids(page) == expected[:20]
    target = expected[3]
    href = page.locator(f'.pcard[data-problem="{target}"] a.plink').get_attribute("href")
    page.goto(page.url.split("#")[0] + href)
    page.wait_for_selector(f'.pcard[data-problem="{target}"]')
    assert shown_ids(page) == [target]
    with page.expect_download() as info:
        page.click("[data-csv-export]")
    assert info.value.suggested_filename == "problems.csv"
    rows = list(csv.DictReader(io.StringIO(Path(info.value.path()).read_text())))
    by_file = {(r.model, r.mode, r.metric): r.scores for r in stats.load_records(str(reports["res"]))}
    answered = {(m, mode) for (m, mode, metric) in by_file if target in by_file[(m, mode, metric)].index}
    assert {row["problem_id"] for row in rows} == {target}
    assert {(row["model_key"], row["mode"]) for row in rows} == answered
    for row in rows:
        if row["format"] == "open":
            assert float(row["exact_match"]) == by_file[(row["model_key"], row["mode"], "EM")][target]
    page.select_option('select[data-f="model"]', "toy")
    with page.expect_download() as info:
        page.click("[data-csv-export]")
    rows = list(csv.DictReader(io.StringIO(Path(info.value.path()).read_text())))
    assert rows and {row["model_key"] for row in rows} == {"toy"}, "the CSV honours the model filter"
    assert not errors


def test_full_resolution_images(browser, tmp_path, no_figures):
    """An image larger than its thumbnail is written once beside the page (as it is up to 2048 px, downscaled
    beyond) and shown at that size on click; a small one has no second file."""
    from PIL import Image

    from smmile.data.parquet import write_dataset
    from test_report_stream import base_problems, results, truth_of

    base = base_problems(3, 3, 24, special=False)
    sizes = {(0, 0): (700, 500), (1, 1): (2600, 1300)}
    for (b, order), (w, h) in sizes.items():
        record = list(base.values())[b][order]
        buffer = io.BytesIO()
        Image.new("RGB", (w, h), (200, 30, 30)).save(buffer, format="PNG")
        record["image"] = {"bytes": buffer.getvalue(), "path": "x.png"}
    records = [r for rs in base.values() for r in rs]
    write_dataset(records, tmp_path / "ds", force=True)
    res = results(tmp_path / "res", list(base), truth_of(records), extra=False)
    out = tmp_path / "out"
    assert smmile(["report", str(res), "--dataset", str(tmp_path / "ds"), "--out", str(out), "--n-boot", "20"]) == 0
    data = payload(out / "index.html")
    full = [name for name in data["full"] if name]
    assert len(full) == 2 and sorted(p.name for p in (out / "images").iterdir()) == sorted(Path(n).name for n in full)
    found = sorted(Image.open(out / name).size for name in full)
    assert found == [(700, 500), (2048, 1024)]
    assert str(tmp_path) not in (out / "index.html").read_text(), "no path of this machine on the page"
    big = next(i for i, name in enumerate(data["full"]) if name and Image.open(out / name).size[0] == 2048)
    page, errors = open_page(browser, out / "index.html", "#problems?q=Question 1")
    page.locator(f'img.thumb[data-img="{big}"]').first.click()
    page.wait_for_function("document.querySelector('#zoom img').naturalWidth > 320")
    assert page.evaluate("document.querySelector('#zoom img').naturalWidth") == 2048
    assert not errors


def test_published_outputs_without_dataset(browser, tmp_path, published, no_figures, monkeypatch):
    """Every published problem with every result file's answers, read back against the CSVs; `--dataset
    smmile` offline is a warning, not a failure."""
    res = tmp_path / "published"
    shutil.copytree(published, res)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    out = tmp_path / "out"
    assert smmile(["report", str(res), "--dataset", "smmile", "--out", str(out), "--n-boot", "20"]) == 0
    text = (out / "index.html").read_text()
    assert "could not be loaded" in text and "Built from the result files alone" in text
    data = payload(out / "index.html")
    csvs = sorted(res.glob("result_*.csv"))
    assert len(data["problems"]) == 111 and len(data["results"]) == len(csvs) == 68
    strings = data["strings"]
    by_pid = {p["id"]: p for p in data["problems"]}
    for path in csvs:
        frame = pd.read_csv(path)
        mcqa = "selected_option" in frame.columns or "extracted_answer" in frame.columns
        rows = {str(r["problem_id"]): r for r in frame.to_dict("records")}
        matching = [i for i, r in enumerate(data["results"])
                    if all(str(rows_pid) in by_pid and str(i) in by_pid[str(rows_pid)]["ans"] for rows_pid in rows)
                    and (r["fmt"] == "mcqa") == mcqa]
        found = False
        for i in matching:
            if mcqa:
                col = "selected_option" if "selected_option" in frame.columns else "extracted_answer"
                plain = {pid: str(r[col]) for pid, r in rows.items() if len(str(r[col])) == 1
                         and not str(r.get("generated_answer")).startswith(("INVALID_OPTION", "EXTRACTION_FAILED"))}
                found = found or all(strings[by_pid[pid]["ans"][str(i)][0]] == v for pid, v in plain.items())
            else:
                found = found or all(strings[by_pid[pid]["ans"][str(i)][0]] == str(r["generated_answer"])
                                     for pid, r in rows.items() if isinstance(r["generated_answer"], str))
        assert found, f"{path.name}: its answers are in the explorer"
        for pid, r in rows.items():
            q = next(r[c] for c in ("final_question", "original_question") if c in r)
            assert strings[by_pid[pid]["q"]] is not None and q
    page, errors = open_page(browser, out / "index.html", "#problems")
    assert page.inner_text("#ex-status").startswith("111 of 111 problems shown")
    shown = page.inner_text("#ex-list")
    assert "EXTRACTION_FAILED" not in shown and "INVALID_OPTION" not in shown and "None" not in shown
    assert "True" not in shown and "False" not in shown and str(tmp_path) not in text
    assert not errors
