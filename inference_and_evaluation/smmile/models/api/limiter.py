"""How many requests are in flight: a fixed number (`--concurrency N`) or adaptive (`--concurrency auto`).

Adaptive: start at START, add one per round trip while requests succeed; on 429/503/529 cut by DECREASE (once per
round trip) and remember the ceiling, then climb one per round trip below it, one per PROBE at it. A Retry-After of
LONG_WAIT seconds or more, or a rate-limit header at 0 (REMAINING), pauses every launch until the reset.
"""

from __future__ import annotations

import asyncio
import re
import time
from datetime import datetime

START = 4
MAXIMUM = 64
DECREASE = 0.75
PROBE = 4
LONG_WAIT = 5.0  # seconds: a Retry-After this long pauses every launch, and the progress line says so
THROTTLED = frozenset({429, 503, 529})

REMAINING = (("x-ratelimit-remaining-requests", "x-ratelimit-reset-requests"),
             ("x-ratelimit-remaining-tokens", "x-ratelimit-reset-tokens"),
             ("anthropic-ratelimit-requests-remaining", "anthropic-ratelimit-requests-reset"),
             ("anthropic-ratelimit-tokens-remaining", "anthropic-ratelimit-tokens-reset"),
             ("anthropic-ratelimit-input-tokens-remaining", "anthropic-ratelimit-input-tokens-reset"),
             ("anthropic-ratelimit-output-tokens-remaining", "anthropic-ratelimit-output-tokens-reset"))


def parse_reset(value: str | None) -> float | None:
    """Seconds until a rate-limit reset: OpenAI's durations (`1s`, `6m0s`, `250ms`) or Anthropic's RFC 3339 time."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() - time.time())
    except ValueError:
        pass
    if not re.fullmatch(r"(?:[\d.]+(?:ms|[smh]))*[\d.]*", value):
        return None
    units = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "": 1.0}  # a bare number: seconds
    return sum((float(n) * units[u] for n, u in re.findall(r"([\d.]+)(ms|[smh]|$)", value)), 0.0)


def exhausted_for(headers) -> float | None:
    """Seconds to wait when a rate-limit header says nothing is left, else None."""
    if headers is None:
        return None
    waits = []
    for remaining, reset in REMAINING:
        left = headers.get(remaining)
        try:
            if left is not None and float(left) <= 0:
                waits.append(parse_reset(headers.get(reset)) or 1.0)
        except ValueError:
            continue
    return max(waits) if waits else None


class Limiter:
    def __init__(self, fixed: int | None = None, start: int = START, maximum: int = MAXIMUM, note=None):
        self.fixed = fixed
        self.level = float(fixed or start)
        self.maximum = fixed or maximum
        self.ceiling: float | None = None
        self.in_flight = 0
        self.epoch = 0  # bumped at each cut
        self.paused_until = 0.0
        self.pause_reason = ""
        self.note = note or (lambda text: None)
        self._cond: asyncio.Condition | None = None

    @property
    def cond(self) -> asyncio.Condition:
        if self._cond is None:
            self._cond = asyncio.Condition()
        return self._cond

    def describe(self) -> str:
        text = f"concurrency {self.in_flight}/{int(self.level)}" + (" (auto)" if self.fixed is None else "")
        wait = self.paused_until - time.monotonic()
        if wait > 0:
            text += f", waiting {wait:.0f}s ({self.pause_reason})"
        return text

    async def acquire(self) -> int:
        async with self.cond:
            while True:
                wait = self.paused_until - time.monotonic()
                if wait <= 0 and self.in_flight < int(self.level):
                    break
                try:
                    await asyncio.wait_for(self.cond.wait(), wait if wait > 0 else None)
                except asyncio.TimeoutError:
                    pass
            self.in_flight += 1
            return self.epoch

    async def release(self, epoch: int, status: int | None = None, retry_after: float | None = None,
                      headers=None) -> None:
        """After an attempt: `status` None for a success, else the HTTP status of the failure (if any)."""
        async with self.cond:
            self.in_flight -= 1
            if self.fixed is None:
                if status is None:
                    near = self.ceiling is not None and self.level >= self.ceiling - 1
                    self.level = min(self.maximum, self.level + 1 / (self.level * (PROBE if near else 1)))
                elif status in THROTTLED and epoch == self.epoch:
                    self.ceiling = self.level
                    self.level = max(1.0, self.level * DECREASE)
                    self.epoch += 1
            wait, why = exhausted_for(headers), "rate-limit headers: nothing left until the reset"
            if status in THROTTLED and retry_after is not None and retry_after >= LONG_WAIT:
                wait, why = retry_after, f"the server asked for Retry-After {retry_after:g}s"
            if wait and time.monotonic() + wait > self.paused_until:
                self.paused_until, self.pause_reason = time.monotonic() + wait, why
                self.note(f"rate limited: waiting {wait:.0f}s before the next request ({why}); "
                          f"concurrency {int(self.level)}")
            self.cond.notify_all()
