"""Retry policy shared by every API backend: exponential backoff with jitter, honouring Retry-After."""

from __future__ import annotations

import random
from dataclasses import dataclass

TRANSIENT_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 529})


@dataclass
class Failure:
    message: str
    transient: bool
    retry_after: float | None = None
    status: int | None = None
    no_content: bool = False  # a reply without content (the original took it as an empty answer)


@dataclass
class RetryPolicy:
    max_retries: int = 5
    base: float = 0.5  # seconds before the first retry
    cap: float = 30.0  # longest backoff
    max_retry_after: float = 120.0  # longest server-requested wait we honour

    def __post_init__(self):
        self._rng = random.Random()  # private: never touches the seeded streams

    def should_retry(self, failure: Failure, attempt: int) -> bool:
        return failure.transient and attempt < self.max_retries

    def delay(self, failure: Failure, attempt: int) -> float:
        """Retry-After when the server sent one, else full-jitter exponential backoff."""
        if failure.retry_after is not None:
            return min(max(failure.retry_after, 0.0), self.max_retry_after) * (1 + 0.1 * self._rng.random())
        return self._rng.uniform(0.5, 1.0) * min(self.cap, self.base * 2 ** attempt)


def parse_retry_after(headers) -> float | None:
    """Seconds from `retry-after-ms` / `Retry-After` (seconds or an HTTP date), if present."""
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return float(ms) / 1000
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        from email.utils import parsedate_to_datetime
        import time

        try:
            return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
        except (TypeError, ValueError):
            return None


def status_failure(message: str, status: int, headers=None) -> Failure:
    return Failure(message, status in TRANSIENT_STATUS, parse_retry_after(headers), status)
