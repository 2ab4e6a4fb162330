"""Run provenance for the report: the run record's manifest and who judged it (published results were produced
outside smmile and have no manifest)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from smmile import logs
from smmile.record import original
from smmile.record.verdicts import JURY, judges
from smmile.record.naming import evaluationllm_json_path
from smmile.record.run_record import manifest_of, read
from smmile.scoring.judge import FAILED as FAILED_STATUS, NO_MAJORITY, UNPARSEABLE

NO_MANIFEST = "no manifest (produced outside smmile)"
JUDGE_FIELDS = ("backend", "model", "protocol", "jury")


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


def named(judge: dict) -> str:
    """``BACKEND:MODEL (PROTOCOL)``; a jury's members, comma-separated, as its model."""
    model = ", ".join(judges(judge)) if judge.get("backend") == JURY else judge.get("model")
    return f"{judge.get('backend')}:{model} ({judge.get('protocol')})"


def judge_text(judge: dict | None) -> str:
    """One line for the runs table: the LLM numbers are credited only to the judge recorded as their writer,
    never to a failed later attempt."""
    if not judge:
        return ""
    record, replies = judge.get("record"), judge.get("replies") or {}
    failed = replies.get("status", {}).get(FAILED_STATUS, 0)
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
    with logs.silenced():  # the report said them when it scanned the folder
        judged = read(csv_path, "variance").judgement
    record = original.judge_record(csv_path) or (judged and {"judge": judged["judge"], "counts": {
        "rows": len(judged["rows"]),
        "unparseable": sum(r.get("status") in (UNPARSEABLE, NO_MAJORITY) for r in judged["rows"])}})
    replies = original.replies_summary(csv_path, JUDGE_FIELDS)
    if replies and replies.get("backend") == JURY:  # the members' names, not the first row's votes
        replies["jury"] = [{"judge": name} for name in judges(replies)]
    scored = judged is not None or evaluationllm_json_path(csv_path).exists()
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
