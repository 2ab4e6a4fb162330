"""Agreement analyses for judge reliability (0/1 correctness labels); the coefficients (percent agreement,
Cohen's and Fleiss' kappa, Pearson r, the majority label) are ``scoring.kappa``.

Analyses work on a long table of labels with columns ``model, mode, problem_id, rater, label``:
an *item* is one (model, mode, problem_id), i.e. one answer of one model to be judged.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

from smmile.scoring.kappa import NAN, cohen_kappa, fleiss_kappa, majority, pairwise_percent, pearson, percent_agreement

ITEM = ["model", "mode", "problem_id"]


# -- humans among themselves ----------------------------------------------------------------------
def _item_lists(humans: pd.DataFrame) -> pd.Series:
    return humans.groupby(ITEM, sort=False)["label"].apply(list)


def inter_rater(humans: pd.DataFrame) -> dict:
    """Agreement of the human raters on the items at least two of them labelled."""
    lists = _item_lists(humans)
    multi = [list(v) for v in lists if len(v) >= 2]
    counts = np.array([[v.count(0), v.count(1)] for v in multi]).reshape(-1, 2)
    return {"n_raters": int(humans["rater"].nunique()), "n_labels": len(humans), "n_items": len(lists),
            "n_items_multi": len(multi),
            "pairwise_percent": float(np.mean([pairwise_percent(v) for v in multi])) if multi else NAN,
            "unanimous_percent": float(np.mean([len(set(v)) == 1 for v in multi]) * 100) if multi else NAN,
            "fleiss_kappa": fleiss_kappa(counts)}


def rater_pairs(humans: pd.DataFrame) -> list[dict]:
    """Percent agreement and Cohen's kappa of every pair of human raters on their shared items."""
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
    lists = _item_lists(humans)
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
            "judge_1_human_1": int(((judge == 1) & (human == 1)).sum()),
            "judge_1_human_0": int(((judge == 1) & (human == 0)).sum()),
            "judge_0_human_1": int(((judge == 0) & (human == 1)).sum()),
            "judge_0_human_0": int(((judge == 0) & (human == 0)).sum()),
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


# -- exact match against the judge, no humans needed ----------------------------------------------
def em_vs_judge(pairs: list[tuple[dict, pd.Series, pd.Series]]) -> list[dict]:
    """Per scored result (scope, EM scores, judge scores, by problem_id, 0/1): agreement on shared
    problems."""
    rows = []
    for scope, em, llm in pairs:
        joined = pd.concat([em.rename("em"), llm.rename("judge")], axis=1, join="inner").dropna()
        judge, exact = (joined[c].astype(int).to_numpy() for c in ("judge", "em"))
        row = _versus({"scope": "model", **scope}, judge, exact, 0)
        rows.append({k.replace("human", "em"): v for k, v in row.items() if k != "ties_excluded"})
    return rows
