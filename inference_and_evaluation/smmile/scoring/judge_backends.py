"""The judge on the inference API backends (``smmile/models/api``: retries, concurrency, circuit breaker, secret
scrubbing and key rules): this module only maps the judge's flags onto them."""

from __future__ import annotations

import logging
import os
from dataclasses import replace

from smmile.scoring.judge import JudgeSettings

log = logging.getLogger(__name__)


def judge_backends() -> tuple[str, ...]:
    """`--judge-backend` choices: one name per API backend of `presets_api.BACKENDS` (aliases left out)."""
    from smmile.models.presets_api import BACKENDS

    first: dict[str, str] = {}
    for name, path in BACKENDS.items():
        first.setdefault(path, name)
    return tuple(first.values())


def checked_settings(settings: JudgeSettings, warn=log.warning) -> JudgeSettings:
    """``openai`` with a ``--judge-base-url`` that is not OpenAI's own endpoint is an OpenAI-compatible server
    (key ``OPENAI_COMPATIBLE_API_KEY``) unless the inference backends' key rule lets ``OPENAI_API_KEY`` go there."""
    from smmile.errors import UserError
    from smmile.models.api.secrets import key_may_go_to, url_has_credentials

    if settings.base_url and url_has_credentials(settings.base_url):  # before anything could write it
        raise UserError("--judge-base-url must not carry credentials (user:password@ or ?query); API keys come "
                        "from the environment only")
    if settings.backend == "openai" and not key_may_go_to(settings.base_url, ("api.openai.com",),
                                                          settings.allow_key_for_host,
                                                          os.environ.get("OPENAI_BASE_URL")):
        if os.environ.get("OPENAI_API_KEY"):
            warn(f"note: {settings.base_url} is not OpenAI's endpoint: OPENAI_API_KEY is not sent there; the judge "
                 "uses it as an OpenAI-compatible server (key from OPENAI_COMPATIBLE_API_KEY, if set)")
        return replace(settings, backend="openai-compatible")
    return settings


def build_backend(settings: JudgeSettings):
    """A missing SDK or key is a one-line UserError here, before work."""
    from smmile.generation import GenerationSettings
    from smmile.models.presets_api import BACKENDS
    from smmile.models.registry import load_symbol

    cls = load_symbol(BACKENDS[settings.backend])
    transport = {"api_model": settings.model, "base_url": settings.base_url, "concurrency": settings.concurrency,
                 "max_retries": settings.retries, "timeout": settings.timeout,
                 "max_consecutive_failures": settings.max_consecutive_failures,
                 "batch": settings.batch or None, "poll_interval": settings.poll_interval, "price": settings.price,
                 "allow_key_for_host": list(settings.allow_key_for_host) or None}
    backend = cls(settings={k: v for k, v in transport.items() if v is not None}, generation=GenerationSettings())
    backend.unit = "judge requests"
    return backend


def judge_request(prompt: str, settings: JudgeSettings):
    """One user message sending ``settings.options()``, the options its key holds."""
    from smmile.generation import GenerationSettings
    from smmile.models.api.request import ChatRequest

    options = settings.options()
    gen = GenerationSettings(max_new_tokens=options.get("max_tokens"), temperature=options.get("temperature"),
                             seed=options.get("seed"))
    return ChatRequest.from_settings([{"role": "user", "content": prompt}], gen, error_format="{e}")
