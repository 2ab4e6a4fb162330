"""Deterministic dataset variants of any SMMILE-schema dataset (docs/analyses.md): pure functions of the problems,
a seed and the kind's parameter, returning the new problems and one record per source problem saying what was done.

* ``permute``: SMMILE++, every order of the ICL examples (at most 4), else 24 seeded distinct orders; ids
  ``<id>_perm_<k>``, k from 1.
* ``noise-random`` / ``noise-targeted``: one ICL example of another problem (targeted: of the same speciality, else
  image type, else any) inserted at a seeded position (the original ``--noisy AddOneExample[-BySpeciality]``).
* ``order-first`` / ``order-last``: the first ICL example answering like the query moved first / last; problems
  without one are dropped.
* the ICL diagnostics (§5: what in the examples does a model use?): ``k-shot``, the label conditions
  (``label_variants``), the input conditions (``image_variants``) and the demonstration policies (``demos``). A
  dropped image is an empty ``image`` cell marked ``DROPPED`` = "true": the loader keeps such a problem (an unmarked
  empty cell still drops it). Each holds the MCQA task fixed: the query row records the options of the unmodified
  problem (``protocol.options.RECORDED``), so a variant changes the prompt only where it says.

All but ``permute`` keep the problem ids, so their results pair with the original run."""

from __future__ import annotations

import itertools
import random
from dataclasses import replace

from ..errors import UserError
from ..protocol.items import SEED
from ..protocol.options import RECORDED, fixed_options
from ..protocol.problem import Problem, Row
from .demos import check_demo_params, demos
from .image_variants import FILLS, IMAGE_VARIANTS, reimage
from .label_variants import LABEL_VARIANTS, relabel
from .schema import base_id

MAX_ORDERS = 24
OPTION_VARIANTS = ("permute", "noise-random", "noise-targeted", "order-first", "order-last")
DIAGNOSTIC_VARIANTS = ("k-shot",) + LABEL_VARIANTS + IMAGE_VARIANTS + ("demos",)
VARIANTS = OPTION_VARIANTS + DIAGNOSTIC_VARIANTS
NOISY_FLAGS = {"AddOneExample": "noise-random", "AddOneExample-BySpeciality": "noise-targeted"}
TARGET_TIERS = (("speciality", "speciality"), ("image_type", "flag_image_type"), ("random", None))
DROPS = {"no-example-images": "examples", "no-query-image": "query"}  # kind -> whose images are dropped (fill none)


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


def _add_one(problems: list[Problem], kind: str, seed: int) -> tuple[list[Problem], list[dict]]:
    """AddOneExample[-BySpeciality]: an ICL example of another problem (``noise-targeted``: one sharing the
    speciality, else the image type, else any) inserted at a seeded position (0 = first)."""
    tiers = TARGET_TIERS if kind == "noise-targeted" else TARGET_TIERS[-1:]  # noise-random: any other problem
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


def _move(problems: list[Problem], last: bool) -> tuple[list[Problem], list[dict]]:
    """The first example answering like the query moved to ICL position 0, or (``last``) to the last one."""
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


def label(kind: str, **params) -> str:
    """The variant's name in manifests and results: ``k-shot-2``, ``k-shot-2-draw7``, ``flip-answers-0.5``,
    ``no-example-images-noise``, ``demos-retrieved-last``, ``demos-leave-one-out-1``."""
    p = {k: v for k, v in params.items() if v is not None}
    if kind == "k-shot":
        return f"k-shot-{p['k']}" + (f"-draw{p['draw']}" if "draw" in p else "")
    if kind == "demos":
        return f"demos-{p['policy']}" + (f"-{p['index']}" if "index" in p else "") + (f"-k{p['k']}" if "k" in p else "")
    if p.get("fraction", 1) != 1:
        return f"{kind}-{p['fraction']:g}"
    return kind + (f"-{p['fill']}" if p.get("fill", "none") != "none" else "")


def k_shot(problems: list[Problem], k: int, draw: int | None = None) -> tuple[list[Problem], list[dict]]:
    """``k`` examples of each problem, then its query: the first k, or (``draw``) the first k of an order seeded by
    the draw and the problem id, so that k is inside k + 1 for one draw; fewer: whole, ``short``."""
    out, notes = [], []
    for p in problems:
        order = list(range(len(p.examples)))
        if draw is not None:
            random.Random(f"{draw}:k-shot:{p.problem_id}").shuffle(order)
        kept = sorted(order[:k])  # in the problem's own order
        out.append(Problem(p.problem_id, tuple(p.examples[i] for i in kept) + (p.query,)))
        notes.append({"problem_id": p.problem_id, "n_examples": len(p.examples), "kept": len(kept),
                      "indices": kept, "short": len(p.examples) < k})
    return out, notes


PARAMS = {"k-shot": ("k", "draw"), "demos": ("policy", "k", "index", "encoder", "embed"),
          **{kind: ("fraction",) for kind in LABEL_VARIANTS}, **{kind: ("fill",) for kind in IMAGE_VARIANTS[:2]}}


def canonical_kind(kind: str) -> str:
    """A variant kind, accepting the original `--noisy` values (AddOneExample[-BySpeciality])."""
    kind = NOISY_FLAGS.get(kind, kind)
    if kind not in VARIANTS:
        raise UserError(f"unknown variant {kind!r}; choose one of {', '.join(VARIANTS)} "
                        f"(or {', '.join(NOISY_FLAGS)})")
    return kind


def check_params(kind: str, **params) -> str:
    """The canonical kind, its parameters checked (``PARAMS``: which kind takes which)."""
    kind = canonical_kind(kind)
    for name, value in params.items():
        if value is not None and name not in PARAMS.get(kind, ()):
            takes = [k for k, names in PARAMS.items() if name in names]
            raise UserError(f"--{name} applies to {', '.join(takes)} only, not {kind}")
    k, fraction, fill = params.get("k"), params.get("fraction"), params.get("fill")
    if kind == "k-shot" and (k is None or k < 1):
        raise UserError("k-shot needs --k N with N >= 1 (the number of ICL examples kept)")
    if k is not None and k < 1:
        raise UserError(f"--k {k}: give at least 1 example")
    if fraction is not None and not 0 < fraction <= 1:
        raise UserError(f"--fraction {fraction:g}: give a share of the examples in (0, 1]")
    if fill is not None and fill not in FILLS:
        raise UserError(f"--fill {fill}: choose one of {', '.join(FILLS)}")
    if kind == "demos":
        check_demo_params(**{k: params.get(k) for k in PARAMS["demos"]})
    return kind


def keep_task(sources: list[Problem], new: list[Problem], seed: int = SEED) -> list[Problem]:
    """``new`` with each query row carrying the MCQA options of its unmodified source problem (same id)."""
    fixed = {p.problem_id: fixed_options(p, seed) for p in sources}
    return [Problem(p.problem_id, p.rows[:-1] + (replace(p.query, fields={**p.query.fields,
                                                                            RECORDED: fixed[p.problem_id]}),))
            for p in new]


def transform(kind: str, problems: list[Problem], seed: int = 42, **params) -> tuple[list[Problem], list[dict]]:
    """The variant and its notes; every kind but the paper's (``OPTION_VARIANTS``) keeps the MCQA task of the source."""
    kind = check_params(kind, **params)
    p = {k: v for k, v in params.items() if v is not None}
    if kind == "permute":
        return permute_recorded(problems, seed)
    if kind in ("noise-random", "noise-targeted"):
        return _add_one(problems, kind, seed)
    if kind in ("order-first", "order-last"):
        return _move(problems, last=kind == "order-last")
    if kind == "k-shot":
        new, notes = k_shot(problems, p["k"], p.get("draw"))
    elif kind in LABEL_VARIANTS:
        new, notes = relabel(kind, problems, seed, p.get("fraction", 1.0))
    elif kind in IMAGE_VARIANTS:
        new, notes = reimage(kind, problems, seed, p.get("fill", "none"))
    else:
        new, notes = demos(problems, seed, **p)
    return keep_task(problems, new), notes
