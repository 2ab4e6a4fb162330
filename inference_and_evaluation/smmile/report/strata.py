"""The stratified-accuracy section: per metric and flag, the heatmap and a table of every stratum's
accuracy with its 95% interval and n (the numbers of the greyed cells included)."""

from __future__ import annotations

from smmile.report import figures, names
from smmile.report.build import strat_flags
from smmile.report.html import anchor, details, esc, figure, table
from smmile.scoring import stratify


def _interval_cell(entry) -> str:
    if not entry or entry.get("accuracy") is None:
        return '<td class="missing">–</td>'
    cls = ' class="small"' if entry.get("small") else ""
    low, high = entry.get("ci95_low"), entry.get("ci95_high")
    interval = f'<br><span class="ci">[{low:.0f}–{high:.0f}]</span>' if low is not None and high is not None else ""
    return f"<td{cls}>{entry['accuracy']:.0f}{interval}</td>"


def interval_table(panel: dict, models: list[str]) -> str:
    head = [f'<tr><th class="name">{esc(panel["title"])}</th>' +
            "".join(f"<th>{esc(c)}</th>" for c in panel["columns"]) + "</tr>"]
    body = [f'<tr><td class="name">{names.html(model)}</td>' + "".join(_interval_cell(e) for e in entries) + "</tr>"
            for model, entries in zip(models, panel["entries"])]
    return table(head, body)


def _flag_block(rset, kind: str, flag: str, figs, page_dir: str, open_: bool) -> str:
    models, panels = figures.strata_panels(rset, kind, flag)
    if not panels:
        return ""
    fig = next((f for f in figs if f.place == ("strat", rset.slug, kind, flag)), None)
    content = figure(fig.title, fig.files, page_dir) if fig else ""
    content += "".join(interval_table(p, models) for p in panels)
    return details(esc(names.flag(flag)), content, open_=open_)


def strat_section(data, rset, figs, page_dir: str) -> str:
    heading = f'<h2 id="{anchor("strat", rset.slug)}">Stratified accuracy, {esc(rset.label)}</h2>'
    if not rset.stratification:
        return heading + ('<p class="note">No <code>model_stratification_*.json</code> in the results folder '
                          "(run <code>stratify.py RESULTS --eval_type em|llm</code>).</p>")
    unit = "base problems" if rset.permuted else "problems"
    parts = [heading, f'<p class="note">From stratify.py: accuracy (%) per problem flag, one panel per mode '
             f"(a flag that only varies with ICL examples is shown for ICL only). Strata with fewer than "
             f"{stratify.MIN_PROBLEMS} {unit} are greyed in the maps and in italics in the tables: too few to "
             f"read. Under each map: every stratum's accuracy with its 95% interval (Wilson for independent "
             f"problems, cluster bootstrap by base problem for SMMILE++); n = {unit} in the stratum.</p>"]
    for kind in rset.stratification:
        parts.append(f"<h3>{esc(names.metric(kind.upper()))}</h3>")
        flags = strat_flags(rset.stratification[kind])
        parts += [_flag_block(rset, kind, flag, figs, page_dir, i == 0) for i, flag in enumerate(flags)]
    return "".join(parts)
