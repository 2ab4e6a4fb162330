"""No internal string on the page (issue #33, deliverable 6): the visible text of the report built from the
published SMMILE outputs (with `smmile agreement`'s analyses) and of the demo SMMILE + SMMILE++ report, outside
the runs table (which names each result file on purpose), holds no path of this machine, no module name, no
file name, no `None` / `True` / `False`, and no model key where the page has a display name for it."""

from __future__ import annotations

import re
import shutil

import pytest

from smmile.cli import main as smmile
from test_explorer_review import no_figures  # noqa: F401 (fixture)

pytestmark = pytest.mark.slow
VISIBLE = """() => { let skip = false; const out = [];
  for (const el of document.querySelectorAll('header, main > *')) {
    if (el.tagName === 'H2') skip = /^runs-/.test(el.id);
    if (!skip) out.push(el.innerText);
  }
  document.querySelectorAll('#ex-list details').forEach((d) => { d.open = true; });
  return out.join('\\n') + '\\n' + document.getElementById('ex-list').innerText; }"""


def scan(browser, page_path, tmp_path) -> list[str]:
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    page.goto(page_path.resolve().as_uri() + "#problems")
    page.wait_for_selector("#explorer-data[data-ready]", state="attached")
    text = page.evaluate(VISIBLE)
    models = page.evaluate("JSON.parse(document.getElementById('explorer-data').textContent).models")
    page.close()
    found = []
    for what, pattern in (("None / True / False", r"\b(None|True|False)\b"), ("a path", re.escape(str(tmp_path)) + r"|/tmp/|/home/|/work/"),
                          ("a module", r"\bsmmile\.[a-z_]+"), ("a file name", r"\b(?!reviews\.json)[\w-]+\.(json|jsonl|csv)\b")):
        found += [f"{what}: {m.group(0)!r} in …{text[max(0, m.start() - 60):m.end() + 20]!r}"
                  for m in re.finditer(pattern, text)]
    for m in models:
        if m["key"] != m["name"] and not re.fullmatch(r"[a-z]+", m["key"]):  # "majority" is a word answers use
            found += [f"model key {m['key']!r} in …{text[max(0, k.start() - 60):k.end() + 20]!r}"
                      for k in re.finditer(r"(?<![\w-])" + re.escape(m["key"]) + r"(?![\w-])", text)]
    return found


def test_published_smmile_page_shows_no_internal_string(browser, published, tmp_path, no_figures):
    res = tmp_path / "published"
    shutil.copytree(published, res)
    assert smmile(["agreement", str(res), "--out", str(tmp_path / "agreement"), "--n-boot", "50"]) == 0
    out = tmp_path / "out"
    assert smmile(["report", str(res), "--analyses", str(tmp_path / "agreement"), "--out", str(out), "--n-boot", "20",
                   "--jobs", "1"]) == 0
    found = scan(browser, out / "index.html", tmp_path)
    assert found == [], "\n".join(found)
    assert "<title>Results: SMMILE</title>" in (out / "index.html").read_text(), "no folder name in the title"


def test_demo_smmile_and_plusplus_page_shows_no_internal_string(browser, reports, tmp_path):
    found = scan(browser, reports["sets"] / "index.html", tmp_path)
    assert found == [], "\n".join(found)
