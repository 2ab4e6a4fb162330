"""Issue #20 item 2: intervals with honest coverage at 0 % and 100 % on clustered data.

A fast version of ``scripts/coverage_simulation.py`` (the full run's figures are in docs/analyses.md §4),
plus hand computations of the design effect and of the interval the issue saw collapse."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest

from smmile.scoring import statistics as bs

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "coverage_simulation.py"
Z95 = 1.959963984540054


def _simulation():
    spec = importlib.util.spec_from_file_location("coverage_simulation", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("p", [0.005, 0.05, 0.5])
@pytest.mark.parametrize("rho", [0.3, 0.8])
def test_simulated_coverage_is_at_least_93_percent(p, rho):
    """300 SMMILE++-shaped data sets per cell (86 base problems of 2, 6 and 24 orders, ICC rho): with
    true coverage 95 % the Monte-Carlo sd is 1.3 pp, so 93 % is a real floor, not noise."""
    sim = _simulation()
    assert sim.proportion_coverage(p, rho, 300, seed=2025) >= 0.93


def test_effective_sample_size_by_hand():
    sizes = np.array([2.0] * 27 + [6.0] * 24 + [24.0] * 35)
    n, m = sizes.sum(), (sizes ** 2).sum()
    assert bs.effective_n(sizes, sizes, 0.0) == pytest.approx(n)  # iid rows: 1038
    assert bs.effective_n(sizes, sizes, 1.0) == pytest.approx(n * n / m)  # orders identical: 51.0
    assert bs.effective_n(sizes, sizes, 0.4) == pytest.approx(n / (1 + 0.4 * (m / n - 1)))  # Kish's design effect
    assert bs.effective_n(sizes, np.ones(86), 1.0) == pytest.approx(86)  # per base problem, perfectly correlated


def test_icc_by_hand():
    # two clusters of 2: (1, 1) and (0, 0): all variance between clusters
    assert bs.icc_anova([1, 1, 0, 0], ["a", "a", "b", "b"]) == pytest.approx(1.0)
    # (1, 0) and (1, 0): all within: MSB = 0, MSW = 0.5, n0 = 2 -> (0 - .5)/(0 + .5) = -1
    assert bs.icc_anova([1, 0, 1, 0], ["a", "a", "b", "b"]) == pytest.approx(-1.0)
    assert math.isnan(bs.icc_anova([0, 0, 0, 0], ["a", "a", "b", "b"]))


def cc_wilson_by_bisection(k: int, n: float) -> tuple[float, float]:
    """The continuity-corrected score interval from its definition: the p with
    |k/n − p| − 1/(2n) <= z·√(p(1 − p)/n), found by bisection (ends 0 / 1 when k = 0 / n)."""
    p_hat = k / n

    def inside(p):
        return abs(p_hat - p) - 1 / (2 * n) <= Z95 * math.sqrt(p * (1 - p) / n)

    def edge(lo, hi):  # lo inside, hi outside
        for _ in range(200):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if inside(mid) else (lo, mid)
        return lo

    low = 0.0 if k == 0 else edge(p_hat, 0.0)
    high = 1.0 if k == n else edge(p_hat, 1.0)
    return low, high


@pytest.mark.parametrize("k,n", [(15, 148), (81, 263), (1, 111), (2, 1038), (110, 111), (5, 51.3)])
def test_wilson_cc_is_the_continuity_corrected_score_interval(k, n):
    assert bs.wilson_cc_interval(k / n, n) == pytest.approx(cc_wilson_by_bisection(k, n), abs=1e-9)


def test_the_collapsed_interval_of_the_issue_is_no_longer_collapsed():
    """llavamed exact match, ICL on SMMILE++: 2 of 1038 rows right, both in one 24-order base problem. A
    percentile bootstrap gave [0.00, 0.65]: 0 is impossible (two rows are right) and the upper end came
    from resampling one cluster. Two right of 24 orders is no evidence of clustering (ICC ≈ 0 by hand:
    MSB = (24·(1/12 − 2/1038)² + 1014·(2/1038)²)/85 < MSW = (2·(11/12)² + 22·(1/12)²)/952), so the rows
    count as 1038 and the interval is the continuity-corrected Wilson interval of 2 of 1038."""
    sizes = [2] * 27 + [6] * 24 + [24] * 35
    clusters = np.repeat(np.arange(86), sizes)
    values = np.zeros(1038)
    values[np.flatnonzero(clusters == 85)[:2]] = 1
    msb = (24 * (1 / 12 - 2 / 1038) ** 2 + 1014 * (2 / 1038) ** 2) / 85
    msw = (2 * (11 / 12) ** 2 + 22 * (1 / 12) ** 2) / 952
    assert msb < msw
    ci = bs.proportion_interval(values, clusters)
    assert ci.estimate == pytest.approx(2 / 1038) and ci.method == bs.WILSON_DEFF and ci.icc == 0.0
    assert (ci.low, ci.high) == pytest.approx(cc_wilson_by_bisection(2, 1038), abs=1e-9)
    assert 0 < ci.low and ci.high > 0.0065
    # the same two rows as 24 of 24 orders of one problem: strongly clustered, far fewer effective rows
    values[np.flatnonzero(clusters == 85)] = 1
    clustered = bs.proportion_interval(values, clusters)
    assert clustered.icc > 0.9 and clustered.n_eff < 60 and clustered.high > 0.1
    # 0 of 1038 (0 of 86 base problems): the Wilson bound on the clusters, (1 - p)^K <= 2.5 % beyond it
    zero = bs.proportion_interval(np.zeros(1038), clusters)
    assert (zero.low, zero.high) == pytest.approx((0.0, Z95 ** 2 / (86 + Z95 ** 2)))
    assert (1 - zero.high) ** 86 < 0.025
