"""HTML building blocks (standard library only): escaping, number formats, tables, embedded figures, the page
shell. Figures are embedded as data URIs at their natural size (1 pt of the figure = 1 pt on the page), so the
page opens from disk and figure text keeps the size it was drawn at."""

from __future__ import annotations

import base64
import math
import os
import re
import string
import struct
from functools import cache
from html import escape
from importlib import resources
from urllib.parse import quote

from smmile.report import names

MIME = {"png": "image/png", "svg": "image/svg+xml"}
PX_PER_PT = 96 / 72
PNG_DPI = 300
DASH = '<td class="missing">–</td>'


@cache
def asset(name: str) -> str:
    """A web asset of the page (assets/: its template, style and the explorer's script), read once."""
    return resources.files("smmile.report").joinpath("assets", name).read_text(encoding="utf-8")


def esc(value) -> str:
    return escape("" if value is None else str(value))


def is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def missing(value) -> bool:
    return value is None or value == "" or (isinstance(value, float) and math.isnan(value))


def fmt_number(value, digits: int = 2) -> str:
    if missing(value):
        return "–"
    return f"{value:.{digits}f}" if is_number(value) else esc(value)


def fmt_ci(low, high, signed: bool = False, digits: int = 2) -> str:
    if missing(low) or missing(high):
        return ""
    f = f"+.{digits}f" if signed else f".{digits}f"
    return f'<span class="ci">[{low:{f}}, {high:{f}}]</span>'


def fmt_p(value) -> str:
    if missing(value):
        return "–"
    return "&lt; 0.001" if value < 0.001 else f"{value:.3f}"


def anchor(prefix: str, name: str) -> str:
    return prefix + "-" + re.sub(r"[^A-Za-z0-9_.-]", "_", str(name))


def table(head: list[str], rows: list[str], cls: str = "") -> str:
    """``head``: header rows (already ``<tr>…</tr>``); ``rows``: body rows (already ``<tr>…</tr>``)."""
    attr = f' class="{cls}"' if cls else ""
    return f'<div class="wide"><table{attr}><thead>{"".join(head)}</thead><tbody>{"".join(rows)}</tbody></table></div>'


# -- typed cells (analysis tables) -------------------------------------------------------------------
def pick(row: dict, keys) -> object:
    """The first of ``keys`` that ``row`` has (fields renamed between versions)."""
    return next((row[k] for k in keys if k in row), None)


def _number(value):
    """CSV cells arrive as text: numbers are shown as numbers."""
    if isinstance(value, str):
        for kind in (int, float):
            try:
                return kind(value)
            except ValueError:
                pass
    return value


def typed_cell(column, row: dict) -> str:
    """``<td>`` for a report.analyses.Col on ``row``."""
    fmt = column.fmt
    if fmt == "ci":
        est, low, high = (_number(row.get(k)) for k in column.keys)
        return f'<td class="num">{fmt_number(est, 2)} {fmt_ci(low, high)}</td>' if not missing(est) else DASH
    if fmt == "pair":
        a, b = (row.get(k) for k in column.keys)
        return DASH if missing(a) and missing(b) else f'<td class="num">{esc(a)} / {esc(b)}</td>'
    value = _number(pick(row, column.keys))
    if missing(value):
        return DASH
    if fmt == "model":
        return f'<td class="name">{names.html(value)}</td>'
    if fmt == "rater":
        return f'<td class="text">{esc(names.rater(value))}</td>'
    if fmt == "metric":
        return f'<td class="name">{esc(names.metric(value))}</td>'
    if fmt == "flag":
        return f'<td class="text">{"yes" if value in (True, "True", "true", 1) else "no"}</td>'
    if fmt == "text" or not is_number(value):
        return f'<td class="text">{esc(value)}</td>'
    number = {"int": lambda v: f"{v:.0f}", "pct": lambda v: f"{v:.1f}", "signed": lambda v: f"{v:+.2f}", "p": fmt_p,
              "coef": lambda v: f"{v:.3f}"}.get(fmt, lambda v: str(v) if isinstance(v, int) else f"{v:.4g}")  # auto
    return f'<td class="num">{number(value)}</td>'


def typed_table(columns, rows: list[dict]) -> str:
    head = "<tr>" + "".join(f"<th>{esc(c.header)}</th>" for c in columns) + "</tr>"
    body = ["<tr>" + "".join(typed_cell(c, r) for c in columns) + "</tr>" for r in rows]
    return table([head], body)


# -- figures ------------------------------------------------------------------------------------------
def natural_width_px(path: str, fmt: str) -> int | None:
    """The CSS width at which the figure's text has the point size it was drawn with (from the file's header)."""
    with open(path, "rb") as handle:
        head = handle.read(2000)
    if fmt == "svg":
        found = re.search(rb'<svg[^>]*\swidth="([0-9.]+)pt"', head)
        return round(float(found.group(1)) * PX_PER_PT) if found else None
    return round(struct.unpack(">I", head[16:20])[0] * 96 / PNG_DPI) if head[:8] == b"\x89PNG\r\n\x1a\n" else None


def figure(title: str, files: dict, page_dir: str) -> str:
    """The figure embedded (SVG preferred) at its natural width, with links to every written file."""
    shown = next((fmt for fmt in ("svg", "png") if fmt in files), None)
    if shown is None:
        return ""
    width = natural_width_px(files[shown], shown)
    size = f' width="{width}"' if width else ""
    links = " ".join(f'<a href="{quote(os.path.relpath(path, page_dir).replace(os.sep, "/"))}">{fmt.upper()}</a>'
                     for fmt, path in sorted(files.items()))
    with open(files[shown], "rb") as handle:
        uri = f"data:{MIME[shown]};base64," + base64.b64encode(handle.read()).decode("ascii")
    full = quote(os.path.relpath(files[shown], page_dir).replace(os.sep, "/"))  # a tap opens it full size (phones)
    return (f'<figure><a href="{full}" title="open at full size"><img src="{uri}" alt="{esc(title)}"{size}></a>'
            f"<figcaption>{esc(title)}. Files: {links}</figcaption></figure>")


def details(summary: str, content: str, open_: bool = False) -> str:
    return f'<details{" open" if open_ else ""}><summary>{summary}</summary>{content}</details>'


def page(title: str, header: str, nav: list[tuple[str, str]], body: str, scripts: str = "", css: str = "") -> str:
    from smmile import __version__

    links = "".join(f'<a href="#{esc(target)}">{esc(label)}</a>' for target, label in nav)
    return string.Template(asset("page.html")).substitute(
        title=esc(title), css=(asset("report.css") + "\n" + css).strip(), header=header, nav=links, body=body,
        version=esc(__version__), scripts=scripts)
