"""What a model family and a backend must provide to the runner."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from ..protocol.items import Item, Rngs
from ..protocol.options import options_text, shuffled_options
from ..protocol.templates import MCQA_TEMPLATES, mcqa_prompt

OPEN_COLUMNS = ["problem_id", "final_question", "true_answer", "generated_answer", "full_response"]
MCQA_COLUMNS = ["problem_id", "final_question", "true_answer", "correct_option", "selected_option",
                "is_correct", "generated_answer", "full_response"]


@dataclass
class Response:
    """What a backend returns for one item. `error` set means the problem failed (never an answer)."""

    text: str = ""  # generated text (new tokens / API reply)
    full_text: str | None = None  # whole decoded sequence, prompt included (HF families that stored it)
    error: str | None = None  # faithful error text, e.g. "CUDA OOM", "Generation failed - ..."
    usage: dict = field(default_factory=dict)  # input_tokens, output_tokens
    seconds: float = 0.0
    extra: dict = field(default_factory=dict)


OnDone = Callable[[Item, Response], None]


class Backend:
    """Runs requests. `generate` must call `on_done` once per item, as each completes."""

    name = "backend"

    def __init__(self, preset=None, spec=None):
        self.preset, self.spec = preset, spec

    def generate(self, work: list[tuple[Item, Any]], on_done: OnDone) -> None:
        raise NotImplementedError

    def describe(self) -> dict:
        """Settings recorded in the manifest (never secrets)."""
        return {"backend": self.name}

    def close(self) -> None:
        pass


class Family:
    """How one original script prompts its model and writes its CSV rows."""

    name = "family"
    mcqa_template = "A"  # key of MCQA_TEMPLATES
    open_columns = OPEN_COLUMNS
    mcqa_columns = MCQA_COLUMNS

    def plan(self, item: Item, rngs: Rngs) -> None:
        """Fill options/correct/target in problem order (draws from the seeded streams)."""
        if item.fmt == "mcqa":
            item.options, item.correct = shuffled_options(item.problem, rngs.py)
            item.target = mcqa_prompt(MCQA_TEMPLATES[self.mcqa_template], item.problem.query.question,
                                      options_text(item.options))
        else:
            item.target = item.problem.query.question

    def request(self, item: Item) -> Any:
        """The backend-specific payload for this item."""
        raise NotImplementedError

    def row(self, item: Item, response: Response) -> dict:
        raise NotImplementedError

    def error_row(self, item: Item, response: Response) -> dict:
        return error_row(item, response.error or "ERROR", self.columns(item.fmt))

    def columns(self, fmt: str) -> list[str]:
        return self.mcqa_columns if fmt == "mcqa" else self.open_columns

    def select(self, item: Item, row: dict) -> dict:
        """The script's CSV columns, in its order (a missing one is a bug: KeyError)."""
        return {c: row[c] for c in self.columns(item.fmt)}


def base_row(item: Item) -> dict:
    q = item.problem.query
    return {"problem_id": item.problem.rows[0].problem_id, "final_question": q.question, "true_answer": q.answer}


def mcqa_fields(item: Item, selected: str) -> dict:
    """Spec §2.6 bookkeeping for an extracted letter."""
    assert item.options is not None
    answer = item.options.get(selected)
    return {"correct_option": item.correct, "selected_option": selected, "is_correct": selected == item.correct,
            "generated_answer": answer if answer is not None else f"INVALID_OPTION:{selected}"}


def error_row(item: Item, message: str, fmt_columns: Iterable[str]) -> dict:
    """The original's row for a failed problem: the error text in the answer columns, `ERROR` as letter."""
    row = base_row(item)
    if item.fmt == "mcqa":
        row.update(correct_option=item.correct, selected_option="ERROR", is_correct=False)
    for col in ("generated_answer", "full_response"):
        row[col] = message
    return {c: row.get(c) for c in fmt_columns}
