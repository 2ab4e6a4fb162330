"""One row per item of a result, shared by the inspect and Every Eval Ever exports: the question, the request as
sent (where the run's journal recorded it), the response, the target and every score smmile gives it."""

from __future__ import annotations

import os
import re
from collections import defaultdict
from dataclasses import dataclass, field

from smmile.errors import UserError
from smmile.protocol.outputs import ALIASES
from smmile.record.naming import question_column
from smmile.scoring import metrics
from smmile.scoring.scores import Record, load_records


def scorer_name(metric: str) -> str:
    """The metric's display name as an identifier (``exact_match``, ``llm_as_a_judge``, ``mcqa``): its name in
    inspect_ai's scores."""
    return re.sub(r"\W+", "_", metrics.get_metric(metric).display.lower()).strip("_")


@dataclass
class Item:
    """One problem of a result as the exports write it."""

    problem_id: str
    question: str
    target: str
    response: str
    answer: str  # the extracted answer: generated_answer (open) or the selected letter (MCQA)
    failure: str  # "", "refused", "failed" or "empty" (metrics.failure_series)
    scores: dict[str, float] = field(default_factory=dict)  # metric name -> score in [0, 1]
    judge_reply: tuple | None = None  # (reply, status) of the judge's replies file
    verdicts: dict = field(default_factory=dict)  # judge (a jury's members, and "jury") -> its 0/1 (None: none)
    request: object = None  # the request as sent (JSON, images by digest), where the run's journal recorded it
    usage: dict = field(default_factory=dict)  # the journaled response's usage (tokens, cost)
    extra: dict = field(default_factory=dict)  # correct_option / options (MCQA)


def _verdict(value) -> float | None:
    return None if value is None or value != value else float(value)


def _text(value) -> str:
    return "" if value is None or (isinstance(value, float) and value != value) else str(value)


def grouped(results_dir: str) -> list[list[Record]]:
    """The scored records of ``results_dir`` grouped by result file (one group per result, in load order); a
    UserError when there is no such folder or no scorable result in it."""
    if not os.path.isdir(results_dir):
        raise UserError(f"results directory {results_dir} not found")
    groups: dict[str, list[Record]] = defaultdict(list)
    for record in load_records(results_dir):
        if record.result is not None and record.frame is not None:
            groups[os.fspath(record.result.csv)].append(record)
    if not groups:
        raise UserError(f"no scorable result files in {results_dir}")
    return list(groups.values())


def items(records: list[Record]) -> list[Item]:
    """The items of one result (first row of each problem id, file order) with the scores of ``records``."""
    result, frame = records[0].result, records[0].frame
    frame = frame.rename(columns={k: v for k, v in ALIASES.items() if k in frame and v not in frame})
    question = question_column(frame.columns)
    journaled = result.journal or {}
    judged = any(metrics.judged(r.metric) for r in records)
    replies, verdicts = (result.replies, result.verdicts) if judged else ({}, {})
    failures = next((r.failures for r in records if r.failures is not None), None)  # by problem id
    out, seen = [], set()
    for row in frame.to_dict("records"):
        pid = str(row["problem_id"])
        if pid in seen:
            continue
        seen.add(pid)
        entry = journaled.get(pid) or [{}]
        response = (entry[0].get("response") or {}) if len(entry) == 1 else {}
        mcqa = result.fmt == "mcqa"
        item = Item(pid, _text(row.get(question)), _text(row.get("correct_option" if mcqa else "true_answer")),
                    _text(row.get("full_response", row.get("generated_answer"))),
                    _text(row.get("selected_option" if mcqa else "generated_answer")),
                    "" if failures is None else str(failures.get(pid, "")),
                    judge_reply=replies.get(pid), request=entry[0].get("request") if len(entry) == 1 else None,
                    usage=response.get("usage") or {},
                    verdicts={judge: _verdict(by_id.get(pid)) for judge, by_id in verdicts.items()})
        if mcqa:
            item.extra = {"true_answer": _text(row.get("true_answer")), "correct_option": item.target}
        for record in records:
            if pid in record.scores.index and record.scores[pid] == record.scores[pid]:
                item.scores[record.metric] = float(record.scores[pid])
        out.append(item)
    return out
