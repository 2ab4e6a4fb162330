"""``smmile analyze KIND RESULTS...``: accuracy on the original vs dataset variants (``analysis.analyze_run``)."""

from __future__ import annotations

import argparse

from ..analysis import analyze_run
from . import common as fd
from . import stats as fd_stats


def build_parser() -> argparse.ArgumentParser:
    p = fd.parser("Paired comparison of each model's accuracy on the original dataset and on its variants (noise, "
                  "order/recency, permutations).", prog="smmile analyze")
    p.add_argument("analysis", choices=analyze_run.ANALYSES + ("variance-components",),
                   help="noise | order | permutation; the ICL diagnostics shots | flip | images | diagnostics; "
                        "policies: each demonstration policy against the experts' examples; variance-components: "
                        "problem and order shares, order sensitivity and the minimum detectable difference of one "
                        "SMMILE++ results folder (docs/analyses.md)")
    p.add_argument("results", nargs="+", metavar="[LABEL=]PATH",
                   help="result folders or CSV files; LABEL is original, noise-random, noise-targeted, order-first, "
                        "order-last, permute, k-shot-<k>[-draw<d>], flip-answers|random-labels|unrelated-labels|"
                        "no-answers[-<fraction>], no-example-images|no-query-image[-blank|-noise], "
                        "swap-example-images, other-query-image, demos-<policy> or any name (default: the variant "
                        "each run recorded in its manifest)")
    p.add_argument("--out", default="analysis", help="output folder (made by this command, or new/empty)")
    p.add_argument("--force", action="store_true",
                   help="write into a non-empty --out folder not made by smmile analyze")
    fd.add_resampling_flags(p, "confidence level; significant at adjusted sign-flip p < 1 - level", cluster=False)
    fd_stats.add_estimand_flags(p)
    return p


def main(argv: list[str] | None = None) -> int:
    a = build_parser().parse_args(argv)
    if a.analysis == "variance-components":
        from ..analysis.variance_components import run_variance_components

        return fd.guarded(lambda: print(run_variance_components(a.results, out=a.out, force=a.force,
                                                                n_boot=a.n_boot, seed=a.seed, level=a.level)) or 0,
                          interrupted="interrupted: smmile analyze stopped; nothing half-written")
    return fd.guarded(lambda: print(analyze_run.run_analyze(
        a.analysis, a.results, out=a.out, force=a.force, n_boot=a.n_boot, seed=a.seed, level=a.level, weight=a.weight,
        failures=a.failures, include_gold_mismatch=a.include_gold_mismatch)) or 0,
                      interrupted="interrupted: smmile analyze stopped; nothing half-written")
