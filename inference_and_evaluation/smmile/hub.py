"""Is the Hugging Face hub reachable? One quick probe, so that an offline machine uses its cache or fails
within seconds instead of retrying for minutes (huggingface_hub retries each request with back-off)."""

from __future__ import annotations

import contextlib
import functools
import os
import socket
import sys
from typing import Iterator
from urllib.parse import urlsplit


def offline_requested() -> bool:
    """The user asked for offline mode (the variables huggingface_hub, datasets and transformers read)."""
    return any(os.environ.get(v, "").upper() in {"1", "ON", "YES", "TRUE"}
               for v in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"))


def _probe_target() -> tuple[str, int]:
    """The host a hub request connects to first: the HTTPS proxy when one is set, else the endpoint."""
    for var in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        if os.environ.get(var):
            url = urlsplit(os.environ[var] if "://" in os.environ[var] else "http://" + os.environ[var])
            return url.hostname or "", url.port or 80
    url = urlsplit(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    return url.hostname or "", url.port or (443 if url.scheme == "https" else 80)


@functools.lru_cache(maxsize=None)
def unreachable(timeout: float = 3.0) -> str | None:
    """None when a TCP connection to the hub (or the proxy) opens within `timeout` seconds, else why not."""
    host, port = _probe_target()
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as exc:
        return f"cannot reach {host}:{port} ({exc.strerror or type(exc).__name__})"
    return None


@contextlib.contextmanager
def offline_mode() -> Iterator[None]:
    """Hub clients in offline mode (cached files only, no request, no retry). huggingface_hub and datasets read
    HF_HUB_OFFLINE once, at import: their module flags are switched too, and restored after."""
    os.environ["HF_HUB_OFFLINE"], before = "1", os.environ.get("HF_HUB_OFFLINE")
    imported = [sys.modules.get(name) for name in ("huggingface_hub.constants", "datasets.config")]
    switched = [(module, module.HF_HUB_OFFLINE) for module in imported if hasattr(module, "HF_HUB_OFFLINE")]
    for module, _ in switched:
        module.HF_HUB_OFFLINE = True
    try:
        yield
    finally:
        for module, value in switched:
            module.HF_HUB_OFFLINE = value
        if before is None:
            os.environ.pop("HF_HUB_OFFLINE", None)
        else:
            os.environ["HF_HUB_OFFLINE"] = before
