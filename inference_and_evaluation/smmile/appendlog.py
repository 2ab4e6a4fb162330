"""An append-only JSONL journal: one fsynced object with a "key" per line; reading gives the latest record per key. A
record cut short by a kill is ignored; any other bad line is refused in one line naming the file and line. Nothing
is ever written through a symbolic link."""

from __future__ import annotations

import errno
import json
import os
import re
from pathlib import Path

from .errors import UserError
from .fsguard import NO_SPACE, DiskFull

_FIX = "delete that line (its problem is run again) or move the file aside (all its problems are run again)"
_CUT_SHORT = re.compile(r"-?[0-9.eE+-]*")  # what is left of a number a kill cut short
_CUT_ESCAPE = re.compile(r"u[0-9a-fA-F]{0,4}(\\u?[0-9a-fA-F]{0,4})?")  # ... or of a \uXXXX escape (pair)


class AppendLog:
    """`version`: when set, every record must carry `"v": version`; a subclass adds `wrong_fields` checks."""

    def __init__(self, path: Path, version: int | None = None):
        self.path = Path(path)
        self.version = version
        self._fh = None

    def records(self) -> dict[str, dict]:
        latest: dict[str, dict] = {}
        self._check_place()
        if not self.path.exists():
            return latest
        with self.path.open("rb") as fh:
            for number, line in enumerate(fh, 1):
                rec = self._parse(line.rstrip(b"\n").rstrip(b"\0"), number)  # a crash may leave zeros
                if rec is not None:
                    latest[rec["key"]] = rec
        return latest

    def _parse(self, line: bytes, number: int) -> dict | None:
        where = f"{self.path} line {number}"
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            if exc.end == len(line) and _cut_short(line[:exc.start].decode("utf-8", errors="replace")):
                return None  # cut in the middle of a character
            raise UserError(f"{where} is corrupt (not UTF-8 at byte {exc.start + 1}); {_FIX}") from None
        if not text.strip():
            return None
        try:
            rec = json.loads(text)
        except json.JSONDecodeError as exc:
            if _cut_short(text):
                return None
            raise UserError(f"{where} is corrupt ({exc.msg} at column {exc.colno}); {_FIX}") from None
        if not isinstance(rec, dict) or not isinstance(rec.get("key"), str):
            raise UserError(f"{where} is not a record of this journal (not an object with a \"key\"); {_FIX}")
        self._check_version(rec, number)
        if wrong := self.wrong_fields(rec):
            raise UserError(f"{where} is not a record of this journal ({wrong}); {_FIX}")
        return rec

    def wrong_fields(self, rec: dict) -> str | None:
        """What is wrong with a record of this journal's kind (any object with a "key" here), or None."""
        return None

    def _check_version(self, rec: dict, number: int) -> None:
        if self.version is None or rec.get("v") == self.version:
            return
        v = rec.get("v", 1 if "row" in rec else None)
        if not isinstance(v, int) or isinstance(v, bool):
            raise UserError(f"{self.path} line {number} is not a record of this journal (format {rec.get('v')!r}, "
                            f"expected {self.version}); {_FIX}")
        age = "an earlier" if v < self.version else "a later"
        raise UserError(f"{self.path} was written by {age} smmile version (line {number} has format {v}, this one "
                        f"reads format {self.version}); move it aside to rerun its problems")

    def _check_place(self) -> None:
        """Before any work: the journal's folder is a folder, and the journal is no symbolic link."""
        folder = self.path.parent
        if folder.exists() and not folder.is_dir():
            raise UserError(f"{folder} is a file, where smmile keeps its journals (a folder); move it aside and rerun")
        if self.path.is_symlink():
            raise UserError(f"the journal {self.path} is a symbolic link; smmile does not write through one: "
                            "replace it by the file it points to, or remove it, and rerun")

    def append(self, record: dict) -> None:
        if self._fh is None:
            self._check_place()
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._repair_tail()
            self._fh = os.fdopen(self._open(os.O_WRONLY | os.O_APPEND | os.O_CREAT), "a", encoding="utf-8")
        try:
            self._fh.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
            self._fh.flush()
            os.fsync(self._fh.fileno())
        except OSError as exc:
            if exc.errno in NO_SPACE:
                raise DiskFull(self.path, "the problems finished so far are kept there",
                               "rerun the same command to resume") from None
            raise

    def _open(self, flags: int) -> int:
        try:
            return os.open(self.path, flags | os.O_NOFOLLOW, 0o644)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                self._check_place()  # names the link
            raise

    def _repair_tail(self) -> None:
        """Start appending on a fresh line if a previous run died mid-record."""
        if self.path.exists() and self.path.stat().st_size:
            with os.fdopen(self._open(os.O_RDWR), "rb+") as fh:
                fh.seek(-1, os.SEEK_END)
                if fh.read(1) != b"\n":
                    fh.seek(0, os.SEEK_END)
                    fh.write(b"\n")

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


def _cut_short(text: str) -> bool:
    """Whether `text` is the start of a JSON object that a kill cut short (its end missing, nothing wrong)."""
    if not text.startswith("{"):
        return False
    try:
        json.loads(text)
        return False
    except json.JSONDecodeError as exc:
        rest = text[exc.pos:].strip()
        if exc.msg.startswith("Invalid \\uXXXX escape"):
            return _CUT_ESCAPE.fullmatch(rest) is not None
        return (exc.msg.startswith("Unterminated string") or not rest or _CUT_SHORT.fullmatch(rest) is not None
                or any(word.startswith(rest) for word in ("true", "false", "null")))
