"""Reviewers' verdicts on judged cells (``reviews.json``, exported by the report's problem explorer).

Format ``smmile-reviews/1``: ``{"format": "smmile-reviews/1", "reviews": [{"problem_id", "model" (the report's
model key), "mode" (0-shot | ICL), "format" (open | mcqa), "judges" (judge labels; [] for the gold flag),
"verdict_shown" (0/1 or null), "review" (agree | disagree | unsure | gold-wrong), "note", "reviewer",
"time" (ISO 8601)}]}``. A review's label: ``agree`` → the verdict shown, ``disagree`` → its opposite, else none;
a reviewer's later review of a cell replaces the earlier one. A cell's reviewed verdict is the strict majority of
its labels (a tie gives none, and is counted)."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pandas as pd

from ..errors import UserError
from ..scoring import kappa
from ..scoring.estimates import clusters_for
from ..record.run_record import FORMATS, MODES
from .agreement import CELL, binary_scores, scopes

FORMAT = "smmile-reviews/1"
REVIEWS = ("agree", "disagree", "unsure", "gold-wrong")
FIELDS = ("problem_id", "model", "mode", "format", "judges", "verdict_shown", "review", "note", "reviewer", "time")


def _check(entry, path: str, i: int) -> dict:
    where = f"{path}: reviews[{i}]"
    if not isinstance(entry, dict):
        raise UserError(f"{where} is not an object")
    missing = [k for k in FIELDS if k not in entry]
    if missing:
        raise UserError(f"{where}: missing {', '.join(missing)}")
    checks = (("mode", entry["mode"] in MODES, "0-shot or ICL"), ("format", entry["format"] in FORMATS, "open or mcqa"),
              ("review", entry["review"] in REVIEWS, " | ".join(REVIEWS)),
              ("verdict_shown", entry["verdict_shown"] in (0, 1, None) and not isinstance(entry["verdict_shown"], bool),
               "0, 1 or null"),
              ("judges", isinstance(entry["judges"], list) and all(isinstance(j, str) for j in entry["judges"]),
               "a list of judge labels"))
    for key, ok, want in checks:
        if not ok:
            raise UserError(f"{where}: {key} {entry[key]!r} is not {want}")
    for key in ("problem_id", "model", "reviewer", "time", "note"):
        if not isinstance(entry[key], str) or (key != "note" and not entry[key]):
            raise UserError(f"{where}: {key} must be a {'string' if key == 'note' else 'non-empty string'}")
    return {k: entry[k] for k in FIELDS}


def read_reviews(paths) -> pd.DataFrame:
    """Every review of the files, checked (a bad file is one UserError naming it), the latest per reviewer and
    cell, with its ``label`` (0/1 or NaN)."""
    rows = []
    for path in paths:
        try:
            with open(path, encoding="utf-8") as handle:
                data = json.load(handle)
        except (OSError, ValueError) as exc:
            raise UserError(f"cannot read reviews {path}: {getattr(exc, 'strerror', None) or exc}") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("reviews"), list):
            raise UserError(f"{path}: not a reviews file (a JSON object with \"format\": \"{FORMAT}\" and a "
                            "\"reviews\" list, as the report's problem explorer exports)")
        rows += [{**_check(e, path, i), "source": str(path)} for i, e in enumerate(data["reviews"])]
    frame = pd.DataFrame(rows, columns=list(FIELDS) + ["source"])
    frame = frame.sort_values("time", kind="stable").drop_duplicates(CELL + ["reviewer"], keep="last")
    frame["label"] = [label_of(v, r) for v, r in zip(frame["verdict_shown"], frame["review"])]
    return frame.reset_index(drop=True)


def label_of(shown, review: str) -> float:
    if shown is None or (isinstance(shown, float) and math.isnan(shown)) or review not in ("agree", "disagree"):
        return math.nan
    return float(shown) if review == "agree" else float(1 - shown)


def review_table(reviews: pd.DataFrame, records: list, warn=None) -> pd.DataFrame:
    """One row per reviewed cell: verdict shown, the reviewers' majority (``reviewed``; NaN: none or a tie), number
    of labels, whether a judge judged it, and ``em`` (exact match, or the letter match for mcqa)."""
    out = []
    for key, g in reviews.groupby(CELL, sort=False):
        labels = g["label"].dropna().tolist()
        shown = g["verdict_shown"].dropna()
        reviewed = kappa.majority(labels) if labels else math.nan
        out.append({**dict(zip(CELL, key)), "verdict_shown": float(shown.iloc[-1]) if len(shown) else math.nan,
                    "judged": bool(g["judges"].map(len).gt(0).any()), "n_labels": len(labels),
                    "reviewed": reviewed, "tie": bool(labels) and math.isnan(reviewed)})
    table = pd.DataFrame(out, columns=CELL + ["verdict_shown", "judged", "n_labels", "reviewed", "tie"])
    auto = {(r.model, r.mode, "mcqa" if r.metric == "MCQA" else "open", str(pid)): float(v)
            for r in records if r.metric in ("EM", "MCQA") and r.result is not None
            for pid, v in binary_scores(r.scores, f"{r.source} ({r.metric})", warn).items()}
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
                             **kappa.pair_agreement(ok[column], ok["reviewed"], clusters_for(ok["problem_id"], cluster),
                                                    n_boot, seed, level)})
    labelled = reviews[reviews["label"].notna()]
    wide = labelled.pivot_table(index=CELL, columns="reviewer", values="label", aggfunc="first")
    for a, b in itertools.combinations(wide.columns, 2):
        both = wide[[a, b]].dropna()
        if len(both):
            ids = both.index.get_level_values("problem_id")
            rows.append({"comparison": "reviewer pair", "mode": "*", "format": "*", "rater_a": a, "rater_b": b,
                         **kappa.pair_agreement(both[a], both[b], clusters_for(ids, cluster), n_boot, seed, level)})
    return rows


def disputed(reviews: pd.DataFrame, table: pd.DataFrame) -> pd.DataFrame:
    """Cells a reviewer disputes (disagree, gold-wrong) or on which the reviewers' labels differ."""
    rows, cells = [], table.set_index(CELL)
    for key, g in reviews.groupby(CELL, sort=False):
        if g["label"].dropna().nunique() > 1 or {"disagree", "gold-wrong"} & set(g["review"]):
            cell = cells.loc[key]
            rows.append({**dict(zip(CELL, key)), **cell[["verdict_shown", "reviewed", "em"]],
                         "reviews": "; ".join(f"{r}: {v}" for r, v in zip(g["reviewer"], g["review"])),
                         "notes": "; ".join(f"{r}: {n}" for r, n in zip(g["reviewer"], g["note"]) if n)})
    return pd.DataFrame(rows, columns=CELL + ["verdict_shown", "reviewed", "em", "reviews", "notes"])


def rescored(record, table: pd.DataFrame) -> tuple[float, int, int] | None:
    """A judge record's accuracy (%) with each reviewed problem's verdict replaced by the reviewers' label:
    (accuracy, problems re-scored, verdicts changed); None when none of its problems was reviewed."""
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
    return float(np.mean(scores) * 100), len(labels), changed
