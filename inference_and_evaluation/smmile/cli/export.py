"""``smmile export inspect|eee|matrix``: the command line of ``smmile.export`` (issue #35)."""

from __future__ import annotations

import argparse
import importlib
import os

from ..scoring import estimates, stats_run
from . import common as fd

EXPORTS = {"matrix": "a models x items table per metric (CSV, Parquet) and a sidecar naming scorer, judge, dataset",
         "inspect": "one inspect_ai log per result, for `inspect view` (needs smmile[inspect])",
         "eee": "Every Eval Ever aggregate and instance-level records, validated (needs smmile[eee])"}


def build_parser() -> argparse.ArgumentParser:
    parser = fd.parser("Export scored results to the tools people already use; see docs/interop.md for what maps "
                       "to what and what is lost.", prog="smmile export")
    sub = parser.add_subparsers(dest="kind", required=True, metavar="{" + ",".join(EXPORTS) + "}")
    for kind, text in EXPORTS.items():
        p = sub.add_parser(kind, help=text, description=text, formatter_class=fd.HelpFormatter)
        for flag, text in (("--quiet", "fewer lines on stderr"), ("--verbose", "more lines on stderr")):
            p.add_argument(flag[1:3], flag, action="count", default=argparse.SUPPRESS, help=text)
        p.add_argument("results_dir", help="directory with result_*.csv (+ manifests, judge files)")
        p.add_argument("--out", required=kind != "matrix",
                       help="output folder" + (" (default: <results_dir>/matrix)" if kind == "matrix" else ""))
        p.add_argument("--force", action="store_true", help="write into a non-empty --out folder not made by smmile")
        if kind == "matrix":
            p.add_argument("--failures", choices=estimates.FAILURE_CHOICES, default=stats_run.StatsSettings.failures,
                           help="transport failures (failed requests): exclude = missing cells, as smmile stats; "
                                "wrong = 0 cells, the paper's rule. Refused and empty responses are 0 either way")
        if kind == "eee":
            p.add_argument("--skip-validation", action="store_true",
                           help="write without the every-eval-ever validator (it needs Python >= 3.12); a warning "
                                "says the records were not validated")
    return parser


def _run(a: argparse.Namespace) -> int:
    module = importlib.import_module(f"smmile.export.{'inspect_log' if a.kind == 'inspect' else a.kind}")
    options = {"failures": a.failures} if a.kind == "matrix" else {}
    if a.kind == "eee":
        options["validate"] = not a.skip_validation
    written = getattr(module, f"export_{a.kind}")(a.results_dir, a.out, force=a.force, **options)
    where = os.path.commonpath([os.path.dirname(w) for w in written]) if written else ""
    print(f"Written: {len(written)} file(s) under {where}" if written else "Nothing written.")
    return 0


def main(argv: list[str] | None = None) -> int:
    return fd.guarded(lambda: fd.parsed_main(build_parser(), argv, _run))
