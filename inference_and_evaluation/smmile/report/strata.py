"""The stratified-accuracy section: per metric and flag, the heatmap (strata too small for every model left out,
and named) and a table of every stratum's accuracy with its 95% interval and n. SMMILE++ strata come from
stratify's ``_ci.json``, else with ``--dataset`` from the result rows (``cluster_by_rows``), else they are
counted in rows and the page says so."""

from __future__ import annotations

import json
import os

from smmile.report import figures, names
from smmile.report.build import strat_flags
from smmile.report.html import anchor, details, esc, figure, table
from smmile.scoring import statistics, stratify
from smmile.scoring.metrics import metrics_for

ROWS_WARNING = "strata are counted in rows, not base problems"  # build.load_stratification's warning
METRIC_OF_KIND = {m.name.lower(): m.name for m in metrics_for("open")}  # stratify.py's --eval_type: em, llm


# -- SMMILE++ strata from the result rows ---------------------------------------------------------------
def _label_key(label) -> str:
    """A label as the stratification JSON writes it (a key: ``true``, ``3``, ``CT``)."""
    return next(iter(json.loads(json.dumps({label: 0}))))


def _entries(scores, labels: dict, flag: str, level: float) -> dict:
    """label -> interval entry of one flag, labels in order of first appearance."""
    groups: dict = {}
    for pid, score in scores.items():
        groups.setdefault(_label_key(labels[pid][flag]), []).append((pid, float(score)))
    out = {}
    for label, members in groups.items():
        ids, values = [pid for pid, _ in members], [v for _, v in members]
        ci = statistics.proportion_interval(values, statistics.base_problem_ids(ids), "row", level)
        out[label] = {"n_rows": ci.n, "n_problems": ci.n_clusters, "correct": sum(v == 1 for v in values),
                      "accuracy": ci.estimate * 100, "ci95_low": ci.low * 100, "ci95_high": ci.high * 100,
                      "method": f"cluster {ci.method}", "small": bool(ci.n_clusters < stratify.MIN_PROBLEMS)}
    return out


def strata_from_rows(rset, problems, level: float = stratify.LEVEL) -> dict | None:
    """``kind -> {key: {flag: {label: entry}}}`` for the folder's stratification keys from the matching result
    rows, each row's strata from ``problems``, clustered by base problem; None when a row's problem is missing."""
    by_id = {p.problem_id: p for p in problems}
    out: dict = {}
    for kind, plain in rset.stratification.items():
        flags = strat_flags(plain)
        keys = {(names.key_for_scoring(k.rsplit(":", 1)[0]), k.rsplit(":", 1)[1]): k for k in plain}
        out[kind] = {}
        for record in rset.records:
            key = keys.get((record.model, record.mode))
            if key is None or record.metric != METRIC_OF_KIND.get(kind):
                continue
            scores = {str(pid): score for pid, score in record.scores.items()}
            if any(pid not in by_id for pid in scores):
                return None
            labels = {pid: stratify.problem_labels(by_id[pid], flags, record.mode) for pid in scores}
            out[kind][key] = {flag: _entries(scores, labels, flag, level) for flag in flags}
    return out


def from_records(data, datasets: list) -> None:
    """Each folder without stratify's ``model_stratification_*.json`` whose dataset was loaded gets its strata
    from its records, as ``stratify.py`` would write them (the same keys, labels and intervals), so deleting
    those exports changes nothing on the page."""
    for rset, problems in zip(data.sets, datasets):
        if rset.stratification or not problems:
            continue
        by_id, flags = {p.problem_id: p for p in problems}, stratify.valid_flags(problems)
        for kind, metric in METRIC_OF_KIND.items():
            found = {}
            for record in (r for r in rset.records if r.metric == metric and r.result is not None):
                accuracies = dict(sorted((str(pid), float(v) * 100) for pid, v in record.scores.items()))
                try:
                    found[record.result.scoring_key] = stratify.stratify_accuracies(accuracies, by_id, flags,
                                                                                    record.mode)
                except stratify.StratifyError:
                    continue  # problems of another dataset: left out, as stratify.py leaves the file out
            if found:
                rset.stratification[kind] = json.loads(json.dumps(found))
                rset.strat_ci[kind] = json.loads(json.dumps(
                    {key: stratify.stratum_intervals(strata, flags) for key, strata in found.items()}))


def cluster_by_rows(data, datasets: list) -> None:
    """Each SMMILE++ folder counted in rows (``figures.counted_in_rows``) that has problems in ``datasets`` gets
    its strata from the result rows, and loses the warning that they are row counts."""
    for rset, problems in zip(data.sets, datasets):
        if not problems or not figures.counted_in_rows(rset):
            continue
        found = strata_from_rows(rset, problems)
        if found is None:
            data.warnings.append(f"{rset.results_dir}: the dataset lacks problems of the result rows; the "
                                 f"{rset.label} strata stay counted in rows")
            continue
        rset.strat_ci = found
        data.warnings[:] = [w for w in data.warnings if ROWS_WARNING not in w or  # "<path>: no matching ..."
                            os.path.dirname(os.path.abspath(w.split(": no matching", 1)[0])) != rset.results_dir]


# -- the section ----------------------------------------------------------------------------------------
METHODS = {"Wilson": "Wilson on the problems",
           "cluster percentile bootstrap": "cluster bootstrap by base problem (stratify.py)",
           "cluster Wilson bound": "cluster bootstrap by base problem (stratify.py)",
           f"cluster {statistics.WILSON}": "continuity-corrected Wilson on the base problems",
           f"cluster {statistics.WILSON_DEFF}": "continuity-corrected Wilson on the effective sample size, "
                                               "base problems as clusters (as the main table)"}


def _methods(rset) -> str:
    found = {entry.get("method") for entry in figures.interval_entries(rset)}
    return "; ".join(dict.fromkeys(METHODS.get(m, str(m)) for m in sorted(found, key=str)))


def left_out_note(left_out: list, unit: str) -> str:
    """The strata a map leaves out (``figures.heatmap_panels``), by panel."""
    by_panel: dict = {}
    for panel, column in left_out:
        by_panel.setdefault(panel, []).append(column)
    parts = "; ".join(f"{esc(panel)}: {', '.join(esc(c) for c in columns)}" for panel, columns in by_panel.items())
    return (f'<p class="note">Left out of the map, fewer than {stratify.MIN_PROBLEMS} {unit} for every model '
            f"(in the table below): {parts}.</p>")


def _interval_cell(entry, rows_only: bool = False) -> str:
    if not entry or entry.get("accuracy") is None:
        return '<td class="missing">–</td>'
    if rows_only:
        return f"<td>{entry['accuracy']:.0f}</td>"
    cls = ' class="small"' if entry.get("small") else ""
    low, high = entry.get("ci95_low"), entry.get("ci95_high")
    interval = f'<br><span class="ci">[{low:.0f}–{high:.0f}]</span>' if low is not None and high is not None else ""
    return f"<td{cls}>{entry['accuracy']:.0f}{interval}</td>"


def interval_table(panel: dict, models: list[str], rows_only: bool = False) -> str:
    head = [f'<tr><th class="name">{esc(panel["title"])}</th>' +
            "".join(f"<th>{esc(c)}</th>" for c in panel["columns"]) + "</tr>"]
    body = [f'<tr><td class="name">{names.html(model)}</td>' +
            "".join(_interval_cell(e, rows_only) for e in entries) + "</tr>"
            for model, entries in zip(models, panel["entries"])]
    return table(head, body)


def _flag_block(rset, kind: str, flag: str, figs, page_dir: str, open_: bool) -> str:
    models, panels = figures.strata_panels(rset, kind, flag)
    if not panels:
        return ""
    unit = figures.strata_unit(rset)
    shown, left_out = figures.heatmap_panels(panels)
    fig = next((f for f in figs if f.place == ("strat", rset.slug, kind, flag)), None)
    content = figure(fig.title, fig.files, page_dir) if fig else ""
    if not shown:
        content += (f'<p class="note">No map: every stratum has fewer than {stratify.MIN_PROBLEMS} {unit} for '
                    "every model, too few to read; the table gives each.</p>")
    elif left_out:
        content += left_out_note(left_out, unit)
    content += "".join(interval_table(p, models, figures.counted_in_rows(rset)) for p in panels)
    return details(esc(names.flag(flag)), content, open_=open_)


def strat_section(data, rset, figs, page_dir: str) -> str:
    heading = f'<h2 id="{anchor("strat", rset.slug)}">Stratified accuracy, {esc(rset.label)}</h2>'
    if not rset.stratification:
        return heading + ('<p class="note">No <code>model_stratification_*.json</code> in the results folder '
                          "(run <code>stratify.py RESULTS --eval_type em|llm</code>).</p>")
    if figures.counted_in_rows(rset):
        note = ("From stratify.py: accuracy (%) per problem flag, one panel per mode. This SMMILE++ folder has "
                "no <code>model_stratification_*_ci.json</code> and the report was given no dataset, so which "
                "base problem falls in which stratum is unknown: these strata are counted in result rows (every "
                "permutation of a problem once), n = rows, with no interval and no small-stratum mark, since "
                "both need base problems. For base-problem counts and clustered intervals give "
                "<code>--dataset</code> or rerun <code>stratify.py RESULTS --eval_type em|llm</code>.")
    else:
        unit = figures.strata_unit(rset)
        note = (f"From stratify.py: accuracy (%) per problem flag, one panel per mode (a flag that only varies "
                f"with ICL examples is shown for ICL only). Strata with fewer than {stratify.MIN_PROBLEMS} {unit} "
                f"for every model are left out of the maps (a cell below it for one model is greyed), and in "
                f"italics in the tables: too few to read. Under each map: every stratum's accuracy with its 95% "
                f"interval ({esc(_methods(rset))}); n = {unit} in the stratum.")
    parts = [heading, f'<p class="note">{note}</p>']
    for kind in rset.stratification:
        parts.append(f"<h3>{esc(names.metric(kind.upper()))}</h3>")
        flags = strat_flags(rset.stratification[kind])
        parts += [_flag_block(rset, kind, flag, figs, page_dir, i == 0) for i, flag in enumerate(flags)]
    return "".join(parts)
