"""Gather everything the report shows from a results directory (no rendering, no plotting).

Numbers come from ``smmile.scoring.stats`` (percentile bootstrap CIs, paired ICL − 0-shot
comparisons with exact McNemar and Holm), the table layout from ``smmile.scoring.tables`` (the
paper's rows, columns and display names), provenance from the run manifests.
"""

from __future__ import annotations

import glob
import json
import os
from dataclasses import dataclass, field

from smmile.errors import UserError
from smmile.report import analyses as analyses_mod
from smmile.report import manifests
from smmile.scoring import stats, tables

STRAT_KINDS = ("em", "llm")
VARIANCE_TABLE = "evaluation_results.txt"  # variance_analysis.py's default --output


@dataclass
class Settings:
    n_boot: int = 10_000
    seed: int = 0
    level: float = 0.95
    cluster: str = "auto"
    alpha: float = 0.05


@dataclass
class ReportData:
    results_dir: str
    title: str
    settings: Settings
    estimates: list = field(default_factory=list)  # stats.estimates rows
    gains: list = field(default_factory=list)  # stats.comparisons rows, kind icl_vs_0shot
    runs: dict = field(default_factory=dict)  # CSV basename -> manifests.RunInfo
    stratification: dict = field(default_factory=dict)  # "em"/"llm" -> stratify JSON
    strat_ci: dict = field(default_factory=dict)  # "em"/"llm" -> stratify _ci JSON
    analysis_tables: list = field(default_factory=list)
    analysis_images: list = field(default_factory=list)
    variance_table: str | None = None  # variance_analysis's evaluation_results.txt, verbatim
    warnings: list = field(default_factory=list)


def model_order(rows: list[dict], key: str = "model") -> list[str]:
    """The paper's row order (baselines first, then sorted keys), as variance_analysis."""
    models = {row[key] for row in rows}
    return tables.priority_rows(models) + tables.other_rows(models)


def main_table(estimates: list[dict]) -> list[tuple[str, list]]:
    """``[(model, [estimate row or None per tables.COLUMNS])]`` in the paper's row order."""
    cells = {(r["model"], r["metric"], r["mode"]): r for r in estimates}
    return [(m, [cells.get((m, metric, mode)) for metric, mode in tables.COLUMNS]) for m in model_order(estimates)]


def gain_table(gains: list[dict]) -> list[tuple[str, dict]]:
    """``[(model, {metric: comparison row})]`` for the ICL − 0-shot rows, paper row order."""
    by_model: dict = {}
    for row in gains:
        by_model.setdefault(row["model_a"], {})[row["metric"]] = row
    return [(m, by_model[m]) for m in model_order(gains, "model_a")]


def result_csvs(results_dir: str) -> list[str]:
    return sorted(p for p in glob.glob(os.path.join(results_dir, "*.csv"))
                  if os.path.basename(p) not in stats.OWN_OUTPUTS)


def _read_json(path: str, warnings: list) -> dict | None:
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
        return data if isinstance(data, dict) else None
    except (OSError, ValueError) as exc:
        warnings.append(f"{path}: unreadable ({type(exc).__name__}: {exc}); not shown")
        return None


def read_text(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError):
        return None


def load_stratification(results_dir: str, warnings: list) -> tuple[dict, dict]:
    """stratify's ``model_stratification_<kind>.json`` and its ``_ci`` companion, when present."""
    plain, with_ci = {}, {}
    for kind in STRAT_KINDS:
        for target, suffix in ((plain, ""), (with_ci, "_ci")):
            path = os.path.join(results_dir, f"model_stratification_{kind}{suffix}.json")
            if os.path.exists(path):
                data = _read_json(path, warnings)
                if data:
                    target[kind] = data
    return plain, with_ci


def compute_stats(data: ReportData) -> None:
    """Estimates and ICL gains (same seed for every cell, so independent of file order)."""
    s = data.settings
    records = stats.load_records(data.results_dir, data.warnings.append)
    data.estimates = stats.estimates(records, s.n_boot, s.seed, s.cluster, s.level)
    data.gains = stats.comparisons(records, "icl", s.n_boot, s.seed, s.cluster, s.level)


def gather(results_dir: str, analyses_dirs=(), settings: Settings | None = None, title: str | None = None) -> ReportData:
    """Everything the report shows for ``results_dir`` (and the optional analysis output folders)."""
    if not os.path.isdir(results_dir):
        raise UserError(f"results directory {results_dir} not found")
    for directory in analyses_dirs:
        if not os.path.isdir(directory):
            raise UserError(f"analyses directory {directory} not found")
    data = ReportData(os.path.abspath(results_dir), title or f"SMMILE results: {os.path.basename(os.path.abspath(results_dir))}",
                      settings or Settings())
    compute_stats(data)
    data.runs = {os.path.basename(p): manifests.run_info(p) for p in result_csvs(results_dir)}
    data.stratification, data.strat_ci = load_stratification(results_dir, data.warnings)
    data.analysis_tables, data.analysis_images = analyses_mod.load_analyses(list(analyses_dirs))
    data.variance_table = read_text(os.path.join(results_dir, VARIANCE_TABLE))
    if not data.estimates and not data.analysis_tables:
        raise UserError(f"no scorable result files in {results_dir}")
    return data


def to_json(data: ReportData) -> dict:
    """The numbers of the page, machine-readable (``report_data.json``)."""
    return {"results_dir": data.results_dir, "settings": data.settings.__dict__,
            "estimates": data.estimates, "icl_gains": data.gains,
            "runs": {name: {"manifest": info.manifest, "judge": info.judge,
                            "status": manifests.summary(info)["status"]} for name, info in data.runs.items()},
            "analyses": [t.path for t in data.analysis_tables], "warnings": data.warnings}
