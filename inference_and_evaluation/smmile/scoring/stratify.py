"""Stratified accuracy by problem flags (spec §6): the strata of the original, and (addition) an interval per
stratum with its number of base problems (the ``<id>_perm_<k>`` rows of SMMILE++ count once)."""

from __future__ import annotations

from typing import Iterable, Mapping, Sequence

import numpy as np
from prettytable import PrettyTable

from smmile.data.schema import flag_columns
from smmile.scoring import statistics
from smmile.scoring.exact_match import plain

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


def valid_flags(problems: Sequence) -> list[str]:
    """The strata: the dataset's ``flag_*`` columns in column order (first row's fields), then ``speciality``
    and the three derived ICL flags."""
    return (flag_columns(list(problems[0].rows[0].fields)) if problems else []) + list(DERIVED_FLAGS)


def problem_labels(problem, flags: Iterable[str], mode: str) -> dict:
    """Label per stratum; the derived ICL flags are 0 / False for 0-shot results."""
    zero_shot = mode == "0-shot"
    rows, query = problem.rows, problem.query
    derived = {
        "flag_num_ICL": 0 if zero_shot else len(rows) - 1,
        "flag_first_ICL_match_problem": False if zero_shot else query.answer == rows[0].answer,
        "flag_last_ICL_match_problem": False if zero_shot or len(rows) < 2 else query.answer == rows[-2].answer,
    }
    return {flag: derived[flag] if flag in derived else plain(query.fields.get(flag)) for flag in flags}


def _group(problem_accuracies: Mapping, labels_by_problem: Mapping, flag: str) -> dict:
    groups: dict = {}
    for pid, accuracy in problem_accuracies.items():
        groups.setdefault(labels_by_problem[pid][flag], []).append(accuracy)
    return groups


def stratify_accuracies(problem_accuracies: Mapping, problems_by_id: Mapping, flags: Sequence[str],
                        mode: str) -> dict:
    """``{"<flag>_accuracy": {label: mean}, "<flag>_total": ..., "<flag>_correct": <100% problems>}`` per flag
    (labels in order of first appearance), as a ``Strata`` that also knows each problem's stratum."""
    missing = [pid for pid in problem_accuracies if pid not in problems_by_id]
    if missing:
        raise StratifyError(f"{len(missing)} problem id(s) not in the dataset (first: {missing[0]}); "
                            "wrong --dataset_id / --dataset?")
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
    """n_rows, n_problems, interval (percent) and ``small`` for one stratum: Wilson on n_rows for independent
    problems (``problem_ids`` None: read back from JSON, every row a problem), the cluster bootstrap over base
    problems for SMMILE++ rows."""
    if problem_ids is not None and statistics.has_permutations(problem_ids):
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
    (percent); a plain dict (not ``Strata``) does not know its problems: rows are taken as independent."""
    known = isinstance(strata, Strata)
    out: dict = {}
    for flag in flags:
        totals, accs = strata[f"{flag}_total"], strata[f"{flag}_accuracy"]
        groups = _group({pid: pid for pid in strata.scores}, strata.labels, flag) if known else {}  # label -> ids
        out[flag] = {}
        for label, n in totals.items():
            ids = groups.get(label)  # None when the strata do not know their problems
            entry = stratum_interval([strata.scores[pid] for pid in ids or ()], ids, n, accs[label])
            entry.update(correct=strata[f"{flag}_correct"][label], accuracy=accs[label])
            out[flag][label] = entry
    return out


def format_flag_table(flag: str, results: Mapping[str, Mapping]) -> str:
    """The console block of one flag: header line and a PrettyTable of accuracies (1 decimal); 0-shot keys
    sorted, then ICL keys sorted (other modes are not shown)."""
    key = f"{flag}_accuracy"
    unique = list(dict.fromkeys(label for strata in results.values() for label in strata[key]))
    try:
        labels = sorted(unique)
    except TypeError:  # mixed label types: the original would crash here
        labels = sorted(unique, key=lambda x: (type(x).__name__, str(x)))
    table = PrettyTable()
    table.field_names = ["Model", "Mode"] + [str(label) for label in labels]
    for model_key in sorted(k for k in results if "0-shot" in k) + sorted(k for k in results if "ICL" in k):
        model, mode = model_key.rsplit(":", 1)
        accs = results[model_key][key]
        table.add_row([model, mode] + [np.round(accs[label], 1) if label in accs else "--" for label in labels])
    return f"=====DISPLAYING RESULTS FOR FLAG {flag.upper()}=====\n{table}"
