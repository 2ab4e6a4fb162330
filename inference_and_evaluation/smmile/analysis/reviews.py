"""Reviewers' verdicts on answers (``reviews.json``, exported by the report's problem explorer).

Format ``smmile-reviews/1``: ``{"format": "smmile-reviews/1", "reviews": [{"problem_id", "model" (the report's
model key), "mode" (0-shot | ICL), "format" (open | mcqa), "judges" (judge labels; [] without a judge),
"verdict_shown" (the judge's 0/1, shown or not, or null), "review" (correct | incorrect | unsure | gold-wrong;
older files: agree | disagree with the verdict), "note", "reviewer", "time" (ISO 8601)}]}``, optionally
``result_sha256`` (the sha256 of the result CSV reviewed), ``seconds`` and ``blind`` (the review queue). A gold
flag is the problem's: model, mode and format "". A review's label: correct 1, incorrect 0, ``agree`` → the
verdict shown, ``disagree`` → its opposite, else none; a reviewer's later review of a cell replaces the earlier
one (a change of mind is reported). A cell's reviewed verdict is the strict majority of its labels (a tie gives
none, and is counted). Reviews of a problem, model or result the folders do not have are refused (``screen``)."""

from __future__ import annotations

import itertools
import json
import logging
import math

import numpy as np
import pandas as pd

from ..errors import UserError
from ..scoring import kappa
from ..scoring.estimates import clusters_for
from ..record.run_record import FORMATS, MODES
from .agreement import CELL, binary_scores, item_clusters, scopes

FORMAT = "smmile-reviews/1"
REVIEWS = ("correct", "incorrect", "unsure", "gold-wrong", "agree", "disagree")
FIELDS = ("problem_id", "model", "mode", "format", "judges", "verdict_shown", "review", "note", "reviewer", "time")
OPTIONAL = {"result_sha256": "", "seconds": None, "blind": False, "adjudicated": False, "strata": None}
MAX_BYTES = 64 * 1024 * 1024  # a reviews file of 100,000 reviews is about 40 MB
log = logging.getLogger(__name__)


def _check(entry, path: str, i: int) -> dict:
    where = f"{path}: reviews[{i}]"
    if not isinstance(entry, dict):
        raise UserError(f"{where} is not an object")
    missing = [k for k in FIELDS if k not in entry]
    if missing:
        raise UserError(f"{where}: missing {', '.join(missing)}")
    gold = entry["review"] == "gold-wrong" and entry["model"] == entry["mode"] == entry["format"] == ""
    checks = (("mode", gold or entry["mode"] in MODES, "0-shot or ICL"),
              ("format", gold or entry["format"] in FORMATS, "open or mcqa"),
              ("review", entry["review"] in REVIEWS, " | ".join(REVIEWS)),
              ("verdict_shown", entry["verdict_shown"] in (0, 1, None) and not isinstance(entry["verdict_shown"], bool),
               "0, 1 or null"),
              ("judges", isinstance(entry["judges"], list) and all(isinstance(j, str) for j in entry["judges"]),
               "a list of judge labels"))
    for key, ok, want in checks:
        if not ok:
            raise UserError(f"{where}: {key} {entry[key]!r} is not {want}")
    for key in ("problem_id", "model", "reviewer", "time", "note"):
        if not isinstance(entry[key], str) or (key not in ("note", "model") and not entry[key]) \
                or (key == "model" and not (gold or entry[key])):
            raise UserError(f"{where}: {key} must be a {'string' if key == 'note' else 'non-empty string'}")
    extra = {k: entry.get(k, v) for k, v in OPTIONAL.items()}
    strata = extra["strata"] or {}
    if not isinstance(extra["result_sha256"], str) or not isinstance(extra["blind"], bool) or not (
            extra["seconds"] is None or (isinstance(extra["seconds"], (int, float)) and not isinstance(extra["seconds"], bool))) \
            or not isinstance(extra["adjudicated"], bool) or not isinstance(strata, dict) \
            or not all(isinstance(v, str) for v in strata.values()):
        raise UserError(f"{where}: result_sha256 must be a string, seconds a number, blind and adjudicated true or "
                        "false, strata an object of texts")
    extra["strata"] = strata
    return {**{k: entry[k] for k in FIELDS}, **extra}


def _load(path) -> object:
    """The file's JSON, its size and nesting bounded (a UserError, never a MemoryError or RecursionError)."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_BYTES + 1)
    except OSError as exc:
        raise UserError(f"cannot read reviews {path}: {exc.strerror or exc}") from None
    if len(raw) > MAX_BYTES:
        raise UserError(f"cannot read reviews {path}: larger than {MAX_BYTES // 2**20} MB (not a reviews file?)")
    try:
        return json.loads(raw.decode("utf-8"))
    except RecursionError:
        raise UserError(f"cannot read reviews {path}: nested too deeply (a reviews file is 4 levels deep)") from None
    except ValueError as exc:
        raise UserError(f"cannot read reviews {path}: {exc}") from None


def read_reviews(paths) -> pd.DataFrame:
    """Every review of the files, checked (a bad file is one UserError naming it), the latest per reviewer and
    cell, with its ``label`` (0/1 or NaN); the cells a reviewer reviewed differently are a warning."""
    rows = []
    for path in paths:
        data = _load(path)
        if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("reviews"), list):
            raise UserError(f"{path}: not a reviews file (a JSON object with \"format\": \"{FORMAT}\" and a "
                            "\"reviews\" list, as the report's problem explorer exports)")
        rows += [{**_check(e, path, i), "source": str(path)} for i, e in enumerate(data["reviews"])]
    frame = pd.DataFrame(rows, columns=list(FIELDS) + list(OPTIONAL) + ["source"]).sort_values("time", kind="stable")
    changed = frame.groupby(CELL + ["reviewer", "adjudicated"], sort=False)["review"].agg(lambda v: list(dict.fromkeys(v)))
    changed = changed[changed.map(len) > 1]
    if len(changed):
        (model, mode, fmt, pid, who, _), values = next(iter(changed.items()))
        log.warning(f"warning: {len(changed)} answer(s) reviewed differently by the same reviewer, the latest review "
                    f"kept (first: {who} on {model or 'the gold answer'} {mode} {fmt} {pid}: {', then '.join(values)})")
    frame = frame.drop_duplicates(CELL + ["reviewer", "adjudicated"], keep="last")
    frame["label"] = [label_of(v, r) for v, r in zip(frame["verdict_shown"], frame["review"])]
    return frame.reset_index(drop=True)


def screen(reviews: pd.DataFrame, records: list, strict: bool = False) -> pd.DataFrame:
    """The reviews of answers the ``records`` hold: a review of a model, mode and format no result has, of a
    problem its result does not have, or of a result CSV that changed since (``result_sha256``) is refused, with
    a count per reason (a UserError under ``strict``); a gold flag needs its problem in some result."""
    from ..record.result_csv import ResultFileError, csv_sha256

    problems, shas, every = {}, {}, set()
    for r in records:
        key = (r.model, r.mode, "mcqa" if r.metric == "MCQA" else "open")
        problems.setdefault(key, set()).update(str(p) for p in r.scores.index)
        every.update(str(p) for p in r.scores.index)
        if r.result is not None and key not in shas:
            try:
                shas[key] = csv_sha256(r.result.csv)
            except (OSError, ResultFileError):
                shas[key] = ""
    reasons = {"of a model, mode and format no result has": [], "of a problem its result does not have": [],
               "of a result file that has changed since (result_sha256)": []}
    keep = []
    for i, e in enumerate(reviews.itertuples(index=False)):
        key, why = (e.model, e.mode, e.format), None
        if e.model == "":
            why = None if e.problem_id in every else "of a problem its result does not have"
        elif key not in problems:
            why = "of a model, mode and format no result has"
        elif e.problem_id not in problems[key]:
            why = "of a problem its result does not have"
        elif e.result_sha256 and shas.get(key) and e.result_sha256 != shas[key]:
            why = "of a result file that has changed since (result_sha256)"
        if why:
            reasons[why].append(f"{e.reviewer} on {e.model or 'the gold answer'} {e.mode} {e.format} {e.problem_id}")
        else:
            keep.append(i)
    refused = sum(map(len, reasons.values()))
    if refused:
        message = (f"{refused} of {len(reviews)} review(s) refused: " + "; ".join(
            f"{len(v)} {why} (first: {v[0]})" for why, v in reasons.items() if v))
        if strict:
            raise UserError(message + " (--strict)")
        log.warning("warning: " + message)
    return reviews.iloc[keep].reset_index(drop=True)


def label_of(shown, review: str) -> float:
    if review in ("correct", "incorrect"):
        return float(review == "correct")
    if shown is None or (isinstance(shown, float) and math.isnan(shown)) or review not in ("agree", "disagree"):
        return math.nan
    return float(shown) if review == "agree" else float(1 - shown)


def review_table(reviews: pd.DataFrame, records: list) -> pd.DataFrame:
    """One row per reviewed cell: verdict shown, the reviewers' label (``reviewed``: an adjudication's, else their
    majority; NaN: none or a tie), number of labels, whether a judge judged it, ``em`` (exact match, or the
    letter match for mcqa) and the problem's strata (``stratum:<flag>``) as the page exported them."""
    out = []
    for key, g in reviews[reviews["model"] != ""].groupby(CELL, sort=False):
        labels = g.loc[~g["adjudicated"], "label"].dropna().tolist()
        final = g.loc[g["adjudicated"], "label"].dropna()
        shown = g["verdict_shown"].dropna()
        reviewed = float(final.iloc[-1]) if len(final) else kappa.majority(labels) if labels else math.nan
        out.append({**dict(zip(CELL, key)), "verdict_shown": float(shown.iloc[-1]) if len(shown) else math.nan,
                    "judged": bool(g["judges"].map(len).gt(0).any()), "n_labels": len(labels),
                    "reviewed": reviewed, "tie": bool(labels) and math.isnan(reviewed), "adjudicated": bool(len(final)),
                    **{f"stratum:{k}": v for k, v in (g["strata"].iloc[-1] or {}).items()}})
    columns = CELL + ["verdict_shown", "judged", "n_labels", "reviewed", "tie", "adjudicated"]
    table = pd.DataFrame(out, columns=list(dict.fromkeys(columns + [c for row in out for c in row])))
    auto = {(r.model, r.mode, "mcqa" if r.metric == "MCQA" else "open", str(pid)): float(v)
            for r in records if r.metric in ("EM", "MCQA") and r.result is not None
            for pid, v in binary_scores(r.scores, f"{r.source} ({r.metric})").items()}
    table["em"] = [auto.get(tuple(k), math.nan) for k in table[CELL].itertuples(index=False)]
    return table


def agreement_rows(table: pd.DataFrame, reviews: pd.DataFrame, n_boot: int, seed: int, level: float,
                   cluster: str = "auto") -> list[dict]:
    """Judge and EM vs reviewers per (mode, format) and over all, every pair of reviewers with shared cells."""
    rows = []
    for scope, g in scopes(table):
        for kind, rater, column, subset in (("judge vs reviewers", "judge", "verdict_shown", g[g["judged"]]),
                                            ("exact match vs reviewers", "exact match", "em", g)):
            ok = subset[subset["reviewed"].notna() & subset[column].notna()]
            if len(ok):
                rows.append({"comparison": kind, **scope, "rater_a": rater, "rater_b": "reviewers",
                             "ties_excluded": int(subset["tie"].sum()),
                             **kappa.pair_agreement(ok[column], ok["reviewed"], item_clusters(ok["problem_id"], cluster),
                                                    n_boot, seed, level)})
    final = table[table["adjudicated"] & table["judged"] & table["verdict_shown"].notna() & table["reviewed"].notna()]
    if len(final):
        rows.append({"comparison": "judge vs adjudicated", "mode": "*", "format": "*", "rater_a": "judge",
                     "rater_b": "adjudicated", **kappa.pair_agreement(final["verdict_shown"], final["reviewed"], item_clusters(
                         final["problem_id"], cluster), n_boot, seed, level)})
    labelled = reviews[reviews["label"].notna() & ~reviews["adjudicated"]]
    wide = labelled.pivot_table(index=CELL, columns="reviewer", values="label", aggfunc="first")
    strata = table.set_index(CELL)[[c for c in table.columns if c.startswith("stratum:")]]
    groups = [("all", "", wide.index)] + [("model", m, wide.index[wide.index.get_level_values("model") == m])
                                          for m in wide.index.get_level_values("model").unique()]
    for column in strata.columns:
        values = strata[column].reindex(wide.index)
        groups += [(column.removeprefix("stratum:"), v, wide.index[values == v]) for v in values.dropna().unique()]
    for by, value, index in groups:
        for a, b in itertools.combinations(wide.columns, 2):
            both = wide.loc[index, [a, b]].dropna()
            if len(both) and (by == "all" or len(both) < len(wide[[a, b]].dropna())):
                ids = both.index.get_level_values("problem_id")
                rows.append({"comparison": "reviewer pair", "mode": "*", "format": "*", "by": by, "stratum": value,
                             "rater_a": a, "rater_b": b,
                             **kappa.pair_agreement(both[a], both[b], item_clusters(ids, cluster), n_boot, seed, level)})
    return rows


def disputed(reviews: pd.DataFrame, table: pd.DataFrame) -> pd.DataFrame:
    """Cells a reviewer disputes (disagree, gold-wrong) or on which the reviewers' labels differ."""
    rows, cells = [], table.set_index(CELL)
    for key, g in reviews.groupby(CELL, sort=False):
        label = g["label"].dropna()
        if label.nunique() > 1 or {"disagree", "gold-wrong"} & set(g["review"]) or (
                key in cells.index and label.size and not math.isnan(cells.loc[key, "verdict_shown"])
                and set(label) != {cells.loc[key, "verdict_shown"]}):
            cell = cells.loc[key] if key in cells.index else pd.Series(math.nan, ["verdict_shown", "reviewed", "em"])
            rows.append({**dict(zip(CELL, key)), **cell[["verdict_shown", "reviewed", "em"]],
                         "reviews": "; ".join(f"{r}: {v}" for r, v in zip(g["reviewer"], g["review"])),
                         "notes": "; ".join(f"{r}: {n}" for r, n in zip(g["reviewer"], g["note"]) if n)})
    return pd.DataFrame(rows, columns=CELL + ["verdict_shown", "reviewed", "em", "reviews", "notes"])


def rescored(record, table: pd.DataFrame, level: float = 0.95) -> tuple[float, int, int, float, float] | None:
    """A judge record's accuracy (%) with each reviewed problem's verdict replaced by the reviewers' label:
    (accuracy, problems re-scored, verdicts changed, interval low, high: ``statistics.proportion_interval``,
    clustered by base problem); None when none of its problems was reviewed."""
    from ..scoring import statistics

    mine = table[(table["model"] == record.model) & (table["mode"] == record.mode) & (table["format"] == "open")
                 & table["judged"] & table["reviewed"].notna()]
    scores = record.scores.copy()
    scores.index = scores.index.astype(str)
    labels = mine.set_index("problem_id")["reviewed"]
    labels = labels[labels.index.isin(scores.index)]
    if labels.empty:
        return None
    changed = int((scores[labels.index] != labels).sum())
    scores[labels.index] = labels
    ids = [str(i) for i in scores.index]
    ci = statistics.proportion_interval(scores.to_numpy(dtype=float), clusters_for(ids, "auto"), level=level)
    return float(np.mean(scores) * 100), len(labels), changed, ci.low * 100, ci.high * 100


# -- assignments: who reviews which answers (``smmile review assign``) ------------------------------------------
ASSIGNMENT = "smmile-assignment/1"


def answers(records: list) -> list[dict]:
    """Every answer of the results (one per result CSV and problem): model, mode, format, problem_id and the
    CSV's sha256."""
    from ..record.result_csv import ResultFileError, csv_sha256

    out = []
    for r in (r for r in records if r.metric in ("EM", "MCQA") and r.result is not None):
        try:
            sha = csv_sha256(r.result.csv)
        except (OSError, ResultFileError):
            sha = ""
        out += [{"problem_id": str(p), "model": r.model, "mode": r.mode, "format": "mcqa" if r.metric == "MCQA"
                 else "open", "result_sha256": sha} for p in r.scores.index]
    return out


def assign(items: list[dict], reviewers: list[str], size: int, double: float, seed: int) -> dict[str, list[dict]]:
    """Each reviewer's ``size`` answers: drawn with ``seed``, stratified over model × mode (round robin over the
    shuffled strata), a ``double`` share of each list also in another reviewer's (``double``: true), the
    double-coded answers spread over the pairs of reviewers; fewer when the results have fewer answers."""
    rng = np.random.default_rng(seed)
    strata: dict = {}
    for item in items:
        strata.setdefault((item["model"], item["mode"]), []).append(item)
    lists = [[g[i] for i in rng.permutation(len(g))] for _, g in sorted(strata.items())]
    lists = [lists[i] for i in rng.permutation(len(lists))]
    pool = [g[i] for i in range(max(map(len, lists), default=0)) for g in lists if i < len(g)]
    out: dict[str, list[dict]] = {r: [] for r in reviewers}
    shared = round(double * size * len(reviewers) / 2) if len(reviewers) > 1 else 0
    for item in pool:
        open_ = sorted((r for r in reviewers if len(out[r]) < size), key=lambda r: len(out[r]))
        if not open_:
            break
        two = shared > 0 and len(open_) >= 2
        for r in open_[:2 if two else 1]:
            out[r].append({**item, "double": two})
        shared -= two
    return out
