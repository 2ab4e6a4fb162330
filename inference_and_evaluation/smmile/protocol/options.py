"""MCQA options, exactly as the original scripts built them (spec §2.1, §2.2)."""

from __future__ import annotations

import random
import string

from .problem import Problem

LETTERS = string.ascii_uppercase


def unique_answers(problem: Problem) -> list[str]:
    """Every answer of the chunk (query included), de-duplicated by exact string, first occurrence kept."""
    return list(dict.fromkeys(problem.answers()))


def shuffled_options(problem: Problem, rng: random.Random) -> tuple[dict[str, str], str]:
    """Spec §2.1: letters assigned in chunk order, the display order shuffled by one `rng.shuffle` (`rng`: the
    `random.Random(42)` consumed once per problem in problem order reproduces the published option orders)."""
    answers = unique_answers(problem)
    by_letter = {LETTERS[i]: a for i, a in enumerate(answers)}
    letters = list(by_letter)
    rng.shuffle(letters)
    options = {letter: by_letter[letter] for letter in letters}
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
