"""Pairing two scored results problem by problem (an inner join on problem_id, or on a key such as the base
problem of a SMMILE++ row), and saying what the pairing left out. Paired problems whose gold answers differ
(the published qwen3B/qwen7B files use another ``true_answer`` on 18 of 111 problems, spec §9 item 38)
compare answers to different questions: dropped by default and counted."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import pandas as pd


@dataclass
class Pairing:
    """``frame``: one row per pair in A's order: ``problem_id`` (A's id), ``key`` (the B id it pairs with),
    scores ``a``, ``b``. ``n_joined`` pairs were found, ``n_b_used`` distinct B problems found a partner;
    ``gold_mismatches``: A ids of pairs with different gold answers (dropped from ``frame`` when ``excluded``)."""

    frame: pd.DataFrame
    n_a: int
    n_b: int
    n_joined: int
    n_b_used: int
    gold_mismatches: list[str] = field(default_factory=list)
    excluded: bool = False


def pair_scores(a: pd.Series, b: pd.Series, gold_a: pd.Series | None = None, gold_b: pd.Series | None = None,
                key: Callable[[str], str] | None = None, exclude_gold_mismatch: bool = True) -> Pairing:
    """Pair A's problems with B's: A's id ``i`` pairs with B's ``key(i)`` (default ``i``). Scores and gold
    answers are Series indexed by problem_id (gold None: not checked)."""
    ids = [str(i) for i in a.index]
    keys = [key(i) for i in ids] if key else ids
    frame = pd.DataFrame({"problem_id": ids, "key": keys, "a": a.to_numpy(dtype=float)})
    b_scores = pd.Series(b.to_numpy(dtype=float), index=[str(i) for i in b.index])
    frame["b"] = frame["key"].map(b_scores)
    frame = frame.dropna(subset=["a", "b"]).reset_index(drop=True)
    joined, used = len(frame), int(frame["key"].nunique())
    mismatches: list[str] = []
    if gold_a is not None and gold_b is not None:
        left = frame["problem_id"].map(gold_a.rename(index=str))
        right = frame["key"].map(gold_b.rename(index=str))
        differ = [not (pd.isna(x) and pd.isna(y)) and str(x) != str(y) for x, y in zip(left, right)]
        mismatches = frame.loc[differ, "problem_id"].tolist()
        if exclude_gold_mismatch and mismatches:
            frame = frame.loc[[not d for d in differ]].reset_index(drop=True)
    return Pairing(frame, len(a), len(b), joined, used, mismatches, exclude_gold_mismatch and bool(mismatches))


def pairing_notes(pairing: Pairing, what: str) -> list[str]:
    """Warning lines (without the ``warning:`` prefix) about what the pairing ``what`` left out."""
    notes = []
    if pairing.n_joined != pairing.n_a or pairing.n_b_used != pairing.n_b:
        used = f" ({pairing.n_b_used} of the {pairing.n_b} paired)" if pairing.n_b_used != pairing.n_joined else ""
        notes.append(f"{what}: {pairing.n_joined} pairs from {pairing.n_a} and {pairing.n_b} problems{used}; "
                     "the difference uses the paired problems only")
    if pairing.gold_mismatches:
        action = ("excluded (--include-gold-mismatch keeps them)" if pairing.excluded
                  else "kept (--include-gold-mismatch)")
        notes.append(f"{what}: {len(pairing.gold_mismatches)} paired problem(s) have different gold answers "
                     f"(first: {pairing.gold_mismatches[0]}); {action}")
    return notes
