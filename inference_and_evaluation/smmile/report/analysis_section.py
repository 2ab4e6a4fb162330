"""The analyses section: each output of ``smmile analyze`` / ``smmile agreement`` as typed tables
and one plot (report.analyses reads them; report.figures plans the plots)."""

from __future__ import annotations

from smmile.report import analyses
from smmile.report.html import esc, figure, typed_table
from smmile.report.sections import markers_note

EMPTY = ('<p class="note">No analysis outputs given. Produce them with <code>smmile analyze '
         "noise|order|permutation|shots|flip|images|diagnostics</code> and <code>smmile agreement</code>, then pass the output folder with "
         "<code>--analyses DIR</code> (docs/reproducing-the-paper.md).</p>")
INTRO = ('<p class="note">Paired differences (variant − reference, percentage points) with their bootstrap '
         "interval, the paired test and its Holm adjustment, as computed by <code>smmile analyze</code>; judge "
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
        more = f" (first {len(t.rows)} of {t.n_rows} rows; all are in the file)" if t.truncated else ""
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
