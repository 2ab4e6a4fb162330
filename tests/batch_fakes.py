"""Loopback fakes of the two batch APIs, for tests (127.0.0.1 only, started and stopped by each test).

OpenAI (and Azure OpenAI under `/openai/...?api-version=`): POST /v1/files (multipart upload), GET
/v1/files/{id}/content, POST /v1/batches, GET /v1/batches/{id}, POST /v1/batches/{id}/cancel.
Anthropic: POST /v1/messages/batches, GET /v1/messages/batches/{id}, GET .../{id}/results (the batch's
results_url, JSONL), POST .../{id}/cancel.

A batch ends after `polls` status checks once `release` is set (set by default; clear it to hold batches in
flight). `outcome(custom_id, body, n)` decides each item (`n`: how many times that custom_id was submitted
before): "ok", an int status (an errored item), or "expired" (the batch ends expired, that item unprocessed).
Replies come from `reply({"body": body})` and carry the same usage as `api_server`'s synchronous replies, so a
batch run and a synchronous run against the same `reply` see identical responses. Results are written in
reverse submission order, so a client that matched them by order would be caught.

Also: POST /v1/messages and /v1/chat/completions (synchronous replies, for --deadline), GET /v1/batches and
/v1/messages/batches (lists, newest first; OpenAI's carry each batch's metadata),
DELETE /v1/files/{id}, GET /openai/files/{id} (Azure: an upload stays `pending` for `file_pending` checks).
`script(method, path, n)` (n: how many requests of that method and path came before) may answer a request
instead: a `Scripted` (status and body, after `delay` seconds; `then_serve`: handle it normally, then answer
after `delay` — a create that the client sees time out but the provider performed). `results_host`: the base URL
Anthropic's results_url names (another server, a look-alike host). `failed(kind, items)` may fail a whole OpenAI batch
at validation: a list of {"code", "message", "line"} errors.
"""

from __future__ import annotations

import http.server
import itertools
import json
import re
import threading
import time
from email.parser import BytesParser
from email.policy import default as email_policy
from typing import Callable
from urllib.parse import urlsplit

from dataclasses import dataclass

from api_server import LoopbackServer, _error, _success, default_reply


@dataclass
class Scripted:
    status: int = 200
    body: dict | None = None
    delay: float = 0.0
    then_serve: bool = False  # perform the request, then answer late (the client has given up by then)
    # status 0: the connection is closed without an answer (a network blip)

_ANTHROPIC_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


class FakeBatchApi(LoopbackServer):
    def __init__(self, reply: Callable[[dict], str] = default_reply, polls: int = 1,
                 outcome: Callable[[str, dict, int], object] | None = None, expires_in: float = 86400.0,
                 script: Callable[[str, str, int], Scripted | None] | None = None, results_host: str | None = None,
                 failed: Callable[[str, list], list | None] | None = None, file_pending: int = 0):
        self.reply, self.polls, self.outcome, self.expires_in = reply, polls, outcome, expires_in
        self.script, self.results_host, self.failed, self.file_pending = script, results_host, failed, file_pending
        self.counts: dict[tuple[str, str], int] = {}
        self.file_checks: dict[str, int] = {}
        self.deleted: list[str] = []
        self.headers_seen: list[dict] = []  # every request's headers (lower-case names)
        self.release = threading.Event()
        self.release.set()
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict] = {}  # id -> {"kind", "items": [(custom_id, body)], "polls", "state", ...}
        self.calls: list[tuple[str, str]] = []  # (method, path) of every request
        self.header_names: set[str] = set()  # lower-case names of every header received
        self.submitted: dict[str, int] = {}  # custom_id -> times submitted
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._serve(self._handler())

    def created(self) -> list[dict]:
        """The batches created, in order: id, kind and custom_ids."""
        with self._lock:
            return [{"id": k, "kind": b["kind"], "custom_ids": [c for c, _ in b["items"]]}
                    for k, b in self.batches.items()]

    def bodies(self) -> dict[str, dict]:
        """The last body submitted per custom_id."""
        with self._lock:
            return {c: body for b in self.batches.values() for c, body in b["items"]}

    # -- batch life ------------------------------------------------------------------------------
    def _new_id(self, prefix: str) -> str:
        return f"{prefix}{next(self._ids):04d}"

    def _create(self, kind: str, items: list[tuple[str, dict]]) -> dict:
        with self._lock:
            ids = [c for c, _ in items]
            if len(set(ids)) != len(ids):
                raise ValueError("custom_id values must be unique within a batch")
            plan = []
            for c, body in items:
                plan.append((self.outcome or (lambda *_: "ok"))(c, body, self.submitted.get(c, 0)))
                self.submitted[c] = self.submitted.get(c, 0) + 1
            errors = self.failed(kind, items) if self.failed else None
            batch = {"kind": kind, "items": items, "plan": plan, "polls": 0, "state": "in_progress",
                     "created": int(time.time()), "cancel": False, "errors": errors, "metadata": None}
            batch["id"] = self._new_id("msgbatch_" if kind == "anthropic" else "batch_")
            self.batches[batch["id"]] = batch
            return batch

    def _advance(self, batch: dict) -> None:
        with self._lock:
            if batch["state"] != "in_progress":
                return
            batch["polls"] += 1
            if batch["cancel"]:
                batch["state"] = "cancelled"
            elif batch["errors"]:
                batch["state"] = "failed"
            elif self.release.is_set() and batch["polls"] > self.polls:
                batch["state"] = "expired" if "expired" in batch["plan"] else "completed"
            else:
                return
            self._finish(batch)

    def _finish(self, batch: dict) -> None:
        out, err = [], []
        if batch["state"] == "failed":  # failed validation: nothing ran, no output file
            batch["results"] = []
            return
        for (c, body), what in reversed(list(zip(batch["items"], batch["plan"]))):
            if batch["state"] == "cancelled" or what == "expired":
                err.append({"custom_id": c, "what": "canceled" if batch["state"] == "cancelled" else "expired"})
            elif what == "ok":
                proto = "anthropic" if batch["kind"] == "anthropic" else "openai"
                out.append({"custom_id": c, "status": 200, "body": _success(proto, body, self.reply({"body": body}))})
            else:
                err.append({"custom_id": c, "status": int(what), "body": _error(batch["kind"], int(what))})
        batch["results"] = out + err

    # -- wire formats ----------------------------------------------------------------------------
    def _openai_batch(self, b: dict) -> dict:
        done = b["state"] != "in_progress"
        results = b.get("results", [])
        ok = sum(1 for r in results if r.get("status") == 200)
        out_id = err_id = None
        if done:
            lines_ok, lines_err = [], []
            for i, r in enumerate(results):
                line = {"id": f"batch_req_{i}", "custom_id": r["custom_id"], "response": None, "error": None}
                if r.get("status") == 200:
                    line["response"] = {"status_code": 200, "request_id": f"req_{i}", "body": r["body"]}
                    lines_ok.append(line)
                elif "status" in r:
                    line["response"] = {"status_code": r["status"], "request_id": f"req_{i}", "body": r["body"]}
                    lines_err.append(line)
                else:
                    line["error"] = {"code": "batch_expired", "message": "This request could not be executed "
                                     "before the completion window expired."}
                    lines_err.append(line)
            if lines_ok:
                out_id = b.setdefault("out_id", self._store(lines_ok))
            if lines_err:
                err_id = b.setdefault("err_id", self._store(lines_err))
        n = len(b["items"])
        errors = {"object": "list", "data": b["errors"]} if b["state"] == "failed" else None
        return {"id": b["id"], "object": "batch", "endpoint": b.get("endpoint"), "errors": errors,
                "metadata": b.get("metadata"),
                "input_file_id": b.get("input_file_id"), "completion_window": "24h", "status": b["state"],
                "output_file_id": out_id, "error_file_id": err_id, "created_at": b["created"],
                "expires_at": int(b["created"] + self.expires_in),
                "request_counts": {"total": n, "completed": ok if done else 0,
                                   "failed": (len(results) - ok) if done else 0}}

    def _file(self, fid: str, status: str) -> dict:
        return {"id": fid, "object": "file", "bytes": len(self.files.get(fid, b"")), "created_at": 0,
                "filename": "upload.jsonl", "purpose": "batch", "status": status}

    def _store(self, lines: list[dict]) -> str:
        fid = self._new_id("file-")
        self.files[fid] = "".join(json.dumps(x) + "\n" for x in lines).encode()
        return fid

    def _anthropic_batch(self, b: dict) -> dict:
        ended = b["state"] != "in_progress"
        counts = {"processing": 0 if ended else len(b["items"]), "succeeded": 0, "errored": 0, "canceled": 0,
                  "expired": 0}
        for r in b.get("results", []):
            key = "succeeded" if r.get("status") == 200 else "errored" if "status" in r else r["what"]
            counts[key] += 1
        created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(b["created"]))
        expires = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(b["created"] + self.expires_in))
        return {"id": b["id"], "type": "message_batch", "processing_status": "ended" if ended else "in_progress",
                "request_counts": counts, "created_at": created, "expires_at": expires,
                "ended_at": created if ended else None, "archived_at": None, "cancel_initiated_at": None,
                "results_url": f"{self._results_base()}/v1/messages/batches/{b['id']}/results" if ended else None}

    def _results_base(self) -> str:
        return self.results_host or self.url

    def _anthropic_results(self, b: dict) -> bytes:
        lines = []
        for r in b["results"]:
            if r.get("status") == 200:
                result = {"type": "succeeded", "message": r["body"]}
            elif "status" in r:
                result = {"type": "errored", "error": r["body"]}
            else:
                result = {"type": r["what"]}
            lines.append(json.dumps({"custom_id": r["custom_id"], "result": result}) + "\n")
        return "".join(lines).encode()

    # -- HTTP ------------------------------------------------------------------------------------
    def _handler(self):
        api = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            _late = 0.0

            def _scripted(self, method: str, path: str) -> bool:
                """Record the request; True when the script answered it."""
                with api._lock:
                    api.calls.append((method, path))
                    api.header_names.update(k.lower() for k in self.headers)
                    api.headers_seen.append({k.lower(): v for k, v in self.headers.items()})
                    n = api.counts.get((method, path), 0)
                    api.counts[(method, path)] = n + 1
                what = api.script(method, path, n) if api.script else None
                if what is None:
                    return False
                if what.then_serve:
                    self._late = what.delay
                    return False
                time.sleep(what.delay)
                if what.status == 0:  # the connection drops without an answer
                    self.close_connection = True
                    return True
                self._json(what.status, what.body or {})
                return True

            def do_DELETE(self):
                path = urlsplit(self.path).path
                if self._scripted("DELETE", path):
                    return
                m = re.fullmatch(r"(?:/v1|/openai)/files/([^/]+)", path)
                if m and m.group(1) in api.files:
                    api.files.pop(m.group(1))
                    api.deleted.append(m.group(1))
                    return self._json(200, {"id": m.group(1), "object": "file", "deleted": True})
                self._json(404, {"error": {"message": f"no {path}"}})

            def do_GET(self):
                path = urlsplit(self.path).path
                if self._scripted("GET", path):
                    return
                if path in ("/v1/batches", "/openai/batches"):
                    with api._lock:
                        data = [api._openai_batch(b) for b in reversed(api.batches.values()) if b["kind"] != "anthropic"]
                    return self._json(200, {"object": "list", "data": data, "has_more": False,
                                            "first_id": data[0]["id"] if data else None,
                                            "last_id": data[-1]["id"] if data else None})
                if path == "/v1/messages/batches":
                    with api._lock:
                        data = [api._anthropic_batch(b) for b in reversed(api.batches.values())
                                if b["kind"] == "anthropic"]
                    return self._json(200, {"data": data, "has_more": False,
                                            "first_id": data[0]["id"] if data else None,
                                            "last_id": data[-1]["id"] if data else None})
                m = re.fullmatch(r"/openai/files/([^/]+)", path)
                if m and m.group(1) in api.files:
                    n = api.file_checks[m.group(1)] = api.file_checks.get(m.group(1), 0) + 1
                    return self._json(200, api._file(m.group(1), "pending" if n <= api.file_pending else "processed"))
                m = re.fullmatch(r"(?:/v1|/openai)/files/([^/]+)/content", path)
                if m and m.group(1) in api.files:
                    return self._send(200, api.files[m.group(1)], "application/octet-stream")
                m = re.fullmatch(r"/v1/messages/batches/([^/]+)(/results)?", path)
                if m and api.batches.get(m.group(1), {}).get("kind") == "anthropic":
                    b = api.batches[m.group(1)]
                    if m.group(2):
                        if b["state"] == "in_progress":
                            return self._json(400, _error("anthropic", 400, "batch still processing"))
                        return self._send(200, api._anthropic_results(b), "application/binary")
                    api._advance(b)
                    return self._json(200, api._anthropic_batch(b))
                m = re.fullmatch(r"(?:/v1|/openai)/batches/([^/]+)", path)
                if m and api.batches.get(m.group(1), {}).get("kind") in ("openai", "azure"):
                    b = api.batches[m.group(1)]
                    api._advance(b)
                    return self._json(200, api._openai_batch(b))
                self._json(404, {"type": "error", "error": {"type": "not_found_error", "message": f"no {path}"}})

            def do_POST(self):
                path = urlsplit(self.path).path
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                if self._scripted("POST", path):
                    return
                if re.fullmatch(r"(?:/v1|/openai)/files", path):
                    return self._upload(raw)
                if path in ("/v1/messages", "/v1/chat/completions"):  # the synchronous API beside the batches
                    body = json.loads(raw)
                    proto = "anthropic" if path == "/v1/messages" else "openai"
                    return self._json(200, _success(proto, body, api.reply({"body": body})))
                if re.fullmatch(r"(?:/v1|/openai)/batches", path):
                    return self._openai_create(json.loads(raw), "azure" if path.startswith("/openai") else "openai")
                if path == "/v1/messages/batches":
                    reqs = json.loads(raw).get("requests") or []
                    bad = [r.get("custom_id") for r in reqs if not _ANTHROPIC_ID.fullmatch(str(r.get("custom_id")))]
                    if bad or not reqs:
                        return self._json(400, _error("anthropic", 400, f"bad custom_id {bad[:1]}"))
                    b = api._create("anthropic", [(r["custom_id"], r["params"]) for r in reqs])
                    return self._json(200, api._anthropic_batch(b))
                m = re.fullmatch(r"(?:/v1|/openai|/v1/messages)/batches/([^/]+)/cancel", path)
                if m and m.group(1) in api.batches:
                    b = api.batches[m.group(1)]
                    b["cancel"] = True
                    api._advance(b)
                    return self._json(200, api._anthropic_batch(b) if b["kind"] == "anthropic" else api._openai_batch(b))
                self._json(404, {"error": {"message": f"no route {path}"}})

            def _upload(self, raw: bytes):
                msg = BytesParser(policy=email_policy).parsebytes(
                    b"Content-Type: " + self.headers["content-type"].encode() + b"\r\n\r\n" + raw)
                fields = {part.get_param("name", header="content-disposition"): part.get_payload(decode=True)
                          for part in msg.iter_parts()}
                if fields.get("purpose") != b"batch" or not fields.get("file"):
                    return self._json(400, {"error": {"message": "purpose=batch and a file are required"}})
                fid = api._new_id("file-")
                api.files[fid] = fields["file"]
                azure = urlsplit(self.path).path.startswith("/openai")
                self._json(200, api._file(fid, "pending" if azure and api.file_pending else "processed"))

            def _openai_create(self, body: dict, kind: str):
                data = api.files.get(body.get("input_file_id"))
                fid = body.get("input_file_id")
                if kind == "azure" and api.file_pending and api.file_checks.get(fid, 0) <= api.file_pending:
                    return self._json(400, {"error": {"message": "the input file is not processed yet",
                                                      "code": "invalid_request_error"}})
                want = "/chat/completions" if kind == "azure" else "/v1/chat/completions"
                if data is None or body.get("endpoint") != want or body.get("completion_window") != "24h":
                    return self._json(400, {"error": {"message": f"bad batch request {body}"}})
                items = []
                for line in data.decode().splitlines():
                    rec = json.loads(line)
                    if rec.get("method") != "POST" or rec.get("url") != want:
                        return self._json(400, {"error": {"message": f"bad line {line[:200]}"}})
                    items.append((rec["custom_id"], rec["body"]))
                b = api._create(kind, items)
                b.update(endpoint=want, input_file_id=body["input_file_id"], metadata=body.get("metadata"))
                self._json(200, api._openai_batch(b))

            def _json(self, status: int, obj: dict):
                self._send(status, json.dumps(obj).encode(), "application/json")

            def _send(self, status: int, data: bytes, ctype: str):
                time.sleep(self._late)
                try:
                    self.send_response(status)
                    self.send_header("content-type", ctype)
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        return Handler
