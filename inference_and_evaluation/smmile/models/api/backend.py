"""The shared async API backend: bounded concurrency, retries, accounting, size checks, secret scrubbing.

Provider subclasses implement four hooks: `make_client`, `render` (neutral request -> SDK keyword
arguments), `send` (one SDK call -> (text, usage)) and `classify` (exception -> Failure).
Requests run on one asyncio event loop; `on_done` is called on one dedicated thread, one call at a time.
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ...errors import MissingDependency
from ..base import Backend, Response
from .accounting import CostMeter, parse_price, price_for
from .images import Encoded, encode_png
from .request import ChatRequest
from .retry import Failure, RetryPolicy
from .secrets import Scrubber, public_url

DEFAULTS = {"concurrency": 8, "max_retries": 5, "timeout": 120.0, "max_consecutive_failures": 8}


class TooLarge(Exception):
    """The request exceeds a documented provider limit even after downscaling; it is not sent."""


def import_sdk(name: str, why: str):
    try:
        return __import__(name)
    except ImportError:
        raise MissingDependency(name, extra="api", why=why) from None


class ApiBackend(Backend):
    name = "api"
    provider = "api"
    sdk: str | None = None  # the official SDK package, checked when the backend is built
    # settings that change how requests are sent, not what is asked: not part of the journal key
    RUN_ONLY = ("concurrency", "max_retries", "timeout", "max_cost", "base_url", "price", "max_consecutive_failures",
                "batch", "poll_interval")
    limits: dict = {}  # request_bytes, image_b64_bytes, image_side, image_side_many (over 20 images)
    unit = "problems"  # what one work item is, in messages ("judge requests" for the judge)
    default_max_image_side: int | None = None  # corrected protocol only

    def __init__(self, preset=None, spec=None, settings=None, generation=None):
        super().__init__(preset, spec, settings, generation)
        s = self.settings = {**DEFAULTS, **self.settings}
        self.model = s.get("api_model") or (preset.model_id if preset else "")
        self.base_url = s.get("base_url")
        self.concurrency = max(1, int(s["concurrency"]))
        self.timeout = float(s["timeout"])
        self.policy = RetryPolicy(max_retries=int(s["max_retries"]))
        corrected = getattr(spec, "protocol", "paper") == "corrected"
        self.max_image_side = (self.generation.max_image_side or self.default_max_image_side) if corrected else None
        self.check_limits = corrected
        max_cost = s.get("max_cost")
        self.meter = CostMeter(price_for(self.model, parse_price(s.get("price"))),
                               None if max_cost is None else float(max_cost))
        self.scrub = Scrubber()
        # a server that is down fails every request after all retries: stop instead of burning the run
        self.breaker = max(1, int(s["max_consecutive_failures"]))
        self.unreachable_streak = 0
        self.last_failure: str | None = None
        self.stats = {"retries": 0, "failed_problems": 0, "downscaled_images": 0, "not_sent_too_large": 0,
                      "not_started_max_cost": 0, "not_started_unreachable": 0}
        if self.sdk:
            import_sdk(self.sdk, f"the {self.provider} backend")  # a missing SDK fails before any work
        self._client_args = self.client_args()  # so does a missing key
        if s.get("batch"):
            from .batch import supported

            supported(self)  # --batch on a backend without a batch API: refused before any work

    # -- provider hooks -------------------------------------------------------------------------
    def client_args(self) -> dict:
        return {}

    def endpoint(self) -> str | None:
        """Where requests go, without credentials (for messages, manifests and the judge's record)."""
        return public_url(self.base_url)

    def make_client(self) -> Any:
        raise NotImplementedError

    def render(self, req: ChatRequest, images: dict[int, Encoded]) -> dict:
        raise NotImplementedError

    async def send(self, client: Any, wire: dict) -> tuple[str, dict]:
        raise NotImplementedError

    def classify(self, exc: BaseException) -> Failure:
        if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
            return Failure("Request timed out.", True)
        if isinstance(exc, ConnectionError):  # e.g. ollama's "Failed to connect to Ollama..." (the original's text)
            return Failure(str(exc) or type(exc).__name__, True)
        if isinstance(exc, json.JSONDecodeError):
            return Failure(f"malformed response: {exc}", True)
        return Failure(f"{exc}", False)

    async def aclose(self, client: Any) -> None:
        close = getattr(client, "close", None) or getattr(client, "aclose", None)
        if close is not None:
            result = close()
            if asyncio.iscoroutine(result):
                await result

    # -- request preparation --------------------------------------------------------------------
    def encode(self, req: ChatRequest) -> dict[int, Encoded]:
        refs = req.images()
        side = self.max_image_side
        if self.check_limits and len(refs) > 20 and self.limits.get("image_side_many"):
            side = min(side or 10**9, self.limits["image_side_many"])
        out = {}
        for ref in refs:
            enc = encode_png(ref, side)
            cap = self.limits.get("image_b64_bytes") if self.check_limits else None
            while cap and len(enc.b64) > cap and max(enc.size) > 64:
                enc = encode_png(ref, max(enc.size) // 2)
            if cap and len(enc.b64) > cap:
                raise TooLarge(f"an image of {len(enc.b64)} base64 bytes exceeds the {cap}-byte limit")
            out[id(ref)] = enc
        return out

    def prepare(self, req: ChatRequest) -> tuple[dict, dict]:
        """SDK arguments and notes (downscaled images, request size) for the journal."""
        images = self.encode(req)
        wire = self.render(req, images)
        notes = {"images": len(images), "downscaled_images": sum(e.downscaled for e in images.values())}
        if self.check_limits:
            size = len(json.dumps(wire, default=str))
            notes["request_bytes"] = size
            cap = self.limits.get("request_bytes")
            if cap and size > cap:
                raise TooLarge(f"request of {size} bytes exceeds the {cap}-byte limit")
        return wire, notes

    # -- one request with retries ---------------------------------------------------------------
    async def call(self, client: Any, wire: dict) -> tuple[str, dict, Failure | None, int]:
        for attempt in range(self.policy.max_retries + 1):
            self.meter.requests += 1
            try:
                text, usage = await asyncio.wait_for(self.send(client, wire), self.timeout + 5)
                return text, usage, None, attempt + 1
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - every failure is classified, none is an answer
                failure = self.classify(exc)
                failure.message = self.scrub(failure.message)
                if not self.policy.should_retry(failure, attempt):
                    return "", {}, failure, attempt + 1
                self.stats["retries"] += 1
                await asyncio.sleep(self.policy.delay(failure, attempt))
        raise AssertionError("unreachable")

    async def one(self, client: Any, req: ChatRequest) -> Response:
        t0 = time.monotonic()
        try:
            wire, notes = await asyncio.to_thread(self.prepare, req)
        except TooLarge as exc:
            self.stats["not_sent_too_large"] += 1
            return Response(error=req.error_format.format(e=f"{exc} (not sent)"), extra={"not_sent": str(exc)})
        self.stats["downscaled_images"] += notes["downscaled_images"]
        text, usage, failure, attempts = await self.call(client, wire)
        extra: dict = {"attempts": attempts, **notes}
        if failure is None and req.followup is not None:
            nxt = req.followup(text)
            if nxt is not None:
                wire2, _ = await asyncio.to_thread(self.prepare, nxt)
                second, usage2, failure, attempts2 = await self.call(client, wire2)
                extra.update(first_reply=text, attempts=attempts + attempts2)
                usage = {k: usage.get(k, 0) + usage2.get(k, 0) for k in {*usage, *usage2}}
                text = second
        usage = {**usage, "requests": extra["attempts"]}
        cost = self.meter.cost_of(usage)
        if cost is not None:
            usage["cost_usd"] = cost
        seconds = time.monotonic() - t0
        if failure is not None:
            extra.update(status=failure.status, transient=failure.transient, failure=failure.message)
            return Response(error=req.error_format.format(e=failure.message), usage=usage, seconds=seconds, extra=extra)
        return Response(text=text, usage=usage, seconds=seconds, extra=extra)

    # -- the run --------------------------------------------------------------------------------
    async def run_all(self, work: list[tuple[Any, ChatRequest]], on_done) -> None:
        client = self.make_client()
        pending = iter(work)
        started = 0
        loop = asyncio.get_running_loop()
        # one journal thread: on_done (an fsynced append) runs there, one call at a time, off the event loop
        recorder = ThreadPoolExecutor(max_workers=1, thread_name_prefix="smmile-journal")

        async def worker() -> None:
            nonlocal started
            for item, req in pending:
                if self.meter.exhausted():
                    self.meter.stopped = True
                    return
                if self.unreachable_streak >= self.breaker:
                    return
                started += 1
                response = await self.one(client, req)
                self.meter.add(response.usage)
                self.stats["failed_problems"] += response.error is not None
                transient = response.error is not None and response.extra.get("transient", False)
                self.unreachable_streak = self.unreachable_streak + 1 if transient else 0
                if transient:
                    self.last_failure = response.extra.get("failure") or response.error
                await loop.run_in_executor(recorder, on_done, item, response)

        try:
            await asyncio.gather(*(worker() for _ in range(min(self.concurrency, len(work)))))
        finally:
            recorder.shutdown(wait=True)
            await self.aclose(client)
        if self.unreachable_streak >= self.breaker and started < len(work):
            self.stats["not_started_unreachable"] = len(work) - started
            print(f"{self.unreachable_streak} {self.unit} in a row failed after all retries at {self.endpoint()} "
                  f"(last error: {self.last_failure}): server unreachable or overloaded? Stopped launching new "
                  f"requests; {len(work) - started} {self.unit} not started", file=sys.stderr)
        if self.meter.stopped:
            self.stats["not_started_max_cost"] = len(work) - started
            print(f"--max-cost {self.meter.max_cost:g} USD reached (estimated {self.meter.cost:.4f} USD spent): "
                  f"stopped launching new requests; {len(work) - started} problem(s) not started",
                  file=sys.stderr)

    def bind_journal(self, journal, keys: dict[int, str]) -> None:
        """From the executor: its journal and each work item's key (by id(item)), for --batch's custom_ids and
        its record of batches in flight."""
        self.journal, self.item_keys = journal, keys

    def generate(self, work, on_done) -> None:
        if not work:
            return
        if self.meter.max_cost is not None and self.meter.price is None:
            print(f"warning: no price known for {self.model!r}; --max-cost cannot be enforced (use --price IN:OUT)",
                  file=sys.stderr)
        if self.settings.get("batch"):
            from .batch import run_batches

            return run_batches(self, work, on_done)
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            asyncio.run(self.run_all(work, on_done))
            return
        # called from inside a running loop (e.g. a notebook): run ours on one worker thread
        errors: list[BaseException] = []
        thread = threading.Thread(target=lambda: _run_capturing(self.run_all(work, on_done), errors))
        thread.start()
        thread.join()
        if errors:
            raise errors[0]

    def describe(self) -> dict:
        return {"backend": self.name, "provider": self.provider, "model": self.model,
                "base_url": public_url(self.base_url), "concurrency": self.concurrency,
                "max_retries": self.policy.max_retries, "timeout_s": self.timeout,
                "max_image_side": self.max_image_side, "size_checks": self.check_limits,
                "limits": dict(self.limits) if self.check_limits else None,
                "stats": dict(self.stats), "accounting": self.meter.describe()}


def _run_capturing(coro, errors: list) -> None:
    try:
        asyncio.run(coro)
    except BaseException as exc:  # noqa: BLE001 - re-raised on the caller's thread
        errors.append(exc)
