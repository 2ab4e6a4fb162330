"""How many requests are in flight: a fixed number (`--concurrency N`) or adaptive (`--concurrency auto`).

Adaptive: start at START and double per round trip (one more per success: slow start) until the first 429/503/529.
A launch beyond the most requests the server has been seen to hold at once (`confirmed`: a request launched k-th in
flight that succeeded) waits PACE after the previous such launch, so that a 429, which comes back at once, stops the
climb before a burst of them. The first throttle sets the level to the requests in flight (at most one less) and
ends slow start; each older request answered 429 after it takes one more off. Then additive increase / one cut per
round trip: one more per round trip below the last level throttled, one per PROBE round trips at it (twice as many
after each failed probe). A Retry-After of LONG_WAIT seconds or more, or a rate-limit header at 0 (REMAINING:
OpenAI's x-ratelimit-remaining-*, Anthropic's anthropic-ratelimit-*), pauses every launch until the reset."""

from __future__ import annotations

import asyncio
import logging
import re
import time
from datetime import datetime

log = logging.getLogger(__name__)

START = 16
MAXIMUM = 64
PACE = 0.05  # seconds between launches beyond what the server was seen to hold
PROBE = 32  # round trips per step at the level last throttled
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
    def __init__(self, fixed: int | None = None, start: int = START, maximum: int = MAXIMUM):
        self.fixed = fixed
        self.level = float(fixed or start)
        self.maximum = fixed or maximum
        self.ceiling: float | None = None
        self.slow_start = fixed is None
        self.probe = PROBE
        self.confirmed = 0  # the most requests in flight at once the server was seen to accept
        self.next_beyond = 0.0  # when the next launch beyond `confirmed` may go
        self.in_flight = 0
        self.epoch = 0  # bumped at each cut
        self.paused_until = 0.0
        self.pause_reason = ""
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

    async def acquire(self) -> tuple[int, int]:
        """A slot: (epoch, place in flight), handed back to `release`."""
        async with self.cond:
            while True:
                now = time.monotonic()
                wait = self.paused_until - now
                if wait <= 0 and self.in_flight < int(self.level):
                    if self.fixed is not None or self.in_flight < self.confirmed or now >= self.next_beyond:
                        break
                    wait = self.next_beyond - now
                try:
                    await asyncio.wait_for(self.cond.wait(), wait if wait > 0 else None)
                except asyncio.TimeoutError:
                    pass
            self.in_flight += 1
            if self.in_flight > self.confirmed:
                self.next_beyond = time.monotonic() + PACE
            return self.epoch, self.in_flight

    async def release(self, ticket: tuple[int, int], status: int | None = None, retry_after: float | None = None,
                      headers=None) -> None:
        """After an attempt: `status` None for a success, else the HTTP status of the failure (if any)."""
        epoch, place = ticket
        async with self.cond:
            self.in_flight -= 1
            if status is None:
                self.confirmed = max(self.confirmed, place)
            if self.fixed is None:
                self.adapt(epoch, status)
            wait, why = exhausted_for(headers), "rate-limit headers: nothing left until the reset"
            if status in THROTTLED and retry_after is not None and retry_after >= LONG_WAIT:
                wait, why = retry_after, f"the server asked for Retry-After {retry_after:g}s"
            if wait and time.monotonic() + wait > self.paused_until:
                self.paused_until, self.pause_reason = time.monotonic() + wait, why
                log.warning(f"rate limited: waiting {wait:.0f}s before the next request ({why}); "
                            f"concurrency {int(self.level)}")
            self.cond.notify_all()

    def adapt(self, epoch: int, status: int | None) -> None:
        near = self.ceiling is not None and self.level >= self.ceiling - 1
        if status is None:
            step = 1.0 if self.slow_start else 1 / (self.level * (self.probe if near else 1))
            self.level = min(self.maximum, self.level + step)
        elif status in THROTTLED and epoch == self.epoch:  # the first throttle of this round trip
            if near:  # a probe above the known limit failed: the next waits twice as long
                self.probe = min(self.probe * 2, 8 * PROBE)
            self.slow_start = False
            self.ceiling = self.level
            self.level = max(1.0, min(self.level - 1, float(max(self.in_flight, self.confirmed))))
            self.epoch += 1
        elif status in THROTTLED:  # launched before that cut: the server holds fewer still
            self.level = max(1.0, self.level - 1)
