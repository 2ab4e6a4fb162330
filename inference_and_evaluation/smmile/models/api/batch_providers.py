"""The two batch APIs behind `--batch`: OpenAI / Azure OpenAI (Files + /batches) and Anthropic Message Batches.

Clients are built with the SDK's retries off (a retried create is a second batch, billed): BatchRun retries what is
safe to retry and reconciles a create whose answer was lost with the provider's list of batches. Every request passes
the backend's egress check (egress.py).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field

from ...errors import UserError
from .request import import_sdk
from .retry import Failure, status_failure

log = logging.getLogger("smmile.batch")
ANTHROPIC_TRANSIENT = {"api_error", "overloaded_error", "rate_limit_error", "timeout_error"}
# OpenAI batch validation errors that mean "the queue is full", not "the request is wrong": wait, then split
QUOTA_CODES = {"token_limit_exceeded", "request_limit_exceeded", "rate_limit_exceeded", "insufficient_quota",
               "batch_quota_exceeded"}
LIST_BACK_S = 3600  # how far back (before an intent) the provider's list of batches is searched


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
    expires_at: float | None = None
    errors: list = field(default_factory=list)  # a failed batch's [{"code", "message", "line"}]
    files: tuple = ()  # the batch's result files (deleted once collected)


def request_body(wire: dict) -> dict:
    """The JSON body the SDK sends for `wire` (its keyword arguments): `extra_body` merged in."""
    body = {k: v for k, v in wire.items() if k != "extra_body"}
    extra = {"extra_headers", "extra_query", "timeout"} & body.keys()
    if extra:
        raise UserError(f"--batch cannot send per-request {', '.join(sorted(extra))}")
    return {**body, **(wire.get("extra_body") or {})}


def _stamp(value) -> float | None:
    if value is None:
        return None
    return float(value.timestamp() if hasattr(value, "timestamp") else value)


class OpenAIBatches:
    """Files + /batches of OpenAI, or of Azure OpenAI (`/openai/files`, `/openai/batches`; deployment as model)."""

    tags = True  # batches carry metadata: a create is found again by its tag

    def __init__(self, backend):
        openai = import_sdk("openai", "--batch")
        args = {**backend._client_args, **backend.header_args(openai), **backend.http_client(openai, False),
                "max_retries": 0, "timeout": backend.timeout}
        self.azure = backend.name == "azure-openai"
        if self.azure:
            if args["api_version"] < "2024-07-01":  # batches came with 2024-07-01-preview
                args["api_version"] = "2024-10-21"
            self.client, self.url = openai.AzureOpenAI(**args), "/chat/completions"
        else:
            self.client, self.url = openai.OpenAI(**args), "/v1/chat/completions"
        self.sdk, self.backend = openai, backend
        self.deployment = backend.settings.batch_deployment if self.azure else None
        if self.azure and not self.deployment:
            log.warning("Azure OpenAI runs batches on a Global Batch or Data Zone Batch deployment only: sending to "
                        "deployment %r; name yours with --batch-deployment NAME", backend.model)

    def line(self, cid: str, body: dict) -> bytes:
        if self.deployment:
            body = {**body, "model": self.deployment}
        return (json.dumps({"custom_id": cid, "method": "POST", "url": self.url, "body": body},
                           ensure_ascii=False) + "\n").encode()

    def upload(self, lines: list[bytes]) -> str:
        return self.client.files.create(file=("smmile-batch.jsonl", b"".join(lines)), purpose="batch").id

    def file_ready(self, file_id: str) -> bool:
        """Azure answers an upload `pending` and creates a batch only once it is `processed` (Microsoft's sample
        waits); OpenAI's upload is usable at once."""
        if not self.azure:
            return True
        status = self.client.files.retrieve(file_id).status
        if status in ("error", "deleted"):
            raise UserError(f"Azure OpenAI could not process the batch input file {file_id} ({status})")
        return status == "processed"

    def create(self, file_id: str | None, lines: list[bytes], tag: str) -> dict:
        batch = self.client.batches.create(input_file_id=file_id, endpoint=self.url, completion_window="24h",
                                           metadata={"smmile_tag": tag})
        return {"id": batch.id, "input_file_id": file_id, "expires_at": batch.expires_at}

    def find(self, intent: dict) -> list[str]:
        """Ids of the provider's batches created for `intent` (by the tag in their metadata), newest first."""
        since = float(intent.get("time", 0)) - LIST_BACK_S
        found = []
        for b in self.client.batches.list(limit=100):
            if (b.created_at or 0) < since:
                break
            if (b.metadata or {}).get("smmile_tag") == intent["tag"]:
                found.append(b.id)
        return found

    def status(self, batch_id: str) -> Status:
        b = self.client.batches.retrieve(batch_id)
        counts = b.request_counts
        done = (counts.completed + counts.failed) if counts else 0
        errors = [{"code": getattr(e, "code", None), "message": getattr(e, "message", None),
                   "line": getattr(e, "line", None)} for e in (getattr(getattr(b, "errors", None), "data", None) or [])]
        return Status(b.status in ("completed", "failed", "expired", "cancelled"), b.status, done,
                      counts.total if counts else 0, _stamp(b.expires_at), errors,
                      tuple(f for f in (b.output_file_id, b.error_file_id) if f))

    def results(self, batch_id: str, status: Status) -> dict[str, Result]:
        out: dict[str, Result] = {}
        for file_id in status.files:
            for raw in self.client.files.content(file_id).text.splitlines():
                if raw.strip():
                    rec = json.loads(raw)
                    out[rec["custom_id"]] = self.result(rec)
        return out

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

    def delete(self, file_ids) -> None:
        for file_id in file_ids:
            self.client.files.delete(file_id)

    def not_found(self, exc: BaseException) -> bool:
        return isinstance(exc, self.sdk.NotFoundError)


class AnthropicBatches:
    """Message Batches (`/v1/messages/batches`, results from the batch's `results_url`). A batch carries no
    metadata: a create whose answer was lost is found again by its time and its number of requests."""

    tags = False

    def __init__(self, backend):
        anthropic = import_sdk("anthropic", "--batch")
        self.client = anthropic.Anthropic(**backend._client_args, **backend.http_client(anthropic, False),
                                          max_retries=0, timeout=backend.timeout)
        self.sdk, self.backend, self.azure = anthropic, backend, False

    def line(self, cid: str, body: dict) -> bytes:
        return (json.dumps({"custom_id": cid, "params": body}, ensure_ascii=False) + "\n").encode()

    def upload(self, lines: list[bytes]) -> None:
        return None

    def file_ready(self, file_id) -> bool:
        return True

    def create(self, file_id, lines: list[bytes], tag: str) -> dict:
        batch = self.client.messages.batches.create(requests=[json.loads(line) for line in lines])
        return {"id": batch.id, "expires_at": _stamp(batch.expires_at)}

    def find(self, intent: dict) -> list[str]:
        """Batches created from the intent's time on with its number of requests (none other than smmile's own
        could match both but another run's on this account: BatchRun refuses an ambiguous match)."""
        since, size = float(intent.get("time", 0)) - 60, len(intent["custom_ids"])
        found = []
        for b in self.client.messages.batches.list(limit=100):
            created = _stamp(b.created_at) or 0
            if created < since - LIST_BACK_S:
                break
            c = b.request_counts
            if created >= since and c.processing + c.succeeded + c.errored + c.canceled + c.expired == size:
                found.append(b.id)
        return found

    def status(self, batch_id: str) -> Status:
        b = self.client.messages.batches.retrieve(batch_id)
        c = b.request_counts
        done = c.succeeded + c.errored + c.canceled + c.expired
        return Status(b.processing_status == "ended", b.processing_status, done, done + c.processing,
                      _stamp(b.expires_at))

    def results(self, batch_id: str, status: Status) -> dict[str, Result]:
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
        return out

    def cancel(self, batch_id: str) -> None:
        self.client.messages.batches.cancel(batch_id)

    def delete(self, file_ids) -> None:
        return None

    def not_found(self, exc: BaseException) -> bool:
        return isinstance(exc, self.sdk.NotFoundError)


def provider_api(backend):
    return (AnthropicBatches if backend.name == "anthropic" else OpenAIBatches)(backend)

