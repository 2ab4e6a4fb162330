"""Stratified accuracy by problem flags (spec §6).

* ``flag_columns`` / ``valid_flags`` — the strata, in the original's order.
* ``problem_labels`` — the label of every stratum for one problem and mode.
* ``stratify_accuracies`` — ``{"<flag>_accuracy": {label: mean}, "<flag>_total": ..., "<flag>_correct": ...}``
  for one ``problem_accuracies`` dict (labels in order of first appearance).
* ``stratum_intervals`` — addition: n, accuracy and a 95% Wilson interval per stratum, ``small`` if n < 20.
* ``format_flag_table`` — the console table of one flag (PrettyTable, as the original).
"""

from __future__ import annotations

import math
from typing import Iterable, Mapping, Sequence

DERIVED_FLAGS = ("speciality", "flag_num_ICL", "flag_first_ICL_match_problem", "flag_last_ICL_match_problem")
SMALL_STRATUM = 20
Z95 = 1.959963984540054


class StratifyError(ValueError):
    """Results and dataset do not fit together (e.g. problem ids missing from the dataset)."""


def flag_columns(problems: Sequence) -> list[str]:
    """Dataset columns whose first ``_``-token is ``flag``, in column order (first row's fields)."""
    if not problems:
        return []
    return [name for name in problems[0].rows[0].fields if name.split("_")[0] == "flag"]


def valid_flags(problems: Sequence) -> list[str]:
    """The strata: dataset flag columns, then ``speciality`` and the three derived ICL flags."""
    return flag_columns(problems) + list(DERIVED_FLAGS)


def _plain(value):
    return value.item() if hasattr(value, "item") else value


def problem_labels(problem, flags: Iterable[str], mode: str) -> dict:
    """Label per stratum; the derived ICL flags are 0 / False for 0-shot results."""
    zero_shot = mode == "0-shot"
    rows, query = problem.rows, problem.query
    derived = {
        "flag_num_ICL": 0 if zero_shot else len(rows) - 1,
        "flag_first_ICL_match_problem": False if zero_shot else query.answer == rows[0].answer,
        "flag_last_ICL_match_problem": False if zero_shot or len(rows) < 2 else query.answer == rows[-2].answer,
    }
    return {flag: derived[flag] if flag in derived else _plain(query.fields.get(flag)) for flag in flags}


def _group(problem_accuracies: Mapping, labels_by_problem: Mapping, flag: str) -> dict:
    groups: dict = {}
    for pid, accuracy in problem_accuracies.items():
        groups.setdefault(labels_by_problem[pid][flag], []).append(accuracy)
    return groups


def stratify_accuracies(problem_accuracies: Mapping, problems_by_id: Mapping, flags: Sequence[str],
                        mode: str) -> dict:
    """Per flag: mean accuracy, count and number of 100% problems per label (insertion order)."""
    missing = [pid for pid in problem_accuracies if pid not in problems_by_id]
    if missing:
        raise StratifyError(f"{len(missing)} problem id(s) not in the dataset (first: {missing[0]}); "
                            "wrong --dataset_id / --dataset?")
    import numpy as np

    labels = {pid: problem_labels(problems_by_id[pid], flags, mode) for pid in problem_accuracies}
    out: dict = {}
    for flag in flags:
        groups = _group(problem_accuracies, labels, flag)
        out[f"{flag}_accuracy"] = {k: float(np.mean(v)) for k, v in groups.items()}
        out[f"{flag}_total"] = {k: len(v) for k, v in groups.items()}
        out[f"{flag}_correct"] = {k: sum(1 for x in v if x == 100) for k, v in groups.items()}
    return out


def wilson_interval(p_hat: float, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for a proportion ``p_hat`` observed on ``n`` problems."""
    if n == 0:
        return (0.0, 1.0)
    denom = 1 + z * z / n
    centre = (p_hat + z * z / (2 * n)) / denom
    half = z * math.sqrt(p_hat * (1 - p_hat) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def stratum_intervals(strata: Mapping, flags: Sequence[str]) -> dict:
    """``{flag: {label: {n, correct, accuracy, ci95_low, ci95_high, small}}}`` (percent)."""
    out: dict = {}
    for flag in flags:
        totals, accs = strata[f"{flag}_total"], strata[f"{flag}_accuracy"]
        out[flag] = {}
        for label, n in totals.items():
            low, high = wilson_interval(accs[label] / 100, n)
            out[flag][label] = {"n": n, "correct": strata[f"{flag}_correct"][label], "accuracy": accs[label],
                                "ci95_low": low * 100, "ci95_high": high * 100, "small": n < SMALL_STRATUM}
    return out


def _sorted_labels(labels: Iterable) -> list:
    unique = list(dict.fromkeys(labels))
    try:
        return sorted(unique)
    except TypeError:  # mixed label types: the original would crash here
        return sorted(unique, key=lambda x: (type(x).__name__, str(x)))


def table_rows_order(keys: Iterable[str]) -> list[str]:
    """All 0-shot keys sorted, then all ICL keys sorted (other modes are not shown)."""
    keys = list(keys)
    return sorted(k for k in keys if "0-shot" in k) + sorted(k for k in keys if "ICL" in k)


def format_flag_table(flag: str, results: Mapping[str, Mapping]) -> str:
    """The console block of one flag: header line and a PrettyTable of accuracies (1 decimal)."""
    import numpy as np
    from prettytable import PrettyTable

    key = f"{flag}_accuracy"
    labels = _sorted_labels(label for strata in results.values() for label in strata[key])
    table = PrettyTable()
    table.field_names = ["Model", "Mode"] + [str(label) for label in labels]
    for model_key in table_rows_order(results):
        model, mode = model_key.rsplit(":", 1)
        accs = results[model_key][key]
        table.add_row([model, mode] + [np.round(accs[label], 1) if label in accs else "--" for label in labels])
    return f"=====DISPLAYING RESULTS FOR FLAG {flag.upper()}=====\n{table}"
