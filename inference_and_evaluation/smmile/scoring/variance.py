"""The work of ``variance_analysis.py``: bootstrap mean ± std per (model, metric, mode) and the summary tables.

Faithful to spec §7: one legacy numpy stream seeded 42 consumed file after file in ``glob.glob`` order, the
EM bootstrap before the LLM bootstrap of each open file (``statistics.legacy_bootstrap``); the LLM cell with
the original's ``// 100`` (``metrics.metric_scores``). Differences (docs/deviations.md, V1-V8): the tables are
written once at the end and never over a table with more filled cells; broken inputs are one-line warnings
and exit status 1; ``--sorted`` and ``--ci`` are additions."""

from __future__ import annotations

import logging
import os
import sys
from dataclasses import dataclass, field

import numpy as np

from smmile.errors import UserError
from smmile.fsguard import check_writable_file
from smmile.record.naming import evaluationllm_json_path
from smmile.record.result_csv import ResultFileError
from smmile.record.run_record import RunRecord, read, scan
from smmile.scoring import statistics, stats_run, tables
from smmile.scoring.metrics import Metric, get_metric, metric_scores, metrics_for, read_rows
from smmile.scoring.scores import problem_count, replace_output, screen

log = logging.getLogger(__name__)

SEED = 42
INF = float("inf")


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
    results: dict = field(default_factory=dict)  # {model: {metric: {mode: (mean, std)}}}
    names: dict = field(default_factory=dict)  # row key -> LaTeX name (from the results' identities)
    problems: list = field(default_factory=list)  # one-line messages that make the exit status 1


def _warn(sink: list, message: str) -> None:
    line = " ".join(message.split())
    log.warning(line)
    sink.append(line)


def _score(result: RunRecord, metric: Metric, screened: tuple[dict, dict], mean_only: bool, rng,
           analysis: Analysis) -> Cell:
    """Load one metric's per-row scores and bootstrap them; a failure yields the original's (inf, inf).
    ``screened``: the CSVs read once (``results.screen``) and the reasons others cannot be scored."""
    frames, failures = screened
    try:
        if metric.source == "csv" and result.path in failures:
            raise ResultFileError(failures[result.path])
        scores = metric_scores(result, metric, legacy_floor=True, frame=frames.get(result.path))
    except ResultFileError as exc:
        _warn(analysis.problems, f"warning: {exc}; {metric.name} cell left as '-'")
        return Cell(metric.name, INF, INF, INF)
    if scores is None:
        path = evaluationllm_json_path(result.path)
        meaning = (f"note: 'inf ± inf' above is the original's way of printing \"no judge result\": {path.name} "
                   f"not found (evaluate_LLMJudge.py not run on it); its {metric.name} cell shows '-'")
        return Cell(metric.name, INF, INF, INF, meaning)
    values = scores.to_numpy()
    if mean_only:
        return Cell(metric.name, statistics.mean_only(values), None, len(values))
    mean, std = statistics.legacy_bootstrap(values, statistics.LEGACY_N_BOOT, rng)
    return Cell(metric.name, mean, std, len(values))


def analyse_file(result: RunRecord, screened: tuple[dict, dict], mean_only: bool, rng,
                 analysis: Analysis) -> None:
    """Score one result: MCQA for ``_mcqa`` files, else EM then LLM (this order consumes the stream)."""
    key, kind = result.identity.key, "Closed" if result.fmt == "mcqa" else "Open"
    print(f"Processing {result.path.name}: {key}, {result.mode}, {kind}")
    cells = [_score(result, metric, screened, mean_only, rng, analysis) for metric in metrics_for(result.fmt)]
    model_results = analysis.results.setdefault(key, {})
    analysis.names[key] = result.identity.latex
    for cell in cells:
        model_results.setdefault(cell.metric, {})[result.mode] = (cell.mean, cell.std)
        text = f"  {get_metric(cell.metric).label} ({cell.n} samples): {cell.mean:.2f}"
        std = INF if cell.std is None else cell.std
        print(text if mean_only else f"{text} ± {std:.2f}")
        if cell.meaning:
            sys.stdout.flush()
            log.warning(cell.meaning)


def list_csvs(directory: str, sort: bool = False) -> list[str]:
    """The paths of the result CSVs ``run_variance`` analyses (``glob.glob`` order, or sorted)."""
    return [os.fspath(r.path) for r in scan(directory, sort=sort, rules="variance")]


def analyse(files: list, mean_only: bool = False, seed: int = SEED) -> Analysis:
    """Run every file (``RunRecord``s or paths) through ONE legacy stream seeded ``seed``: a private
    ``RandomState(seed)`` draws what the original's ``np.random.seed(seed)`` did, leaving numpy's global
    state alone."""
    results = [f if isinstance(f, RunRecord) else read(f, "variance") for f in files]
    screened = screen(results, read_rows, problem_count)
    rng = np.random.RandomState(seed)
    analysis = Analysis()
    for result in results:
        analyse_file(result, screened, mean_only, rng, analysis)
    return analysis


def _write_table(path: str, text: str, analysis: Analysis, what: str) -> None:
    """Write one output unless the existing file has filled cells this run lacks (then warn, keep it)."""
    kept = replace_output(path, text, tables.table_entries(text), tables.table_entries, "filled cell(s)")
    if kept:
        _warn(analysis.problems, kept)
    else:
        print(f"{what} {path}")


def _report(analysis: Analysis, mean_only: bool, output_path: str, latex_path: str | None) -> None:
    """Write and print the final tables (the original rewrote them after every file; same end state)."""
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
    """Analyse the result CSVs of ``directory`` and write ``output`` (and ``latex_output``) into it; ``sort``:
    sorted file order instead of glob order. 0 when every cell was scored, 1 otherwise or when no CSV was found."""
    if not os.path.isdir(directory):
        raise UserError(f"Directory {directory} not found")
    output_path = os.path.join(directory, output)
    latex_path = os.path.join(directory, latex_output) if generate_table else None
    check_writable_file(output_path, "output file")
    if latex_path:
        check_writable_file(latex_path, "LaTeX output file")
    files = scan(directory, sort=sort, rules="variance")  # spec §7.2's name rules, no shards
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

