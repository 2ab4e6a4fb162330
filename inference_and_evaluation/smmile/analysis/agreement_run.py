"""The work of `smmile agreement`: how far the LLM judge can be trusted (paper: judge vs five clinical experts).

Inputs: result folders/CSVs (judge labels from `*_evaluationllm.json`, exact match from the CSVs) and
optionally `--labels` (human labels, format in docs/analyses.md), `--judges` (the judges of a jury among
themselves and against exact match: `analysis.judges`) and `--reviews` (reviewers' verdicts exported by the
report's explorer: `analysis.reviews`). Outputs to --out: agreement.json + one CSV per table (and, with
--judges, the figure agreement_judges.png/.svg).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pandas as pd

from .. import fsguard
from ..errors import UserError
from ..scoring.results import records_of
from . import agreement as ag
from . import judges as judges_mod
from . import reviews as reviews_mod
from .labels import binary_scores, canonical_models, judge_from_results, model_aliases, read_labels
from .results import fmt, write_tables

log = logging.getLogger(__name__)


def load_results(paths: list[str], warn) -> list:
    return [record for path in paths for record in records_of(path, warn)]


def human_tables(labels: pd.DataFrame, records: list, judge_rater: str, warn) -> tuple[dict, dict]:
    labels = canonical_models(labels, model_aliases(records), warn if records else None)
    humans = labels[labels["rater"] != judge_rater]
    if humans.empty:
        raise UserError("the labels hold no human rater (every row is the judge)")
    judge = pd.concat([judge_from_results(records), labels[labels["rater"] == judge_rater][ag.ITEM + ["label"]]])
    summary, tables = {"inter_rater": ag.inter_rater(humans)}, {"rater_pairs": ag.rater_pairs(humans)}
    if not judge.empty:
        table = ag.items(humans, judge)
        unjudged = table[table["judge"].isna()]
        if len(unjudged):
            first = unjudged.iloc[0]
            warn(f"warning: {len(unjudged)} labelled item(s) have no judge label (first: {first['model']} "
                 f"{first['mode']} {first['problem_id']}); they are left out of judge vs humans")
        versus = ag.judge_vs_humans(table)
        tables.update({"judge_vs_humans": versus,
                       "judge_human_correlation": ag.correlation(versus, "judge_accuracy", "human_accuracy"),
                       "items": table})
    return summary, tables


def em_tables(records: list, warn) -> dict:
    by_source: dict[str, dict] = {}
    for r in records:
        by_source.setdefault(r.source, {})[r.metric] = r
    pairs = [({"model": m["EM"].model, "mode": m["EM"].mode, "source": os.path.basename(src)},
              binary_scores(m["EM"].scores, f"{src} (exact match)", warn),
              binary_scores(m["LLM"].scores, f"{src} (judge)", warn))
             for src, m in by_source.items() if {"EM", "LLM"} <= set(m)]
    if not pairs:
        return {}
    rows = ag.em_vs_judge(pairs)
    return {"em_vs_judge": rows, "em_judge_correlation": ag.correlation(rows, "judge_accuracy", "em_accuracy")}


def console(summary: dict, tables: dict) -> str:
    lines = []
    if "inter_rater" in summary:
        s = summary["inter_rater"]
        lines.append(f"inter-rater: {s['n_raters']} raters, {s['n_items_multi']} items with >= 2 labels: "
                     f"{fmt(s['pairwise_percent'])}% pairwise agreement, Fleiss' kappa {fmt(s['fleiss_kappa'], '.3f')}")
    for name, other in (("judge_vs_humans", "human"), ("em_vs_judge", "em")):
        for r in tables.get(name, []):
            if r["scope"] != "model" or name == "em_vs_judge":
                lines.append(f"{name} {r['model']} {r['mode']}: n={r['n']} {fmt(r['percent'])}% agree, kappa "
                             f"{fmt(r['cohen_kappa'], '.3f')}, judge {fmt(r['judge_accuracy'])}% vs {other} "
                             f"{fmt(r[other + '_accuracy'])}% (bias {fmt(r['bias'], '+.2f')} pp)")
    for name in ("judge_human_correlation", "em_judge_correlation"):
        for r in tables.get(name, []):
            lines.append(f"{name} mode={r['mode']}: {r['n_results']} results, r={fmt(r['pearson_r'], '.3f')}, "
                         f"mean bias {fmt(r['mean_bias'], '+.2f')} pp")
    return "\n".join(lines)


def judge_tables(records: list, resampling: dict, warn) -> dict:
    table = judges_mod.judge_frame(records, warn)
    if table.empty:
        raise UserError("--judges: no judged result with its replies file (<stem>_judgements.jsonl) in the results; "
                        "run evaluate_LLMJudge.py (with --jury for several judges) first")
    return {"judges": judges_mod.judge_rows(table, **resampling)}


def review_tables(paths: list[str], records: list, resampling: dict, warn) -> dict:
    reviews = reviews_mod.read_reviews(paths)
    if reviews.empty:
        raise UserError(f"--reviews: no review in {', '.join(paths)}")
    table = reviews_mod.review_table(reviews, records, warn)
    return {"reviews": reviews_mod.agreement_rows(table, reviews, **resampling),
            "reviews_disputed": reviews_mod.disputed(reviews, table), "reviewed_cells": table}


def draw_judges(rows: list[dict], out, warn) -> list[Path]:
    """The figure of the --judges table (a forest of the kappas); one warning when it cannot be drawn."""
    from .. import plotting

    job = judges_mod.figure_job(rows, out, ("png", "svg"))
    if job is None:
        return []
    try:
        return [Path(p) for p in plotting.draw(job)]
    except ImportError as exc:
        warn(f"warning: the judges' figure was not drawn ({exc})")
        return []


def judges_console(tables: dict) -> list[str]:
    lines = []
    for name in ("judges", "reviews"):
        for r in tables.get(name, []):
            kappa = r.get("cohen_kappa", r.get("fleiss_kappa"))
            pct = (f"{fmt(r['percent'])}% [{fmt(r['percent_low'])}, {fmt(r['percent_high'])}], "
                   if "percent" in r else "")
            lines.append(f"{r['comparison']} {r['mode']} {r['format']}: {r['rater_a']}"
                         f"{' vs ' + r['rater_b'] if r['rater_b'] else ''}: n={r['n']} {pct}kappa {fmt(kappa, '.3f')} "
                         f"[{fmt(r['kappa_low'], '.3f')}, {fmt(r['kappa_high'], '.3f')}]")
    disputed = tables.get("reviews_disputed")
    if disputed is not None:
        lines.append(f"disputed cells: {len(disputed)}")
        lines += [f"  {r.model} {r.mode} {r.format} {r.problem_id}: verdict shown {fmt(r.verdict_shown, '.0f')}; "
                  f"{r.reviews}" + (f" ({r.notes})" if r.notes else "") for r in disputed.itertuples()]
    return lines


def run_agreement(results: list[str], *, labels: str | None = None, judge_rater: str = "judge",
                  out: str = "agreement", force: bool = False, judges: bool = False, reviews: list[str] = (),
                  n_boot: int = 10_000, seed: int = 0, level: float = 0.95, cluster: str = "auto") -> str:
    """Agreement of the human ``labels`` (CSV) with each other and with the judge (rows of rater
    ``judge_rater``, and the judge results in ``results``), and exact match vs judge in ``results`` (folders
    or CSVs); the tables go to ``out`` (made by this command, or new/empty; ``force``: any allowed folder),
    written while holding its lock. Returns the console text."""
    if not results and not labels and not reviews:
        raise UserError("give result folders and/or --labels / --reviews")
    if judges and not results:
        raise UserError("--judges needs the result folders the jury judged")
    for path in reviews:  # an unreadable reviews file is refused before the output folder is made
        reviews_mod.read_reviews([path])
    resampling = {"n_boot": n_boot, "seed": seed, "level": level, "cluster": cluster}
    folder = fsguard.prepare_output_dir(out, "smmile agreement", force=force)
    with fsguard.OutputLock(folder, f"the agreement folder {folder}"):
        return _agreement_into(results, labels, judge_rater, folder, judges, list(reviews), resampling)


def _agreement_into(results: list[str], labels_path: str | None, judge_rater: str, out, judges: bool = False,
                    reviews: list[str] = (), resampling: dict | None = None) -> str:
    warnings: list[str] = []

    def warn(message: str) -> None:
        log.warning(message)
        warnings.append(message)

    records = load_results(results, warn)
    labels = read_labels(labels_path) if labels_path else None
    summary, tables = human_tables(labels, records, judge_rater, warn) if labels_path else ({}, {})
    tables.update(em_tables(records, warn))
    if judges:
        tables.update(judge_tables(records, resampling, warn))
    if reviews:
        tables.update(review_tables(reviews, records, resampling, warn))
    if not summary and not tables:
        raise UserError("nothing to compare: no human labels and no result judged by the LLM judge; pass --labels "
                        "HUMAN_LABELS.csv (problem_id, model, mode, rater, label) and/or run evaluate_LLMJudge.py on the "
                        "result folders first")
    meta = {"settings": {"labels": labels_path, "results": [str(Path(p).resolve()) for p in results],
                         "judge_rater": judge_rater, "judges": judges,
                         "reviews": [str(Path(p).resolve()) for p in reviews], **(resampling or {})},
            **summary, "warnings": warnings}
    written = write_tables(out, "agreement", tables, meta)
    if judges:
        written += draw_judges(tables["judges"], out, warn)
    return "\n".join([line for line in [console(summary, tables)] + judges_console(tables) if line]
                     + ["Written: " + ", ".join(str(p) for p in written)])
