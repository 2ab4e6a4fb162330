"""The ledger of one journal's batches (`<stem>.batches.jsonl` beside it): an intent (tag, input file, custom_ids,
estimate) fsynced before each create, then each batch's life (submitted, collected, gone, canceled). A record that is
not of this ledger is refused in one line; one cut short by a kill is the last, and harmless (an intent is written
before its create, so a batch whose `submitted` record was lost is found again by reconciling the intent)."""

from __future__ import annotations

import time
from pathlib import Path

from ...appendlog import AppendLog
from ...errors import UserError

BATCH_STATES = {"submitted", "collected", "gone", "canceled"}
INTENT_STATES = {"intent", "created", "abandoned"}
FIX = ("move the ledger aside and rerun: the batches it lists are found again through the provider's list "
       "(`smmile batches ls DIR`)")


def _ids(value) -> bool:
    return isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())


class LedgerLog(AppendLog):
    def wrong_fields(self, rec: dict) -> str | None:
        kind, _, name = rec["key"].partition(":")
        state = rec.get("state")
        if kind == "batch" and state in BATCH_STATES:
            batch = rec.get("batch")
            if state != "submitted" and batch is None:
                return None
            if not isinstance(batch, dict) or batch.get("id") != name:
                return "its batch.id is missing or not the batch of its key"
            if not _ids(batch.get("custom_ids")) or not isinstance(batch.get("provider"), str):
                return "its batch has no custom_ids map or provider"
            return None
        if kind == "intent" and state in INTENT_STATES:
            intent = rec.get("intent")
            if state != "intent" and intent is None:
                return None
            if not isinstance(intent, dict) or intent.get("tag") != name or not _ids(intent.get("custom_ids")):
                return "its intent has no tag or custom_ids map"
            return None
        return f"key {rec['key']!r} with state {state!r}"

    def _check_place(self) -> None:
        """As the journal's: the `.smmile` folder may be a link (state kept on another disk), the ledger may not."""
        if self.path.is_symlink():
            raise UserError(f"the batch ledger {self.path} is a symbolic link; smmile does not write through one "
                            "(its journal neither): replace it by the file it points to and rerun")
        super()._check_place()
        if self.path.exists() and not self.path.is_file():  # a pipe or device would hang or lie
            raise UserError(f"the batch ledger {self.path} is not a regular file; move it aside and rerun")


class Ledger:
    """The batches of one journal (None: kept in memory only, e.g. the judge's --no-cache)."""

    def __init__(self, journal):
        self.log: LedgerLog | None = None
        self.memory: dict[str, dict] = {}
        if journal is not None:
            self.log = LedgerLog(ledger_path(journal.path))

    def records(self) -> dict[str, dict]:
        if self.log is None:
            return dict(self.memory)
        try:
            return self.log.records()
        except UserError as exc:
            where = str(exc).split("; ", 1)[0]
            raise UserError(f"{where}; {FIX}") from None

    def open_batches(self, provider: str | None = None) -> list[dict]:
        return [r["batch"] for r in self.records().values() if r["key"].startswith("batch:")
                and r.get("state") == "submitted" and (provider is None or r["batch"].get("provider") == provider)]

    def batch_ids(self) -> set[str]:
        return {r["key"][len("batch:"):] for r in self.records().values() if r["key"].startswith("batch:")}

    def intents(self, provider: str) -> list[dict]:
        """Intents whose create may have happened unrecorded (no `created` or `abandoned` after them)."""
        return [i for i in self.intents_any() if i.get("provider") == provider]

    def intents_any(self) -> list[dict]:
        return [r["intent"] for r in self.records().values() if r["key"].startswith("intent:")
                and r.get("state") == "intent"]

    def record(self, kind: str, name: str, state: str, **fields) -> None:
        rec = {"key": f"{kind}:{name}", "state": state, **fields, "time": time.time()}
        if self.log is not None:
            self.log.append(rec)
        else:
            self.memory[rec["key"]] = rec

    def close(self) -> None:
        if self.log is not None:
            self.log.close()


def result_dir(journal_path: Path) -> Path:
    """The result folder of a journal (the parent of its `.smmile` folder)."""
    path = Path(journal_path)
    for parent in path.parents:
        if parent.name == ".smmile":
            return parent.parent
    return path.parent


def ledger_path(journal_path: Path) -> Path:
    path = Path(journal_path)
    stem = path.name[: -len(".journal.jsonl")] if path.name.endswith(".journal.jsonl") else path.stem
    return path.with_name(f"{stem}.batches.jsonl")
