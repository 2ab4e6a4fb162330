"""One paired comparison: a model's scores on a variant against its scores on a reference set.

Rows pair by problem_id; with ``by_base`` a variant row ``<id>_perm_<k>`` pairs with the reference's
``<id>`` and the bootstrap resamples whole base problems (cluster bootstrap), since the orders of one
problem are not independent. Differences are variant − reference, in percentage points.
"""

from __future__ import annotations

import math
import os

import numpy as np
import pandas as pd

from ..scoring import bootstrap
from ..scoring.stats import Record

FLIP_COLUMNS = ["problem_id", "base_problem_id", "score_reference", "score_variant", "flip"]


def align(reference: pd.Series, variant: pd.Series, by_base: bool) -> pd.DataFrame:
    """The variant's problems that the reference also scored, with both scores (variant order)."""
    ids = [str(i) for i in variant.index]
    base = bootstrap.base_problem_ids(ids) if by_base else ids
    frame = pd.DataFrame({"problem_id": ids, "base_problem_id": base, "variant": variant.to_numpy(dtype=float)})
    frame["reference"] = frame["base_problem_id"].map(reference.astype(float))
    return frame.dropna(subset=["reference", "variant"]).reset_index(drop=True)


def flip(reference: float, variant: float) -> str:
    """gained (wrong -> right), lost (right -> wrong), both_correct, both_wrong; for partial scores
    (a judge averaged over duplicated rows) up / down / same."""
    if variant > reference:
        return "gained" if (reference, variant) == (0, 1) else "up"
    if variant < reference:
        return "lost" if (reference, variant) == (1, 0) else "down"
    return {1: "both_correct", 0: "both_wrong"}.get(reference, "same")


def flips(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame.rename(columns={"reference": "score_reference", "variant": "score_variant"})
    out["flip"] = [flip(r, v) for r, v in zip(out["score_reference"], out["score_variant"])]
    return out[FLIP_COLUMNS]


def _pct(value: float) -> float:
    return value * 100 if not math.isnan(value) else float("nan")


def _binary(values: np.ndarray) -> bool:
    return bool(len(values)) and bool(np.isin(values, (0.0, 1.0)).all())


def compare(reference: Record, variant: Record, by_base: bool, n_boot: int, seed: int,
            level: float) -> tuple[dict, pd.DataFrame]:
    """Summary row (accuracies, difference with its paired bootstrap CI, relative change, flips,
    exact McNemar p when rows are independent) and the per-problem flip table."""
    frame = align(reference.scores, variant.scores, by_base)
    ref, var = frame["reference"].to_numpy(), frame["variant"].to_numpy()
    clusters = frame["base_problem_id"].tolist() if by_base else None
    diff = bootstrap.paired_difference_ci(var, ref, clusters, n_boot, seed, level)
    table = flips(frame)
    counts = table["flip"].value_counts()
    acc_ref = _pct(float(ref.mean())) if len(ref) else float("nan")
    acc_var = _pct(float(var.mean())) if len(var) else float("nan")
    independent = not by_base and _binary(ref) and _binary(var)
    row = {"model": variant.model, "metric": variant.metric, "mode": variant.mode,
           "n": diff.n, "n_clusters": diff.n_clusters, "clustered": by_base,
           "accuracy_reference": acc_ref, "accuracy_variant": acc_var,
           "difference": _pct(diff.estimate), "ci_low": _pct(diff.low), "ci_high": _pct(diff.high),
           "relative_change": (acc_var - acc_ref) / acc_ref * 100 if acc_ref else float("nan"),
           "gained": int(counts.get("gained", 0)), "lost": int(counts.get("lost", 0)),
           "p_mcnemar": bootstrap.mcnemar_exact(var, ref).p_value if independent else float("nan"),
           "p_holm": float("nan"),
           "source_reference": os.path.basename(reference.source), "source_variant": os.path.basename(variant.source)}
    return row, table
