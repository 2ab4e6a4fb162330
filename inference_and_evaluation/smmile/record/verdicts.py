"""The judge's verdicts on a result's rows, written by ``smmile judge`` beside the rows it judged
(``.smmile/<stem>.verdicts.json``, ``naming.verdicts_path``): who judged, the sha256 of the CSV bytes judged,
each judge's journal, the per-problem accuracies and one entry per row (the reply, its verdict and status, and for a
jury each member's). Scoring reads the verdicts from here, never by rebuilding the judge's prompts; they count
only for the CSV content they judged."""

from __future__ import annotations

import math
import os

from smmile.fsguard import atomic_write_json, read_json
from smmile.record.naming import verdicts_path

FORMAT = 1
JURY = "jury"  # a jury's own verdict, beside its members'


def write(csv_path: str | os.PathLike, sha256: str, judge: dict, journals: list[str] | None, accuracies: dict,
          rows: list[dict]) -> None:
    """Record the verdicts on the CSV's rows (``rows``: the judged rows as ``_judgements.jsonl`` holds them)."""
    path = verdicts_path(csv_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_json(path, {"format": FORMAT, "result_file": os.path.basename(csv_path), "result_sha256": sha256,
                             "judge": judge, "journals": journals, "problem_accuracies": accuracies, "rows": rows})


def read(csv_path: str | os.PathLike, sha256: str | None) -> dict | None:
    """The verdicts recorded for the CSV holding the bytes ``sha256``; None when there are none for them."""
    data = read_json(verdicts_path(csv_path))
    if not data or sha256 is None or data.get("format") != FORMAT or data.get("result_sha256") != sha256:
        return None
    return data if isinstance(data.get("problem_accuracies"), dict) and isinstance(data.get("rows"), list) else None


def by_judge(rows) -> dict[str, dict[str, float]]:
    """judge label (a jury's own verdict: ``JURY``) -> problem_id -> 0/1 or NaN (no parseable verdict, or a
    failed request), from a problem's first row."""
    out: dict[str, dict[str, float]] = {}
    for rec in (r for r in rows if isinstance(r, dict)):
        own = rec.get("value") if rec.get("status") == "ok" else None
        jury = rec.get("jury")
        members = jury + [{"judge": JURY, "value": own}] if isinstance(jury, list) else [
            {"judge": f"{rec.get('backend')}:{rec.get('model')}", "value": own}]
        pid = str(rec.get("problem_id"))
        for m in members:
            value = m.get("value")
            out.setdefault(str(m.get("judge")), {}).setdefault(pid, float(value) if value in (0, 1) else math.nan)
    return out


def replies(rows) -> dict[str, tuple]:
    """problem_id -> (reply, status) of its first row."""
    found: dict = {}
    for rec in (r for r in rows if isinstance(r, dict)):
        found.setdefault(str(rec.get("problem_id")), (rec.get("reply"), rec.get("status")))
    return found


def members(rows) -> dict[str, list[dict]]:
    """problem_id -> a jury's members on its first row (``judge``, ``reply``, ``value``, ``status``); {} for one judge."""
    found: dict = {}
    for rec in (r for r in rows if isinstance(r, dict) and isinstance(r.get("jury"), list)):
        found.setdefault(str(rec.get("problem_id")), [m for m in rec["jury"] if isinstance(m, dict)])
    return found


def judges(judge: dict | None) -> list[str]:
    """The judges of a judge identity or reply row as ``smmile agreement`` names them (``BACKEND:MODEL``); a jury's
    members (a row's by their ``judge`` label, an identity's by backend and model)."""
    if not isinstance(judge, dict):
        return []
    if judge.get("backend") == JURY:
        return [m.get("judge") or f"{m.get('backend')}:{m.get('model')}" for m in judge.get("jury") or []
                if isinstance(m, dict) and (m.get("judge") or m.get("backend") and m.get("model"))]
    if not judge.get("model"):
        return []
    return [f"{judge['backend']}:{judge['model']}" if judge.get("backend") else str(judge["model"])]
