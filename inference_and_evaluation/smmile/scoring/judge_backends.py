"""Judge backends: the official ``ollama`` and ``openai`` SDKs, imported lazily, behind one
retry loop with exponential backoff for transient errors (connection problems, timeouts,
429 and 5xx answers).

``make_asker(settings)`` returns ``ask(prompt) -> reply text``; it raises ``JudgeRequestError``
when a request finally fails.
"""

from __future__ import annotations

import os
import time
from typing import Callable

from smmile.errors import MissingDependency
from smmile.scoring.judge import JudgeSettings


class JudgeRequestError(RuntimeError):
    """A judge request failed (after retries, or with a non-transient error)."""


class TransientJudgeError(JudgeRequestError):
    """A judge request failed in a way that may succeed when retried."""


class JudgeUnavailable(JudgeRequestError):
    """Transient failures persisted through every retry: the judge looks unreachable."""


def with_retries(call: Callable[[], str], retries: int, wait: float,
                 sleep: Callable[[float], None] = time.sleep) -> str:
    """Run ``call``; on ``TransientJudgeError`` retry up to ``retries`` times, waiting
    ``wait * 2**attempt`` seconds (capped at 30 s) in between."""
    for attempt in range(retries + 1):
        try:
            return call()
        except TransientJudgeError as exc:
            if attempt == retries:
                raise JudgeUnavailable(f"{exc} (after {retries + 1} attempts)") from None
            sleep(min(wait * 2 ** attempt, 30.0))
    raise AssertionError("unreachable")


def _import(name: str):
    try:
        return __import__(name)
    except ImportError:
        raise MissingDependency(name, extra="api", why=f"the {name} judge backend") from None


def _ollama_asker(settings: JudgeSettings) -> Callable[[str], str]:
    ollama = _import("ollama")
    host = settings.base_url or os.environ.get("OLLAMA_HOST")
    client = ollama.Client(host=host, timeout=settings.timeout)
    options = dict(settings.options())
    if "max_tokens" in options:
        options["num_predict"] = options.pop("max_tokens")

    def ask(prompt: str) -> str:
        try:
            response = client.chat(model=settings.model, messages=[{"role": "user", "content": prompt}],
                                   options=options or None)
        except ollama.ResponseError as exc:
            status = getattr(exc, "status_code", 0) or 0
            kind = TransientJudgeError if status == 429 or status >= 500 else JudgeRequestError
            raise kind(f"ollama HTTP {status}: {exc.error}") from None
        except (ConnectionError, TimeoutError, OSError) as exc:
            raise TransientJudgeError(f"ollama connection error: {exc}") from None
        except Exception as exc:  # httpx timeouts and protocol errors
            if type(exc).__module__.startswith("httpx"):
                raise TransientJudgeError(f"ollama transport error: {type(exc).__name__}: {exc}") from None
            raise
        return response["message"]["content"]

    return ask


def _openai_asker(settings: JudgeSettings) -> Callable[[str], str]:
    openai = _import("openai")
    client = openai.OpenAI(base_url=settings.base_url, api_key=os.environ.get("OPENAI_API_KEY", "not-needed"),
                           max_retries=0, timeout=settings.timeout)
    transient = (openai.APIConnectionError, openai.RateLimitError, openai.InternalServerError)

    def ask(prompt: str) -> str:
        try:
            response = client.chat.completions.create(
                model=settings.model, messages=[{"role": "user", "content": prompt}], **settings.options())
        except transient as exc:  # APITimeoutError is an APIConnectionError
            raise TransientJudgeError(f"openai {type(exc).__name__}: {exc}") from None
        except openai.APIStatusError as exc:
            raise JudgeRequestError(f"openai HTTP {exc.status_code}: {exc.message}") from None
        return response.choices[0].message.content or ""

    return ask


BACKENDS = {"ollama": _ollama_asker, "openai": _openai_asker}


def make_asker(settings: JudgeSettings) -> Callable[[str], str]:
    """``ask(prompt)`` for ``settings.backend``, wrapped in the retry loop."""
    raw = BACKENDS[settings.backend](settings)
    return lambda prompt: with_retries(lambda: raw(prompt), settings.retries, settings.retry_wait)
