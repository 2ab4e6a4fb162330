"""Stratified accuracy by problem flags (spec §6).

* ``flag_columns`` / ``valid_flags`` — the strata, in the original's order.
* ``problem_labels`` — the label of every stratum for one problem and mode.
* ``stratify_accuracies`` — ``{"<flag>_accuracy": {label: mean}, "<flag>_total": ..., "<flag>_correct": ...}``
  for one ``problem_accuracies`` dict (labels in order of first appearance); the returned ``Strata``
  also remembers which problem fell in which stratum (not part of the faithful JSON).
* ``stratum_intervals`` — addition: per stratum ``n_rows``, ``n_problems`` (base problems: the
  ``<id>_perm_<k>`` rows of SMMILE++ count once), accuracy and a 95% interval — Wilson on the problems
  for independent problems, the cluster bootstrap by base problem for SMMILE++ (never zero width,
  ``statistics.percentile_ci``) — and ``small`` when fewer than ``MIN_PROBLEMS`` base problems.
* ``format_flag_table`` — the console table of one flag (PrettyTable, as the original).
"""

from __future__ import annotations

from typing import Iterable, Mapping, Sequence

from smmile.scoring import statistics

DERIVED_FLAGS = ("speciality", "flag_num_ICL", "flag_first_ICL_match_problem", "flag_last_ICL_match_problem")
MIN_PROBLEMS = 20  # a stratum with fewer base problems is `small` (greyed out in figures)
STRATUM_N_BOOT = 2000  # cluster bootstrap resamples per stratum (seed 0)
LEVEL = 0.95


class StratifyError(ValueError):
    """Results and dataset do not fit together (e.g. problem ids missing from the dataset)."""


class Strata(dict):
    """The faithful per-flag dict of one result, plus what the intervals need and the JSON must not
    show: ``scores`` (problem_id -> accuracy in percent) and ``labels`` (problem_id -> {flag: label})."""

    def __init__(self, data=(), scores: Mapping | None = None, labels: Mapping | None = None):
        super().__init__(data)
        self.scores = dict(scores or {})
        self.labels = dict(labels or {})

    def members(self, flag: str) -> dict:
        """label -> problem ids, grouped as ``stratify_accuracies`` groups them."""
        return _group({pid: pid for pid in self.scores}, self.labels, flag)


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
    out = Strata(scores=problem_accuracies, labels=labels)
    for flag in flags:
        groups = _group(problem_accuracies, labels, flag)
        out[f"{flag}_accuracy"] = {k: float(np.mean(v)) for k, v in groups.items()}
        out[f"{flag}_total"] = {k: len(v) for k, v in groups.items()}
        out[f"{flag}_correct"] = {k: sum(1 for x in v if x == 100) for k, v in groups.items()}
    return out


def stratum_interval(scores: Sequence[float], problem_ids: Sequence[str] | None, n_rows: int,
                     accuracy: float) -> dict:
    """n_rows, n_problems, interval (percent) and ``small`` for one stratum.

    ``problem_ids`` None (a stratification read back from JSON) treats every row as a problem.
    Independent problems: Wilson on n_rows (today's numbers on SMMILE). Rows in clusters
    (``<id>_perm_<k>``): cluster bootstrap over base problems (``STRATUM_N_BOOT``, seed 0), which
    falls back to the Wilson bound on the base problems when they all score the same.
    """
    clustered = problem_ids is not None and statistics.has_permutations(problem_ids)
    if clustered:
        clusters = statistics.base_problem_ids(problem_ids)
        ci = statistics.percentile_ci([s / 100 for s in scores], clusters, STRATUM_N_BOOT, 0, LEVEL)
        n_problems, (low, high), method = ci.n_clusters, (ci.low, ci.high), f"cluster {ci.method}"
    else:
        n_problems = n_rows if problem_ids is None else len(set(problem_ids))
        (low, high), method = statistics.wilson_interval(accuracy / 100, n_rows, LEVEL), "Wilson"
    return {"n_rows": n_rows, "n_problems": n_problems, "ci95_low": low * 100, "ci95_high": high * 100,
            "method": method, "small": bool(n_problems < MIN_PROBLEMS)}


def stratum_intervals(strata: Mapping, flags: Sequence[str]) -> dict:
    """``{flag: {label: {n_rows, n_problems, correct, accuracy, ci95_low, ci95_high, method, small}}}``
    (percent). ``strata`` from ``stratify_accuracies`` knows its problems; a plain dict does not (rows
    are then taken for independent problems)."""
    known = isinstance(strata, Strata)
    out: dict = {}
    for flag in flags:
        totals, accs = strata[f"{flag}_total"], strata[f"{flag}_accuracy"]
        groups = strata.members(flag) if known else {}
        out[flag] = {}
        for label, n in totals.items():
            ids = groups[label] if known else None
            scores = [strata.scores[pid] for pid in ids] if known else []
            entry = stratum_interval(scores, ids, n, accs[label])
            entry.update(correct=strata[f"{flag}_correct"][label], accuracy=accs[label])
            out[flag][label] = entry
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
