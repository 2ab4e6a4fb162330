"""The sections of the report page, each a function of the gathered data returning HTML."""

from __future__ import annotations

import json
import math

from smmile.report import analyses, build, manifests
from smmile.report.html import (anchor, compact_table, details, display_name, esc, figure, fmt_ci, fmt_number,
                                fmt_p, plain_value, table)
from smmile.scoring import plots, tables

METRIC_NAMES = {"LLM": "LLM-as-a-judge", "EM": "Exact match", "MCQA": "MCQA"}


def _figures(figs, section: str, page_dir: str) -> str:
    return "".join(figure(f.title, f.files, page_dir) for f in figs if f.section == section)


# -- header ------------------------------------------------------------------------------------------
def header(data, n_runs: int) -> str:
    s = data.settings
    with_manifest = sum(info.manifest is not None for info in data.runs.values())
    return (f'<p class="meta">Results directory: <code>{esc(data.results_dir)}</code></p>'
            f'<p class="meta">{n_runs} result file(s), {with_manifest} with a run manifest. '
            f"Intervals: {s.level:.0%} percentile bootstrap, {s.n_boot} resamples, seed {s.seed}, "
            f"cluster={esc(s.cluster)} (cluster bootstrap by base problem for SMMILE++ permutations).</p>")


def warnings(data) -> str:
    if not data.warnings:
        return ""
    items = "".join(f"<li>{esc(w)}</li>" for w in data.warnings)
    return f'<div class="warn"><b>Warnings</b><ul>{items}</ul></div>'


# -- main table ----------------------------------------------------------------------------------------
def _best(rows) -> list:
    """Highest point estimate per column among the non-baseline models (bold, as in the paper)."""
    best = []
    for j in range(len(tables.COLUMNS)):
        values = [cells[j]["accuracy"] for model, cells in rows
                  if model not in tables.PRIORITY_MODELS and cells[j] and not math.isnan(cells[j]["accuracy"])]
        best.append(max(values) if values else None)
    return best


def _estimate_cell(cell, best, runs) -> str:
    if cell is None or math.isnan(cell["accuracy"]):
        return '<td class="missing">-</td>'
    source = cell["source"]
    status = manifests.summary(runs[source])["status"] if source in runs else manifests.NO_MANIFEST
    tip = f"n={cell['n']} ({cell['n_clusters']} clusters); {source}; {status}"
    cls = ' class="best"' if best is not None and cell["accuracy"] == best else ""
    link = anchor("run", source)
    return (f'<td{cls} title="{esc(tip)}"><a href="#{link}">{fmt_number(cell["accuracy"])} '
            f"{fmt_ci(cell['ci_low'], cell['ci_high'])}</a></td>")


def main_table(data) -> str:
    rows = build.main_table(data.estimates)
    if not rows:
        return '<p class="note">No scorable result files.</p>'
    metrics = list(dict.fromkeys(metric for metric, _ in tables.COLUMNS))
    head = ['<tr><th class="name" rowspan="2">Model</th>' +
            "".join(f'<th colspan="2">{METRIC_NAMES[m]}</th>' for m in metrics) + "</tr>",
            "<tr>" + "".join(f"<th>{esc(mode)}</th>" for _, mode in tables.COLUMNS) + "</tr>"]
    best, body, n_priority = _best(rows), [], len(tables.priority_rows({m for m, _ in rows}))
    for i, (model, cells) in enumerate(rows):
        rule = ' class="rule"' if i == n_priority and i > 0 else ""
        tds = "".join(_estimate_cell(c, b, data.runs) for c, b in zip(cells, best))
        body.append(f'<tr{rule}><td class="name">{display_name(model)}</td>{tds}</tr>')
    return table(head, body)


def main_section(data, figs, page_dir: str) -> str:
    note = ("Accuracy (%) with its percentile bootstrap interval. Rows and names as in the paper's table "
            "(baselines first); bold = best model per column. Hover a cell for n and the file; click it for "
            "the run that produced it. LLM = LLM-as-a-judge, EM = flexible exact match (open format), "
            "MCQA = share of correct letters. The point estimate is the raw accuracy (variance_analysis "
            "reports the bootstrap mean ± std instead).")
    faithful = ""
    if data.variance_table:
        faithful = details(f"{build.VARIANCE_TABLE} as variance_analysis.py wrote it (bootstrap mean ± std)",
                           f"<pre>{esc(data.variance_table)}</pre>")
    return (f'<h2 id="main">Main table: 0-shot vs ICL</h2><p class="note">{note}</p>{main_table(data)}'
            f"{faithful}{_figures(figs, 'main', page_dir)}")


# -- ICL gain ------------------------------------------------------------------------------------------
def _gain_cell(row, alpha: float) -> str:
    if row is None:
        return '<td class="missing">-</td><td class="missing">-</td>'
    significant = row["p_holm"] is not None and row["p_holm"] == row["p_holm"] and row["p_holm"] < alpha
    cls = (' class="up"' if row["difference"] > 0 else ' class="down"') if significant else ""
    tip = f"n={row['n']}; ICL {row['accuracy_a']:.2f} vs 0-shot {row['accuracy_b']:.2f}; McNemar p={fmt_p(row['p_mcnemar'])}"
    return (f'<td{cls} title="{esc(tip)}">{row["difference"]:+.2f} {fmt_ci(row["ci_low"], row["ci_high"], True)}</td>'
            f"<td>{fmt_p(row['p_holm'])}</td>")


def gain_section(data, figs, page_dir: str) -> str:
    rows = build.gain_table(data.gains)
    if not rows:
        return '<h2 id="gain">ICL gain</h2><p class="note">No model has both 0-shot and ICL results.</p>'
    metrics = [m for m in METRIC_NAMES if any(m in cells for _, cells in rows)]
    head = ['<tr><th class="name" rowspan="2">Model</th>' +
            "".join(f'<th colspan="2">{METRIC_NAMES[m]}</th>' for m in metrics) + "</tr>",
            "<tr>" + "<th>ICL − 0-shot (pp)</th><th>p (Holm)</th>" * len(metrics) + "</tr>"]
    body = [f'<tr><td class="name">{display_name(model)}</td>' +
            "".join(_gain_cell(cells.get(m), data.settings.alpha) for m in metrics) + "</tr>" for model, cells in rows]
    note = (f"Paired difference on the problems both runs share, with a paired bootstrap interval; exact "
            f"McNemar test, Holm-adjusted over the {len(data.gains)} comparisons shown. Shaded: significant at "
            f"{data.settings.alpha} (green gain, red loss).")
    return (f'<h2 id="gain">ICL gain per model</h2><p class="note">{note}</p>{table(head, body)}'
            f"{_figures(figs, 'gain', page_dir)}")


# -- stratification ------------------------------------------------------------------------------------
def _strat_key_order(keys) -> list[str]:
    """0-shot keys sorted, then the others sorted (the heatmaps' and stratify's console order)."""
    zero = sorted(k for k in keys if k.endswith(":0-shot"))
    return zero + sorted(k for k in keys if k not in zero)


def _ci_table(ci_data: dict, flag: str) -> str:
    keys = [k for k in _strat_key_order(ci_data) if isinstance(ci_data[k], dict) and flag in ci_data[k]]
    labels = list(dict.fromkeys(label for k in keys for label in ci_data[k][flag]))
    head = ["<tr><th class=\"name\">model:mode</th>" + "".join(f"<th>{esc(l)}</th>" for l in labels) + "</tr>"]
    body = []
    for key in keys:
        cells = []
        for label in labels:
            c = ci_data[key][flag].get(label)
            cells.append('<td class="missing">-</td>' if c is None else
                         f"<td>{c['accuracy']:.1f} {fmt_ci(c['ci95_low'], c['ci95_high'])} <span class=\"ci\">n={c['n']}</span></td>")
        body.append(f'<tr><td class="name">{esc(key)}</td>{"".join(cells)}</tr>')
    return table(head, body)


def strat_section(data, figs, page_dir: str) -> str:
    parts = ['<h2 id="strat">Stratified accuracy</h2>']
    if not data.stratification:
        return parts[0] + ('<p class="note">No <code>model_stratification_*.json</code> in the results directory '
                           "(run <code>stratify.py RESULTS --eval_type em|llm</code>).</p>")
    parts.append('<p class="note">From stratify.py: accuracy (%) per problem flag; model keys are stratify\'s '
                 "display names. Strata under 20 problems are noisy (Wilson 95% intervals below each map).</p>")
    for kind, strata in data.stratification.items():
        parts.append(f"<h3>{METRIC_NAMES[kind.upper()]} ({kind})</h3>")
        for i, flag in enumerate(plots.stratification_flags(strata)):
            fig = next((f for f in figs if f.key == f"stratification_{kind}_{flag}"), None)
            content = figure(fig.title, fig.files, page_dir) if fig else ""
            if kind in data.strat_ci:
                content += details("Wilson 95% intervals", _ci_table(data.strat_ci[kind], flag))
            parts.append(details(esc(flag.removeprefix("flag_")), content, open_=(i == 0)))
    return "".join(parts)


# -- analyses -----------------------------------------------------------------------------------------
def _settings_note(t, shown: set) -> str:
    if not t.settings or t.path in shown:
        return ""
    shown.add(t.path)
    return f'<p class="note">{esc(t.path)}: <code>{esc(json.dumps(t.settings, sort_keys=True))}</code></p>'


def _analysis_table(t, shown: set) -> str:
    title = f"<h4>{esc(t.title)}</h4>"
    if t.text is not None:
        return title + f"<pre>{esc(t.text)}</pre>"
    content, constants = compact_table(t.columns, t.rows) if t.rows else ('<p class="note">(no rows)</p>', {})
    if constants:
        same = ", ".join(f"{esc(k)} = {plain_value(k, v)}" for k, v in constants.items())
        content = f'<p class="note">every row: {same}</p>' + content
    if t.truncated:
        content += f'<p class="note">first {len(t.rows)} of {t.n_rows} rows; all of them are in the file.</p>'
    if t.collapsed:
        return _settings_note(t, shown) + details(f"{esc(t.title)} ({t.n_rows} rows)", content)
    return _settings_note(t, shown) + title + content


def analyses_section(data, page_dir: str) -> str:
    parts = ['<h2 id="analyses">Analyses: noise, order, permutations, judge agreement</h2>']
    if not data.analysis_tables and not data.analysis_images:
        parts.append('<p class="note">No analysis outputs given. Produce them with <code>smmile analyze '
                     "noise|order|permutation</code> and <code>smmile agreement</code>, then pass the output "
                     "folder with <code>--analyses DIR</code> (docs/reproducing-the-paper.md).</p>")
        return "".join(parts)
    parts.append('<p class="note">Paired differences (variant − reference, percentage points) as written by '
                 "<code>smmile analyze</code> / <code>smmile agreement</code>.</p>")
    shown: set = set()
    for key, label in analyses.SECTIONS:
        items = [_analysis_table(t, shown) for t in data.analysis_tables if t.section == key]
        items += [figure(i.title, {i.path.rsplit(".", 1)[1]: i.path}, page_dir)
                  for i in data.analysis_images if i.section == key]
        if items:
            parts.append(f"<h3>{esc(label)}</h3>" + "".join(items))
    return "".join(parts)


# -- runs ------------------------------------------------------------------------------------------------
RUN_COLUMNS = (("model", ("model", "model_id", "model_revision", "backend", "engine")),
               ("data", ("dataset", "dataset_revision", "fingerprint")),
               ("protocol", ("protocol", "mode", "format")),
               ("rows / failed", ("rows", "failed")),
               ("created / smmile revision", ("created", "git")))
LABELS = {"model_revision": "revision", "engine": "engine", "dataset_revision": "revision", "fingerprint": "fingerprint",
          "backend": "backend", "failed": "failed", "git": "smmile"}


def _judge_text(judge) -> str:
    if not judge:
        return ""
    if "error" in judge:
        return esc(judge["error"])
    status = ", ".join(f"{k} {v}" for k, v in sorted(judge["status"].items()))
    return esc(f"{judge.get('backend')}:{judge.get('model')} ({judge.get('protocol')}); {status}")


def _stacked(summary: dict, keys) -> str:
    lines = [f"{LABELS[k]}: {esc(summary[k])}" if k in LABELS else esc(summary[k])
             for k in keys if summary.get(k) not in (None, "")]
    return "<br>".join(lines)


def _run_row(info) -> str:
    s = manifests.summary(info)
    name = f'<td class="name" id="{anchor("run", info.name)}">{esc(info.name)}</td>'
    judge = f'<td class="name">{_judge_text(info.judge)}</td>'
    if s["status"] != "manifest":
        return f'<tr>{name}<td class="name" colspan="{len(RUN_COLUMNS) + 1}"><i>{esc(s["status"])}</i></td>{judge}</tr>'
    cells = "".join(f'<td class="name">{_stacked(s, keys)}</td>' for _, keys in RUN_COLUMNS)
    manifest = details("manifest", f"<p><code>{esc(s['command'])}</code></p><pre>"
                       f"{esc(json.dumps(info.manifest, indent=2, ensure_ascii=False))}</pre>")
    return f'<tr>{name}{cells}<td class="name">{manifest}</td>{judge}</tr>'


def runs_section(data) -> str:
    head = ['<tr><th class="name">result file</th>' + "".join(f"<th>{esc(label)}</th>" for label, _ in RUN_COLUMNS)
            + "<th>command, manifest</th><th>judge: backend:model (protocol); replies</th></tr>"]
    body = [_run_row(info) for info in data.runs.values()]
    note = ("One row per result CSV: the run manifest smmile's runner wrote beside it (model, revisions, "
            "protocol, data, dates) and, for judged files, the judge recorded in <code>_judgements.jsonl</code>.")
    return f'<h2 id="runs">Runs behind each number</h2><p class="note">{note}</p>{table(head, body, "runs")}'
