"""`smmile batches ls|adopt|cancel DIR`: the batches a result folder's ledgers record, shown and acted on with the
provider (keys from the environment, the same egress rules as a run)."""

from __future__ import annotations

import logging
from pathlib import Path
from types import SimpleNamespace

from ...errors import UserError
from .batch_ledger import Ledger
from .egress import one_line

log = logging.getLogger(__name__)


def ledgers(folder: Path) -> list[Path]:
    """The batch ledgers under `folder`'s `.smmile` (the judge's included)."""
    root = Path(folder) / ".smmile"
    if not Path(folder).is_dir():
        raise UserError(f"{folder} is not a folder")
    return sorted(root.rglob("*.batches.jsonl")) if root.is_dir() else []


def journal_of(ledger: Path) -> SimpleNamespace:
    return SimpleNamespace(path=ledger.with_name(ledger.name.replace(".batches.jsonl", ".journal.jsonl")))


def backend_for(record: dict, allow: tuple[str, ...] = ()):
    """The backend a ledger record's batch was submitted with (provider, endpoint, model)."""
    from ...generation import GenerationSettings, RunSettings
    from .. import registry
    from ..presets_api import BACKENDS

    name = record.get("provider")
    if name not in BACKENDS:
        raise UserError(f"the ledger names an unknown provider {name!r}")
    settings = RunSettings(base_url=record.get("endpoint") or None if name != "azure-openai" else None,
                           api_model=record.get("model") or None, allow_key_for_host=tuple(allow), batch=True)
    return registry.build_backend(name, settings=settings, generation=GenerationSettings())


def rows(folder: Path, allow: tuple[str, ...] = ()) -> list[dict]:
    """One row per batch (and per unresolved submission) of every ledger: the ledger's state, and the
    provider's for those in flight."""
    from .batch_providers import provider_api

    out = []
    for path in ledgers(folder):
        ledger = Ledger(journal_of(path))
        records = ledger.records()
        for rec in records.values():
            kind, _, name = rec["key"].partition(":")
            if kind == "intent" and rec["state"] != "intent":
                continue
            entry = rec.get("batch") or rec.get("intent") or {}
            row = {"ledger": path.name, "batch": name if kind == "batch" else f"(unrecorded create, tag {name[:8]})",
                   "state": rec["state"], "problems": len(entry.get("custom_ids") or {}), "provider_state": ""}
            if kind == "batch" and rec["state"] == "submitted":
                backend = backend_for(entry, allow)
                with one_line(backend.scrub, backend.failure_line):
                    status = provider_api(backend).status(name)
                row["provider_state"] = f"{status.state} {status.done}/{status.total}"
            out.append(row)
    return out


def act(folder: Path, what: str, allow: tuple[str, ...] = ()) -> list[str]:
    """`adopt`: reconcile each ledger with the provider's list (as a run starts); `cancel`: cancel every batch
    in flight (the provider bills what it finished before). Returns one line per batch acted on."""
    from .batch import BatchRun

    done = []
    for path in ledgers(folder):
        ledger = Ledger(journal_of(path))
        pending = ledger.open_batches() + [{**i, "id": None} for i in ledger.intents_any()]
        ledger.close()
        for provider in dict.fromkeys(e["provider"] for e in pending):
            backend = backend_for(next(e for e in pending if e["provider"] == provider), allow)
            backend.journal = journal_of(path)
            run = BatchRun(backend, [], lambda *a: None)
            try:
                with one_line(backend.scrub, backend.failure_line):
                    done += _act(run, provider, what, path.name)
            finally:
                run.ledger.close()
    return done


def _act(run, provider: str, what: str, name: str) -> list[str]:
    before = run.ledger.batch_ids()
    run.reconcile()
    done = [f"{name}: adopted {b}" for b in sorted(run.ledger.batch_ids() - before)]
    if what == "cancel":
        for entry in run.ledger.open_batches(provider):
            run.provider(run.api.cancel, entry["id"])
            run.ledger.record("batch", entry["id"], "canceled")
            done.append(f"{name}: canceled {entry['id']} ({len(entry['custom_ids'])} problems)")
    return done
