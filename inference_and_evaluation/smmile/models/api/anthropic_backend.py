"""Claude through the Anthropic Messages API (official `anthropic` SDK, imported lazily)."""

from __future__ import annotations

import inspect
import os

from ...errors import UserError
from ...generation import MAX_NEW_TOKENS
from .accounting import anthropic_image_tokens
from .backend import ApiBackend, NoContent
from .request import ChatRequest, Encoded, import_sdk, sent_content
from .retry import Failure, status_failure
from .secrets import public_url


class AnthropicBackend(ApiBackend):
    name = "anthropic"
    provider = "anthropic"
    sdk = "anthropic"
    # documented Messages API limits, checked before sending under --protocol corrected
    limits = {"request_bytes": 32 * 1024 * 1024, "image_b64_bytes": 5 * 1024 * 1024,
              "image_side": 8000, "image_side_many": 2000}
    default_max_image_side = 1568  # larger images are resized server-side anyway
    default_max_tokens = MAX_NEW_TOKENS  # the Messages API requires max_tokens

    def client_args(self) -> dict:
        return self.keyed_args("ANTHROPIC_API_KEY", ("api.anthropic.com",), "ANTHROPIC_BASE_URL")

    def endpoint(self) -> str | None:
        return public_url(self.base_url or os.environ.get("ANTHROPIC_BASE_URL") or "https://api.anthropic.com")

    def make_client(self):
        anthropic = import_sdk("anthropic", "the Anthropic backend")
        return anthropic.AsyncAnthropic(**self._client_args, **self.http_client(anthropic), max_retries=0,
                                        timeout=self.timeout)

    def render(self, req: ChatRequest, images: dict[int, Encoded]) -> dict:
        def part(enc: Encoded) -> dict:
            return {"type": "image", "source": {"type": "base64", "media_type": enc.media_type, "data": enc.b64}}

        system, messages = None, []
        for i, m in enumerate(req.messages):
            if m["role"] == "system":
                if i != 0:
                    raise UserError("the Anthropic Messages API has no system turns inside a conversation")
                system = m["content"] if isinstance(m["content"], str) else "".join(p["text"] for p in m["content"])
                continue
            messages.append({"role": m["role"], "content": sent_content(m["content"], images, part)})
        wire = {"model": self.model, "messages": messages, "max_tokens": self.output_cap(req)}
        if system is not None:
            wire["system"] = system
        # this SDK generation has no `temperature`/`top_p` arguments; the API still takes them
        body = {k: getattr(req, k) for k in ("temperature", "top_p") if getattr(req, k) is not None}
        if req.stop:
            body["stop_sequences"] = list(req.stop)
        if body:
            wire["extra_body"] = body
        return {**wire, **req.options}

    def image_tokens(self, size: tuple[int, int]) -> int | None:
        return anthropic_image_tokens(*size)

    def image_rule(self) -> str:
        return "Claude: width x height / 750 after resizing to <= 1568 px long edge and ~1.15 MP"

    async def send(self, client, wire: dict) -> tuple[str, dict, dict]:
        raw = await client.messages.with_raw_response.create(**wire)  # the headers: rate-limit state
        response = raw.parse()
        if inspect.isawaitable(response):
            response = await response
        return (*self.reply_of(response), raw.headers)

    def reply_of(self, response) -> tuple[str, dict]:
        """Text and tokens of a message (a synchronous reply or a batch result)."""
        if isinstance(response, (str, bytes)):
            raise ValueError("malformed message response")
        content = getattr(response, "content", None)
        text = getattr(content[0], "text", None) if content else None
        if not isinstance(text, str):
            raise NoContent(f"the reply has no text content (stop_reason: {getattr(response, 'stop_reason', None)})")
        usage = getattr(response, "usage", None)
        tokens = {"input_tokens": getattr(usage, "input_tokens", 0) or 0,
                  "output_tokens": getattr(usage, "output_tokens", 0) or 0} if usage else {}
        return text, tokens

    def classify(self, exc: BaseException) -> Failure:
        anthropic = import_sdk("anthropic", "the Anthropic backend")
        if isinstance(exc, anthropic.APIStatusError):
            return status_failure(str(exc), exc.status_code, getattr(exc.response, "headers", None))
        if isinstance(exc, anthropic.APIConnectionError):  # timeouts included
            return Failure(str(exc) or "Connection error.", True)
        if isinstance(exc, (anthropic.APIResponseValidationError, ValueError)):
            return Failure(f"malformed response: {exc}", True)
        return super().classify(exc)
