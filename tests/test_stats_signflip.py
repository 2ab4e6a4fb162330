"""Sign-flip randomisation tests and Westfall-Young step-down max-T (issue #31, deliverable 1), checked against
an independent brute force: every sign pattern by itertools.product, statistics as plain Python sums."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from smmile.scoring import signflip


def brute_force(family: list[dict], alpha: float, tie: float = 0.5):
    """``family``: per comparison {label: v}. Returns (per-comparison p, step-down minP adjusted p, Holm adjusted
    p of those p's), each by direct enumeration of the labels with a non-zero v. A p counts the patterns beyond
    the observed value and ``tie`` (½: Lancaster's mid-p; 1: the conventional p) of those equal to it."""
    labels = sorted({k for comp in family for k, v in comp.items() if v != 0})

    def t(comp, sign):
        norm = math.sqrt(sum(v * v for v in comp.values()))
        return sum(sign.get(k, 1) * v for k, v in comp.items()) / norm if norm else 0.0

    def tail(values, x, tol):
        return (sum(v > x + tol for v in values) + tie * sum(abs(v - x) <= tol for v in values)) / len(values)

    observed = [abs(t(c, {})) for c in family]
    flips = [[abs(t(c, dict(zip(labels, s)))) for c in family]
             for s in itertools.product((1, -1), repeat=len(labels))]
    columns = [[f[j] for f in flips] for j in range(len(family))]
    p = [tail(columns[j], observed[j], 1e-9) for j in range(len(family))]
    flipped_p = [[tail(columns[j], f[j], 1e-9) for j in range(len(family))] for f in flips]
    order = sorted(range(len(family)), key=lambda j: p[j])
    minp, running = [0.0] * len(family), 0.0
    for r, j in enumerate(order):
        minima = [min(q[i] for i in order[r:]) for q in flipped_p]
        running = max(running, tail([-x for x in minima], -p[j], 1e-12))  # P(M < p) + tie·P(M = p)
        minp[j] = running
    holm, running = [0.0] * len(family), 0.0
    for r, j in enumerate(order):
        running = max(running, min(1.0, (len(family) - r) * p[j]))
        holm[j] = running
    return p, minp, holm


def random_family(seed: int, n_units: int = 9, n_comparisons: int = 4) -> list[dict]:
    rng = np.random.default_rng(seed)
    family = []
    for _ in range(n_comparisons):
        sizes = rng.choice([1, 2, 6, 24], n_units)
        diffs = rng.choice([-1, 0, 0, 0, 1, 0.5, -0.5, 1 / 3], n_units)  # ties and zeros on purpose
        family.append({f"u{k}": float(s * d) for k, (s, d) in enumerate(zip(sizes, diffs))})
    family.append({f"u{k}": 1.0 for k in range(4)})  # one-directional: every unit with a difference favours A
    return family


def as_units(comp: dict) -> signflip.Units:
    labels = sorted(comp)
    return signflip.Units(tuple(labels), np.array([comp[k] for k in labels]), float(len(labels)))


@pytest.mark.parametrize("mid", [True, False])
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_exact_p_values_and_step_down_min_p_match_a_brute_force(seed, mid):
    family = random_family(seed)
    p, minp, holm = brute_force(family, 0.05, 0.5 if mid else 1.0)
    got = signflip.family_test([as_units(c) for c in family], 0.05, "minP", mid=mid)
    assert all(r.exact for r in got)
    np.testing.assert_allclose([r.p_value for r in got], p, rtol=0, atol=1e-12)
    np.testing.assert_allclose([r.p_adjusted for r in got], minp, rtol=0, atol=1e-12)
    np.testing.assert_allclose([r.p_exact for r in got], brute_force(family, 0.05, 1.0)[0], rtol=0, atol=1e-12)
    got_holm = signflip.family_test([as_units(c) for c in family], 0.05, "holm", mid=mid)
    np.testing.assert_allclose([r.p_adjusted for r in got_holm], holm, rtol=0, atol=1e-12)


def test_every_unit_favouring_one_side_gives_two_patterns_of_2_to_the_k():
    comp = {f"b{k}": float(size) for k, size in enumerate([2, 6, 24, 24, 2, 6, 24, 2, 6, 24, 2])}  # 11 units
    comp.update({f"z{k}": 0.0 for k in range(75)})  # base problems without a difference change nothing
    result, = signflip.family_test([as_units(comp)], 0.05)
    assert result.p_exact == pytest.approx(2 / 2 ** 11, abs=1e-15) and result.significant
    assert result.p_value == result.p_adjusted == pytest.approx(1 / 2 ** 11, abs=1e-15)  # mid-p: half the tie


def test_mid_p_rejects_five_of_five_where_the_conventional_p_cannot():
    """Five equal units all favouring A: conventional p = 2/32 = 0.0625, mid-p 1/32; the interval follows."""
    unit = as_units({f"u{k}": 1.0 for k in range(5)})
    mid, = signflip.family_test([unit], 0.05)
    conventional, = signflip.family_test([unit], 0.05, mid=False)
    assert (mid.p_value, mid.p_exact, conventional.p_value) == (1 / 32, 2 / 32, 2 / 32)
    assert mid.significant and not conventional.significant
    assert signflip.interval(1.0, unit, mid.critical)[0] > 0 >= signflip.interval(1.0, unit, conventional.critical)[0]


@pytest.mark.parametrize("mid", [True, False])
@pytest.mark.parametrize("adjust", signflip.ADJUSTMENTS)
@pytest.mark.parametrize("seed", range(6))
def test_the_interval_excludes_zero_exactly_when_the_adjusted_p_is_below_alpha(adjust, seed, mid):
    family = random_family(seed, n_units=10, n_comparisons=6)
    units = [as_units(c) for c in family]
    for u, r in zip(units, signflip.family_test(units, 0.05, adjust, mid=mid)):
        estimate = float(u.values.sum()) / u.total_weight
        low, high = signflip.interval(estimate, u, r.critical)
        if math.isnan(low):
            assert not r.significant
            continue
        assert r.significant == (low > 0 or high < 0) == (r.p_adjusted < 0.05)


def test_monte_carlo_beyond_the_exact_limit_is_seeded_and_close_to_the_truth():
    rng = np.random.default_rng(5)
    comp = {f"u{k}": float(v) for k, v in enumerate(rng.choice([-1, 1, 1, 0], 40))}
    first = signflip.family_test([as_units(comp)], 0.05, n_flips=20_000, seed=3)[0]
    again = signflip.family_test([as_units(comp)], 0.05, n_flips=20_000, seed=3)[0]
    assert first == again and not first.exact and first.n_patterns == 20_001
    nonzero = [v for v in comp.values() if v]
    # exact: |Σ s| ≥ |Σ v| for n fair signs, by the binomial distribution
    n, total = len(nonzero), abs(sum(nonzero))
    exact = sum(math.comb(n, k) for k in range(n + 1) if abs(2 * k - n) >= total) / 2 ** n
    mid = exact - sum(math.comb(n, k) for k in range(n + 1) if abs(2 * k - n) == total) / 2 ** (n + 1)
    assert n > signflip.EXACT_MAX
    for got, truth in ((first.p_exact, exact), (first.p_value, mid)):
        assert got == pytest.approx(truth, abs=4 * math.sqrt(truth * (1 - truth) / 20_000) + 1e-4)


def test_a_one_sided_comparison_stays_significant_in_a_large_monte_carlo_family():
    """SMMILE++-shaped: 86 base problems (27 × 2, 24 × 6, 35 × 24 orders); one comparison where the 11 base
    problems with a difference all favour A (gpt-4o exact match, ICL − 0-shot), 43 noisy ones beside it."""
    rng = np.random.default_rng(0)
    sizes = [2] * 27 + [6] * 24 + [24] * 35
    favoured = {f"b{k}": float(sizes[k]) * rng.uniform(0.2, 1) for k in rng.choice(86, 11, replace=False)}
    family = [{f"b{k}": favoured.get(f"b{k}", 0.0) for k in range(86)}]
    family += [{f"b{k}": float(sizes[k]) * rng.choice([-0.5, 0, 0, 0.5]) for k in range(86)} for _ in range(43)]
    units = [as_units(c) for c in family]
    results = signflip.family_test(units, 0.05, "minP", n_flips=20_000, seed=1)
    first = results[0]
    assert first.exact and first.p_exact == pytest.approx(2 / 2 ** 11, abs=1e-15) == 2 * first.p_value
    assert first.significant and first.p_adjusted < 0.05
    for u, r in zip(units, results):
        low, high = signflip.interval(float(u.values.sum()) / u.total_weight, u, r.critical)
        assert math.isnan(low) or r.significant == (low > 0 or high < 0)


@pytest.mark.parametrize("bounds,other,significant,expected", [
    ((0.01, 0.05), (-0.02, 0.09), True, (0.01, 0.09)),  # significant gain: only the far (upper) side widens
    ((-0.05, -0.01), (-0.09, 0.02), True, (-0.09, -0.01)),
    ((-0.01, 0.03), (-0.02, 0.08), False, (-0.02, 0.08)),  # 0 inside: both sides
    ((0.0, 0.004), (-0.001, 0.04), False, (-0.001, 0.04)),  # one base problem of 2 orders: the far side from MOVER
])
def test_widening_keeps_zero_where_it_was(bounds, other, significant, expected):
    got = signflip.widen(bounds, other, significant)
    assert got == expected and (got[0] > 0 or got[1] < 0) == (bounds[0] > 0 or bounds[1] < 0)
