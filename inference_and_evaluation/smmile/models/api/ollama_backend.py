"""Local models through ollama's native chat API (official `ollama` SDK, imported lazily)."""

from __future__ import annotations

import contextvars
import os

from .backend import ApiBackend, NoContent
from .request import ChatRequest, Encoded, import_sdk
from .retry import Failure, parse_retry_after, status_failure
from .secrets import public_url

_retry_after: contextvars.ContextVar = contextvars.ContextVar("ollama_retry_after", default=None)


class OllamaBackend(ApiBackend):
    name = "ollama"
    provider = "ollama"
    sdk = "ollama"
    default_concurrency = 8  # a local server queues what it cannot run: more in flight only waits longer

    def client_args(self) -> dict:
        return {"host": self.base_url or os.environ.get("OLLAMA_HOST") or None}

    def make_client(self):
        ollama = import_sdk("ollama", "the ollama backend")

        async def remember_retry_after(response) -> None:  # the SDK's ResponseError drops the headers
            _retry_after.set(parse_retry_after(response.headers) if response.status_code >= 400 else None)

        return ollama.AsyncClient(**self._client_args, timeout=self.timeout,
                                  event_hooks={"response": [remember_retry_after]})

    def endpoint(self) -> str | None:
        from ollama._client import _parse_host  # the SDK's own reading of OLLAMA_HOST-style values

        return public_url(_parse_host(self._client_args["host"]))

    async def aclose(self, client) -> None:
        await client._client.aclose()  # the SDK exposes no close(); its httpx client does

    def render(self, req: ChatRequest, images: dict[int, Encoded]) -> dict:
        messages = []
        for m in req.messages:
            content, pics = m["content"], []
            if isinstance(content, list):
                pics = [images[id(p["ref"])].b64 for p in content if p.get("type") == "image"]
                content = "\n".join(p["text"] for p in content if p.get("type") == "text")
            messages.append({"role": m["role"], "content": content, **({"images": pics} if pics else {})})
        options = req.sampling("num_predict")
        return {"model": self.model, "messages": messages, **({"options": options} if options else {}), **req.options}

    async def send(self, client, wire: dict) -> tuple[str, dict]:
        _retry_after.set(None)
        try:
            response = await client.chat(**wire)
        except Exception as exc:
            exc.retry_after = _retry_after.get()  # read here: this task is the one the hook ran in
            raise
        tokens = {"input_tokens": response.prompt_eval_count or 0, "output_tokens": response.eval_count or 0}
        if not isinstance(response.message.content, str):
            raise NoContent(f"the reply has no content (done_reason: {getattr(response, 'done_reason', None)})")
        return response.message.content, tokens

    def classify(self, exc: BaseException) -> Failure:
        ollama = import_sdk("ollama", "the ollama backend")
        if isinstance(exc, ollama.ResponseError):
            failure = status_failure(str(exc), exc.status_code)
            failure.retry_after = getattr(exc, "retry_after", None)
            return failure
        if type(exc).__module__.startswith("httpx") or "pydantic" in type(exc).__module__:
            return Failure(f"{type(exc).__name__}: {exc}", True)  # timeouts, transport and malformed bodies
        return super().classify(exc)
