"""The variance_analysis summary tables (spec §7.3 text, §7.4 LaTeX), byte for byte.

``results`` is ``{model: {metric: {mode: (mean, std)}}}`` with metric in LLM/EM/MCQA and mode in
0-shot/ICL; ``std`` is ``None`` in mean-only mode; a failed cell holds ``(inf, inf)``.
"""

from __future__ import annotations

import math
from typing import Callable, Mapping

from smmile.identity import latex_for_key
from smmile.scoring.metrics import METRICS

HEADER = "Model Name || LLM, 0-shot || LLM, ICL || EM, 0-shot || EM, ICL || MCQA, 0-shot || MCQA, ICL"
COLUMNS = tuple((metric, mode) for metric in METRICS for mode in ("0-shot", "ICL"))
PRIORITY_MODELS = ("majority", "random", "text only")
EMPTY_TABLE = "No results found."

Results = Mapping[str, Mapping[str, Mapping[str, tuple]]]


def priority_rows(results: Results) -> list[str]:
    """majority, random, text only — those present, in this fixed order."""
    return [m for m in PRIORITY_MODELS if m in results]


def other_rows(results: Results) -> list[str]:
    """All other model keys in Python's default string order (uppercase first)."""
    return [m for m in sorted(results) if m not in PRIORITY_MODELS]


def _is_inf(value) -> bool:
    return value is not None and isinstance(value, float) and math.isinf(value)


def _cells(model_results: Mapping, fmt: Callable[[float, float | None], str]) -> list[str]:
    """The six cells in header order; absent or failed (inf) cells are ``-``."""
    cells = []
    for metric, mode in COLUMNS:
        cell = model_results.get(metric, {}).get(mode)
        if cell is None or _is_inf(float(cell[0])):
            cells.append("-")
        else:
            cells.append(fmt(float(cell[0]), cell[1]))
    return cells


def _text_cell(mean_only: bool) -> Callable:
    def fmt(mean: float, std) -> str:
        if mean_only or std is None or _is_inf(float(std)):
            return f"{mean:.2f}"
        return f"{mean:.2f} ± {std:.2f}"
    return fmt


def _latex_cell(mean_only: bool) -> Callable:
    def fmt(mean: float, std) -> str:
        if mean_only or std is None or _is_inf(float(std)):
            return f"${mean:.2f}$"
        return f"${mean:.2f} \\pm \\scriptstyle{{{std:.2f}}}$"
    return fmt


def text_table(results: Results, mean_only: bool = False) -> str:
    """§7.3: header, 91 dashes, one ``model & c1 & ... & c6`` row per model; no trailing newline."""
    if not results:
        return EMPTY_TABLE
    lines = [HEADER, "-" * len(HEADER)]
    fmt = _text_cell(mean_only)
    for model in priority_rows(results) + other_rows(results):
        lines.append(" & ".join([model] + _cells(results[model], fmt)))
    return "\n".join(lines)


def table_entries(text: str) -> set[tuple[str, tuple[str, str]]]:
    """(row name, (metric, mode)) of every filled cell of a §7.3 text table or a §7.4 LaTeX table (what a
    replacement must not lose)."""
    entries = set()
    for line in text.split("\n"):
        if " & " not in line:
            continue
        name, *cells = line.removesuffix(" \\\\").split(" & ")
        entries.update((name, column) for column, cell in zip(COLUMNS, cells) if cell != "-")
    return entries


def latex_name(model: str, names: Mapping[str, str] | None = None) -> str:
    """§7.4 name of a row key: ``names[model]`` (e.g. the LaTeX names of the run manifests' identities),
    else ``smmile.identity.latex_for_key`` (the paper's names; other keys with ``_`` -> ``-``)."""
    if names and model in names:
        return names[model]
    return latex_for_key(model)


def latex_table(results: Results, mean_only: bool = False, names: Mapping[str, str] | None = None) -> str:
    """§7.4: priority rows, ``\\midrule`` (always), other rows, ``\\bottomrule``; no trailing newline.
    ``names``: LaTeX name per row key where it is not the default (``latex_name``)."""
    fmt = _latex_cell(mean_only)

    def row(model: str) -> str:
        return " & ".join([latex_name(model, names)] + _cells(results[model], fmt)) + " \\\\"

    lines = [row(m) for m in priority_rows(results)]
    lines.append("\\midrule")
    lines.extend(row(m) for m in other_rows(results))
    lines.append("\\bottomrule")
    return "\n".join(lines)


# -- `smmile stats` LaTeX table (addition) ----------------------------------------------------------
def _ci_cell(row) -> str:
    if row is None or math.isnan(row["accuracy"]):
        return "-"
    if math.isnan(row["ci_low"]):
        return f"${row['accuracy']:.2f}$"
    return f"${row['accuracy']:.2f}$ {{\\scriptsize [{row['ci_low']:.2f}, {row['ci_high']:.2f}]}}"


def ci_latex_table(rows, names: Mapping[str, str] | None = None) -> str:
    """Estimates with CIs in the layout of §7.4 (same row order, names, ``\\midrule``/``\\bottomrule``):
    cells ``$acc$ {\\scriptsize [low, high]}``; ``-`` when absent. No trailing newline."""
    cells: dict = {}
    for row in rows:
        cells.setdefault(row["model"], {})[(row["metric"], row["mode"])] = row

    def line(model: str) -> str:
        values = [_ci_cell(cells[model].get(column)) for column in COLUMNS]
        return " & ".join([latex_name(model, names)] + values) + " \\\\"

    lines = [line(m) for m in priority_rows(cells)]
    lines.append("\\midrule")
    lines.extend(line(m) for m in other_rows(cells))
    lines.append("\\bottomrule")
    return "\n".join(lines)
