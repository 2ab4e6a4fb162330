"""The one journaled executor of inference and judging: plan, skip what is journaled, run the rest through
`backend.generate(work, on_done)` (concurrency, retries, batching are the backend's), append each reply as a
`RESPONSES_FORMAT` record as it comes, with the request as it was sent. Journal keys (`digest`) hash everything that changes what a backend is
asked (run identity, problem id, planned item, rendered request): a change to prompt rendering is a new model
call, a change to how rows are derived from responses is not."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time
from dataclasses import asdict, dataclass, fields
from typing import Any, Callable

from ..appendlog import AppendLog
from ..models.base import Backend, Response
from ..protocol.problem import ImageRef

# Record format of the runner's journals: 2 = backend responses + planned items (rows derived when written).
# Format 1 (no "v") held derived CSV rows; such journals are refused, never silently reused or dropped.
RESPONSES_FORMAT = 2


class Journal(AppendLog):
    """An `AppendLog` whose records, with `version` `RESPONSES_FORMAT`, must carry the runner's fields."""

    def wrong_fields(self, rec: dict) -> str | None:
        if self.version != RESPONSES_FORMAT:
            return None
        expected = {"index": int, "problem_id": str, "status": str, "response": dict, "item": dict}
        for name, kind in expected.items():
            if not isinstance(rec.get(name), kind):
                found = type(rec.get(name)).__name__ if name in rec else "missing"
                return f"its {name!r} is {found}, not {kind.__name__}"
        if rec["status"] not in ("ok", "error"):
            return f"its status is {rec['status']!r}, not 'ok' or 'error'"
        unknown = set(rec["response"]) - {f.name for f in fields(Response)}
        if unknown:
            return f"its response has fields no backend writes: {', '.join(sorted(unknown))}"
        checks = {"text": (str, type(None)), "error": (str, type(None)), "usage": (dict, type(None)),
                  "seconds": (int, float, type(None)), "extra": (dict, type(None))}
        for name, kinds in checks.items():
            if name in rec["response"] and not isinstance(rec["response"][name], kinds):
                return f"its response's {name!r} is {type(rec['response'][name]).__name__}"
        return None


def canonical(obj: Any) -> Any:
    """A JSON-able, deterministic form of a request or settings object (images by content digest)."""
    if isinstance(obj, ImageRef):
        return {"image_sha256": obj.digest.hex()}
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {"__type__": type(obj).__name__,
                **{f.name: canonical(getattr(obj, f.name)) for f in dataclasses.fields(obj)}}
    if isinstance(obj, dict):
        return {str(k): canonical(v) for k, v in sorted(obj.items(), key=lambda kv: str(kv[0]))}
    if isinstance(obj, (list, tuple)):
        return [canonical(v) for v in obj]
    if isinstance(obj, (set, frozenset)):
        return sorted(canonical(v) for v in obj)
    if isinstance(obj, bytes):
        return {"bytes_sha256": hashlib.sha256(obj).hexdigest()}
    if callable(obj):  # image preparation steps, follow-up turns: identified by their code's name
        return {"callable": f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', type(obj).__name__)}"}
    if obj is None or isinstance(obj, (str, int, float, bool)):
        return obj
    return repr(obj)


def digest(obj: Any, length: int = 24) -> str:
    text = json.dumps(canonical(obj), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:length]


@dataclass(frozen=True)
class Work:
    """One planned request. `planned`: the journal record's planned fields (`index`, `problem_id`, `item`);
    `item`: what the backend is handed with the request and hands back (the runner's Item, the judge's key)."""

    request: Any
    planned: dict
    item: Any


class Executor:
    """`work`: key -> Work. `empty_is_answer`: whether an ok record with an empty reply is reused (a local
    model's empty answer is its answer; a judge's empty reply is asked again)."""

    def __init__(self, journal: Journal | None, work: dict[str, Work], empty_is_answer: bool = False):
        self.journal, self.work, self.empty_is_answer = journal, work, empty_is_answer
        journaled = journal.records() if journal is not None else {}
        self.journaled = list(journaled.values())  # every record of this journal (a budget counts what they cost)
        self.records = {k: journaled[k] for k in work if k in journaled and self.reusable(journaled[k])}
        self.fresh: set[str] = set()  # keys answered by the backend in this run

    def reusable(self, record: dict) -> bool:
        return record["status"] == "ok" and (self.empty_is_answer or bool(record["response"].get("text")))

    @property
    def pending(self) -> list[str]:
        return [k for k in self.work if k not in self.records]

    def run(self, backend: Backend, on_record: Callable[[dict], None] | None = None) -> dict[str, dict]:
        """Records by key of every planned key answered, before or now (not those of a backend that stopped early)."""
        pending = self.pending
        by_item = {id(self.work[k].item): k for k in pending}

        def on_done(item, response: Response) -> None:
            key = by_item[id(item)]
            record = {"v": RESPONSES_FORMAT, "key": key, **self.work[key].planned,
                      "request": canonical(self.work[key].request),  # as sent (images by content digest)
                      "status": "error" if response.error is not None else "ok",
                      "response": {**asdict(response), "seconds": round(response.seconds, 4)}, "time": time.time()}
            if self.journal is not None:
                self.journal.append(record)
            self.records[key] = record
            self.fresh.add(key)
            if on_record is not None:
                on_record(record)

        try:
            if pending:
                backend.count_journaled(self.journaled)  # --max-cost counts what the journal's records cost
                backend.bind_journal(self.journal, by_item)  # --batch: custom_ids are keys, batches journaled
                backend.generate([(self.work[k].item, self.work[k].request) for k in pending], on_done)
        finally:
            if self.journal is not None:
                self.journal.close()
        return self.records

