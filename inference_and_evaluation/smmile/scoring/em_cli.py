"""``evaluate_EM.py`` / ``smmile em``: exact-match scoring of every open-format result CSV (spec §4).

Per file: ``<stem>_evaluation.json`` and a console report; with more than one result also
``model_comparison.txt``. A file that cannot be scored is reported on one stderr line and skipped
(the original exited at the first bad file); the exit status is then 1.
"""

from __future__ import annotations

import argparse

from smmile.scoring import comparison
from smmile.scoring.exact_match import ResultFileError, calculate_exact_match, write_json
from smmile.scoring.naming import em_patterns, evaluation_json_path, get_model_info
from smmile.scoring.runs import Outcome, check_results_dir, find_files, run_main


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description="Exact-match evaluation of SMMILE open-format results")
    parser.add_argument("results_dir", nargs="?", default="../results",
                        help="directory with result_*.csv files (default: ../results)")
    parser.add_argument("--model", default=None, help="file-name model token, e.g. qwen72B, llava_7b")
    parser.add_argument("--inference-mode", dest="inference_mode", default=None, help="0-shot or ICL")
    parser.add_argument("--strict-match", dest="strict_match", action="store_true",
                        help="raw string equality instead of normalised (flexible) matching")
    return parser


def score_file(csv_path, strict: bool, outcome: Outcome) -> dict | None:
    """Score one CSV, print its report, write its JSON; ``None`` if it was skipped."""
    info = get_model_info(csv_path)
    if not info.known:
        print(f"Skipping: {csv_path}")
        return None
    try:
        stats = calculate_exact_match(csv_path, strict=strict)
        out = evaluation_json_path(csv_path)
        write_json(stats, out)
    except ResultFileError as exc:
        outcome.fail(str(exc))
        return None
    except OSError as exc:
        outcome.fail(f"{csv_path}: cannot write results ({exc.strerror or exc})")
        return None
    print(comparison.format_file_report(stats))
    print(f"Results saved to: {out}")
    return stats


def score_files(files, strict: bool = False, outcome: Outcome | None = None) -> dict[str, dict]:
    """Score ``files`` in the given order; ``"<display>:<mode>" -> stats`` (a later file with the
    same key overwrites the earlier one but keeps its position, like the original's dict)."""
    outcome = outcome if outcome is not None else Outcome()
    results: dict[str, dict] = {}
    for csv_path in files:
        stats = score_file(csv_path, strict, outcome)
        if stats is not None:
            results[f"{stats['model']}:{stats['inference_mode']}"] = stats
    return results


def _run(args) -> int:
    check_results_dir(args.results_dir)
    files = find_files(args.results_dir, em_patterns(args.model, args.inference_mode),
                       args.model, args.inference_mode)
    if not files:
        return 1
    outcome = Outcome()
    results = score_files(files, args.strict_match, outcome)
    comparison.report_comparison(results, args.results_dir, "model_comparison.txt")
    if outcome.summary():
        print(outcome.summary())
    return outcome.exit_code


def main(argv: list[str] | None = None) -> int:
    """Entry point (``smmile em``); returns the exit status."""
    return run_main(_run, argv, build_parser())
