"""Pairing two scored results problem by problem, and saying what the pairing left out.

Every paired statistic (``smmile stats`` comparisons, ``smmile analyze``) pairs through
``pair_scores``: an inner join on problem_id (or on a key such as the base problem of a SMMILE++ row),
with the number of pairs beside each side's number of problems, and the paired problems whose gold
answers differ (e.g. the published SMMILE qwen3B/qwen7B files use another ``true_answer`` on 18 of
111 problems, spec §9 item 38). Such pairs compare answers to different questions: they are dropped by
default (``exclude_gold_mismatch=True``) and counted; ``--include-gold-mismatch`` keeps them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import pandas as pd


@dataclass
class Pairing:
    """``frame``: one row per pair, columns ``problem_id`` (A's id), ``key`` (the id of B it pairs
    with), ``a``, ``b`` (scores), in A's order. ``n_a``/``n_b``: problems each side scored;
    ``n_joined``: pairs found; ``n_b_used``: distinct B problems that found a partner;
    ``gold_mismatches``: A ids of pairs with different gold answers (dropped from ``frame`` when
    ``excluded``)."""

    frame: pd.DataFrame
    n_a: int
    n_b: int
    n_joined: int
    n_b_used: int
    gold_mismatches: list[str] = field(default_factory=list)
    excluded: bool = False

    @property
    def n_pairs(self) -> int:
        return len(self.frame)

    def incomplete(self) -> bool:
        """True when some problem of either side found no partner."""
        return self.n_joined != self.n_a or self.n_b_used != self.n_b


def _same_gold(left, right) -> bool:
    if pd.isna(left) and pd.isna(right):
        return True
    return str(left) == str(right)


def pair_scores(a: pd.Series, b: pd.Series, gold_a: pd.Series | None = None, gold_b: pd.Series | None = None,
                key: Callable[[str], str] | None = None, exclude_gold_mismatch: bool = True) -> Pairing:
    """Pair A's problems with B's: A's id ``i`` pairs with B's ``key(i)`` (default ``i``).

    Scores are Series indexed by problem_id (unique); gold answers likewise (None: not checked).
    """
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
        differ = [not _same_gold(x, y) for x, y in zip(left, right)]
        mismatches = frame.loc[differ, "problem_id"].tolist()
        if exclude_gold_mismatch and mismatches:
            frame = frame.loc[[not d for d in differ]].reset_index(drop=True)
    return Pairing(frame, len(a), len(b), joined, used, mismatches, exclude_gold_mismatch and bool(mismatches))


def pairing_notes(pairing: Pairing, what: str) -> list[str]:
    """Warning lines (without the ``warning:`` prefix) about what the pairing ``what`` left out."""
    notes = []
    if pairing.incomplete():
        used = f" ({pairing.n_b_used} of the {pairing.n_b} paired)" if pairing.n_b_used != pairing.n_joined else ""
        notes.append(f"{what}: {pairing.n_joined} pairs from {pairing.n_a} and {pairing.n_b} problems{used}; "
                     "the difference uses the paired problems only")
    if pairing.gold_mismatches:
        action = "excluded (--include-gold-mismatch keeps them)" if pairing.excluded else "kept (--include-gold-mismatch)"
        notes.append(f"{what}: {len(pairing.gold_mismatches)} paired problem(s) have different gold answers "
                     f"(first: {pairing.gold_mismatches[0]}); {action}")
    return notes
