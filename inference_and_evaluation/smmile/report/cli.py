"""``smmile report RESULTS_DIR --out DIR``: a self-contained HTML report plus PNG/SVG figures.

Writes ``<out>/index.html`` (figures embedded, so it opens from disk without a server),
``<out>/report_data.json`` (the numbers shown) and the figure files in ``--figures``
(default ``<out>/figures``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

from smmile.errors import UserError
from smmile.frontdoor import guarded
from smmile.report import build, figures, html, sections
from smmile.scoring import bootstrap, stats

PAGE_NAME = "index.html"
DATA_NAME = "report_data.json"
NAV = (("main", "Main table"), ("gain", "ICL gain"), ("strat", "Stratified"),
       ("analyses", "Analyses"), ("runs", "Runs"))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="smmile report",
        description="One self-contained HTML page for a results directory: the paper's main table with "
                    "bootstrap CIs, ICL gain per model, stratified views, noise/order/permutation analyses and "
                    "the run manifests behind every number; figures as PNG + SVG.")
    parser.add_argument("results_dir", help="directory with result_*.csv (+ *_evaluationllm.json, "
                                            "model_stratification_*.json, *.manifest.json)")
    parser.add_argument("--out", default="report", help="output directory for index.html (default: ./report)")
    parser.add_argument("--figures", help="figure directory (default: <out>/figures)")
    parser.add_argument("--analyses", action="append", default=[], metavar="DIR",
                        help="output folder of `smmile analyze` / `smmile agreement` (repeatable)")
    parser.add_argument("--title", help="page title (default: from the results directory name)")
    parser.add_argument("--n-boot", type=int, default=bootstrap.DEFAULT_N_BOOT, help="bootstrap resamples (default 10000)")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    parser.add_argument("--level", type=float, default=bootstrap.DEFAULT_LEVEL, help="interval level (default 0.95)")
    parser.add_argument("--cluster", choices=stats.CLUSTER_CHOICES, default="auto",
                        help="auto: resample base problems when ids end in _perm_<k> (SMMILE++)")
    parser.add_argument("--alpha", type=float, default=0.05, help="significance level for the ICL gains (Holm)")
    parser.add_argument("--formats", default="png,svg", help="figure formats, comma-separated (default png,svg)")
    return parser


def _settings(args) -> build.Settings:
    if args.n_boot < 1:
        raise UserError("--n-boot must be at least 1")
    if not 0 < args.level < 1 or not 0 < args.alpha < 1:
        raise UserError("--level and --alpha must be between 0 and 1")
    return build.Settings(args.n_boot, args.seed, args.level, args.cluster, args.alpha)


def _formats(text: str) -> tuple[str, ...]:
    formats = tuple(f.strip().lower() for f in text.split(",") if f.strip())
    unknown = [f for f in formats if f not in html.MIME]
    if unknown or not formats:
        raise UserError(f"--formats must list png and/or svg, got {text!r}")
    return formats


def render(data, figs, page_dir: str) -> str:
    body = "".join([sections.warnings(data), sections.main_section(data, figs, page_dir),
                    sections.gain_section(data, figs, page_dir), sections.strat_section(data, figs, page_dir),
                    sections.analyses_section(data, page_dir), sections.runs_section(data)])
    return html.page(data.title, sections.header(data, len(data.runs)), list(NAV), body,
                     time.strftime("%Y-%m-%d %H:%M:%S %Z"))


def _json_safe(value):
    """NaN → None, numpy scalars → Python, recursively (for ``json.dump(allow_nan=False)``)."""
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if hasattr(value, "item") and callable(value.item):
        value = value.item()
    return None if isinstance(value, float) and math.isnan(value) else value


def write_report(args) -> tuple[str, list]:
    data = build.gather(args.results_dir, args.analyses, _settings(args), args.title)
    out = os.path.abspath(args.out)
    figs = figures.draw_all(data, os.path.abspath(args.figures or os.path.join(out, "figures")), _formats(args.formats))
    os.makedirs(out, exist_ok=True)
    page_path = os.path.join(out, PAGE_NAME)
    with open(page_path, "w", encoding="utf-8") as handle:
        handle.write(render(data, figs, out))
    with open(os.path.join(out, DATA_NAME), "w", encoding="utf-8") as handle:
        json.dump(_json_safe(build.to_json(data)), handle, indent=2, allow_nan=False)
        handle.write("\n")
    return page_path, data.warnings


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``smmile report``; 0 on success, 1 when inputs were skipped, 2 on bad input."""
    args = build_parser().parse_args(argv)
    return guarded(lambda: _report(args))


def _report(args) -> int:
    _formats(args.formats)
    page_path, warnings = write_report(args)
    for warning in warnings:
        print(f"warning: {warning}" if not warning.startswith("warning") else warning, file=sys.stderr)
    print(f"Report written to {page_path}")
    return 1 if warnings else 0
