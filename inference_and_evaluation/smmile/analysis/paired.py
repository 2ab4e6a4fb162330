"""One paired comparison: a model's scores on a variant against its scores on a reference set.

Rows pair by problem_id (``scoring.pairing``); with ``by_base`` a variant row ``<id>_perm_<k>`` pairs
with the reference's ``<id>``. Whenever the paired rows come in clusters (``by_base``, or ids that
carry ``_perm_<k>`` on both sides) the bootstrap resamples whole base problems and the test is the
cluster-adjusted McNemar (``bootstrap.paired_test``); independent 0/1 rows get the exact McNemar.
Differences are variant − reference, in percentage points.
"""

from __future__ import annotations

import math
import os

import pandas as pd

from ..scoring import bootstrap
from ..scoring.pairing import pair_scores, pairing_notes
from ..scoring.stats import Record

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
                        "base_problem_id": bootstrap.base_problem_ids(frame["problem_id"]),
                        "score_reference": frame["b"], "score_variant": frame["a"]})
    out["flip"] = [flip(r, v) for r, v in zip(out["score_reference"], out["score_variant"])]
    return out[FLIP_COLUMNS]


def _pct(value: float) -> float:
    return value * 100 if not math.isnan(value) else float("nan")


def _base(problem_id: str) -> str:
    return bootstrap.base_problem_ids([problem_id])[0]


def compare(reference: Record, variant: Record, by_base: bool, n_boot: int, seed: int, level: float,
            exclude_gold_mismatch: bool = False, notes: list | None = None) -> tuple[dict, pd.DataFrame]:
    """Summary row (accuracies, difference with its paired bootstrap CI, relative change, flips, the
    paired test) and the per-problem flip table; what the pairing left out is appended to ``notes``."""
    pairing = pair_scores(variant.scores, reference.scores, variant.gold, reference.gold,
                          key=_base if by_base else None, exclude_gold_mismatch=exclude_gold_mismatch)
    if notes is not None:
        notes.extend(pairing_notes(pairing, f"{variant.model} {variant.metric} {variant.mode}"))
    frame = pairing.frame
    var, ref = frame["a"].to_numpy(), frame["b"].to_numpy()
    ids = frame["problem_id"].tolist()
    clustered = by_base or bootstrap.has_permutations(ids)
    clusters = bootstrap.base_problem_ids(ids) if clustered else None
    diff = bootstrap.paired_difference_ci(var, ref, clusters, n_boot, seed, level)
    test = bootstrap.paired_test(var, ref, clusters)
    table = flips(frame)
    counts = table["flip"].value_counts()
    acc_ref = _pct(float(ref.mean())) if len(ref) else float("nan")
    acc_var = _pct(float(var.mean())) if len(var) else float("nan")
    row = {"model": variant.model, "metric": variant.metric, "mode": variant.mode,
           "n_reference": pairing.n_b, "n_variant": pairing.n_a, "n_pairs": diff.n, "n_problems": diff.n_clusters,
           "clustered": clustered, "gold_mismatches": len(pairing.gold_mismatches),
           "accuracy_reference": acc_ref, "accuracy_variant": acc_var,
           "difference": _pct(diff.estimate), "ci_low": _pct(diff.low), "ci_high": _pct(diff.high),
           "ci_method": diff.method,
           "relative_change": (acc_var - acc_ref) / acc_ref * 100 if acc_ref else float("nan"),
           "gained": int(counts.get("gained", 0)), "lost": int(counts.get("lost", 0)),
           "p_value": test.p_value, "p_method": test.method, "p_holm": float("nan"), "significant": False,
           "source_reference": os.path.basename(reference.source), "source_variant": os.path.basename(variant.source)}
    return row, table
