"""Issue #20 item 9: the report matches its own numbers.

* SMMILE++ strata without stratify's ``_ci.json``: with ``--dataset`` counted in base problems from the
  result rows, with clustered intervals; without it said to be counted in rows, with no interval and no
  cluster label.
* The SMMILE-vs-SMMILE++ figure draws the paired change the table gives; a missing result is marked.
* Strata heatmaps leave out strata below the threshold instead of hatching them.
* Figure file names do not depend on the number of folders; ``--figure-size paper|slide``.
* Exit 0 once the page is written; its warnings on stderr and on the page.

Expected numbers are computed here from the inputs (result CSVs, evaluation JSONs, the dataset), never read
from what the report wrote.
"""

from __future__ import annotations

import json
import re
import shutil
from collections import defaultdict
from pathlib import Path

import pytest

from report_fixtures import N_BOOT, svg_texts, svg_width_pt
from smmile.cli import main as smmile
from smmile.report import build, figures, names
from smmile.scoring import statistics
from smmile.scoring.scores import load_records
from smmile import plotting

pytestmark = pytest.mark.slow
FLAG = "flag_answer_format"  # a dataset column: the first flag of the demo's stratification


@pytest.fixture(scope="module")
def pp_without_ci(reports, tmp_path_factory) -> Path:
    """The demo's SMMILE++ results as the published SMMILE++ folder is: stratified, no ``_ci.json``."""
    copy = tmp_path_factory.mktemp("pp-no-ci") / "res-pp"
    shutil.copytree(reports["pp"], copy)
    (copy / "model_stratification_em_ci.json").unlink()
    return copy


def base(pid: str) -> str:
    return re.sub(r"_perm_\d+$", "", pid)


def strata_of(results: Path, stem: str, dataset: str = "demo-plusplus") -> dict:
    """label -> (problem ids, scores in [0, 1]) of one EM result, from its evaluation JSON and the dataset."""
    from smmile.data.load import load_problems

    answer_format = {p.problem_id: p.query.fields[FLAG] for p in load_problems(dataset)}
    scores = json.loads((results / f"{stem}_evaluation.json").read_text())["problem_accuracies"]
    groups: dict = defaultdict(lambda: ([], []))
    for pid, score in scores.items():
        ids, values = groups[answer_format[pid]]
        ids.append(pid)
        values.append(score / 100)
    return dict(groups)


def section(page: str, slug: str) -> str:
    start = page.index(f'id="strat-{slug}"')
    end = page.find("<h2", start + 1)
    return page[start:end if end > 0 else len(page)]


def first_table(html_text: str) -> list[list[str]]:
    table = re.search(r"<table.*?</table>", html_text, re.S).group(0)
    rows = re.findall(r"<tr>(.*?)</tr>", table, re.S)
    return [[re.sub(r"<[^>]+>", "", c).replace(" ", "") for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", r, re.S)]
            for r in rows]


def report(args: list[str], out: Path, capsys=None) -> tuple[int, str]:
    code = smmile(["report", *args, "--out", str(out), "--n-boot", "50", "--formats", "svg"])
    return code, capsys.readouterr().err if capsys else ""


# -- SMMILE++ strata ------------------------------------------------------------------------------------
def test_plusplus_strata_in_base_problems_with_clustered_intervals(pp_without_ci, tmp_path, capsys):
    """With --dataset the strata are counted in base problems from the result rows, each with the clustered
    interval of ``statistics.proportion_interval`` (the main table's), and the page says so."""
    code, err = report([str(pp_without_ci), "--dataset", "demo"], tmp_path / "o", capsys)
    part = section((tmp_path / "o" / "index.html").read_text(), "smmile-pp")
    note = re.sub(r"<[^>]+>", "", part[: part.index("<h3")])
    assert "n = base problems" in note and "effective sample size" in note and "counted in rows" not in note
    table = first_table(part)
    groups = strata_of(pp_without_ci, "result_majority_ICL")
    header = table[0][1:]
    want = {f"{label}(n={len(set(map(base, ids)))})".replace(" ", "") for label, (ids, _) in groups.items()}
    assert set(header) == want  # base problems, not rows (66 rows of 5 base problems, ...)
    assert all(len(ids) > len(set(map(base, ids))) for ids, _ in groups.values())
    row = next(r for r in table[1:] if r[0] == names.display("majority").replace(" ", ""))
    for label, (ids, values) in groups.items():
        ci = statistics.proportion_interval(values, [base(i) for i in ids])
        column = next(i for i, h in enumerate(header) if h.startswith(str(label).replace(" ", "") + "(n="))
        assert row[column + 1] == f"{ci.estimate * 100:.0f}[{ci.low * 100:.0f}–{ci.high * 100:.0f}]", label
    assert code == 0 and "counted in rows" not in err


def test_plusplus_strata_without_dataset_say_rows(pp_without_ci, tmp_path, capsys):
    """Without a dataset the rows' strata are unknown: the strata are shown counted in rows, said so in
    plain words, with no interval, no greying and no cluster label; exit 0 with the warning on stderr
    and on the page."""
    code, err = report([str(pp_without_ci)], tmp_path / "o", capsys)
    page = (tmp_path / "o" / "index.html").read_text()
    assert "strata are counted in rows" in re.sub(r"<[^>]+>", "", page[: page.index("<h2")] + page)
    part = section(page, "smmile-pp")
    text = re.sub(r"<[^>]+>", "", part)
    assert "counted in result rows" in text and "no interval" in text
    assert "cluster bootstrap" not in text and "n = base problems" not in text
    table = first_table(part)
    rows = {label: len(ids) for label, (ids, _) in strata_of(pp_without_ci, "result_majority_ICL").items()}
    assert set(table[0][1:]) == {f"{label}(n={n}rows)".replace(" ", "") for label, n in rows.items()}
    assert not any("[" in cell for line in table[1:] for cell in line)
    assert 'class="small"' not in part
    assert code == 0 and "strata are counted in rows" in err


# -- side by side -----------------------------------------------------------------------------------------
def test_side_by_side_figure_draws_the_tables_paired_change(reports, tmp_path):
    """The SMMILE vs SMMILE++ figure's points are the paired changes (as smmile.analysis.variants.compare computes
    them), not the gap between the two accuracies; a model without a change is marked "no result"."""
    from smmile.analysis.variants import compare

    data = build.gather([(None, str(reports["res"])), ("SMMILE++", str(reports["pp"]))],
                        settings=statistics.Resampling(n_boot=int(N_BOOT)))
    planned = {fig.key: job for fig, job in figures.plan(data, str(tmp_path), ("svg",))}
    job = planned["sets_em"]
    spec = job["spec"]
    assert job["kind"] == "forest" and "paired" in spec["title"]
    ref = {(r.model, r.metric, r.mode): r for r in load_records(str(reports["res"]))}
    drawn = {(r["label"], r["panel"]): r for r in spec["rows"]}
    for record in load_records(str(reports["pp"])):
        if record.metric != "EM":
            continue
        want, _ = compare(ref[(record.model, "EM", record.mode)], record, True, int(N_BOOT), 0, 0.95)
        got = drawn[(names.display(record.model), record.mode)]
        assert (got["estimate"], got["low"], got["high"]) == (want["difference"], want["ci_low"], want["ci_high"])
    assert drawn[(names.display("toy"), "ICL")].get("missing")  # toy has no SMMILE++ result
    texts = [t for t, _ in svg_texts(Path(plotting.draw(job)[0]).read_text())]
    assert "no result" in texts


def test_missing_bar_is_marked():
    """A model without a 0-shot result gets a visible mark where its bar would be, and a legend entry."""
    rows = [{"label": "A", "values": {"0-shot": [40.0, 30.0, 50.0], "ICL": [60.0, 50.0, 70.0]}},
            {"label": "B", "values": {"ICL": [20.0, 10.0, 30.0]}}]
    fig = plotting.bars_figure(rows, ["0-shot", "ICL"], "t", "accuracy (%)")
    ax = fig.axes[0]
    marks = [line for line in ax.lines if line.get_marker() == "x"]
    assert len(marks) == 1 and list(marks[0].get_xdata()) == [pytest.approx(1 - 0.2)]
    assert "no result" in [t.get_text() for t in fig.legends[0].get_texts()]
    plotting.pyplot().close(fig)


# -- heatmaps ---------------------------------------------------------------------------------------------
def test_small_strata_left_out_of_heatmaps(reports):
    """No hatched cells: the demo's SMMILE strata are all below 20 problems, so no map is drawn and each
    flag says so; the SMMILE++ first/last-example strata (23 base problems each) keep their map."""
    main = reports["main"]
    assert not list((main / "figures").glob("*stratification*"))
    part = re.sub(r"<[^>]+>", "", section((main / "index.html").read_text(), "smmile"))
    assert part.count("No map: every stratum has fewer than 20 problems") == 9
    sets = reports["sets"] / "figures"
    drawn = sorted(p.name for p in sets.glob("*stratification*.svg"))
    assert drawn == ["smmile-pp_stratification_em_flag_first_ICL_match_problem.svg",
                     "smmile-pp_stratification_em_flag_last_ICL_match_problem.svg"]
    assert not any("<pattern" in p.read_text() for p in sets.glob("*.svg"))


def test_left_out_strata_named_on_the_page():
    """A map that keeps some strata names the ones it leaves out, with their n (the table lists them)."""
    from smmile.report.strata import left_out_note

    panels = [{"title": "ICL", "columns": ["a (n=30)", "b (n=3)"], "values": [[50.0, 10.0]], "small": [[False, True]]}]
    kept, left = figures.heatmap_panels(panels)
    assert kept[0]["columns"] == ["a (n=30)"] and kept[0]["values"] == [[50.0]] and left == [("ICL", "b (n=3)")]
    assert "b (n=3)" in left_out_note(left, "problems")


# -- names and sizes ---------------------------------------------------------------------------------------
def test_figure_names_do_not_depend_on_the_number_of_folders(reports):
    one = {p.name for p in (reports["main"] / "figures").iterdir()}
    two = {p.name for p in (reports["sets"] / "figures").iterdir()}
    assert {"smmile_accuracy_em.svg", "smmile_icl_gain.svg"} <= one
    assert {"smmile_accuracy_em.svg", "smmile_icl_gain.svg", "smmile-pp_accuracy_em.svg"} <= two


@pytest.mark.parametrize("size", ["paper", "slide"])
def test_figure_size(reports, tmp_path, size, capsys):
    """paper: one column, 3.3 in wide with 7-8 pt text; slide: 16:9."""
    out = tmp_path / "o"
    code, _ = report([str(reports["res"]), "--plusplus", str(reports["pp"]), "--figure-size", size], out, capsys)
    assert code == 0
    svgs = list((out / "figures").glob("*.svg"))
    assert len(svgs) >= 8
    for path in svgs:
        svg = path.read_text()
        width = svg_width_pt(svg)
        height = float(re.search(r'<svg[^>]*\sheight="([0-9.]+)pt"', svg).group(1))
        sizes = {s for _, s in svg_texts(svg)}
        if size == "paper":
            assert width == pytest.approx(3.3 * 72), path.name
            assert 7 <= min(sizes) and max(sizes) <= 8, (path.name, sorted(sizes))
        else:
            assert width / height == pytest.approx(16 / 9, rel=0.01), path.name
    assert smmile(["figures", str(reports["res"]), "--out", str(tmp_path / "f"), "--n-boot", "50",
                   "--formats", "svg", "--figure-size", size]) == 0
    assert svg_width_pt((tmp_path / "f" / "smmile_accuracy_em.svg").read_text()) == pytest.approx(
        3.3 * 72 if size == "paper" else 10 * 72)
