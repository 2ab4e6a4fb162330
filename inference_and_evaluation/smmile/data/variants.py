"""Deterministic dataset variants of any SMMILE-schema dataset (docs/analyses.md): pure functions of the problems
and a seed returning the new problems and one record per source problem saying what was done.

* ``permute``: SMMILE++, every order of the ICL examples (at most 4), else 24 seeded distinct orders; ids
  ``<id>_perm_<k>``, k from 1.
* ``noise-random`` / ``noise-targeted``: one ICL example of another problem (targeted: of the same speciality, else
  image type, else any) inserted at a seeded position (the original ``--noisy AddOneExample[-BySpeciality]``).
* ``order-first`` / ``order-last``: the first ICL example answering like the query moved first / last; problems
  without one are dropped.

Noise and order variants keep the problem ids, so their results pair with the original run. The ICL diagnostics
are in ``diagnostic_variants``.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import replace
from typing import Callable

from ..errors import UserError
from ..protocol.problem import Problem, Row
from . import diagnostic_variants as diag
from .schema import base_id

MAX_ORDERS = 24
KINDS = ("permute", "noise-random", "noise-targeted", "order-first", "order-last")
ALL_KINDS = KINDS + diag.KINDS
NOISY_FLAGS = {"AddOneExample": "noise-random", "AddOneExample-BySpeciality": "noise-targeted"}
TARGET_TIERS = (("speciality", "speciality"), ("image_type", "flag_image_type"), ("random", None))


def _orders(n: int, rng: random.Random) -> list[tuple[int, ...]]:
    if n <= 4:
        return list(itertools.permutations(range(n)))
    seen: dict[tuple[int, ...], None] = {}
    while len(seen) < MAX_ORDERS:
        perm = list(range(n))
        rng.shuffle(perm)
        seen.setdefault(tuple(perm), None)
    return list(seen)


def permute_recorded(problems: list[Problem], seed: int = 42) -> tuple[list[Problem], list[dict]]:
    """``permute`` plus one record per source problem: the orders (original example indices) per id."""
    rng = random.Random(seed)
    out, notes = [], []
    for p in problems:
        orders = _orders(len(p.examples), rng)
        ids = []
        for k, perm in enumerate(orders, start=1):
            ids.append(f"{p.problem_id}_perm_{k}")
            out.append(_renumbered(ids[-1], [p.examples[j] for j in perm] + [p.query]))
        notes.append({"problem_id": p.problem_id, "n_examples": len(p.examples), "n_orders": len(orders),
                      "ids": ids, "orders": [list(o) for o in orders]})
    return out, notes


def permute(problems: list[Problem], seed: int = 42) -> list[Problem]:
    return permute_recorded(problems, seed)[0]


def _renumbered(pid: str, rows: list[Row]) -> Problem:
    """Problem `pid` of `rows` renumbered 0..n in the given order (the query last)."""
    return Problem(pid, tuple(replace(r, problem_id=pid, order=i) for i, r in enumerate(rows)))


def _tier_pool(problem: Problem, problems: list[Problem], column: str | None) -> list[Problem]:
    own = base_id(problem.problem_id)
    others = [p for p in problems if base_id(p.problem_id) != own]
    if column is None:
        return others
    value = problem.query.fields.get(column)
    if value is None:
        return []
    return [p for p in others if p.query.fields.get(column) == value]


def _pick_donor(problem: Problem, pool: list[Problem], rng: random.Random) -> tuple[Problem, int, Row, bool] | None:
    """A donor problem uniformly among those with a usable example, then one of its examples; strict first: an
    example with an image and an answer other than the query's (so the added example is irrelevant)."""
    for strict in (True, False):
        usable = [(p, [(i, r) for i, r in enumerate(p.examples)
                       if not strict or (r.image is not None and r.answer != problem.query.answer)]) for p in pool]
        usable = [(p, ex) for p, ex in usable if ex]
        if usable:
            donor, examples = rng.choice(usable)
            index, row = rng.choice(examples)
            return donor, index, row, strict
    return None


def _add_one(problems: list[Problem], kind: str, seed: int,
             tiers: tuple[tuple[str, str | None], ...]) -> tuple[list[Problem], list[dict]]:
    out, notes = [], []
    for problem in problems:
        rng = random.Random(f"{seed}:{kind}:{problem.problem_id}")  # a problem's draws do not depend on the others
        position = rng.randint(0, len(problem.examples))
        for tier, column in tiers:
            picked = _pick_donor(problem, _tier_pool(problem, problems, column), rng)
            if picked is not None:
                break
        else:
            raise UserError(f"{kind}: no other problem to take an example from (the dataset has {len(problems)} "
                            "problem(s))")
        donor, index, row, strict = picked
        rows = list(problem.examples)
        rows.insert(position, replace(row, fields=dict(problem.query.fields)))
        out.append(_renumbered(problem.problem_id, rows + [problem.query]))
        notes.append({"problem_id": problem.problem_id, "n_examples": len(problem.examples), "position": position,
                      "donor_problem_id": donor.problem_id, "donor_example_index": index, "donor_answer": row.answer,
                      "match": tier, "irrelevant": strict})
    return out, notes


def noise_random(problems: list[Problem], seed: int = 42) -> tuple[list[Problem], list[dict]]:
    """AddOneExample: an ICL example of another problem inserted at a seeded position (0 = first)."""
    return _add_one(problems, "noise-random", seed, TARGET_TIERS[-1:])


def noise_targeted(problems: list[Problem], seed: int = 42) -> tuple[list[Problem], list[dict]]:
    """AddOneExample-BySpeciality: the donor shares the speciality, else the image type, else any."""
    return _add_one(problems, "noise-targeted", seed, TARGET_TIERS)


def _move(problems: list[Problem], last: bool) -> tuple[list[Problem], list[dict]]:
    out, notes = [], []
    for p in problems:
        matches = [i for i, r in enumerate(p.examples) if r.answer == p.query.answer]  # exact, as stratify's §6
        note = {"problem_id": p.problem_id, "n_examples": len(p.examples), "matches": matches}
        if not matches:
            notes.append({**note, "kept": False, "moved_from": None, "moved_to": None, "changed": False})
            continue
        index = matches[0]
        rows = [r for i, r in enumerate(p.examples) if i != index]
        rows.insert(len(rows) if last else 0, p.examples[index])
        target = len(rows) - 1 if last else 0
        out.append(_renumbered(p.problem_id, rows + [p.query]))
        notes.append({**note, "kept": True, "moved_from": index, "moved_to": target, "changed": index != target})
    return out, notes


def order_first(problems: list[Problem], seed: int = 42) -> tuple[list[Problem], list[dict]]:
    """The first example answering like the query moved to ICL position 0 (seed unused)."""
    return _move(problems, last=False)


def order_last(problems: list[Problem], seed: int = 42) -> tuple[list[Problem], list[dict]]:
    """The first example answering like the query moved to the last ICL position (seed unused)."""
    return _move(problems, last=True)


TRANSFORMS: dict[str, Callable[[list[Problem], int], tuple[list[Problem], list[dict]]]] = {
    "permute": permute_recorded, "noise-random": noise_random, "noise-targeted": noise_targeted,
    "order-first": order_first, "order-last": order_last,
}


def canonical_kind(kind: str) -> str:
    """A variant kind, accepting the original `--noisy` values (AddOneExample[-BySpeciality])."""
    kind = NOISY_FLAGS.get(kind, kind)
    if kind not in TRANSFORMS and kind not in diag.KINDS:
        raise UserError(f"unknown variant {kind!r}; choose one of {', '.join(ALL_KINDS)} "
                        f"(or {', '.join(NOISY_FLAGS)})")
    return kind


def check_params(kind: str, k: int | None = None, fraction: float | None = None) -> str:
    """The canonical kind, its parameters checked: ``k`` (k-shot), ``fraction`` (flip-answers); the others take none."""
    kind = canonical_kind(kind)
    if kind in diag.KINDS:
        diag.check_params(kind, k, fraction)
    elif k is not None or fraction is not None:
        raise UserError(f"{kind} takes no --k or --fraction")
    return kind


def transform(kind: str, problems: list[Problem], seed: int = 42, **params) -> tuple[list[Problem], list[dict]]:
    kind = check_params(kind, **params)
    if kind in diag.KINDS:
        return diag.transform(kind, problems, seed, **params)
    return TRANSFORMS[kind](problems, seed)
