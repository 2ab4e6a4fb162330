"""``smmile stats``: the command line of ``smmile.scoring.stats_run``; prints its console report."""

from __future__ import annotations

import argparse
from dataclasses import fields

from ..scoring import estimates, signflip, stats_run
from . import common as fd


def build_parser() -> argparse.ArgumentParser:
    parser = fd.parser(
        "Accuracy per model/metric/mode with continuity-corrected Wilson intervals on the effective sample size "
        "(design effect of the SMMILE++ orders of a base problem; at 0 % or 100 % the plain Wilson bound on the "
        "units; transport failures left out, refusals scored wrong), and paired comparisons: the difference and a "
        "sign-flip randomisation test over base problems (mid-p, the conventional p beside it as p_exact; exact up "
        "to 2^20 patterns), adjusted within each family (Westfall-Young step-down minP by default), "
        "with the interval from the same procedure. Failed, refused and empty rows are counted beside every "
        "number.", prog="smmile stats")
    parser.add_argument("results_dir", help="directory with result_*.csv (+ *_evaluationllm.json)")
    parser.add_argument("--out", help="output folder (default: results_dir, where only stats_* files are written)")
    parser.add_argument("--force", action="store_true",
                        help="write into a non-empty --out folder not made by smmile stats")
    fd.add_resampling_flags(parser, "CI level; comparisons are significant at alpha = 1 - level")
    parser.add_argument("--compare", choices=estimates.COMPARE_CHOICES, default="icl",
                        help="icl: ICL vs 0-shot per model (default; the family of the headline claims); "
                             "models: model vs model per metric/mode; all: both (each its own family); none")
    parser.add_argument("--adjust", choices=signflip.ADJUSTMENTS, default="minP",
                        help="multiplicity adjustment within a family: minP = Westfall-Young step-down minP on the "
                             "joint sign flips of the base problems (default); holm = Holm on the sign-flip p-values")
    parser.add_argument("--n-flips", type=int, default=signflip.DEFAULT_N_FLIPS,
                        help="Monte Carlo sign patterns when a family has more than 20 base problems with a "
                             "difference (seeded by --seed; default %(default)s)")
    add_estimand_flags(parser)
    parser.add_argument("--dataset", default=None, metavar="ID|PATH|demo",
                        help="check every estimate's gold answers (true_answer) against this dataset's and name "
                             "the results that differ (gold_vs_dataset)")
    return parser


def add_estimand_flags(parser: argparse.ArgumentParser) -> None:
    """--weight, --failures and --include-gold-mismatch (``smmile stats`` and ``smmile analyze``)."""
    parser.add_argument("--weight", choices=estimates.WEIGHT_CHOICES, default="row",
                        help="row: every row (SMMILE++ order) counts, as in the paper's tables (default); problem: "
                             "every base problem counts once (test: cluster-adjusted McNemar, Durkalski 2003)")
    parser.add_argument("--failures", choices=estimates.FAILURE_CHOICES, default=estimates.FAILURES,
                        help="transport failures (connection errors, timeouts, 5xx after retries): exclude = not "
                             "answers, left out (default; rerun the same command to fill them); wrong = scored "
                             "wrong, the paper's rule. Refused (content filter) and empty responses are the "
                             "model's answers, scored wrong, under both rules. Counted in the output either way")
    parser.add_argument("--include-gold-mismatch", action="store_true",
                        help="keep paired problems whose two files have different gold answers (true_answer); by "
                             "default they are excluded and counted")


def main(argv: list[str] | None = None) -> int:
    a = build_parser().parse_args(argv)
    return fd.guarded(lambda: _run(a), interrupted="interrupted: smmile stats stopped; nothing half-written")


def _run(a: argparse.Namespace) -> int:
    settings = {f.name: getattr(a, f.name) for f in fields(stats_run.StatsSettings)}
    status, report = stats_run.run_stats(a.results_dir, out=a.out, force=a.force, **settings)
    print(report)
    return status
