"""``evaluate_EM.py`` / ``smmile em``: the command line of ``smmile.scoring.em_run``."""

from __future__ import annotations

import argparse

from ..scoring.em_run import run_em
from . import common as fd


def build_parser() -> argparse.ArgumentParser:
    p = fd.parser("Exact-match evaluation of SMMILE open-format results")
    p.add_argument("results_dir", nargs="?", default="../results",
                   help="directory with result_*.csv files (default: ../results)")
    p.add_argument("--model", default=None,
                   help="file-name model token, e.g. qwen72B, llava_7b; the comparison then goes to "
                        "model_comparison_model-<model>.txt (the full model_comparison.txt is kept)")
    p.add_argument("--inference-mode", default=None,
                   help="0-shot or ICL; the comparison then goes to model_comparison[_model-<model>]_mode-<mode>.txt")
    p.add_argument("--strict-match", action="store_true",
                   help="raw string equality instead of normalised (flexible) matching")
    return p


def main(argv: list[str] | None = None) -> int:
    return fd.guarded(lambda: fd.parsed_main(build_parser(), argv, lambda a: run_em(
        a.results_dir, model=a.model, mode=a.inference_mode, strict=a.strict_match)))
