"""The three metrics, declared once, and the one per-row loader every command scores with: ``EM``, flexible exact
match (spec §4.4); ``LLM``, the judge's per-problem accuracy (the run record's journaled verdicts, else
``<stem>_evaluationllm.json``; several rows of a problem score ``value / 100``, ``legacy_floor=True`` keeps
variance_analysis's ``// 100``: both agree on the published files); ``MCQA``, ``str(is_correct).lower() == "true"``
(spec §7.2). ``failure_series``: the rows with no real answer (from the journal where there is one, else the CSV
text); every metric scores them wrong, as the original.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd

from smmile.scoring.exact_match import ResultFileError, check_columns, check_judgement, flexible_matches, read_whole
from smmile.scoring.naming import evaluationllm_json_path


@dataclass(frozen=True)
class Metric:
    name: str  # "EM" | "LLM" | "MCQA": column of the tables, key of the statistics
    display: str  # for reports and figures
    formats: tuple[str, ...]  # result formats that carry it
    source: str  # "csv": the result CSV's rows; "judge": <stem>_evaluationllm.json beside it
    columns: tuple[str, ...]  # CSV columns it reads
    label: str  # variance_analysis console label (spec §7.2 step 6)
    row_score: Callable | None = None  # frame -> list of 0/1 per row ("csv" metrics)


def _mcqa_rows(frame) -> list[bool]:
    return [str(v).lower() == "true" for v in frame["is_correct"]]


EM = Metric("EM", "Exact match", ("open",), "csv", ("problem_id", "true_answer", "generated_answer"),
            "EM Accuracy", flexible_matches)
LLM = Metric("LLM", "LLM-as-a-judge", ("open",), "judge", (), "LLM-as-a-Judge Accuracy")
MCQA = Metric("MCQA", "MCQA", ("mcqa",), "csv", ("problem_id", "is_correct"), "MCQA Accuracy", _mcqa_rows)
METRICS: dict[str, Metric] = {m.name: m for m in (LLM, EM, MCQA)}  # the tables' column order


def get_metric(metric: Metric | str) -> Metric:
    if isinstance(metric, Metric):
        return metric
    try:
        return METRICS[metric]
    except KeyError:
        raise ValueError(f"unknown metric {metric!r}; known: {', '.join(METRICS)}") from None


def metrics_for(fmt: str) -> tuple[Metric, ...]:
    """In the order variance_analysis consumes its random stream (EM before LLM)."""
    return (EM, LLM) if fmt == "open" else (MCQA,) if fmt == "mcqa" else ()


def _series(ids, values):
    return pd.Series(np.asarray(values, dtype=np.float64), index=pd.Index([str(i) for i in ids], name="problem_id"))


def _csv_path(result) -> str:
    return os.fspath(getattr(result, "csv", result))


def read_rows(result, metric: Metric | str | None = None):
    """The CSV of ``result`` read whole with ``metric``'s columns (default: its format's first metric's)."""
    metric = metrics_for(result.fmt)[0] if metric is None else get_metric(metric)
    return read_whole(_csv_path(result), metric.columns)


FAILURE_KINDS = ("refused", "failed", "empty")
REFUSAL_MARKERS = ("responsibleaipolicyviolation", "content_filter", "content management policy")


def _text(value) -> str:
    return "" if value is None or (isinstance(value, float) and value != value) else str(value)


def row_failures(frame) -> list[str]:
    """Per CSV row, in this precedence: ``refused`` (a content filter is mentioned), ``failed`` (``ERROR``,
    spec §3), ``empty`` (a blank response) or ``""``."""
    columns = [c for c in ("generated_answer", "full_response", "selected_option") if c in frame.columns]
    response = "full_response" if "full_response" in frame.columns else "generated_answer"
    kinds = []
    for row in frame[columns].itertuples(index=False):
        texts = dict(zip(columns, (_text(v) for v in row)))
        lowered = " ".join(texts.values()).lower()
        if any(marker in lowered for marker in REFUSAL_MARKERS):
            kinds.append("refused")
        elif any(texts.get(c, "").lstrip().startswith("ERROR") for c in ("generated_answer", "full_response")) \
                or texts.get("selected_option", "").strip() == "ERROR":
            kinds.append("failed")
        elif response in texts and not texts[response].strip():
            kinds.append("empty")
        else:
            kinds.append("")
    return kinds


def response_failure(response: dict) -> str:
    """``refused`` (the error or a finish reason names a content filter or a refusal), ``failed`` (any other
    error), ``empty`` (a null or blank text) or ``""`` for one journaled response."""
    extra = response.get("extra") or {}  # where backends put the provider's finish reason
    reasons = " ".join(str(extra.get(k) or "") for k in ("finish_reason", "stop_reason")).lower()
    said = f"{response.get('error') or ''} {reasons}".lower()
    if any(marker in said for marker in REFUSAL_MARKERS) or "refusal" in reasons:
        return "refused"
    if response.get("error") is not None:
        return "failed"
    return "" if (response.get("text") or "").strip() else "empty"


def failure_series(frame, result=None):
    """Per CSV row by problem_id: ``response_failure`` of its journaled response, else ``row_failures``."""
    ids = [str(i) for i in frame["problem_id"]]
    journaled = getattr(result, "responses", None) or {}
    kinds = [response_failure(journaled[pid]) if pid in journaled else kind
             for pid, kind in zip(ids, row_failures(frame))]
    return pd.Series(kinds, index=pd.Index(ids, name="problem_id"), dtype=object)


def _judge_value(value, legacy_floor: bool) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 100:
        raise ValueError(f"problem accuracy {value!r} is not a number in [0, 100]")
    return float(value // 100) if legacy_floor else value / 100


def judge_scores(result, legacy_floor: bool = False, frame=None):
    """``LLM`` (module docstring); None if the judge was not run; refused if it judged other content."""
    accuracies = getattr(result, "judge_accuracies", None)
    if accuracies is not None:
        return _series(accuracies.keys(), [_judge_value(v, legacy_floor) for v in accuracies.values()])
    json_path = os.fspath(evaluationllm_json_path(_csv_path(result)))
    if not os.path.exists(json_path):
        return None
    try:
        with open(json_path, encoding="utf-8") as handle:
            judged = json.load(handle)
        accuracies = judged["problem_accuracies"]
        values = [_judge_value(v, legacy_floor) for v in accuracies.values()]
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ResultFileError(f"{json_path}: unusable judge file ({type(exc).__name__}: {exc})") from None
    check_judgement(_csv_path(result), judged, frame)
    return _series(accuracies.keys(), values)


def metric_scores(result, metric: Metric | str, *, legacy_floor: bool = False, frame=None):
    """Per-row scores in [0, 1] by problem_id (text; file order, duplicates kept); None if the judge was not
    run. ``frame``: the CSV already read. ``ResultFileError`` for a file that cannot be scored."""
    metric = get_metric(metric)
    if metric.source == "judge":
        return judge_scores(result, legacy_floor, frame)
    if frame is None:
        frame = read_rows(result, metric)
    else:
        check_columns(frame, metric.columns, _csv_path(result))
    return _series(frame["problem_id"], metric.row_score(frame))
