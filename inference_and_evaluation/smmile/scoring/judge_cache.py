"""The judge's store and the one way replies are obtained: store first, then the API backend.

The store is the runner's ``Journal`` (append-only JSONL, one fsynced line per finished request, a torn
last line ignored), at ``<results_dir>/.smmile/judge_cache.jsonl``. A line:
``{"key", "status": "ok"|"error", "reply", "error", "backend", "model", "options", "usage", "seconds",
"attempts", "time"}``. Only an ``ok`` line with a non-empty reply answers a later request (lines of the
earlier cache format, without ``status``, count as ``ok``); failures and empty replies are kept for the
record and asked again.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from smmile.runner.journal import Journal
from smmile.scoring.judge import Fetched, JudgeSettings

CACHE_RELATIVE_PATH = Path(".smmile") / "judge_cache.jsonl"


class JudgeStore:
    """``key -> reply`` over a journal; ``record`` is called on the backend's single recorder thread."""

    def __init__(self, path: str | os.PathLike):
        self.journal = Journal(Path(path))
        self._replies = {key: rec["reply"] for key, rec in self.journal.records().items() if _usable(rec)}

    @classmethod
    def for_results_dir(cls, results_dir: str | os.PathLike) -> "JudgeStore":
        return cls(Path(results_dir) / CACHE_RELATIVE_PATH)

    def __len__(self) -> int:
        return len(self._replies)

    def get(self, key: str) -> str | None:
        return self._replies.get(key)

    def record(self, key: str, response, settings: JudgeSettings) -> None:
        rec = {"key": key, "status": "error" if response.error is not None else "ok",
               "reply": None if response.error is not None else response.text, "error": response.error,
               "backend": settings.backend, "model": settings.model, "options": settings.options(),
               "usage": response.usage, "seconds": round(response.seconds, 4),
               "attempts": response.extra.get("attempts"), "time": time.time()}
        self.journal.append(rec)
        if _usable(rec):
            self._replies[key] = rec["reply"]

    def close(self) -> None:
        self.journal.close()


def _usable(rec: dict) -> bool:
    return rec.get("status", "ok") == "ok" and isinstance(rec.get("reply"), str) and rec["reply"] != ""


def fetch(requests: dict[str, object], settings: JudgeSettings, backend, store: JudgeStore | None
          ) -> tuple[dict[str, Fetched], int]:
    """Replies for distinct requests (``key -> ChatRequest``): from the store, else through ``backend``
    (retries, concurrency, circuit breaker, scrubbing are the backend's), each recorded as it completes.
    Returns the replies and how many requests the backend answered (retries not counted). A request the
    backend never started (it stopped launching: judge unreachable, see its message) fails "not sent"."""
    fetched: dict[str, Fetched] = {}
    for key in requests:
        reply = store.get(key) if store is not None else None
        if reply is not None:
            fetched[key] = Fetched(reply, True)
    work = [(key, req) for key, req in requests.items() if key not in fetched]
    answered = []

    def on_done(key: str, response) -> None:
        answered.append(key)
        if store is not None:
            store.record(key, response, settings)
        fetched[key] = Fetched(None if response.error else response.text, False, response.error)

    if work:
        try:
            backend.generate(work, on_done)
        finally:
            if store is not None:
                store.close()
    for key, _ in work:
        fetched.setdefault(key, Fetched(None, False, "not sent: the judge stopped launching requests (see above)"))
    return fetched, len(answered)
