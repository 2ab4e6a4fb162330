"""``smmile figures``: the report's figures for one results folder, without the page (the work is
``smmile.report.figures_only``)."""

from __future__ import annotations

import argparse
import os

from ..report.figures_only import FiguresRequest, write_figures
from . import common as fd
from .report import add_figure_flags, figure_flags

INTERRUPTED = "interrupted: figure files already written are complete; run the same command again for the rest"


def build_parser() -> argparse.ArgumentParser:
    parser = fd.parser("Paper-ready figures for a results folder (PNG 300 dpi + SVG): accuracy bars with CIs, ICL gain, "
                       "stratification heatmaps.", prog="smmile figures")
    parser.add_argument("results_dir", help="folder with result_*.csv (+ *_evaluationllm.json, model_stratification_*.json)")
    parser.add_argument("--out", help="figure folder (default: figures/ beside results_dir, i.e. the repository's "
                                      "figures/ for ../results)")
    parser.add_argument("--flags", nargs="*", help="stratification flags to plot (default: all)")
    add_figure_flags(parser, "smmile figures", "worker processes (1: draw in this process)")
    return parser


def main(argv: list[str] | None = None) -> int:
    a = build_parser().parse_args(argv)
    request = FiguresRequest(a.results_dir, out=a.out, flags=None if a.flags is None else tuple(a.flags),
                             **figure_flags(a))
    return fd.guarded(lambda: figures(request), interrupted=INTERRUPTED)


def figures(request: FiguresRequest) -> int:
    written, status = write_figures(request)
    if written:
        print(f"{len(written)} figure file(s) written to {os.path.dirname(written[0])}")
    return status
