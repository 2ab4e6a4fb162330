"""Append-only JSONL journal: one record per finished problem, flushed and fsynced as it completes."""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..errors import UserError

# Record format of the runner's journals: 2 = backend responses + planned items (rows derived when written).
# Format 1 (no "v") held derived CSV rows; such journals are refused, never silently reused or dropped.
RESPONSES_FORMAT = 2


class Journal:
    """`version`: when set, every record must carry `"v": version` (older journals are refused)."""

    def __init__(self, path: Path, version: int | None = None):
        self.path = Path(path)
        self.version = version
        self._fh = None

    def records(self) -> dict[str, dict]:
        """Latest record per key. A torn last line (killed mid-write) is ignored."""
        latest: dict[str, dict] = {}
        if not self.path.exists():
            return latest
        with self.path.open(encoding="utf-8") as fh:
            for line in fh:
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if isinstance(rec, dict) and "key" in rec:
                    self._check_version(rec)
                    latest[rec["key"]] = rec
        return latest

    def _check_version(self, rec: dict) -> None:
        if self.version is not None and rec.get("v") != self.version:
            raise UserError(f"{self.path} was written by an earlier smmile version (format {rec.get('v', 1)}, "
                            f"this one reads format {self.version}); move it aside to rerun its problems")

    def append(self, record: dict) -> None:
        if self._fh is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._repair_tail()
            self._fh = self.path.open("a", encoding="utf-8")
        self._fh.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def _repair_tail(self) -> None:
        """Start appending on a fresh line if a previous run died mid-record."""
        if self.path.exists() and self.path.stat().st_size:
            with self.path.open("rb+") as fh:
                fh.seek(-1, os.SEEK_END)
                if fh.read(1) != b"\n":
                    fh.write(b"\n")

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None
