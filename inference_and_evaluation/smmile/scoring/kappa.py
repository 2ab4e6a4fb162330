"""Agreement coefficients of 0/1 labels with their bootstrap intervals (judge reliability, the jury's majority):
percent agreement, Cohen's kappa, Fleiss' kappa (a varying number of raters per item), Pearson r. Degenerate
inputs (fewer than 2 items, one category only, zero variance) give NaN rather than an arbitrary number."""

from __future__ import annotations

import itertools

import numpy as np

from smmile.scoring.statistics import NAN, PERCENTILE, percentile_ci, statistic_interval


# -- coefficients -------------------------------------------------------------------------------------
def percent_agreement(a, b) -> float:
    a, b = np.asarray(a), np.asarray(b)
    return float((a == b).mean() * 100) if len(a) else NAN


def cohen_kappa(a, b) -> float:
    """(p_o − p_e) / (1 − p_e), p_e from each rater's own marginals; NaN when p_e = 1."""
    a, b = np.asarray(a), np.asarray(b)
    if len(a) == 0:
        return NAN
    categories = np.union1d(a, b)
    p_o = float((a == b).mean())
    p_e = float(sum((a == c).mean() * (b == c).mean() for c in categories))
    return (p_o - p_e) / (1 - p_e) if p_e < 1 else NAN


def _rated(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The items with at least 2 ratings: their counts, n_i and P_i."""
    n = counts.sum(axis=1)
    counts, n = counts[n >= 2], n[n >= 2]
    return counts, n, ((counts ** 2).sum(axis=1) - n) / (n * (n - 1))


def fleiss_kappa(counts) -> float:
    """Fleiss' kappa from an items × categories matrix of rating counts, n_i raters per item (items with
    fewer than 2 left out): P_i = (Σ_j n_ij² − n_i) / (n_i(n_i − 1)), p_j = Σ_i n_ij / Σ_i n_i,
    P_e = Σ_j p_j²; κ = (mean P_i − P_e) / (1 − P_e), the textbook formula for a constant n."""
    counts, n, p_items = _rated(np.asarray(counts, dtype=np.float64))
    if len(n) == 0:
        return NAN
    p_cat = counts.sum(axis=0) / n.sum()
    p_e = float((p_cat ** 2).sum())
    return (float(p_items.mean()) - p_e) / (1 - p_e) if p_e < 1 else NAN


# -- the same coefficients from column means (binary labels), for the bootstrap ------------------------
def cohen_from_means(means) -> np.ndarray:
    """Cohen's kappa of two 0/1 raters from the means of the columns ``[a, b, a·b]`` (…, 3): p_o = 1 − p_a −
    p_b + 2 p_ab, p_e = p_a p_b + (1 − p_a)(1 − p_b); equal to ``cohen_kappa`` on 0/1 labels, NaN at p_e = 1."""
    m = np.asarray(means, dtype=np.float64)
    pa, pb, pab = m[..., 0], m[..., 1], m[..., 2]
    p_o, p_e = 1 - pa - pb + 2 * pab, pa * pb + (1 - pa) * (1 - pb)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(p_e < 1, (p_o - p_e) / (1 - p_e), np.nan)


def fleiss_columns(counts) -> np.ndarray:
    """Per item with ≥ 2 ratings (rows of an items × [zeros, ones] count matrix): ``[P_i, ones_i, n_i]``."""
    counts, n, p_items = _rated(np.asarray(counts, dtype=np.float64).reshape(-1, 2))
    return np.column_stack([p_items, counts[:, 1], n])


def fleiss_from_means(means) -> np.ndarray:
    """Fleiss' kappa of 0/1 ratings from the means of ``fleiss_columns``: P̄ = mean P_i, p_1 = mean ones /
    mean n; equal to ``fleiss_kappa`` on the same items."""
    m = np.asarray(means, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        p1 = m[..., 1] / m[..., 2]
        p_e = p1 ** 2 + (1 - p1) ** 2
        return np.where(p_e < 1, (m[..., 0] - p_e) / (1 - p_e), np.nan)


def interval_method(*intervals) -> str:
    """How the intervals were made, named once: a percentile bootstrap, or, where every resample was equal
    (or nothing could be resampled), the bound on the units that replaces it (said as such)."""
    methods = dict.fromkeys(i.method if i.method == PERCENTILE else f"{i.method} (the resamples had no spread)"
                            for i in intervals)
    return "; ".join(methods)


def pair_agreement(a, b, clusters=None, n_boot: int = 10_000, seed: int = 0, level: float = 0.95) -> dict:
    """Two aligned 0/1 label vectors: n, percent agreement and Cohen's kappa, each with a (cluster) percentile
    bootstrap interval."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    pct = percentile_ci((a == b).astype(float), clusters, n_boot, seed, level)
    kappa = statistic_interval(np.column_stack([a, b, a * b]), cohen_from_means, clusters, n_boot, seed, level)
    return {"n": len(a), "n_clusters": pct.n_clusters, "percent": percent_agreement(a, b),
            "percent_low": pct.low * 100, "percent_high": pct.high * 100,
            "cohen_kappa": cohen_kappa(a, b), "kappa_low": kappa.low, "kappa_high": kappa.high,
            "interval": interval_method(pct, kappa)}


def fleiss_agreement(counts, clusters=None, n_boot: int = 10_000, seed: int = 0, level: float = 0.95) -> dict:
    """Fleiss' kappa of an items × [zeros, ones] matrix with a (cluster) bootstrap interval; ``clusters``: one
    label per row of ``counts`` (rows with fewer than 2 ratings are left out, with their labels)."""
    counts = np.asarray(counts, dtype=np.float64).reshape(-1, 2)
    keep = counts.sum(axis=1) >= 2
    kept = None if clusters is None else [c for c, k in zip(clusters, keep) if k]
    kappa = statistic_interval(fleiss_columns(counts), fleiss_from_means, kept, n_boot, seed, level)
    return {"n": int(keep.sum()), "n_clusters": kappa.n_clusters, "fleiss_kappa": fleiss_kappa(counts),
            "kappa_low": kappa.low, "kappa_high": kappa.high, "interval": interval_method(kappa)}


def pearson(x, y) -> float:
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if len(x) < 2 or x.std() == 0 or y.std() == 0:
        return NAN
    return float(np.corrcoef(x, y)[0, 1])


def pairwise_percent(labels: list) -> float:
    """Share of agreeing rater pairs of one item, in percent."""
    pairs = list(itertools.combinations(labels, 2))
    return sum(a == b for a, b in pairs) / len(pairs) * 100 if pairs else NAN


def majority(labels) -> float:
    """The majority label of one item; NaN on a tie."""
    ones, total = int(np.sum(labels)), len(labels)
    return 1.0 if 2 * ones > total else 0.0 if 2 * ones < total else NAN
