"""Deterministic dataset variants derived from any SMMILE-schema dataset."""

from __future__ import annotations

import itertools
import random

from ..protocol.problem import Problem, Row

MAX_ORDERS = 24


def _orders(n: int, rng: random.Random) -> list[tuple[int, ...]]:
    """All orders of n examples when n <= 4, else MAX_ORDERS distinct seeded ones (SMMILE++)."""
    if n <= 4:
        return list(itertools.permutations(range(n)))
    seen: dict[tuple[int, ...], None] = {}
    while len(seen) < MAX_ORDERS:
        perm = list(range(n))
        rng.shuffle(perm)
        seen.setdefault(tuple(perm), None)
    return list(seen)


def permute(problems: list[Problem], seed: int = 42) -> list[Problem]:
    """SMMILE++-style: one problem `<id>_perm_<k>` (k from 1) per order of each problem's ICL examples."""
    rng = random.Random(seed)
    out = []
    for p in problems:
        for k, perm in enumerate(_orders(len(p.examples), rng), start=1):
            pid = f"{p.problem_id}_perm_{k}"
            rows = [p.examples[j] for j in perm] + [p.query]
            out.append(Problem(pid, tuple(_renumber(r, pid, i) for i, r in enumerate(rows))))
    return out


def _renumber(row: Row, pid: str, order: int) -> Row:
    return Row(pid, order, row.question, row.answer, row.image, row.image_url, row.fields)
