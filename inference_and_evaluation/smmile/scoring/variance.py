"""The work of ``variance_analysis.py``: bootstrap mean ± std per (model, metric, mode) and the summary tables.

Faithful to spec §7 by default: one legacy numpy stream seeded 42 is consumed file after file in
``glob.glob`` order, the EM bootstrap before the LLM bootstrap of each open file, 1000 resamples
per cell (vectorised, same random numbers as the original loop; see ``statistics.legacy_bootstrap``).

Files are found and identified by ``scoring.results`` (run manifest first, spec §7.2's name rules
otherwise; no shards; one of two duplicates), checked whole and scored with
``scoring.metrics.metric_scores`` (the LLM cell with the original's ``// 100``).

Differences from the original (docs/deviations.md, "Statistics and variance_analysis", V1-V8): the
tables are written once at the end instead of after every file (same final content), never over a
table with more filled cells; unreadable or broken inputs give a one-line warning and exit status 1;
a missing directory or unwritable output is a one-line error with status 2; ``--sorted`` and ``--ci``
are additions.
"""

from __future__ import annotations

import logging
import os
import sys
from dataclasses import dataclass, field

import numpy as np

from smmile.errors import UserError
from smmile.fsguard import check_writable_file
from smmile.scoring import statistics, stats_run, tables
from smmile.scoring.exact_match import ResultFileError
from smmile.scoring.metrics import Metric, get_metric, metric_scores, metrics_for, read_rows
from smmile.scoring.naming import evaluationllm_json_path
from smmile.scoring.results import RunRecord, load_results, problem_count, replace_output, result_for_path, screen

log = logging.getLogger(__name__)

SEED = 42
INF = float("inf")


# -- one file --------------------------------------------------------------------------------------
@dataclass
class Cell:
    """One bootstrap result: mean and std in percent (std None in mean-only mode), sample count."""

    metric: str
    mean: float
    std: float | None
    n: float
    meaning: str = ""  # for the original's "inf ± inf" line: what it means, printed beside it (stderr)


@dataclass
class Analysis:
    """Everything a run produced: the nested results table and the problems met on the way."""

    results: dict = field(default_factory=dict)
    names: dict = field(default_factory=dict)  # row key -> LaTeX name (from the results' identities)
    problems: list = field(default_factory=list)  # one-line messages that make the exit status 1
    notes: list = field(default_factory=list)  # one-line messages that do not


def _warn(sink: list, message: str) -> None:
    """Log a one-line message (stderr) and remember it."""
    line = " ".join(message.split())
    log.warning(line)
    sink.append(line)


@dataclass
class Inputs:
    """The result CSVs read once before the analysis (``scoring.results.screen``)."""

    frames: dict = field(default_factory=dict)  # path -> DataFrame
    failures: dict = field(default_factory=dict)  # path -> one-line reason the CSV cannot be scored


def read_inputs(results: list[RunRecord]) -> Inputs:
    """Read every result CSV (checked whole, with its metric's columns); flag problem-count outliers."""
    frames, failures = screen(results, read_rows, problem_count)
    return Inputs(frames, failures)


def _failed(analysis: Analysis, metric: str, message: str) -> Cell:
    _warn(analysis.problems, f"warning: {message}; {metric} cell left as '-'")
    return Cell(metric, INF, INF, INF)


def _score(result: RunRecord, metric: Metric, inputs: Inputs, mean_only: bool, rng, analysis: Analysis) -> Cell:
    """Load one metric's per-row scores and bootstrap them; a failure yields the original's (inf, inf)."""
    if metric.source == "csv" and result.path in inputs.failures:
        return _failed(analysis, metric.name, inputs.failures[result.path])
    try:
        scores = metric_scores(result, metric, legacy_floor=True, frame=inputs.frames.get(result.path))
    except ResultFileError as exc:
        return _failed(analysis, metric.name, str(exc))
    if scores is None:
        path = evaluationllm_json_path(result.path)
        meaning = (f"note: 'inf ± inf' above is the original's way of printing \"no judge result\": {path.name} "
                   f"not found (evaluate_LLMJudge.py not run on it); its {metric.name} cell shows '-'")
        analysis.notes.append(meaning)
        return Cell(metric.name, INF, INF, INF, meaning)
    values = scores.to_numpy()
    if mean_only:
        return Cell(metric.name, statistics.mean_only(values), None, len(values))
    mean, std = statistics.legacy_bootstrap(values, statistics.LEGACY_N_BOOT, rng)
    return Cell(metric.name, mean, std, len(values))


def analyse_file(result: RunRecord, inputs: Inputs, mean_only: bool, rng, analysis: Analysis) -> list[Cell]:
    """Score one result: MCQA for ``_mcqa`` files, else EM then LLM (this order consumes the stream)."""
    key, kind = result.identity.key, "Closed" if result.fmt == "mcqa" else "Open"
    print(f"Processing {result.path.name}: {key}, {result.mode}, {kind}")
    cells = [_score(result, metric, inputs, mean_only, rng, analysis) for metric in metrics_for(result.fmt)]
    model_results = analysis.results.setdefault(key, {})
    analysis.names[key] = result.identity.latex
    for cell in cells:
        model_results.setdefault(cell.metric, {})[result.mode] = (cell.mean, cell.std)
        print(_console_line(cell, mean_only))
        if cell.meaning:
            sys.stdout.flush()
            log.warning(cell.meaning)
    return cells


def _console_line(cell: Cell, mean_only: bool) -> str:
    text = f"  {get_metric(cell.metric).label} ({cell.n} samples): {cell.mean:.2f}"
    if mean_only:
        return text
    std = INF if cell.std is None else cell.std
    return f"{text} ± {std:.2f}"


# -- a directory -------------------------------------------------------------------------------------
def find_csvs(directory: str, sort: bool = False) -> list[RunRecord]:
    """The result CSVs of ``directory`` (``results.load_results`` with spec §7.2's name rules):
    ``glob.glob`` file-system order like the original, or sorted (``--sorted``). Shards, our own
    ``stats_*.csv`` and CSVs that are neither ``result_*`` nor have a manifest are left out; of two
    files for one (model, mode, format) one is kept, with a warning."""
    return load_results(directory, sort=sort, rules="variance")


def list_csvs(directory: str, sort: bool = False) -> list[str]:
    """``find_csvs`` as paths."""
    return [os.fspath(r.path) for r in find_csvs(directory, sort)]


def analyse(files: list, mean_only: bool = False, seed: int = SEED) -> Analysis:
    """Run every file (``RunRecord``s or paths) through ONE legacy RNG stream seeded ``seed`` (the
    original's global stream).

    A private ``RandomState(seed)`` produces exactly the numbers ``np.random.seed(seed)`` would,
    without touching numpy's global state.
    """
    results = [f if isinstance(f, RunRecord) else result_for_path(f, "variance") for f in files]
    inputs = read_inputs(results)
    rng = np.random.RandomState(seed)
    analysis = Analysis()
    for result in results:
        analyse_file(result, inputs, mean_only, rng, analysis)
    return analysis


# -- the tables ------------------------------------------------------------------------------------
def _write_table(path: str, text: str, analysis: Analysis, what: str) -> bool:
    """Write one output unless the existing file has filled cells this run lacks (then warn, keep it)."""
    kept = replace_output(path, text, tables.table_entries(text), tables.table_entries, "filled cell(s)")
    if kept:
        _warn(analysis.problems, kept)
        return False
    print(f"{what} {path}")
    return True


def _report(analysis: Analysis, mean_only: bool, output_path: str, latex_path: str | None) -> None:
    """Write and print the final tables (the original rewrote them after every file; same end state);
    the LaTeX table only with a ``latex_path``."""
    table = tables.text_table(analysis.results, mean_only)
    print()
    _write_table(output_path, table, analysis, "Results saved to")
    print("\nFinal Results Table:")
    print(table)
    if latex_path and analysis.results:
        _write_table(latex_path, tables.latex_table(analysis.results, mean_only, analysis.names),
                     analysis, "LaTeX table saved to")


def run_variance(directory: str, *, output: str = "evaluation_results.txt", mean_only: bool = False,
                 generate_table: bool = False, latex_output: str = "latex_table.tex", sort: bool = False,
                 ci: bool = False) -> int:
    """Analyse the result CSVs of ``directory`` and write ``output`` (and, with ``generate_table``,
    ``latex_output``) into it; ``sort``: sorted file order instead of glob order; ``ci``: also the
    ``smmile stats`` estimates. 0 when every cell was scored, 1 otherwise or when no CSV was found."""
    if not os.path.isdir(directory):
        raise UserError(f"Directory {directory} not found")
    output_path = os.path.join(directory, output)
    latex_path = os.path.join(directory, latex_output) if generate_table else None
    check_writable_file(output_path, "output file")
    if latex_path:
        check_writable_file(latex_path, "LaTeX output file")
    files = find_csvs(directory, sort=sort)
    if not files:
        log.error(f"No CSV files found in {directory}")
        return 1
    print(f"Found {len(files)} CSV files to evaluate")
    print(f"Using {statistics.LEGACY_N_BOOT} bootstrap samples for variance estimation")
    analysis = analyse(files, mean_only)
    _report(analysis, mean_only, output_path, latex_path)
    if ci:  # the `smmile stats` estimates, as an extra: a user error there does not change the exit status
        try:
            print(stats_run.run_stats(directory, compare="none")[1])
        except UserError as exc:
            log.error(f"error: {exc}")
    if analysis.problems:
        log.warning(f"warning: {len(analysis.problems)} problem(s): cell(s) that could not be scored (shown as '-') "
                    "or outputs kept (see above)")
    return 1 if analysis.problems else 0

