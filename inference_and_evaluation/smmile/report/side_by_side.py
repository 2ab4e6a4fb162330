"""Several results folders side by side (SMMILE vs SMMILE++): per metric, each folder's accuracy with
its interval and each later folder's change from the first, paired by base problem."""

from __future__ import annotations

import math

from smmile.report import names
from smmile.report.html import esc, fmt_ci, fmt_p, table
from smmile.report.sections import figures_at, markers_note


def _estimate(row) -> str:
    if row is None or math.isnan(row["accuracy"]):
        return '<td class="missing">–</td>'
    return f'<td class="num">{row["accuracy"]:.2f} {fmt_ci(row["ci_low"], row["ci_high"])}</td>'


def _change(row) -> str:
    if row is None:
        return '<td class="missing">–</td>'
    cls = (' class="up"' if row["difference"] > 0 else ' class="down"') if row.get("significant") else ""
    n = row.get("n_problems", row.get("n_clusters"))
    tip = (f"{n} shared base problems, {row.get('n_pairs', row.get('n'))} paired rows; on those rows "
           f"{row.get('reference_set')} {row['accuracy_reference']:.2f} vs {row.get('set')} {row['accuracy_variant']:.2f}; "
           f"{row.get('p_method', 'test')} p = {fmt_p(row.get('p_value'))}")
    return (f'<td{cls} title="{esc(tip)}">{row["difference"]:+.2f} {fmt_ci(row["ci_low"], row["ci_high"], True)}'
            f'<br><span class="ci">n = {esc(n)}</span></td>')


def metric_table(data, metric: str) -> str:
    labels = [s.label for s in data.sets]
    cells = {(s.label, r["model"], r["mode"]): r for s in data.sets for r in s.estimates if r["metric"] == metric}
    changes = {(c["set"], c["model"], c["mode"]): c for c in data.changes if c["metric"] == metric}
    modes = [m for m in names.MODES if any(k[2] == m for k in cells)]
    models = [m for m in data.models() if sum((lab, m, mode) in cells for lab in labels for mode in modes) > 0]
    if not models or not modes:
        return ""
    per_mode = len(labels) * 2 - 1
    head = ['<tr><th class="name" rowspan="2">Model</th>' +
            "".join(f'<th colspan="{per_mode}">{esc(mode)}</th>' for mode in modes) + "</tr>",
            "<tr>" + "".join("".join(f"<th>{esc(lab)}</th>" for lab in labels) +
                             "".join(f"<th>{esc(lab)} − {esc(labels[0])} (pp)</th>" for lab in labels[1:])
                             for _ in modes) + "</tr>"]
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
