"""`smmile analyze noise|order|permutation RESULTS...`: accuracy on the original vs dataset variants.

Each RESULTS is a folder (or one CSV) of result files, written LABEL=PATH or labelled from its run
manifests (see smmile.analysis.results). Outputs go to --out (docs/analyses.md lists every field).
"""

from __future__ import annotations

import argparse
import sys

import pandas as pd

from ..cli import common as fd
from .. import fsguard
from ..errors import UserError
from ..scoring.bootstrap import DEFAULT_LEVEL, DEFAULT_N_BOOT
from .output import fmt, write_tables
from .results import load_sets
from .variants import KINDS, Report, analyse


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="smmile analyze", formatter_class=fd.HelpFormatter,
                                description="Paired comparison of each model's accuracy on the original dataset "
                                            "and on its variants (noise, order/recency, permutations).")
    p.add_argument("analysis", choices=KINDS)
    p.add_argument("results", nargs="+", metavar="[LABEL=]PATH",
                   help="result folders or CSV files; LABEL is original, noise-random, noise-targeted, order-first, "
                        "order-last, permute or any name (default: read from the run manifests)")
    p.add_argument("--out", default="analysis", help="output folder (made by this command, or new/empty)")
    p.add_argument("--force", action="store_true", help="write into a non-empty --out folder not made by smmile analyze")
    p.add_argument("--n-boot", type=int, default=DEFAULT_N_BOOT, help="bootstrap resamples")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    p.add_argument("--level", type=float, default=DEFAULT_LEVEL,
                   help="confidence level; significant at Holm-adjusted p < 1 - level")
    p.add_argument("--exclude-gold-mismatch", action="store_true",
                   help="drop paired problems whose two result files have different gold answers")
    return p


def console(report: Report) -> str:
    lines = [f"{'variant':<16} {'vs':<12} {'model':<20} {'metric':<5} {'mode':<7} {'ref %':>6} {'var %':>6} "
             f"{'diff pp':>8} {'95% CI':<17} {'rel %':>7} {'+/-':>7} {'pairs':>5} {'probl.':>6}"]
    for r in report.summary:
        ci = f"[{fmt(r['ci_low'], '+.1f')}, {fmt(r['ci_high'], '+.1f')}]" + ("*" if r["significant"] else "")
        lines.append(f"{r['variant']:<16} {r['reference']:<12} {r['model']:<20} {r['metric']:<5} {r['mode']:<7} "
                     f"{fmt(r['accuracy_reference'], '.1f'):>6} {fmt(r['accuracy_variant'], '.1f'):>6} "
                     f"{fmt(r['difference'], '+.2f'):>8} {ci:<17} {fmt(r['relative_change'], '+.1f'):>7} "
                     f"{r['gained']:>3}/{r['lost']:<3} {r['n_pairs']:>5} {r['n_problems']:>6}")
    lines.append("* significant: Holm-adjusted p (exact McNemar, or cluster-adjusted McNemar for clustered rows) "
                 "below 1 - level and the interval excludes 0")
    for a in report.averages:
        lines.append(f"mean over {a['n_models']} model(s): {a['variant']} vs {a['reference']} {a['metric']} {a['mode']}: "
                     f"{fmt(a['mean_difference'], '+.2f')} pp, relative change of the mean accuracy "
                     f"{fmt(a['relative_change'], '+.1f')}%")
    return "\n".join(lines)


def run(args) -> int:
    """Check the arguments and the output folder, then analyse while holding the folder's lock."""
    if args.n_boot < 1 or not 0 < args.level < 1:
        raise UserError("--n-boot must be >= 1 and --level between 0 and 1")
    out = fsguard.prepare_output_dir(args.out, "smmile analyze", force=args.force)
    with fsguard.OutputLock(out, f"the analysis folder {out}"):
        return analyse_into(args, out)


def analyse_into(args, out) -> int:
    warnings: list[str] = []

    def warn(message: str) -> None:
        print(message, file=sys.stderr)
        warnings.append(message)

    sets = load_sets(args.results, warn)
    notes: list[str] = []
    report = analyse(args.analysis, sets, args.n_boot, args.seed, args.level, args.exclude_gold_mismatch, notes)
    for note in notes:
        warn(f"warning: {note}")
    flips = pd.concat(report.flips, ignore_index=True)
    tables = {"summary": report.summary, "averages": report.averages, **report.extra, "flips": flips}
    meta = {"analysis": args.analysis, "settings": {"n_boot": args.n_boot, "seed": args.seed, "level": args.level,
                                                    "exclude_gold_mismatch": args.exclude_gold_mismatch},
            "sets": [{"label": s.label, "path": str(s.path.resolve()),
                      "files": sorted({r.source for r in s.records})} for s in sets.values()],
            "warnings": warnings}
    written = write_tables(out, args.analysis, tables, meta)
    print(console(report))
    print("Written: " + ", ".join(str(p) for p in written))
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return fd.guarded(lambda: run(args), interrupted="interrupted: smmile analyze stopped; nothing half-written")
