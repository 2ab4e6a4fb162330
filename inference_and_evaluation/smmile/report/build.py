"""Gather everything the report shows (no rendering, no plotting): one ``ReportSet`` per results folder
(estimates with intervals, ICL − 0-shot comparisons, strata with an interval each, run provenance, the faithful
variance_analysis table); across folders, each model's change from the first folder, paired by base problem
(``smmile.analysis.variants.compare``); the analyses (``report.analyses``)."""

from __future__ import annotations

import os
import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from smmile import logs
from smmile.errors import UserError
from smmile.record import original
from smmile.record.run_record import scan
from smmile.report import analyses as analyses_mod
from smmile.report import manifests, names
from smmile.scoring import estimates as est, metrics, stratify, tables
from smmile.scoring.scores import ResultSet, load_records
from smmile.scoring.statistics import Resampling
from smmile.scoring.stats_run import dataset_versions, with_costs


@dataclass
class ReportSet(ResultSet):
    """One results folder's records (``path`` absolute) and what the report derives from them."""

    slug: str = ""  # file- and anchor-safe label ("smmile", "smmile-pp")
    estimates: list = field(default_factory=list)  # estimates.estimates rows
    gains: list = field(default_factory=list)  # estimates.comparisons rows, kind icl_vs_0shot
    runs: dict = field(default_factory=dict)  # CSV basename -> manifests.RunInfo
    stratification: dict = field(default_factory=dict)  # "em"/"llm" -> stratify JSON
    strat_ci: dict = field(default_factory=dict)  # "em"/"llm" -> {key: {flag: {label: interval entry}}}
    variance_table: str | None = None  # variance_analysis's evaluation_results.txt, verbatim

    def models(self) -> list[str]:
        return model_order(self.estimates)


@dataclass
class ReportData:
    title: str
    settings: Resampling
    sets: list = field(default_factory=list)  # ReportSet
    changes: list = field(default_factory=list)  # per-model change of a set from the first one
    analysis_views: list = field(default_factory=list)  # analyses.AnalysisView
    reviews_html: str = ""  # sections.reviews_section (smmile report --reviews)
    warnings: list = field(default_factory=list)
    explorer: dict | None = None  # explorer.build's payload, when --dataset is given

    def models(self) -> list[str]:
        return model_order([row for s in self.sets for row in s.estimates])


def model_order(rows: list[dict], key: str = "model") -> list[str]:
    """The paper's row order (baselines first, then sorted keys), as variance_analysis."""
    return tables.row_order({row[key] for row in rows})


def gain_table(gains: list[dict]) -> list[tuple[str, dict]]:
    """``[(model, {metric: comparison row})]`` for the ICL − 0-shot rows, paper row order."""
    by_model: dict = {}
    for row in gains:
        by_model.setdefault(row["model_a"], {})[row["metric"]] = row
    return [(m, by_model[m]) for m in model_order(gains, "model_a")]


def _stratification(results_dir: str, kind: str, ci: bool, warnings: list) -> dict | None:
    data = original.stratification(results_dir, kind, ci)
    if isinstance(data, Exception):
        path = os.path.join(results_dir, f"model_stratification_{kind}{'_ci' if ci else ''}.json")
        warnings.append(f"{path}: unreadable ({type(data).__name__}: {data}); not shown")
    return data if isinstance(data, dict) else None


def strat_flags(strata: dict) -> list[str]:
    """Flags in file order (keys ``<flag>_accuracy`` of the first model)."""
    first = next(iter(strata.values()), {})
    return [key[: -len("_accuracy")] for key in first if key.endswith("_accuracy")]


def load_stratification(results_dir: str, warnings: list, permuted: bool = False) -> tuple[dict, dict]:
    """stratify's ``model_stratification_<kind>.json`` and an interval per stratum: from its complete ``_ci``
    file, else from the plain file, which counts rows (for SMMILE++ a warning says so)."""
    plain, with_ci = {}, {}
    for kind in ("em", "llm"):
        path = os.path.join(results_dir, f"model_stratification_{kind}.json")
        data = _stratification(results_dir, kind, False, warnings)
        if not data or not all(isinstance(v, dict) for v in data.values()):
            continue
        plain[kind] = data
        ci_path = path[: -len(".json")] + "_ci.json"
        ci = _stratification(results_dir, kind, True, warnings)
        if not ci or set(ci) != set(data):
            ci = {key: stratify.stratum_intervals(strata, strat_flags(data)) for key, strata in data.items()}
            if permuted:
                warnings.append(f"{path}: no matching {os.path.basename(ci_path)}; strata are counted in rows, not "
                                "base problems (rerun stratify.py for base-problem counts and clustered intervals)")
        with_ci[kind] = ci
    return plain, with_ci


def default_label(records: list, taken: set, results_dir: str) -> str:
    label = "SMMILE++" if ResultSet("", Path(results_dir), records).permuted else "SMMILE"
    if label in taken:
        label = os.path.basename(os.path.abspath(results_dir)) or label
    while label in taken:
        label += "'"
    return label


def slug(label: str, index: int) -> str:
    """A file- and anchor-safe name for a set label (``SMMILE++`` -> ``smmile-pp``)."""
    text = re.sub(r"[^a-z0-9]+", "-", label.lower().replace("++", "-pp")).strip("-")
    return text or f"set{index + 1}"


@contextmanager
def for_the_page(warnings: list):
    """The warnings logged in the block go to ``warnings`` (without their ``warning: ``), said after the page."""
    with logs.kept_warnings(shown=False) as said:
        try:
            yield
        finally:
            warnings += [message.removeprefix("warning: ") for message in said]


def gather_set(label: str | None, results_dir: str, index: int, settings: Resampling, warnings: list,
               taken: set) -> ReportSet:
    if not os.path.isdir(results_dir):
        raise UserError(f"results directory {results_dir} not found")
    with for_the_page(warnings):
        records = load_records(results_dir)
    warnings += [message.removeprefix("warning: ") for message in dataset_versions(records)]
    label = label or default_label(records, taken, results_dir)
    found = ReportSet(label, Path(os.path.abspath(results_dir)), records, slug(label, index))
    s = settings
    found.estimates = with_costs(est.estimates(records, s.n_boot, s.seed, s.cluster, s.level), records)
    paper = [r for r in records if metrics.get_metric(r.metric).paper]  # the paper's metrics' ICL gains
    with for_the_page(warnings):
        found.gains = est.comparisons(paper, "icl", s.n_boot, s.seed, s.cluster, s.level)
    names.learn(r.result.identity for r in records if r.result is not None)
    with logs.silenced():  # the scan load_records made, its warnings already kept
        results = scan(results_dir, rules="variance")
    found.runs = {r.csv.name: manifests.run_info(os.fspath(r.csv)) for r in sorted(results, key=lambda r: r.csv.name)}
    found.stratification, found.strat_ci = load_stratification(results_dir, warnings, found.permuted)
    found.variance_table = original.variance_table(results_dir)
    return found


def set_changes(sets: list[ReportSet], settings: Resampling) -> list[dict]:
    """For every later set and (model, metric, mode) it shares with the first: later − first, paired by base
    problem."""
    from smmile.analysis.variants import compare

    if len(sets) < 2:
        return []
    reference = {(r.model, r.metric, r.mode): r for r in sets[0].records}
    rows = []
    for other in sets[1:]:
        for record in other.records:
            ref = reference.get((record.model, record.metric, record.mode))
            if ref is None:
                continue
            row, _ = compare(ref, record, True, settings.n_boot, settings.seed, settings.level)
            rows.append({**row, "set": other.label, "reference_set": sets[0].label})
    return rows


def gather(specs: list[tuple[str | None, str]], analyses_dirs=(), settings: Resampling | None = None,
           title: str | None = None) -> ReportData:
    """Everything the report shows for ``specs`` (``(label or None, path)``, the first is the reference) and
    the analysis output folders."""
    for directory in analyses_dirs:
        if not os.path.isdir(directory):
            raise UserError(f"analyses directory {directory} not found")
    settings = settings or Resampling()
    data = ReportData(title or "", settings)
    for index, (label, path) in enumerate(specs):
        found = gather_set(label, path, index, settings, data.warnings, {s.label for s in data.sets})
        if not found.records and len(specs) > 1:  # e.g. an empty --plusplus folder: said, not shown as empty
            raise UserError(f"{path} ({found.label}) holds no scorable result file (result_*.csv)"
                            + (f": {'; '.join(data.warnings)}" if data.warnings else "") + "; pass a results folder")
        if found.label in {s.label for s in data.sets}:
            raise UserError(f"two result folders are labelled {found.label!r}; write LABEL=PATH to tell them apart")
        data.sets.append(found)
    data.title = title or "Results: " + " vs ".join(s.label for s in data.sets)  # the folders: in the header
    data.changes = set_changes(data.sets, settings)
    data.analysis_views = analyses_mod.load_analyses(list(analyses_dirs), data.warnings)
    if not any(s.estimates for s in data.sets) and not data.analysis_views:
        why = "; ".join(data.warnings)  # each skipped input and why, as smmile stats says them
        raise UserError(f"no scorable result files in {', '.join(path for _, path in specs)}"
                        + (f" ({why})" if why else ""))
    return data


def to_json(data: ReportData) -> dict:
    """The numbers of the page, machine-readable (``report_data.json``)."""
    return {"settings": data.settings.__dict__,
            "sets": [{"label": s.label, "results_dir": s.results_dir, "estimates": s.estimates,
                      "icl_gains": s.gains,
                      "runs": {name: {"manifest": info.manifest, "judge": info.judge,
                                      "status": manifests.summary(info)["status"]} for name, info in s.runs.items()}}
                     for s in data.sets],
            "changes": data.changes,
            "analyses": sorted({v.path for v in data.analysis_views}), "warnings": data.warnings}
