"""``smmile report``: one self-contained HTML page for one or more results folders (the work is
``smmile.report.page``)."""

from __future__ import annotations

import argparse
from dataclasses import fields

from ..report.workers import default_workers
from ..report.page import FigureFlags, ReportRequest, run_report
from ..plotting import SIZES
from . import common as fd

FIGURE_SIZE_HELP = ("page: as the report shows them (text at least 9 pt); paper: one column, 3.3 in wide, 7-8 pt text; "
                    "slide: 16:9 (10 x 5.6 in, 13-16 pt text)")
INTERRUPTED = ("interrupted: the report was not written (figure files already written are complete); "
               "run the same command again to build it")


def build_parser() -> argparse.ArgumentParser:
    parser = fd.parser(
        "One self-contained HTML page for one or more results folders (e.g. SMMILE and SMMILE++ side by side): the "
        "paper's main table with bootstrap CIs, ICL gain per model, stratified views, noise/order/permutation "
        "analyses, a problem explorer (with --dataset) and the run manifests behind every number; paper-ready "
        "figures as PNG (300 dpi) + SVG.", prog="smmile report")
    parser.add_argument("results", nargs="+", metavar="[LABEL=]RESULTS",
                        help="results folder(s) with result_*.csv (+ *_evaluationllm.json, model_stratification_*.json, "
                             "*.manifest.json); the first is the reference of the side-by-side comparison. LABEL "
                             "defaults to SMMILE, or SMMILE++ for permuted problem ids")
    parser.add_argument("--plusplus", metavar="DIR", help="a SMMILE++ results folder to show beside the first "
                                                          "(same as adding SMMILE++=DIR)")
    parser.add_argument("--dataset", action="append", default=[], metavar="[LABEL=]DATASET",
                        help="dataset of the results (hub id, local path, demo): adds the images, ICL examples, flags "
                             "and MCQA options to the problem explorer (without it the explorer shows what the result "
                             "files hold). Without LABEL it serves every folder (SMMILE++ folders get its SMMILE++ "
                             "counterpart: demo -> demo-plusplus, smmile -> smmile/SMMILE-plusplus; any other value "
                             "is used as it is); repeatable")
    parser.add_argument("--revision", help="dataset revision (hub) for --dataset")
    parser.add_argument("--out", default="report", help="output folder for index.html")
    parser.add_argument("--figures", help="figure folder (default: <out>/figures)")
    parser.add_argument("--analyses", action="append", default=[], metavar="DIR",
                        help="output folder of `smmile analyze` / `smmile agreement` (repeatable)")
    parser.add_argument("--title", help="page title (default: from the results folders)")
    parser.add_argument("--reviews", nargs="+", default=[], metavar="REVIEWS_JSON",
                        help="reviews.json file(s) exported by the problem explorer: a table of each judged result's "
                             "accuracy re-scored with the reviewers' labels, and the disputed verdicts; reviews of "
                             "answers the results do not have are refused and counted")
    parser.add_argument("--strict", action="store_true",
                        help="exit 2 when --reviews holds a review of an answer the results do not have")
    add_figure_flags(parser, "smmile report", "worker processes for figures and thumbnails (1: draw in this process)",
                     "interval level; significance is the step-down minP-adjusted p < 1 - level, the interval excluding 0")
    return parser


def add_figure_flags(parser: argparse.ArgumentParser, command: str, jobs_help: str,
                     level_help: str = "interval level") -> None:
    """The flags of ``FigureFlags`` (``smmile report`` and ``smmile figures``)."""
    fd.add_resampling_flags(parser, level_help)
    parser.add_argument("--formats", default="png,svg", help="figure formats, comma-separated: png and/or svg")
    parser.add_argument("--figure-size", choices=list(SIZES), default="page", help=FIGURE_SIZE_HELP)
    parser.add_argument("--jobs", type=int, default=default_workers(), help=jobs_help)
    parser.add_argument("--force", action="store_true",
                        help=f"write into an existing folder that an earlier `{command}` did not write")


def figure_flags(a: argparse.Namespace) -> dict:
    return {f.name: getattr(a, f.name) for f in fields(FigureFlags)}


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``smmile report``; 0 once the page is written (warnings on stderr and on the page), 2 on
    bad input."""
    a = build_parser().parse_args(argv)
    request = ReportRequest(
        results=tuple(a.results), out=a.out, plusplus=a.plusplus, datasets=tuple(a.dataset), revision=a.revision,
        figures=a.figures, analyses=tuple(a.analyses), title=a.title, reviews=tuple(a.reviews), strict=a.strict,
        **figure_flags(a))
    return fd.guarded(lambda: report(request), interrupted=INTERRUPTED)


def report(request: ReportRequest) -> int:
    print(f"Report written to {run_report(request)}")
    return 0
