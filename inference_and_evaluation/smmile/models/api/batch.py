"""`--batch`: the OpenAI / Azure OpenAI Batch API and Anthropic Message Batches behind `ApiBackend.generate`.

Bodies are the synchronous path's (`ApiBackend.prepare`), keyed by custom_id = journal key; results are matched by
custom_id and handed to `on_done` as collected. The ledger of batches in flight: docs/architecture.md.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from ...appendlog import AppendLog
from ...errors import UserError
from ..base import Response
from .accounting import batch_cost
from .request import TooLarge, import_sdk
from .retry import Failure, status_failure

log = logging.getLogger("smmile.batch")

POLL_INTERVAL = 60.0  # seconds between status checks of open batches (--poll-interval)
WINDOW_S = 24 * 3600  # completion window of both providers
GRACE_S = 3600  # an open batch this long past its expiry is canceled (the provider should have ended it)
# (requests, bytes) per batch: OpenAI 50,000 requests and a 200 MB input file; Azure 100,000 and 200 MB;
# Anthropic 100,000 requests or 256 MB
LIMITS = {"openai": (50_000, 200 * 1024 * 1024), "azure-openai": (100_000, 200 * 1024 * 1024),
          "anthropic": (100_000, 256 * 1024 * 1024)}
ANTHROPIC_TRANSIENT = {"api_error", "overloaded_error", "rate_limit_error", "timeout_error"}
_CUSTOM_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


def supported(backend) -> None:
    if backend.name not in LIMITS:
        raise UserError(f"--batch is for the OpenAI, Azure OpenAI and Anthropic backends, not {backend.name}")


def custom_id(key: str) -> str:
    """The key itself when the providers accept it as a custom_id (journal keys do), else its sha256."""
    return key if _CUSTOM_ID.fullmatch(key) else hashlib.sha256(key.encode()).hexdigest()


class Ledger:
    """The in-flight batches of one journal (None: kept in memory only, e.g. the judge's --no-cache)."""

    def __init__(self, journal):
        self.journal = None
        if journal is not None:
            path = journal.path
            stem = path.name[: -len(".journal.jsonl")] if path.name.endswith(".journal.jsonl") else path.stem
            self.journal = AppendLog(path.with_name(f"{stem}.batches.jsonl"))

    def open_batches(self, provider: str) -> list[dict]:
        recs = self.journal.records() if self.journal is not None else {}
        return [r["batch"] for r in recs.values() if r.get("state") == "submitted"
                and isinstance(r.get("batch"), dict) and r["batch"].get("provider") == provider]

    def record(self, batch_id: str, state: str, **batch) -> None:
        if self.journal is not None:
            self.journal.append({"key": f"batch:{batch_id}", "state": state, **batch, "time": time.time()})

    def close(self) -> None:
        if self.journal is not None:
            self.journal.close()


@dataclass
class Result:
    text: str = ""
    usage: dict = field(default_factory=dict)
    failure: Failure | None = None


@dataclass
class Status:
    ended: bool
    state: str
    done: int
    total: int


def request_body(wire: dict) -> dict:
    """The JSON body the SDK sends for `wire` (its keyword arguments): `extra_body` merged in."""
    body = {k: v for k, v in wire.items() if k != "extra_body"}
    extra = {"extra_headers", "extra_query", "timeout"} & body.keys()
    if extra:
        raise UserError(f"--batch cannot send per-request {', '.join(sorted(extra))}")
    return {**body, **(wire.get("extra_body") or {})}


class OpenAIBatches:
    """Files + /batches of OpenAI, or of Azure OpenAI (`/openai/files`, `/openai/batches`; deployment as model)."""

    def __init__(self, backend):
        openai = import_sdk("openai", "--batch")
        args = {**backend._client_args, **backend.header_args(openai), "max_retries": backend.policy.max_retries,
                "timeout": backend.timeout}
        self.azure = backend.name == "azure-openai"
        if self.azure:
            if args["api_version"] < "2024-07-01":  # batches came with 2024-07-01-preview
                args["api_version"] = "2024-10-21"
            self.client, self.url = openai.AzureOpenAI(**args), "/chat/completions"
        else:
            self.client, self.url = openai.OpenAI(**args), "/v1/chat/completions"
        self.sdk, self.backend = openai, backend

    def line(self, cid: str, body: dict) -> bytes:
        return (json.dumps({"custom_id": cid, "method": "POST", "url": self.url, "body": body},
                           ensure_ascii=False) + "\n").encode()

    def submit(self, lines: list[bytes]) -> dict:
        upload = self.client.files.create(file=("smmile-batch.jsonl", b"".join(lines)), purpose="batch")
        batch = self.client.batches.create(input_file_id=upload.id, endpoint=self.url, completion_window="24h")
        return {"id": batch.id, "input_file_id": upload.id, "expires_at": batch.expires_at}

    def status(self, batch_id: str) -> Status:
        b = self.client.batches.retrieve(batch_id)
        counts = b.request_counts
        done = (counts.completed + counts.failed) if counts else 0
        return Status(b.status in ("completed", "failed", "expired", "cancelled"), b.status, done,
                      counts.total if counts else 0)

    def results(self, batch_id: str) -> tuple[dict[str, Result], Failure | None]:
        """Results by custom_id, and why items without one are missing (a batch that failed validation)."""
        b = self.client.batches.retrieve(batch_id)
        out: dict[str, Result] = {}
        for file_id in (b.output_file_id, b.error_file_id):
            if file_id:
                for raw in self.client.files.content(file_id).text.splitlines():
                    if raw.strip():
                        rec = json.loads(raw)
                        out[rec["custom_id"]] = self.result(rec)
        why = None
        if b.status == "failed":
            errors = getattr(getattr(b, "errors", None), "data", None) or []
            why = Failure(f"batch {batch_id} failed: " + "; ".join(str(e.message) for e in errors), True)
        return out, why

    def result(self, rec: dict) -> Result:
        error, response = rec.get("error"), rec.get("response") or {}
        if error:  # e.g. batch_expired
            return Result(failure=Failure(f"{error.get('code')}: {error.get('message')}", True))
        body = response.get("body") or {}
        status = response.get("status_code", 200)
        if status != 200:
            message = (body.get("error") or {}).get("message") if isinstance(body, dict) else None
            return Result(failure=status_failure(f"Error code: {status} - {message or body}", status))
        try:
            text, usage = self.backend.reply_of(self.sdk.types.chat.ChatCompletion.model_validate(body))
        except Exception as exc:  # noqa: BLE001 - classified like a synchronous reply
            return Result(failure=self.backend.classify(exc))
        return Result(text, usage)

    def cancel(self, batch_id: str) -> None:
        self.client.batches.cancel(batch_id)


class AnthropicBatches:
    """Message Batches (`/v1/messages/batches`, results from the batch's `results_url`)."""

    def __init__(self, backend):
        anthropic = import_sdk("anthropic", "--batch")
        self.client = anthropic.Anthropic(**backend._client_args, max_retries=backend.policy.max_retries,
                                          timeout=backend.timeout)
        self.sdk, self.backend = anthropic, backend

    def line(self, cid: str, body: dict) -> bytes:
        return (json.dumps({"custom_id": cid, "params": body}, ensure_ascii=False) + "\n").encode()

    def submit(self, lines: list[bytes]) -> dict:
        batch = self.client.messages.batches.create(requests=[json.loads(line) for line in lines])
        return {"id": batch.id, "expires_at": batch.expires_at.timestamp() if batch.expires_at else None}

    def status(self, batch_id: str) -> Status:
        b = self.client.messages.batches.retrieve(batch_id)
        c = b.request_counts
        done = c.succeeded + c.errored + c.canceled + c.expired
        return Status(b.processing_status == "ended", b.processing_status, done, done + c.processing)

    def results(self, batch_id: str) -> tuple[dict[str, Result], Failure | None]:
        out: dict[str, Result] = {}
        for rec in self.client.messages.batches.results(batch_id):
            r = rec.result
            if r.type == "succeeded":
                try:
                    out[rec.custom_id] = Result(*self.backend.reply_of(r.message))
                except Exception as exc:  # noqa: BLE001 - classified like a synchronous reply
                    out[rec.custom_id] = Result(failure=self.backend.classify(exc))
            elif r.type == "errored":
                err = getattr(r.error, "error", None) or r.error
                kind, message = getattr(err, "type", "error"), getattr(err, "message", str(err))
                out[rec.custom_id] = Result(failure=Failure(f"{kind}: {message}", kind in ANTHROPIC_TRANSIENT))
            else:  # canceled, expired
                out[rec.custom_id] = Result(failure=Failure(f"batch request {r.type}", True))
        return out, None

    def cancel(self, batch_id: str) -> None:
        self.client.messages.batches.cancel(batch_id)


def provider_api(backend):
    return (AnthropicBatches if backend.name == "anthropic" else OpenAIBatches)(backend)


class BatchRun:
    """One `generate` through batches; the backend's `item_keys`: id(item) -> journal key (positions if none)."""

    def __init__(self, backend, work: list[tuple[Any, Any]], on_done: Callable):
        self.backend, self.on_done = backend, on_done
        self.api = provider_api(backend)
        self.ledger = Ledger(backend.journal)
        self.poll_interval = float(backend.settings.get("poll_interval") or POLL_INTERVAL)
        self.max_requests, self.max_bytes = LIMITS[backend.name]
        self.pending: dict[str, tuple[Any, Any, str]] = {}  # custom_id -> (item, request, key)
        for i, (item, req) in enumerate(work):
            key = (backend.item_keys or {}).get(id(item), f"item-{i}")
            self.pending[custom_id(key)] = (item, req, key)
        self.lines: dict[str, tuple[bytes, dict]] = {}  # custom_id -> (batch line, notes)
        self.open: dict[str, dict] = {}  # batch id -> ledger entry
        self.attempts: dict[str, int] = {}
        self.started = time.monotonic()

    def line(self, cid: str) -> bytes | None:
        """The batch line of `cid` (built once); None when it is not sent (too large: answered here)."""
        if cid not in self.lines:
            item, req, _ = self.pending[cid]
            if req.followup is not None:
                raise UserError("--batch cannot ask follow-up turns; run this model without --batch")
            try:
                wire, notes = self.backend.prepare(req)
                line = self.api.line(cid, request_body(wire))
                if len(line) > self.max_bytes:
                    raise TooLarge(f"request of {len(line)} bytes exceeds the {self.max_bytes}-byte batch limit")
            except TooLarge as exc:
                self.finish(cid, self.backend.not_sent(req, exc))
                return None
            self.backend.stats["downscaled_images"] += notes["downscaled_images"]
            self.lines[cid] = (line, notes)
        return self.lines[cid][0]

    def submit(self, cids: list[str]) -> None:
        chunk: list[str] = []
        size = 0
        for cid in cids:
            line = self.line(cid)
            if line is None:
                continue
            if chunk and (len(chunk) >= self.max_requests or size + len(line) > self.max_bytes):
                self.submit_chunk(chunk)
                chunk, size = [], 0
            chunk.append(cid)
            size += len(line)
        if chunk:
            self.submit_chunk(chunk)

    def submit_chunk(self, cids: list[str]) -> None:
        info = self.api.submit([self.lines[c][0] for c in cids])
        entry = {**info, "provider": self.backend.name, "endpoint": self.backend.endpoint(),
                 "model": self.backend.model, "submitted": time.time(),
                 "custom_ids": {c: self.pending[c][2] for c in cids}}
        self.ledger.record(entry["id"], "submitted", batch=entry)  # the moment the provider returned its id
        self.open[entry["id"]] = entry
        for c in cids:
            self.attempts[c] = self.attempts.get(c, 0) + 1
        self.backend.meter.requests += len(cids)
        log.info("batch %s: submitted %d %s", entry["id"], len(cids), self.backend.unit)

    def finish(self, cid: str, response: Response) -> None:
        item = self.pending.pop(cid)[0]
        self.backend.meter.add(response.usage)
        self.backend.stats["failed_problems"] += response.error is not None
        self.on_done(item, response)

    def collect(self, batch_id: str, gone: bool = False) -> list[str]:
        """Hand the collected results of `batch_id` to on_done; returns the custom_ids to submit again."""
        entry = self.open.pop(batch_id)
        results, why = ({}, Failure(f"batch {batch_id} is no longer known to the provider", True)) if gone \
            else self.api.results(batch_id)
        again = []
        for cid in entry["custom_ids"]:
            if cid not in self.pending:
                continue  # journaled already (a rerun), or answered by a newer batch
            result = results.get(cid)
            failure = result.failure if result is not None else (why or Failure("missing from the batch results", True))
            if result is not None and failure is None:
                self.finish(cid, self.response(cid, batch_id, result))
            elif failure.transient and self.attempts.get(cid, 0) <= self.backend.policy.max_retries:
                again.append(cid)
            else:
                self.finish(cid, self.response(cid, batch_id, Result(failure=failure)))
        self.ledger.record(batch_id, "gone" if gone else "collected")
        return again

    def response(self, cid: str, batch_id: str, result: Result) -> Response:
        req = self.pending[cid][1]
        notes = self.lines[cid][1] if cid in self.lines else {}
        usage = {**result.usage, "requests": 1}
        cost = batch_cost(self.backend.meter.cost_of(usage))  # batch requests are billed at a discount
        extra = {"batch": batch_id, "attempts": max(1, self.attempts.get(cid, 1)), **notes}
        if result.failure is not None:
            result.failure.message = self.backend.scrub(result.failure.message)
        return self.backend.respond(req, result.text, usage, cost, result.failure, extra)

    def run(self) -> None:
        try:
            for entry in self.ledger.open_batches(self.backend.name):
                mine = [c for c in entry.get("custom_ids", {}) if c in self.pending]
                if mine:
                    self.open[entry["id"]] = entry
                    for c in mine:
                        self.attempts[c] = self.attempts.get(c, 0) + 1
                    log.info("batch %s: re-attached (%d %s in flight)", entry["id"], len(mine), self.backend.unit)
            covered = {c for e in self.open.values() for c in e["custom_ids"]}
            self.submit([c for c in self.pending if c not in covered])
            self.wait()
        finally:
            self.ledger.close()

    def wait(self) -> None:
        shown: dict[str, tuple] = {}
        canceled: set[str] = set()
        while self.open:
            for batch_id in list(self.open):
                try:
                    status = self.api.status(batch_id)
                except Exception as exc:  # noqa: BLE001 - only 'not found' is handled; the rest stops the run
                    if not isinstance(exc, self.api.sdk.NotFoundError):
                        raise
                    self.submit(self.collect(batch_id, gone=True))
                    continue
                if shown.get(batch_id) != (status.state, status.done):
                    shown[batch_id] = (status.state, status.done)
                    log.info("batch %s: %s, %d/%d done (%s)", batch_id, status.state, status.done, status.total,
                             _duration(time.monotonic() - self.started))
                if status.ended:
                    self.submit(self.collect(batch_id))
                elif batch_id not in canceled and time.time() > _expiry(self.open[batch_id]) + GRACE_S:
                    log.info("batch %s: still %s %s past its window; canceling it", batch_id, status.state,
                             _duration(GRACE_S))
                    self.api.cancel(batch_id)
                    canceled.add(batch_id)
            if self.open:
                time.sleep(self.poll_interval)


def _expiry(entry: dict) -> float:
    expires = entry.get("expires_at")
    return float(expires) if isinstance(expires, (int, float)) else float(entry.get("submitted", 0)) + WINDOW_S


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 60}m{seconds % 60:02d}s"
