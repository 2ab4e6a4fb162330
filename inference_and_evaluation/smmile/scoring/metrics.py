"""The metrics, registered once (``register``: name, formats, scorer), and the one per-item loader every command
scores with; tables, statistics, the report and the explorer take their list from ``METRICS``. ``EM``, flexible
exact match (spec §4.4); ``LLM``, the judge's per-problem accuracy (the judge's verdicts in the run record, else
``<stem>_evaluationllm.json``; several rows of a problem score ``value / 100``, ``legacy_floor=True`` keeps
variance_analysis's ``// 100``: both agree on the published files); ``MCQA``, ``str(is_correct).lower() == "true"``
(spec §7.2); ``NOANS``, the model refused or failed to answer (``scoring.refusal``; not one of the paper's,
so not in variance_analysis's tables). ``failure_series``: the rows with no real answer (from the journal where
there is one, else the CSV text); every metric scores them wrong, as the original.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable, Mapping, Optional

import numpy as np
import pandas as pd

from smmile.record.result_csv import check_columns
from smmile.record.run_record import COLUMNS
from smmile.scoring import refusal
from smmile.scoring.exact_match import exact
from smmile.scoring.refusal import FAILURE_KINDS, response_failure, row_failures  # noqa: F401 (the failure kinds)


Scorer = Callable[[Optional[Mapping], Optional[Mapping], Mapping], float]  # (item, response, row) -> [0, 1]


@dataclass(frozen=True)
class Metric:
    name: str  # "EM" | "LLM" | "MCQA" | ...: column of the tables, key of the statistics
    display: str  # for reports and figures
    formats: tuple[str, ...]  # result formats that carry it
    source: str  # "csv": a score per item from its scorer; "judge": the judge's verdicts (the run record)
    columns: tuple[str, ...]  # CSV columns its scorer reads
    label: str  # variance_analysis console label (spec §7.2 step 6)
    scorer: Scorer | None = None  # "csv" metrics: the item as planned, its journaled response (None without a
    #                               run record) and its CSV row -> score
    paper: bool = True  # one of the paper's metrics (variance_analysis's six columns); else only in stats/report
    measures_failures: bool = False  # a failure is what it scores (never a row left out as "not an answer")


METRICS: dict[str, Metric] = {}  # the registry, in the tables' column order


def register(metric: Metric) -> Metric:
    METRICS[metric.name] = metric
    return metric


LLM = register(Metric("LLM", "LLM-as-a-judge", ("open",), "judge", (), "LLM-as-a-Judge Accuracy"))
EM = register(Metric("EM", "Exact match", ("open",), "csv", COLUMNS["open"], "EM Accuracy", exact))
MCQA = register(Metric("MCQA", "MCQA", ("mcqa",), "csv", COLUMNS["mcqa"], "MCQA Accuracy",
                       lambda item, response, row: float(str(row["is_correct"]).lower() == "true")))
NOANS = register(Metric("NOANS", "Refused or failed to answer", ("open", "mcqa"), "csv", ("problem_id",),
                        "No-answer rate", refusal.no_answer, paper=False, measures_failures=True))


def get_metric(metric: Metric | str) -> Metric:
    if isinstance(metric, Metric):
        return metric
    try:
        return METRICS[metric]
    except KeyError:
        raise ValueError(f"unknown metric {metric!r}; known: {', '.join(METRICS)}") from None


def judged(name: str) -> bool:
    """Whether the metric named `name` is the judge's (scored from its verdicts, not from the CSV)."""
    metric = METRICS.get(name)
    return metric is not None and metric.source == "judge"


def metrics_for(fmt: str, paper: bool = True) -> tuple[Metric, ...]:
    """The metrics of format ``fmt`` (``paper``: the paper's only), scored from the CSV before the judge's: the
    order variance_analysis consumes its random stream (EM before LLM)."""
    found = [m for m in METRICS.values() if fmt in m.formats and (m.paper or not paper)]
    return tuple(sorted(found, key=lambda m: m.source == "judge"))


def _series(ids, values):
    return pd.Series(np.asarray(values, dtype=np.float64), index=pd.Index([str(i) for i in ids], name="problem_id"))


def read_rows(result, metric: Metric | str | None = None):
    """The CSV of ``result`` (a ``RunRecord``) read whole with ``metric``'s columns (default: its format's)."""
    return result.frame(None if metric is None else get_metric(metric).columns)


def failure_series(frame, result=None):
    """Per CSV row by problem_id: ``response_failure`` of its journaled response, else ``row_failures``."""
    ids = [str(i) for i in frame["problem_id"]]
    journaled = getattr(result, "responses", None) or {}
    kinds = [response_failure(journaled[pid]) if pid in journaled else kind
             for pid, kind in zip(ids, row_failures(frame))]
    return pd.Series(kinds, index=pd.Index(ids, name="problem_id"), dtype=object)


def _judge_value(value, legacy_floor: bool) -> float:
    return float(value // 100) if legacy_floor else value / 100


def judge_scores(result, legacy_floor: bool = False):
    """``LLM`` (module docstring): the run record's ``judge_accuracies``; None if the judge was not run;
    ``ResultFileError`` if it judged other content."""
    accuracies = result.judge_accuracies
    if accuracies is None:
        return None
    return _series(accuracies.keys(), [_judge_value(v, legacy_floor) for v in accuracies.values()])


def metric_scores(result, metric: Metric | str, *, legacy_floor: bool = False, frame=None):
    """Per-row scores in [0, 1] by problem_id (text; file order, duplicates kept); None if the judge was not
    run. ``frame``: the CSV already read. ``ResultFileError`` for a file that cannot be scored."""
    metric = get_metric(metric)
    if metric.source == "judge":
        return judge_scores(result, legacy_floor)
    if frame is None:
        frame = read_rows(result, metric)
    else:
        check_columns(frame, metric.columns, os.fspath(result.csv))
    journal = getattr(result, "journal", None) or {}
    ids = [str(i) for i in frame["problem_id"]]
    values = []
    for pid, row in zip(ids, frame.to_dict("records")):
        found = journal.get(pid) or []
        rec = found[0] if len(found) == 1 else {}  # several configurations journaled: which one is unknown
        values.append(metric.scorer(rec.get("item"), rec.get("response"), row))
    return _series(ids, values)
