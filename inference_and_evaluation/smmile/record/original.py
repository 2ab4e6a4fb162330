"""The files of the original's layout, read into the record: the faithful exports beside a result
(``<stem>_evaluation.json``, ``<stem>_evaluationllm.json`` and its judge record ``.manifest.json``, the replies
file ``<stem>_judgements.jsonl``) and a folder's ``model_stratification_*.json`` and ``evaluation_results.txt``.
They are the only record of the published outputs and of runs of the original code; where a run record exists,
scoring reads that instead (``record.run_record``)."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Iterator

from smmile.errors import UserError
from smmile.fsguard import read_json
from smmile.record.naming import (evaluation_json_path, evaluationllm_json_path, judge_record_path,
                                  judgements_path)
from smmile.record.result_csv import (ResultFileError, content_sha256, exclude_problems, read_csv_bytes,
                                      read_result_csv)
from smmile.record.verdicts import JURY
from smmile.runner.executor import Journal

EXPORTS = {"em": evaluation_json_path, "llm": evaluationllm_json_path}
VARIANCE_TABLE = "evaluation_results.txt"  # variance_analysis.py's default --output
JUDGE_CACHE = "judge_cache.jsonl"  # the judge's store before it had a journal (in <results>/.smmile)
log = logging.getLogger(__name__)


def read_export(path: str | os.PathLike):
    """The JSON at ``path`` (an export this library or the original wrote); OSError or ValueError as raised."""
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def exported(csv_path: str | os.PathLike, kind: str = "llm") -> dict | None:
    """``<stem>_evaluation.json`` (``em``) or ``_evaluationllm.json`` (``llm``) of a result; None when absent;
    ``ResultFileError`` when it has no usable ``problem_accuracies``."""
    path = EXPORTS[kind](csv_path)
    if not path.exists():
        return None
    try:
        data = read_export(path)
        for value in data["problem_accuracies"].values():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 100:
                raise ValueError(f"problem accuracy {value!r} is not a number in [0, 100]")
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ResultFileError(f"{path}: unusable judge file ({type(exc).__name__}: {exc})") from None
    return data


def judge_record(csv_path: str | os.PathLike) -> dict | None:
    """Which judge wrote ``<stem>_evaluationllm.json`` (from which journals, on which CSV content), or None."""
    record = read_json(judge_record_path(csv_path))
    if not isinstance(record, dict) or not isinstance(record.get("judge"), dict):
        return None
    if record["judge"].get("backend") == JURY:
        record["judge"].pop("model", None)  # until 2026-12-03 a jury also had a comma-joined "model"
    return record


def reply_records(csv_path: str | os.PathLike) -> Iterator[dict]:
    """The records of ``<stem>_judgements.jsonl`` (the last attempt's replies, which may have failed); OSError or
    ValueError on an unreadable file."""
    with open(judgements_path(csv_path), encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line) if line.strip() else None
            if isinstance(record, dict):
                yield record


def replies_summary(csv_path: str | os.PathLike, fields: tuple[str, ...]) -> dict | None:
    """Reply counts per status and the ``fields`` (those its rows have) of the judge named in
    ``<stem>_judgements.jsonl`` (the last attempt, which may have failed), or None without that file."""
    path = judgements_path(csv_path)
    if not os.path.exists(path):
        return None
    info: dict = {"replies": 0, "status": {}}
    try:
        for record in reply_records(csv_path):
            info["replies"] += 1
            status = str(record.get("status", "?"))
            info["status"][status] = info["status"].get(status, 0) + 1
            for key in (k for k in fields if k in record):
                info.setdefault(key, record[key])
    except (OSError, ValueError):
        return {"error": f"unreadable {os.path.basename(path)}"}
    return info


def check_judgement(csv_path: str | os.PathLike, judged: dict, frame=None) -> None:
    """``ResultFileError`` unless ``judged`` judged the CSV as it is now: the sha256 its judge record holds,
    else (the published outputs) the problem ids and row count. An unreadable CSV is not compared."""
    path = os.fspath(csv_path)
    json_name = os.path.basename(path)[:-len(".csv")] + "_evaluationllm.json"
    recorded = (read_json(judge_record_path(path)) or {}).get("result_sha256")
    try:
        content = read_csv_bytes(path) if isinstance(recorded, str) else None
        if frame is None and content is None:
            frame = read_result_csv(path)
    except ResultFileError:
        return
    if content is not None:
        now = content_sha256(content)
        if now != recorded:
            raise ResultFileError(f"{path}: its {json_name} judged other content (sha256 {recorded[:12]}, the "
                                  f"CSV is now {now[:12]}); judge scores refused, judge it again")
        return
    kept, _ = exclude_problems(frame)
    ids = {str(pid) for pid in kept["problem_id"]}
    judged_ids = {str(pid) for pid in judged.get("problem_accuracies", {})}
    rows = judged.get("total_examples")
    if judged_ids != ids or (isinstance(rows, int) and rows != len(kept)):
        other = len(judged_ids - ids)
        raise ResultFileError(f"{path}: its {json_name} judged other rows ({len(judged_ids)} problem(s), {rows} "
                              f"row(s), {other} not in the CSV; the CSV has {len(ids)} problem(s), {len(kept)} "
                              "row(s)); judge scores refused, judge it again")


def stratification(results_dir: str, kind: str, ci: bool = False):
    """stratify's ``model_stratification_<kind>[_ci].json`` of a folder: its data, None when absent, or the
    exception that made it unreadable."""
    path = os.path.join(results_dir, f"model_stratification_{kind}{'_ci' if ci else ''}.json")
    if not os.path.exists(path):
        return None
    try:
        return read_export(path)
    except (OSError, ValueError) as exc:
        return exc


def variance_table(results_dir: str) -> str | None:
    """variance_analysis's ``evaluation_results.txt`` of a folder, verbatim (None when absent or unreadable)."""
    try:
        with open(os.path.join(results_dir, VARIANCE_TABLE), encoding="utf-8") as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError):
        return None


def earlier_judge_cache(results_dir) -> dict:
    """The records of the judge's earlier store (``.smmile/judge_cache.jsonl``, only read) by key; {} when there
    is none or it cannot be read (said once: its rows are judged again)."""
    path = Path(results_dir) / ".smmile" / JUDGE_CACHE
    if not path.is_file():
        return {}
    try:
        return Journal(path).records()
    except UserError as exc:
        log.warning(f"note: {path} (the earlier judge cache) left aside, its rows are judged again: {exc}")
        return {}
