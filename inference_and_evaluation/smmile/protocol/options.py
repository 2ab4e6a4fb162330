"""MCQA options, exactly as the original scripts built them (spec §2.1, §2.2), or as a dataset variant recorded them
(``mcqa_options`` on the query row: the options of the unmodified problem, so that a variant keeps the task)."""

from __future__ import annotations

import json
import random
import string

from ..errors import UserError
from .problem import Problem

LETTERS = string.ascii_uppercase
RECORDED = "mcqa_options"  # query-row column: JSON [[letter, answer], ...] in display order


def fixed_options(problem: Problem, seed: int) -> str:
    """The ``RECORDED`` cell for ``problem`` (unmodified): its options as the original builds them (§2.1), the
    display order shuffled by a stream seeded by the problem id alone (no shared stream)."""
    options, _ = shuffled_options(problem, random.Random(f"{seed}:mcqa:{problem.problem_id}"))
    return json.dumps(list(options.items()), ensure_ascii=False)


def recorded_options(problem: Problem) -> dict[str, str] | None:
    """The options a variant recorded for ``problem`` (display order), or None."""
    cell = problem.query.fields.get(RECORDED)
    try:
        return {str(letter): str(answer) for letter, answer in json.loads(cell)} if cell else None
    except (TypeError, ValueError):
        raise UserError(f"problem {problem.problem_id}: the {RECORDED} cell is not [[letter, answer], ...]; write "
                        "the variant again") from None


def unique_answers(problem: Problem) -> list[str]:
    """Every answer of the chunk (query included), de-duplicated by exact string, first occurrence kept; for a
    variant with recorded options, those (letter order)."""
    recorded = recorded_options(problem)
    if recorded:
        return [recorded[letter] for letter in sorted(recorded)]
    return list(dict.fromkeys(problem.answers()))


def shuffled_options(problem: Problem, rng: random.Random) -> tuple[dict[str, str], str]:
    """Spec §2.1: letters assigned in chunk order, the display order shuffled by one `rng.shuffle` (`rng`: the
    `random.Random(42)` consumed once per problem in problem order reproduces the published option orders)."""
    answers = unique_answers(problem)
    by_letter = {LETTERS[i]: a for i, a in enumerate(answers)}
    letters = list(by_letter)
    rng.shuffle(letters)  # drawn with recorded options too: the stream advances as for the unmodified problem
    options = recorded_options(problem) or {letter: by_letter[letter] for letter in letters}
    correct = next(letter for letter, a in by_letter.items() if a == problem.query.answer)
    return options, correct


def options_text(options: dict[str, str]) -> str:
    return "\n".join(f"{letter}. {answer}" for letter, answer in options.items())


def medr1_options(problem: Problem) -> list[str]:
    """Spec §2.2: `'{letter}) {answer}'` in letter order, no shuffle."""
    return [f"{LETTERS[i]}) {a}" for i, a in enumerate(unique_answers(problem))]


def medr1_letter(option_lines: list[str], answer: str) -> str:
    """Letter of the first option line containing `answer` as a substring (KEEP: not equality)."""
    return next((line[0] for line in option_lines if answer in line), "")
