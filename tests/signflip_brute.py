"""The sign-flip mid-p and Westfall-Young step-down minP of `smmile analyze` recomputed by brute force for its tests
(issue #31): every sign pattern of the base problems with a difference, plain Python sums; no smmile code."""

from __future__ import annotations

import itertools
import math
from bisect import bisect_left, bisect_right


def unit_values(variant, reference, units, weight: str = "row") -> dict:
    """{unit: w·mean(variant − reference)} over paired rows, w the unit's rows (``row``) or 1 (``problem``)."""
    sums: dict = {}
    for a, b, unit in zip(variant, reference, units):
        total, n = sums.get(unit, (0.0, 0))
        sums[unit] = (total + float(a) - float(b), n + 1)
    return {unit: total / n * (n if weight == "row" else 1) for unit, (total, n) in sums.items()}


def _mid_p(ordered: list, x: float, tol: float = 1e-9) -> float:
    """P(X > x) + ½·P(X = x) over the sorted values ``ordered``."""
    low, high = bisect_left(ordered, x - tol), bisect_right(ordered, x + tol)
    return (len(ordered) - high + 0.5 * (high - low)) / len(ordered)


def family(comparisons: list[dict]) -> tuple[list[float], list[float]]:
    """Per comparison ({unit: v}) of one family: its sign-flip mid-p of |Σv|/√Σv², and the step-down minP adjusted
    p (per step, the mid-p of the minimum over the comparisons not yet tested of their flipped p's)."""
    labels = sorted({k for c in comparisons for k, v in c.items() if v != 0})

    def t(c: dict, sign: dict) -> float:
        norm = math.sqrt(sum(v * v for v in c.values()))
        return abs(sum(sign.get(k, 1) * v for k, v in c.items())) / norm if norm else 0.0

    patterns = [dict(zip(labels, s)) for s in itertools.product((1, -1), repeat=len(labels))]
    columns = [[t(c, s) for s in patterns] for c in comparisons]
    p = [_mid_p(sorted(col), t(c, {})) for c, col in zip(comparisons, columns)]
    flipped = [[_mid_p(sorted(col), x) for x in col] for col in columns]
    order = sorted(range(len(comparisons)), key=lambda j: p[j])
    adjusted, running = [0.0] * len(comparisons), 0.0
    for r, j in enumerate(order):
        minima = sorted(-min(flipped[i][n] for i in order[r:]) for n in range(len(patterns)))
        running = max(running, min(1.0, _mid_p(minima, -p[j], 1e-12)))  # P(M < p) + ½·P(M = p)
        adjusted[j] = running
    return p, adjusted
