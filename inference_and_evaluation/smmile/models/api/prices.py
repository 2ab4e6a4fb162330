"""List prices of the API models: the dated table shipped with the package (prices.json: USD per million input and
output tokens as published on its `date`), or a table of the same shape given by `--prices FILE` (its models
replace or add to the shipped ones; its date is the one reported), or one price for the run (`--price IN:OUT`)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from ...errors import UserError

SHIPPED = Path(__file__).with_name("prices.json")


@dataclass(frozen=True)
class PriceTable:
    date: str
    models: dict = field(default_factory=dict)  # model id -> (input, output)
    batch_discount: float = 0.5  # batch price = batch_discount x synchronous price (OpenAI and Anthropic alike)
    source: str = "shipped"


def _read(path: Path, what: str) -> dict:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UserError(f"cannot read the price table {what}: {exc}") from None
    models = data.get("models") if isinstance(data, dict) else None
    if not isinstance(models, dict) or not isinstance(data.get("date"), str):
        raise UserError(f"the price table {what} needs a \"date\" and a \"models\" map of model -> [input, output] "
                        "(USD per million tokens)")
    for model, pair in models.items():
        if not (isinstance(pair, list) and len(pair) == 2 and all(
                isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0 for v in pair)):
            raise UserError(f"the price table {what}: {model!r} is not [input, output], two prices of at least 0")
    return data


@lru_cache(maxsize=8)
def table(path: str | None = None) -> PriceTable:
    """The shipped table, with the models of `path` (a --prices FILE) over it."""
    shipped = _read(SHIPPED, "shipped with smmile")
    models = {m: tuple(p) for m, p in shipped["models"].items()}
    if path is None:
        return PriceTable(shipped["date"], models, float(shipped.get("batch_discount", 0.5)))
    given = _read(Path(path), str(path))
    models.update({m: tuple(p) for m, p in given["models"].items()})
    return PriceTable(given["date"], models, float(shipped.get("batch_discount", 0.5)), str(path))


PRICES_DATE = table().date
BATCH_DISCOUNT = table().batch_discount
PRICES = table().models
