"""The work of `smmile agreement`: how far the LLM judge can be trusted (paper: judge vs five clinical experts).

Inputs: result folders/CSVs (judge labels from `*_evaluationllm.json`, exact match from the CSVs) and
optionally `--labels` (human labels, format in docs/analyses.md). Outputs to --out: agreement.json +
one CSV per table.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pandas as pd

from .. import fsguard
from ..errors import UserError
from ..scoring.results import records_of
from . import agreement as ag
from .labels import binary_scores, canonical_models, judge_from_results, model_aliases, read_labels
from .output import fmt, write_tables


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


def run_agreement(results: list[str], *, labels: str | None = None, judge_rater: str = "judge",
                  out: str = "agreement", force: bool = False) -> int:
    """Agreement of the human ``labels`` (CSV) with each other and with the judge (rows of rater
    ``judge_rater``, and the judge results in ``results``), and exact match vs judge in ``results`` (folders
    or CSVs); the tables go to ``out`` (made by this command, or new/empty; ``force``: any allowed folder),
    written while holding its lock. Returns 0."""
    if not results and not labels:
        raise UserError("give result folders and/or --labels")
    folder = fsguard.prepare_output_dir(out, "smmile agreement", force=force)
    with fsguard.OutputLock(folder, f"the agreement folder {folder}"):
        return _agreement_into(results, labels, judge_rater, folder)


def _agreement_into(results: list[str], labels_path: str | None, judge_rater: str, out) -> int:
    warnings: list[str] = []

    def warn(message: str) -> None:
        print(message, file=sys.stderr)
        warnings.append(message)

    records = load_results(results, warn)
    labels = read_labels(labels_path) if labels_path else None
    summary, tables = human_tables(labels, records, judge_rater, warn) if labels_path else ({}, {})
    tables.update(em_tables(records, warn))
    if not summary and not tables:
        raise UserError("nothing to compare: no human labels and no result judged by the LLM judge; pass --labels "
                        "HUMAN_LABELS.csv (problem_id, model, mode, rater, label) and/or run evaluate_LLMJudge.py on the "
                        "result folders first")
    meta = {"settings": {"labels": labels_path, "results": [str(Path(p).resolve()) for p in results],
                         "judge_rater": judge_rater}, **summary, "warnings": warnings}
    written = write_tables(out, "agreement", tables, meta)
    print(console(summary, tables))
    print("Written: " + ", ".join(str(p) for p in written))
    return 0
