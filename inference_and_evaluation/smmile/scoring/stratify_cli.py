"""``stratify.py`` / ``smmile stratify``: accuracy per problem flag (spec §6).

Reads ``*_evaluation.json`` (``--eval_type em``) or ``*_evaluationllm.json`` (``llm``), the dataset's
flags through ``smmile.data.load.load_problems``, and writes ``model_stratification_<eval_type>.json``
plus (addition) ``model_stratification_<eval_type>_ci.json`` with Wilson intervals per stratum.
"""

from __future__ import annotations

import argparse
import json
import os

from smmile.errors import UserError
from smmile.scoring.exact_match import write_json
from smmile.scoring.naming import get_model_info, stratify_patterns
from smmile.scoring.runs import Outcome, check_results_dir, find_files, run_main
from smmile.scoring.stratify import (StratifyError, format_flag_table, stratify_accuracies, stratum_intervals,
                                     valid_flags)

EXTENSIONS = {"em": "evaluation", "llm": "evaluationllm"}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description="Stratified accuracy of SMMILE results by problem flags")
    p.add_argument("results_dir", nargs="?", default="../results", help="directory with the *_evaluation(llm).json files")
    p.add_argument("--eval_type", "--eval-type", dest="eval_type", choices=sorted(EXTENSIONS), required=True,
                   help="em: *_evaluation.json, llm: *_evaluationllm.json")
    p.add_argument("--model", default=None, help="file-name model token, e.g. qwen72B")
    p.add_argument("--inference-mode", "--inference_mode", dest="inference_mode", default=None, help="0-shot or ICL")
    p.add_argument("--dataset_id", "--dataset-id", dest="dataset_id", default=None,
                   help="hub id (original flag; default smmile/SMMILE, dated ids accepted)")
    p.add_argument("--dataset", default=None, help="hub id, local parquet folder, or 'demo' (overrides --dataset_id)")
    p.add_argument("--revision", default=None, help="hub revision (commit/tag) of the dataset")
    return p


def load_dataset_problems(args) -> dict:
    """``problem_id -> Problem`` for all problems (no image filtering)."""
    from smmile.data.load import load_problems

    dataset = args.dataset or args.dataset_id
    try:
        problems = load_problems(dataset, args.revision)
    except UserError:
        raise
    except Exception as exc:  # hub/network/parquet problems → one line
        raise UserError(f"cannot load dataset {dataset or 'smmile/SMMILE'}: {type(exc).__name__}: {exc}") from None
    print(f"Number of problems in the dataset: {len(problems)}")
    return {p.problem_id: p for p in problems}


def stratify_file(path, problems_by_id, flags, outcome: Outcome):
    """(key, strata) for one evaluation JSON, or None if it was skipped."""
    info = get_model_info(path)
    if not info.known:
        print(f"Skipping: {path}")
        return None
    try:
        with open(path) as handle:
            accuracies = json.load(handle)["problem_accuracies"]
        return info.key, stratify_accuracies(accuracies, problems_by_id, flags, info.mode)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        reason = exc if isinstance(exc, StratifyError) else f"cannot read ({type(exc).__name__}: {exc})"
        outcome.fail(f"{path}: {reason}")
        return None


def _run(args) -> int:
    check_results_dir(args.results_dir)
    ext = EXTENSIONS[args.eval_type]
    files = find_files(args.results_dir, stratify_patterns(ext, args.model, args.inference_mode),
                       args.model, args.inference_mode)
    if not files:
        return 1
    problems_by_id = load_dataset_problems(args)
    flags = valid_flags(list(problems_by_id.values()))
    outcome, results = Outcome(), {}
    for path in files:
        found = stratify_file(path, problems_by_id, flags, outcome)
        if found is not None:
            results[found[0]] = found[1]
    for flag in flags:
        if results:
            print(format_flag_table(flag, results))
    if results:  # never replace an existing file with an empty one
        base = os.path.join(os.fspath(args.results_dir), f"model_stratification_{args.eval_type}")
        write_json(results, base + ".json")
        write_json({key: stratum_intervals(strata, flags) for key, strata in results.items()}, base + "_ci.json")
        print(f"Stratification results saved to: {base}.json (intervals: {base}_ci.json)")
    if outcome.summary():
        print(outcome.summary())
    return outcome.exit_code


def main(argv: list[str] | None = None) -> int:
    """Entry point (``smmile stratify``); returns the exit status."""
    return run_main(_run, argv, build_parser())
