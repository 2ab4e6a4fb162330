"""The report in a real browser, opened from disk: the system Chromium driven by Playwright (no browser
download). Clicks a main-table cell and the explorer's filters and checks which problems are shown
against the scores computed by smmile.scoring.stats_run; figures are shown with text of at least 9 pt; no
raw JSON; no script error. Screenshots go to the test's folder, and to $SMMILE_SCREENSHOTS when set
(for a person to look at). Skipped, saying why, without Playwright or a chromium binary."""

from __future__ import annotations

import base64
import os
import shutil
from pathlib import Path

import pytest

from report_fixtures import rendered_pt, system_chromium
from smmile.scoring import scores as stats

WINDOW = {"width": 1280, "height": 1000}
pytestmark = pytest.mark.slow


def open_page(browser, page_path: Path):
    page = browser.new_page(viewport=WINDOW)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(page_path.resolve().as_uri())
    page.wait_for_selector("#explorer-data[data-ready]", state="attached")  # its texts are unpacked asynchronously
    return page, errors


def shot(page, tmp_path: Path, name: str) -> Path:
    path = tmp_path / f"{name}.png"
    page.screenshot(path=str(path))
    target = os.environ.get("SMMILE_SCREENSHOTS")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(target) / path.name)
    return path


def shown_ids(page) -> list[str]:
    return page.eval_on_selector_all("#ex-list .pcard", "cards => cards.map(c => c.dataset.problem)")


def toy_scores(res: Path) -> dict:
    return {r.mode: r.scores for r in stats.load_records(str(res))
            if r.model == "toy" and r.metric == "LLM"}


def test_cell_and_filters_show_the_right_problems(browser, reports, tmp_path):
    page, errors = open_page(browser, reports["main"] / "index.html")
    shot(page, tmp_path, "1-main-table")
    scores = toy_scores(reports["res"])
    page.click('#main-smmile + p + div a[href*="model=toy"][href*="metric=LLM"][href*="mode=ICL"]')
    page.wait_for_selector("#ex-list .pcard")
    assert page.evaluate("location.hash").startswith("#problems?")
    icl = scores["ICL"]
    assert page.inner_text("#ex-status").startswith(f"{len(icl)} of 24 problems shown")
    assert f"mean score {icl.mean() * 100:.2f}%" in page.inner_text("#ex-status")
    assert shown_ids(page) == list(icl.index)[:20]  # first page, dataset order
    shot(page, tmp_path, "2-cell-clicked")

    page.select_option('select[data-f="outcome"]', "wrong")
    wrong = [pid for pid, v in icl.items() if v < 0.5]
    assert shown_ids(page) == wrong[:20] and wrong
    shot(page, tmp_path, "3-toy-wrong")

    page.select_option('select[data-f="outcome"]', "")
    page.select_option('select[data-f="special"]', "helped")
    helped = [pid for pid in icl.index if scores["0-shot"][pid] < 0.5 <= icl[pid]]
    assert helped and shown_ids(page) == helped[:20]
    page.select_option('select[data-f="special"]', "hurt")
    hurt = [pid for pid in icl.index if icl[pid] < 0.5 <= scores["0-shot"][pid]]
    assert shown_ids(page) == hurt[:20]
    shot(page, tmp_path, "4-icl-hurt")
    assert not errors


def test_flag_filter_and_all_wrong(browser, reports, tmp_path, demo_dir):
    from smmile.data.load import load_problems

    problems = {p.problem_id: p for p in load_problems("demo")}
    page, errors = open_page(browser, reports["main"] / "index.html")
    page.goto(page.url + "#problems")
    page.select_option('select[data-f="flag:speciality"]', "radiology")
    radiology = [pid for pid, p in problems.items() if p.query.fields.get("speciality") == "radiology"]
    assert radiology and shown_ids(page) == radiology[:20]
    page.select_option('select[data-f="flag:speciality"]', "")
    page.select_option('select[data-f="metric"]', "EM")
    page.select_option('select[data-f="special"]', "allwrong")
    em = [r for r in stats.load_records(str(reports["res"])) if r.metric == "EM"]
    all_wrong = [pid for pid in problems if all(r.scores.get(pid, 1.0) < 0.5 for r in em)
                 and any(pid in r.scores.index for r in em)]
    assert shown_ids(page) == all_wrong[:20]
    shot(page, tmp_path, "5-all-models-wrong")
    page.select_option('select[data-f="special"]', "disagree")
    page.select_option('select[data-f="a"]', "majority")
    page.select_option('select[data-f="b"]', "random")
    scores = {r.model: r.scores for r in em if r.model in ("majority", "random")}
    disagree = [pid for pid in problems if pid in scores["majority"].index and pid in scores["random"].index
                and (scores["majority"][pid] >= 0.5) != (scores["random"][pid] >= 0.5)]
    assert disagree and shown_ids(page) == disagree[:20]
    assert not errors


def test_permutations_grouped(browser, reports, tmp_path):
    page, errors = open_page(browser, reports["sets"] / "index.html")
    page.goto(page.url + "#problems?set=smmile-pp")
    page.wait_for_selector("#ex-list .pcard .orders")
    status = page.inner_text("#ex-status")
    assert status.startswith("398 of 422 problems shown (24 base problems)")
    card = page.locator("#ex-list .pcard").first
    buttons = card.locator(".orders button")
    assert buttons.count() > 1
    before = card.locator(".examples").inner_html()
    buttons.nth(1).click()
    assert card.locator(".orders button.on").inner_text() == buttons.nth(1).inner_text()
    assert card.locator(".examples").inner_html() != before  # another order of the same examples
    shot(page, tmp_path, "6-plusplus-orders")
    page.goto(page.url.split("#")[0] + "#sets")
    shot(page, tmp_path, "7-side-by-side")
    assert not errors


def test_figures_rendered_at_9pt_or_more_and_no_json(browser, reports, tmp_path):
    page, errors = open_page(browser, reports["main"] / "index.html")
    shown = page.eval_on_selector_all(
        "figure img", "imgs => imgs.map(i => [i.getAttribute('src'), i.getBoundingClientRect().width])")
    assert len(shown) >= 5  # the demo's SMMILE strata are all below 20 problems: no heatmap (issue #20 item 9)
    for src, width in shown:
        svg = base64.b64decode(src.split(",", 1)[1]).decode()
        assert rendered_pt(svg, width) >= 9 - 0.05
    text = page.evaluate("document.body.innerText")
    assert '{"' not in text and '":' not in text
    page.locator("#strat-smmile").scroll_into_view_if_needed()
    shot(page, tmp_path, "8-strata")
    assert not errors


def test_skips_without_chromium(monkeypatch):
    import report_fixtures

    monkeypatch.setattr(report_fixtures, "CHROMIUM", ())
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(pytest.skip.Exception, match="no chromium binary"):
        with system_chromium():
            pass
