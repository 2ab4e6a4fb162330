"""The report's figures, drawn by ``smmile.scoring.plots`` and written as PNG + SVG files."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from smmile.errors import MissingDependency
from smmile.scoring import plots, stats

FORMATS = ("png", "svg")


@dataclass
class Figure:
    """One figure: ``files`` maps format → written path; ``section`` says where the page shows it."""

    key: str
    section: str
    title: str
    files: dict = field(default_factory=dict)


def _save(fig, out: str, key: str, formats) -> dict:
    paths = plots.save(fig, out, key, formats)
    return {os.path.splitext(p)[1][1:]: p for p in paths}


def accuracy_figures(data, out: str, formats) -> list[Figure]:
    found = []
    for metric in stats.METRICS:
        if any(r["metric"] == metric for r in data.estimates):
            key = f"accuracy_{metric.lower()}"
            files = _save(plots.accuracy_figure(data.estimates, metric), out, key, formats)
            found.append(Figure(key, "main", f"{metric}: 0-shot vs ICL accuracy with 95% CI", files))
    return found


def gain_figures(data, out: str, formats) -> list[Figure]:
    if not data.gains:
        return []
    files = _save(plots.icl_gain_figure(data.gains, data.settings.alpha), out, "icl_gain", formats)
    return [Figure("icl_gain", "gain", "ICL − 0-shot per model (paired 95% CI)", files)]


def stratification_figures(data, out: str, formats) -> list[Figure]:
    found = []
    for kind, strata in data.stratification.items():
        for flag in plots.stratification_flags(strata):
            key = f"stratification_{kind}_{flag}"
            title = f"{kind.upper()} accuracy (%) by {flag.removeprefix('flag_')}"
            files = _save(plots.stratification_figure(strata, flag, title), out, key, formats)
            found.append(Figure(key, f"strat_{kind}", title, files))
    return found


def draw_all(data, out: str, formats=FORMATS) -> list[Figure]:
    """Every figure for ``data`` into ``out``; without matplotlib a warning and no figures."""
    try:
        return accuracy_figures(data, out, formats) + gain_figures(data, out, formats) + \
            stratification_figures(data, out, formats)
    except MissingDependency as exc:
        data.warnings.append(f"figures left out: {exc}")
        return []
