"""The shared async API backend: bounded concurrency, retries, accounting, size checks, secret scrubbing.

Provider subclasses implement `make_client`, `render` (ChatRequest -> SDK keyword arguments), `send` (one SDK call
-> (text, usage[, headers])) and `classify` (exception -> Failure). `on_done` runs on one thread, one call at a time.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ...errors import UserError
from ..base import Backend, Response
from .accounting import CostMeter, batch_cost, price_for, text_tokens
from .prices import table
from .limiter import THROTTLED, Limiter
from .request import ChatRequest, Encoded, TooLarge, encode_png, import_sdk
from .retry import Failure, RetryPolicy
from .egress import Egress, fmt_host, is_loopback, one_line, refusal, scheme_ok
from .secrets import Scrubber, host_of, key_may_go_to, public_url

log = logging.getLogger(__name__)
DEFAULTS = {"max_retries": 5, "timeout": 120.0, "max_consecutive_failures": 8}  # of these RunSettings fields


class NoContent(Exception):
    """A reply without content (null or missing text): a failed request, never an empty answer."""


class ApiBackend(Backend):
    name = "api"
    provider = "api"
    sdk: str | None = None  # the official SDK package, checked when the backend is built
    # settings that change how requests are sent, not what is asked: not part of the journal key
    RUN_ONLY = ("concurrency", "max_retries", "timeout", "max_cost", "base_url", "price", "max_consecutive_failures",
                "allow_key_for_host", "batch", "poll_interval", "prices", "batch_deployment", "deadline")
    limits: dict = {}  # request_bytes, image_b64_bytes, image_side, image_side_many (over 20 images)
    unit = "problems"  # what one work item is, in messages ("judge requests" for the judge)
    default_max_image_side: int | None = None  # corrected protocol only
    default_concurrency: int | str = "auto"  # see limiter.py
    default_max_tokens: int | None = None  # the output cap sent when a request names none (Anthropic needs one)

    def __init__(self, preset=None, spec=None, settings=None, generation=None):
        super().__init__(preset, spec, settings, generation)
        s = self.settings
        self.model = s.api_model or (preset.model_id if preset else "")
        self.base_url = s.base_url
        level = s.concurrency or self.default_concurrency
        self.concurrency = level if level == "auto" else max(1, int(level))
        self.limiter = Limiter(None if level == "auto" else self.concurrency)
        self.fatal: str | None = None  # why the run stopped at once (a refused key, a very long Retry-After)
        self.timeout = float(self.setting("timeout"))
        self.policy = RetryPolicy(max_retries=int(self.setting("max_retries")))
        corrected = getattr(spec, "protocol", "paper") == "corrected"
        self.max_image_side = (self.generation.max_image_side or self.default_max_image_side) if corrected else None
        self.check_limits = corrected
        max_cost = None if s.max_cost is None else float(s.max_cost)
        self.meter = CostMeter(price_for(self.model, s.price, s.prices), max_cost)
        if s.prices:
            self.meter.prices_date = f"{table(s.prices).date} ({s.prices})"
        self.scrub = Scrubber()
        self.egress: Egress | None = None  # set with the key (keyed_args): where every request may go
        # a server that is down fails every request after all retries: stop instead of burning the run
        self.breaker = max(1, int(self.setting("max_consecutive_failures")))
        self.unreachable_streak = 0
        self.last_failure: str | None = None
        self.stats = {"retries": 0, "failed_problems": 0, "downscaled_images": 0, "not_sent_too_large": 0,
                      "not_started_max_cost": 0, "not_started_unreachable": 0, "throttled": 0}
        if self.sdk:
            import_sdk(self.sdk, f"the {self.provider} backend")  # a missing SDK fails before any work
        self._client_args = self.client_args()  # so does a missing key
        if s.batch:
            from .batch import supported

            supported(self)  # --batch on a backend without a batch API: refused before any work

    def setting(self, name: str):
        """A transport setting, or its default (`DEFAULTS`) where the run sets none."""
        value = getattr(self.settings, name)
        return DEFAULTS[name] if value is None else value

    def client_args(self) -> dict:
        return {}

    def keyed_args(self, var: str, official: tuple[str, ...], named_by: str, hint: str = "") -> dict:
        """Client arguments with the key in `var`; refused for a --base-url that `secrets.key_may_go_to` does not
        allow."""
        key = os.environ.get(var)
        if not key:
            raise UserError(f"{var} environment variable not set")
        self.scrub.add(key)
        allowed = self.settings.allow_key_for_host
        named = os.environ.get(named_by)
        if not key_may_go_to(self.base_url, official, allowed, named):
            raise UserError(f"{var} is sent only to {official[0].lstrip('.')}, not to {public_url(self.base_url)}: "
                            f"to send it there, add --allow-key-for-host {host_of(self.base_url)} or set {named_by} "
                            f"to that URL{hint}")
        self.guard(var, lambda host: key_may_go_to(f"https://{fmt_host(host)}", official, allowed, named),
                   self.base_url or named)
        return {"api_key": key, **({"base_url": self.base_url} if self.base_url else {})}

    def guard(self, var: str, allowed, url: str | None) -> None:
        """Refuse a `url` that would carry the key `var` in plain text; every request is then checked (Egress)."""
        if url and not scheme_ok(url.split(":", 1)[0].lower(), host_of(url)):
            raise UserError(f"{public_url(url)} would receive {var} in plain text: use https (plain http is for "
                            "servers on this machine only)")
        self.egress = Egress(allowed, f"the {var} key")

    def http_client(self, sdk, asynchronous: bool = True) -> dict:
        """The `http_client` argument of an SDK client: its requests pass the egress check."""
        return {"http_client": self.egress.http_client(sdk, asynchronous)} if self.egress else {}

    def failure_line(self, exc: BaseException) -> tuple[str, int]:
        """One line for an exception that ends the run, and its exit code: 2 for what the user fixes (a key, a
        refused host, a request the provider rejects), 1 for the provider's or the network's failures."""
        refused = refusal(exc)
        if refused is not None:
            return f"{refused}", 2
        failure = self.classify(exc)
        where = f"{self.provider} at {self.endpoint()}"
        if failure.status in (401, 403):
            return f"{failure.status} from {where}: {failure.message} (the key was refused: check it)", 2
        if failure.status is not None and 400 <= failure.status < 500 and not failure.transient:
            return f"{failure.status} from {where}: {failure.message}", 2
        kind = "" if failure.status or isinstance(exc, (ConnectionError, TimeoutError)) else f"{type(exc).__name__}: "
        return f"{where} failed: {kind}{failure.message}; rerun the same command to resume", 1

    def endpoint(self) -> str | None:
        """Where requests go, without credentials (for messages, manifests and the judge's record)."""
        return public_url(self.base_url)

    def classify(self, exc: BaseException) -> Failure:
        if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
            return Failure("Request timed out.", True)
        if isinstance(exc, ConnectionError):  # e.g. ollama's "Failed to connect to Ollama..." (the original's text)
            return Failure(str(exc) or type(exc).__name__, True)
        if isinstance(exc, NoContent):
            return Failure(str(exc), False, no_content=True)
        if isinstance(exc, json.JSONDecodeError):
            return Failure(f"malformed response: {exc}", True)
        return Failure(f"{exc}", False)

    async def aclose(self, client: Any) -> None:
        close = getattr(client, "close", None) or getattr(client, "aclose", None)
        if close is not None:
            result = close()
            if asyncio.iscoroutine(result):
                await result

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

    def image_tokens(self, size: tuple[int, int]) -> int | None:
        """The provider's documented token count of one image as sent (None: not documented)."""
        return None

    def prepare(self, req: ChatRequest) -> tuple[dict, dict]:
        """SDK arguments and notes (downscaled images, request size, estimated tokens) for the journal."""
        images = self.encode(req)
        wire = self.render(req, images)
        notes = {"images": len(images), "downscaled_images": sum(e.downscaled for e in images.values()),
                 "image_sizes": [list(e.size) for e in images.values()],
                 "image_b64_bytes": sum(len(e.b64) for e in images.values()),
                 "estimated_input_tokens": text_tokens(req.messages)
                 + sum(self.image_tokens(e.size) or 0 for e in images.values())}
        if self.check_limits:
            size = len(json.dumps(wire, default=str))
            notes["request_bytes"] = size
            cap = self.limits.get("request_bytes")
            if cap and size > cap:
                raise TooLarge(f"request of {size} bytes exceeds the {cap}-byte limit")
        return wire, notes

    def output_cap(self, req: ChatRequest) -> int | None:
        """The output-token cap sent with `req` (None: none, the server decides)."""
        return req.max_tokens or self.default_max_tokens

    batch_run = None  # the BatchRun of --batch: its progress is batches, not requests in flight

    def progress_detail(self) -> str:
        return self.batch_run.progress if self.batch_run is not None else self.limiter.describe()

    async def call(self, client: Any, wire: dict, budget: float | None = None) -> tuple[str, dict, Failure | None, int]:
        """`budget`: the request's estimated cost, reserved against --max-cost when its first attempt is launched
        (a request that no longer fits raises OverBudget before anything is sent)."""
        reserved = 0.0
        try:
            for attempt in range(self.policy.max_retries + 1):
                if self.fatal:
                    return "", {}, Failure(self.fatal, False), attempt
                if attempt == 0 and budget is not None:
                    await self.reserve(budget)
                    reserved = budget
                ticket = await self.limiter.acquire()
                self.meter.requests += 1
                try:
                    text, usage, *rest = await asyncio.wait_for(self.send(client, wire), self.timeout + 5)
                except asyncio.CancelledError:
                    await self.limiter.release(ticket, 0)
                    raise
                except Exception as exc:  # noqa: BLE001 - every failure is classified, none is an answer
                    failure = self.classify(exc)
                    failure.message = self.scrub(failure.message)
                    headers = getattr(getattr(exc, "response", None), "headers", None)
                    status = failure.status or (503 if failure.transient else 0)  # timeouts: the server is busy
                    self.stats["throttled"] += failure.status in THROTTLED
                    too_long = failure.retry_after is not None and failure.retry_after > self.policy.max_retry_after
                    await self.limiter.release(ticket, status, None if too_long else failure.retry_after, headers)
                    if refusal(exc) is not None:  # a host the key may not go to: no request will fare better
                        self.fatal = str(refusal(exc))
                    elif failure.status in (401, 403):  # the key was refused: every other request would be too
                        self.fatal = (f"{failure.status} from {self.endpoint()}: {failure.message} (the key was "
                                      "refused: check it, and the model's name and access)")
                    elif too_long:
                        self.fatal = (f"{self.endpoint()} asked to wait {failure.retry_after:g}s (Retry-After), longer "
                                      f"than the {self.policy.max_retry_after:g}s smmile waits: rerun the same command "
                                      "later to continue")
                    elif self.policy.should_retry(failure, attempt):
                        self.stats["retries"] += 1
                        await asyncio.sleep(self.policy.delay(failure, attempt))
                        continue
                    return "", {}, failure, attempt + 1
                await self.limiter.release(ticket, None, None, rest[0] if rest else None)
                return text, usage, None, attempt + 1
            raise AssertionError("unreachable")
        finally:
            if reserved:
                await self.unreserve(reserved)

    _budget: asyncio.Condition | None = None

    async def reserve(self, estimate: float) -> None:
        """Reserve `estimate` under --max-cost: waits while requests in flight hold reservations (their real cost
        is usually far below their at-most estimate); OverBudget once it does not fit with none in flight."""
        self._budget = self._budget or asyncio.Condition()
        async with self._budget:
            while not self.meter.fits(estimate):
                if self.meter.reserved <= 1e-12:
                    raise OverBudget(estimate)
                await self._budget.wait()
            self.meter.reserved += estimate

    async def unreserve(self, estimate: float) -> None:
        async with self._budget:
            self.meter.reserved -= estimate
            self._budget.notify_all()

    async def one(self, client: Any, req: ChatRequest) -> Response:
        t0 = time.monotonic()
        try:
            wire, notes = await asyncio.to_thread(self.prepare, req)
        except TooLarge as exc:
            return self.not_sent(req, exc)
        self.stats["downscaled_images"] += notes["downscaled_images"]
        budget = self.meter.cost_of({"input_tokens": notes["estimated_input_tokens"],
                                     "output_tokens": self.output_cap(req) or 0})  # at most: the whole output cap
        text, usage, failure, attempts = await self.call(client, wire, budget)
        self.meter.estimated_input_tokens += notes["estimated_input_tokens"]
        self.meter.estimated_output_cap += self.output_cap(req) or 0
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
        return self.respond(req, text, usage, self.meter.cost_of(usage), failure, extra, time.monotonic() - t0)

    def respond(self, req: ChatRequest, text: str, usage: dict, cost: float | None, failure: Failure | None,
                extra: dict, seconds: float = 0.0) -> Response:
        """The Response of one request (synchronous or batch): its cost in `usage`, a failure as the error text."""
        if cost is not None:
            usage["cost_usd"] = cost
        if failure is None:
            return Response(text=text, usage=usage, seconds=seconds, extra=extra)
        extra.update(status=failure.status, transient=failure.transient, failure=failure.message,
                     **({"no_content": True} if failure.no_content else {}))
        return Response(error=req.error_format.format(e=failure.message), usage=usage, seconds=seconds, extra=extra)

    def not_sent(self, req: ChatRequest, exc: TooLarge) -> Response:
        self.stats["not_sent_too_large"] += 1
        return Response(error=req.error_format.format(e=f"{exc} (not sent)"), extra={"not_sent": str(exc)})

    def count_journaled(self, records) -> None:
        """Called by the executor with the journal's records of this output: the budget counts what they cost."""
        self.meter.count_journaled(records)

    async def run_all(self, work: list[tuple[Any, ChatRequest]], on_done) -> None:
        client = self.make_client()
        pending = iter(work)
        started = 0
        over: list[float] = []  # the estimate of the request that no longer fit under --max-cost
        loop = asyncio.get_running_loop()
        # one journal thread: on_done (an fsynced append) runs there, one call at a time, off the event loop
        recorder = ThreadPoolExecutor(max_workers=1, thread_name_prefix="smmile-journal")

        async def worker() -> None:
            nonlocal started
            for item, req in pending:
                if self.fatal or over or self.unreachable_streak >= self.breaker:
                    return
                started += 1
                try:
                    response = await self.one(client, req)
                except OverBudget as exc:
                    started -= 1
                    over.append(exc.estimate)
                    return
                self.meter.add(response.usage)
                self.stats["failed_problems"] += response.error is not None
                transient = response.error is not None and response.extra.get("transient", False)
                self.unreachable_streak = self.unreachable_streak + 1 if transient else 0
                if transient:
                    self.last_failure = response.extra.get("failure") or response.error
                await loop.run_in_executor(recorder, on_done, item, response)

        width = self.limiter.maximum
        try:
            await asyncio.gather(*(worker() for _ in range(min(width, len(work)))))
        finally:
            recorder.shutdown(wait=True)
            await self.aclose(client)
        left = len(work) - started
        if self.fatal:
            raise UserError(f"{self.fatal}; stopped at once, {left} {self.unit} not started")
        if self.unreachable_streak >= self.breaker and left:
            self.stats["not_started_unreachable"] = left
            log.warning(f"{self.unreachable_streak} {self.unit} in a row failed after all retries at {self.endpoint()} "
                       f"(last error: {self.last_failure}): server unreachable or overloaded? Stopped launching new "
                       f"requests; {left} {self.unit} not started")
        if over:
            self.meter.stopped = True
            self.stats["not_started_max_cost"] = left
            m = self.meter
            log.warning(f"--max-cost {m.max_cost:g} USD reached: {m.spent:.4f} USD spent on this output "
                       f"({m.spent_before:.4f} before this run), {max(m.left, 0):.4f} USD left, less than the next "
                       f"request's at-most estimate of {over[0]:.4f} USD; stopped launching new requests, {left} "
                       f"{self.unit} not started (rerun with a larger --max-cost to continue)")

    journal = item_keys = None

    def bind_journal(self, journal, keys: dict[int, str]) -> None:
        """From the executor: its journal and each work item's key (by id(item)), for --batch's custom_ids and
        its record of batches in flight."""
        self.journal, self.item_keys = journal, keys

    def generate(self, work, on_done) -> None:
        if not work:
            return
        if self.meter.max_cost is not None and self.meter.price is None:
            log.warning(f"warning: no price known for {self.model!r}; --max-cost cannot be enforced "
                       "(use --price IN:OUT)")
        if self.meter.max_cost is not None and self.meter.exhausted():
            self.meter.stopped = True
            self.stats["not_started_max_cost"] = len(work)
            log.warning(f"--max-cost {self.meter.max_cost:g} USD reached: {self.meter.spent:.4f} USD already spent on "
                       f"this output, 0 USD left; {len(work)} {self.unit} not started")
            return
        with one_line(self.scrub, self.failure_line):
            self._generate(work, on_done)

    def _generate(self, work, on_done) -> None:
        if self.settings.batch:
            from .batch import BatchRun

            return BatchRun(self, work, on_done).run()
        in_flight_refusal(self.journal)
        self.run_sync(work, on_done)

    def run_sync(self, work, on_done) -> None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            asyncio.run(self.run_all(work, on_done))
            return
        with ThreadPoolExecutor(max_workers=1) as thread:  # inside a running loop (a notebook): ours on a thread
            thread.submit(asyncio.run, self.run_all(work, on_done)).result()

    def estimate(self, requests: list[ChatRequest]) -> dict:
        """What sending `requests` would take, without sending anything (--dry-run): requests, images and their
        sizes as sent, estimated input tokens, the output-token cap, the cost synchronously and in batch."""
        sizes: Counter[str] = Counter()
        images = b64 = text = image_tokens = cap = 0
        too_large = []
        for req in requests:
            try:
                encoded = self.encode(req)
            except TooLarge as exc:
                too_large.append(str(exc))
                continue
            text += text_tokens(req.messages)
            for e in encoded.values():
                images += 1
                b64 += len(e.b64)
                image_tokens += self.image_tokens(e.size) or 0
                sizes[f"{e.size[0]}x{e.size[1]}"] += 1
            cap += self.output_cap(req) or 0
        sync = self.meter.cost_of({"input_tokens": text + image_tokens, "output_tokens": cap})
        return {"model": self.model, "provider": self.provider, "endpoint": self.endpoint(),
                "requests": len(requests) - len(too_large), "not_sent_too_large": len(too_large),
                "images": images, "image_b64_bytes": b64,
                "image_sizes": dict(sizes.most_common()),
                "image_rule": self.image_rule(), "input_tokens": text + image_tokens, "text_tokens": text,
                "image_tokens": image_tokens, "output_tokens_cap": cap,
                "max_tokens": sorted({self.output_cap(r) for r in requests}, key=lambda v: (v is None, v or 0)),
                "price": self.meter.price, "prices_date": self.meter.prices_date, "cost_sync_usd": sync,
                "cost_batch_usd": batch_cost(sync)}

    def image_rule(self) -> str:
        return "image tokens not documented for this provider (counted as 0)"

    def describe(self) -> dict:
        return {"backend": self.name, "provider": self.provider, "model": self.model,
                "base_url": public_url(self.base_url), "concurrency": self.concurrency,
                "egress": None if self.egress is None else ("https, and plain http to this machine (a loopback "
                          "server)" if is_loopback(host_of(self.endpoint())) else "https only"),
                "concurrency_last_level": int(self.limiter.level),
                "max_retries": self.policy.max_retries, "timeout_s": self.timeout,
                "max_image_side": self.max_image_side, "size_checks": self.check_limits,
                "limits": dict(self.limits) if self.check_limits else None,
                "stats": dict(self.stats), "accounting": self.meter.describe()}


def in_flight_refusal(journal) -> None:
    """A run without --batch would send again what batches of this output still have in flight: refused."""
    if journal is None:
        return
    from .batch_ledger import Ledger, result_dir

    ledger = Ledger(journal)
    try:
        ids = sorted({*(e["id"] for e in ledger.open_batches()), *(f"(unrecorded) {i['tag'][:8]}"
                                                                   for i in ledger.intents_any())})
    finally:
        ledger.close()
    if ids:
        raise UserError(f"{len(ids)} batch(es) of this output are still in flight ({', '.join(ids)}): rerun with "
                        f"--batch to collect them, or cancel them with `smmile batches cancel {result_dir(journal.path)}`"
                        " and rerun")


class OverBudget(Exception):
    def __init__(self, estimate: float):
        super().__init__(f"estimated {estimate:.4f} USD")
        self.estimate = estimate
