"""``variance_analysis.py`` / ``smmile variance``: the command line of ``smmile.scoring.variance``."""

from __future__ import annotations

import argparse

from ..scoring.variance import run_variance
from . import common as fd


def build_parser() -> argparse.ArgumentParser:
    parser = fd.parser(
        "Evaluate model accuracy on MCQA and exact match tasks (bootstrap mean ± std per model, metric and mode; "
        "spec §7).",
        epilog="Exit status: 0 ok; 1 some file could not be scored (its cell shows '-') or no CSV found; 2 directory "
               "not found.")
    parser.add_argument("directory", help="Directory containing result CSV files")
    parser.add_argument("--output", default="evaluation_results.txt", help="Output file for results table")
    parser.add_argument("--mean_only", action="store_true", help="Compute only mean (no bootstrap variances)")
    parser.add_argument("--generate_table", action="store_true", help="Generate LaTeX table with formatted values")
    parser.add_argument("--latex_output", default="latex_table.tex", help="Output file for LaTeX table")
    parser.add_argument("--sorted", action="store_true",
                        help="(addition) process the CSVs in sorted name order instead of the filesystem "
                             "order of glob.glob, so the ± values are the same on every machine. The "
                             "default keeps the original's order-dependent single random stream.")
    parser.add_argument("--ci", action="store_true",
                        help="(addition) also report point estimates with 95%% Wilson intervals on the effective "
                             "sample size (as `smmile stats`; SMMILE++ _perm_k ids clustered) and write "
                             "stats_estimates.csv/json and stats_table.tex into the directory")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return fd.guarded(lambda: run_variance(args.directory, output=args.output, mean_only=args.mean_only,
                                           generate_table=args.generate_table, latex_output=args.latex_output,
                                           sort=args.sorted, ci=args.ci))
