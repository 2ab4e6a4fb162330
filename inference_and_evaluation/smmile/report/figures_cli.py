"""``smmile figures RESULTS [--out DIR]``: the report's figures for one results folder, without the page
(PNG at 300 dpi + SVG): accuracy bars with CIs, ICL gain, stratification heatmaps."""

from __future__ import annotations

import argparse
import os

from smmile import fsguard
from smmile.errors import UserError
from smmile.cli.common import HelpFormatter, guarded
from smmile.report import build, drawing, figures
from smmile.report.cli import formats_from
from smmile.report.stages import Stages
from smmile.scoring import bootstrap, plots, stats

OWNER = "smmile figures"
INTERRUPTED = "interrupted: figure files already written are complete; run the same command again for the rest"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="smmile figures", formatter_class=HelpFormatter,
                                     description="Paper-ready figures for a results folder (PNG 300 dpi + SVG): "
                                                 "accuracy bars with CIs, ICL gain, stratification heatmaps.")
    parser.add_argument("results_dir", help="folder with result_*.csv (+ *_evaluationllm.json, model_stratification_*.json)")
    parser.add_argument("--out", help="figure folder (default: figures/ beside results_dir, i.e. the repository's "
                                      "figures/ for ../results)")
    parser.add_argument("--n-boot", type=int, default=bootstrap.DEFAULT_N_BOOT, help="bootstrap resamples for the CIs")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    parser.add_argument("--level", type=float, default=bootstrap.DEFAULT_LEVEL, help="interval level")
    parser.add_argument("--cluster", choices=stats.CLUSTER_CHOICES, default="auto",
                        help="auto: resample base problems when ids end in _perm_<k>")
    parser.add_argument("--flags", nargs="*", help="stratification flags to plot (default: all)")
    parser.add_argument("--formats", default="png,svg", help="comma-separated: png and/or svg")
    parser.add_argument("--jobs", type=int, default=drawing.default_workers(), help="worker processes")
    parser.add_argument("--force", action="store_true",
                        help="write into an existing folder that an earlier `smmile figures` did not write")
    return parser


def default_out(results_dir: str) -> str:
    return os.path.join(os.path.dirname(os.path.abspath(results_dir)), "figures")


def only_placeholders(folder: str) -> bool:
    """The repository's figures/ holds nothing but its ``.gitkeep``: the default folder counts as empty."""
    return os.path.isdir(folder) and all(name.startswith(".") for name in os.listdir(folder))


def wanted(planned, flags) -> list:
    if not flags:
        return planned
    keep = set(flags) | {f"flag_{f}" for f in flags}
    return [(fig, job) for fig, job in planned if fig.place[0] != "strat" or fig.place[3] in keep]


def make_figures(args, stage, warnings: list) -> list[str]:
    if args.n_boot < 1 or not 0 < args.level < 1:
        raise UserError("--n-boot must be at least 1 and --level between 0 and 1")
    formats = formats_from(args.formats)
    out = args.out or default_out(args.results_dir)
    if not os.path.isdir(args.results_dir):
        raise UserError(f"results directory {args.results_dir} not found")
    force = args.force or (args.out is None and only_placeholders(out))
    fsguard.check_output_dir(out, OWNER, force)
    stage(f"statistics for {args.results_dir} ({args.n_boot} resamples)")
    settings = build.Settings(args.n_boot, args.seed, args.level, args.cluster)
    data = build.ReportData("", settings, warnings=warnings)
    data.sets.append(build.gather_set(None, args.results_dir, 0, settings, warnings, set()))
    planned = wanted(figures.plan(data, os.path.abspath(out), formats), args.flags)
    if not planned:
        return []
    fsguard.prepare_output_dir(out, OWNER, force)
    stage(f"figures: {len(planned)} to draw ({len(planned) * len(formats)} files) on {max(1, args.jobs)} worker(s)")
    plots.pyplot()  # imported once here, so the forked workers start with it
    with drawing.Pool(max(1, args.jobs)) as pool:
        done = figures.collect(figures.submit(pool, planned))
    return [path for fig in done for path in fig.files.values()]


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return guarded(lambda: _run(args), interrupted=INTERRUPTED)


def _run(args) -> int:
    """0 when every input was drawn, 1 when some were skipped (each named on stderr) or nothing was."""
    import sys

    warnings: list[str] = []
    written = make_figures(args, Stages("smmile figures"), warnings)
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if not written:
        print(f"warning: nothing to plot in {args.results_dir}", file=sys.stderr)
        return 1
    print(f"{len(written)} figure file(s) written to {os.path.dirname(written[0])}")
    return 1 if warnings else 0
