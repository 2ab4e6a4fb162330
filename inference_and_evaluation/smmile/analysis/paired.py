"""A model's scores on a variant against its scores on a reference set, through ``estimates.paired``.

Rows pair by problem_id (``scoring.pairing``); with ``by_base`` a variant row ``<id>_perm_<k>`` pairs
with the reference's ``<id>``. Whenever the paired rows come in clusters (``by_base``, or ids that
carry ``_perm_<k>``) the clusters are the base problems. The statistics are those of ``smmile stats``
(``estimates.paired``: one estimand — row-weighted by default —, its inverted-score interval and the
cluster score test of the same difference; gold mismatches excluded unless asked). Differences are
variant − reference, in percentage points; this module adds the flips and the relative change.
"""

from __future__ import annotations

import os

import pandas as pd

from ..scoring import statistics
from ..scoring.results import Record
from ..scoring.estimates import paired

FLIP_COLUMNS = ["problem_id", "base_problem_id", "score_reference", "score_variant", "flip"]


def flip(reference: float, variant: float) -> str:
    """gained (wrong -> right), lost (right -> wrong), both_correct, both_wrong; for partial scores
    (a judge averaged over duplicated rows) up / down / same."""
    if variant > reference:
        return "gained" if (reference, variant) == (0, 1) else "up"
    if variant < reference:
        return "lost" if (reference, variant) == (1, 0) else "down"
    return {1: "both_correct", 0: "both_wrong"}.get(reference, "same")


def flips(frame: pd.DataFrame) -> pd.DataFrame:
    """Per paired row: ids, both scores and the flip (``frame`` from ``pair_scores``: a = variant)."""
    out = pd.DataFrame({"problem_id": frame["problem_id"],
                        "base_problem_id": statistics.base_problem_ids(frame["problem_id"]),
                        "score_reference": frame["b"], "score_variant": frame["a"]})
    out["flip"] = [flip(r, v) for r, v in zip(out["score_reference"], out["score_variant"])]
    return out[FLIP_COLUMNS]


def _base(problem_id: str) -> str:
    return statistics.base_problem_ids([problem_id])[0]


def compare(reference: Record, variant: Record, by_base: bool, n_boot: int, seed: int, level: float,
            include_gold_mismatch: bool = False, notes: list | None = None, weight: str = "row",
            failures: str = "wrong") -> tuple[dict, pd.DataFrame]:
    """Summary row (accuracies, difference with its interval and test, relative change, flips) and the
    per-problem flip table; what the pairing left out is appended to ``notes``."""
    label = f"{variant.model} {variant.metric} {variant.mode}"
    core, frame = paired(variant, reference, label, key=_base if by_base else None,
                         cluster="base" if by_base else "auto", weight=weight, level=level, n_boot=n_boot, seed=seed,
                         include_gold_mismatch=include_gold_mismatch, failures=failures, notes=notes)
    table = flips(frame)
    counts = table["flip"].value_counts()
    acc_ref, acc_var = core.pop("accuracy_b"), core.pop("accuracy_a")
    renamed = {"n_a": "n_variant", "n_b": "n_reference", "n_failed_a": "n_failed_variant",
               "n_failed_b": "n_failed_reference"}
    core = {renamed.get(k, k): v for k, v in core.items()}
    row = {"model": variant.model, "metric": variant.metric, "mode": variant.mode,
           "n_reference": core.pop("n_reference"), "n_variant": core.pop("n_variant"),
           "accuracy_reference": acc_ref, "accuracy_variant": acc_var,
           "relative_change": (acc_var - acc_ref) / acc_ref * 100 if acc_ref else float("nan"),
           "gained": int(counts.get("gained", 0)), "lost": int(counts.get("lost", 0)), **core,
           "source_reference": os.path.basename(reference.source), "source_variant": os.path.basename(variant.source)}
    return row, table
