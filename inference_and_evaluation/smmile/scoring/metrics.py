"""The three metrics, declared once, and the one per-row loader every command scores with.

* ``EM`` — flexible exact match (spec §4.4, pandas NA semantics) of ``true_answer`` and
  ``generated_answer`` in an open-format result CSV; a row scores 1 or 0.
* ``LLM`` — the judge: ``problem_accuracies`` of ``<stem>_evaluationllm.json`` (evaluate_LLMJudge's
  output beside the open CSV), one value per problem id in the JSON's order. **Fractional judge
  scores** (a problem id with several rows, some judged correct): every command uses the fraction of
  that problem's rows judged correct (``value / 100``, not rounded). The only exception is
  ``legacy_floor=True``: the original variance_analysis floor-divided by 100 (``// 100``: anything
  below 100 % counts 0), which the faithful ``variance_analysis.py`` table keeps. With one row per
  problem (all published files) both rules agree.
* ``MCQA`` — ``str(is_correct).lower() == "true"`` per row of a ``_mcqa`` result CSV (spec §7.2).

``failure_series(frame, result)`` says which rows hold no real answer: ``refused`` (a content-filter
refusal, e.g. Azure's ``ResponsibleAIPolicyViolation``), ``failed`` (an API or model error) or ``empty``
(nothing generated). Where the result has a run record it reads the journaled response
(``response_failure``: the error, a null or blank text, a content-filter finish reason in ``extra``);
otherwise the CSV text (``row_failures``: the original's ``ERROR: ...`` rows, MCQA ``selected_option``
``ERROR``). Every metric scores them as wrong, as the original did; the statistics count them and can
exclude them (``smmile stats --failures``).

``metric_scores(result, metric)`` returns a float Series in [0, 1] indexed by problem_id (as text) in
file order, one value per row (duplicated ids are kept; average them for per-problem statistics), or
None when the judge has not been run on that file. ``metrics_for(fmt)`` gives a format's metrics in the
order variance_analysis consumes its random stream (EM before LLM).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Callable

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


def _em_rows(frame) -> list[bool]:
    return flexible_matches(frame)


def _mcqa_rows(frame) -> list[bool]:
    return [str(v).lower() == "true" for v in frame["is_correct"]]


EM = Metric("EM", "Exact match", ("open",), "csv", ("problem_id", "true_answer", "generated_answer"),
            "EM Accuracy", _em_rows)
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
    """The metrics of a result format: open -> (EM, LLM), mcqa -> (MCQA,)."""
    return (EM, LLM) if fmt == "open" else (MCQA,) if fmt == "mcqa" else ()


def _series(ids, values):
    import numpy as np
    import pandas as pd

    index = pd.Index([str(i) for i in ids], name="problem_id")
    return pd.Series(np.asarray(values, dtype=np.float64), index=index)


def _csv_path(result) -> str:
    path = getattr(result, "csv", None)
    return os.fspath(path if path is not None else result)


def read_rows(result, metric: Metric | str | None = None):
    """The result CSV of ``result`` (a ``RunRecord`` or a path), checked to parse cleanly
    (``exact_match.read_whole``) and to carry ``metric``'s columns (default: those of the first
    metric of the ``RunRecord``'s format, the one its CSV rows are scored with)."""
    metric = metrics_for(result.fmt)[0] if metric is None else get_metric(metric)
    return read_whole(_csv_path(result), metric.columns)


FAILURE_KINDS = ("refused", "failed", "empty")
REFUSAL_MARKERS = ("responsibleaipolicyviolation", "content_filter", "content management policy")


def _text(value) -> str:
    return "" if value is None or (isinstance(value, float) and value != value) else str(value)


def row_failures(frame) -> list[str]:
    """Per CSV row: ``refused``, ``failed``, ``empty`` or ``""`` (a real answer), in that precedence.

    refused: any response column mentions a content filter (``REFUSAL_MARKERS``, case-insensitive);
    failed: ``generated_answer`` or ``full_response`` starts with ``ERROR`` (spec §3: every front door
    stores ``ERROR: <e>``), or ``selected_option`` is ``ERROR``; empty: the model's response
    (``full_response``, else ``generated_answer``) is empty or blank."""
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


FINISH_KEYS = ("finish_reason", "stop_reason")  # where backends put the provider's reason in Response.extra


def response_failure(response: dict) -> str:
    """``refused``, ``failed``, ``empty`` or ``""`` for one journaled response (``models.base.Response``
    fields): refused when the error or a finish reason (``FINISH_KEYS`` of ``extra``, ``refusal`` too) names
    a content filter; failed for any other error; empty for a null or blank text."""
    extra = response.get("extra") or {}
    reasons = " ".join(str(extra.get(k) or "") for k in FINISH_KEYS).lower()
    said = f"{response.get('error') or ''} {reasons}".lower()
    if any(marker in said for marker in REFUSAL_MARKERS) or "refusal" in reasons:
        return "refused"
    if response.get("error") is not None:
        return "failed"
    return "" if (response.get("text") or "").strip() else "empty"


def failure_series(frame, result=None):
    """Per CSV row, indexed by problem_id (text), file order: ``response_failure`` of the row's journaled
    response where ``result`` (a ``results.RunRecord``) has one, else ``row_failures`` of the CSV text."""
    import pandas as pd

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
    """``LLM``: the judge's per-problem accuracies from the run record's journaled verdicts
    (``results.RunRecord.judge_accuracies``), else ``problem_accuracies`` of the judge JSON (module docstring);
    None if neither. A JSON judgement of other content than the CSV now holds is refused
    (``exact_match.check_judgement``)."""
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
    """Per-row scores of ``metric`` for ``result`` (a ``results.RunRecord`` or a CSV path).

    Series of floats in [0, 1] indexed by problem_id (text), file order; None if the judge was not
    run. ``legacy_floor``: the original variance_analysis's ``// 100`` of judge percentages.
    ``frame``: the CSV already read (``read_rows``), to avoid reading it twice. Raises
    ``ResultFileError`` (one-line message naming the file) for a file that cannot be scored.
    """
    metric = get_metric(metric)
    if metric.source == "judge":
        return judge_scores(result, legacy_floor, frame)
    if frame is None:
        frame = read_rows(result, metric)
    else:
        check_columns(frame, metric.columns, _csv_path(result))
    return _series(frame["problem_id"], metric.row_score(frame))
