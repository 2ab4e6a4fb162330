"""``smmile report --reviews FILE ...``: the reviewers' verdicts (``analysis.reviews``) beside the judge.

Per results folder, one row per judge-based main-table cell (model, mode) that has reviewed problems: the judge's
accuracy as the main table shows it and the accuracy with the reviewers' verdicts where they exist (the main
table itself is unchanged), then the disputed verdicts.
"""

from __future__ import annotations

import math

from smmile.analysis import reviews as rv
from smmile.report.html import esc, fmt_number
from smmile.report.html import table as html_table


def _cell(value) -> str:
    return "–" if value is None or (isinstance(value, float) and math.isnan(value)) else fmt_number(value, 0)


def table(head: list[str], rows: list[list[str]]) -> str:
    return html_table(["<tr>" + "".join(f"<th>{esc(h)}</th>" for h in head) + "</tr>"],
                      ["<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows])


def section(data, paths) -> str:
    """The HTML of the reviews (empty without ``paths``); the files were checked before any work."""
    if not paths:
        return ""
    reviews = rv.read_reviews(paths)
    parts = ['<h2 id="reviews">Reviewed judge verdicts</h2>',
             f'<p class="note">{len(reviews)} review(s) from {esc(", ".join(str(p) for p in paths))}. '
             "Re-scored: the judge's accuracy with each reviewed problem's verdict replaced by the reviewers' "
             "majority label (agree: the verdict shown; disagree: its opposite; unsure, gold flags and ties leave "
             "the judge's verdict). The main table is unchanged.</p>"]
    for rset in data.sets:
        cells = rv.review_table(reviews, rset.records)
        rows = []
        for record in (r for r in rset.records if r.metric == "LLM"):
            found = rv.rescored(record, cells)
            if found is not None:
                accuracy, reviewed, changed = found
                rows.append([esc(record.model), esc(record.mode), fmt_number(float(record.scores.mean() * 100)),
                             fmt_number(accuracy), str(reviewed), str(changed)])
        if rows:
            parts.append(f"<h3>{esc(rset.label)}</h3>" + table(
                ["Model", "Mode", "judge %", "re-scored with reviews %", "reviewed problems", "verdicts changed"], rows))
        disputed = rv.disputed(reviews[reviews["model"].isin({r.model for r in rset.records})], cells)
        if len(disputed):
            parts.append(f"<h3>Disputed verdicts ({esc(rset.label)}): {len(disputed)}</h3>" + table(
                ["Model", "Mode", "Format", "Problem", "verdict shown", "reviewers", "exact match", "reviews", "notes"],
                [[esc(r.model), esc(r.mode), esc(r.format), esc(r.problem_id), _cell(r.verdict_shown),
                  _cell(r.reviewed), _cell(r.em), esc(r.reviews), esc(r.notes)] for r in disputed.itertuples()]))
    return "".join(parts)
