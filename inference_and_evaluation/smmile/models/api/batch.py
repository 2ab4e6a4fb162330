"""`--batch`: the OpenAI / Azure OpenAI Batch API and Anthropic Message Batches behind `ApiBackend.generate`.

Bodies are the synchronous path's (`ApiBackend.prepare`), keyed by custom_id = journal key; results are matched by
custom_id and handed to `on_done` as collected. Before each create an intent is fsynced to the ledger
(batch_ledger.py); a run starts by reconciling unresolved intents with the provider's list of batches, adopting what
the ledger missed, so a create whose answer was lost is never a second batch. `--max-cost` reserves each chunk's
at-most estimate (batch price) before it is submitted, batches in flight included. Polling outlives network blips
and 5xx for the batch window; failed batches are classified (quota: wait and split; invalid: stop, naming the line).
"""

from __future__ import annotations

import hashlib
import logging
import re
import time
import uuid
from typing import Any, Callable

from ...errors import UserError
from ..base import Response
from .accounting import batch_cost
from .batch_ledger import Ledger
from .batch_providers import QUOTA_CODES, Result, Status, provider_api, request_body
from .egress import ApiFailure, refusal
from .prices import BATCH_DISCOUNT
from .request import TooLarge
from .retry import Failure

log = logging.getLogger("smmile.batch")

POLL_INTERVAL = 60.0  # seconds between status checks of open batches (--poll-interval)
WINDOW_S = 24 * 3600  # completion window of both providers
GRACE_S = 3600  # an open batch this long past its expiry (as the provider reports it) is canceled; never on Azure
MAX_BACKOFF_S = 900.0  # longest wait between status checks after failures
CREATE_CHECKS = 3  # times the provider's list is searched for a create whose answer was lost
# (requests, bytes) per batch: OpenAI 50,000 requests and a 200 MB input file; Azure 100,000 and 200 MB;
# Anthropic 100,000 requests or 256 MB
LIMITS = {"openai": (50_000, 200 * 1024 * 1024), "azure-openai": (100_000, 200 * 1024 * 1024),
          "anthropic": (100_000, 256 * 1024 * 1024)}
_CUSTOM_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


def supported(backend) -> None:
    if backend.name not in LIMITS:
        raise UserError(f"--batch is for the OpenAI, Azure OpenAI and Anthropic backends, not {backend.name}")


def custom_id(key: str) -> str:
    """The key itself when the providers accept it as a custom_id (journal keys do), else its sha256."""
    return key if _CUSTOM_ID.fullmatch(key) else hashlib.sha256(key.encode()).hexdigest()


class BatchRun:
    """One `generate` through batches; the backend's `item_keys`: id(item) -> journal key (positions if none)."""

    def __init__(self, backend, work: list[tuple[Any, Any]], on_done: Callable):
        self.backend, self.on_done = backend, on_done
        self.api = provider_api(backend)
        self.ledger = Ledger(backend.journal)
        self.poll_interval = float(backend.settings.poll_interval or POLL_INTERVAL)
        self.max_requests, self.max_bytes = LIMITS[backend.name]
        self.pending: dict[str, tuple[Any, Any, str]] = {}  # custom_id -> (item, request, key)
        for i, (item, req) in enumerate(work):
            key = (backend.item_keys or {}).get(id(item), f"item-{i}")
            self.pending[custom_id(key)] = (item, req, key)
        self.lines: dict[str, tuple[bytes, dict, float]] = {}  # custom_id -> (batch line, notes, at-most cost)
        self.open: dict[str, dict] = {}  # batch id -> ledger entry
        self.attempts: dict[str, int] = {}
        self.deferred: list[str] = []  # not submitted yet: over --max-cost while batches were in flight
        self.quota_failures = 0
        deadline = backend.settings.deadline  # --deadline: seconds from now
        self.deadline = None if deadline is None else time.monotonic() + float(deadline)
        self.margin = 0.0 if deadline is None else max(2 * self.poll_interval, 0.1 * float(deadline))
        self.hurry = False  # the deadline is near: no more batches, the stragglers go synchronously
        self.started = time.monotonic()
        self.meter = backend.meter
        self.meter.discount = BATCH_DISCOUNT
        backend.batch_run = self

    # -- building and submitting ------------------------------------------------------------------
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
            at_most = batch_cost(self.meter.cost_of({"input_tokens": notes["estimated_input_tokens"],
                                                     "output_tokens": self.backend.output_cap(req) or 0}))
            self.lines[cid] = (line, notes, at_most or 0.0)
        return self.lines[cid][0]

    def submit(self, cids: list[str]) -> None:
        cids = [*self.deferred, *(c for c in cids if c not in self.deferred)]
        self.deferred = []
        limit = min(self.max_requests, self.split or self.max_requests)
        chunk: list[str] = []
        size = 0
        for cid in cids:
            if self.deferred:  # over budget: the rest waits behind it, in order
                self.deferred.append(cid)
                continue
            line = self.line(cid)
            if line is None:
                continue
            if chunk and (len(chunk) >= limit or size + len(line) > self.max_bytes):
                self.submit_chunk(chunk)
                chunk, size = [], 0
                if self.deferred:
                    self.deferred.append(cid)
                    continue
            chunk.append(cid)
            size += len(line)
        if chunk:
            self.submit_chunk(chunk)

    def submit_chunk(self, cids: list[str]) -> None:
        estimate = sum(self.lines[c][2] for c in cids)
        if not self.meter.fits(estimate):
            self.deferred.extend(cids)  # tried again once the batches in flight are collected
            return
        lines = [self.lines[c][0] for c in cids]
        why = ""
        for _ in range(self.backend.policy.max_retries + 1):
            file_id = self.provider(self.api.upload, lines)
            if file_id is not None:
                self.wait_processed(file_id)
            intent = {"tag": uuid.uuid4().hex, "provider": self.backend.name, "endpoint": self.backend.endpoint(),
                      "model": self.backend.model, "input_file_id": file_id, "estimate_usd": round(estimate, 6),
                      "custom_ids": {c: self.pending[c][2] for c in cids}, "time": time.time()}
            self.ledger.record("intent", intent["tag"], "intent", intent=intent)  # fsynced before the create
            try:
                info = self.api.create(file_id, lines, intent["tag"])
                break
            except Exception as exc:  # noqa: BLE001 - an answer lost on the way may hide a batch that was created
                if not self.ambiguous(exc):
                    self.abandon(intent)
                    raise
                why = self.backend.scrub(self.backend.classify(exc).message)
                found = self.find_again(intent, why)
                if found is not None:
                    info = {"id": found, "input_file_id": file_id, "expires_at": None}
                    break
                self.abandon(intent)
        else:
            raise ApiFailure(f"{self.backend.provider} at {self.backend.endpoint()} failed to create a batch "
                             f"{self.backend.policy.max_retries + 1} times (last: {why}), and lists none of them; "
                             "rerun the same command to try again")
        self.attach(self.adopt(intent, info))
        self.meter.estimated_input_tokens += sum(self.lines[c][1]["estimated_input_tokens"] for c in cids)
        self.meter.estimated_output_cap += sum(self.backend.output_cap(self.pending[c][1]) or 0 for c in cids)
        self.meter.requests += len(cids)
        for c in cids:
            self.attempts[c] = self.attempts.get(c, 0) + 1

    def abandon(self, intent: dict) -> None:
        """An intent whose create did not happen: recorded as such, its uploaded file deleted."""
        self.ledger.record("intent", intent["tag"], "abandoned")
        self.cleanup([intent.get("input_file_id")])

    def adopt(self, intent: dict, info: dict) -> dict:
        """Record the batch of `intent` (created now, or found in the provider's list)."""
        entry = {**info, "tag": intent["tag"], "provider": intent["provider"], "endpoint": intent["endpoint"],
                 "model": intent["model"], "submitted": time.time(), "estimate_usd": intent.get("estimate_usd", 0.0),
                 "custom_ids": intent["custom_ids"]}
        self.ledger.record("batch", entry["id"], "submitted", batch=entry)
        self.ledger.record("intent", intent["tag"], "created", batch_id=entry["id"])
        log.info("batch %s: submitted %d %s", entry["id"], len(entry["custom_ids"]), self.backend.unit)
        return entry

    def attach(self, entry: dict) -> None:
        self.open[entry["id"]] = entry
        self.meter.reserved += float(entry.get("estimate_usd") or 0.0)

    def ambiguous(self, exc: BaseException) -> bool:
        """Whether a failed create may still have created the batch (no answer, or a server error)."""
        failure = self.backend.classify(exc)
        return failure.transient and failure.status not in (429,)

    def find_again(self, intent: dict, why: str) -> str | None:
        """The batch a create that failed (`why`, no answer or a server error) may have made, searched for in the
        provider's list; None when, after CREATE_CHECKS looks, it lists none."""
        for check in range(CREATE_CHECKS):
            found = self.unknown(self.provider(self.api.find, intent))
            if len(found) == 1:
                log.info("batch %s: the create's answer was lost (%s); found it in the provider's list", found[0], why)
                return found[0]
            if len(found) > 1:
                raise UserError(f"a batch create failed ({why}) and {len(found)} batches of the provider match it "
                                f"({', '.join(found)}); see `smmile batches ls DIR` and cancel the extra ones")
            time.sleep(min(MAX_BACKOFF_S, self.poll_interval * 2 ** check))
        log.info("batch create failed (%s) and no batch of the provider matches it: creating it again", why)
        return None

    def unknown(self, batch_ids: list[str]) -> list[str]:
        known = self.ledger.batch_ids()
        return [b for b in batch_ids if b not in known]

    def wait_processed(self, file_id: str) -> None:
        checks = 0
        while not self.provider(self.api.file_ready, file_id):
            time.sleep(min(MAX_BACKOFF_S, self.poll_interval * 2 ** min(checks, 10)))
            checks += 1

    def over_budget(self, estimate: float) -> None:
        m = self.meter
        m.stopped = True
        self.backend.stats["not_started_max_cost"] = len(self.deferred)
        log.warning(f"--max-cost {m.max_cost:g} USD: {m.spent:.4f} USD spent on this output "
                           f"({m.spent_before:.4f} before this run), {max(m.left, 0):.4f} USD left, less than the "
                           f"at-most estimate of the next batch, {estimate:.4f} USD at the batch price; submitted "
                           f"nothing more, {len(self.deferred)} {self.backend.unit} not started (rerun with a "
                           "larger --max-cost to continue)")

    # -- talking to the provider ------------------------------------------------------------------
    def provider(self, fn, *args, until: float | None = None):
        """`fn(*args)`, retried with backoff on connection errors, timeouts, 429 and 5xx: max_retries times, or
        until `until` (a time) when given (polling outlives network blips for the batch window)."""
        failures = 0
        while True:
            try:
                return fn(*args)
            except Exception as exc:  # noqa: BLE001 - classified: transient ones waited out, the rest raised
                if self.api.not_found(exc) or refusal(exc) is not None:
                    raise
                failure = self.backend.classify(exc)
                last = failures >= self.backend.policy.max_retries if until is None else time.time() > until
                if not failure.transient or last or self.backend.fatal:
                    raise
                failures += 1
                wait = failure.retry_after if failure.retry_after is not None else min(
                    MAX_BACKOFF_S, min(self.poll_interval, 5.0) * 2 ** min(failures, 12))
                log.warning("batch: %s failed (%s); trying again in %.0fs", getattr(fn, "__name__", "request"),
                            self.backend.scrub(failure.message), wait)
                time.sleep(wait)

    # -- collecting -------------------------------------------------------------------------------
    def finish(self, cid: str, response: Response) -> None:
        item = self.pending.pop(cid)[0]
        self.meter.add(response.usage)
        self.backend.stats["failed_problems"] += response.error is not None
        self.on_done(item, response)

    def collect(self, batch_id: str, status: Status | None) -> list[str]:
        """Hand the collected results of `batch_id` to on_done (status None: the provider no longer knows it);
        returns the custom_ids to submit again."""
        entry = self.open[batch_id]
        if status is None:
            results, why = {}, Failure(f"batch {batch_id} is no longer known to the provider", True)
        elif status.state == "failed":
            results, why = {}, self.failed(batch_id, entry, status)
        else:
            results, why = self.provider(self.api.results, batch_id, status), None
        self.open.pop(batch_id)
        self.meter.reserved -= float(entry.get("estimate_usd") or 0.0)
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
        self.ledger.record("batch", batch_id, "gone" if status is None else "collected")
        self.cleanup([entry.get("input_file_id"), *(status.files if status else ())])
        return again

    def failed(self, batch_id: str, entry: dict, status: Status) -> Failure:
        """A batch that failed as a whole: a full queue (quota) waits and is split; anything else stops the run,
        naming the line (and problem) the provider refused."""
        codes = {e.get("code") for e in status.errors}
        text = "; ".join(f"{e.get('code')}: {e.get('message')}" for e in status.errors) or status.state
        if codes and codes <= QUOTA_CODES:
            self.quota_failures += 1
            wait = min(MAX_BACKOFF_S * 4, self.poll_interval * 2 ** min(self.quota_failures, 12))
            log.warning("batch %s failed: %s; waiting %.0fs, then submitting its %d %s in smaller batches",
                        batch_id, text, wait, len(entry["custom_ids"]), self.backend.unit)
            time.sleep(wait)
            self.split = max(1, len(entry["custom_ids"]) // 2)
            for c in entry["custom_ids"]:  # a full queue is no attempt of the request's
                self.attempts[c] = self.attempts.get(c, 1) - 1
            return Failure(f"batch {batch_id} failed: {text}", True)
        keys = list(entry["custom_ids"].values())
        lines = [e.get("line") for e in status.errors if isinstance(e.get("line"), int)]
        named = ", ".join(f"line {n} (problem {keys[n - 1]})" for n in lines if 0 < n <= len(keys))
        self.ledger.record("batch", batch_id, "collected")
        raise UserError(f"batch {batch_id} was refused by {self.backend.provider}: {text}"
                        + (f" at {named}" if named else "") + "; fix that request (or drop that problem) and rerun")

    def cleanup(self, file_ids) -> None:
        """Delete the uploaded input file and the result files of a collected batch (best effort)."""
        file_ids = [f for f in file_ids if f]
        if not file_ids:
            return
        try:
            self.api.delete(file_ids)
        except Exception as exc:  # noqa: BLE001 - a file left behind costs storage, not a result
            log.info("batch: could not delete files %s (%s)", ", ".join(file_ids),
                     self.backend.scrub(self.backend.classify(exc).message))

    def response(self, cid: str, batch_id: str, result: Result) -> Response:
        req = self.pending[cid][1]
        notes = self.lines[cid][1] if cid in self.lines else {}
        usage = {**result.usage, "requests": 1}
        cost = batch_cost(self.meter.cost_of(usage))  # batch requests are billed at a discount
        extra = {"batch": batch_id, "attempts": max(1, self.attempts.get(cid, 1)), **notes}
        if result.failure is not None:
            result.failure.message = self.backend.scrub(result.failure.message)
        return self.backend.respond(req, result.text, usage, cost, result.failure, extra)

    # -- the run ----------------------------------------------------------------------------------
    split: int | None = None

    def reconcile(self) -> None:
        """Intents without a recorded batch: adopt the batch the provider lists for each (its create answered,
        the ledger never told), or abandon it (nothing was created)."""
        for intent in self.ledger.intents(self.backend.name):
            found = self.unknown(self.provider(self.api.find, intent))
            if len(found) > 1:
                raise UserError(f"{len(found)} batches of the provider match one recorded submission "
                                f"({', '.join(found)}); see `smmile batches ls DIR` and cancel the extra ones")
            if found:
                self.adopt(intent, {"id": found[0], "input_file_id": intent.get("input_file_id"), "expires_at": None})
                log.info("batch %s: adopted (created by an earlier run, missing from the ledger)", found[0])
            else:
                self.abandon(intent)

    def run(self) -> None:
        try:
            self.reconcile()
            for entry in self.ledger.open_batches(self.backend.name):
                mine = [c for c in entry["custom_ids"] if c in self.pending]
                if mine:
                    self.attach(entry)
                    for c in mine:
                        self.attempts[c] = self.attempts.get(c, 0) + 1
                    log.info("batch %s: re-attached (%d %s in flight)", entry["id"], len(mine), self.backend.unit)
            covered = {c for e in self.open.values() for c in e["custom_ids"]}
            self.submit([c for c in self.pending if c not in covered])
            self.wait()
            if self.hurry and self.pending:
                log.info("deadline: %d %s go synchronously", len(self.pending), self.backend.unit)
                self.deferred = []
                self.backend.run_sync([(item, req) for item, req, _ in self.pending.values()], self.on_done)
        finally:
            self.ledger.close()

    def near_deadline(self) -> None:
        """Once the deadline is within its margin: cancel the batches in flight (collected as they end, their
        finished items kept) and submit nothing more; what is left goes synchronously (within --max-cost)."""
        if self.deadline is None or self.hurry or time.monotonic() < self.deadline - self.margin:
            return
        self.hurry = True
        log.info("deadline near: canceling %d batch(es) in flight; their unfinished %s go synchronously",
                 len(self.open), self.backend.unit)
        for batch_id in list(self.open):
            self.provider(self.api.cancel, batch_id)

    def wait(self) -> None:
        shown: dict[str, tuple] = {}
        canceled: set[str] = set()
        while self.open:
            self.near_deadline()
            for batch_id in list(self.open):
                try:  # a blip, a 5xx or a 429 is waited out for as long as a batch may run
                    status = self.provider(self.api.status, batch_id, until=time.time() + WINDOW_S + GRACE_S)
                except Exception as exc:  # noqa: BLE001 - only 'not found' is handled here
                    if not self.api.not_found(exc):
                        raise
                    self.resubmit(self.collect(batch_id, None))
                    continue
                if shown.get(batch_id) != (status.state, status.done):
                    shown[batch_id] = (status.state, status.done)
                    log.info("batch %s: %s, %d/%d done (%s)", batch_id, status.state, status.done, status.total,
                             _duration(time.monotonic() - self.started))
                self.progress = f"batches in flight {len(self.open)}, {status.state} {status.done}/{status.total}"
                if status.ended:
                    self.resubmit(self.collect(batch_id, status))
                    self.progress = f"batches in flight {len(self.open)}"
                elif (batch_id not in canceled and not self.api.azure and status.expires_at is not None
                      and time.time() > status.expires_at + GRACE_S):
                    log.info("batch %s: still %s %s past its window; canceling it", batch_id, status.state,
                             _duration(GRACE_S))
                    self.provider(self.api.cancel, batch_id)
                    canceled.add(batch_id)
            if self.open:
                time.sleep(self.poll_interval)
        if self.deferred and not self.hurry:
            first = self.deferred[: self.split or self.max_requests]
            self.over_budget(sum(self.lines[c][2] for c in first if c in self.lines))

    def resubmit(self, again: list[str]) -> None:
        if (again or self.deferred) and not self.hurry:
            self.submit(again)

    progress = ""


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 60}m{seconds % 60:02d}s"
