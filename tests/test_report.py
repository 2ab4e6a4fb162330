"""`smmile report`: the page's numbers, links, provenance and self-containedness."""

from __future__ import annotations

import base64
import io
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote

import pytest

from report_fixtures import build_results
from smmile.cli import main as smmile
from smmile.report import analyses, build, html, manifests, sections
from smmile.scoring import stats, tables

N_BOOT = 300


class Page(HTMLParser):
    """Collects tables (rows of cell texts and cell links), ids, image sources and links."""

    def __init__(self):
        super().__init__()
        self.tables, self.ids, self.srcs, self.hrefs = [], set(), [], []
        self._cell = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if "id" in attrs:
            self.ids.add(attrs["id"])
        if tag == "img":
            self.srcs.append(attrs.get("src", ""))
        if tag == "a" and "href" in attrs:
            self.hrefs.append(attrs["href"])
            if self._cell is not None:
                self._cell["href"] = attrs["href"]
        if tag == "table":
            self.tables.append([])
        elif tag == "tr" and self.tables:
            self.tables[-1].append([])
        elif tag in ("td", "th") and self.tables:
            self._cell = {"text": "", "href": None}

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self._cell["text"] = " ".join(self._cell["text"].split())
            self.tables[-1][-1].append(self._cell)
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell["text"] += data


def parse(path: Path) -> Page:
    page = Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


@pytest.fixture(scope="module")
def report(tmp_path_factory, demo_dir):
    root = tmp_path_factory.mktemp("report")
    res, an = build_results(root)
    out = root / "out"
    assert smmile(["report", str(res), "--analyses", str(an), "--out", str(out), "--n-boot", str(N_BOOT)]) == 0
    return res, an, out


def expected_cell(row: dict) -> str:
    return f"{row['accuracy']:.2f} [{row['ci_low']:.2f}, {row['ci_high']:.2f}]"


def test_outputs_written(report):
    res, _, out = report
    assert (out / "index.html").is_file() and (out / "report_data.json").is_file()
    names = {p.name for p in (out / "figures").iterdir()}
    for stem in ("accuracy_llm", "accuracy_em", "accuracy_mcqa", "icl_gain"):
        assert {f"{stem}.png", f"{stem}.svg"} <= names
    strata = json.loads((res / "model_stratification_em.json").read_text())
    flags = [k[: -len("_accuracy")] for k in next(iter(strata.values())) if k.endswith("_accuracy")]
    assert {f"stratification_em_{flag}.png" for flag in flags} <= names


def test_main_table_matches_stats(report):
    res, _, out = report
    rows = stats.estimates(stats.load_records(str(res)), N_BOOT, 0, "auto", 0.95)
    main = parse(out / "index.html").tables[0]
    header, body = main[:2], main[2:]
    assert [c["text"] for c in header[0]][1:] == [sections.METRIC_NAMES[m] for m in ("LLM", "EM", "MCQA")]
    models = tables.priority_rows({r["model"] for r in rows}) + tables.other_rows({r["model"] for r in rows})
    assert [r[0]["text"] for r in body] == [re.sub("<[^>]+>", "", html.display_name(m)) for m in models]
    cells = {(r["model"], r["metric"], r["mode"]): r for r in rows}
    for model, line in zip(models, body):
        for (metric, mode), cell in zip(tables.COLUMNS, line[1:]):
            want = cells.get((model, metric, mode))
            assert cell["text"] == (expected_cell(want) if want else "-"), (model, metric, mode)
            if want:
                assert cell["href"] == "#" + html.anchor("run", want["source"])


def test_faithful_variance_table_shown(report):
    res, _, out = report
    faithful = (res / "evaluation_results.txt").read_text(encoding="utf-8")
    assert html.esc(faithful) in (out / "index.html").read_text(encoding="utf-8")


def test_every_number_links_to_its_run(report):
    res, _, out = report
    page = parse(out / "index.html")
    for href in (h for h in page.hrefs if h.startswith("#run-")):
        assert href[1:] in page.ids
    runs = page.tables[-1]
    by_file = {row[0]["text"]: row for row in runs[1:]}
    assert set(by_file) == {p.name for p in res.glob("*.csv")}
    for name, row in by_file.items():
        manifest_file = res / name.replace(".csv", ".manifest.json")
        text = " ".join(c["text"] for c in row)
        if manifest_file.exists():
            m = json.loads(manifest_file.read_text())
            assert m["model"]["preset"] in text and m["dataset"]["fingerprint"] in text and m["protocol"] in text
        else:
            assert manifests.NO_MANIFEST in text
    toy = " ".join(c["text"] for c in by_file["result_toy_ICL_open.csv"])
    assert "ollama:llama3.3 (corrected)" in toy


def test_icl_gain_table(report):
    res, _, out = report
    gains = stats.comparisons(stats.load_records(str(res)), "icl", N_BOOT, 0, "auto", 0.95)
    assert gains, "the fixture has a model with 0-shot and ICL results"
    gain_table = parse(out / "index.html").tables[1]
    rows = {r[0]["text"]: [c["text"] for c in r[1:]] for r in gain_table[2:]}
    for g in gains:
        cells = rows[g["model_a"]]
        assert f"{g['difference']:+.2f} [{g['ci_low']:+.2f}, {g['ci_high']:+.2f}]" in cells


def test_analyses_shown(report):
    _, an, out = report
    summary = json.loads((an / "noise.json").read_text())["summary"]
    text = (out / "index.html").read_text()
    assert "Noise: an unrelated example added" in text and "noise.json: summary" in text
    for row in summary:
        assert f"{row['difference']:.2f}" in text


def test_page_is_self_contained(report):
    _, _, out = report
    page = parse(out / "index.html")
    assert page.srcs and all(src.startswith("data:image/") for src in page.srcs)
    from PIL import Image
    for src in page.srcs:
        header, payload = src.split(",", 1)
        if header.startswith("data:image/png"):
            Image.open(io.BytesIO(base64.b64decode(payload))).verify()
    files = [h for h in page.hrefs if not h.startswith("#")]
    assert files, "figures are linked as files too"
    for href in files:
        assert not re.match(r"^[a-z]+://", href), href
        assert (out / unquote(href)).is_file(), href
    assert not re.search(r"""(src|href)=["']https?://""", (out / "index.html").read_text())


def test_report_data_json(report):
    res, _, out = report
    data = json.loads((out / "report_data.json").read_text())
    assert len(data["estimates"]) == len(stats.load_records(str(res)))
    assert data["runs"]["result_toy_ICL_open.csv"]["status"] == manifests.NO_MANIFEST


def test_bad_input(tmp_path, capsys):
    assert smmile(["report", str(tmp_path / "missing"), "--out", str(tmp_path / "o")]) == 2
    (tmp_path / "empty").mkdir()
    assert smmile(["report", str(tmp_path / "empty"), "--out", str(tmp_path / "o")]) == 2
    assert smmile(["report", str(tmp_path / "empty"), "--formats", "gif"]) == 2
    err = capsys.readouterr().err
    assert "not found" in err and "no scorable" in err and "--formats" in err


def test_unreadable_manifest_reported(tmp_path):
    csv = tmp_path / "result_x_ICL.csv"
    csv.write_text("problem_id,true_answer,generated_answer\n1,a,a\n")
    (tmp_path / "result_x_ICL.manifest.json").write_text("{broken")
    summary = manifests.summary(manifests.run_info(str(csv)))
    assert summary["status"].startswith("unreadable manifest")


def test_model_revision_and_engine_from_manifest():
    m = {"model": {"preset": "p"}, "backend": {"backend": "hf", "dtype": "bfloat16", "revision": "abc", "x": None}}
    assert manifests.model_revision(m) == "abc"
    assert manifests.engine(m) == "backend=hf, dtype=bfloat16, revision=abc"
    assert manifests.model_revision({"model": {}, "backend": None}) == ""


def test_display_names_from_tables():
    assert html.display_name("text only") == "Text only<sup>*</sup>"
    assert html.display_name("llavamed") == "LLaVA-Med<sup>**</sup>"
    assert html.display_name("qwen72B") == tables.latex_name("qwen72B")
    assert html.display_name("a<b") == "a&lt;b"


def test_compact_table_merges_intervals_and_constants():
    columns = ["model", "mode", "difference", "ci_low", "ci_high", "x", "x_ci_low", "x_ci_high"]
    rows = [["a", "ICL", 1.0, 0.5, 1.5, 2.0, 1.0, 3.0], ["b", "ICL", -1.0, -2.0, 0.0, 3.0, 2.0, 4.0]]
    rendered, constants = html.compact_table(columns, rows)
    assert constants == {"mode": "ICL"}
    assert "<th>ci_low</th>" not in rendered and "<th>x_ci_high</th>" not in rendered
    assert "1.00 " in rendered and "[0.50, 1.50]" in rendered and "[2.00, 4.00]" in rendered


def test_plain_values():
    assert html.plain_value("percent", 78.378) == "78.38"  # not a p-value
    assert html.plain_value("p_holm", 0.000123) == "0.000123"
    assert html.plain_value("n", "12") == "12" and html.plain_value("model", "<m>") == "&lt;m&gt;"


def test_generic_analysis_files(tmp_path):
    (tmp_path / "order_extra.csv").write_text("model,difference\nm,1.5\n")
    (tmp_path / "perm.json").write_text(json.dumps({"settings": {"seed": 1}, "rows": [{"model": "m", "p": 0.01}]}))
    (tmp_path / "noise.json").write_text(json.dumps({"analysis": "noise", "summary": [{"a": 1}]}))
    (tmp_path / "noise_summary.csv").write_text("a\n1\n")  # held by noise.json: not shown twice
    (tmp_path / "odd.json").write_text(json.dumps([1, 2, 3]))
    found, images = analyses.load_analyses([str(tmp_path)])
    titles = {t.title: t for t in found}
    assert set(titles) == {"noise.json: summary", "odd.json", "order_extra.csv", "perm.json: rows"}
    assert titles["order_extra.csv"].section == "order" and titles["perm.json: rows"].section == "perm"
    assert titles["perm.json: rows"].settings == {"settings": {"seed": 1}}
    assert titles["odd.json"].text is not None and not images


def test_published_main_table(published):
    data = build.gather(str(published), settings=build.Settings(n_boot=200))
    assert not data.warnings
    body = build.main_table(data.estimates)
    models = [m for m, _ in body]
    assert models[:3] == list(tables.PRIORITY_MODELS)
    assert models[3:] == tables.other_rows(set(models))
    assert all(manifests.summary(info)["status"] == manifests.NO_MANIFEST for info in data.runs.values())
    rendered = sections.main_table(data)
    first = next(c for c in body[-1][1] if c)
    assert expected_cell(first) in re.sub(r"<[^>]+>", "", rendered)
