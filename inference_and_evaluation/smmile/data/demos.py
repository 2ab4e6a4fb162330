"""Demonstration policies (``smmile data variant demos --policy P``, docs/analyses.md §5): which examples a query is
shown, the query and its MCQA task unchanged.

* ``experts``: the experts' examples, as published;
* ``random``: examples of other problems of the same speciality, drawn per problem (seeded by its id);
* ``retrieved-last`` / ``retrieved-first``: the examples of other problems most similar to the query (leave one
  problem out: never one of its own problem, nor one showing the query's image), by cosine similarity of
  ``--embed`` image | text | both embeddings (``retrieval.Encoder``), most similar last / first;
* ``leave-one-out``: the experts' examples without the one at ``--index`` (0 = first).

A policy shows as many examples as the experts gave (``--k``: that many); each note records what was shown, from
which problem, and (retrieved) its similarity score."""

from __future__ import annotations

import random
from dataclasses import replace

from ..errors import UserError
from ..protocol.options import RECORDED
from ..protocol.problem import Problem, Row
from .retrieval import Encoder, similarity
from .schema import SPECIALITY_COLUMN, base_id

POLICIES = ("experts", "random", "retrieved-last", "retrieved-first", "leave-one-out")
EMBEDS = ("image", "text", "both")


def check_demo_params(policy=None, k=None, index=None, encoder=None, embed=None) -> None:
    if policy not in POLICIES:
        raise UserError(f"demos needs --policy, one of {', '.join(POLICIES)}")
    retrieved = policy.startswith("retrieved")
    if retrieved != (encoder is not None):
        raise UserError("--encoder (a CLIP-style or text model folder or id, or open_clip:<name>) is needed by, and "
                        "only by, the retrieved policies")
    if embed is not None and (not retrieved or embed not in EMBEDS):
        raise UserError(f"--embed applies to the retrieved policies: one of {', '.join(EMBEDS)}")
    if (policy == "leave-one-out") != (index is not None) or (index is not None and index < 0):
        raise UserError("--index I (0 = the first example) is needed by, and only by, --policy leave-one-out")
    if k is not None and policy in ("experts", "leave-one-out"):
        raise UserError(f"--k does not apply to --policy {policy} (it shows the experts' examples)")


def _shown(problem: Problem, picks: list[tuple[Problem, int, Row]]) -> Problem:
    fields = {k: v for k, v in problem.query.fields.items() if k != RECORDED}
    rows = [replace(r, problem_id=problem.problem_id, fields=dict(fields)) for _, _, r in picks] + [problem.query]
    return Problem(problem.problem_id, tuple(replace(r, order=i) for i, r in enumerate(rows)))


def _pool(problem: Problem, candidates: list[tuple[Problem, int, Row]], same_speciality: bool) -> list[int]:
    own, image = base_id(problem.problem_id), problem.query.image
    speciality = problem.query.fields.get(SPECIALITY_COLUMN)
    return [i for i, (p, _, r) in enumerate(candidates) if base_id(p.problem_id) != own
            and (image is None or r.image is None or r.image.digest != image.digest)
            and (not same_speciality or p.query.fields.get(SPECIALITY_COLUMN) == speciality)]


def _scores(problems: list[Problem], candidates: list, encoder: str, embed: str | None):
    model = Encoder(encoder)
    embed = embed or ("image" if model.clip else "text")
    if embed != "text" and not model.clip:
        raise UserError(f"--embed {embed}: {encoder} embeds text only")
    if embed != "text" and any(r.image is None for r in [p.query for p in problems] + [c[2] for c in candidates]):
        raise UserError(f"--embed {embed}: a row has no image; use --embed text")
    pick = {"image": lambda r: r.image, "text": lambda r: r.question, "both": lambda r: (r.image, r.question)}[embed]
    matrix = similarity(model, embed, [pick(p.query) for p in problems], [pick(r) for _, _, r in candidates])
    return matrix, {**model.describe(), "embed": embed}


def demos(problems: list[Problem], seed: int, policy: str, k: int | None = None, index: int | None = None,
          encoder: str | None = None, embed: str | None = None) -> tuple[list[Problem], list[dict]]:
    candidates = [(p, j, r) for p in problems for j, r in enumerate(p.examples)]
    scores, about = _scores(problems, candidates, encoder, embed) if encoder else (None, None)
    out, notes = [], []
    for qi, p in enumerate(problems):
        n = len(p.examples) if k is None else k
        note: dict = {"problem_id": p.problem_id, "n_examples": len(p.examples), "policy": policy}
        if policy in ("experts", "leave-one-out"):
            kept = [j for j in range(len(p.examples)) if policy == "experts" or j != index]
            picks = [(p, j, p.examples[j]) for j in kept]
            note["short"] = policy == "leave-one-out" and index >= len(p.examples)
        elif policy == "random":
            pool = _pool(p, candidates, same_speciality=True)
            chosen = random.Random(f"{seed}:demos:{p.problem_id}").sample(pool, min(n, len(pool)))
            picks = [candidates[i] for i in chosen]
        else:
            pool = _pool(p, candidates, same_speciality=False)
            ranked = sorted(pool, key=lambda i: (-round(float(scores[qi, i]), 6), i))[:n]
            ranked = ranked[::-1] if policy == "retrieved-last" else ranked
            picks = [candidates[i] for i in ranked]
            note["scores"] = [round(float(scores[qi, i]), 6) for i in ranked]
        note.setdefault("short", len(picks) < n)
        note["shown"] = [{"problem_id": d.problem_id, "example_index": j} for d, j, _ in picks]
        out.append(_shown(p, picks))
        notes.append(note)
    if about:
        notes[0] = {**notes[0], "retrieval": about}
    return out, notes
