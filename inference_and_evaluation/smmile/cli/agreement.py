"""``smmile agreement``: how far the LLM judge can be trusted (``analysis.agreement_run``)."""

from __future__ import annotations

import argparse

from ..analysis.agreement_run import run_agreement
from . import common as fd


def build_parser() -> argparse.ArgumentParser:
    p = fd.parser("Judge reliability: inter-rater agreement of human labels (percent, Fleiss' kappa), judge vs "
                  "majority human per item (percent, Cohen's kappa) and per model (Pearson r, bias), and exact match "
                  "vs judge.",
                  prog="smmile agreement")
    p.add_argument("results", nargs="*", metavar="PATH",
                   help="result folders or CSVs: judge labels from *_evaluationllm.json, EM from the CSVs")
    p.add_argument("--labels", help="CSV of human labels: problem_id, model, mode, rater, label (0/1)")
    p.add_argument("--judge-rater", default="judge", help="rater name of judge rows in --labels")
    p.add_argument("--out", default="agreement", help="output folder (made by this command, or new/empty)")
    p.add_argument("--force", action="store_true",
                   help="write into a non-empty --out folder not made by smmile agreement")
    p.add_argument("--judges", action="store_true",
                   help="the judges of a jury (evaluate_LLMJudge.py --jury) among themselves (pairwise Cohen's "
                        "kappa, Fleiss' kappa) and each against exact match, per mode and format, from "
                        "<stem>_judgements.jsonl")
    p.add_argument("--reviews", nargs="+", default=[], metavar="REVIEWS_JSON",
                   help="reviews.json file(s) exported by the report's problem explorer: judge and exact match vs "
                        "the reviewers, reviewer vs reviewer, and the disputed cells; reviews of a problem, model or "
                        "result file the folders do not have are refused and counted")
    p.add_argument("--strict", action="store_true",
                   help="exit 2 when --reviews holds a review of an answer the result folders do not have")
    fd.add_resampling_flags(p, "interval level of the --judges / --reviews intervals")
    return p


def main(argv: list[str] | None = None) -> int:
    a = build_parser().parse_args(argv)
    return fd.guarded(lambda: print(run_agreement(a.results, labels=a.labels, judge_rater=a.judge_rater, out=a.out,
                                                  force=a.force, judges=a.judges, reviews=a.reviews, n_boot=a.n_boot,
                                                  seed=a.seed, level=a.level, cluster=a.cluster,
                                                  strict=a.strict)) or 0,
                      interrupted="interrupted: smmile agreement stopped; nothing half-written")
