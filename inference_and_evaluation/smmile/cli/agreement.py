"""``smmile agreement``: how far the LLM judge can be trusted (the work is ``smmile.analysis.agreement_run``)."""

from __future__ import annotations

import argparse

from ..analysis.agreement_run import run_agreement
from . import common as fd


def build_parser() -> argparse.ArgumentParser:
    p = fd.parser("Judge reliability: inter-rater agreement of human labels (percent, Fleiss' kappa), judge vs majority "
                  "human per item (percent, Cohen's kappa) and per model (Pearson r, bias), and exact match vs judge.",
                  prog="smmile agreement")
    p.add_argument("results", nargs="*", metavar="PATH",
                   help="result folders or CSVs: judge labels from *_evaluationllm.json, EM from the CSVs")
    p.add_argument("--labels", help="CSV of human labels: problem_id, model, mode, rater, label (0/1)")
    p.add_argument("--judge-rater", default="judge", help="rater name of judge rows in --labels")
    p.add_argument("--out", default="agreement", help="output folder (made by this command, or new/empty)")
    p.add_argument("--force", action="store_true", help="write into a non-empty --out folder not made by smmile agreement")
    return p


def main(argv: list[str] | None = None) -> int:
    a = build_parser().parse_args(argv)
    return fd.guarded(lambda: run_agreement(a.results, labels=a.labels, judge_rater=a.judge_rater, out=a.out,
                                            force=a.force),
                      interrupted="interrupted: smmile agreement stopped; nothing half-written")
