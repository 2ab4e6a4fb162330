"""Persistent judge cache: an append-only JSONL file (default ``<results_dir>/.smmile/judge_cache.jsonl``).

One line per successful, non-empty reply: ``{"key", "reply", "backend", "model", "options", "time"}``.
Lines are flushed and fsynced as they are written, so a crash loses at most the line being written;
a torn last line is ignored on load. Failed requests are never stored.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

CACHE_RELATIVE_PATH = Path(".smmile") / "judge_cache.jsonl"


class JudgeCache:
    """Thread-safe ``key -> reply`` store backed by an append-only JSONL file."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self._lock = threading.Lock()
        self._entries = self._load()
        self.hits = 0
        self.stores = 0

    @classmethod
    def for_results_dir(cls, results_dir: str | os.PathLike) -> "JudgeCache":
        return cls(Path(results_dir) / CACHE_RELATIVE_PATH)

    def _load(self) -> dict[str, str]:
        entries: dict[str, str] = {}
        if not self.path.exists():
            return entries
        with open(self.path, encoding="utf-8") as handle:
            for line in handle:
                try:
                    record = json.loads(line)
                    entries[record["key"]] = record["reply"]
                except (ValueError, KeyError, TypeError):
                    continue  # torn or foreign line
        return entries

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str) -> str | None:
        with self._lock:
            reply = self._entries.get(key)
            if reply is not None:
                self.hits += 1
            return reply

    def put(self, key: str, reply: str, settings) -> None:
        if not reply:
            return  # empty answers are never cached
        record = {"key": key, "reply": reply, "backend": settings.backend, "model": settings.model,
                  "options": settings.options(), "time": time.time()}
        line = json.dumps(record) + "\n"
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as handle:
                handle.write(line)
                handle.flush()
                os.fsync(handle.fileno())
            self._entries[key] = reply
            self.stores += 1
