(async function () {
  "use strict";
  const node = document.getElementById("explorer-data");
  if (!node) return;
  const D = JSON.parse(node.textContent);
  if (D.packed !== undefined) {  // the problems and texts, gzip-compressed (explorer_page.packed)
    const bytes = Uint8Array.from(atob(D.packed), (c) => c.charCodeAt(0));
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    Object.assign(D, JSON.parse(await new Response(stream).text()));
    delete D.packed;
  }
  const S = D.strings, AT = D.correct_at, PAGE = 20, MODES = ["0-shot", "ICL"];
  const METRIC_NAMES = D.metrics;  // name -> display, from smmile.scoring.metrics
  const FORMATS = {open: "open", mcqa: "MCQA"};
  const $ = (id) => document.getElementById(id);
  const str = (i) => (i === undefined || i === null || i < 0) ? "" : S[i];
  const esc = (t) => String(t).replace(/[&<>"']/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c]));
  const byKey = {};
  D.results.forEach((r, i) => r.metrics.forEach((m) => { byKey[[r.set, r.model, r.mode, m].join("|")] = i; }));
  const metrics = Object.keys(METRIC_NAMES).filter((m) => D.results.some((r) => r.metrics.includes(m)));
  const modelKeys = D.models.map((m) => m.key);
  const flagValues = D.flags.map((f, i) => [...new Set(D.problems.map((p) => p.fv ? str(p.fv[i]) : "").filter((v) => v))].sort());
  const totals = {}, position = new Map();
  D.problems.forEach((p, i) => { const k = p.set + "|" + p.base; totals[k] = (totals[k] || 0) + 1; position.set(p, i); });
  const EMPTY = {set: "", mode: "", metric: metrics[0] || "", model: "", outcome: "", special: "", a: "", b: "", q: "", sort: "", id: "", page: 1};
  let state = Object.assign({flags: {}}, EMPTY);
  let cards = {}, shownNow = [];

  // -- reviews, kept in this browser (localStorage) until exported as reviews.json, under the hash of the report's
  // result set and the reviewer: a report with other results, or another reviewer, sees none of them --------------
  const storeOf = (who) => "smmile-reviews/2|" + D.review_key + "|" + who;
  const session = (v) => { try { if (v === undefined) return localStorage.getItem("smmile-reviewer") || ""; localStorage.setItem("smmile-reviewer", v); } catch (e) { return ""; } };
  let R = {reviewer: "", items: {}};
  function load(who) {
    R = {reviewer: who, items: {}};
    try { R.items = JSON.parse(localStorage.getItem(storeOf(who)) || "{}").items || {}; } catch (e) { /* private mode */ }
  }
  const save = () => { try { localStorage.setItem(storeOf(R.reviewer), JSON.stringify({items: R.items})); } catch (e) { /* kept for this visit */ } };
  const reviewCount = () => Object.keys(R.items).length;
  load(session());
  function setReviewer(name) {  // reviews made before a name was given go to the name
    name = name.trim();
    if (name === R.reviewer) return;
    const carried = R.reviewer ? null : R.items;
    if (carried) try { localStorage.removeItem(storeOf("")); } catch (e) { /* none kept */ }
    load(name);
    session(name);
    if (carried) { Object.values(carried).forEach((x) => { x.reviewer = name || "anonymous"; }); Object.assign(R.items, carried); save(); }
    $("ex-reviewer").classList.remove("ask");
    render();
    if (Q) queueItem(false);
  }
  function reviewer() {
    if (!R.reviewer) $("ex-reviewer").classList.add("ask");
    return R.reviewer || "anonymous";
  }
  function findProblem(id, set) { return D.problems.find((p) => p.id === id && String(p.set) === String(set)); }
  const RES = D.results.map((x) => [D.models[x.model].key, x.mode, x.fmt, x.sha].join("|"));

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

  function tally(p, st) {  // answers right and scored, over every model and the chosen mode(s)
    let right = 0, n = 0;
    allModels().forEach((m) => modesOf(st).forEach((mode) => { const v = score(p, m, mode, st.metric); if (v !== null) { n += 1; if (ok(v)) right += 1; } }));
    return {right: right, n: n};
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
    if (st.special === "reviewed") return Object.values(R.items).some((x) => x.problem_id === p.id && String(x.set) === String(p.set));
    if (st.special === "split" || st.special === "judge-em") {
      const models = st.model !== "" ? [modelKeys.indexOf(st.model)] : allModels();
      return models.some((m) => modesOf(st).some((mode) => {
        const r = byKey[[p.set, m, mode, "LLM"].join("|")], a = r === undefined ? null : p.ans[r];
        if (!a || a[2] === null || a[2] === undefined) return false;
        return st.special === "split" ? jury(a).split : (a[1] !== null && a[1] !== undefined && ok(a[1]) !== ok(a[2]));
      }));
    }
    return true;
  }

  function matches(p, st) {
    if (st.id && p.id !== st.id && p.base !== st.id) return false;
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
    return uri ? '<img class="thumb" data-img="' + i + '" src="' + uri + '" alt="' + esc(alt) + '">' : '<span class="noimg">no image</span>';
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

  function reviewKey(p, r) { return "v|" + RES[r] + "|" + p.id; }
  const goldKey = (p) => "g|" + D.sets[p.set].slug + "|" + p.id;
  const REVIEWS = [["correct", "✓", "correct"], ["incorrect", "✗", "wrong"], ["unsure", "?", "unsure"]];

  function reviewButtons(p, r) {
    const mine = R.items[reviewKey(p, r)], at = ' data-pi="' + position.get(p) + '" data-r="' + r + '"';
    return '<span class="rv" title="your review of this answer">' + REVIEWS.map(([value, sign, label]) =>
      '<button type="button" data-review="' + value + '"' + at + (mine && mine.review === value ? ' class="on"' : "") + ">" + sign + " " + label + "</button>").join("") +
      (mine ? '<input type="text" class="rvnote" data-note' + at + ' placeholder="note" value="' + esc(mine.note) + '">' : "") + "</span>";
  }

  function jury(a) {  // a jury's votes: [ones, zeros, tie]
    const v = (a[4] || []).map((m) => m[0]), ones = v.filter((x) => x === 1).length, zeros = v.filter((x) => x === 0).length;
    return {ones: ones, zeros: zeros, split: ones > 0 && zeros > 0, tie: ones > 0 && ones === zeros};
  }

  const judgeName = (j) => j && j.includes(":") ? j.slice(j.indexOf(":") + 1).split("@")[0] + " (" + j.slice(0, j.indexOf(":")) + ")" : j;  // model (backend)

  function votes(p, r) {
    const a = p.ans[r], j = jury(a), names = D.results[r].judges || [];
    if (!a[4]) return "";
    const badge = j.tie ? '<span class="badge tie" title="the jury tied: no majority, counted wrong">tie ' + j.ones + "–" + j.zeros + "</span>"
      : (j.split ? '<span class="badge split" title="the judges disagree">split ' + j.ones + "–" + j.zeros + "</span>" : "");
    return badge + '<details class="votes"><summary>votes</summary><ul>' + a[4].map((m, i) => "<li><bdi>" + esc(judgeName(names[i]) || "judge " + (i + 1)) +
      "</bdi>: " + mark(m[0]) + (str(m[1]) ? " <bdi>" + esc(str(m[1])) + "</bdi>" : "") + "</li>").join("") + "</ul></details>";
  }

  function openCell(p, r, mode) {
    const a = p.ans[r];
    if (!a) return '<td class="missing" colspan="3">–</td>';
    const reply = str(a[3]);
    const judge = mark(a[2]) + votes(p, r) + (reply && !a[4] ? "<details><summary>judge's reply</summary><bdi>" + esc(reply) + "</bdi></details>" : "");
    return '<td data-h="' + mode + ' open answer"><bdi>' + long(str(a[0]), 220) + "</bdi>" + reviewButtons(p, r) + '</td><td data-h="' + mode + ' exact match">' + mark(a[1]) +
      '</td><td data-h="' + mode + ' judge">' + judge + "</td>";
  }

  function mcqaCell(p, r, mode) {
    const a = p.ans[r];
    if (!a) return '<td class="missing">–</td>';
    const letter = str(a[0]);
    let option = str(a[1]);
    const plain = letter.length === 1;
    if (!option && plain && p.opts) option = str(p.opts[letter.charCodeAt(0) - 65]);
    const shown = plain ? esc(letter) : '<span class="code">' + esc(letter || "no letter found in the reply") + "</span>";
    return '<td data-h="' + mode + ' MCQA"><bdi>' + shown + (option ? (plain ? ". " : ": ") + esc(option) : "") + "</bdi> " + mark(a[2]) + reviewButtons(p, r) + "</td>";
  }

  function answersTable(p, st) {
    const answered = new Set(Object.keys(p.ans).map((r) => D.results[r].mode));
    const modes = modesOf(st).filter((mode) => answered.has(mode));
    const rows = [];
    D.models.forEach((m, mi) => {
      const cells = modes.map((mode) => {
        const open = byKey[[p.set, mi, mode, "EM"].join("|")], mcqa = byKey[[p.set, mi, mode, "MCQA"].join("|")];
        return {mode: mode, open: open !== undefined && p.ans[open] ? open : undefined, mcqa: mcqa !== undefined && p.ans[mcqa] ? mcqa : undefined};
      });
      if (!cells.some((c) => c.open !== undefined || c.mcqa !== undefined)) return;
      const picked = [st.model, st.special === "disagree" ? st.a : "", st.special === "disagree" ? st.b : ""].includes(m.key);
      const tds = cells.map((c) => (c.open !== undefined ? openCell(p, c.open, c.mode) : '<td class="missing" colspan="3">–</td>') +
                                   (c.mcqa !== undefined ? mcqaCell(p, c.mcqa, c.mode) : '<td class="missing">–</td>')).join("");
      rows.push("<tr" + (picked ? ' class="picked"' : "") + '><td class="name">' + esc(m.name) + "</td>" + tds + "</tr>");
    });
    if (!rows.length) return '<p class="note">No model answered this problem.</p>';
    const head1 = '<tr><th class="name" rowspan="2">Model</th>' + modes.map((m) => '<th colspan="4">' + esc(m) + "</th>").join("") + "</tr>";
    const head2 = "<tr>" + modes.map(() => "<th>open answer</th><th>exact match</th><th>judge</th><th>MCQA</th>").join("") + "</tr>";
    return '<div class="awrap"><table class="answers"><thead>' + head1 + head2 + "</thead><tbody>" + rows.join("") + "</tbody></table></div>";
  }

  function resultName(r) {
    const x = D.results[r];
    return D.models[x.model].name + " · " + x.mode + " · " + FORMATS[x.fmt] + (D.sets.length > 1 ? " · " + D.sets[x.set].label : "");
  }

  function optionsBlock(p) {
    const shown = Object.entries(p.pr || {}).find(([, pr]) => pr.o);
    if (shown) {
      const [r, pr] = shown;
      return '<div class="meta">MCQA options as displayed to ' + esc(resultName(+r)) + ' (each prompt below has its own order):</div><ol class="opts">' +
        pr.o.map((o) => "<li" + (o[1] === p.gold ? ' class="right"' : "") + ">" + esc(str(o[0])) + ". " + esc(str(o[1])) + "</li>").join("") + "</ol>";
    }
    if (!p.opts || !p.opts.length) return "";
    return '<div class="meta">MCQA options, in letter order (no run journal records the order a model saw them in):</div><ol class="opts">' +
      p.opts.map((o, i) => "<li" + (o === p.gold ? ' class="right"' : "") + ">" + String.fromCharCode(65 + i) + ". " + esc(str(o)) + "</li>").join("") + "</ol>";
  }

  function promptBlocks(p) {
    return Object.keys(p.pr || {}).map((r) => '<details class="prompt" data-pr="' + r + '"><summary>Prompt as sent to ' +
      esc(resultName(+r)) + '</summary><div class="pbox"></div></details>').join("");
  }

  function promptBody(p, r) {
    const pr = p.pr[r];
    const note = pr.n !== undefined ? '<p class="note">' + esc(str(pr.n)) + "</p>" : "";
    if (!pr.m) return note + '<p class="note">The query turn as sent (the dataset is needed for the whole conversation):</p><div class="msg">' + esc(str(pr.t)) + "</div>";
    return note + pr.m.map((m) => '<div class="msg"><span class="role">' + esc(str(m[0])) + "</span>\n" +
      m[1].map((part) => Array.isArray(part) ? thumb(part[0], "image in the prompt") : esc(str(part))).join("") + "</div>").join("");
  }

  function goldReview(p) {
    const key = goldKey(p), mine = R.items[key];
    return '<div class="goldrev"><label><input type="checkbox" data-gold="' + esc(key) + '"' + (mine ? " checked" : "") +
      "> gold answer looks wrong</label>" + '<input type="text" data-gold-note="' + esc(key) + '" placeholder="note (why)" value="' +
      esc(mine ? mine.note : "") + '" data-pi="' + position.get(p) + '"></div>';
  }

  function problemBody(p, st) {
    const gold = str(p.gold);
    const letter = p.opts ? p.opts.indexOf(p.gold) : -1;
    const goldText = (p.gold === undefined || p.gold < 0 ? "(not given)" : esc(gold)) + (letter >= 0 ? ' <span class="chip">MCQA ' + String.fromCharCode(65 + letter) + "</span>" : "");
    const examples = (p.ex || []).map((e, i) => '<div class="ex">' + thumb(e[0], "example " + (i + 1)) +
      "<div>" + (i + 1) + ". " + esc(str(e[1])) + '</div><div class="exa">→ ' + esc(str(e[2])) + "</div></div>").join("");
    const image = p.csv ? "" : thumb(p.img, "query image");
    const query = '<div class="query">' + image + '<div><div class="qtext"><bdi>' +
      esc(str(p.q) || "(question not given)") + '</bdi></div><div class="gold">Gold: <bdi>' + goldText + "</bdi></div>" + goldReview(p) + "</div></div>";
    const exBlock = p.csv ? '<p class="note">' + (D.sets[p.set].dataset ? "Not in the dataset given with --dataset: question and gold answer from the result files; examples and images unknown."
      : "From the result files: examples and images are in the dataset (--dataset).") + "</p>"
      : (p.ex.length ? '<div class="meta">ICL examples, in order:</div><div class="examples">' + examples + "</div>" : '<p class="note">No ICL examples.</p>');
    return '<div class="phead">' + flagsChips(p) + "</div>" + query + optionsBlock(p) + exBlock + answersTable(p, st) + promptBlocks(p);
  }

  function flagsChips(p) {
    if (!p.fv) return "";
    return D.flags.map((f, i) => str(p.fv[i]) ? '<span class="chip" title="' + esc(f.label) + '">' + esc(f.label) + ": " + esc(str(p.fv[i])) + "</span>" : "").join("");
  }

  function order(p) { const m = /_perm_(\d+)$/.exec(p.id); return m ? +m[1] : 0; }

  function link(p) { return "#problems?id=" + encodeURIComponent(p.base) + (D.sets.length > 1 ? "&set=" + encodeURIComponent(D.sets[p.set].slug) : ""); }

  function card(ps, key, st) {
    const p0 = ps[0];
    const total = totals[key];
    cards[key] = ps;
    const perms = total > 1 ? '<div class="orders">' + ps.length + " of " + total + " orders of the examples match: " +
      ps.map((p, i) => '<button data-card="' + esc(key) + '" data-i="' + i + '"' + (i === 0 ? ' class="on"' : "") + ">order " + order(p) + "</button>").join("") + "</div>" : "";
    const setLabel = D.sets.length > 1 ? '<span class="chip">' + esc(D.sets[p0.set].label) + "</span>" : "";
    const t = tally(p0, st);
    const right = t.n ? '<span class="chip" title="answers scored correct, ' + esc(METRIC_NAMES[st.metric] || "") + '">' + t.right + " of " + t.n + " right</span>" : "";
    return '<div class="pcard" data-problem="' + esc(p0.id) + '" data-set="' + p0.set + '"><div class="phead"><span class="pid" title="problem id">' +
      esc(p0.base) + '</span><a class="plink" href="' + esc(link(p0)) + '" title="link to this problem">link</a> ' + setLabel + right + "</div>" + perms +
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

  function sortKeys(keys, groups, st) {
    if (!st.sort) return keys;
    const value = new Map(keys.map((k) => {
      const t = tally(groups.get(k)[0], st);
      const v = st.sort === "disagree" ? -Math.min(t.right, t.n - t.right) : (t.n ? t.right : Infinity) * (st.sort === "right-desc" && t.n ? -1 : 1);
      return [k, v];
    }));
    return keys.slice().sort((a, b) => (value.get(a) - value.get(b)) || (position.get(groups.get(a)[0]) - position.get(groups.get(b)[0])));
  }

  function render() {
    const st = state;
    cards = {};
    const shown = D.problems.filter((p) => matches(p, st));
    shownNow = shown;
    const groups = new Map();
    shown.forEach((p) => { const k = p.set + "|" + p.base; if (!groups.has(k)) groups.set(k, []); groups.get(k).push(p); });
    const keys = sortKeys([...groups.keys()], groups, st);
    const pages = Math.max(1, Math.ceil(keys.length / PAGE));
    st.page = Math.min(Math.max(1, st.page), pages);
    const grouped = keys.length !== shown.length ? " (" + keys.length + " base problems)" : "";
    $("ex-status").innerHTML = "<b>" + shown.length + "</b> of " + D.problems.length + " problems shown" + grouped + summary(shown, st);
    $("ex-page").textContent = "page " + st.page + " of " + pages;
    $("ex-list").innerHTML = keys.slice((st.page - 1) * PAGE, st.page * PAGE).map((k) => card(groups.get(k), k, st)).join("");
    $("ex-count").textContent = reviewCount();
  }

  function options(values, labels, any) {
    return '<option value="">' + esc(any) + "</option>" + values.map((v, i) => '<option value="' + esc(v) + '">' + esc(labels[i]) + "</option>").join("");
  }

  function buildControls() {
    const box = $("ex-filters");
    const parts = [];
    if (D.sets.length > 1) parts.push(['set', 'results', options(D.sets.map((s) => s.slug), D.sets.map((s) => s.label), "all")]);
    parts.push(["mode", "mode", options(MODES, MODES, "both")]);
    parts.push(["metric", "metric", metrics.map((m) => '<option value="' + m + '">' + esc(METRIC_NAMES[m]) + "</option>").join("")]);
    parts.push(["model", "model", options(modelKeys, D.models.map((m) => m.name), "any")]);
    parts.push(["outcome", "its answer", options(["correct", "wrong"], ["correct", "wrong"], "any")]);
    parts.push(["special", "show", options(["allwrong", "helped", "hurt", "disagree", "reviewed", "split", "judge-em"],
      ["all models wrong", "ICL helped (wrong 0-shot, right ICL)", "ICL hurt (right 0-shot, wrong ICL)", "two models disagree", "reviewed by you",
       "jury split", "judge ≠ exact match"], "all problems")]);
    parts.push(["a", "model A", options(modelKeys, D.models.map((m) => m.name), "–")]);
    parts.push(["b", "model B", options(modelKeys, D.models.map((m) => m.name), "–")]);
    parts.push(["sort", "order", options(["right-asc", "right-desc", "disagree"],
      ["fewest models right first", "most models right first", "most disagreement first"], "dataset order")]);
    D.flags.forEach((f, i) => { if (flagValues[i].length) parts.push(["flag:" + f.name, f.label, options(flagValues[i], flagValues[i], "any")]); });
    box.innerHTML = parts.map(([name, label, opts]) => "<label>" + esc(label) + '<select data-f="' + esc(name) + '">' + opts + "</select></label>").join("") +
      '<label>search<input data-f="q" type="search" placeholder="question, answer, id"></label><button id="ex-clear" type="button">clear filters</button>';
    box.addEventListener("change", onControl);
    box.addEventListener("input", (e) => { if (e.target.dataset.f === "q") onControl(e); });
    $("ex-clear").addEventListener("click", () => { state = Object.assign({flags: {}}, EMPTY); syncControls(); update(); });
    if (window.matchMedia && window.matchMedia("(max-width: 700px)").matches) $("ex-fbox").open = false;
    $("ex-reviewer").value = R.reviewer;
    $("ex-reviewer").addEventListener("change", (e) => setReviewer(e.target.value));
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
    const q = new URLSearchParams(h.indexOf("?") < 0 ? "" : h.slice(h.indexOf("?") + 1));
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

  // -- downloads -------------------------------------------------------------------------------------------
  function download(name, type, text) {
    const a = document.createElement("a");
    a.href = URL.createObjectURL(new Blob([text], {type: type}));
    a.download = name;
    document.body.appendChild(a);
    a.click();
    setTimeout(() => { URL.revokeObjectURL(a.href); a.remove(); }, 1000);
  }

  function exportReviews() {
    const keys = Object.keys(R.items).sort();
    const reviews = keys.map((k) => { const x = Object.assign({}, R.items[k], {reviewer: R.reviewer || "anonymous"}); delete x.set; return x; });
    download("reviews-" + (R.reviewer || "anonymous").replace(/[^\w-]+/g, "_") + ".json", "application/json", JSON.stringify({format: "smmile-reviews/1", reviews: reviews}, null, 1) + "\n");
  }

  function csvCell(v) {
    let t = v === null || v === undefined ? "" : String(v);
    if (/^[=+\-@\t\r]/.test(t)) t = "'" + t;  // never a formula in a spreadsheet
    return /[",\n\r]/.test(t) ? '"' + t.replace(/"/g, '""') + '"' : t;
  }

  function exportCsv() {
    const head = ["set", "problem_id", "question", "gold_answer", "model", "model_key", "mode", "format", "answer", "exact_match", "judge", "judges", "mcqa_correct"];
    const lines = [head.join(",")];
    shownNow.forEach((p) => Object.keys(p.ans).forEach((r) => {
      const x = D.results[r], a = p.ans[r];
      if ((state.mode && x.mode !== state.mode) || (state.model !== "" && D.models[x.model].key !== state.model)) return;
      const mcqa = x.fmt === "mcqa";
      const answer = mcqa ? [str(a[0]), str(a[1])].filter((t) => t).join(". ") : str(a[0]);
      lines.push([D.sets[p.set].label, p.id, str(p.q), str(p.gold), D.models[x.model].name, D.models[x.model].key, x.mode, FORMATS[x.fmt], answer,
        mcqa ? "" : a[1], mcqa ? "" : a[2], (x.judges || []).join("; "), mcqa ? a[2] : ""].map(csvCell).join(","));
    }));
    download("problems.csv", "text/csv", lines.join("\r\n") + "\r\n");
  }

  function setReview(p, r, value, extra) {  // a second click on the same value takes it back (extra: none)
    const key = reviewKey(p, r), x = D.results[r], a = p.ans[r], old = R.items[key];
    if (!extra && old && old.review === value) delete R.items[key];
    else {
      const judged = x.fmt === "open" && x.judges && a[2] !== null && a[2] !== undefined;
      R.items[key] = Object.assign({problem_id: p.id, model: D.models[x.model].key, mode: x.mode, format: x.fmt, result_sha256: x.sha,
        judges: judged ? x.judges.slice() : [], verdict_shown: judged ? (ok(a[2]) ? 1 : 0) : null, review: value, note: old ? old.note : "",
        reviewer: reviewer(), time: new Date().toISOString(), set: p.set, strata: strataOf(p)}, old && old.seconds ? {seconds: old.seconds, blind: old.blind} : {}, extra || {});
    }
    save();
    $("ex-count").textContent = reviewCount();
  }

  const strataOf = (p) => Object.fromEntries(p.fv ? D.flags.map((f, i) => [f.name, str(p.fv[i])]).filter(([, v]) => v) : []);

  function markVerdict(button) {
    const p = D.problems[+button.dataset.pi], r = +button.dataset.r;
    setReview(p, r, button.dataset.review);
    button.parentElement.outerHTML = reviewButtons(p, r);
  }

  function markGold(p, checked, note) {  // attached to the problem, not to a model's answer
    const key = goldKey(p);
    if (!checked) delete R.items[key];
    else R.items[key] = {problem_id: p.id, model: "", mode: "", format: "", result_sha256: "", judges: [], verdict_shown: null,
      review: "gold-wrong", note: note, reviewer: reviewer(), time: new Date().toISOString(), set: p.set};
    save();
    $("ex-count").textContent = reviewCount();
  }

  // -- the blind review queue: a seeded sample stratified over model × mode × speciality, one answer at a time,
  // its model and verdicts hidden until the reviewer decides (keys 1 0 u n g j k) -------------------------------------
  const SPEC = D.flags.findIndex((f) => f.name === "speciality");
  let Q = null;
  function rng(seed) { let s = (seed * 2654435761 + 12345) >>> 0; return () => { s = (Math.imul(s, 1664525) + 1013904223) >>> 0; return s / 4294967296; }; }

  function sample(size, seed, fmt) {
    const strata = new Map(), rand = rng(seed);
    D.problems.forEach((p) => Object.keys(p.ans).forEach((r) => {
      const x = D.results[r];
      if ((fmt && x.fmt !== fmt) || (state.set !== "" && D.sets[p.set].slug !== state.set)) return;
      const k = [x.model, x.mode, SPEC >= 0 && p.fv ? str(p.fv[SPEC]) : ""].join("|");
      if (!strata.has(k)) strata.set(k, []);
      strata.get(k).push([p, +r]);
    }));
    const shuffle = (a) => { for (let i = a.length - 1; i > 0; i--) { const j = Math.floor(rand() * (i + 1)); [a[i], a[j]] = [a[j], a[i]]; } return a; };
    const lists = shuffle([...strata.keys()].sort()).map((k) => shuffle(strata.get(k))), out = [];
    for (let i = 0; out.length < size && lists.some((l) => i < l.length); i++) lists.forEach((l) => { if (i < l.length && out.length < size) out.push(l[i]); });
    return out;
  }

  function startQueue(items) {
    const size = Math.max(1, +$("rq-size").value || 30), seed = +$("rq-seed").value || 0;
    Q = {items: items || sample(size, seed, $("rq-fmt").value), at: 0};
    const first = Q.items.findIndex(([p, r]) => !R.items[reviewKey(p, r)]);
    Q.at = first < 0 ? 0 : first;
    $("rq").hidden = false;
    if (document.activeElement && document.activeElement.blur) document.activeElement.blur();  // keys to the queue
    queueItem(true);
    $("rq").scrollIntoView();
  }

  function answerIndex() {  // "model|mode|format|problem id" -> [problem, result]
    const at = {};
    D.problems.forEach((p) => Object.keys(p.ans).forEach((r) => { at[RES[r].split("|").slice(0, 3).concat(p.id).join("|")] = [p, +r]; }));
    return at;
  }

  async function adjudicate(files) {  // the answers reviewers reviewed differently, their reviews side by side
    const by = {}, at = answerIndex();
    for (const f of files) {
      try { (JSON.parse(await f.text()).reviews || []).forEach((x) => { if (x.model && !x.adjudicated) (by[[x.model, x.mode, x.format, x.problem_id].join("|")] ||= []).push(x); }); } catch (e) { /* not a reviews file */ }
    }
    const keys = Object.keys(by).filter((k) => at[k] && new Set(by[k].map((x) => x.review)).size > 1);
    $("rq-said").textContent = keys.length + " disputed answer(s) from " + files.length + " file(s); your decisions are saved as adjudications";
    startQueue(keys.map((k) => at[k]));
    Q.others = Object.fromEntries(keys.map((k) => [reviewKey(...at[k]), by[k]]));
    queueItem(true);
  }

  async function loadAssignment(file) {  // smmile review assign: this reviewer's answers, in its order
    let A = null;
    try { A = JSON.parse(await file.text()); } catch (e) { /* said below */ }
    if (!A || A.format !== "smmile-assignment/1" || !Array.isArray(A.items)) { $("rq-said").textContent = file.name + " is not an assignment file (smmile review assign)"; return; }
    const at = answerIndex();
    const found = A.items.map((i) => at[[i.model, i.mode, i.format, i.problem_id].join("|")]).filter((x) => x);
    const changed = A.items.filter((i) => { const x = at[[i.model, i.mode, i.format, i.problem_id].join("|")]; return x && i.result_sha256 && D.results[x[1]].sha !== i.result_sha256; }).length;
    $("ex-reviewer").value = A.reviewer || "";
    setReviewer(A.reviewer || "");
    $("rq-said").textContent = "assignment of " + (A.reviewer || "?") + ": " + found.length + " of " + A.items.length + " answers in this report" + (changed ? ", " + changed + " from a result file that has changed since" : "");
    startQueue(found);
  }

  function answerText(p, r) {
    const a = p.ans[r];
    if (D.results[r].fmt === "open") return esc(str(a[0]) || "(no answer)");
    const pr = (p.pr || {})[r], opts = pr && pr.o ? pr.o.map((o) => esc(str(o[0])) + ". " + esc(str(o[1])))
      : (p.opts || []).map((o, i) => String.fromCharCode(65 + i) + ". " + esc(str(o)));
    return esc(str(a[0])) + (str(a[1]) ? ". " + esc(str(a[1])) : "") + (opts.length ? '<ol class="opts">' + opts.map((o) => "<li>" + o + "</li>").join("") + "</ol>" : "");
  }

  function queueItem(fresh) {
    if (!Q.items.length) { $("rq-item").innerHTML = '<p class="note">No answer to review under these settings.</p>'; return; }
    const [p, r] = Q.items[Q.at], x = D.results[r], a = p.ans[r], mine = R.items[reviewKey(p, r)], gold = R.items[goldKey(p)];
    const full = p.img >= 0 && D.full ? D.full[p.img] : "", thumbUri = p.img >= 0 ? D.images[p.img] : "";
    const image = thumbUri ? '<img class="qimg" data-img="' + p.img + '" src="' + esc(full || thumbUri) + '" alt="query image">' : "";
    const seen = mine || Q.others ? '<div class="reveal">' + esc(resultName(r)) + " · " + (x.fmt === "mcqa" ? "letter " + mark(a[2])
      : "exact match " + mark(a[1]) + " · judge " + (x.judges ? mark(a[2]) + votes(p, r) : "none")) + "</div>" : '<div class="reveal note">model and verdicts hidden until you decide</div>';
    const times = Q.items.map(([q, s]) => (R.items[reviewKey(q, s)] || {}).seconds).filter((t) => t !== undefined).sort((u, v) => u - v);
    const done = Q.items.filter(([q, s]) => R.items[reviewKey(q, s)]).length;
    $("rq-progress").textContent = (Q.at + 1) + " of " + Q.items.length + " · " + done + " reviewed" + (times.length ? " · median " + times[times.length >> 1].toFixed(1) + " s per answer" : "");
    const others = Q.others ? '<table class="answers"><tr><th>reviewer</th><th>review</th><th>note</th></tr>' + (Q.others[reviewKey(p, r)] || []).map((o) =>
      "<tr><td><bdi>" + esc(o.reviewer) + "</bdi></td><td>" + esc(o.review) + "</td><td><bdi>" + esc(o.note) + "</bdi></td></tr>").join("") + "</table>" : "";
    $("rq-item").innerHTML = '<div class="query">' + image + '<div><div class="qtext"><bdi>' + esc(str(p.q) || "(question not given)") + '</bdi></div><div class="gold">Gold: <bdi>' +
      esc(str(p.gold) || "(not given)") + "</bdi>" + (gold ? ' <span class="badge tie">flagged wrong</span>' : "") + '</div><div class="qans"><b>Answer:</b> <bdi>' + answerText(p, r) +
      "</bdi></div>" + others + (mine ? '<div class="mine">your review: <b>' + esc(mine.review) + "</b></div>" : "") + seen + "</div></div>";
    $("rq-note").value = mine ? mine.note : "";
    $("rq-gnote").value = gold ? gold.note : "";
    const img = $("rq-item").querySelector("img");
    if (img && full) img.onerror = () => { img.onerror = null; img.src = thumbUri; };
    if (fresh) Q.shown = performance.now();
  }

  function decide(value) {
    const [p, r] = Q.items[Q.at];
    setReview(p, r, value, Object.assign({seconds: Math.round((performance.now() - Q.shown) / 100) / 10, blind: !Q.others}, Q.others ? {adjudicated: true} : {}));
    queueItem(false);
  }

  function move(step) { Q.at = Math.min(Math.max(0, Q.at + step), Q.items.length - 1); queueItem(true); }

  function queueNote(t) {
    if (!Q || !Q.items.length) return;
    const [p, r] = Q.items[Q.at];
    if (t.id === "rq-gnote") markGold(p, true, t.value);
    else { if (!R.items[reviewKey(p, r)]) decide("unsure"); R.items[reviewKey(p, r)].note = t.value; save(); }
    queueItem(false);
  }

  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape") { $("zoom").style.display = "none"; if (e.target.blur) e.target.blur(); return; }
    if (e.key === "Enter" && /^rq-g?note$/.test(e.target.id)) { e.target.blur(); return; }
    if (!Q || $("rq").hidden || e.ctrlKey || e.metaKey || e.altKey || /^(INPUT|TEXTAREA|SELECT)$/.test(e.target.tagName)) return;
    const value = {"1": "correct", "0": "incorrect", "u": "unsure"}[e.key];
    if (value) decide(value);
    else if (e.key === "j" || e.key === "k") move(e.key === "j" ? 1 : -1);
    else if (e.key === "g") { markGold(Q.items[Q.at][0], true, $("rq-gnote").value); queueItem(false); $("rq-gnote").focus(); }
    else if (e.key === "n") $("rq-note").focus();
    else return;
    e.preventDefault();
  });

  function zoom(img) {
    const i = img.dataset.img === undefined ? -1 : +img.dataset.img;
    const full = i >= 0 && D.full ? D.full[i] : "";
    const z = $("zoom"), big = z.querySelector("img");
    big.onerror = () => { big.onerror = null; big.src = img.src; z.querySelector(".zcap").textContent = "thumbnail (the full-resolution file is not beside the page)"; };
    big.onload = () => { if (big.src !== img.src) z.querySelector(".zcap").innerHTML = big.naturalWidth + " × " + big.naturalHeight + ' px · <a href="' + esc(full) + '" target="_blank" rel="noopener">open the file</a>'; };
    z.querySelector(".zcap").textContent = full ? "" : "thumbnail (the image is no larger)";
    big.src = full || img.src;
    z.style.display = "flex";
  }

  document.addEventListener("click", (e) => {
    const t = e.target;
    if (!t.matches) return;
    if (t.matches(".orders button")) {
      const ps = cards[t.dataset.card], card = t.closest(".pcard");
      card.querySelectorAll(".orders button").forEach((b) => b.classList.toggle("on", b === t));
      card.querySelector(".pbody").innerHTML = problemBody(ps[+t.dataset.i], state);
    } else if (t.matches("button[data-review]")) {
      markVerdict(t);
    } else if (t.id === "rq-start") {
      startQueue();
    } else if (t.dataset && t.dataset.rq) {
      if (Q) { if (t.dataset.rq === "j" || t.dataset.rq === "k") move(t.dataset.rq === "j" ? 1 : -1); else decide(t.dataset.rq); }
    } else if (t.matches("[data-review-export]")) {
      exportReviews();
    } else if (t.matches("[data-csv-export]")) {
      exportCsv();
    } else if (t.matches("img.thumb, img.qimg")) {
      zoom(t);
    } else if (t.id === "zoom" || (t.parentElement && t.parentElement.id === "zoom" && t.tagName === "IMG")) {
      $("zoom").style.display = "none";
    } else if (t.dataset && t.dataset.step) {
      state.page += +t.dataset.step;
      update();
      $("problems").scrollIntoView();
    }
  });
  document.addEventListener("change", (e) => {
    const t = e.target;
    if (t.id === "rq-note" || t.id === "rq-gnote") queueNote(t);
    else if (t.matches && t.matches("input[data-note]")) {
      const x = R.items[reviewKey(D.problems[+t.dataset.pi], +t.dataset.r)];
      if (x) { x.note = t.value; save(); }
    }
    else if (t.id === "rq-assign" && t.files.length) loadAssignment(t.files[0]);
    else if (t.id === "rq-adjudicate" && t.files.length) adjudicate([...t.files]);
    else if (t.matches && t.matches("input[data-gold]")) {
      const note = t.closest(".goldrev").querySelector("input[data-gold-note]");
      markGold(D.problems[+note.dataset.pi], t.checked, note.value);
    } else if (t.matches && t.matches("input[data-gold-note]")) {
      const box = t.closest(".goldrev").querySelector("input[data-gold]");
      if (t.value.trim() && !box.checked) box.checked = true;
      markGold(D.problems[+t.dataset.pi], box.checked, t.value);
    }
  });
  document.addEventListener("toggle", (e) => {
    const t = e.target;
    if (t.matches && t.matches("details.prompt") && t.open && !t.dataset.done) {
      const card = t.closest(".pcard"), pid = card.dataset.problem;
      const on = card.querySelector(".orders button.on");
      const p = on ? cards[on.dataset.card][+on.dataset.i] : findProblem(pid, card.dataset.set);
      t.querySelector(".pbox").innerHTML = promptBody(p, t.dataset.pr);
      t.dataset.done = "1";
    }
  }, true);
  window.addEventListener("hashchange", onHash);
  buildControls();
  if (fromHash()) { syncControls(); render(); setTimeout(() => $("problems").scrollIntoView(), 0); } else { syncControls(); render(); }
  node.dataset.ready = "1";
})();
