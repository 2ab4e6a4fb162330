"""``stratify.py`` / ``smmile stratify``: the command line of ``smmile.scoring.stratify_run``."""

from __future__ import annotations

import argparse

from ..scoring.stratify_run import EXTENSIONS, run_stratify
from . import common as fd


def build_parser() -> argparse.ArgumentParser:
    p = fd.parser("Stratified accuracy of SMMILE results by problem flags")
    p.add_argument("results_dir", nargs="?", default="../results",
                   help="directory with the *_evaluation(llm).json files")
    p.add_argument("--eval_type", choices=sorted(EXTENSIONS), required=True,
                   help="em: *_evaluation.json, llm: *_evaluationllm.json")
    p.add_argument("--model", default=None, help="file-name model token, e.g. qwen72B")
    p.add_argument("--inference-mode", default=None, help="0-shot or ICL")
    p.add_argument("--dataset_id", default=None,
                   help="hub id (original flag; dated ids accepted). Default: the dataset the results' manifests "
                        "name (results of several are refused), else smmile/SMMILE as the original")
    p.add_argument("--dataset", default=None, help="hub id, local parquet folder, or 'demo' (overrides --dataset_id; "
                                                   "default as --dataset_id)")
    p.add_argument("--revision", default=None, help="hub revision (commit/tag) of the dataset")
    return p


def main(argv: list[str] | None = None) -> int:
    return fd.guarded(lambda: fd.parsed_main(build_parser(), argv, lambda a: run_stratify(
        a.results_dir, a.eval_type, model=a.model, mode=a.inference_mode, dataset=a.dataset or a.dataset_id,
        revision=a.revision)))
