"""``variance_analysis.py``: bootstrap mean ± std per (model, metric, mode) and the summary tables.

Faithful to spec §7 by default: one legacy numpy stream seeded 42 is consumed file after file in
``glob.glob`` order, the EM bootstrap before the LLM bootstrap of each open file, 1000 resamples
per cell (vectorised, same random numbers as the original loop; see ``bootstrap.legacy_bootstrap``).

Differences from the original (docs/deviations.md, "Statistics and variance_analysis"): the tables
are written once at the end instead of after every file (same final content); unreadable inputs
give a one-line warning and exit status 1; a missing directory is a one-line error with status 2;
``--sorted`` and ``--ci`` are additions.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys
from dataclasses import dataclass, field

import numpy as np

from smmile.errors import UserError
from smmile.frontdoor import guarded
from smmile.scoring import bootstrap, tables
from smmile.scoring.exact_match import ResultFileError, flexible_matches, read_result_csv
from smmile.scoring.naming import evaluationllm_json_path, extract_model_info

SEED = 42
INF = float("inf")
EM_COLUMNS = ("true_answer", "generated_answer")
MCQA_COLUMNS = ("is_correct",)


class MissingJudgeFile(ResultFileError):
    """No ``_evaluationllm.json`` beside an open CSV (the judge was not run): not an error."""


# -- correctness vectors (spec §7.2 step 4) ----------------------------------------------------------
def mcqa_correctness(csv_path: str) -> np.ndarray:
    """``str(is_correct).lower() == 'true'`` per row, CSV order."""
    frame = read_result_csv(csv_path, MCQA_COLUMNS)
    return np.array([str(v).lower() == "true" for v in frame["is_correct"]], dtype=bool)


def em_correctness(csv_path: str) -> np.ndarray:
    """Flexible exact match (§4.4, pandas NA semantics) per row, CSV order."""
    frame = read_result_csv(csv_path, EM_COLUMNS)
    return np.array(flexible_matches(frame), dtype=bool)


def llm_correctness(csv_path: str) -> np.ndarray:
    """Judge ``problem_accuracies`` (JSON order) floor-divided by 100, as the original did."""
    json_path = os.fspath(evaluationllm_json_path(csv_path))
    if not os.path.exists(json_path):
        raise MissingJudgeFile(f"{json_path}: not found (judge not run?)")
    try:
        with open(json_path) as handle:
            accuracies = json.load(handle)["problem_accuracies"]
        return np.array([value // 100 for value in accuracies.values()], dtype=np.float64)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ResultFileError(f"{json_path}: unusable judge file ({type(exc).__name__}: {exc})") from None


# -- one file --------------------------------------------------------------------------------------
@dataclass
class Cell:
    """One bootstrap result: mean and std in percent (std None in mean-only mode), sample count."""

    metric: str
    mean: float
    std: float | None
    n: float


@dataclass
class Analysis:
    """Everything a run produced: the nested results table and the problems met on the way."""

    results: dict = field(default_factory=dict)
    problems: list = field(default_factory=list)  # one-line messages that make the exit status 1
    notes: list = field(default_factory=list)  # one-line messages that do not


def _warn(sink: list, message: str) -> None:
    """Print a one-line message to stderr and remember it."""
    line = " ".join(message.split())
    print(line, file=sys.stderr)
    sink.append(line)


def _score(loader, path: str, metric: str, mean_only: bool, rng, analysis: Analysis) -> Cell:
    """Load a correctness vector and bootstrap it; a failure yields the original's (inf, inf)."""
    try:
        values = loader(path)
    except MissingJudgeFile as exc:
        _warn(analysis.notes, f"note: {exc}; {metric} cell left as '-'")
        return Cell(metric, INF, INF, INF)
    except ResultFileError as exc:
        _warn(analysis.problems, f"warning: {exc}; {metric} cell left as '-'")
        return Cell(metric, INF, INF, INF)
    if mean_only:
        return Cell(metric, bootstrap.mean_only(values), None, len(values))
    mean, std = bootstrap.legacy_bootstrap(values, bootstrap.LEGACY_N_BOOT, rng)
    return Cell(metric, mean, std, len(values))


def analyse_file(path: str, mean_only: bool, rng, analysis: Analysis) -> list[Cell]:
    """Score one CSV: MCQA for ``*_mcqa.csv``, else EM then LLM (this order consumes the stream)."""
    info = extract_model_info(path)
    print(f"Processing {os.path.basename(path)}: {info.model}, {info.mode}, {info.kind}")
    if info.is_closed:
        cells = [_score(mcqa_correctness, path, "MCQA", mean_only, rng, analysis)]
    else:
        cells = [_score(em_correctness, path, "EM", mean_only, rng, analysis),
                 _score(llm_correctness, path, "LLM", mean_only, rng, analysis)]
    model_results = analysis.results.setdefault(info.model, {})
    for cell in cells:
        model_results.setdefault(cell.metric, {})[info.mode] = (cell.mean, cell.std)
        print(_console_line(cell, mean_only))
    return cells


_CONSOLE_LABELS = {"MCQA": "MCQA Accuracy", "EM": "EM Accuracy", "LLM": "LLM-as-a-Judge Accuracy"}


def _console_line(cell: Cell, mean_only: bool) -> str:
    text = f"  {_CONSOLE_LABELS[cell.metric]} ({cell.n} samples): {cell.mean:.2f}"
    if mean_only:
        return text
    std = INF if cell.std is None else cell.std
    return f"{text} ± {std:.2f}"


# -- a directory -------------------------------------------------------------------------------------
# CSVs that ``smmile stats`` (and ``--ci``) write into a results directory: not result files.
OWN_OUTPUTS = ("stats_estimates.csv", "stats_comparisons.csv")


def list_csvs(directory: str, sort: bool = False) -> list[str]:
    """``glob.glob(directory/*.csv)`` — filesystem order like the original, or sorted (``--sorted``).
    Our own ``stats_*.csv`` outputs are left out (the original predates them)."""
    files = [f for f in glob.glob(os.path.join(directory, "*.csv")) if os.path.basename(f) not in OWN_OUTPUTS]
    return sorted(files) if sort else files


def analyse(files: list[str], mean_only: bool = False, seed: int = SEED) -> Analysis:
    """Run every file through ONE legacy RNG stream seeded ``seed`` (the original's global stream).

    A private ``RandomState(seed)`` produces exactly the numbers ``np.random.seed(seed)`` would,
    without touching numpy's global state.
    """
    rng = np.random.RandomState(seed)
    analysis = Analysis()
    for path in files:
        analyse_file(path, mean_only, rng, analysis)
    return analysis


def write_text(path: str, text: str) -> None:
    """Write ``text`` exactly (UTF-8, no trailing newline added)."""
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)


# -- command line ------------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description="Evaluate model accuracy on MCQA and exact match tasks (bootstrap mean ± std per "
                    "model, metric and mode; spec §7).",
        epilog="Exit status: 0 ok; 1 some file could not be scored (its cell shows '-') or no CSV "
               "found; 2 directory not found.")
    parser.add_argument("directory", help="Directory containing result CSV files")
    parser.add_argument("--output", default="evaluation_results.txt", help="Output file for results table")
    parser.add_argument("--mean_only", action="store_true", help="Compute only mean (no bootstrap variances)")
    parser.add_argument("--generate_table", action="store_true", help="Generate LaTeX table with formatted values")
    parser.add_argument("--latex_output", default="latex_table.tex", help="Output file for LaTeX table")
    parser.add_argument("--sorted", action="store_true",
                        help="(addition) process the CSVs in sorted name order instead of the filesystem "
                             "order of glob.glob, so the ± values are the same on every machine. The "
                             "default keeps the original's order-dependent single random stream.")
    parser.add_argument("--ci", action="store_true",
                        help="(addition) also report point estimates with seeded 95%% percentile bootstrap "
                             "CIs (as `smmile stats`; cluster bootstrap for SMMILE++ _perm_k ids) and write "
                             "stats_estimates.csv/json and stats_table.tex into the directory")
    return parser


def _report(analysis: Analysis, directory: str, args) -> None:
    """Write and print the final tables (the original rewrote them after every file; same end state)."""
    table = tables.text_table(analysis.results, args.mean_only)
    output_path = os.path.join(directory, args.output)
    write_text(output_path, table)
    print(f"\nResults saved to {output_path}")
    print("\nFinal Results Table:")
    print(table)
    if args.generate_table and analysis.results:
        latex_path = os.path.join(directory, args.latex_output)
        write_text(latex_path, tables.latex_table(analysis.results, args.mean_only))
        print(f"LaTeX table saved to {latex_path}")


def _run(args) -> int:
    directory = args.directory
    if not os.path.isdir(directory):
        raise UserError(f"Directory {directory} not found")
    files = list_csvs(directory, sort=args.sorted)
    if not files:
        print(f"No CSV files found in {directory}", file=sys.stderr)
        return 1
    print(f"Found {len(files)} CSV files to evaluate")
    print(f"Using {bootstrap.LEGACY_N_BOOT} bootstrap samples for variance estimation")
    analysis = analyse(files, args.mean_only)
    _report(analysis, directory, args)
    if args.ci:
        from smmile.scoring import stats
        stats.main([directory, "--compare", "none"])
    if analysis.problems:
        print(f"warning: {len(analysis.problems)} cell(s) could not be scored (shown as '-')", file=sys.stderr)
    return 1 if analysis.problems else 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``variance_analysis.py``; returns the exit status."""
    args = build_parser().parse_args(argv)
    return guarded(lambda: _run(args))
