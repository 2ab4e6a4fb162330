"""OpenAI chat-completions providers: Azure OpenAI, OpenAI, and any OpenAI-compatible server
(vLLM serve, SGLang, llama.cpp server, ollama /v1, gateways). Official `openai` SDK, imported lazily."""

from __future__ import annotations

import json
import os

from ...errors import UserError
from .accounting import openai_image_tokens
from .backend import ApiBackend, NoContent
from .request import ChatRequest, Encoded, import_sdk, sent_content
from .retry import Failure, status_failure
from .egress import Egress
from .secrets import host_of, public_url, url_has_credentials

AZURE_API_VERSION = "2024-05-01-preview"  # the original's default (spec §1.6)
OPENAI_ENDPOINT = "https://api.openai.com/v1"


class OpenAIChatBackend(ApiBackend):
    name = "openai"
    provider = "openai"
    sdk = "openai"
    limits = {"request_bytes": 50 * 1024 * 1024}
    default_max_image_side = 2048  # "high" detail scales images to fit 2048x2048 anyway
    detail = "high"  # the image detail level sent (the original's)

    def client_args(self) -> dict:
        return self.keyed_args("OPENAI_API_KEY", ("api.openai.com",), "OPENAI_BASE_URL",
                               " (or use --backend openai-compatible: its key is OPENAI_COMPATIBLE_API_KEY)")

    def make_client(self):
        openai = import_sdk("openai", f"the {self.provider} backend")
        cls = openai.AsyncAzureOpenAI if self.provider == "azure" else openai.AsyncOpenAI
        return cls(**self._client_args, **self.header_args(openai), **self.http_client(openai), max_retries=0,
                   timeout=self.timeout)

    def header_args(self, openai) -> dict:
        """OPENAI_ORG_ID / OPENAI_PROJECT_ID (read by the SDK) are kept off servers other than OpenAI's."""
        omit = {"OpenAI-Organization": openai.Omit(), "OpenAI-Project": openai.Omit()}
        return {} if self.provider == "openai" else {"default_headers": omit}

    def endpoint(self) -> str | None:
        return public_url(self.base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_ENDPOINT)

    def render(self, req: ChatRequest, images: dict[int, Encoded]) -> dict:
        def part(enc: Encoded) -> dict:
            return {"type": "image_url",
                    "image_url": {"url": f"data:{enc.media_type};base64,{enc.b64}", "detail": self.detail}}

        messages = [{"role": m["role"], "content": sent_content(m["content"], images, part)} for m in req.messages]
        return {"model": self.model, "messages": messages, **req.sampling("max_tokens"), **req.options}

    def image_tokens(self, size: tuple[int, int]) -> int | None:
        return openai_image_tokens(*size, self.detail)

    def image_rule(self) -> str:
        return (f"GPT-4o, detail {self.detail}: " + ("85 tokens an image" if self.detail == "low" else
                "fit in 2048x2048, shorter side to 768, 85 + 170 per 512-px tile"))

    async def send(self, client, wire: dict) -> tuple[str, dict, dict]:
        raw = await client.chat.completions.with_raw_response.create(**wire)  # the headers: rate-limit state
        return (*self.reply_of(raw.parse()), raw.headers)

    def reply_of(self, response) -> tuple[str, dict]:
        """Text and tokens of a chat completion (a synchronous reply or a batch result)."""
        if isinstance(response, (str, bytes)) or not getattr(response, "choices", None):
            raise json.JSONDecodeError("malformed chat completion (no choices)", str(response)[:200], 0)
        usage = getattr(response, "usage", None)
        tokens = {"input_tokens": getattr(usage, "prompt_tokens", 0) or 0,
                  "output_tokens": getattr(usage, "completion_tokens", 0) or 0} if usage else {}
        choice = response.choices[0]
        text = getattr(getattr(choice, "message", None), "content", None)
        if not isinstance(text, str):
            raise NoContent(f"the reply has no content (finish_reason: {getattr(choice, 'finish_reason', None)})")
        return text, tokens

    def classify(self, exc: BaseException) -> Failure:
        openai = import_sdk("openai", f"the {self.provider} backend")
        if isinstance(exc, openai.APIStatusError):
            return status_failure(str(exc), exc.status_code, getattr(exc.response, "headers", None))
        if isinstance(exc, openai.APITimeoutError):
            return Failure(str(exc) or "Request timed out.", True)
        if isinstance(exc, openai.APIConnectionError):
            return Failure(str(exc) or "Connection error.", True)
        if isinstance(exc, openai.APIResponseValidationError):
            return Failure(f"malformed response: {exc}", True)
        return super().classify(exc)


class AzureOpenAIBackend(OpenAIChatBackend):
    """GPT-4o through Azure OpenAI, as the original (`AsyncAzureOpenAI`; the model is the deployment name)."""

    name = "azure-openai"
    provider = "azure"

    def client_args(self) -> dict:
        key, endpoint = os.environ.get("AZURE_OPENAI_API_KEY"), os.environ.get("AZURE_OPENAI_ENDPOINT")
        if not key or not endpoint:
            raise UserError("AZURE_OPENAI_API_KEY and AZURE_OPENAI_ENDPOINT must be set (and optionally "
                            "AZURE_OPENAI_API_VERSION; default " + AZURE_API_VERSION + "), or OPENAI_API_KEY to use "
                            "OpenAI instead (--provider openai)")
        self.scrub.add(key)
        self.base_url = endpoint
        allowed = {host_of(endpoint), *(h.lower() for h in self.settings.allow_key_for_host)}
        self.guard("AZURE_OPENAI_API_KEY", allowed.__contains__, endpoint)
        return {"api_key": key, "azure_endpoint": endpoint,
                "api_version": os.environ.get("AZURE_OPENAI_API_VERSION") or AZURE_API_VERSION}

    def describe(self) -> dict:
        return {**super().describe(), "api_version": self._client_args["api_version"]}


class OpenAICompatibleBackend(OpenAIChatBackend):
    """Any server speaking OpenAI chat completions at `--base-url` (key: OPENAI_COMPATIBLE_API_KEY, optional)."""

    name = "openai-compatible"
    provider = "openai-compatible"
    limits: dict = {}

    def image_tokens(self, size: tuple[int, int]) -> int | None:
        return None  # each served model counts image tokens its own way

    def image_rule(self) -> str:
        return "image tokens of a served model are not documented here (counted as 0)"

    def client_args(self) -> dict:
        if not self.base_url:
            raise UserError("--backend openai-compatible needs --base-url (e.g. http://127.0.0.1:8000/v1)")
        if url_has_credentials(self.base_url):
            raise UserError("--base-url must not carry credentials (user:password@ or ?query); "
                            "put the key in OPENAI_COMPATIBLE_API_KEY instead")
        key = os.environ.get("OPENAI_COMPATIBLE_API_KEY")
        self.scrub.add(key)
        # its own server's key: pinned to that host; plain http allowed (a served model on the local network)
        self.egress = Egress(lambda host, own=host_of(self.base_url): host == own, "OPENAI_COMPATIBLE_API_KEY",
                             any_scheme=True)
        return {"api_key": key or "EMPTY", "base_url": self.base_url}
