"""Random and majority baselines (spec §3.11): no model, choices drawn from the ICL answers."""

from __future__ import annotations

from collections import Counter

from ..protocol.items import Item, Rngs
from ..protocol.options import LETTERS, unique_answers
from .base import Backend, Family, Response


def _majority(values: list[str]) -> str:
    """Most frequent value; ties go to the one seen first (Counter keeps insertion order)."""
    return Counter(values).most_common(1)[0][0]


class BaselineFamily(Family):
    output_key = "baselines"

    def __init__(self, kind: str):
        self.kind = kind  # "random" | "majority"
        self.name = f"baseline-{kind}"

    def plan(self, item: Item, rngs: Rngs) -> None:
        super().plan(item, rngs)  # one shuffle per problem in MCQA, as the original
        icl = [r.answer for r in item.problem.examples]
        if item.fmt == "mcqa":
            assert item.options is not None
            if self.kind == "random":
                choice = str(rngs.np.choice(list(item.options)))  # display order, numpy legacy stream
            else:
                letter_of = {a: LETTERS[i] for i, a in enumerate(unique_answers(item.problem))}
                letters = [letter_of[a] for a in icl if a in letter_of]  # a variant's answers may not be options
                choice = _majority(letters) if letters else next(iter(item.options))
        else:
            choice = str(rngs.np.choice(icl)) if self.kind == "random" else _majority(icl)
        item.extra["choice"] = choice

    def request(self, item: Item) -> str:
        return item.extra["choice"]


class BaselineBackend(Backend):
    """Returns the planned choice: the baseline's 'generation' is done while planning."""

    name = "baseline"

    def generate(self, work, on_done) -> None:
        for item, choice in work:
            on_done(item, Response(text=choice))
