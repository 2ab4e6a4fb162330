"""A local fake API server for tests and benchmarks (127.0.0.1 only, started and stopped by its user).

Speaks enough of four protocols for the official SDK clients: OpenAI chat completions (`/v1/chat/completions`),
Azure OpenAI (`/openai/deployments/<name>/chat/completions?api-version=...`), Anthropic messages
(`/v1/messages`) and ollama chat (`/api/chat`). It records every request it receives and can inject
latency, 429 with Retry-After, 500s, timeouts and malformed bodies through `script(record) -> Action`.
"""

from __future__ import annotations

import http.server
import json
import math
import threading
import time
from dataclasses import dataclass, field
from typing import Callable
from urllib.parse import parse_qs, urlsplit


@dataclass
class Action:
    kind: str = "ok"  # ok | status | sleep | malformed | null (a reply whose content is null)
    status: int = 200
    headers: dict = field(default_factory=dict)
    seconds: float = 0.0
    reply: str | None = None
    message: str | None = None  # error message in the body (e.g. one echoing a header, for scrubbing tests)


def default_reply(record: dict) -> str:
    return "<think>Looks like the examples.</think>\n<answer>A</answer>"


class LoopbackServer:
    """A threaded HTTP server on 127.0.0.1 (a free port): started by `with`, shut down at its end."""

    def _serve(self, handler) -> None:
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._server.handle_error = lambda request, address: None  # a client killed mid-request: no traceback
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


class FakeApi(LoopbackServer):
    def __init__(self, latency: float = 0.0, script: Callable[[dict], Action | None] | None = None,
                 reply: Callable[[dict], str] = default_reply, limit: int | None = None,
                 limit_retry_after: str = "1", headers: Callable[[dict], dict] | None = None):
        """`limit`: requests allowed in flight; one more is answered 429 with Retry-After `limit_retry_after` at
        once. `headers(record)`: extra headers of a successful reply (e.g. rate-limit state)."""
        self.latency, self.script, self.reply = latency, script, reply
        self.limit, self.limit_retry_after, self.extra_headers = limit, limit_retry_after, headers
        self.records: list[dict] = []
        self.in_flight = self.max_in_flight = 0
        self._lock = threading.Lock()
        self._serve(self._handler())

    def requests(self, kind: str | None = None) -> list[dict]:
        with self._lock:
            return [r for r in self.records if kind is None or r["protocol"] == kind]

    def summaries(self) -> list[dict]:
        keep = ("n", "protocol", "path", "action", "time", "doomed")
        return [{**{k: r[k] for k in keep if k in r}, "key": body_key(r)} for r in self.requests()]

    def _record(self, rec: dict) -> dict:
        with self._lock:
            rec["n"] = len(self.records)
            self.records.append(rec)
        return rec

    def _handler(self):
        api = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body go out as separate writes: no 40 ms delayed-ACK stall

            def log_message(self, *args):  # quiet
                pass

            def do_GET(self):
                if self.path == "/_records":  # summaries for a user in another process (ForkedFakeApi)
                    return self._json(200, {"max_in_flight": api.max_in_flight, "records": api.summaries()})
                if self.path.rstrip("/").endswith("/models"):
                    return self._json(200, {"object": "list", "data": [{"id": "fake", "object": "model"}]})
                self._json(404, {"error": {"message": "not found"}})

            def do_POST(self):
                parts = urlsplit(self.path)
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    body = {"_raw": raw.decode("latin-1")}
                protocol = _protocol(parts.path)
                rec = api._record({"protocol": protocol, "path": parts.path, "query": parse_qs(parts.query),
                                   "headers": {k.lower(): v for k, v in self.headers.items()}, "body": body,
                                   "time": time.monotonic()})
                if protocol is None:
                    return self._json(404, {"error": {"message": f"no route {parts.path}"}})
                action = (api.script(rec) if api.script else None) or Action()
                with api._lock:
                    throttled = api.limit is not None and api.in_flight >= api.limit
                    if throttled:  # not counted in flight: answered at once
                        action = Action("status", 429, headers={"retry-after": api.limit_retry_after})
                    else:
                        api.in_flight += 1
                        api.max_in_flight = max(api.max_in_flight, api.in_flight)
                rec["action"] = action.kind if action.kind != "status" else action.status
                if throttled:
                    body = _error(protocol, 429, "too many requests in flight")
                    return self._json(429, body, action.headers)
                try:
                    time.sleep(api.latency + (action.seconds if action.kind == "sleep" else 0.0))
                finally:
                    with api._lock:
                        api.in_flight -= 1
                if action.kind == "status":
                    body = _error(protocol, action.status, action.message)
                    return self._json(action.status, body, action.headers)
                if action.kind == "malformed":
                    return self._send(200, b'{"choices": [ {"message": oops', {"content-type": "application/json"})
                reply = action.reply if action.reply is not None else api.reply(rec)
                out = _success(protocol, body, reply)
                if action.kind == "null":
                    if protocol in ("openai", "azure"):
                        out["choices"][0]["message"]["content"] = None
                    elif protocol == "anthropic":
                        out["content"] = []
                    else:
                        out["message"]["content"] = None
                self._json(200, out, api.extra_headers(rec) if api.extra_headers else None)

            def _json(self, status: int, obj: dict, headers: dict | None = None):
                self._send(status, json.dumps(obj).encode(), {"content-type": "application/json", **(headers or {})})

            def _send(self, status: int, data: bytes, headers: dict):
                try:
                    self.send_response(status)
                    for k, v in headers.items():
                        self.send_header(k, str(v))
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)

        return Handler


def _protocol(path: str) -> str | None:
    if path.startswith("/openai/deployments/") and path.endswith("/chat/completions"):
        return "azure"
    if path.endswith("/chat/completions"):
        return "openai"
    if path.endswith("/v1/messages"):
        return "anthropic"
    if path == "/api/chat":
        return "ollama"
    return None


def _tokens(protocol: str, body: dict, reply: str) -> tuple[int, int]:
    """Usage as the providers document it: text at 4 characters a token; an image by the provider's own rule
    (written out here, apart from the library's). Other protocols: the request's JSON at 4 bytes a token."""
    out = max(1, math.ceil(len(reply) / 4))
    if protocol not in ("openai", "azure", "anthropic"):
        return max(1, len(json.dumps(body)) // 4), out
    chars, image_tokens = len(body.get("system") or "") if isinstance(body.get("system"), str) else 0, 0
    for m in body.get("messages", []):
        content = m.get("content")
        for part in ([{"type": "text", "text": content}] if isinstance(content, str) else content or []):
            if part.get("type") == "text":
                chars += len(part["text"])
            elif part.get("type") == "image_url":  # GPT-4o: detail low 85; else fit 2048 box, short side 768, tiles
                url, detail = part["image_url"]["url"], part["image_url"].get("detail", "auto")
                w, h = _image_size(url.split(",", 1)[1])
                if detail == "low":
                    image_tokens += 85
                    continue
                if w > 2048 or h > 2048:
                    f = 2048 / max(w, h)
                    w, h = w * f, h * f
                if min(w, h) > 768:
                    f = 768 / min(w, h)
                    w, h = w * f, h * f
                image_tokens += 85 + 170 * math.ceil(w / 512) * math.ceil(h / 512)
            elif part.get("type") == "image":  # Claude: w*h/750 after fitting 1568 px and 1.15 megapixels
                w, h = _image_size(part["source"]["data"])
                f = min(1.0, 1568 / max(w, h), (1_150_000 / (w * h)) ** 0.5)
                image_tokens += math.ceil(w * f * h * f / 750)
    return math.ceil(chars / 4) + image_tokens, out


def _image_size(b64: str) -> tuple[int, int]:
    import base64
    import io

    from PIL import Image

    return Image.open(io.BytesIO(base64.b64decode(b64))).size


def _success(protocol: str, body: dict, reply: str) -> dict:
    pin, pout = _tokens(protocol, body, reply)
    model = body.get("model", "")
    if protocol in ("openai", "azure"):
        return {"id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": reply},
                             "finish_reason": "stop", "logprobs": None}],
                "usage": {"prompt_tokens": pin, "completion_tokens": pout, "total_tokens": pin + pout}}
    if protocol == "anthropic":
        return {"id": "msg_fake", "type": "message", "role": "assistant", "model": model,
                "content": [{"type": "text", "text": reply}], "stop_reason": "end_turn", "stop_sequence": None,
                "usage": {"input_tokens": pin, "output_tokens": pout}}
    return {"model": model, "created_at": "2025-01-01T00:00:00Z", "message": {"role": "assistant", "content": reply},
            "done": True, "done_reason": "stop", "prompt_eval_count": pin, "eval_count": pout}


def _error(protocol: str, status: int, message: str | None = None) -> dict:
    kind = {429: "rate_limit_error", 413: "request_too_large", 500: "api_error"}.get(status, "invalid_request_error")
    message = message or f"injected {status}"
    if protocol == "anthropic":
        return {"type": "error", "error": {"type": kind, "message": message}}
    if protocol == "ollama":
        return {"error": message}
    return {"error": {"message": message, "type": kind, "code": str(status)}}


def body_key(record: dict) -> str:
    """Identifies a conversation: the same problem's retries share it."""
    import hashlib

    return hashlib.sha256(json.dumps(record["body"].get("messages"), sort_keys=True).encode()).hexdigest()[:16]


def transient_failures(rate: float = 0.2, max_per_body: int = 2, retry_after: float = 0.05):
    """A script failing `rate` of requests (429 with Retry-After and 500, alternating), deterministically by
    request number, never more than `max_per_body` times for one conversation."""
    lock, seen = threading.Lock(), {}
    period = max(1, round(1 / rate))

    def script(rec: dict) -> Action | None:
        key = body_key(rec)
        with lock:
            if rec["n"] % period != 0 or seen.get(key, 0) >= max_per_body:
                return None
            seen[key] = seen.get(key, 0) + 1
        if (rec["n"] // period) % 2:
            return Action("status", 500)
        return Action("status", 429, headers={"retry-after": str(retry_after)})

    return script


def permanent_failure(status: int = 500):
    """A script failing every request of the first conversation it sees, forever."""
    lock, doomed = threading.Lock(), []

    def script(rec: dict) -> Action | None:
        key = body_key(rec)
        with lock:
            if not doomed:
                doomed.append(key)
        rec["doomed"] = key == doomed[0]
        return Action("status", status) if rec["doomed"] else None

    script.doomed = doomed
    return script


class ForkedFakeApi:
    """The same server in a forked child process, so that it does not compete with the client for the GIL
    (benchmarks). `requests()` returns summaries: n, protocol, path, action, time, doomed, key."""

    def __init__(self, **kwargs):
        self.kwargs = kwargs

    def __enter__(self) -> "ForkedFakeApi":
        import multiprocessing

        ctx = multiprocessing.get_context("fork")
        queue, self._stop = ctx.Queue(), ctx.Event()
        self._proc = ctx.Process(target=_serve, args=(self.kwargs, queue, self._stop), daemon=True)
        self._proc.start()
        self.url = queue.get(timeout=30)
        return self

    def _fetch(self) -> dict:
        import urllib.request

        with urllib.request.urlopen(self.url + "/_records", timeout=30) as response:
            return json.loads(response.read())

    def requests(self, kind: str | None = None) -> list[dict]:
        return [r for r in self._fetch()["records"] if kind is None or r["protocol"] == kind]

    @property
    def max_in_flight(self) -> int:
        return self._fetch()["max_in_flight"]

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._proc.join(timeout=10)
        if self._proc.is_alive():
            self._proc.terminate()
            self._proc.join(timeout=10)


def _serve(kwargs: dict, queue, stop) -> None:
    with FakeApi(**kwargs) as api:
        queue.put(api.url)
        stop.wait()
