"""Randomisation inference on paired differences at the base-problem level (issue #31).

A comparison is, per resampling unit k (a SMMILE++ base problem, or a SMMILE problem), v_k = w_k·d̄_k: d̄_k the
mean of A − B over the unit's rows, w_k its weight (rows, or 1). Its statistic is t = Σ v_k / √(Σ v_k²) (the
root of the cluster score statistic; Σ v_k² does not change when signs flip). Under H: A and B exchangeable
within every unit (each unit's vector of differences over the comparisons symmetric about 0, units independent)
the 2^K sign patterns s give equally likely t(s) = Σ s_k v_k / √(Σ v_k²): the sign-flip test (Fisher 1935;
Good 2005 §3). Its p is Lancaster's (1961) mid-p, P(|t(s)| > |t|) + ½·P(|t(s)| = |t|) (``mid=False``: the
conventional P(|t(s)| ≥ |t|), kept as ``p_exact``): with a handful of discordant units the conventional p moves
in steps of 2/2^K and its test rejects far less often than alpha (size 0.002–0.033 in the rare-event null cells
of scripts/coverage_simulation.py, mid-p 0.003–0.049); the mid-p is the mean of the randomised (fuzzy) p-value,
which has size exactly alpha, without its coin (Hirji 2006, §2.8; Fagerland, Lydersen & Laake 2013 for McNemar's).
Units with v_k = 0 in every comparison change nothing and are left out, so patterns are
enumerated exactly up to ``EXACT_MAX`` units and drawn (seeded Monte Carlo, the observed pattern counted once,
Phipson & Smyth 2010) beyond.

A family of comparisons that share units flips every unit's sign in all of them at once, which keeps their
dependence: Westfall & Young's (1993, Algorithm 2.8) step-down minP gives adjusted p-values (max-T on the
comparisons' own sign-flip p-values, so a comparison whose null distribution is short and discrete, as with 11
base problems all favouring one side, is not swamped by smooth ones; with mid-p, the adjusted p is the mid-p of
the minimum too); ``holm`` applies Holm to the p-values instead. The interval of a comparison is D ± c·se₀,
se₀ = √(Σ v_k²)/W (so D/se₀ = t), c the largest |t| of the comparison's own null whose p reaches the p threshold
of the step at which it was tested (the
first step not rejected for the rest): it excludes 0 exactly when the adjusted p < alpha. At the first step it
is the single-step simultaneous interval (Westfall & Young 1993 §2.7); later steps' intervals agree with the
step-down decisions but are narrower than simultaneous ones. ``marginal``: c of the comparison alone at alpha.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

EXACT_MAX = 20  # at most 2^20 patterns are enumerated
DEFAULT_N_FLIPS = 100_000
ADJUSTMENTS = ("minP", "holm")
ADJUSTMENT_NAMES = {"minP": "Westfall-Young step-down minP (max-T on the sign-flip mid-p-values)",
                    "holm": "Holm on the sign-flip mid-p-values"}
_CHUNK = 1 << 15  # patterns drawn at once (fixed: the draws do not depend on the family's size)
_CELLS = 1 << 21  # at most this many statistics are held at once per array
_DIGITS = 10  # statistics are rounded so that equal sums tie exactly


@dataclass(frozen=True)
class Units:
    """One comparison's resampling units: labels and v_k = w_k·d̄_k; ``total_weight`` W."""

    labels: tuple[str, ...]
    values: np.ndarray
    total_weight: float

    @property
    def statistic(self) -> float:
        norm = math.sqrt(float(np.sum(self.values ** 2)))
        return round(float(np.sum(self.values)) / norm, _DIGITS) if norm > 0 else 0.0

    @property
    def se0(self) -> float:
        """√(Σ v_k²)/W: the null standard error of D = Σ v_k / W."""
        return math.sqrt(float(np.sum(self.values ** 2))) / self.total_weight if self.total_weight else math.nan


def units(diff: Sequence[float], labels: Sequence, weight: str = "row") -> Units:
    """Per-unit v_k of the row differences ``diff`` grouped by ``labels`` (one per row): w_k the unit's rows
    (``row``) or 1 (``problem``)."""
    names, codes = np.unique(np.asarray(labels, dtype=object).astype(str), return_inverse=True)
    sizes = np.bincount(codes).astype(np.float64)
    means = np.bincount(codes, weights=np.asarray(diff, dtype=np.float64)) / sizes if len(names) else sizes
    weights = sizes if weight == "row" else np.ones(len(names))
    return Units(tuple(names), weights * means, float(weights.sum()))


@dataclass(frozen=True)
class FlipResult:
    statistic: float  # t
    p_value: float  # the comparison's own sign-flip p (mid-p unless mid=False)
    p_adjusted: float  # the family's
    significant: bool  # p_adjusted < alpha
    critical: float  # c of the family's interval
    marginal: float  # c of the comparison alone (its own distribution at alpha)
    exact: bool  # the comparison's own patterns were all enumerated (else Monte Carlo)
    n_patterns: int  # patterns behind its p
    p_exact: float  # its conventional P(|t(s)| ≥ |t|)


def _patterns(n_units: int, n_flips: int, seed: int):
    """Chunks of sign patterns (rows of ±1): all 2^n when n ≤ ``EXACT_MAX`` (the first all +1), else the
    observed pattern and ``n_flips`` seeded draws."""
    if n_units <= EXACT_MAX:
        total, shifts = 1 << n_units, np.arange(n_units)
        for start in range(0, total, _CHUNK):
            index = np.arange(start, min(total, start + _CHUNK))[:, None]
            yield 1.0 - 2.0 * ((index >> shifts) & 1)
        return
    rng = np.random.default_rng(seed)
    yield np.ones((1, n_units))
    for start in range(0, n_flips, _CHUNK):
        yield 1.0 - 2.0 * rng.integers(0, 2, size=(min(n_flips, start + _CHUNK) - start, n_units))


def _flipped(matrix: np.ndarray, n_flips: int, seed: int):
    """|t(s)| of every column, block by block (at most ``_CELLS`` values), over the patterns of ``matrix``'s rows."""
    rows = max(1, _CELLS // max(1, matrix.shape[1]))
    for signs in _patterns(matrix.shape[0], n_flips, seed):
        for start in range(0, len(signs), rows):
            yield np.abs(np.round(signs[start:start + rows] @ matrix, _DIGITS))


class _Null:
    """A comparison's null distribution of |t|: ascending support ``x``, ``exact`` P(|t| ≥ x) and ``tail`` the
    p of x: P(|t| > x) + ½·P(|t| = x) when ``mid``, else ``exact`` (integer ratios, so equal p's are equal floats)."""

    def __init__(self, values: np.ndarray, mid: bool = True):
        self.x, counts = np.unique(values, return_counts=True)
        above = np.cumsum(counts[::-1])[::-1]
        self.exact = above / len(values)
        self.tail = (2 * above - counts) / (2 * len(values)) if mid else self.exact

    def p(self, values, tail=None) -> np.ndarray:
        """The p of each value (values on the rounding grid, so a half step of tolerance finds them)."""
        index = np.searchsorted(self.x, np.asarray(values) - 0.5 * 10.0 ** -_DIGITS)
        return np.append(self.tail if tail is None else tail, 0.0)[index]

    def critical(self, level: float) -> float:
        """The largest |t| whose p ≥ ``level``: |t_obs| > it exactly when the p of t_obs < level."""
        return float(self.x[max(0, int(np.searchsorted(-self.tail, -level, side="right")) - 1)])


def _matrix(family: Sequence[Units]) -> np.ndarray:
    """(units × comparisons) of v_k/√Σv², over the units with a non-zero v in some comparison."""
    index: dict[str, int] = {}
    for u in family:
        for label, value in zip(u.labels, u.values):
            if value != 0:
                index.setdefault(label, len(index))
    matrix = np.zeros((len(index), len(family)))
    for j, u in enumerate(family):
        norm = math.sqrt(float(np.sum(u.values ** 2)))
        for label, value in zip(u.labels, u.values):
            if value != 0:
                matrix[index[label], j] = value / norm
    return matrix


def _nulls(matrix: np.ndarray, n_flips: int, seed: int, mid: bool) -> list[_Null]:
    """Each comparison's null: its own patterns enumerated when it has at most ``EXACT_MAX`` units with a
    difference, else its column over the family's Monte Carlo patterns."""
    nulls: dict[int, _Null] = {}
    drawn = []
    for j in range(matrix.shape[1]):
        rows = np.flatnonzero(matrix[:, j])
        if len(rows) <= EXACT_MAX:
            nulls[j] = _Null(np.concatenate(list(_flipped(matrix[rows][:, [j]], 0, seed)))[:, 0], mid)
        else:
            drawn.append(j)
    group = max(1, _CELLS // (n_flips + 1))
    for start in range(0, len(drawn), group):  # the family's patterns, a few columns at a time
        columns = drawn[start:start + group]
        values = np.concatenate(list(_flipped(matrix[:, columns], n_flips, seed)))
        nulls.update({j: _Null(values[:, i], mid) for i, j in enumerate(columns)})
    return [nulls[j] for j in range(matrix.shape[1])]


def family_test(family: Sequence[Units], alpha: float = 0.05, adjust: str = "minP",
                n_flips: int = DEFAULT_N_FLIPS, seed: int = 0, mid: bool = True) -> list[FlipResult]:
    """Sign-flip p-values (mid-p unless ``mid`` is False), ``adjust``-ed p-values, decisions and interval
    critical values (module docstring) of the comparisons of ``family``, in its order."""
    if adjust not in ADJUSTMENTS:
        raise ValueError(f"adjust must be one of {ADJUSTMENTS}, not {adjust!r}")
    m = len(family)
    if m == 0:
        return []
    matrix = _matrix(family)
    nulls = _nulls(matrix, n_flips, seed, mid)
    own = [int(np.count_nonzero(matrix[:, j])) for j in range(m)]
    p = np.array([null.p([abs(u.statistic)])[0] for null, u in zip(nulls, family)])
    p_exact = [null.p([abs(u.statistic)], null.exact)[0] for null, u in zip(nulls, family)]
    order = np.argsort(p, kind="stable")
    if adjust == "holm":
        raw = (m - np.arange(m)) * p[order]
        thresholds = alpha / (m - np.arange(m))
        rejected = np.logical_and.accumulate(p[order] < thresholds)
    else:
        raw, thresholds = _step_down_min_p(matrix, nulls, p, order, alpha, n_flips, seed, 0.5 if mid else 1.0)
        rejected = np.logical_and.accumulate(raw < alpha)
    adjusted = np.maximum.accumulate(np.minimum(1.0, raw))
    stop = m - 1 if rejected.all() else int(np.argmin(rejected))
    results: list = [None] * m
    for r, j in enumerate(order):
        results[j] = FlipResult(family[j].statistic, float(p[j]), float(adjusted[r]), bool(rejected[r]),
                                nulls[j].critical(thresholds[min(r, stop)]), nulls[j].critical(alpha),
                                own[j] <= EXACT_MAX, 1 << own[j] if own[j] <= EXACT_MAX else n_flips + 1,
                                float(p_exact[j]))
    return results


def _step_down_min_p(matrix, nulls, p, order, alpha, n_flips, seed, tie=0.5):
    """Westfall & Young's step-down minP over the family's patterns: per step r, with M(s) the minimum over the
    comparisons from order[r] on of p(s), P(M < p) + ``tie``·P(M = p) for p that of order[r] (``tie`` ½: the
    mid-p of M), and the p threshold x_r (the smallest M at which that reaches alpha): a p is rejected at step r
    exactly when it is below x_r. Only the smallest M's are kept: those above x_r cannot change it."""
    m, n = len(order), 0
    less, ties = np.zeros(m, dtype=np.int64), np.zeros(m, dtype=np.int64)
    kept = np.empty((0, m))
    total = (1 << matrix.shape[0]) if matrix.shape[0] <= EXACT_MAX else n_flips + 1
    keep = min(total, math.ceil(alpha * total / tie) + 2)
    for block in _flipped(matrix, n_flips, seed):
        flipped_p = np.column_stack([nulls[j].p(block[:, j]) for j in order])
        minima = np.minimum.accumulate(flipped_p[:, ::-1], axis=1)[:, ::-1]
        less += (minima < p[order]).sum(axis=0)
        ties += (minima == p[order]).sum(axis=0)
        both = np.concatenate([kept, minima])
        kept = np.partition(both, keep - 1, axis=0)[:keep] if len(both) > keep else both
        n += len(block)
    return (less + tie * ties) / n, [_threshold(column, n, alpha, tie) for column in kept.T]


def _threshold(smallest: np.ndarray, n: int, alpha: float, tie: float) -> float:
    """The smallest value x of M with #(M < x) + ``tie``·#(M = x) ≥ alpha·n, from the smallest M's (``smallest``;
    a value that reaches their end was cut, and is then the answer: the keep bound puts it past alpha·n)."""
    values, counts = np.unique(smallest, return_counts=True)
    for x, below, equal in zip(values, np.cumsum(counts) - counts, counts):
        if below + equal >= len(smallest) and len(smallest) < n or (below + tie * equal) / n >= alpha:
            return float(x)
    return math.inf


def interval(estimate: float, unit: Units, critical: float, value_range=(-1.0, 1.0)) -> tuple[float, float]:
    """D ± c·se₀, written as |D|·c/|t| so that it excludes 0 exactly when |t| > c; clipped to ``value_range``.
    nan when no unit has a difference (the caller's no-spread bound applies)."""
    t = unit.statistic
    if t != 0:
        half = abs(estimate) * (critical / abs(t))
    elif unit.se0 > 0:
        half = critical * unit.se0
    else:
        return (math.nan, math.nan)
    return (max(value_range[0], estimate - half), min(value_range[1], estimate + half))


def widen(bounds: tuple[float, float], other: tuple[float, float], significant: bool) -> tuple[float, float]:
    """``bounds`` widened to ``other`` (e.g. MOVER's) on every side that does not decide significance: both
    sides when 0 is inside, the side away from 0 when it is not. Whether 0 is inside never changes, so the
    interval still agrees with the test; where few units differ, ``other``'s far side keeps the coverage."""
    low, high = bounds
    if not significant:
        return (min(low, other[0]), max(high, other[1]))
    return (low, max(high, other[1])) if low > 0 else (min(low, other[0]), high)
