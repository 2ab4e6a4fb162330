"""The work of ``evaluate_EM.py`` / ``smmile em``: exact-match scoring of every open-format result CSV (spec §4):
per file ``<stem>_evaluation.json`` and a console report, with more than one result ``model_comparison*.txt``.
A file that cannot be scored is reported on one stderr line and skipped (the original exited at the first);
an existing output holding results this run lacks is kept with a warning; the exit status is then 1."""

from __future__ import annotations

import json
import os

from smmile.fsguard import check_writable_dir
from smmile.scoring import comparison
from smmile.record.naming import em_patterns, evaluation_json_path
from smmile.record.result_csv import ResultFileError
from smmile.record.run_record import COLUMNS, RunRecord, read
from smmile.scoring.exact_match import calculate_exact_match, json_text
from smmile.scoring.scores import (Outcome, check_results_dir, find_result_files, problem_count, replace_output,
                                    screened)


def score_file(result: RunRecord, strict: bool, outcome: Outcome, frame=None) -> dict | None:
    """Score one result, print its report, write its JSON; ``None`` if it was skipped (or its existing
    JSON, made from more problems, was kept)."""
    try:
        stats = calculate_exact_match(result.path, strict=strict, model=result.identity.scoring_name,
                                      mode=result.mode, frame=frame)
    except ResultFileError as exc:
        outcome.fail(str(exc))
        return None
    out = evaluation_json_path(result.path)
    try:
        kept = replace_output(out, json_text(stats), {str(pid) for pid in stats["problem_accuracies"]},
                              lambda text: set(json.loads(text)["problem_accuracies"]), "problem(s)")
    except OSError as exc:
        outcome.fail(f"{result.path}: cannot write results ({exc.strerror or exc})")
        return None
    if kept:
        outcome.warn(kept)
        return None
    print(comparison.format_file_report(stats))
    print(f"Results saved to: {out}")
    return stats


def score_files(files, strict: bool = False, outcome: Outcome | None = None) -> dict[str, dict]:
    """Score ``files`` (``RunRecord``s or paths) in the given order; ``"<scoring name>:<mode>" -> stats`` (a
    later file with the same key overwrites the earlier one but keeps its position, like the original's dict)."""
    outcome = outcome if outcome is not None else Outcome()
    found = [f if isinstance(f, RunRecord) else read(f) for f in files]
    results: dict[str, dict] = {}
    for result, frame in screened(found, lambda r: r.frame(COLUMNS["open"]), problem_count, outcome):
        stats = score_file(result, strict, outcome, frame)
        if stats is not None:
            results[f"{stats['model']}:{stats['inference_mode']}"] = stats
    return results


def run_em(results_dir: str | os.PathLike, *, model: str | None = None, mode: str | None = None,
           strict: bool = False) -> int:
    """Score the results in ``results_dir`` (only ``model`` / ``mode`` when given; ``strict``: raw string
    equality); 0 when all were scored, 1 when none was found or some were skipped or kept."""
    check_results_dir(results_dir)
    found = find_result_files(results_dir, em_patterns(model, mode), model, mode)
    if not found:
        return 1
    for folder in sorted({str(results_dir)} | {str(r.path.parent) for r in found}):
        check_writable_dir(folder, "results folder")
    outcome = Outcome()
    results = score_files(found, strict, outcome)
    kept = comparison.report_comparison(results, results_dir,
                                        comparison.comparison_filename("model_comparison", model, mode))
    if kept:
        outcome.warn(kept)
    return outcome.finish()
