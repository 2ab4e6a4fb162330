"""`smmile report`: the page's numbers, links, provenance, tables instead of JSON, figures fit for a
paper, determinism, and its behaviour on bad outputs and Ctrl-C."""

from __future__ import annotations

import base64
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlparse

import pytest
from childproc import default_signals

from report_fixtures import N_BOOT, rendered_pt, svg_texts
from smmile.cli import main as smmile
from smmile.identity import BY_KEY
from smmile.report import build, manifests, names
from smmile.scoring.statistics import Resampling
from smmile.scoring import estimates as stats, tables
from smmile.scoring.scores import load_records

LEVEL = 0.95
pytestmark = pytest.mark.slow  # the session's demo reports take ~15 s to build


class Page(HTMLParser):
    """Tables (rows of cells: text, link, class), ids, images (src, width), links and visible text."""

    def __init__(self):
        super().__init__()
        self.tables, self.ids, self.images, self.hrefs, self.text = [], set(), [], [], []
        self._cell, self._skip = None, 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if "id" in attrs:
            self.ids.add(attrs["id"])
        if tag in ("script", "style"):
            self._skip += 1
        if tag == "img":
            self.images.append((attrs.get("src", ""), attrs.get("width")))
        if tag == "a" and "href" in attrs:
            self.hrefs.append(attrs["href"])
            if self._cell is not None:
                self._cell["href"] = attrs["href"]
        if tag == "table":
            self.tables.append([])
        elif tag == "tr" and self.tables:
            self.tables[-1].append([])
        elif tag in ("td", "th") and self.tables:
            self._cell = {"text": "", "href": None, "class": attrs.get("class", "")}

    def handle_endtag(self, tag):
        if tag in ("script", "style"):
            self._skip -= 1
        if tag in ("td", "th") and self._cell is not None:
            self._cell["text"] = " ".join(self._cell["text"].split())
            self.tables[-1][-1].append(self._cell)
            self._cell = None

    def handle_data(self, data):
        if self._skip:
            return
        self.text.append(data)
        if self._cell is not None:
            self._cell["text"] += data


def parse(path: Path) -> Page:
    page = Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def records(res: Path):
    return load_records(str(res))


def expected_cell(row: dict) -> str:
    return f"{row['accuracy']:.2f} [{row['ci_low']:.2f}, {row['ci_high']:.2f}]"


def table_after(page_html: str, heading_id: str) -> Page:
    """The first table after the element with ``heading_id``."""
    start = page_html.index(f'id="{heading_id}"')
    page = Page()
    page.feed(page_html[start - 4:])
    return page


def test_outputs_written(reports):
    out = reports["main"]
    assert (out / "index.html").is_file() and (out / "report_data.json").is_file()
    names_ = {p.name for p in (out / "figures").iterdir()}
    for stem in ("accuracy_llm", "accuracy_em", "accuracy_mcqa", "icl_gain"):  # <folder slug>_<name> (issue #20)
        assert {f"smmile_{stem}.png", f"smmile_{stem}.svg"} <= names_
    strata = json.loads((reports["res"] / "model_stratification_em.json").read_text())
    flags = [k[: -len("_accuracy")] for k in next(iter(strata.values())) if k.endswith("_accuracy")]
    page = (out / "index.html").read_text()
    # every demo stratum has fewer than 20 problems: no map (issue #20 item 9), the table of each flag instead
    assert not any("stratification" in n for n in names_)
    assert page.count("No map: every stratum has fewer than 20 problems") == len(flags)
    assert any(n.startswith("analysis_") and n.endswith(".svg") for n in names_), "the analysis has its plot"


def test_main_table_matches_stats(reports):
    rows = stats.estimates(records(reports["res"]), int(N_BOOT), 0, "auto", LEVEL)
    main = table_after((reports["main"] / "index.html").read_text(), "main-smmile").tables[0]
    header, body = main[:2], main[2:]
    columns = [(m, mode) for m in names.METRICS for mode in ("0-shot", "ICL")
               if any((r["metric"], r["mode"]) == (m, mode) for r in rows)]  # a column per registered metric
    assert [c["text"] for c in header[1]] == [mode for _, mode in columns]
    models = build.model_order(rows)
    assert [r[0]["text"] for r in body] == [names.display(m) for m in models]
    cells = {(r["model"], r["metric"], r["mode"]): r for r in rows}
    for model, line in zip(models, body):
        for (metric, mode), cell in zip(columns, line[1:]):
            want = cells.get((model, metric, mode))
            assert cell["text"] == (expected_cell(want) if want else "–"), (model, metric, mode)
            if want and metric != "NOANS":  # the cell links to the problems behind it (NOANS: not in the explorer)
                query = parse_qs(urlparse(cell["href"]).fragment.partition("?")[2])
                assert query == {"set": ["smmile"], "model": [model], "metric": [metric], "mode": [mode]}


def test_without_dataset_cells_link_to_the_explorer_built_from_the_results(reports):
    """Issue #22 item 5: without --dataset the explorer is built from the result files, so a cell still shows the
    problems behind it."""
    page = parse(reports["plain"] / "index.html")
    links = [c["href"] for row in page.tables[0][2:] for c in row[1:] if c["href"]]
    assert links and all(h.startswith("#problems?set=smmile&") for h in links)
    assert "problems" in page.ids


def test_titles_match_the_data(reports):
    """The demo has no 0-shot MCQA result: its figure and column say ICL only."""
    svg = (reports["main"] / "figures" / "smmile_accuracy_mcqa.svg").read_text()
    titles = [t for t, _ in svg_texts(svg) if t.startswith("MCQA")]
    assert titles and "ICL only" in titles[0] and "0-shot" not in titles[0]
    assert "0-shot vs ICL" in " ".join(t for t, _ in svg_texts((reports["main"] / "figures" / "smmile_accuracy_llm.svg").read_text()))


def test_markers_explained(tmp_path):
    """Text only* and LLaVA-Med** get their footnote wherever they are shown."""
    from smmile.report.sections import markers_note

    note = markers_note(["text only", "llavamed", "qwen72B"])
    assert "<li>* text-only baseline" in note and "<li>** LLaVA-Med" in note
    assert markers_note(["qwen72B"]) == ""
    assert names.html("text only") == "Text only<sup>*</sup>" and names.html("llavamed") == "LLaVA-Med<sup>**</sup>"
    assert names.html("a<b") == "a&lt;b"


def test_faithful_variance_table_shown(reports):
    from html import escape

    faithful = (reports["res"] / "evaluation_results.txt").read_text(encoding="utf-8")
    assert escape(faithful) in (reports["main"] / "index.html").read_text(encoding="utf-8")


def test_runs_table(reports):
    text = (reports["main"] / "index.html").read_text()
    page = table_after(text, "runs-smmile")
    by_file = {row[0]["text"]: row for row in page.tables[0][1:]}
    assert set(by_file) == {p.name for p in reports["res"].glob("result_*.csv")}
    for name, row in by_file.items():
        manifest_file = reports["res"] / name.replace(".csv", ".manifest.json")
        joined = " ".join(c["text"] for c in row)
        if manifest_file.exists():
            m = json.loads(manifest_file.read_text())
            assert m["model"]["preset"] in joined and m["dataset"]["fingerprint"] in joined and m["protocol"] in joined
        else:
            assert manifests.NO_MANIFEST in joined
    assert "scored by ollama:llama3.3 (corrected)" in " ".join(c["text"] for c in by_file["result_toy_ICL_open.csv"])


def test_failed_judge_attempt_is_not_credited(tmp_path):
    """Published-style scores (no judge record) and a later failed attempt: the attempt is reported as
    failed, never as the source of the numbers."""
    csv = tmp_path / "result_x_ICL_open.csv"
    csv.write_text("problem_id,true_answer,generated_answer\n1,a,a\n2,b,c\n")
    (tmp_path / "result_x_ICL_open_evaluationllm.json").write_text(json.dumps({"problem_accuracies": {"1": 100, "2": 0}}))
    lines = [{"row": i, "problem_id": str(i + 1), "status": "failed", "backend": "ollama", "model": "llama3.3",
              "protocol": "paper"} for i in range(2)]
    (tmp_path / "result_x_ICL_open_judgements.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    text = manifests.judge_text(manifests.run_info(str(csv)).judge)
    assert text.startswith("scored by a judge that was not recorded")
    assert "the last attempt, by ollama:llama3.3 (paper), failed for 2 of 2 rows and was not used" in text
    assert not re.match(r"^scored by ollama", text)


def test_judge_record_credits_its_writer(tmp_path):
    csv = tmp_path / "result_x_ICL_open.csv"
    csv.write_text("problem_id,true_answer,generated_answer\n1,a,a\n")
    (tmp_path / "result_x_ICL_open_evaluationllm.json").write_text(json.dumps({"problem_accuracies": {"1": 100}}))
    record = {"judge": {"backend": "openai-compatible", "model": "gemma", "protocol": "corrected"},
              "counts": {"rows": 1, "unparseable": 0}}
    (tmp_path / "result_x_ICL_open_evaluationllm.manifest.json").write_text(json.dumps(record))
    assert manifests.judge_text(manifests.run_info(str(csv)).judge).startswith(
        "scored by openai-compatible:gemma (corrected); 1 rows")


def test_icl_gain_table_and_significance(reports):
    paper = [r for r in records(reports["res"]) if r.metric != "NOANS"]  # NOANS is not compared (scoring/refusal.py)
    gains = stats.comparisons(paper, "icl", int(N_BOOT), 0, "auto", LEVEL)
    assert gains, "the fixture has a model with 0-shot and ICL results"
    gain_table = table_after((reports["main"] / "index.html").read_text(), "gain-smmile").tables[0]
    rows = {r[0]["text"]: r[1:] for r in gain_table[2:]}
    for g in gains:
        cells = rows[names.display(g["model_a"])]
        cell = next(c for c in cells if c["text"].startswith(f"{g['difference']:+.2f}"))
        assert cell["text"] == f"{g['difference']:+.2f} [{g['ci_low']:+.2f}, {g['ci_high']:+.2f}]"
        assert ("up" in cell["class"] or "down" in cell["class"]) == bool(g["significant"])


def test_analyses_are_tables_not_json(reports):
    summary = json.loads((reports["an"] / "noise.json").read_text())["summary"]
    text = (reports["main"] / "index.html").read_text()
    page = parse(reports["main"] / "index.html")
    visible = "".join(page.text)
    assert "Noise: an unrelated example added" in visible
    assert not re.search(r"\{\s*\"", visible), "raw JSON on the page"
    assert "p_mcnemar =" not in visible and "p_adjusted =" not in visible
    tables_text = [" ".join(c["text"] for c in row) for t in page.tables for row in t]
    for row in summary:
        want = f"{names.display(row['model'])} {names.metric(row['metric'])} {row['mode']} {row['n_pairs']}"
        line = next(line for line in tables_text if line.startswith(want))
        assert f"{row['difference']:.2f} [{row['ci_low']:.2f}, {row['ci_high']:.2f}]" in line
        assert f"{row['p_value']:.3f}" in line and f"{row['p_adjusted']:.3f}" in line  # issue #31: sign-flip
    assert "analysis_1_noise" in text


def test_page_is_self_contained(reports):
    out = reports["main"]
    page = parse(out / "index.html")
    sources = [src for src, _ in page.images if src]  # the explorer's zoom image gets its source on a click
    assert sources and all(src.startswith("data:image/") for src in sources)
    files = [h for h in page.hrefs if not h.startswith("#")]
    assert files, "figures are linked as files too"
    for href in files:
        assert not re.match(r"^[a-z]+://", href), href
        assert (out / unquote(href)).is_file(), href
    assert not re.search(r"""(src|href)=["']https?://""", (out / "index.html").read_text())


def test_figures_readable_at_their_rendered_size(reports):
    """Every figure is shown at a width where its smallest text is at least 9 pt (both pages: the demo's
    SMMILE strata are too small for a map, the SMMILE++ ones of the side-by-side page have two)."""
    shown = [(src, int(width)) for report in ("main", "sets") for src, width in parse(reports[report] / "index.html").images
             if src.startswith("data:image/svg+xml")]
    assert len(shown) >= 10
    for src, width in shown:
        svg = base64.b64decode(src.split(",", 1)[1]).decode()
        assert rendered_pt(svg, width) >= 9 - 1e-6, [t for t in svg_texts(svg) if t[1] < 9]
        assert width <= 1200, "fits the page without being scaled down"


def test_no_internal_model_label_in_any_figure(reports):
    internal = set()
    for record in records(reports["res"]):
        identity = record.result.identity
        internal |= {n for n in (identity.key, identity.scoring_name) if n != identity.display}
    assert {"majority", "random (baseline)"} <= internal
    for svg in (reports["main"] / "figures").glob("*.svg"):
        words = {t for t, _ in svg_texts(svg.read_text())}
        assert not words & internal, (svg.name, words & internal)


def test_report_data_json(reports):
    data = json.loads((reports["main"] / "report_data.json").read_text())
    assert len(data["sets"][0]["estimates"]) == len(records(reports["res"]))
    assert data["sets"][0]["runs"]["result_toy_ICL_open.csv"]["status"] == manifests.NO_MANIFEST


def test_side_by_side(reports):
    """--plusplus: one page with both folders, SMMILE++ intervals clustered, the per-model change paired
    by base problem (as smmile.analysis.variants.compare computes it)."""
    from smmile.analysis.variants import compare

    text = (reports["sets"] / "index.html").read_text()
    assert 'id="main-smmile"' in text and 'id="main-smmile-pp"' in text and 'id="sets"' in text
    plus = stats.estimates(records(reports["pp"]), int(N_BOOT), 0, "auto", LEVEL)
    assert all(r["clustered"] and r["n_problems"] < r["n_rows"] for r in plus)
    ref = {(r.model, r.metric, r.mode): r for r in records(reports["res"])}
    em = table_after(text, "sets").tables[1]  # LLM (toy only), then EM
    rows = {r[0]["text"]: [c["text"] for c in r[1:]] for r in em[2:]}
    for record in records(reports["pp"]):
        if record.metric != "EM":
            continue
        row, _ = compare(ref[(record.model, "EM", record.mode)], record, True, int(N_BOOT), 0, LEVEL)
        cells = [c.replace(" ", "") for c in rows[names.display(record.model)]]
        want = f"{row['difference']:+.2f} [{row['ci_low']:+.2f}, {row['ci_high']:+.2f}] n = {row['n_problems']}"
        assert want.replace(" ", "") in cells


def test_same_inputs_same_bytes(reports, tmp_path):
    """A second report of the same inputs (another folder) is byte-identical: HTML, JSON, PNG, SVG."""
    again = tmp_path / "again"
    assert smmile(["report", str(reports["res"]), "--analyses", str(reports["an"]), "--dataset", "demo",
                   "--out", str(again), "--n-boot", N_BOOT]) == 0
    first = {p.relative_to(reports["main"]): p.read_bytes() for p in reports["main"].rglob("*")
             if p.is_file() and not p.name.startswith(".")}
    second = {p.relative_to(again): p.read_bytes() for p in again.rglob("*") if p.is_file() and not p.name.startswith(".")}
    assert set(first) == set(second)
    assert {str(k) for k in first if first[k] != second[k]} == set()
    assert any(str(k).endswith(".png") for k in first) and any(str(k).endswith(".svg") for k in first)


def test_stages_printed(reports, tmp_path, capsys):
    assert smmile(["report", str(reports["res"]), "--out", str(tmp_path / "o"), "--n-boot", "50",
                   "--formats", "svg"]) == 0
    err = capsys.readouterr().err
    for stage in ("statistics for 1 results folder", "figures:", "figures drawn", "page written"):
        assert re.search(rf"smmile report \[ *[0-9.]+ s\] {stage}", err), stage


def test_bad_input(tmp_path, capsys):
    assert smmile(["report", str(tmp_path / "missing"), "--out", str(tmp_path / "o")]) == 2
    (tmp_path / "empty").mkdir()
    assert smmile(["report", str(tmp_path / "empty"), "--out", str(tmp_path / "o")]) == 2
    assert smmile(["report", str(tmp_path / "empty"), "--formats", "gif"]) == 2
    err = capsys.readouterr().err
    assert "not found" in err and "no scorable" in err and "--formats" in err


def test_out_is_a_file_or_foreign_folder(reports, tmp_path, capsys):
    """Checked before any work: one line, exit 2, nothing written."""
    target = tmp_path / "page.html"
    target.write_text("mine")
    assert smmile(["report", str(reports["res"]), "--out", str(target)]) == 2
    foreign = tmp_path / "notes"
    foreign.mkdir()
    (foreign / "thesis.tex").write_text("mine")
    assert smmile(["report", str(reports["res"]), "--out", str(foreign)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 2
    assert "is a file" in err and "not empty" in err
    assert target.read_text() == "mine" and sorted(p.name for p in foreign.iterdir()) == ["thesis.tex"]


def test_out_read_only(reports, tmp_path, capsys):
    """A folder that cannot be written (read-only for a user; /proc, which even root cannot write in)."""
    import os

    if os.geteuid() == 0:
        target = Path("/proc/smmile-report-test")
        if not Path("/proc").is_dir():
            pytest.skip("root writes into read-only folders and there is no /proc")
        assert smmile(["report", str(reports["res"]), "--out", str(target)]) == 2
    else:
        locked = tmp_path / "locked"
        locked.mkdir()
        locked.chmod(0o500)
        try:
            assert smmile(["report", str(reports["res"]), "--out", str(locked / "report")]) == 2
        finally:
            locked.chmod(0o700)
    err = capsys.readouterr().err
    assert "Traceback" not in err and "cannot write" in err and "statistics" not in err


def test_ctrl_c(reports, tmp_path, monkeypatch, capsys):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(build, "gather", interrupted)
    assert smmile(["report", str(reports["res"]), "--out", str(tmp_path / "o")]) == 130
    err = capsys.readouterr().err
    assert "the report was not written" in err and "journal" not in err and "Traceback" not in err
    assert not (tmp_path / "o" / "index.html").exists()


def test_published_report(published, tmp_path):
    """The paper's outputs: display names only, Text only* first rows, every model of the paper."""
    data = build.gather([(None, str(published))], settings=Resampling(n_boot=200))
    assert not data.warnings
    models = data.sets[0].models()
    assert models[:3] == list(tables.PRIORITY_MODELS)
    assert set(models) <= set(BY_KEY)
    from smmile.report import sections

    rendered = re.sub(r"<[^>]+>", "", sections.main_table(data.sets[0]))
    for key in ("qwen72B", "llava_7b", "text only", "llavamed"):
        assert BY_KEY[key].display.rstrip("*") in rendered and f">{key}<" not in sections.main_table(data.sets[0])


def test_without_matplotlib_the_page_is_still_written(reports, tmp_path, monkeypatch, capsys):
    from smmile.errors import MissingDependency
    from smmile import plotting

    def missing():
        raise MissingDependency("matplotlib", "plots", why="figures")

    monkeypatch.setattr(plotting, "pyplot", missing)
    # the page is written: exit 0, the warning on stderr and on the page (issue #20 item 9)
    assert smmile(["report", str(reports["res"]), "--out", str(tmp_path / "o"), "--n-boot", "50"]) == 0
    assert "figures left out" in capsys.readouterr().err
    assert "figures left out" in (tmp_path / "o" / "index.html").read_text()
    assert (tmp_path / "o" / "index.html").is_file() and not (tmp_path / "o" / "figures").exists()


@pytest.mark.parametrize("signame,status", [("SIGINT", 130), ("SIGTERM", 143)])
def test_sigint_while_drawing(reports, tmp_path, signame, status):
    """A real Ctrl-C (SIGINT), or a SIGTERM (Slurm's time limit, scancel), sent to the whole process group as a
    terminal and Slurm do, while the worker processes draw: exit 130 / 143, the report's own message, no
    traceback from any process, no page."""
    import os
    import signal
    import subprocess
    import sys

    out = tmp_path / "o"
    command = [sys.executable, "-m", "smmile.cli", "report", str(reports["res"]), "--out", str(out), "--n-boot", "50"]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, start_new_session=True,
                               preexec_fn=default_signals,
                               cwd=Path(__file__).resolve().parents[1] / "inference_and_evaluation")
    lines = []
    for line in process.stderr:
        lines.append(line)
        if "figures:" in line:
            os.killpg(process.pid, getattr(signal, signame))
            break
    lines += process.stderr.readlines()
    assert process.wait(timeout=60) == status
    err = "".join(lines)
    assert "interrupted: the report was not written" in err and "Traceback" not in err
    assert not (out / "index.html").exists()
