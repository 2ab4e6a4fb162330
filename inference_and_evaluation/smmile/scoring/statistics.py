"""Bootstrap statistics for 0/1 correctness vectors.

Two families live here:

* ``legacy_bootstrap`` — the original ``variance_analysis.py`` statistic (spec §7.2 step 5): 1000
  resamples drawn with numpy's *legacy global* RNG, reported as (mean of the resampled accuracies,
  population std of them), both in percent. It is vectorised but consumes exactly the same random
  numbers as the original per-resample loop, so it reproduces its output bit for bit.
* The estimates and paired comparisons of ``smmile stats`` / ``smmile analyze`` (issue #20): one
  estimand per number, with an interval and a test that cannot disagree.

  - ``proportion_interval``: an accuracy (row-weighted: every SMMILE++ order counts, as in the paper's
    tables; or ``weight="problem"``: the mean of the base problems' accuracies) with the Wilson score
    interval on the effective sample size — the design effect comes from the intraclass correlation
    (``icc_anova``) of the rows within base problems. Wilson never collapses at 0 % or 100 %.
  - ``paired_score``: a paired difference of the same weighting, tested by the cluster score test
    X²(δ) = (Σ_k w_k(d̄_k − δ))² / Σ_k w_k²(d̄_k − δ)² on χ²₁ (w_k = n_k rows of base problem k for the
    row-weighted difference; w_k = 1 gives exactly the cluster-adjusted McNemar of Durkalski et al.
    2003). The interval is the set of δ the test does not reject (a closed-form quadratic), so
    ``p < 1 − level`` exactly when the interval excludes 0. With one row per cluster and 0/1 scores
    X²(0) is McNemar's (b − c)²/(b + c).

* Seeded bootstrap helpers kept for the strata (``percentile_ci``), the bootstrap standard errors
  beside the intervals (``bootstrap_se``) and ``paired_difference_ci``; the exact McNemar test, Holm
  (``holm``) and ``wilson_interval``.

All seeded functions take an explicit seed and never touch numpy's global RNG. No interval has zero
width for n >= 1: with no spread to measure (one unit, every unit alike) an interval is the Wilson
bound on the units (``bound_interval``).
"""

from __future__ import annotations

import math
import re
from statistics import NormalDist
from dataclasses import dataclass, asdict
from typing import Sequence

import numpy as np

LEGACY_N_BOOT = 1000
DEFAULT_N_BOOT = 10_000
DEFAULT_LEVEL = 0.95
_CHUNK_ELEMENTS = 4_000_000  # at most this many indices are materialised at once
_MAX_CATEGORIES = 64  # data with at most this many distinct values uses the multinomial shortcut
_PERM_SUFFIX = re.compile(r"_perm_\d+$")


# -- faithful variance_analysis bootstrap -----------------------------------------------------------
def legacy_bootstrap(values: Sequence, n_boot: int = LEGACY_N_BOOT, rng=None) -> tuple[float, float]:
    """The original's ``bootstrap_accuracy`` (spec §7.2 step 5), vectorised.

    The original ran ``n_boot`` times ``idx = np.random.choice(n, n, replace=True)`` and took
    ``np.mean(values[idx]) * 100``; it returned the mean of those accuracies and their population
    standard deviation (``np.std``, ddof=0). A legacy ``choice(n, size=(k, n))`` draws the same
    numbers, in the same order, as ``k`` successive ``choice(n, n)`` calls (checked by
    ``tests/test_stats_bootstrap.py``), so drawing the indices in chunks of rows consumes the random
    stream identically. ``rng`` is a ``np.random.RandomState`` or ``None`` for numpy's global
    legacy RNG (what the original used, seeded once with 42).

    Returns (bootstrap mean %, bootstrap std %). ``n == 0`` gives (nan, nan) and draws nothing,
    as the original did (``choice(0, 0)`` consumes no numbers; the mean of nothing is nan).
    """
    rng = np.random if rng is None else rng
    data = np.asarray(values)
    n = len(data)
    if n == 0:
        return float("nan"), float("nan")
    accuracies = np.empty(n_boot, dtype=np.float64)
    rows = max(1, _CHUNK_ELEMENTS // n)
    for start in range(0, n_boot, rows):
        stop = min(n_boot, start + rows)
        idx = rng.choice(n, size=(stop - start, n), replace=True)
        accuracies[start:stop] = data[idx].mean(axis=1) * 100
    return float(np.mean(accuracies)), float(np.std(accuracies))


def legacy_bootstrap_loop(values: Sequence, n_boot: int = LEGACY_N_BOOT, rng=None) -> tuple[float, float]:
    """Reference implementation: the original per-resample Python loop (slow; for tests/benchmarks)."""
    rng = np.random if rng is None else rng
    data = np.asarray(values)
    n = len(data)
    if n == 0:
        return float("nan"), float("nan")
    accuracies = []
    for _ in range(n_boot):
        idx = rng.choice(n, n, replace=True)
        accuracies.append(np.mean(data[idx]) * 100)
    return float(np.mean(accuracies)), float(np.std(accuracies))


def mean_only(values: Sequence) -> float:
    """``--mean_only``: plain accuracy in percent (no RNG used); nan for an empty list."""
    data = np.asarray(values, dtype=np.float64)
    return float(data.mean() * 100) if len(data) else float("nan")


# -- modern percentile bootstrap ----------------------------------------------------------------------
PERCENTILE = "percentile bootstrap"
BOUND = "Wilson bound"
PROPORTION = (0.0, 1.0)  # range of a per-problem score
DIFFERENCE = (-1.0, 1.0)  # range of a paired difference of two scores


@dataclass(frozen=True)
class Interval:
    """A point estimate with a confidence interval and standard error.

    ``estimate`` is the plain sample mean (not the bootstrap mean). ``method`` says how the interval
    was made: ``percentile bootstrap`` — the (1-level)/2 and (1+level)/2 quantiles of the bootstrap
    distribution, ``se`` its standard deviation (ddof=1); ``Wilson bound`` — the bootstrap had nothing
    to resample (see ``bound_interval``), ``se`` is nan. ``n`` counts observations, ``n_clusters`` the
    resampling units (= n without clustering). n = 0 gives nan throughout.
    """

    estimate: float
    low: float
    high: float
    se: float
    n: int
    n_clusters: int
    level: float
    n_boot: int
    method: str = PERCENTILE
    n_eff: float = float("nan")  # effective sample size (Wilson intervals)
    icc: float = float("nan")  # intraclass correlation used for the design effect

    def as_dict(self) -> dict:
        return asdict(self)


Z95 = 1.959963984540054  # the 0.975 normal quantile, to the last digit (NormalDist gives ...536)


def z_value(level: float = DEFAULT_LEVEL) -> float:
    """Two-sided standard normal quantile for ``level``."""
    return Z95 if level == 0.95 else NormalDist().inv_cdf((1 + level) / 2)


def wilson_interval(p_hat: float, n: float, level: float = DEFAULT_LEVEL) -> tuple[float, float]:
    """Wilson score interval for a proportion ``p_hat`` observed on ``n`` units; (0, 1) for n = 0."""
    if n <= 0:
        return (0.0, 1.0)
    z = z_value(level)
    denom = 1 + z * z / n
    centre = (p_hat + z * z / (2 * n)) / denom
    half = z * math.sqrt(max(0.0, p_hat * (1 - p_hat)) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def wilson_cc_interval(p_hat: float, n: float, level: float = DEFAULT_LEVEL) -> tuple[float, float]:
    """Wilson score interval with continuity correction (Newcombe 1998, Stat Med 17:857, method 4) for a
    proportion ``p_hat`` on ``n`` (possibly effective, fractional) units; (0, 1) for n <= 0. At p̂ = 0
    (p̂ = 1) the lower (upper) end is 0 (1)."""
    if n <= 0:
        return (0.0, 1.0)
    z = z_value(level)
    z2, denom = z * z, 2 * (n + z * z)
    low = 0.0 if p_hat <= 0 else (2 * n * p_hat + z2 - 1 - z * math.sqrt(
        max(0.0, z2 - 2 - 1 / n + 4 * p_hat * (n * (1 - p_hat) + 1)))) / denom
    high = 1.0 if p_hat >= 1 else (2 * n * p_hat + z2 + 1 + z * math.sqrt(
        max(0.0, z2 + 2 - 1 / n + 4 * p_hat * (n * (1 - p_hat) - 1)))) / denom
    return (max(0.0, low), min(1.0, high))


def bound_interval(estimate: float, units: int, value_range: tuple[float, float] = PROPORTION,
                   level: float = DEFAULT_LEVEL) -> tuple[float, float]:
    """The interval used when every resampling unit has the same mean (or there is only one unit).

    Seeing no unit differ from ``estimate`` among ``units`` units, the share of units that could
    differ is at most u = z²/(units + z²), the upper Wilson bound for 0 events in ``units`` trials;
    such a unit could lie anywhere in ``value_range``. Hence
    [estimate − u·(estimate − lo), estimate + u·(hi − estimate)]. For a proportion at 0 % or 100 %
    this is exactly the Wilson interval on the units (0/111 → [0, 3.35 %]; one base problem → [0, 79.3 %]);
    for a paired difference of identical vectors it is ±u.
    """
    z = z_value(level)
    share = z * z / (units + z * z)
    low, high = value_range
    return (estimate - share * (estimate - low), estimate + share * (high - estimate))


def base_problem_ids(problem_ids: Sequence[str]) -> list[str]:
    """SMMILE++ rows ``<uuid>_perm_<k>`` are permutations of one base problem: strip ``_perm_<k>``."""
    return [_PERM_SUFFIX.sub("", str(pid)) for pid in problem_ids]


def has_permutations(problem_ids: Sequence[str]) -> bool:
    """True if any id carries a ``_perm_<k>`` suffix (i.e. the rows come in clusters)."""
    return any(_PERM_SUFFIX.search(str(pid)) for pid in problem_ids)


def _cluster_totals(values: np.ndarray, clusters: Sequence | None) -> tuple[np.ndarray, np.ndarray]:
    """Per resampling unit: (sum of values, number of rows). Without clusters every row is a unit."""
    if clusters is None:
        return values, np.ones(len(values))
    _, codes = np.unique(np.asarray(clusters, dtype=object).astype(str), return_inverse=True)
    sums = np.bincount(codes, weights=values)
    sizes = np.bincount(codes).astype(np.float64)
    return sums, sizes


def _boot_means_iid(values: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Means of ``n_boot`` iid resamples of ``values``.

    For discrete data (e.g. 0/1 or differences in {-1, 0, 1}) a resample is fully described by how
    often each distinct value was drawn, which is multinomial(n, observed frequencies): drawing those
    counts gives the *same distribution* of resampled means at O(n_boot × categories) cost.
    Otherwise indices are drawn in chunks.
    """
    n = len(values)
    levels, counts = np.unique(values, return_counts=True)
    if len(levels) <= _MAX_CATEGORIES:
        draws = rng.multinomial(n, counts / n, size=n_boot)
        return draws @ levels / n
    out = np.empty(n_boot)
    rows = max(1, _CHUNK_ELEMENTS // n)
    for start in range(0, n_boot, rows):
        stop = min(n_boot, start + rows)
        out[start:stop] = values[rng.integers(0, n, size=(stop - start, n))].mean(axis=1)
    return out


def _boot_means_clustered(sums: np.ndarray, sizes: np.ndarray, n_boot: int,
                          rng: np.random.Generator) -> np.ndarray:
    """Cluster bootstrap: draw whole clusters with replacement; mean = Σ sums / Σ sizes. ``sums`` may be
    clusters × k (k columns resampled together: one draw of clusters per replicate); the result is then
    n_boot × k."""
    g = len(sums)
    out = np.empty((n_boot,) + sums.shape[1:])
    rows = max(1, _CHUNK_ELEMENTS // sums.size)
    for start in range(0, n_boot, rows):
        stop = min(n_boot, start + rows)
        idx = rng.integers(0, g, size=(stop - start, g))
        out[start:stop] = sums[idx].sum(axis=1) / sizes[idx].sum(axis=1).reshape((-1,) + (1,) * (sums.ndim - 1))
    return out


def bootstrap_means(values: Sequence[float], clusters: Sequence | None = None,
                    n_boot: int = DEFAULT_N_BOOT, seed: int = 0) -> np.ndarray:
    """``n_boot`` bootstrap replicates of the mean of ``values`` (iid, or by ``clusters``)."""
    data = np.asarray(values, dtype=np.float64)
    rng = np.random.default_rng(seed)
    if clusters is None:
        return _boot_means_iid(data, n_boot, rng)
    sums, sizes = _cluster_totals(data, clusters)
    return _boot_means_clustered(sums, sizes, n_boot, rng)


def percentile_ci(values: Sequence[float], clusters: Sequence | None = None,
                  n_boot: int = DEFAULT_N_BOOT, seed: int = 0, level: float = DEFAULT_LEVEL,
                  value_range: tuple[float, float] = PROPORTION) -> Interval:
    """Mean of ``values`` with a seeded percentile bootstrap interval.

    ``clusters`` (one label per value, e.g. ``base_problem_ids(ids)``) switches to the cluster
    bootstrap: whole clusters are resampled, which keeps correlated rows (the permutations of one
    SMMILE++ problem) together and gives honest, usually wider, intervals. Values are used as given
    (0/1 → a proportion; multiply by 100 yourself for percent). When the bootstrap distribution has
    no spread (one unit, or all units with the same mean) the interval is ``bound_interval`` on the
    units, with ``value_range`` the range a value can take.
    """
    data = np.asarray(values, dtype=np.float64)
    n = len(data)
    units = n if clusters is None else len(set(map(str, clusters)))
    if n == 0:
        nan = float("nan")
        return Interval(nan, nan, nan, nan, 0, 0, level, n_boot, BOUND)
    estimate = float(data.mean())
    if units >= 2:
        boots = bootstrap_means(data, clusters, n_boot, seed)
        alpha = (1 - level) / 2
        low, high = np.quantile(boots, [alpha, 1 - alpha])
        if high > low:
            se = float(np.std(boots, ddof=1)) if n_boot > 1 else float("nan")
            return Interval(estimate, float(low), float(high), se, n, units, level, n_boot)
    low, high = bound_interval(estimate, units, value_range, level)
    return Interval(estimate, low, high, float("nan"), n, units, level, n_boot, BOUND)


def statistic_interval(columns, statistic, clusters: Sequence | None = None, n_boot: int = DEFAULT_N_BOOT,
                       seed: int = 0, level: float = DEFAULT_LEVEL,
                       value_range: tuple[float, float] = DIFFERENCE) -> Interval:
    """A statistic of the column means of an n × k array (e.g. Cohen's or Fleiss' kappa from the means of
    per-item indicators), with a seeded percentile bootstrap interval: rows (or whole ``clusters``, as in
    ``percentile_ci``) are drawn once per replicate for all columns together. ``statistic`` maps a
    (..., k) array of means to (...) values; replicates where it is NaN are left out. A NaN estimate gives
    NaN bounds; no spread (or one unit) gives ``bound_interval`` on the units within ``value_range``."""
    data = np.asarray(columns, dtype=np.float64).reshape(len(columns), -1)
    nan = float("nan")
    n = len(data)
    estimate = float(statistic(data.mean(axis=0))) if n else nan
    labels = np.arange(n) if clusters is None else np.asarray(clusters, dtype=object).astype(str)
    _, codes = np.unique(labels, return_inverse=True)
    units = int(codes.max()) + 1 if n else 0
    if math.isnan(estimate):
        return Interval(estimate, nan, nan, nan, n, units, level, n_boot, PERCENTILE)
    if units >= 2:
        sums = np.stack([np.bincount(codes, weights=column) for column in data.T], axis=1)
        boots = statistic(_boot_means_clustered(sums, np.bincount(codes).astype(np.float64), n_boot,
                                                np.random.default_rng(seed)))
        boots = boots[~np.isnan(boots)]
        if len(boots):
            alpha = (1 - level) / 2
            low, high = np.quantile(boots, [alpha, 1 - alpha])
            if high > low:
                se = float(np.std(boots, ddof=1)) if len(boots) > 1 else nan
                return Interval(estimate, float(low), float(high), se, n, units, level, n_boot)
    low, high = bound_interval(estimate, units, value_range, level)
    return Interval(estimate, low, high, nan, n, units, level, n_boot, BOUND)


def paired_difference_ci(a: Sequence[float], b: Sequence[float], clusters: Sequence | None = None,
                         n_boot: int = DEFAULT_N_BOOT, seed: int = 0,
                         level: float = DEFAULT_LEVEL) -> Interval:
    """Mean of ``a - b`` for two ALIGNED vectors (same problems, same order), with a paired bootstrap.

    Resampling the per-problem differences (rather than each vector separately) keeps the pairing,
    so the problem-to-problem variation common to both systems cancels. ``clusters`` resamples whole
    base problems, as in ``percentile_ci``. Scores lie in [0, 1], so differences lie in [-1, 1].
    """
    left = np.asarray(a, dtype=np.float64)
    right = np.asarray(b, dtype=np.float64)
    if left.shape != right.shape:
        raise ValueError(f"paired vectors differ in length: {len(left)} vs {len(right)}")
    return percentile_ci(left - right, clusters, n_boot, seed, level, DIFFERENCE)


# -- tests -------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class McNemar:
    """Exact McNemar test: ``b`` = pairs where only A is right, ``c`` = only B is right."""

    b: int
    c: int
    p_value: float


def mcnemar_exact(a: Sequence, b: Sequence) -> McNemar:
    """Exact (binomial) McNemar test for two aligned 0/1 vectors.

    Only discordant pairs carry information about a difference; under H0 (equal accuracy) each of the
    ``b + c`` discordant pairs falls either way with probability 1/2, so
    p = min(1, 2 · P[Binomial(b + c, 1/2) ≤ min(b, c)]) (two-sided). No discordant pairs → p = 1.
    Computed with exact integer arithmetic.
    """
    left = np.asarray(a, dtype=np.float64)
    right = np.asarray(b, dtype=np.float64)
    if left.shape != right.shape:
        raise ValueError(f"paired vectors differ in length: {len(left)} vs {len(right)}")
    if not (_binary(left) and _binary(right)):
        raise ValueError("McNemar needs 0/1 vectors")
    only_a, only_b = _discordant(left, right)
    return McNemar(only_a, only_b, binomial_two_sided(only_a, only_b))


def _binary(values: np.ndarray) -> bool:
    return bool(np.isin(values, (0.0, 1.0)).all())


def _discordant(left: np.ndarray, right: np.ndarray) -> tuple[int, int]:
    """Pairs of two 0/1 vectors right only under A, and right only under B."""
    return int(((left == 1) & (right == 0)).sum()), int(((left == 0) & (right == 1)).sum())


def binomial_two_sided(b: int, c: int) -> float:
    """2 · P[Binomial(b + c, 1/2) ≤ min(b, c)], capped at 1 (1 when b + c = 0)."""
    m = b + c
    if m == 0:
        return 1.0
    tail = sum(math.comb(m, k) for k in range(min(b, c) + 1))
    return min(1.0, 2 * tail / 2**m)


EXACT_MCNEMAR = "exact McNemar"
DURKALSKI = "cluster-adjusted McNemar (Durkalski 2003)"


def durkalski_mcnemar(a: Sequence[float], b: Sequence[float], clusters: Sequence) -> float:
    """Two-sided p-value of the cluster-adjusted McNemar test for clustered matched pairs.

    Durkalski VL, Palesch YY, Lipsitz SR, Rust PF (2003). Analysis of clustered matched-pair data.
    Statistics in Medicine 22(15):2417-2428. Cluster k has n_k pairs, b_k (c_k) of them right only
    under A (only under B); with d_k = (b_k − c_k)/n_k,
    X² = (Σ_k d_k)² / Σ_k d_k², referred to χ² with 1 degree of freedom. Each cluster weighs the same
    (its own proportion of discordance). d_k is the cluster's mean of a − b, which is how it is computed
    here, so a fractional score enters with its weight. With one row per cluster X² is the classic
    McNemar (b − c)²/(b + c). No discordance at all gives p = 1.
    """
    left = np.asarray(a, dtype=np.float64)
    right = np.asarray(b, dtype=np.float64)
    if left.shape != right.shape or len(left) != len(clusters):
        raise ValueError("paired vectors and clusters differ in length")
    sums, sizes = _cluster_totals(left - right, clusters)
    means = sums / sizes
    denominator = float(np.sum(means ** 2))
    if denominator == 0:
        return 1.0
    statistic = float(np.sum(means)) ** 2 / denominator
    return math.erfc(math.sqrt(statistic / 2))  # P(χ²₁ ≥ X²)


@dataclass(frozen=True)
class PairedTest:
    """A paired test of A vs B: p-value, which test gave it, discordant pairs (0/1 rows only)."""

    p_value: float
    method: str
    only_a: int | None
    only_b: int | None


def paired_test(a: Sequence[float], b: Sequence[float], clusters: Sequence | None = None) -> PairedTest:
    """The one paired test of the package.

    Independent rows (``clusters`` None) with 0/1 scores: the exact McNemar test. Rows in clusters
    (SMMILE++ permutations of one base problem), or fractional scores: the cluster-adjusted McNemar of
    Durkalski et al. (2003), with every row its own cluster when ``clusters`` is None. No rows: nan.
    """
    left = np.asarray(a, dtype=np.float64)
    right = np.asarray(b, dtype=np.float64)
    if left.shape != right.shape:
        raise ValueError(f"paired vectors differ in length: {len(left)} vs {len(right)}")
    if len(left) == 0:
        return PairedTest(float("nan"), DURKALSKI if clusters is not None else EXACT_MCNEMAR, 0, 0)
    binary = _binary(left) and _binary(right)
    if clusters is None and binary:
        exact = mcnemar_exact(left, right)
        return PairedTest(exact.p_value, EXACT_MCNEMAR, exact.b, exact.c)
    only_a, only_b = _discordant(left, right) if binary else (None, None)
    labels = clusters if clusters is not None else np.arange(len(left))
    return PairedTest(durkalski_mcnemar(left, right, labels), DURKALSKI, only_a, only_b)


# -- one estimand, one interval, one test (issue #20) ---------------------------------------------------
WEIGHTS = ("row", "problem")
WILSON = "Wilson score, continuity-corrected"
WILSON_DEFF = "Wilson score, continuity-corrected, on the effective sample size (design effect from the ICC)"
SCORE_ROW = "cluster score test, row-weighted (weights n_k; Obuchowski 1998 estimand)"
SCORE_PROBLEM = DURKALSKI
SCORE_IID = "McNemar score test (asymptotic)"
SCORE_INTERVAL = "inverted score test"
ESTIMANDS = {"row": "row-weighted (every row, i.e. every SMMILE++ order, counts once)",
             "problem": "base-problem-weighted (mean of the base problems' own values)"}


def _groups(values: np.ndarray, clusters: Sequence | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per cluster: (mean, size) and each row's cluster code; every row its own cluster when None."""
    if clusters is None:
        return values.astype(np.float64), np.ones(len(values)), np.arange(len(values))
    _, codes = np.unique(np.asarray(clusters, dtype=object).astype(str), return_inverse=True)
    sizes = np.bincount(codes).astype(np.float64)
    return np.bincount(codes, weights=values) / sizes, sizes, codes


def cluster_weights(sizes: np.ndarray, weight: str = "row") -> np.ndarray:
    """w_k of each cluster: its number of rows (``row``) or 1 (``problem``)."""
    if weight not in WEIGHTS:
        raise ValueError(f"weight must be one of {WEIGHTS}, not {weight!r}")
    return np.asarray(sizes, dtype=np.float64) if weight == "row" else np.ones(len(sizes))


def icc_anova(values: Sequence[float], clusters: Sequence) -> float:
    """One-way ANOVA intraclass correlation for unequal cluster sizes (Donner 1986):
    ρ = (MSB − MSW) / (MSB + (n₀ − 1)·MSW), n₀ = (N − Σn_k²/N)/(K − 1). nan when undefined (fewer
    than two clusters, no cluster with two rows, or no variation at all). Not clipped."""
    data = np.asarray(values, dtype=np.float64)
    means, sizes, codes = _groups(data, clusters)
    n, k = len(data), len(sizes)
    if k < 2 or n - k < 1:
        return float("nan")
    grand = data.mean()
    msb = float(np.sum(sizes * (means - grand) ** 2)) / (k - 1)
    msw = float(np.sum((data - means[codes]) ** 2)) / (n - k)
    n0 = (n - float(np.sum(sizes ** 2)) / n) / (k - 1)
    denominator = msb + (n0 - 1) * msw
    return (msb - msw) / denominator if denominator > 0 else float("nan")


def effective_n(sizes: np.ndarray, weights: np.ndarray, rho: float) -> float:
    """Sample size of independent rows with the variance of Σ w_k ȳ_k / Σ w_k when rows of one cluster
    correlate with ρ: 1 / Σ_k (w_k/W)² (1 + (n_k − 1)ρ) / n_k. Row weights: N / (1 + ρ(Σn_k²/N − 1)),
    the classic design effect; ρ = 1, problem weights: K."""
    share = weights / weights.sum()
    return float(1.0 / np.sum(share ** 2 * (1 + (sizes - 1) * rho) / sizes))


def proportion_interval(values: Sequence[float], clusters: Sequence | None = None, weight: str = "row",
                        level: float = DEFAULT_LEVEL) -> Interval:
    """A proportion (mean of scores in [0, 1]) with the continuity-corrected Wilson interval
    (``wilson_cc_interval``) on the effective sample size.

    ``weight="row"``: every row counts once; ``"problem"``: every cluster (base problem) counts once.
    The design effect uses the ANOVA intraclass correlation (``icc_anova``) clipped to [0, 1]. When it
    is undefined because every row has the same value (0 %, 100 %) the effective size is the number of
    clusters K and the interval the plain Wilson one: under any correlation the chance of seeing no
    success in K clusters is at most (1 − p)^K, so Wilson on K keeps its coverage (0 of 86 base problems
    → [0, 4.28 %]; 0 of 111 problems → [0, 3.35 %], close to Clopper–Pearson's 3.27 %). Without clusters
    (independent rows) n_eff = n. The continuity correction is what keeps the coverage at ≥ 93 % for
    accuracies of 0.5-50 % on SMMILE++-shaped data (``scripts/coverage_simulation.py``; the plain
    Wilson interval on the estimated n_eff covers 89-93 % at 2-5 %, because the ICC is underestimated
    when few rows are right). ``se`` is √(p̂(1 − p̂)/n_eff).
    """
    data = np.asarray(values, dtype=np.float64)
    n = len(data)
    if n == 0:
        nan = float("nan")
        return Interval(nan, nan, nan, nan, 0, 0, level, 0, WILSON)
    means, sizes, _ = _groups(data, clusters)
    weights = cluster_weights(sizes, weight)
    estimate = float(np.sum(weights * means) / weights.sum())
    k = len(sizes)
    if clusters is None or bool(np.all(sizes == 1)):
        rho, n_eff, method = float("nan"), effective_n(sizes, weights, 0.0), WILSON
    else:
        rho = icc_anova(data, clusters)
        method = WILSON_DEFF
        if math.isnan(rho):
            n_eff = float(k) if np.ptp(data) == 0 else effective_n(sizes, weights, 1.0)
        elif np.ptp(data) == 0:
            n_eff = float(k)
        else:
            rho = min(1.0, max(0.0, rho))
            n_eff = effective_n(sizes, weights, rho)
    boundary = estimate <= 0 or estimate >= 1
    low, high = (wilson_interval if boundary else wilson_cc_interval)(estimate, n_eff, level)
    se = math.sqrt(max(0.0, estimate * (1 - estimate)) / n_eff)
    return Interval(estimate, low, high, se, n, k, level, 0, method, n_eff, rho)


@dataclass(frozen=True)
class PairedScore:
    """A paired difference A − B with its score interval and test (``paired_score``)."""

    interval: Interval
    p_value: float
    method: str
    statistic: float
    only_a: int | None
    only_b: int | None


def paired_score(a: Sequence[float], b: Sequence[float], clusters: Sequence | None = None, weight: str = "row",
                 level: float = DEFAULT_LEVEL) -> PairedScore:
    """The paired comparison of the package: estimand, interval and test of one weighting.

    d = a − b per row, d̄_k its mean in cluster k (base problem; every row when ``clusters`` is None),
    w_k = n_k (``row``) or 1 (``problem``), D = Σ w_k d̄_k / Σ w_k. The score statistic for H: D = δ is
    X²(δ) = (Σ_k w_k(d̄_k − δ))² / Σ_k w_k²(d̄_k − δ)², on χ²₁ (its variance is estimated under H, like
    Wilson's). With w_k = 1 it is the cluster-adjusted McNemar of Durkalski et al. (2003); with
    w_k = n_k it tests the row-weighted difference the tables report (the clustered ratio estimator of
    Obuchowski 1998, with the variance taken under H). The p-value is X²(0)'s; the interval is
    {δ : X²(δ) ≤ z²}, which with t = D − δ, W = Σw_k, M = Σw_k², SS = Σw_k²(d̄_k − D)²,
    C = Σw_k²(d̄_k − D) is (W² − z²M)t² − 2z²Ct − z²SS ≤ 0: a closed interval around D whenever
    W² > z²M (more than z² effective clusters), else the whole range [−1, 1]. Therefore p < 1 − level
    exactly when the interval excludes 0. No spread at all (every cluster with the same d̄): the
    interval is ``bound_interval`` on the K clusters. ``se`` is the centred cluster-robust standard
    error √(K/(K−1)·SS)/W. ``only_a``/``only_b`` count discordant rows of 0/1 scores."""
    left = np.asarray(a, dtype=np.float64)
    right = np.asarray(b, dtype=np.float64)
    if left.shape != right.shape or (clusters is not None and len(clusters) != len(left)):
        raise ValueError(f"paired vectors differ in length: {len(left)} vs {len(right)}")
    method = SCORE_PROBLEM if (weight == "problem" and clusters is not None) else (
        SCORE_ROW if clusters is not None else SCORE_IID)
    binary = _binary(left) and _binary(right)
    only_a, only_b = _discordant(left, right) if binary else (None, None)
    nan = float("nan")
    if len(left) == 0:
        return PairedScore(Interval(nan, nan, nan, nan, 0, 0, level, 0, SCORE_INTERVAL), nan, method, nan, 0, 0)
    means, sizes, _ = _groups(left - right, clusters)
    w = cluster_weights(sizes, weight)
    k, big_w, m = len(means), float(w.sum()), float(np.sum(w ** 2))
    estimate = float(np.sum(w * means) / big_w)
    resid = means - estimate
    ss, c = float(np.sum(w ** 2 * resid ** 2)), float(np.sum(w ** 2 * resid))
    denominator0 = float(np.sum((w * means) ** 2))
    statistic = float(np.sum(w * means)) ** 2 / denominator0 if denominator0 > 0 else 0.0
    p_value = math.erfc(math.sqrt(statistic / 2)) if denominator0 > 0 else 1.0
    se = math.sqrt(k / (k - 1) * ss) / big_w if k > 1 else nan
    z = z_value(level)
    quad = big_w ** 2 - z * z * m
    if ss == 0:
        low, high = bound_interval(estimate, k, DIFFERENCE, level)
    elif quad <= 0:
        low, high = DIFFERENCE
    else:
        root = math.sqrt((z * z * c) ** 2 + quad * z * z * ss)
        t_low, t_high = (z * z * c - root) / quad, (z * z * c + root) / quad
        low, high = max(-1.0, estimate - t_high), min(1.0, estimate - t_low)
    interval = Interval(estimate, low, high, se, len(left), k, level, 0, SCORE_INTERVAL)
    return PairedScore(interval, p_value, method, statistic, only_a, only_b)


def bootstrap_se(values: Sequence[float], clusters: Sequence | None = None, weight: str = "row",
                 n_boot: int = DEFAULT_N_BOOT, seed: int = 0) -> float:
    """Seeded (cluster) bootstrap standard error of the ``weight``-ed mean of ``values`` — a
    cross-check of the analytic intervals' width, not used for them. nan for fewer than two units."""
    data = np.asarray(values, dtype=np.float64)
    if clusters is not None and weight == "problem":
        data, clusters = _groups(data, clusters)[0], None
    units = len(data) if clusters is None else len(set(map(str, clusters)))
    if units < 2 or n_boot < 2:
        return float("nan")
    return float(np.std(bootstrap_means(data, clusters, n_boot, seed), ddof=1))


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm step-down adjusted p-values (family-wise error control, any dependence).

    Sort the m p-values ascending; the i-th smallest (i = 0..m-1) is multiplied by (m - i), then a
    running maximum keeps the adjusted values monotone, and they are capped at 1. NaN entries are
    left as NaN and not counted in m.
    """
    p = np.asarray(p_values, dtype=np.float64)
    adjusted = np.full(len(p), np.nan)
    valid = np.flatnonzero(~np.isnan(p))
    m = len(valid)
    order = valid[np.argsort(p[valid], kind="stable")]
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[index]))
        adjusted[index] = running
    return adjusted.tolist()


def is_significant(p_adjusted: float | None, low: float, high: float, alpha: float) -> bool:
    """A comparison is significant when its adjusted p is below ``alpha`` AND its own interval
    excludes 0 (a test and an interval that disagree — possible, they are different procedures —
    never make a claim)."""
    if p_adjusted is None or math.isnan(p_adjusted) or math.isnan(low) or math.isnan(high):
        return False
    return p_adjusted < alpha and (low > 0 or high < 0)
