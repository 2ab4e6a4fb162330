"""The work of `smmile agreement` (docs/analyses.md §3): how far the LLM judge can be trusted, from the judge's
and exact match's labels in result folders, human labels (`analysis.agreement`), a jury's judges and the
report's reviewers (`analysis.reviews`)."""

from __future__ import annotations

from pathlib import Path

from .. import logs
from ..errors import UserError
from ..scoring.scores import records_of
from . import agreement as ag
from . import reviews as reviews_mod
from .result_sets import fmt, output_folder, write_tables


def console(summary: dict, tables: dict) -> list[str]:
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
    for name in ("judges", "reviews"):
        for r in tables.get(name, []):
            kappa = r.get("cohen_kappa", r.get("fleiss_kappa"))
            pct = (f"{fmt(r['percent'])}% [{fmt(r['percent_low'])}, {fmt(r['percent_high'])}], "
                   if "percent" in r else "")
            ties = f", jury ties {r['ties']}" if r.get("ties") else ""
            lines.append(f"{r['comparison']} {r['mode']} {r['format']}: {r['rater_a']}"
                         f"{' vs ' + r['rater_b'] if r['rater_b'] else ''}: n={r['n']} {pct}kappa {fmt(kappa, '.3f')} "
                         f"[{fmt(r['kappa_low'], '.3f')}, {fmt(r['kappa_high'], '.3f')}]"
                         + (f" ({r['left_out']} left out{ties})" if r.get("left_out") or ties else ""))
    disputed = tables.get("reviews_disputed")
    if disputed is not None:
        lines.append(f"disputed cells: {len(disputed)}")
        lines += [f"  {r.model} {r.mode} {r.format} {r.problem_id}: verdict shown {fmt(r.verdict_shown, '.0f')}; "
                  f"{r.reviews}" + (f" ({r.notes})" if r.notes else "") for r in disputed.itertuples()]
    return lines


def run_agreement(results: list[str], *, labels: str | None = None, judge_rater: str = "judge",
                  out: str = "agreement", force: bool = False, judges: bool = False, reviews: list[str] = (),
                  n_boot: int = 10_000, seed: int = 0, level: float = 0.95, cluster: str = "auto",
                  strict: bool = False) -> str:
    """Write the agreement tables to ``out`` (``judge_rater``: the judge's rows in ``labels``); returns the text."""
    if not results and not labels and not reviews:
        raise UserError("give result folders and/or --labels / --reviews")
    if judges and not results:
        raise UserError("--judges needs the result folders the jury judged")
    if reviews and not results:
        raise UserError("--reviews needs the result folders the reviews are of (their answers, exact match and judge)")
    if reviews:
        with logs.silenced():  # a bad file is refused before the output folder is made; its warnings come below
            reviews_mod.read_reviews(reviews)
    resampling = {"n_boot": n_boot, "seed": seed, "level": level, "cluster": cluster}
    with output_folder(out, "smmile agreement", force, "agreement") as (folder, warnings):
        records = [record for path in results for record in records_of(path)]
        summary, tables = ag.human_tables(ag.read_labels(labels), records, judge_rater) if labels else ({}, {})
        tables.update(ag.em_tables(records))
        if judges:
            table = ag.judge_frame(records)
            if table.empty:
                raise UserError("--judges: no judged result with its replies file (<stem>_judgements.jsonl) in the "
                                "results; run evaluate_LLMJudge.py (with --jury for several judges) first")
            tables["judges"] = ag.judge_rows(table, **resampling)
        if reviews:
            found = reviews_mod.screen(reviews_mod.read_reviews(reviews), records, strict)
            if found.empty:
                raise UserError(f"--reviews: no review of these results in {', '.join(reviews)}")
            table = reviews_mod.review_table(found, records)
            tables.update({"reviews": reviews_mod.agreement_rows(table, found, **resampling),
                           "reviews_disputed": reviews_mod.disputed(found, table), "reviewed_cells": table})
        if not summary and not tables:
            raise UserError("nothing to compare: no human labels and no result judged by the LLM judge; pass "
                            "--labels HUMAN_LABELS.csv (problem_id, model, mode, rater, label) and/or run "
                            "evaluate_LLMJudge.py on the result folders first")
        meta = {"settings": {"labels": labels, "results": [str(Path(p).resolve()) for p in results],
                             "judge_rater": judge_rater, "judges": judges,
                             "reviews": [str(Path(p).resolve()) for p in reviews], **resampling},
                **summary, "warnings": warnings}
        written = write_tables(folder, "agreement", tables, meta)
        if judges:
            written += ag.draw_judges(tables["judges"], folder)
        return "\n".join(console(summary, tables) + ["Written: " + ", ".join(str(p) for p in written)])
