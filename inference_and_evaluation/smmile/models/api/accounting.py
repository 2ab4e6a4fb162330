"""Token accounting and estimated cost. Edit PRICES (USD per million tokens) or pass --price IN:OUT."""

from __future__ import annotations

from dataclasses import dataclass, field

# model id -> (input, output) USD per 1M tokens; list prices when this table was written (edit freely)
PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-2024-08-06": (2.50, 10.00),
    "gpt-4o-2024-05-13": (5.00, 15.00),
    "claude-3-7-sonnet-20250219": (3.00, 15.00),
    "llama3.3": (0.0, 0.0),  # local ollama
}


def price_for(model: str, override: tuple[float, float] | None = None) -> tuple[float, float] | None:
    return override if override is not None else PRICES.get(model)


def parse_price(text: str | None) -> tuple[float, float] | None:
    if not text:
        return None
    a, _, b = text.partition(":")
    return float(a), float(b or a)


@dataclass
class CostMeter:
    price: tuple[float, float] | None
    max_cost: float | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    requests: int = 0
    stopped: bool = field(default=False)

    def cost_of(self, usage: dict) -> float | None:
        if self.price is None:
            return None
        return (usage.get("input_tokens", 0) * self.price[0] + usage.get("output_tokens", 0) * self.price[1]) / 1e6

    def add(self, usage: dict) -> None:
        self.input_tokens += int(usage.get("input_tokens", 0) or 0)
        self.output_tokens += int(usage.get("output_tokens", 0) or 0)

    @property
    def cost(self) -> float | None:
        return self.cost_of({"input_tokens": self.input_tokens, "output_tokens": self.output_tokens})

    def exhausted(self) -> bool:
        return self.max_cost is not None and (self.cost or 0.0) >= self.max_cost

    def describe(self) -> dict:
        return {"requests": self.requests, "input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
                "estimated_cost_usd": None if self.cost is None else round(self.cost, 6),
                "price_usd_per_mtok": None if self.price is None else {"input": self.price[0], "output": self.price[1]},
                "max_cost_usd": self.max_cost, "stopped_by_max_cost": self.stopped}
