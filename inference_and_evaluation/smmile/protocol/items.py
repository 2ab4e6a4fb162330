"""Planning: one Item per problem, with everything drawn from the seeded random streams. The original scripts
consume one global stream in problem order (MCQA shuffles, baseline choices, LLaVA-Med padding offsets); planning
every problem first makes resumed and sharded runs draw exactly what an uninterrupted run draws."""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field

import numpy as np

from .problem import Problem

SEED = 42


@dataclass
class Rngs:
    """The original's seeded streams: CPython `random` and numpy's legacy global RandomState."""

    py: random.Random = field(default_factory=lambda: random.Random(SEED))
    np: np.random.RandomState = field(default_factory=lambda: np.random.RandomState(SEED))


@dataclass
class Item:
    index: int  # position in the full dataset order
    problem: Problem
    mode: str  # "0-shot" | "ICL"
    fmt: str  # "open" | "mcqa"
    target: str = ""  # text of the query turn: raw question or MCQA prompt
    options: dict[str, str] | None = None  # display-ordered letter -> answer (MCQA)
    correct: str | None = None  # correct letter (MCQA)
    extra: dict = field(default_factory=dict)  # family-specific planned values

    @property
    def problem_id(self) -> str:
        return self.problem.problem_id

    def fingerprint(self) -> str:
        """Everything about the input that can change the answer."""
        h = hashlib.sha256()
        for r in self.problem.rows:
            h.update(repr((r.question, r.answer)).encode())
            h.update(r.image.digest if r.image else b"-")
        h.update(repr((self.mode, self.fmt, self.target, self.options, self.correct, sorted(self.extra.items()))).encode())
        return h.hexdigest()[:20]
