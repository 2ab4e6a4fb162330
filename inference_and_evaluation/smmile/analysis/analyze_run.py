"""The work of `smmile analyze`: each model's accuracy on the original against the dataset variants
(``analysis.variants``) or the ICL diagnostics (``analysis.diagnostics``); outputs in docs/analyses.md."""

from __future__ import annotations

import logging

import pandas as pd

from ..errors import MissingDependency
from ..scoring import signflip
from ..scoring.estimates import FAILURES, check_resampling
from ..scoring.statistics import DEFAULT_LEVEL, DEFAULT_N_BOOT
from ..scoring.stats_run import dataset_versions
from . import diagnostics, option_probs, variants
from .result_sets import fmt, load_sets, output_folder, write_tables

# the analyses of `smmile analyze`: modules with ANALYSES and analyse(kind, sets, settings, notes) -> variants.Report
MODULES = (variants, diagnostics)
ANALYSES = tuple(kind for module in MODULES for kind in module.ANALYSES)

log = logging.getLogger(__name__)


def _ci(r: dict) -> str:
    return f"[{fmt(r['ci_low'], '+.1f')}, {fmt(r['ci_high'], '+.1f')}]" + ("*" if r["significant"] else "")


def _family(kind: str) -> str:
    return f"each {diagnostics.FAMILY}" if kind in diagnostics.ANALYSES else "one family: every comparison of the run"


def console(report: variants.Report) -> str:
    first = report.summary[0]
    significant = (f"* significant: adjusted p (p_adjusted) < {1 - first['level']:.2g}, {variants.PROCEDURE} within "
                   f"{_family(report.kind)}; test: sign-flip randomisation over base problems, mid-p, exact up to "
                   f"2^{signflip.EXACT_MAX} patterns, else seeded Monte Carlo; each interval comes from the same "
                   f"procedure and family, so it excludes 0 exactly when * is shown. Estimand: {first['estimand']}")
    if report.kind in diagnostics.ANALYSES:
        lines = [f"{'comparison':<36} {'model':<20} {'metric':<5} {'A %':>6} {'B %':>6} {'A-B pp':>8} {'CI':<17} "
                 f"{'pairs':>5}"]
        lines += [f"{r['comparison']:<36} {r['model']:<20} {r['metric']:<5} {fmt(r['accuracy_variant'], '.1f'):>6} "
                  f"{fmt(r['accuracy_reference'], '.1f'):>6} {fmt(r['difference'], '+.2f'):>8} {_ci(r):<17} "
                  f"{r['n_pairs']:>5}" for r in report.summary]
        lines += [f"{r['set']}: {r['not_changed']} chosen example(s) could not be changed (kept their answer); gold "
                  f"answer among the examples in {r['gold_among_examples']} problem(s)"
                  for r in report.extra.get("unchanged", []) if r["not_changed"] is not None]
        lines += [f"trend {r['model']} {r['metric']}: {fmt(r['trend_slope'], '+.2f')} pp per example "
                  f"[{fmt(r['trend_ci_low'], '+.2f')}, {fmt(r['trend_ci_high'], '+.2f')}], p = "
                  f"{fmt(r['trend_p_value'], '.3g')} (k = {r['trend_ks']}, {r['trend_problems']} problems)"
                  for r in report.extra.get("curve", []) if r["k"] == 0 and "trend_slope" in r]
        lines += [option_probs.NOTE] if any(r["metric"] == option_probs.METRIC for r in report.summary) else []
        return "\n".join(lines + [f"comparison A − B (A %, B %: the two sides); {significant}"])
    lines = [f"{'variant':<16} {'vs':<12} {'model':<20} {'metric':<5} {'mode':<7} {'ref %':>6} {'var %':>6} "
             f"{'diff pp':>8} {'95% CI':<17} {'rel %':>7} {'+/-':>7} {'pairs':>5} {'probl.':>6}"]
    lines += [f"{r['variant']:<16} {r['reference']:<12} {r['model']:<20} {r['metric']:<5} {r['mode']:<7} "
              f"{fmt(r['accuracy_reference'], '.1f'):>6} {fmt(r['accuracy_variant'], '.1f'):>6} "
              f"{fmt(r['difference'], '+.2f'):>8} {_ci(r):<17} {fmt(r['relative_change'], '+.1f'):>7} "
              f"{r['gained']:>3}/{r['lost']:<3} {r['n_pairs']:>5} {r['n_problems']:>6}" for r in report.summary]
    lines.append(f"{significant}; failed/refused/empty rows: {first['failures']}")
    lines += [f"mean over {a['n_models']} model(s): {a['variant']} vs {a['reference']} {a['metric']} {a['mode']}: "
              f"{fmt(a['mean_difference'], '+.2f')} pp, relative change of the mean accuracy "
              f"{fmt(a['relative_change'], '+.1f')}% (mean of per-model relative changes over "
              f"{a['n_models_relative']} of {a['n_models']} model(s))" for a in report.averages]
    return "\n".join(lines)


def run_analyze(analysis: str, results: list[str], *, out: str = "analysis", force: bool = False,
                n_boot: int = DEFAULT_N_BOOT, seed: int = 0, level: float = DEFAULT_LEVEL,
                include_gold_mismatch: bool = False, weight: str = "row", failures: str = FAILURES) -> str:
    """Write the tables of ``analysis`` on ``results`` (``[LABEL=]PATH``) to ``out``; returns the console text."""
    check_resampling(n_boot, level)
    settings = {"n_boot": n_boot, "seed": seed, "level": level, "include_gold_mismatch": include_gold_mismatch,
                "weight": weight, "failures": failures}
    with output_folder(out, "smmile analyze", force, "analysis") as (folder, warnings):
        sets = load_sets(results)
        for message in dataset_versions([r for found in sets.values() for r in found.records]):
            log.warning(message)
        notes: list[str] = []
        diagnosing = analysis in diagnostics.ANALYSES
        try:
            module = next(m for m in MODULES if analysis in m.ANALYSES)
            report = module.analyse(analysis, sets, settings, notes)
        finally:  # what was left out is said even when nothing could be compared
            for note in notes:
                log.warning(f"warning: {note}")
        tables = {"summary": report.summary, **({} if diagnosing else {"averages": report.averages}), **report.extra,
                  "flips": pd.concat(report.flips, ignore_index=True)}
        missing = diagnostics.missing_quantities(list(sets)) if analysis == "diagnostics" else []
        for line in missing:
            log.warning(f"note: not computed (missing runs): {line}")
        meta = {"analysis": analysis, "settings": settings,
                "correction": f"{variants.PROCEDURE} within {_family(analysis)}, on sign-flip mid-p-values over "
                              "base problems; intervals from the same procedure",
                **({"missing": missing} if missing else {}),
                "sets": [{"label": s.label, "path": str(s.path.resolve()),
                          "files": sorted({r.source for r in s.records})} for s in sets.values()],
                "warnings": warnings}
        written = write_tables(folder, analysis, tables, meta)
        if analysis == "shots":
            try:
                written += diagnostics.draw_curve(report.extra["curve"], folder, level)
            except MissingDependency as exc:
                log.warning(f"warning: the curve's figure was not drawn ({exc})")
        return console(report) + "\nWritten: " + ", ".join(str(p) for p in written)
