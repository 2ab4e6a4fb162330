"""The sections of the page, each returning HTML: per results folder (header, main table, ICL gain, runs), the
folders side by side, the analyses (``smmile analyze`` / ``smmile agreement``) and the reviewed judge verdicts
(``smmile report --reviews``: re-scored beside the judge; the main table itself is unchanged)."""

from __future__ import annotations

import math
import os
from urllib.parse import urlencode

from smmile import logs
from smmile.analysis import reviews as rv
from smmile.record import original
from smmile.report import analyses, build, manifests, names
from smmile.report.html import DASH, anchor, details, esc, figure, fmt_ci, fmt_number, fmt_p, table, typed_table
from smmile.scoring import stats_run
from smmile.scoring.metrics import judged


def figures_at(figs, place: tuple, page_dir: str) -> str:
    return "".join(figure(f.title, f.files, page_dir) for f in figs if f.place == place)


# -- header -------------------------------------------------------------------------------------------
def header(data) -> str:
    s = data.settings
    folders = "".join(f'<p class="meta">{esc(r.label)}: <code>{esc(os.path.basename(os.path.normpath(r.results_dir)))}</code> — {len(r.runs)} result '
                      f"file(s), {sum(i.manifest is not None for i in r.runs.values())} with a run manifest</p>"
                      for r in data.sets)
    return (folders + f'<p class="meta">Intervals: {s.level:.0%}; each table names the method of its intervals. '
            f"Where they are resampled: {s.n_boot} resamples, seed {s.seed}, clusters {esc(s.cluster)} (SMMILE++ "
            f"permutations are resampled by base problem). Significant: Holm-adjusted p &lt; {1 - s.level:g} and an "
            "interval that excludes 0.</p>")


def warnings(data) -> str:
    if not data.warnings:
        return ""
    items = "".join(f"<li>{esc(w)}</li>" for w in data.warnings)
    return f'<div class="warn"><b>Warnings</b><ul>{items}</ul></div>'


def markers_note(models) -> str:
    found = names.markers(models)
    if not found:
        return ""
    return '<ol class="markers">' + "".join(f"<li>{esc(m)} {esc(note)}</li>" for m, note in found) + "</ol>"


def model_head(groups: list[tuple[str, list[str]]]) -> list[str]:
    """A table's two header rows: ``Model``, then each group's name over its columns' names."""
    return ['<tr><th class="name" rowspan="2">Model</th>' + "".join(
                f'<th colspan="{len(columns)}">{esc(name)}</th>' for name, columns in groups) + "</tr>",
            "<tr>" + "".join(f"<th>{esc(c)}</th>" for _, columns in groups for c in columns) + "</tr>"]


# -- main table ----------------------------------------------------------------------------------------
def _failures_note(cell: dict) -> tuple[str, str]:
    """(tooltip text, visible marker) for the failed / refused / empty rows behind a cell (issue #20 item 4)."""
    counts = {kind: cell.get(f"n_{kind}") for kind in ("refused", "failed", "empty")}
    if any(v is None for v in counts.values()):
        return "failed/refused/empty rows unknown (judge JSON without its CSV)", ' <small class="fail">(failures ?)</small>'
    total = sum(int(v) for v in counts.values())
    rule = ("scored wrong" if cell.get("failures", "wrong") == "wrong"
            else "failed: transport failures, left out; refused and empty: scored wrong")
    text = ", ".join(f"{v} {kind}" for kind, v in counts.items()) + f" ({rule})"
    return text, (f' <small class="fail">({total} failed)</small>' if total else "")


def jury_ties(rset, source: str, metric: str) -> int:
    """Problems of a jury-judged result on which the jury tied (no majority: counted wrong)."""
    if not judged(metric):
        return 0
    record = next((r for r in rset.records if os.path.basename(r.source) == os.path.basename(source)
                   and r.metric == metric and r.result is not None), None)
    votes = [[m.get("value") for m in ms] for ms in (record.result.jury.values() if record else [])]
    return sum(0 < v.count(1) == v.count(0) for v in votes)


def _estimate_cell(rset, cell, best) -> str:
    if cell is None or math.isnan(cell["accuracy"]):
        return DASH
    source = cell["source"]
    status = manifests.summary(rset.runs[source])["status"] if source in rset.runs else manifests.NO_MANIFEST
    failures, marker = _failures_note(cell)
    ties = jury_ties(rset, source, cell["metric"])
    if ties:
        failures += f"; {ties} jury tie(s), counted wrong"
        marker += f' <small class="fail">({ties} jury tie{"s" if ties > 1 else ""})</small>'
    n = (f"n = {cell.get('n_rows')} rows, {cell.get('n_problems')} base problems" if cell.get("clustered")
         else f"n = {cell.get('n_problems', cell.get('n_rows'))} problems")
    if cell.get("clustered") and cell.get("accuracy_problem") is not None:  # issue #31: both weightings
        n += (f"; base-problem-weighted {cell['accuracy_problem']:.2f} [{cell['ci_low_problem']:.2f}, "
              f"{cell['ci_high_problem']:.2f}]")
    tip = f"{n}; {failures}; {source}; {status}; click for these problems"
    cls = ' class="best"' if best is not None and cell["accuracy"] == best else ""
    href = "#problems?" + urlencode({"set": rset.slug, "model": cell["model"], "metric": cell["metric"],
                                     "mode": cell["mode"]})  # read by the explorer's script
    shown = f"{fmt_number(cell['accuracy'])} {fmt_ci(cell['ci_low'], cell['ci_high'])}"
    if not names.METRIC_TABLE[cell["metric"]].paper:  # a rate the explorer does not show per problem (NOANS)
        return f'<td title="{esc(tip.removesuffix("; click for these problems"))}">{shown}</td>'
    return f'<td{cls} title="{esc(tip)}"><a href="{esc(href)}">{shown}</a>{marker}</td>'


def main_table(rset) -> str:
    have = {(r["metric"], r["mode"]) for r in rset.estimates if not math.isnan(r["accuracy"])}
    columns = [(m, mode) for m in names.METRICS for mode in names.MODES if (m, mode) in have]  # the registry's
    if not columns:
        return '<p class="note">No scorable result files.</p>'
    rows = [(m, {(r["metric"], r["mode"]): r for r in rset.estimates if r["model"] == m}) for m in rset.models()]
    metrics = list(dict.fromkeys(metric for metric, _ in columns))
    head = model_head([(names.metric(m), [mode for metric, mode in columns if metric == m]) for m in metrics])
    # the highest point estimate per column among the non-baseline models (bold, as in the paper)
    best = [max((c["accuracy"] for m, cells in rows if m not in names.BASELINES for c in [cells.get(column)]
                 if c and not math.isnan(c["accuracy"])), default=None)
            if names.METRIC_TABLE[column[0]].paper else None for column in columns]
    body = []
    n_baselines = sum(m in names.BASELINES for m, _ in rows)
    for i, (model, cells) in enumerate(rows):
        rule = ' class="rule"' if i == n_baselines and i > 0 else ""
        tds = "".join(_estimate_cell(rset, cells.get(c), b) for c, b in zip(columns, best))
        body.append(f'<tr{rule}><td class="name">{names.html(model)}</td>{tds}</tr>')
    return table(head, body)


def main_section(data, rset, figs, page_dir: str) -> str:
    modes = [mode for mode in names.MODES if any(r["mode"] == mode for r in rset.estimates)]
    what = " vs ".join(modes) if len(modes) > 1 else f"{modes[0]} only" if modes else "no results"
    level = f"{data.settings.level:.0%}"
    method = rset.estimates[0].get("ci_method", "interval") if rset.estimates else "interval"
    note = (f"Accuracy (%) with its {level} interval ({esc(method)}; for SMMILE++ the design effect of the orders "
            "of a base problem). Beside a cell: its failed, refused or empty responses (transport failures left out, refusals and empty answers scored wrong; the tooltip says which rule and, for SMMILE++, the base-problem-weighted accuracy). "
            "Rows and names as in the paper's table (baselines first); bold = best model per column. Click a cell "
            "for the problems behind it (problem explorer below); hover for n and the file. LLM-as-a-judge and "
            "exact match score the open-format answers, MCQA the letter chosen. The point estimate is the raw "
            "accuracy (variance_analysis reports the bootstrap mean ± std instead).")
    faithful = ""
    if rset.variance_table:
        faithful = details(f"{original.VARIANCE_TABLE} as variance_analysis.py wrote it (bootstrap mean ± std)",
                           f"<pre>{esc(rset.variance_table)}</pre>")
    return (f'<h2 id="{anchor("main", rset.slug)}">Main table, {esc(rset.label)}: {esc(what)}</h2>'
            f'<p class="note">{note}</p>{main_table(rset)}{markers_note(rset.models())}'
            f"{faithful}{figures_at(figs, ('main', rset.slug), page_dir)}")


# -- ICL gain ------------------------------------------------------------------------------------------
def difference_cell(row, tip: str, below: str = "") -> str:
    """A paired difference with its interval, shaded when significant (blue gain, orange loss)."""
    cls = (' class="up"' if row["difference"] > 0 else ' class="down"') if row.get("significant") else ""
    tip += f"; {row.get('p_method', 'test')} p = {fmt_p(row.get('p_value'))}"
    return (f'<td{cls} title="{esc(tip)}">{row["difference"]:+.2f} {fmt_ci(row["ci_low"], row["ci_high"], True)}'
            f"{below}</td>")


def _gain_cell(row) -> str:
    if row is None:
        return DASH + DASH
    tip = (f"n = {row.get('n_pairs')} paired rows ({row.get('n_problems')} problems); ICL {row['accuracy_a']:.2f} vs "
           f"0-shot {row['accuracy_b']:.2f}")
    return difference_cell(row, tip) + f"<td>{fmt_p(row.get('p_adjusted', row.get('p_holm')))}</td>"


def gain_section(data, rset, figs, page_dir: str) -> str:
    heading = f'<h2 id="{anchor("gain", rset.slug)}">ICL gain per model, {esc(rset.label)}</h2>'
    rows = build.gain_table(rset.gains)
    if not rows:
        return heading + '<p class="note">No model has both 0-shot and ICL results.</p>'
    metrics = [m for m in names.METRICS if any(m in cells for _, cells in rows)]
    head = model_head([(names.metric(m), ["ICL − 0-shot (pp)", "p (adjusted)"]) for m in metrics])
    body = [f'<tr><td class="name">{names.html(model)}</td>' +
            "".join(_gain_cell(cells.get(m)) for m in metrics) + "</tr>" for model, cells in rows]
    adjustment = rset.gains[0].get("adjustment", f"Holm over the {len(rset.gains)} ICL − 0-shot comparisons")
    note = (f"Paired difference on the problems both runs share (gold-answer mismatches excluded); test: sign-flip "
            f"randomisation over base problems, adjusted by {esc(adjustment)}; the interval comes from the same "
            f"procedure (its side away from 0 widened to MOVER), so it excludes 0 exactly when the adjusted p &lt; "
            f"{1 - data.settings.level:g}. Shaded: significant: blue gain, orange loss.")
    return (f'{heading}<p class="note">{note}</p>{table(head, body)}{markers_note([m for m, _ in rows])}'
            f"{figures_at(figs, ('gain', rset.slug), page_dir)}")


# -- runs ------------------------------------------------------------------------------------------------
RUN_COLUMNS = (("model", ("model", "model_id", "model_revision", "backend", "engine")),
               ("data", ("dataset", "dataset_revision", "fingerprint")),
               ("protocol", ("protocol", "mode", "format")),
               ("rows / failed", ("rows", "failed")),
               ("created / smmile revision", ("created", "git")))
LABELS = {"model_revision": "revision", "engine": "engine", "dataset_revision": "revision", "fingerprint": "fingerprint",
          "backend": "backend", "failed": "failed", "git": "smmile"}


def _stacked(summary: dict, keys) -> str:
    lines = [f"{LABELS[k]}: {esc(summary[k])}" if k in LABELS else esc(summary[k])
             for k in keys if summary.get(k) not in (None, "")]
    return "<br>".join(lines)


def _manifest_lines(manifest, prefix: str = "") -> list[str]:
    """A manifest as ``a.b: value`` lines (no JSON on the page)."""
    lines = []
    for key, value in (manifest or {}).items():
        if isinstance(value, dict):
            lines += _manifest_lines(value, f"{prefix}{key}.")
        elif isinstance(value, list):
            shown = ", ".join(_inline(v) for v in value[:8])
            lines.append(f"{prefix}{key}: {shown}{' …' if len(value) > 8 else ''}")
        else:
            lines.append(f"{prefix}{key}: {value}")
    return lines


def _inline(value) -> str:
    if isinstance(value, dict):
        return "(" + "; ".join(f"{k}={_inline(v)}" for k, v in value.items()) + ")"
    if isinstance(value, list):
        return f"[{len(value)} items]"
    return str(value)


def _run_row(rset, info) -> str:
    s = manifests.summary(info)
    name = f'<td class="name" id="{anchor(f"run-{rset.slug}", info.name)}">{esc(info.name)}</td>'
    judge = f'<td class="text">{esc(manifests.judge_text(info.judge))}</td>'
    if s["status"] != "manifest":
        return f'<tr>{name}<td class="text" colspan="{len(RUN_COLUMNS) + 1}"><i>{esc(s["status"])}</i></td>{judge}</tr>'
    cells = "".join(f'<td class="text">{_stacked(s, keys)}</td>' for _, keys in RUN_COLUMNS)
    manifest = details("manifest", f"<p><code>{esc(s['command'])}</code></p><pre>"
                       f"{esc(chr(10).join(_manifest_lines(info.manifest)))}</pre>")
    return f'<tr>{name}{cells}<td class="text">{manifest}</td>{judge}</tr>'


def runs_section(rset) -> str:
    head = ['<tr><th class="name">result file</th>' + "".join(f"<th>{esc(label)}</th>" for label, _ in RUN_COLUMNS)
            + "<th>command, manifest</th><th>LLM judge</th></tr>"]
    body = [_run_row(rset, info) for info in rset.runs.values()]
    note = ("One row per result CSV: the run manifest smmile's runner wrote beside it (model, revisions, "
            "protocol, data, dates) and the judge recorded as the writer of its LLM-judge scores.")
    costs = stats_run.cost_cells(rset.estimates)
    cost = (f'<h3>Tokens and cost per correct answer</h3><p class="note">{esc(stats_run.COST_NOTE)}.</p>'
            + _plain_table(stats_run.COST_HEAD, [[esc(c) for c in row] for row in costs])) if costs else ""
    return (f'<h2 id="{anchor("runs", rset.slug)}">Runs behind each number, {esc(rset.label)}</h2>'
            f'<p class="note">{note}</p>{table(head, body, "runs")}{cost}')


# -- folders side by side ---------------------------------------------------------------------------
def _estimate(row) -> str:
    if row is None or math.isnan(row["accuracy"]):
        return DASH
    return f'<td class="num">{row["accuracy"]:.2f} {fmt_ci(row["ci_low"], row["ci_high"])}</td>'


def _change(row) -> str:
    if row is None:
        return DASH
    n = row.get("n_problems", row.get("n_clusters"))
    tip = (f"{n} shared base problems, {row.get('n_pairs', row.get('n'))} paired rows; on those rows "
           f"{row.get('reference_set')} {row['accuracy_reference']:.2f} vs {row.get('set')} {row['accuracy_variant']:.2f}")
    return difference_cell(row, tip, f'<br><span class="ci">n = {esc(n)}</span>')


def metric_table(data, metric: str) -> str:
    labels = [s.label for s in data.sets]
    cells = {(s.label, r["model"], r["mode"]): r for s in data.sets for r in s.estimates if r["metric"] == metric}
    changes = {(c["set"], c["model"], c["mode"]): c for c in data.changes if c["metric"] == metric}
    modes = [m for m in names.MODES if any(k[2] == m for k in cells)]
    models = [m for m in data.models() if sum((lab, m, mode) in cells for lab in labels for mode in modes) > 0]
    if not models or not modes:
        return ""
    head = model_head([(mode, labels + [f"{lab} − {labels[0]} (pp)" for lab in labels[1:]]) for mode in modes])
    body = []
    for model in models:
        tds = "".join("".join(_estimate(cells.get((lab, model, mode))) for lab in labels) +
                      "".join(_change(changes.get((lab, model, mode))) for lab in labels[1:]) for mode in modes)
        body.append(f'<tr><td class="name">{names.html(model)}</td>{tds}</tr>')
    return f"<h3>{esc(names.metric(metric))}</h3>" + table(head, body)


def sets_section(data, figs, page_dir: str) -> str:
    if len(data.sets) < 2:
        return ""
    labels = [s.label for s in data.sets]
    note = (f"Each folder's accuracy (%) with its {data.settings.level:.0%} interval (SMMILE++: cluster bootstrap by "
            f"base problem), and the change of {', '.join(esc(lab) for lab in labels[1:])} from {esc(labels[0])}: "
            "the paired difference over the later folder's rows, each row against the first folder's score of the "
            "same base problem (a permutation is paired with the problem it permutes), with a cluster-bootstrap "
            "interval; n = shared base problems. A problem with many orders thus weighs more, and problems only one "
            "folder has are left out, so the change can differ from the difference of the two accuracies; hover a "
            "change for both accuracies on the paired rows. Shaded: significant (blue gain, orange loss).")
    tables_html = "".join(metric_table(data, m) for m in names.METRICS)
    return (f'<h2 id="sets">{" vs ".join(esc(lab) for lab in labels)}, side by side</h2><p class="note">{note}</p>'
            f"{tables_html}{markers_note(data.models())}"
            + "".join(figures_at(figs, ("sets", m), page_dir) for m in names.METRICS))


# -- analyses --------------------------------------------------------------------------------------------
EMPTY = ('<p class="note">No analysis outputs given. Produce them with <code>smmile analyze '
         f"{'|'.join(analyses.ANALYSES)}</code> and <code>smmile agreement</code>, then pass the output folder with "
         "<code>--analyses DIR</code> (docs/reproducing-the-paper.md).</p>")
INTRO = ('<p class="note">Paired differences (variant − reference, percentage points), the paired sign-flip test, '
         "its family adjustment and the interval from that procedure, as computed by <code>smmile analyze</code>; judge "
         "agreement as computed by <code>smmile agreement</code>. Per-problem rows stay in their CSV files; the "
         "problem explorer shows problems.</p>")


def _models(view) -> list[str]:
    return [r["model"] for t in view.tables for r in t.rows if isinstance(r.get("model"), str) and r["model"] != "*"]


def view_html(view, figs, page_dir: str) -> str:
    parts = [f"<h4>{esc(view.title)}</h4>"]
    parts += [f'<p class="note">{esc(note)}</p>' for note in view.notes]
    for fig in (f for f in figs if f.place == ("analysis", view.path)):
        parts.append(figure(fig.title, fig.files, page_dir))
    if view.image:
        parts.append(figure(view.title, {view.image.rsplit(".", 1)[1]: view.image}, page_dir))
    for t in view.tables:
        more = f" (first {len(t.rows)} of {t.n_rows} rows; all are in the file)" if t.n_rows > len(t.rows) else ""
        note = f" — {t.note}" if t.note else ""
        parts.append(f'<p class="meta"><b>{esc(t.title)}</b>{esc(more + note)}</p>' + typed_table(t.columns, t.rows))
    parts.append(markers_note(_models(view)))
    return "".join(parts)


def analyses_section(data, figs, page_dir: str) -> str:
    parts = ['<h2 id="analyses">Analyses: noise, order, permutations, ICL diagnostics, judge agreement</h2>']
    if not data.analysis_views:
        return parts[0] + EMPTY
    parts.append(INTRO)
    for key, label in analyses.SECTIONS:
        views = [v for v in data.analysis_views if v.section == key]
        if views:
            parts.append(f"<h3>{esc(label)}</h3>" + "".join(view_html(v, figs, page_dir) for v in views))
    return "".join(parts)


# -- reviews -------------------------------------------------------------------------------------------
def _plain_table(head: list[str], rows: list[list[str]]) -> str:
    return table(["<tr>" + "".join(f"<th>{esc(h)}</th>" for h in head) + "</tr>"],
                      ["<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows])


def reviews_section(data, paths, strict: bool = False) -> str:
    """The HTML of the reviews (empty without ``paths``); the files were checked before any work. Reviews of
    answers no results folder has are refused and counted (``strict``: a UserError)."""
    if not paths:
        return ""
    records = [r for rset in data.sets for r in rset.records]
    before = len(data.warnings)
    with build.for_the_page(data.warnings):  # said with the page's other warnings
        reviews = rv.screen(rv.read_reviews(paths), records, strict)
    said = data.warnings[before:]
    parts = ['<h2 id="reviews">Reviewed answers</h2>',
             f'<p class="note">{len(reviews)} review(s) from {len(paths)} file(s). '
             "Re-scored: the judge's accuracy with each reviewed problem's verdict replaced by the reviewers' "
             "majority label (correct, wrong; in older files agree: the verdict shown, disagree: its opposite; unsure, "
             "gold flags and ties leave the judge's verdict). The main table is unchanged."
             + "".join(f" {esc(s)}." for s in said) + "</p>"]
    for rset in data.sets:
        with logs.silenced():  # the page leaves fractional scores out without a word
            cells = rv.review_table(reviews, rset.records)
        rows = []
        for record in (r for r in rset.records if judged(r.metric)):
            found = rv.rescored(record, cells, data.settings.level)
            if found is not None:
                accuracy, reviewed, changed, low, high = found
                rows.append([esc(names.display(record.model)), esc(record.mode), fmt_number(float(record.scores.mean() * 100)),
                             fmt_number(accuracy), str(reviewed), str(changed), f"{fmt_number(low)}–{fmt_number(high)}"])
        if rows:
            parts.append(f"<h3>{esc(rset.label)}</h3>" + _plain_table(
                ["Model", "Mode", "judge %", "re-scored with reviews %", "reviewed problems", "verdicts changed",
                 "re-scored interval (Wilson, clustered)"], rows))
        pids = {str(p) for r in rset.records for p in r.scores.index}
        mine = reviews["model"].isin({r.model for r in rset.records}) | (reviews["model"].eq("") & reviews["problem_id"].isin(pids))
        disputed = rv.disputed(reviews[mine], cells)
        if len(disputed):
            parts.append(f"<h3>Disputed verdicts ({esc(rset.label)}): {len(disputed)}</h3>" + _plain_table(
                ["Model", "Mode", "Format", "Problem", "verdict shown", "reviewers", "exact match", "reviews", "notes"],
                [[esc(names.display(r.model)) if r.model else "(the gold answer)", esc(r.mode), esc(r.format), esc(r.problem_id), fmt_number(r.verdict_shown, 0),
                  fmt_number(r.reviewed, 0), fmt_number(r.em, 0), esc(r.reviews), esc(r.notes)]
                 for r in disputed.itertuples()]))
    return "".join(parts)
