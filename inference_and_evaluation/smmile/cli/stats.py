"""``smmile stats``: point estimates with percentile CIs and paired comparisons (the work is
``smmile.scoring.stats``)."""

from __future__ import annotations

import argparse

from ..scoring import stats
from . import common as fd


def build_parser() -> argparse.ArgumentParser:
    parser = fd.parser(
        "Accuracy with seeded percentile bootstrap CIs per model/metric/mode, and paired comparisons (bootstrap CI "
        "of the difference; exact McNemar for independent problems, cluster-adjusted McNemar (Durkalski 2003) for "
        "SMMILE++; Holm within each family).", prog="smmile stats")
    parser.add_argument("results_dir", help="directory with result_*.csv (+ *_evaluationllm.json)")
    parser.add_argument("--out", help="output folder (default: results_dir, where only stats_* files are written)")
    parser.add_argument("--force", action="store_true",
                        help="write into a non-empty --out folder not made by smmile stats")
    fd.add_resampling_flags(parser, "CI level; comparisons are significant at alpha = 1 - level")
    parser.add_argument("--compare", choices=stats.COMPARE_CHOICES, default="icl",
                        help="icl: ICL vs 0-shot per model (default; the family of the headline claims); "
                             "models: model vs model per metric/mode; all: both (each its own Holm family); none")
    parser.add_argument("--exclude-gold-mismatch", action="store_true",
                        help="drop paired problems whose two files have different gold answers (true_answer)")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``smmile stats``; returns the exit status (2 on bad input)."""
    a = build_parser().parse_args(argv)
    return fd.guarded(lambda: stats.run_stats(a.results_dir, out=a.out, force=a.force, n_boot=a.n_boot, seed=a.seed,
                                              level=a.level, cluster=a.cluster, compare=a.compare,
                                              exclude_gold_mismatch=a.exclude_gold_mismatch),
                      interrupted="interrupted: smmile stats stopped; nothing half-written")
