"""Console reports (spec §4.5) and the comparison report ``model_comparison*.txt`` (spec §4.6).

``results`` everywhere is an insertion-ordered mapping ``"<display>:<mode>" -> stats dict`` (the
dicts written to ``*_evaluation.json`` / ``*_evaluationllm.json``), in file-discovery order."""

from __future__ import annotations

import logging
import os
import re
from collections import Counter
from itertools import takewhile
from typing import Callable, Iterable, Mapping

from smmile.scoring.scores import replace_output

log = logging.getLogger(__name__)

RULE_WIDTH = 60
SUMMARY_WIDTH = 80
FILE_RULE_WIDTH = 70
EM_TITLE = "EXACT MATCH"
EM_LABEL = "Exact Match"


# -- per-file console report (§4.5) ---------------------------------------------------------------
def format_file_report(stats: Mapping, title: str = EM_TITLE, label: str = EM_LABEL,
                       extra_lines: Iterable[str] = ()) -> str:
    """The per-file console block: counts, accuracy, per-problem accuracy, incorrect ids."""
    lines = ["=" * RULE_WIDTH, f"{title} EVALUATION RESULTS FOR {stats['model']} ({stats['inference_mode']})",
             "=" * RULE_WIDTH, f"Original examples: {stats['original_count']}"]
    if stats["excluded_count"] > 0:
        lines.append(f"Excluded examples: {stats['excluded_count']}")
    lines += [f"Total examples evaluated: {stats['total_examples']}",
              f"Correct answers: {stats['correct_examples']}", *extra_lines,
              f"{label} accuracy: {stats['accuracy']:.2f}%", "-" * RULE_WIDTH]
    accuracies, incorrect = stats["problem_accuracies"], Counter(stats["incorrect_examples"])
    if len(accuracies) > 1:
        lines += ["Per-problem accuracy:"] + [f"  Problem {pid}: {acc:.2f}%" for pid, acc in accuracies.items()]
    if incorrect:
        lines += ["Problem IDs with incorrect answers:"] + [
            f"  Problem {pid}: {incorrect[pid]} incorrect" for pid in sorted(incorrect)]
    lines.append("=" * RULE_WIDTH)
    return "\n".join(lines)


# -- comparison (§4.6) ----------------------------------------------------------------------------
_HEAD = f"{'Model':<26} | {'Mode':<10} | {'Accuracy (%)':<12} | {'Excluded/Total':<15} | "


def sort_results(results: Mapping[str, Mapping]) -> list[tuple[str, Mapping]]:
    """0-shot keys first, then by descending accuracy; ties keep insertion order (stable sort)."""
    return sorted(results.items(), key=lambda kv: (0 if "0-shot" in kv[0] else 1, -kv[1]["accuracy"]))


def _rows(results: Mapping[str, Mapping], rule: str, last: Callable[[Mapping], str]) -> list[str]:
    """One row per result in ``sort_results`` order, ``rule`` where the mode changes; ``last(stats)``: the
    row's last cells."""
    lines, previous = [], None
    for _, stats in sort_results(results):
        if previous is not None and stats["inference_mode"] != previous:
            lines.append(rule)
        previous = stats["inference_mode"]
        share = f"{stats['excluded_count']}/{stats['original_count']}"
        lines.append(f"{stats['model']:<26} | {stats['inference_mode']:<10} | {stats['accuracy']:<12.2f} | "
                     f"{share:<15} | {last(stats)}")
    return lines


def format_console_summary(results: Mapping[str, Mapping], label: str = EM_LABEL) -> str:
    """Console table: each row shows its own word count and the error count."""
    rows = _rows(results, "-" * SUMMARY_WIDTH, lambda stats: f"{stats['word_count']:<10.2f} | {stats['err_count']:<15}")
    return "\n".join(["=" * SUMMARY_WIDTH, f"MODEL COMPARISON SUMMARY ({label.upper()})", "=" * SUMMARY_WIDTH,
                      f"{_HEAD}{'Word Count':<10} | {'Error Count':<15}", "-" * SUMMARY_WIDTH] + rows)


def format_comparison_file(results: Mapping[str, Mapping]) -> str:
    """Text of ``model_comparison*.txt``. KEEP (spec §9 item 33): every row shows the word count of the LAST
    row in sorted order, because the original reused the console loop's variable."""
    ordered = sort_results(results)
    words = ordered[-1][1]["word_count"] if ordered else 0.0
    lines = ["MODEL COMPARISON SUMMARY", "=" * RULE_WIDTH, "", f"{_HEAD}{'Word Count':<15}", "-" * FILE_RULE_WIDTH]
    text = "\n".join(lines + _rows(results, "-" * FILE_RULE_WIDTH, lambda stats: f"{words:<10.2f}")) + "\n\n"
    return text + "".join(_per_problem_block(results, mode) for mode in ("0-shot", "ICL"))


def _per_problem_block(results: Mapping[str, Mapping], mode: str) -> str:
    """Per-problem accuracies of every model with ``mode`` (insertion order), or "" if <2 models or <2 problems."""
    models = [stats for stats in results.values() if stats["inference_mode"] == mode]
    problem_ids = {pid for stats in models for pid in stats["problem_accuracies"]}
    if len(models) <= 1 or len(problem_ids) <= 1:
        return ""
    header = f"{'Problem ID':<12} | " + " | ".join(f"{s['model']:<12}" for s in models)
    lines = ["", f"PER-PROBLEM ACCURACY COMPARISON (%) - {mode}", "-" * RULE_WIDTH, header, "-" * len(header)]
    for pid in sorted(problem_ids):
        cells = "".join(f"{s['problem_accuracies'].get(pid, 0):<12.2f} | " for s in models)
        lines.append(f"{pid!s:<12} | {cells}".rstrip(" |"))
    return "\n".join(lines) + "\n\n"


def comparison_filename(base: str, model: str | None = None, mode: str | None = None) -> str:
    """``<base>.txt``, or for a run filtered by ``--model`` / ``--inference-mode``
    ``<base>_model-<model>_mode-<mode>.txt`` (the parts given, made file-safe), so that a filtered run never
    replaces the full comparison."""
    parts = [base] + [f"{label}-{re.sub(r'[^A-Za-z0-9._-]+', '-', value)}"
                      for label, value in (("model", model), ("mode", mode)) if value]
    return "_".join(parts) + ".txt"


def result_keys(text: str) -> set[tuple[str, str]]:
    """(model, mode) of every row of a comparison file's summary table (rows up to the first blank line
    after the header rule)."""
    lines = text.split("\n")
    rows = takewhile(bool, lines[lines.index("-" * FILE_RULE_WIDTH) + 1:])
    return {tuple(cell.strip() for cell in line.split(" | ")[:2]) for line in rows if line != "-" * FILE_RULE_WIDTH}


def report_comparison(results: Mapping[str, Mapping], results_dir: str | os.PathLike, filename: str,
                      label: str = EM_LABEL) -> str | None:
    """With more than one result: print the console summary and write the comparison file (spec §4.6) unless
    an existing one holds a result this one lacks; that warning is returned (the caller says it and exits with
    status 1), else None."""
    if len(results) <= 1:
        return None
    print(format_console_summary(results, label))
    path = os.path.join(os.fspath(results_dir), filename)
    keys = {(stats["model"], stats["inference_mode"]) for stats in results.values()}
    kept = replace_output(path, format_comparison_file(results), keys, result_keys, "result(s)")
    if not kept:
        print(f"Comparison results saved to: {path}")
    return kept
