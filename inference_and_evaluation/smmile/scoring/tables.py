"""The variance_analysis summary tables (spec §7.3 text, §7.4 LaTeX), byte for byte.

``results`` is ``{model: {metric: {mode: (mean, std)}}}`` with metric in LLM/EM/MCQA and mode in
0-shot/ICL; ``std`` is ``None`` in mean-only mode; a failed cell holds ``(inf, inf)``."""

from __future__ import annotations

import math
from typing import Callable, Mapping

from smmile.identity import latex_for_key
from smmile.scoring.metrics import METRICS

HEADER = "Model Name || LLM, 0-shot || LLM, ICL || EM, 0-shot || EM, ICL || MCQA, 0-shot || MCQA, ICL"
COLUMNS = tuple((name, mode) for name, m in METRICS.items() if m.paper for mode in ("0-shot", "ICL"))
PRIORITY_MODELS = ("majority", "random", "text only")

Results = Mapping[str, Mapping[str, Mapping[str, tuple]]]


def priority_rows(results: Results) -> list[str]:
    return [m for m in PRIORITY_MODELS if m in results]


def other_rows(results: Results) -> list[str]:
    """The other model keys in Python's default string order (uppercase first)."""
    return [m for m in sorted(results) if m not in PRIORITY_MODELS]


def row_order(results: Results) -> list[str]:
    return priority_rows(results) + other_rows(results)


def _cells(model_results: Mapping, mean_only: bool, plain: str, with_std: str) -> list[str]:
    """The six cells in header order, ``plain.format(mean)`` or ``with_std.format(mean, std)``; absent or
    failed (inf) cells are ``-``."""
    cells = []
    for metric, mode in COLUMNS:
        cell = model_results.get(metric, {}).get(mode)
        if cell is None or math.isinf(float(cell[0])):
            cells.append("-")
        elif mean_only or cell[1] is None or math.isinf(float(cell[1])):
            cells.append(plain.format(float(cell[0])))
        else:
            cells.append(with_std.format(float(cell[0]), cell[1]))
    return cells


def text_table(results: Results, mean_only: bool = False) -> str:
    """§7.3: header, 91 dashes, one ``model & c1 & ... & c6`` row per model; no trailing newline."""
    if not results:
        return "No results found."
    rows = [" & ".join([m] + _cells(results[m], mean_only, "{:.2f}", "{:.2f} ± {:.2f}")) for m in row_order(results)]
    return "\n".join([HEADER, "-" * len(HEADER)] + rows)


def table_entries(text: str) -> set[tuple[str, tuple[str, str]]]:
    """(row name, (metric, mode)) of every filled cell of a §7.3 text table or a §7.4 LaTeX table (what a
    replacement must not lose)."""
    entries = set()
    for name, *cells in (line.removesuffix(" \\\\").split(" & ") for line in text.split("\n") if " & " in line):
        entries.update((name, column) for column, cell in zip(COLUMNS, cells) if cell != "-")
    return entries


def latex_name(model: str, names: Mapping[str, str] | None = None) -> str:
    """§7.4 name of a row key: ``names[model]`` (e.g. from the run manifests' identities), else the paper's."""
    return names[model] if names and model in names else latex_for_key(model)


def _latex_layout(models: Mapping, line: Callable[[str], str]) -> str:
    """§7.4's layout: priority rows, ``\\midrule`` (always), other rows, ``\\bottomrule``; no trailing newline."""
    return "\n".join([*map(line, priority_rows(models)), "\\midrule", *map(line, other_rows(models)), "\\bottomrule"])


def latex_table(results: Results, mean_only: bool = False, names: Mapping[str, str] | None = None) -> str:
    """§7.4; ``names``: LaTeX name per row key where it is not the default (``latex_name``)."""
    def row(model: str) -> str:
        cells = _cells(results[model], mean_only, "${:.2f}$", "${:.2f} \\pm \\scriptstyle{{{:.2f}}}$")
        return " & ".join([latex_name(model, names)] + cells) + " \\\\"

    return _latex_layout(results, row)


# -- `smmile stats` LaTeX table (addition) ----------------------------------------------------------
def _ci_cell(row) -> str:
    if row is None or math.isnan(row["accuracy"]):
        return "-"
    if math.isnan(row["ci_low"]):
        return f"${row['accuracy']:.2f}$"
    return f"${row['accuracy']:.2f}$ {{\\scriptsize [{row['ci_low']:.2f}, {row['ci_high']:.2f}]}}"


def ci_latex_table(rows, names: Mapping[str, str] | None = None) -> str:
    """Estimates with CIs in the layout of §7.4: cells ``$acc$ {\\scriptsize [low, high]}``; ``-`` when absent."""
    cells: dict = {}
    for row in rows:
        cells.setdefault(row["model"], {})[(row["metric"], row["mode"])] = row

    def line(model: str) -> str:
        values = [_ci_cell(cells[model].get(column)) for column in COLUMNS]
        return " & ".join([latex_name(model, names)] + values) + " \\\\"

    return _latex_layout(cells, line)
