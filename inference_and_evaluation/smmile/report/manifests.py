"""Run provenance for the report: the runner's ``<stem>.manifest.json`` and the judge's records (published
results were produced outside smmile and have no manifest)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Iterator

from smmile.scoring.judge import FAILED as FAILED_STATUS
from smmile.scoring.naming import evaluationllm_json_path, judgements_path
from smmile.scoring.results import manifest_of

NO_MANIFEST = "no manifest (produced outside smmile)"
JUDGE_FIELDS = ("backend", "model", "protocol")


@dataclass
class RunInfo:
    """Where one result file came from: its manifest (None when absent) and the judge that scored it."""

    csv: str
    manifest: dict | None = None
    manifest_error: str | None = None
    judge: dict | None = None

    @property
    def name(self) -> str:
        return os.path.basename(self.csv)


def read_judge_record(csv_path: str) -> dict | None:
    """The judge that wrote ``<stem>_evaluationllm.json`` (judge_run's record beside it), or None."""
    from smmile.scoring.judge_run import record_path

    try:
        with open(record_path(csv_path), encoding="utf-8") as handle:
            record = json.load(handle)
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and isinstance(record.get("judge"), dict) else None


def judgement_records(csv_path: str) -> Iterator[dict]:
    """The records of ``<stem>_judgements.jsonl``; raises OSError or ValueError on an unreadable file."""
    with open(judgements_path(csv_path), encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line) if line.strip() else None
            if isinstance(record, dict):
                yield record


def read_replies(csv_path: str) -> dict | None:
    """Reply counts per status and the judge named in ``<stem>_judgements.jsonl`` (the last attempt, which
    may have failed), or None without that file."""
    path = judgements_path(csv_path)
    if not os.path.exists(path):
        return None
    info: dict = {"replies": 0, "status": {}}
    try:
        for record in judgement_records(csv_path):
            info["replies"] += 1
            status = str(record.get("status", "?"))
            info["status"][status] = info["status"].get(status, 0) + 1
            for key in JUDGE_FIELDS:
                info.setdefault(key, record.get(key))
    except (OSError, ValueError):
        return {"error": f"unreadable {os.path.basename(path)}"}
    return info


def judge_text(judge: dict | None) -> str:
    """One line for the runs table: the LLM numbers are credited only to the judge recorded as their writer,
    never to a failed later attempt."""
    if not judge:
        return ""
    record, replies = judge.get("record"), judge.get("replies") or {}
    failed = replies.get("status", {}).get(FAILED_STATUS, 0)
    named = lambda j: f"{j.get('backend')}:{j.get('model')} ({j.get('protocol')})"  # noqa: E731
    if "error" in replies:
        parts = [replies["error"]]
    elif record is not None:
        counts = record.get("counts") or {}
        parts = [f"scored by {named(record['judge'])}; {counts.get('rows', '?')} rows, "
                 f"{counts.get('unparseable', 0)} unparseable"]
    elif judge.get("scored") and replies and not failed:
        parts = [f"scored by {named(replies)}; {replies['replies']} replies (from the replies file)"]
    elif judge.get("scored"):
        parts = ["scored by a judge that was not recorded (e.g. the published outputs)"]
    else:
        parts = ["no judge scores"]
    if failed:
        parts.append(f"the last attempt, by {named(replies)}, failed for {failed} of {replies['replies']} rows "
                     "and was not used")
    return "; ".join(parts)


def run_info(csv_path: str) -> RunInfo:
    manifest, error = manifest_of(csv_path)
    error = error and f"unreadable manifest {os.path.basename(csv_path)[:-len('.csv')]}.manifest.json: {error}"
    # who produced the file's LLM-judge scores (None without a trace of a judge)
    record, replies = read_judge_record(csv_path), read_replies(csv_path)
    scored = os.path.exists(evaluationllm_json_path(csv_path))
    traced = record is not None or replies is not None or scored
    judge = {"record": record, "replies": replies, "scored": scored} if traced else None
    return RunInfo(csv=csv_path, manifest=manifest, manifest_error=error, judge=judge)


def _get(data: dict | None, *keys, default=None):
    for key in keys:
        if not isinstance(data, dict) or key not in data:
            return default
        data = data[key]
    return data


REVISION_KEYS = ("revision", "model_revision", "commit_hash", "commit", "sha")


def model_revision(manifest: dict) -> str:
    """The model's revision, wherever the runner or backend recorded one."""
    for section in ("model", "backend"):
        found = _get(manifest, section, default={}) or {}
        for key in REVISION_KEYS:
            if isinstance(found, dict) and found.get(key):
                return str(found[key])
    return ""


def _short_revision(revision: str) -> str:
    base, plus, rest = revision.partition("+")
    return base[:12] + plus + rest


def summary(info: RunInfo) -> dict:
    """The manifest fields the report shows, flattened to strings (absent → empty)."""
    m = info.manifest
    if m is None:
        return {"status": info.manifest_error or NO_MANIFEST}
    model = _get(m, "model", default={}) or {}
    dataset = _get(m, "dataset", default={}) or {}
    counts = _get(m, "counts", default={}) or {}
    backend = m.get("backend") if isinstance(m.get("backend"), dict) else {}  # the backend's own description
    return {
        "status": "manifest",
        "model": model.get("preset") or model.get("tag") or "",
        "model_id": model.get("model_id") or "",
        "model_revision": model_revision(m),
        "engine": ", ".join([f"{k}={v}" for k, v in backend.items()
                             if v not in (None, "") and not isinstance(v, (dict, list))][:6]),
        "backend": model.get("backend") or _get(m, "backend", "backend", default="") or "",
        "dataset": f"{dataset.get('kind', '')}: {dataset.get('id', '')}".strip(": "),
        "dataset_revision": dataset.get("revision") or "",
        "fingerprint": dataset.get("fingerprint") or "",
        "mode": m.get("inference_mode") or "",
        "format": m.get("task_format") or "",
        "protocol": m.get("protocol") or "",
        "created": m.get("created") or "",
        "git": _short_revision(m.get("smmile_git_revision") or ""),
        "rows": counts.get("rows", ""),
        "failed": counts.get("failed", len(m.get("failures") or [])),
        "command": " ".join(str(part) for part in m.get("command") or []),
    }
