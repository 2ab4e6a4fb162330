"""Deterministic dataset variants of any SMMILE-schema dataset (docs/analyses.md): pure functions of the problems,
a seed and the kind's parameter, returning the new problems and one record per source problem saying what was done.

* ``permute``: SMMILE++, every order of the ICL examples (at most 4), else 24 seeded distinct orders; ids
  ``<id>_perm_<k>``, k from 1.
* ``noise-random`` / ``noise-targeted``: one ICL example of another problem (targeted: of the same speciality, else
  image type, else any) inserted at a seeded position (the original ``--noisy AddOneExample[-BySpeciality]``).
* ``order-first`` / ``order-last``: the first ICL example answering like the query moved first / last; problems
  without one are dropped.
* the ICL diagnostics (§5: what in the examples does a model use?): ``k-shot``, ``flip-answers``,
  ``no-example-images``, ``no-query-image``. A dropped image is an empty ``image`` cell marked ``DROPPED`` = "true":
  the loader keeps such a problem (an unmarked empty cell still drops it).

All but ``permute`` keep the problem ids, so their results pair with the original run."""

from __future__ import annotations

import itertools
import math
import random
import re
from dataclasses import replace

from ..errors import UserError
from ..protocol.problem import Problem, Row
from .schema import DROPPED, base_id

MAX_ORDERS = 24
KINDS = ("permute", "noise-random", "noise-targeted", "order-first", "order-last")
DIAGNOSTIC_KINDS = ("k-shot", "flip-answers", "no-example-images", "no-query-image")
ALL_KINDS = KINDS + DIAGNOSTIC_KINDS
NOISY_FLAGS = {"AddOneExample": "noise-random", "AddOneExample-BySpeciality": "noise-targeted"}
TARGET_TIERS = (("speciality", "speciality"), ("image_type", "flag_image_type"), ("random", None))
FORMAT_COLUMN, SPECIALITY_COLUMN = "flag_answer_format", "speciality"
DROPS = {"no-example-images": "examples", "no-query-image": "query"}  # kind -> whose images are dropped
_PUNCT = re.compile(r"[\W_]+")


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
        ids = [f"{p.problem_id}_perm_{k}" for k in range(1, len(orders) + 1)]
        out += [_renumbered(pid, [p.examples[j] for j in perm] + [p.query]) for pid, perm in zip(ids, orders)]
        notes.append({"problem_id": p.problem_id, "n_examples": len(p.examples), "n_orders": len(orders),
                      "ids": ids, "orders": [list(o) for o in orders]})
    return out, notes


def permute(problems: list[Problem], seed: int = 42) -> list[Problem]:
    return permute_recorded(problems, seed)[0]


def _renumbered(pid: str, rows: list[Row]) -> Problem:
    """Problem `pid` of `rows` renumbered 0..n in the given order (the query last)."""
    return Problem(pid, tuple(replace(r, problem_id=pid, order=i) for i, r in enumerate(rows)))


def _tier_pool(problem: Problem, problems: list[Problem], column: str | None) -> list[Problem]:
    own, value = base_id(problem.problem_id), problem.query.fields.get(column) if column else None
    if column and value is None:
        return []
    return [p for p in problems
            if base_id(p.problem_id) != own and (column is None or p.query.fields.get(column) == value)]


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
        rows, target = [r for i, r in enumerate(p.examples) if i != index], len(p.examples) - 1 if last else 0
        rows.insert(target, p.examples[index])
        out.append(_renumbered(p.problem_id, rows + [p.query]))
        notes.append({**note, "kept": True, "moved_from": index, "moved_to": target, "changed": index != target})
    return out, notes


def order_first(problems: list[Problem], seed: int = 42) -> tuple[list[Problem], list[dict]]:
    """The first example answering like the query moved to ICL position 0 (seed unused)."""
    return _move(problems, last=False)


def order_last(problems: list[Problem], seed: int = 42) -> tuple[list[Problem], list[dict]]:
    """The first example answering like the query moved to the last ICL position (seed unused)."""
    return _move(problems, last=True)


def label(kind: str, k: int | None = None, fraction: float | None = None) -> str:
    """The variant's name in manifests and results: ``k-shot-2``, ``flip-answers``, ``flip-answers-0.5``."""
    if kind == "k-shot":
        return f"k-shot-{k}"
    if kind == "flip-answers" and fraction is not None and fraction != 1:
        return f"flip-answers-{fraction:g}"
    return kind


def k_shot(problems: list[Problem], k: int) -> tuple[list[Problem], list[dict]]:
    """The first ``k`` examples of each problem (k=1 is inside k=2), then its query; fewer: whole, ``short``."""
    out, notes = [], []
    for p in problems:
        kept = p.examples[:k]
        out.append(Problem(p.problem_id, tuple(kept) + (p.query,)))
        notes.append({"problem_id": p.problem_id, "n_examples": len(p.examples), "kept": len(kept),
                      "short": len(p.examples) < k})
    return out, notes


def normalise(answer: str) -> str:
    """An answer compared case- and punctuation-insensitively ("Red." == "red")."""
    return _PUNCT.sub(" ", str(answer)).strip().casefold()


def _group(problem: Problem) -> tuple:
    fields = problem.query.fields
    return fields.get(SPECIALITY_COLUMN), fields.get(FORMAT_COLUMN)


def _flip_one(problem: Problem, donors: list[tuple[str, str]], fraction: float, seed: int) -> tuple[Problem, dict]:
    """``donors``: (base problem id, answer) of every example of the other problems of its group; ``fraction`` of
    the examples (rounded half up, seeded) get a donor's answer never equal to theirs (case and punctuation
    ignored); one without such a donor keeps its answer, flagged."""
    rng = random.Random(f"{seed}:flip-answers:{problem.problem_id}")
    n = len(problem.examples)
    chosen = sorted(rng.sample(range(n), min(n, math.floor(fraction * n + 0.5))))
    rows, changes = list(problem.examples), []
    for i in chosen:
        original = rows[i].answer
        pool = [(pid, a) for pid, a in donors if normalise(a) != normalise(original)]
        donor, answer = rng.choice(pool) if pool else (None, original)
        rows[i] = replace(rows[i], answer=answer)
        changes.append({"index": i, "original": original, "answer": answer, "donor_problem_id": donor,
                        "flipped": bool(pool)})
    speciality, fmt = _group(problem)
    note = {"problem_id": problem.problem_id, "n_examples": n, "speciality": speciality, "answer_format": fmt,
            "chosen": len(chosen), "flipped": sum(c["flipped"] for c in changes), "examples": changes}
    return Problem(problem.problem_id, tuple(rows) + (problem.query,)), note


def flip_answers(problems: list[Problem], seed: int, fraction: float = 1.0) -> tuple[list[Problem], list[dict]]:
    """Donors: the examples of the other problems of the same speciality and answer format (dataset order)."""
    missing = [c for c in (SPECIALITY_COLUMN, FORMAT_COLUMN) if not any(c in p.query.fields for p in problems)]
    if missing:
        raise UserError(f"flip-answers needs the column(s) {', '.join(missing)} (donors share the speciality and "
                        "answer format)")
    pools: dict[tuple, list[tuple[str, str]]] = {}
    for p in problems:
        pools.setdefault(_group(p), []).extend((base_id(p.problem_id), r.answer) for r in p.examples)
    pairs = [_flip_one(p, [(pid, a) for pid, a in pools[_group(p)] if pid != base_id(p.problem_id)], fraction, seed)
             for p in problems]
    return [p for p, _ in pairs], [n for _, n in pairs]


def drop_images(problems: list[Problem], whose: str) -> tuple[list[Problem], list[dict]]:
    """``whose`` = "examples" | "query": those rows' images removed and marked ``DROPPED``."""
    out, notes = [], []
    for p in problems:
        last = len(p.rows) - 1
        targets = range(last) if whose == "examples" else (last,)
        rows = [(replace(r, image=None, fields={**r.fields, DROPPED: "true"}) if i in targets else r)
                for i, r in enumerate(p.rows)]
        out.append(Problem(p.problem_id, tuple(rows)))
        notes.append({"problem_id": p.problem_id, "n_examples": len(p.examples), "dropped": list(targets),
                      "had_image": [p.rows[i].image is not None for i in targets]})
    return out, notes


TRANSFORMS = {  # the kinds taking the seed only
    "permute": permute_recorded, "noise-random": noise_random, "noise-targeted": noise_targeted,
    "order-first": order_first, "order-last": order_last,
}


def canonical_kind(kind: str) -> str:
    """A variant kind, accepting the original `--noisy` values (AddOneExample[-BySpeciality])."""
    kind = NOISY_FLAGS.get(kind, kind)
    if kind not in ALL_KINDS:
        raise UserError(f"unknown variant {kind!r}; choose one of {', '.join(ALL_KINDS)} "
                        f"(or {', '.join(NOISY_FLAGS)})")
    return kind


def check_params(kind: str, k: int | None = None, fraction: float | None = None) -> str:
    """The canonical kind, its parameters checked: ``k`` (k-shot), ``fraction`` (flip-answers); the others take none."""
    kind = canonical_kind(kind)
    if kind in KINDS and (k is not None or fraction is not None):
        raise UserError(f"{kind} takes no --k or --fraction")
    if kind == "k-shot" and (k is None or k < 1):
        raise UserError("k-shot needs --k N with N >= 1 (the number of ICL examples kept)")
    if kind != "k-shot" and k is not None:
        raise UserError(f"--k applies to k-shot only, not {kind}")
    if kind == "flip-answers" and fraction is not None and not 0 < fraction <= 1:
        raise UserError(f"--fraction {fraction:g}: give a share of the examples in (0, 1]")
    if kind != "flip-answers" and fraction is not None:
        raise UserError(f"--fraction applies to flip-answers only, not {kind}")
    return kind


def transform(kind: str, problems: list[Problem], seed: int = 42, k: int | None = None,
              fraction: float | None = None) -> tuple[list[Problem], list[dict]]:
    kind = check_params(kind, k, fraction)
    if kind == "k-shot":
        return k_shot(problems, k)
    if kind == "flip-answers":
        return flip_answers(problems, seed, 1.0 if fraction is None else fraction)
    if kind in DROPS:
        return drop_images(problems, DROPS[kind])
    return TRANSFORMS[kind](problems, seed)
