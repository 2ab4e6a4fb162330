"""List prices of the API models, USD per million tokens, as published on PRICES_DATE (edit, or `--price IN:OUT`).
Sources: https://openai.com/api/pricing/ and https://docs.anthropic.com/en/docs/about-claude/pricing"""

from __future__ import annotations

PRICES_DATE = "2025-06-01"
BATCH_DISCOUNT = 0.5  # batch price = BATCH_DISCOUNT x synchronous price (OpenAI and Anthropic alike)

# model id -> (input, output) USD per 1M tokens
PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-2024-11-20": (2.50, 10.00),
    "gpt-4o-2024-08-06": (2.50, 10.00),
    "gpt-4o-2024-05-13": (5.00, 15.00),
    "gpt-4o-mini": (0.15, 0.60),
    "claude-3-7-sonnet-20250219": (3.00, 15.00),
    "claude-sonnet-4-20250514": (3.00, 15.00),
    "claude-3-5-haiku-20241022": (0.80, 4.00),
    "llama3.3": (0.0, 0.0),  # local ollama
}
