"""Token accounting and cost: usage reported, a request's estimated cost before sending, and the --max-cost
budget across reruns of one output. Prices: prices.py (the dated table, or --prices FILE) or --price IN:OUT."""

from __future__ import annotations

import math
from dataclasses import dataclass

from .prices import BATCH_DISCOUNT, PRICES_DATE, table

CHARS_PER_TOKEN = 4  # OpenAI's and Anthropic's documented rule of thumb for English text


def openai_image_tokens(width: int, height: int, detail: str = "high") -> int:
    """GPT-4o's documented image cost: `low` 85 tokens; `high`/`auto`: fit in 2048x2048, scale the shorter side
    down to 768, then 85 + 170 per 512-px tile."""
    if detail == "low":
        return 85
    w, h = float(width), float(height)
    if max(w, h) > 2048:
        w, h = w * 2048 / max(w, h), h * 2048 / max(w, h)
    if min(w, h) > 768:
        w, h = w * 768 / min(w, h), h * 768 / min(w, h)
    return 85 + 170 * math.ceil(w / 512) * math.ceil(h / 512)


def anthropic_image_tokens(width: int, height: int) -> int:
    """Claude's documented estimate, tokens = width x height / 750, after its resize to at most 1568 px on the
    long edge and about 1.15 megapixels."""
    w, h = float(width), float(height)
    scale = min(1.0, 1568 / max(w, h), math.sqrt(1_150_000 / (w * h)))
    return math.ceil((w * scale) * (h * scale) / 750)


def text_tokens(messages: list[dict]) -> int:
    """Estimated tokens of every text part of `messages` (OpenAI-shaped), at CHARS_PER_TOKEN."""
    chars = 0
    for m in messages:
        content = m["content"]
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else content
        chars += sum(len(p.get("text", "")) for p in parts if p.get("type") == "text")
    return math.ceil(chars / CHARS_PER_TOKEN)


def price_for(model: str, text: str | None = None, prices: str | None = None) -> tuple[float, float] | None:
    """USD per million (input, output) tokens: --price IN:OUT (one number: both), else the dated table's (the
    shipped one, or --prices FILE over it)."""
    if not text:
        return table(prices).models.get(model)
    a, _, b = text.partition(":")
    return float(a), float(b or a)


@dataclass
class CostMeter:
    """Tokens and cost of this process's requests. The --max-cost budget counts `spent_before` (what the journal
    of this output says earlier runs spent) and `reserved` (the estimated cost of requests in flight), so that a
    request is launched only when its estimated cost still fits."""

    price: tuple[float, float] | None
    max_cost: float | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    requests: int = 0
    stopped: bool = False
    spent_before: float = 0.0
    reserved: float = 0.0
    estimated_input_tokens: int = 0  # of the requests sent, before sending
    estimated_output_cap: int = 0
    spent_now: float = 0.0  # this process's responses' `cost_usd` (a batch request's carries the batch discount)
    discount: float = 1.0  # of the estimate before sending: BATCH_DISCOUNT under --batch
    prices_date: str = PRICES_DATE  # of the table the price came from (--prices FILE: its date and name)

    def cost_of(self, usage: dict) -> float | None:
        if self.price is None:
            return None
        return (usage.get("input_tokens", 0) * self.price[0] + usage.get("output_tokens", 0) * self.price[1]) / 1e6

    def add(self, usage: dict) -> None:
        self.input_tokens += int(usage.get("input_tokens", 0) or 0)
        self.output_tokens += int(usage.get("output_tokens", 0) or 0)
        cost = usage["cost_usd"] if usage.get("cost_usd") is not None else self.cost_of(usage)
        self.spent_now += float(cost or 0.0)

    @property
    def cost(self) -> float | None:
        return None if self.price is None else self.spent_now

    @property
    def spent(self) -> float:
        """Spent on this output: earlier runs (journal) and this one."""
        return self.spent_before + (self.cost or 0.0)

    @property
    def left(self) -> float | None:
        return None if self.max_cost is None else self.max_cost - self.spent - self.reserved

    def count_journaled(self, records) -> None:
        """Add what the journaled responses of earlier runs on this output cost (their `usage.cost_usd`)."""
        self.spent_before = sum(float((r.get("response", {}).get("usage") or {}).get("cost_usd") or 0.0)
                                for r in records)

    def fits(self, estimate: float | None) -> bool:
        if self.max_cost is None or self.price is None:
            return True
        return self.spent + self.reserved + (estimate or 0.0) <= self.max_cost

    def exhausted(self) -> bool:
        return self.max_cost is not None and self.spent >= self.max_cost

    def describe(self) -> dict:
        est = self.cost_of({"input_tokens": self.estimated_input_tokens, "output_tokens": self.estimated_output_cap})
        est = None if est is None else est * self.discount
        return {"requests": self.requests, "input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
                "estimated_cost_usd": None if self.cost is None else round(self.cost, 6),
                "estimate_before_sending": {"input_tokens": self.estimated_input_tokens,
                                            "output_tokens_cap": self.estimated_output_cap,
                                            "cost_usd_at_most": None if est is None else round(est, 6)},
                "price_usd_per_mtok": None if self.price is None else {"input": self.price[0], "output": self.price[1]},
                "prices_date": self.prices_date, "max_cost_usd": self.max_cost,
                "spent_before_this_run_usd": round(self.spent_before, 6), "stopped_by_max_cost": self.stopped}


def batch_cost(cost: float | None) -> float | None:
    return None if cost is None else cost * BATCH_DISCOUNT
