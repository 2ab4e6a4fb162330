"""ICL diagnostic variants: what in the examples does a model use? (docs/analyses.md, "ICL diagnostics").

Each is a pure function of the problems, a seed and its parameter, returning the new problems and one record per
source problem; problem ids are kept, so every run pairs with the original's. A dropped image is an empty
``image`` cell marked ``DROPPED`` = "true": the loader keeps such a problem (an unmarked empty cell still drops it).
"""

from __future__ import annotations

import json
import math
import os
import random
import re
from dataclasses import replace
from pathlib import Path

from ..errors import UserError
from ..protocol.problem import Problem
from .schema import DROPPED, MANIFEST, base_id

FORMAT_COLUMN, SPECIALITY_COLUMN = "flag_answer_format", "speciality"
KINDS = ("k-shot", "flip-answers", "no-example-images", "no-query-image")
DROPS = {"no-example-images": "examples", "no-query-image": "query"}  # kind -> whose images are dropped
_PUNCT = re.compile(r"[\W_]+")


def label(kind: str, k: int | None = None, fraction: float | None = None) -> str:
    """The variant's name in manifests and results: ``k-shot-2``, ``flip-answers``, ``flip-answers-0.5``."""
    if kind == "k-shot":
        return f"k-shot-{k}"
    if kind == "flip-answers" and fraction is not None and fraction != 1:
        return f"flip-answers-{fraction:g}"
    return kind


def check_params(kind: str, k: int | None, fraction: float | None) -> None:
    if kind == "k-shot" and (k is None or k < 1):
        raise UserError("k-shot needs --k N with N >= 1 (the number of ICL examples kept)")
    if kind != "k-shot" and k is not None:
        raise UserError(f"--k applies to k-shot only, not {kind}")
    if kind == "flip-answers" and fraction is not None and not 0 < fraction <= 1:
        raise UserError(f"--fraction {fraction:g}: give a share of the examples in (0, 1]")
    if kind != "flip-answers" and fraction is not None:
        raise UserError(f"--fraction applies to flip-answers only, not {kind}")


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


def transform(kind: str, problems: list[Problem], seed: int, k: int | None = None,
              fraction: float | None = None) -> tuple[list[Problem], list[dict]]:
    """``kind``'s parameters are checked by the caller (``variants.check_params``)."""
    if kind == "k-shot":
        return k_shot(problems, k)
    if kind == "flip-answers":
        return flip_answers(problems, seed, 1.0 if fraction is None else fraction)
    return drop_images(problems, DROPS[kind])


IMAGE_FREE_OUTPUTS = ("generic", "api", "llama33textonly", "baselines")  # hf:/vllm:, API chat, text-only, baselines


def dropped_images(dataset) -> str | None:
    """"examples" / "query" when ``dataset`` is a local variant whose images were dropped (its manifest says so)."""
    if not dataset or not isinstance(dataset, (str, os.PathLike)):
        return None
    try:
        info = json.loads((Path(dataset).expanduser() / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    return info.get("images_dropped") if isinstance(info, dict) else None


def refuse_dropped_images(dataset, script: str | None = None, output_key: str | None = None) -> None:
    """Refuse (before anything is written) a ``dataset`` without images on purpose when the original script
    (``script``, or the one of ``output_key``) cannot represent a prompt without them (it drops such problems,
    spec §1.4); the any-model, API, text-only and baseline families can."""
    whose = dropped_images(dataset)
    if whose is None or (script is None and output_key in IMAGE_FREE_OUTPUTS):
        return
    script = script or f"inference_{output_key}.py"
    what = "the ICL examples' images" if whose == "examples" else "the query image"
    raise UserError(f"{dataset} is a variant without {what}; {script} cannot represent a prompt without an image "
                    "(it skips such problems): run it with --model hf:<checkpoint> / vllm:<checkpoint>, an API model "
                    "or the text-only baseline")
