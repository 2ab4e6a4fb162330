"""The problem explorer's section of the page; its style and script are assets/explorer.css and explorer.js
(plain JavaScript, works from disk). The data (report.explorer) is JSON in a non-executed script element, its
texts gzip-packed; filters and a single problem live in the URL (``#problems?model=qwen72B&metric=LLM``), so a
main-table cell links to its problems. Reviews are kept in localStorage and downloaded as ``reviews.json``."""

from __future__ import annotations

import base64
import gzip
import json
from typing import Iterator

from smmile.report.html import esc


def data_json(payload: dict) -> str:
    """The payload as JSON safe inside a ``<script>`` element."""
    text = json.dumps(payload, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return text.replace("</", "<\\/").replace("<!--", "<\\!--")


def images_json(uris) -> Iterator[str]:
    yield "["
    for i, uri in enumerate(uris):
        yield ("," if i else "") + data_json(uri)
    yield "]"


PACKED = ("problems", "strings")


def packed(payload: dict) -> str:
    """The payload's problems and texts as base64 of their gzip-compressed JSON, without a time stamp (the page
    unpacks them with DecompressionStream): a third of the bytes."""
    raw = json.dumps({k: payload[k] for k in PACKED}, separators=(",", ":"), ensure_ascii=False,
                     allow_nan=False).encode("utf-8")
    return base64.b64encode(gzip.compress(raw, compresslevel=9, mtime=0)).decode("ascii")


def unpacked(data: dict) -> dict:
    """The page's JSON with ``packed`` read back (for tools and tests)."""
    if "packed" not in data:
        return data
    inner = json.loads(gzip.decompress(base64.b64decode(data["packed"])).decode("utf-8"))
    return {**{k: v for k, v in data.items() if k != "packed"}, **inner}


def without_dataset(payload: dict) -> str:
    """The note at the top of the explorer when a folder's problems come from its result files alone."""
    plain = [s for s in payload["sets"] if not s["dataset"]]
    if not plain:
        return ""
    why = "; ".join(f"{s['label']}: " + (f"dataset {s['source']}" if s.get("source") else "no --dataset given")
                    for s in plain)
    return ('<p class="fromcsv"><b>Built from the result files alone</b> (' + esc(why) + "): problem ids, questions and "
            "gold answers as the result files give them, and every model's answers and verdicts; no images, ICL "
            "examples, flags or MCQA options. Add <code>--dataset</code> to see them.</p>")


QUEUE = ('<details class="rqbox"><summary>Blind review queue</summary><div class="filters">'
         '<label>answers<input id="rq-size" type="number" min="1" value="30"></label>'
         '<label>seed<input id="rq-seed" type="number" value="1"></label>'
         '<label>format<select id="rq-fmt"><option value="">open and MCQA</option><option value="open">open</option>'
         '<option value="mcqa">MCQA</option></select></label><button type="button" id="rq-start">start</button>'
         '<label>or an assignment (smmile review assign)<input id="rq-assign" type="file" accept=".json"></label>'
         '<label>or adjudicate: reviews.json files<input id="rq-adjudicate" type="file" accept=".json" multiple></label></div>'
         '<p class="note" id="rq-said"></p>'
         '<p class="note">A sample drawn with the seed, stratified over model × mode × speciality (the same size and seed '
         'give every reviewer the same answers). Keys: 1 correct, 0 wrong, u unsure, n note, g gold answer wrong (with '
         'a note, for the problem), j next, k previous.</p></details>'
         '<div id="rq" hidden><p class="status" id="rq-progress"></p><div id="rq-item"></div><div class="rqbar">'
         '<button type="button" data-rq="correct">1 correct</button><button type="button" data-rq="incorrect">0 wrong'
         '</button><button type="button" data-rq="unsure">u unsure</button><button type="button" data-rq="k">k previous'
         '</button><button type="button" data-rq="j">j next</button>'
         '<label>n note <input id="rq-note" type="text"></label><label>g gold wrong, why <input id="rq-gnote" '
         'type="text"></label></div></div>')


def section(payload: dict, images_slot: str) -> str:
    """The section with the payload's JSON, where ``images_slot`` stands for the thumbnails (``images_json``),
    which the page's writer puts there."""
    n = len(payload["problems"])
    head = {k: v for k, v in payload.items() if k not in (*PACKED, "images")}
    head = data_json({**head, "packed": packed(payload), "full": payload["images"].full_names(), "images": 0})
    assert list(payload)[-1] == "images" and head.endswith('"images":0}')
    data = head[:-len("0}")] + images_slot + "}"
    note = ("Every problem with the question, the gold answer and every model's answers per mode — the open answer "
            "with exact match and the judge's verdict (its reply under 'judge's reply'), and the MCQA letter with its "
            "option — and, with --dataset, the query image, the ICL examples in order, the flags and the MCQA options; "
            "the prompt as sent for every run with a journal. ✓ correct, ✗ wrong, a percentage for a judge score "
            f"averaged over several rows (counted correct from {payload['correct_at']:.0%}). SMMILE++ permutations of "
            "one problem are grouped; pick an order to see its examples and answers. Filters combine; the address bar "
            "keeps them, and each problem's 'link' leads to it alone. Click an image for its full resolution. Review an "
            "answer as correct, wrong or unsure (your own judgement of the answer, not of the judge's verdict), or flag "
            "a gold answer as wrong; the blind queue shows one answer at a time, its model and verdicts hidden until you "
            "decide. Reviews stay in this browser, under your name and this report's results, until you download them "
            "(reviews-<your name>.json).")
    return (f'<section id="problems"><h2>Problems ({n})</h2>{without_dataset(payload)}<p class="note">{esc(note)}</p>'
            f"{QUEUE}"
            '<details class="fbox" id="ex-fbox" open><summary>Filters and order</summary>'
            '<div class="filters" id="ex-filters"></div></details><p class="status" id="ex-status"></p>'
            '<div class="tools"><button type="button" data-csv-export>download these problems (CSV)</button>'
            '<label>reviewer <input id="ex-reviewer" type="text" placeholder="your name"></label>'
            '<button type="button" data-review-export>download reviews (<span id="ex-count">0</span>)</button></div>'
            '<div id="ex-list"></div><div class="pager"><button type="button" data-step="-1">previous</button>'
            '<span id="ex-page"></span> <button type="button" data-step="1">next</button></div>'
            '<div id="zoom"><img alt="enlarged image"><div class="zcap"></div></div>'
            f'<script type="application/json" id="explorer-data">{data}</script></section>')
