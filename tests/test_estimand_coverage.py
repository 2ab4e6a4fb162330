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
    from resampling one cluster. Issue #31: two right rows cannot estimate an ICC (MIN_MINORITY), so rho = 1
    (each base problem's rows as one: 1/Σ(n_k/N)² effective rows) and the interval is wider, not collapsed."""
    sizes = [2] * 27 + [6] * 24 + [24] * 35
    clusters = np.repeat(np.arange(86), sizes)
    values = np.zeros(1038)
    values[np.flatnonzero(clusters == 85)[:2]] = 1
    ci = bs.proportion_interval(values, clusters)
    n_eff = 1 / np.sum((np.asarray(sizes) / 1038) ** 2)
    assert ci.estimate == pytest.approx(2 / 1038) and ci.method == bs.WILSON_DEFF and ci.n_eff == pytest.approx(n_eff)
    assert ci.low == 0.0 and ci.high > 0.05  # p̂·n_eff < 0.5: the lower bound is 0
    # the same two rows as 24 of 24 orders of one problem: strongly clustered, far fewer effective rows
    values[np.flatnonzero(clusters == 85)] = 1
    clustered = bs.proportion_interval(values, clusters)
    assert clustered.icc > 0.9 and clustered.n_eff < 60 and clustered.high > 0.1
    # 0 of 1038 (0 of 86 base problems): the Wilson bound on the clusters, (1 - p)^K <= 2.5 % beyond it
    zero = bs.proportion_interval(np.zeros(1038), clusters)
    assert (zero.low, zero.high) == pytest.approx((0.0, Z95 ** 2 / (86 + Z95 ** 2)))
    assert (1 - zero.high) ** 86 < 0.025


# -- issue #31, small things -------------------------------------------------------------------------------
@pytest.mark.parametrize("k,n", [(0.4, 200.0), (0.45, 61.3), (0.2, 1.0)])
def test_below_half_an_effective_success_the_lower_bound_is_zero(k, n):
    """Newcombe's closed form gave a spurious positive lower bound when p̂·n < 0.5 (llavamed exact match ICL:
    0.006 % instead of 0); the score interval found by bisection includes 0 there."""
    low, high = bs.wilson_cc_interval(k / n, n)
    assert low == 0.0 and (low, high) == pytest.approx(cc_wilson_by_bisection(k, n), abs=1e-9)


@pytest.mark.parametrize("df,table", [(10, 2.228139), (30, 2.042272), (85, 1.988268), (5, 2.570582)])
def test_t_quantile_matches_the_table(df, table):
    assert bs.t_value(df) == pytest.approx(table, abs=5e-4 if df < 10 else 1e-5)


def test_three_successes_do_not_estimate_an_icc_and_problem_weights_never_exceed_k():
    sizes = [2] * 27 + [6] * 24 + [24] * 35
    clusters = np.repeat(np.arange(86), sizes)
    values = np.zeros(1038)
    for base in (60, 70, 80):  # one right order in each of three 24-order base problems
        values[np.flatnonzero(clusters == base)[0]] = 1
    ci = bs.proportion_interval(values, clusters)
    shares = np.asarray(sizes) / 1038
    assert ci.n_eff == pytest.approx(1 / np.sum(shares ** 2))  # rho = 1: about 51 effective problems, not 661
    assert ci.n_eff < 86 and ci.method == bs.WILSON_DEFF
    rng = np.random.default_rng(0)
    common = (rng.random(1038) < 0.4).astype(float)  # no clustering at all
    problem = bs.proportion_interval(common, clusters, "problem")
    assert problem.n_eff == 86  # capped at the number of base problems
    assert bs.proportion_interval(common, clusters).n_eff > 86  # row weights: rows count


def test_mover_difference_by_hand_and_where_the_findings_are():
    """Issue #31 deliverable 2: MOVER (Zou & Donner 2008) on the two sides' Wilson bounds, written out here for
    independent rows (r from the paired rows), and its coverage in a rare one-directional cell (3 % vs 0)."""
    rng = np.random.default_rng(3)
    a = (rng.random(111) < 0.3).astype(float)
    b = np.where(rng.random(111) < 0.7, a, (rng.random(111) < 0.25).astype(float))
    got = bs.mover_difference(a, b)
    la, ua = bs.wilson_cc_interval(a.mean(), 111)
    lb, ub = bs.wilson_cc_interval(b.mean(), 111)
    r = np.corrcoef(a, b)[0, 1]
    d = a.mean() - b.mean()
    low = d - math.sqrt((a.mean() - la) ** 2 + (ub - b.mean()) ** 2 - 2 * r * (a.mean() - la) * (ub - b.mean()))
    high = d + math.sqrt((ua - a.mean()) ** 2 + (b.mean() - lb) ** 2 - 2 * r * (ua - a.mean()) * (b.mean() - lb))
    assert (got.estimate, got.low, got.high) == pytest.approx((d, low, high), abs=1e-12)
    hits = 0
    for _ in range(200):  # SMMILE: 111 independent problems, B never right, A right with chance 3 %
        a = (rng.random(111) < 0.03).astype(float)
        ci = bs.mover_difference(a, np.zeros(111))
        hits += ci.low <= 0.03 <= ci.high
    assert hits / 200 >= 0.93


def test_a_rare_event_null_cell_is_a_null_and_the_mid_p_uses_what_no_randomisation_can_exceed(monkeypatch):
    """Issue #31 item 2, fast: SMMILE++ 5 % = 5 % (ρ 0.3). Two models with the same p and ρ get the same problem
    probabilities (a null, so the conventional sign-flip p holds its level given the data); the mid-p rejects
    more often, near the ceiling of any non-randomised symmetric test of conditional size ≤ 0.07, and its interval
    (far side from MOVER) covers the truth whenever it is not significant."""
    sim = _simulation()
    monkeypatch.setattr(sim.signflip, "EXACT_MAX", 12)  # as the script's rare_table
    first, again = (sim.draw(0.05, 0.3, np.random.default_rng(1), latent=np.linspace(0, 1, 86), fixed=True)
                    for _ in range(2))
    table = sim._table(0.05 * 0.7 / 0.3, 0.95 * 0.7 / 0.3)
    assert table is sim._table(0.05 * 0.7 / 0.3, 0.95 * 0.7 / 0.3) and np.array_equal(first, again)
    cell = sim.signflip_cell("SMMILE++", 0.05, 0.0, 0.3, reps=300, seed=7)
    assert cell["conventional"] <= cell["significant"] <= cell["ceiling"] + 3 * math.sqrt(0.07 * 0.93 / 300)
    assert cell["significant"] >= 0.02 and cell["printed_coverage"] == pytest.approx(1 - cell["significant"])
