"""Judge reliability from 0/1 correctness labels (``smmile agreement``; formats and fields: docs/analyses.md): the
human raters among themselves, the judge against their majority, exact match against the judge, and the judges of
a jury against each other and exact match (``--judges``). The coefficients are ``scoring.kappa``. An *item* is one
(model, mode, problem_id): one answer to be judged."""

from __future__ import annotations

import itertools
import logging
import math
import os
from pathlib import Path

import numpy as np
import pandas as pd

from .. import logs, plotting
from ..errors import MissingDependency, UserError
from ..record.verdicts import JURY
from ..scoring.estimates import clusters_for
from ..scoring.kappa import (NAN, cohen_kappa, fleiss_agreement, fleiss_kappa, majority, pair_agreement,
                             pairwise_percent, pearson, percent_agreement)
from ..scoring.metrics import judged
from ..scoring.scores import MODES, Record

ITEM = ["model", "mode", "problem_id"]
CELL = ["model", "mode", "format", "problem_id"]
EMPTY_PAIR = ("percent", "percent_low", "percent_high", "cohen_kappa", "kappa_low", "kappa_high")
LABEL_COLUMNS = ("problem_id", "model", "mode", "rater", "label")
VALUES = {"0": 0, "1": 1, "false": 0, "true": 1, "0.0": 0, "1.0": 1}
log = logging.getLogger(__name__)


def item_clusters(ids, cluster: str):
    """The resampling units of labelled answers: under ``auto`` the base problem, so the answers of every model
    and mode to one problem (and a SMMILE++ problem's orders) are resampled together, not as independent."""
    return clusters_for(ids, "base" if cluster == "auto" else cluster)


# -- the labels -----------------------------------------------------------------------------------
def read_labels(path: str) -> pd.DataFrame:
    """The label CSV (other columns ignored) with label as int; a bad file is a UserError naming the line."""
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise UserError(f"cannot read labels {path}: "
                        f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
    missing = [c for c in LABEL_COLUMNS if c not in frame.columns]
    if missing:
        raise UserError(f"{path}: missing column(s) {', '.join(missing)} (need {', '.join(LABEL_COLUMNS)})")
    frame = frame[list(LABEL_COLUMNS)].apply(lambda col: col.str.strip())
    bad = frame[~frame["label"].str.lower().isin(list(VALUES))]
    if len(bad):
        raise UserError(f"{path} line {bad.index[0] + 2}: label {bad['label'].iloc[0]!r} is not 0/1")
    frame["label"] = frame["label"].str.lower().map(VALUES)
    bad = frame[~frame["mode"].isin(MODES)]
    if len(bad):
        raise UserError(f"{path} line {bad.index[0] + 2}: mode {bad['mode'].iloc[0]!r} is not 0-shot or ICL")
    dup = frame.duplicated(ITEM + ["rater"])
    if dup.any():
        row = frame[dup].iloc[0]
        raise UserError(f"{path} line {frame[dup].index[0] + 2}: rater {row['rater']!r} labels item "
                        f"({row['model']}, {row['mode']}, {row['problem_id']}) twice")
    return frame


def binary_scores(scores: pd.Series, what: str) -> pd.Series:
    """The 0/1 scores. A fractional score (the share of a problem's rows judged correct) is no single label:
    it is left out, with a warning saying how many."""
    binary = scores[scores.isin((0.0, 1.0))]
    if len(binary) < len(scores):
        log.warning(f"warning: {what}: {len(scores) - len(binary)} problem(s) with a fractional score (several rows "
                    "per problem) left out of the agreement")
    return binary


# -- humans among themselves ----------------------------------------------------------------------
def inter_rater(humans: pd.DataFrame) -> dict:
    """Agreement of the human raters on the items at least two of them labelled."""
    lists = humans.groupby(ITEM, sort=False)["label"].apply(list)
    multi = [list(v) for v in lists if len(v) >= 2]
    counts = np.array([[v.count(0), v.count(1)] for v in multi]).reshape(-1, 2)
    return {"n_raters": int(humans["rater"].nunique()), "n_labels": len(humans), "n_items": len(lists),
            "n_items_multi": len(multi),
            "pairwise_percent": float(np.mean([pairwise_percent(v) for v in multi])) if multi else NAN,
            "unanimous_percent": float(np.mean([len(set(v)) == 1 for v in multi]) * 100) if multi else NAN,
            "fleiss_kappa": fleiss_kappa(counts)}


def rater_pairs(humans: pd.DataFrame) -> list[dict]:
    wide = humans.pivot_table(index=ITEM, columns="rater", values="label", aggfunc="first")
    rows = []
    for a, b in itertools.combinations(wide.columns, 2):
        both = wide[[a, b]].dropna()
        rows.append({"rater_a": a, "rater_b": b, "n": len(both),
                     "percent": percent_agreement(both[a], both[b]), "cohen_kappa": cohen_kappa(both[a], both[b])})
    return rows


# -- judge against the human majority -------------------------------------------------------------
def items(humans: pd.DataFrame, judge: pd.DataFrame) -> pd.DataFrame:
    """One row per item: raters, positive labels, human majority (NaN on a tie), judge label, agree."""
    lists = humans.groupby(ITEM, sort=False)["label"].apply(list)
    frame = pd.DataFrame({"n_raters": lists.map(len), "human_positive": lists.map(sum),
                          "human_majority": lists.map(majority)}).reset_index()
    judged = judge.drop_duplicates(ITEM, keep="last").rename(columns={"label": "judge"})[ITEM + ["judge"]]
    frame = frame.merge(judged, on=ITEM, how="left")
    both = frame["human_majority"].notna() & frame["judge"].notna()
    frame["agree"] = np.where(both, frame["human_majority"] == frame["judge"], np.nan)
    return frame


def _versus(scope: dict, judge: np.ndarray, human: np.ndarray, ties: int) -> dict:
    j_acc = float(judge.mean() * 100) if len(judge) else NAN
    h_acc = float(human.mean() * 100) if len(human) else NAN
    return {**scope, "n": len(judge), "ties_excluded": ties,
            "percent": percent_agreement(judge, human), "cohen_kappa": cohen_kappa(judge, human),
            **{f"judge_{j}_human_{h}": int(((judge == j) & (human == h)).sum())
               for j, h in itertools.product((1, 0), repeat=2)},
            "judge_accuracy": j_acc, "human_accuracy": h_acc, "bias": j_acc - h_acc}


def judge_vs_humans(table: pd.DataFrame) -> list[dict]:
    """Rows for all items, per mode, and per (model, mode); bias = judge − human accuracy (pp)."""
    judged = table[table["judge"].notna()]
    groups = [({"scope": "all", "model": "*", "mode": "*"}, judged)]
    groups += [({"scope": "mode", "model": "*", "mode": m}, g) for m, g in judged.groupby("mode", sort=False)]
    groups += [({"scope": "model", "model": k[0], "mode": k[1]}, g)
               for k, g in judged.groupby(["model", "mode"], sort=False)]
    rows = []
    for scope, g in groups:
        ok = g[g["human_majority"].notna()]
        rows.append(_versus(scope, ok["judge"].to_numpy(), ok["human_majority"].to_numpy(), len(g) - len(ok)))
    return rows


def correlation(rows: list[dict], left: str, right: str) -> list[dict]:
    """Across models: Pearson r of two accuracies and the mean of left − right, per mode and overall."""
    frame = pd.DataFrame([r for r in rows if r.get("scope", "model") == "model"])
    if frame.empty:
        return []
    out = []
    for mode, g in [("*", frame)] + list(frame.groupby("mode", sort=False)):
        g = g.dropna(subset=[left, right])
        out.append({"mode": mode, "n_results": len(g), "pearson_r": pearson(g[left], g[right]),
                    "mean_bias": float((g[left] - g[right]).mean()) if len(g) else NAN})
    return out


def human_tables(labels: pd.DataFrame, records: list[Record], judge_rater: str) -> tuple[dict, dict]:
    """The humans among themselves and against the judge (rows of ``judge_rater`` and the judge results in
    ``records``); label models are renamed to the results' keys from any of their names."""
    aliases = {}
    for r in records:
        names = [r.model]
        if r.result is not None:
            identity = r.result.identity
            names += [r.result.tag, identity.key, identity.scoring_name, identity.display]
        aliases.update({name.lower(): r.model for name in names if name})
    unknown = sorted({m for m in labels["model"] if m.lower() not in aliases})
    if records and unknown:
        log.warning(f"warning: labels name model(s) no result file has: {', '.join(unknown)}; their items get no "
                    "judge label from the results")
    labels = labels.assign(model=[aliases.get(m.lower(), m) for m in labels["model"]])
    humans = labels[labels["rater"] != judge_rater]
    if humans.empty:
        raise UserError("the labels hold no human rater (every row is the judge)")
    with logs.silenced():  # em_tables says the judge's fractional scores
        from_results = [{"model": r.model, "mode": r.mode, "problem_id": str(pid), "label": int(v)}
                        for r in records if judged(r.metric)
                        for pid, v in binary_scores(r.scores, f"{r.source} (judge)").items()]
    judge = pd.concat([pd.DataFrame(from_results, columns=ITEM + ["label"]),
                       labels[labels["rater"] == judge_rater][ITEM + ["label"]]])
    summary, tables = {"inter_rater": inter_rater(humans)}, {"rater_pairs": rater_pairs(humans)}
    if not judge.empty:
        table = items(humans, judge)
        unjudged = table[table["judge"].isna()]
        if len(unjudged):
            first = unjudged.iloc[0]
            log.warning(f"warning: {len(unjudged)} labelled item(s) have no judge label (first: {first['model']} "
                        f"{first['mode']} {first['problem_id']}); they are left out of judge vs humans")
        versus = judge_vs_humans(table)
        tables.update({"judge_vs_humans": versus,
                       "judge_human_correlation": correlation(versus, "judge_accuracy", "human_accuracy"),
                       "items": table})
    return summary, tables


# -- exact match against the judge, no humans needed ----------------------------------------------
def em_tables(records: list[Record]) -> dict:
    """Per result scored by both (0/1 scores on shared problems), and across results."""
    by_source: dict[str, dict] = {}
    for r in records:
        by_source.setdefault(r.source, {})[r.metric] = r
    rows = []
    for src, m in by_source.items():
        if {"EM", "LLM"} <= set(m):
            em = binary_scores(m["EM"].scores, f"{src} (exact match)").rename("em")
            llm = binary_scores(m["LLM"].scores, f"{src} (judge)").rename("judge")
            joined = pd.concat([em, llm], axis=1, join="inner").dropna()
            scope = {"scope": "model", "model": m["EM"].model, "mode": m["EM"].mode, "source": os.path.basename(src)}
            row = _versus(scope, joined["judge"].astype(int).to_numpy(), joined["em"].astype(int).to_numpy(), 0)
            rows.append({k.replace("human", "em"): v for k, v in row.items() if k != "ties_excluded"})
    if not rows:
        return {}
    return {"em_vs_judge": rows, "em_judge_correlation": correlation(rows, "judge_accuracy", "em_accuracy")}


# -- the judges of a jury (the run record's verdicts per judge) ---------------------------------------
def judge_frame(records: list) -> pd.DataFrame:
    """One row per judged cell: model, mode, format, problem_id, em (0/1 or NaN) and one column per judge."""
    em = {r.source: binary_scores(r.scores, f"{r.source} (exact match)") for r in records if r.metric == "EM"}
    frames = []
    for r in (r for r in records if judged(r.metric) and r.result is not None):
        found = r.result.verdicts
        if not found:
            continue
        frame = pd.DataFrame(found)
        frame.index = frame.index.astype(str)
        frame = frame.reindex([str(p) for p in r.scores.index]).dropna(how="all")
        exact = em.get(r.source)
        frame.insert(0, "em", exact.reindex(frame.index).to_numpy(dtype=float) if exact is not None else math.nan)
        frames.append(frame.rename_axis("problem_id").reset_index().assign(
            model=r.model, mode=r.mode, format=r.result.fmt))
    if not frames:
        return pd.DataFrame(columns=CELL + ["em"])
    table = pd.concat(frames, ignore_index=True)
    judges = [c for c in table.columns if c not in CELL + ["em"]]
    return table[CELL + ["em"] + judges]


def scopes(table: pd.DataFrame):
    """(scope, rows): over all, then per (mode, format)."""
    yield {"mode": "*", "format": "*"}, table
    for (mode, fmt), g in table.groupby(["mode", "format"], sort=False):
        yield {"mode": mode, "format": fmt}, g


def judge_rows(table: pd.DataFrame, n_boot: int, seed: int, level: float, cluster: str = "auto") -> list[dict]:
    """Every judge pair, Fleiss' kappa, and each judge and the jury vs exact match, over all and per mode and format;
    beside every row ``ties`` (cells of the scope where the jury tied: no jury verdict) and ``left_out`` (cells
    without both labels), and a row with ``n`` 0 where nothing is left to compare."""
    judges = [c for c in table.columns if c not in CELL + ["em", JURY]]
    raters = judges + ([JURY] if JURY in table.columns else [])
    rows = []
    for scope, g in scopes(table):
        votes = g[judges].to_numpy(dtype=float)
        ties = int((((votes == 1).sum(axis=1) == (votes == 0).sum(axis=1)) & (votes == 1).any(axis=1)).sum()) \
            if JURY in table.columns else 0

        def pair(kind: str, a: str, b: str, x: pd.Series, y: pd.Series) -> None:
            both = x.notna() & y.notna()
            found = pair_agreement(x[both], y[both], item_clusters(g.loc[both, "problem_id"], cluster), n_boot, seed,
                                   level) if both.any() else dict.fromkeys(EMPTY_PAIR, NAN) | {"n": 0, "n_clusters": 0, "interval": ""}
            rows.append({"comparison": kind, **scope, "rater_a": a, "rater_b": b, **found, "ties": ties,
                         "left_out": int((~both).sum())})

        for a, b in itertools.combinations(judges, 2):
            pair("judge pair", a, b, g[a], g[b])
        if len(judges) >= 2:
            values = g[judges].to_numpy(dtype=float)
            counts = np.column_stack([(values == 0).sum(axis=1), (values == 1).sum(axis=1)])
            rows.append({"comparison": "Fleiss", **scope, "rater_a": f"{len(judges)} judges", "rater_b": "",
                         **fleiss_agreement(counts, item_clusters(g["problem_id"], cluster), n_boot, seed, level),
                         "ties": ties, "left_out": int((counts.sum(axis=1) < 2).sum())})
        for a in raters:
            pair("vs exact match", a, "exact match", g[a], g["em"])
    return rows


def draw_judges(rows: list[dict], out) -> list[Path]:
    """A forest of the kappas with their intervals, a panel per mode and format (a warning if it cannot be drawn)."""
    rows = [r for r in rows if not math.isnan(r.get("cohen_kappa", r.get("fleiss_kappa", math.nan)))]
    if not rows:
        return []
    labels = [r["rater_a"] if r["comparison"] == "Fleiss" else f"{r['rater_a']} vs {r['rater_b']}" for r in rows]
    panels = ["all" if r["mode"] == "*" else f"{r['mode']}, {r['format']}" for r in rows]
    spec = {"rows": [{"label": label, "panel": panel, "series": None,
                      "estimate": r.get("cohen_kappa", r.get("fleiss_kappa")), "low": r["kappa_low"],
                      "high": r["kappa_high"], "significant": r["kappa_low"] > 0}
                     for r, label, panel in zip(rows, labels, panels)],
            "labels": list(dict.fromkeys(labels)), "panels": list(dict.fromkeys(panels)),
            "title": "Judge agreement: Cohen's κ (pairs, vs exact match) and Fleiss' κ",
            "xlabel": "κ", "significance": "interval above 0"}
    job = {"kind": "forest", "spec": spec, "out": str(out), "name": "agreement_judges", "formats": ("png", "svg")}
    try:
        return [Path(p) for p in plotting.draw(job)]
    except (ImportError, MissingDependency) as exc:
        log.warning(f"warning: the judges' figure was not drawn ({exc})")
        return []
