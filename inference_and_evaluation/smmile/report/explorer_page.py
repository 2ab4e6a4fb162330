"""The problem explorer's section of the page: its markup, style and script (plain JavaScript, no
library, works from disk). The data (report.explorer) is embedded as JSON in a non-executed script
element and read once; filters live in the URL (``#problems?model=qwen72B&metric=LLM&mode=ICL``), so a
main-table cell links to the problems behind it and a filtered view can be bookmarked.
"""

from __future__ import annotations

import json
from typing import Iterator

from smmile.report.html import esc

CSS = r"""
#problems .filters { display: flex; flex-wrap: wrap; gap: 6px 14px; align-items: end; background: #f4f6fa;
  border: 1px solid #dde2ea; padding: 8px 10px; font-size: 0.86em; position: sticky; top: 0; z-index: 5; }
#problems .filters label { display: flex; flex-direction: column; gap: 2px; color: #333; }
#problems .filters select, #problems .filters input { font-size: 1em; padding: 2px 4px; max-width: 220px; }
#problems .status { margin: 8px 0; font-size: 0.92em; }
#problems .pager button, #problems .filters button { font-size: 0.95em; padding: 2px 10px; margin-right: 6px; }
.pcard { border: 1px solid #d5d9e0; border-radius: 4px; margin: 10px 0 14px; padding: 8px 10px; background: #fff; }
.phead { font-size: 0.9em; color: #333; margin-bottom: 6px; }
.phead .pid { font-family: monospace; color: #1f3763; }
.chip { display: inline-block; background: #eef1f7; border-radius: 3px; padding: 0 5px; margin: 1px 3px 1px 0;
  font-size: 0.92em; }
.orders { margin: 4px 0 6px; font-size: 0.86em; }
.orders button { font-size: 0.95em; margin: 0 4px 3px 0; padding: 1px 6px; border: 1px solid #aab; background: #fff; }
.orders button.on { background: #1f3763; color: #fff; }
.query { display: flex; gap: 12px; align-items: flex-start; }
.query .qtext { font-size: 1.02em; }
.gold { margin-top: 4px; color: #1b5e20; font-weight: 600; }
.examples { display: flex; flex-wrap: wrap; gap: 10px; margin: 8px 0; }
.ex { width: 170px; font-size: 0.84em; border-left: 3px solid #c5cbe0; padding-left: 6px; }
.ex .exa { color: #333; font-weight: 600; }
img.thumb { max-width: 160px; max-height: 160px; border: 1px solid #ccd; cursor: zoom-in; background: #fafafa; }
.query img.thumb { max-width: 220px; max-height: 220px; }
.noimg { display: inline-block; width: 90px; height: 60px; background: #eee; color: #888; font-size: 0.8em;
  text-align: center; line-height: 60px; }
table.answers { font-size: 0.84em; margin-top: 6px; }
table.answers td { text-align: left; vertical-align: top; max-width: 300px; overflow-wrap: anywhere; }
table.answers tr.picked td { background: #fff8d6 !important; }
.yes { color: #0b6b2f; font-weight: 700; }
.no { color: #b23b00; font-weight: 700; }
.part { color: #7a5a00; font-weight: 700; }
table.answers details summary { font-size: 0.9em; }
#zoom { position: fixed; inset: 0; background: rgba(0,0,0,0.75); display: none; align-items: center;
  justify-content: center; z-index: 20; cursor: zoom-out; }
#zoom img { max-width: 90vw; max-height: 90vh; min-width: 320px; image-rendering: auto; background: #fff; }
"""

SCRIPT = r"""
(function () {
  "use strict";
  const node = document.getElementById("explorer-data");
  if (!node) return;
  const D = JSON.parse(node.textContent);
  const S = D.strings, AT = D.correct_at, PAGE = 20, MODES = ["0-shot", "ICL"];
  const METRIC_NAMES = D.metrics;  // name -> display, from smmile.scoring.metrics
  const $ = (id) => document.getElementById(id);
  const str = (i) => (i === undefined || i === null || i < 0) ? "" : S[i];
  const esc = (t) => String(t).replace(/[&<>"']/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c]));
  const byKey = {};
  D.results.forEach((r, i) => r.metrics.forEach((m) => { byKey[[r.set, r.model, r.mode, m].join("|")] = i; }));
  const metrics = Object.keys(METRIC_NAMES).filter((m) => D.results.some((r) => r.metrics.includes(m)));
  const modelKeys = D.models.map((m) => m.key);
  const flagValues = D.flags.map((f, i) => [...new Set(D.problems.map((p) => p.fv ? str(p.fv[i]) : "").filter((v) => v))].sort());
  const totals = {};
  D.problems.forEach((p) => { const k = p.set + "|" + p.base; totals[k] = (totals[k] || 0) + 1; });
  const EMPTY = {set: "", mode: "", metric: metrics[0] || "", model: "", outcome: "", special: "", a: "", b: "", q: "", page: 1};
  let state = Object.assign({flags: {}}, EMPTY);
  let cards = {};

  function score(p, model, mode, metric) {
    const r = byKey[[p.set, model, mode, metric].join("|")];
    if (r === undefined || !p.ans[r]) return null;
    const a = p.ans[r];
    const v = D.results[r].fmt === "mcqa" ? a[2] : (metric === "EM" ? a[1] : a[2]);
    return v === undefined ? null : v;
  }
  const ok = (v) => v !== null && v >= AT;
  const modesOf = (st) => st.mode ? [st.mode] : MODES;
  const allModels = () => D.models.map((_, i) => i);

  function outcomes(p, model, st) {
    const found = {any: false, good: false, bad: false};
    for (const mode of modesOf(st)) {
      const v = score(p, model, mode, st.metric);
      if (v === null) continue;
      found.any = true;
      if (ok(v)) found.good = true; else found.bad = true;
    }
    return found;
  }

  function special(p, st) {
    const metric = st.metric;
    if (st.special === "allwrong") {
      let any = false;
      for (const m of allModels()) { const o = outcomes(p, m, st); if (o.good) return false; any = any || o.any; }
      return any;
    }
    if (st.special === "helped" || st.special === "hurt") {
      const models = st.model !== "" ? [modelKeys.indexOf(st.model)] : allModels();
      return models.some((m) => {
        const z = score(p, m, "0-shot", metric), i = score(p, m, "ICL", metric);
        if (z === null || i === null) return false;
        return st.special === "helped" ? (!ok(z) && ok(i)) : (ok(z) && !ok(i));
      });
    }
    if (st.special === "disagree" && st.a !== "" && st.b !== "") {
      const a = modelKeys.indexOf(st.a), b = modelKeys.indexOf(st.b);
      return modesOf(st).some((mode) => {
        const va = score(p, a, mode, metric), vb = score(p, b, mode, metric);
        return va !== null && vb !== null && ok(va) !== ok(vb);
      });
    }
    return true;
  }

  function matches(p, st) {
    if (st.set !== "" && D.sets[p.set].slug !== st.set) return false;
    for (const [name, value] of Object.entries(st.flags)) {
      const i = D.flags.findIndex((f) => f.name === name);
      if (i < 0 || !p.fv || str(p.fv[i]) !== value) return false;
    }
    if (st.q) {
      const text = [str(p.q), str(p.gold), p.id].concat((p.ex || []).map((e) => str(e[1]) + " " + str(e[2]))).join(" ").toLowerCase();
      if (!text.includes(st.q.toLowerCase())) return false;
    }
    if (st.model !== "") {
      const o = outcomes(p, modelKeys.indexOf(st.model), st);
      if (!o.any || (st.outcome === "correct" && !o.good) || (st.outcome === "wrong" && !o.bad)) return false;
    }
    return special(p, st);
  }

  function thumb(i, alt) {
    const uri = (i === undefined || i < 0) ? "" : D.images[i];
    return uri ? '<img class="thumb" src="' + uri + '" alt="' + esc(alt) + '">' : '<span class="noimg">no image</span>';
  }

  function mark(v) {
    if (v === null || v === undefined) return '<span class="missing">–</span>';
    if (v >= 1) return '<span class="yes" title="correct">✓</span>';
    if (v <= 0) return '<span class="no" title="wrong">✗</span>';
    return '<span class="part" title="share of rows judged correct">' + Math.round(v * 100) + "%</span>";
  }

  function long(text, limit) {
    if (text.length <= limit) return esc(text);
    return "<details><summary>" + esc(text.slice(0, limit)) + "…</summary>" + esc(text) + "</details>";
  }

  function openCell(p, r) {
    const a = p.ans[r];
    if (!a) return '<td class="missing" colspan="3">–</td>';
    const reply = str(a[3]);
    const judge = mark(a[2]) + (reply ? "<details><summary>reply</summary>" + esc(reply) + "</details>" : "");
    return "<td>" + long(str(a[0]), 220) + "</td><td>" + mark(a[1]) + "</td><td>" + judge + "</td>";
  }

  function mcqaCell(p, r) {
    const a = p.ans[r];
    if (!a) return '<td class="missing">–</td>';
    const letter = str(a[0]);
    let option = str(a[1]);
    if (!option && letter.length === 1 && p.opts) option = str(p.opts[letter.charCodeAt(0) - 65]);
    return "<td>" + esc(letter || "(no letter)") + (option ? ". " + esc(option) : "") + " " + mark(a[2]) + "</td>";
  }

  function answersTable(p, st) {
    const answered = new Set(Object.keys(p.ans).map((r) => D.results[r].mode));
    const modes = modesOf(st).filter((mode) => answered.has(mode));
    const rows = [];
    D.models.forEach((m, mi) => {
      const cells = modes.map((mode) => {
        const open = byKey[[p.set, mi, mode, "EM"].join("|")], mcqa = byKey[[p.set, mi, mode, "MCQA"].join("|")];
        return {open: open !== undefined && p.ans[open] ? open : undefined, mcqa: mcqa !== undefined && p.ans[mcqa] ? mcqa : undefined};
      });
      if (!cells.some((c) => c.open !== undefined || c.mcqa !== undefined)) return;
      const picked = [st.model, st.special === "disagree" ? st.a : "", st.special === "disagree" ? st.b : ""].includes(m.key);
      const tds = cells.map((c) => (c.open !== undefined ? openCell(p, c.open) : '<td class="missing" colspan="3">–</td>') +
                                   (c.mcqa !== undefined ? mcqaCell(p, c.mcqa) : '<td class="missing">–</td>')).join("");
      rows.push("<tr" + (picked ? ' class="picked"' : "") + '><td class="name">' + esc(m.name) + "</td>" + tds + "</tr>");
    });
    if (!rows.length) return '<p class="note">No model answered this problem.</p>';
    const head1 = '<tr><th class="name" rowspan="2">Model</th>' + modes.map((m) => '<th colspan="4">' + esc(m) + "</th>").join("") + "</tr>";
    const head2 = "<tr>" + modes.map(() => "<th>open answer</th><th>EM</th><th>judge</th><th>MCQA</th>").join("") + "</tr>";
    return '<table class="answers"><thead>' + head1 + head2 + "</thead><tbody>" + rows.join("") + "</tbody></table>";
  }

  function problemBody(p, st) {
    const gold = str(p.gold);
    const letter = p.opts ? p.opts.indexOf(p.gold) : -1;
    const goldText = (p.gold === undefined ? "" : esc(gold)) + (letter >= 0 ? ' <span class="chip">MCQA ' + String.fromCharCode(65 + letter) + "</span>" : "");
    const examples = (p.ex || []).map((e, i) => '<div class="ex">' + thumb(e[0], "example " + (i + 1)) +
      "<div>" + (i + 1) + ". " + esc(str(e[1])) + '</div><div class="exa">→ ' + esc(str(e[2])) + "</div></div>").join("");
    const query = '<div class="query">' + thumb(p.img, "query image") + '<div><div class="qtext">' +
      esc(str(p.q) || "(question not in the dataset)") + '</div><div class="gold">Gold: ' + goldText + "</div></div></div>";
    const exBlock = p.ex === undefined ? '<p class="note">Not in the dataset given with --dataset: examples and images unknown.</p>'
      : (p.ex.length ? '<div class="meta">ICL examples, in order:</div><div class="examples">' + examples + "</div>" : '<p class="note">No ICL examples.</p>');
    return '<div class="phead">' + flagsChips(p) + "</div>" + query + exBlock + answersTable(p, st);
  }

  function flagsChips(p) {
    if (!p.fv) return "";
    return D.flags.map((f, i) => str(p.fv[i]) ? '<span class="chip" title="' + esc(f.label) + '">' + esc(f.label) + ": " + esc(str(p.fv[i])) + "</span>" : "").join("");
  }

  function order(p) { const m = /_perm_(\d+)$/.exec(p.id); return m ? +m[1] : 0; }

  function card(ps, key, st) {
    const p0 = ps[0];
    const total = totals[key];
    cards[key] = ps;
    const perms = total > 1 ? '<div class="orders">' + ps.length + " of " + total + " orders of the examples match: " +
      ps.map((p, i) => '<button data-card="' + esc(key) + '" data-i="' + i + '"' + (i === 0 ? ' class="on"' : "") + ">order " + order(p) + "</button>").join("") + "</div>" : "";
    const setLabel = D.sets.length > 1 ? '<span class="chip">' + esc(D.sets[p0.set].label) + "</span>" : "";
    return '<div class="pcard" data-problem="' + esc(p0.id) + '"><div class="phead"><span class="pid" title="' + esc(p0.base) + '">' +
      esc(p0.base) + "</span> " + setLabel + "</div>" + perms +
      '<div class="pbody">' + problemBody(p0, st) + "</div></div>";
  }

  function summary(shown, st) {
    if (st.model === "") return "";
    const m = modelKeys.indexOf(st.model);
    let n = 0, sum = 0;
    shown.forEach((p) => modesOf(st).forEach((mode) => { const v = score(p, m, mode, st.metric); if (v !== null) { n += 1; sum += v; } }));
    const mean = n ? (100 * sum / n).toFixed(2) : "–";
    return " · " + esc(D.models[m].name) + ", " + esc(st.mode || "both modes") + ", " + esc(METRIC_NAMES[st.metric]) +
      ": " + n + " answers, mean score " + mean + "%";
  }

  function render() {
    const st = state;
    cards = {};
    const shown = D.problems.filter((p) => matches(p, st));
    const groups = new Map();
    shown.forEach((p) => { const k = p.set + "|" + p.base; if (!groups.has(k)) groups.set(k, []); groups.get(k).push(p); });
    const keys = [...groups.keys()];
    const pages = Math.max(1, Math.ceil(keys.length / PAGE));
    st.page = Math.min(Math.max(1, st.page), pages);
    const grouped = keys.length !== shown.length ? " (" + keys.length + " base problems)" : "";
    $("ex-status").innerHTML = "<b>" + shown.length + "</b> of " + D.problems.length + " problems shown" + grouped + summary(shown, st);
    $("ex-page").textContent = "page " + st.page + " of " + pages;
    $("ex-list").innerHTML = keys.slice((st.page - 1) * PAGE, st.page * PAGE).map((k) => card(groups.get(k), k, st)).join("");
  }

  function options(values, labels, any) {
    return '<option value="">' + esc(any) + "</option>" + values.map((v, i) => '<option value="' + esc(v) + '">' + esc(labels[i]) + "</option>").join("");
  }

  function buildControls() {
    const box = $("ex-filters");
    const parts = [];
    if (D.sets.length > 1) parts.push(['set', 'results', options(D.sets.map((s) => s.slug), D.sets.map((s) => s.label), "all")]);
    parts.push(["mode", "mode", options(MODES, MODES, "both")]);
    parts.push(["metric", "metric", metrics.map((m) => '<option value="' + m + '">' + METRIC_NAMES[m] + "</option>").join("")]);
    parts.push(["model", "model", options(modelKeys, D.models.map((m) => m.name), "any")]);
    parts.push(["outcome", "its answer", options(["correct", "wrong"], ["correct", "wrong"], "any")]);
    parts.push(["special", "show", options(["allwrong", "helped", "hurt", "disagree"],
      ["all models wrong", "ICL helped (wrong 0-shot, right ICL)", "ICL hurt (right 0-shot, wrong ICL)", "two models disagree"], "all problems")]);
    parts.push(["a", "model A", options(modelKeys, D.models.map((m) => m.name), "–")]);
    parts.push(["b", "model B", options(modelKeys, D.models.map((m) => m.name), "–")]);
    D.flags.forEach((f, i) => parts.push(["flag:" + f.name, f.label, options(flagValues[i], flagValues[i], "any")]));
    box.innerHTML = parts.map(([name, label, opts]) => "<label>" + esc(label) + '<select data-f="' + esc(name) + '">' + opts + "</select></label>").join("") +
      '<label>search<input data-f="q" type="search" placeholder="question, answer, id"></label><button id="ex-clear" type="button">clear filters</button>';
    box.addEventListener("change", onControl);
    box.addEventListener("input", (e) => { if (e.target.dataset.f === "q") onControl(e); });
    $("ex-clear").addEventListener("click", () => { state = Object.assign({flags: {}}, EMPTY); syncControls(); update(); });
  }

  function syncControls() {
    document.querySelectorAll("#ex-filters [data-f]").forEach((el) => {
      const f = el.dataset.f;
      el.value = f.startsWith("flag:") ? (state.flags[f.slice(5)] || "") : (state[f] === undefined ? "" : String(state[f]));
    });
  }

  function onControl(e) {
    const f = e.target.dataset.f;
    if (!f) return;
    if (f.startsWith("flag:")) { if (e.target.value) state.flags[f.slice(5)] = e.target.value; else delete state.flags[f.slice(5)]; }
    else state[f] = e.target.value;
    state.page = 1;
    update();
  }

  function toHash(st) {
    const q = new URLSearchParams();
    Object.keys(EMPTY).forEach((k) => { if (st[k] !== "" && !(k === "page" && st[k] === 1) && !(k === "metric" && st[k] === EMPTY.metric)) q.set(k, st[k]); });
    Object.entries(st.flags).forEach(([k, v]) => q.set("flag:" + k, v));
    return "#problems?" + q.toString();
  }

  function fromHash() {
    const h = location.hash;
    if (!h.startsWith("#problems")) return false;
    const q = new URLSearchParams(h.slice(h.indexOf("?") + 1));
    state = Object.assign({flags: {}}, EMPTY);
    q.forEach((v, k) => { if (k.startsWith("flag:")) state.flags[k.slice(5)] = v; else if (k in EMPTY) state[k] = k === "page" ? +v || 1 : v; });
    return true;
  }

  function update() {
    history.replaceState(null, "", toHash(state));
    render();
  }

  function onHash() {
    if (!fromHash()) return;
    syncControls();
    render();
    $("problems").scrollIntoView();
  }

  document.addEventListener("click", (e) => {
    const t = e.target;
    if (t.matches && t.matches(".orders button")) {
      const ps = cards[t.dataset.card], card = t.closest(".pcard");
      card.querySelectorAll(".orders button").forEach((b) => b.classList.toggle("on", b === t));
      card.querySelector(".pbody").innerHTML = problemBody(ps[+t.dataset.i], state);
    } else if (t.matches && t.matches("img.thumb")) {
      $("zoom").querySelector("img").src = t.src;
      $("zoom").style.display = "flex";
    } else if (t.id === "zoom" || (t.parentElement && t.parentElement.id === "zoom")) {
      $("zoom").style.display = "none";
    } else if (t.dataset && t.dataset.step) {
      state.page += +t.dataset.step;
      update();
      $("problems").scrollIntoView();
    }
  });
  window.addEventListener("hashchange", onHash);
  buildControls();
  if (fromHash()) { syncControls(); render(); setTimeout(() => $("problems").scrollIntoView(), 0); } else { syncControls(); render(); }
})();
"""


def data_json(payload: dict) -> str:
    """The payload as JSON safe inside a ``<script>`` element."""
    text = json.dumps(payload, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return text.replace("</", "<\\/").replace("<!--", "<\\!--")


def images_json(uris) -> Iterator[str]:
    """The JSON array of the thumbnails ``uris`` in pieces, as ``data_json`` writes it."""
    yield "["
    for i, uri in enumerate(uris):
        yield ("," if i else "") + data_json(uri)
    yield "]"


def section(payload: dict, images_slot: str) -> str:
    """The section with the payload's JSON, whose ``images`` array is left to the page's writer: the text
    ``images_slot`` stands where ``images_json`` of the thumbnails goes (``images`` is last in the payload)."""
    n = len(payload["problems"])
    head = data_json({**payload, "images": 0})
    assert list(payload)[-1] == "images" and head.endswith('"images":0}')
    data = head[:-len("0}")] + images_slot + "}"
    note = ("Every problem of the dataset: the query image and question, the ICL examples in order, the gold answer, "
            "the flags, and every model's answers per mode — the open answer with exact match (EM) and the judge's "
            "verdict (its raw reply under 'reply'), and the MCQA letter with its option. ✓ correct, ✗ wrong, a "
            f"percentage for a judge score averaged over several rows (counted correct from {payload['correct_at']:.0%}). "
            "SMMILE++ permutations of one problem are grouped; pick an order to see its examples and answers. Filters "
            "combine; the address bar keeps them (bookmarkable). Click an image to enlarge it.")
    return (f'<section id="problems"><h2>Problems ({n})</h2><p class="note">{esc(note)}</p>'
            '<div class="filters" id="ex-filters"></div><p class="status" id="ex-status"></p>'
            '<div id="ex-list"></div><div class="pager"><button type="button" data-step="-1">previous</button>'
            '<span id="ex-page"></span> <button type="button" data-step="1">next</button></div>'
            '<div id="zoom"><img alt="enlarged image"></div>'
            f'<script type="application/json" id="explorer-data">{data}</script></section>')


def script() -> str:
    return f"<script>{SCRIPT}</script>"
