"""Label conditions of the ICL diagnostics (docs/analyses.md §5; Min et al. 2022, Wei et al. 2023): what each chosen
example shows as its answer. A ``fraction`` of each problem's examples (seeded per problem id) is changed:

* ``flip-answers``: a consistent flip of the problem's own answers: yes ↔ no for a binary problem, else a
  derangement of the distinct answers of its examples (each answer, case and punctuation ignored, maps to another);
* ``random-labels``: an answer drawn from the label space of the same answer format (every answer of the other
  problems of that format);
* ``unrelated-labels``: a consistent mapping of the problem's distinct answers to answers of problems of another
  speciality (semantically unrelated labels);
* ``no-answers``: the example is shown without an answer (an empty answer turn).

A drawn answer never equals the query's gold answer; an example that could not be changed keeps its answer and is
counted (``not_changed``). Each note says whether the gold answer is among the examples before and after."""

from __future__ import annotations

import math
import random
import re
from dataclasses import replace

from ..protocol.problem import Problem
from .schema import FORMAT_COLUMN, SPECIALITY_COLUMN, base_id

LABEL_VARIANTS = ("flip-answers", "random-labels", "unrelated-labels", "no-answers")
BINARY = {"yes": "no", "no": "yes"}
_PUNCT = re.compile(r"[\W_]+")


def normalise(answer: str) -> str:
    """An answer compared case- and punctuation-insensitively ("Red." == "red")."""
    return _PUNCT.sub(" ", str(answer)).strip().casefold()


def _field(problem: Problem, column: str):
    return problem.query.fields.get(column)


def gold_among(problem: Problem) -> bool:
    gold = normalise(problem.query.answer)
    return any(normalise(r.answer) == gold for r in problem.examples)


def _binary_flip(answer: str) -> str | None:
    other = BINARY.get(normalise(answer))
    if other is None:
        return None
    return other.capitalize() if answer.strip()[:1].isupper() else other


def _derangement(values: list[str], rng: random.Random) -> dict[str, str]:
    """Each of ``values`` (distinct) to another one: a seeded shuffle closed into one cycle (no fixed point)."""
    order = list(values)
    rng.shuffle(order)
    return {a: order[(i + 1) % len(order)] for i, a in enumerate(order)} if len(order) > 1 else {}


def _mapping(kind: str, problem: Problem, pool: list[str], rng: random.Random) -> dict[str, str]:
    """Consistent maps (normalised answer -> shown answer) of ``flip-answers`` and ``unrelated-labels``."""
    firsts = {normalise(r.answer): r.answer for r in problem.examples}
    gold = normalise(problem.query.answer)
    if kind == "flip-answers":
        if _field(problem, FORMAT_COLUMN) == "binary(yes/no)" or all(normalise(a) in BINARY for a in firsts.values()):
            return {n: f for n, a in firsts.items() if (f := _binary_flip(a)) is not None}
        return {n: firsts[m] for n, m in _derangement(sorted(firsts), rng).items()}
    choices = sorted({a for a in pool if normalise(a) != gold and normalise(a) not in firsts}, key=normalise)
    rng.shuffle(choices)
    return dict(zip(sorted(firsts), choices))  # too few unrelated answers: the rest stay as they were, counted


def _one(kind: str, problem: Problem, pool: list[str], fraction: float, seed: int) -> tuple[Problem, dict]:
    rng = random.Random(f"{seed}:{kind}:{problem.problem_id}")
    n = len(problem.examples)
    chosen = sorted(rng.sample(range(n), min(n, math.floor(fraction * n + 0.5))))
    mapping = _mapping(kind, problem, pool, rng) if kind in ("flip-answers", "unrelated-labels") else {}
    gold = normalise(problem.query.answer)
    rows, changes = list(problem.examples), []
    for i in chosen:
        original = rows[i].answer
        if kind == "no-answers":
            new = ""
        elif kind == "random-labels":
            space = [a for a in pool if normalise(a) != gold]
            new = rng.choice(space) if space else original
        else:
            new = mapping.get(normalise(original), original)
        rows[i] = replace(rows[i], answer=new)
        changes.append({"index": i, "original": original, "answer": new, "changed": new != original})
    out = Problem(problem.problem_id, tuple(rows) + (problem.query,))
    changed = sum(c["changed"] for c in changes)
    return out, {"problem_id": problem.problem_id, "n_examples": n, "answer_format": _field(problem, FORMAT_COLUMN),
                 "chosen": len(chosen), "changed": changed, "not_changed": len(chosen) - changed,
                 "gold_among_examples_before": gold_among(problem), "gold_among_examples": gold_among(out),
                 "examples": changes}


def _pool(kind: str, problem: Problem, problems: list[Problem]) -> list[str]:
    """The answers a problem may draw from (dataset order): the other problems' of its format (random labels) or of
    another speciality (unrelated labels); none for the flips of its own answers."""
    if kind not in ("random-labels", "unrelated-labels"):
        return []
    own = base_id(problem.problem_id)
    if kind == "random-labels":
        same = [p for p in problems if _field(p, FORMAT_COLUMN) == _field(problem, FORMAT_COLUMN)]
    else:
        same = [p for p in problems if _field(p, SPECIALITY_COLUMN) != _field(problem, SPECIALITY_COLUMN)]
    return list(dict.fromkeys(r.answer for p in same if base_id(p.problem_id) != own for r in p.rows))


def relabel(kind: str, problems: list[Problem], seed: int, fraction: float = 1.0) -> tuple[list[Problem], list[dict]]:
    pairs = [_one(kind, p, _pool(kind, p, problems), fraction, seed) for p in problems]
    return [p for p, _ in pairs], [n for _, n in pairs]
