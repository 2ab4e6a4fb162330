"""Issue #20 item 1: one estimand per comparison, and a test that cannot disagree with its interval.

The reference here is the formula written out independently: X²(δ) = (Σ_k w_k(d̄_k − δ))² / Σ_k w_k²(d̄_k − δ)²
with w_k = n_k (row-weighted) or 1 (per base problem, Durkalski 2003). The interval must be exactly the set of
δ with X²(δ) ≤ z², so p(0) < 0.05 exactly when the interval excludes 0 — on SMMILE++-shaped synthetic data
(86 clusters of 2, 6 and 24 orders) and on the published SMMILE outputs.
"""

from __future__ import annotations

import math
from pathlib import Path
from statistics import NormalDist

import numpy as np
import pandas as pd
import pytest

from smmile.cli import stats as stats_cli
from smmile.scoring import statistics as bs
from stats_fixtures import base_of, build_plusplus, correlated, plusplus_ids

Z95 = 1.959963984540054
PUBLISHED = Path(__file__).resolve().parents[1].parent / "shared" / "published" / "smmile"


def x2(a, b, clusters, delta: float, weight: str) -> float:
    frame = pd.DataFrame({"d": np.asarray(a, float) - np.asarray(b, float), "k": clusters})
    g = frame.groupby("k")["d"].agg(["mean", "count"])
    w = g["count"] if weight == "row" else pd.Series(1.0, index=g.index)
    e = w * (g["mean"] - delta)
    return float(e.sum() ** 2 / (e ** 2).sum())


def test_the_row_weighted_estimand_is_the_tables_difference_and_the_problem_one_the_mean_of_problems():
    a = np.array([1, 1, 1, 1, 0, 0, 1, 0])
    b = np.array([0, 0, 0, 1, 0, 0, 0, 0])
    k = ["x", "x", "x", "x", "y", "y", "z", "z"]
    row = bs.paired_score(a, b, k, "row")
    problem = bs.paired_score(a, b, k, "problem")
    assert row.interval.estimate == pytest.approx(a.mean() - b.mean())  # every row counts: 4/8
    assert problem.interval.estimate == pytest.approx((3 / 4 + 0 + 1 / 2) / 3)  # every base problem counts
    # hand: S = (3, 0, 1): X² = 16 / 10; Durkalski: d = (3/4, 0, 1/2): X² = (5/4)² / (9/16 + 1/4) = 25/13
    assert row.statistic == pytest.approx(16 / 10) and problem.statistic == pytest.approx(25 / 13)
    assert row.p_value == pytest.approx(2 * (1 - NormalDist().cdf(math.sqrt(1.6))))
    assert problem.method == bs.SCORE_PROBLEM and row.method == bs.SCORE_ROW


@pytest.mark.parametrize("weight", ["row", "problem"])
@pytest.mark.parametrize("seed", range(4))
def test_interval_is_the_set_the_test_does_not_reject(weight, seed):
    rng = np.random.default_rng(seed)
    ids = plusplus_ids()
    a, b = correlated(ids, 0.45, rng), correlated(ids, 0.35, rng)
    k = base_of(ids)
    result = bs.paired_score(a, b, k, weight)
    ci = result.interval
    assert ci.low < ci.estimate < ci.high
    for end in (ci.low, ci.high):  # the ends solve X²(δ) = z²
        assert x2(a, b, k, end, weight) == pytest.approx(Z95 ** 2, rel=1e-9)
    for inside in np.linspace(ci.low, ci.high, 7)[1:-1]:
        assert x2(a, b, k, inside, weight) < Z95 ** 2
    assert x2(a, b, k, ci.low - 0.01, weight) > Z95 ** 2 and x2(a, b, k, ci.high + 0.01, weight) > Z95 ** 2
    assert result.p_value == pytest.approx(math.erfc(math.sqrt(x2(a, b, k, 0.0, weight) / 2)), rel=1e-12)


def test_agreement_on_many_smmile_plusplus_shaped_comparisons():
    """p < 0.05 exactly when the interval excludes 0 (no Monte-Carlo band: the interval inverts the test)."""
    ids = plusplus_ids()
    k = base_of(ids)
    rng = np.random.default_rng(11)
    checked = significant = 0
    for _ in range(150):
        p0 = rng.uniform(0.02, 0.6)
        a, b = correlated(ids, min(0.95, p0 + rng.uniform(0, 0.2)), rng), correlated(ids, p0, rng)
        for weight in ("row", "problem"):
            r = bs.paired_score(a, b, k, weight)
            excludes = r.interval.low > 0 or r.interval.high < 0
            assert (r.p_value < 0.05) == excludes
            checked += 1
            significant += excludes
    assert checked == 300 and 0 < significant < checked  # both outcomes occur


@pytest.fixture(scope="module")
def plusplus_comparisons(tmp_path_factory):
    root = tmp_path_factory.mktemp("agree") / "results"
    build_plusplus(root)
    frames = {}
    for weight in ("row", "problem"):
        out = root.parent / f"stats-{weight}"
        assert stats_cli.main([str(root), "--out", str(out), "--compare", "all", "--n-boot", "200",
                               "--weight", weight]) == 0
        frames[weight] = pd.read_csv(out / "stats_comparisons.csv")
    return frames


def test_every_synthetic_comparison_states_its_estimand_and_agrees(plusplus_comparisons):
    for weight, comp in plusplus_comparisons.items():
        assert (comp.weight == weight).all() and comp.estimand.nunique() == 1
        assert comp.estimand.iloc[0] == bs.ESTIMANDS[weight]
        agree(comp)


def agree(comp) -> None:
    """Issue #31: the printed interval and significance come from one procedure (the family's adjusted sign-flip
    test); the marginal interval agrees with the comparison's own p (where anything differs)."""
    excludes = (comp.ci_low > 0) | (comp.ci_high < 0)
    assert ((comp.p_adjusted < 0.05) == excludes).all() and (comp.significant == excludes).all()
    spread = comp.ci_low_marginal < comp.ci_high_marginal
    marginal = (comp.ci_low_marginal > 0) | (comp.ci_high_marginal < 0)
    assert ((comp.p_value < 0.05) == marginal)[spread].all()
    assert comp.p_method.str.startswith("sign-flip").all()


def test_published_smmile_comparisons_agree():
    if not PUBLISHED.is_dir():
        pytest.skip("published SMMILE outputs not available")
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        assert stats_cli.main([str(PUBLISHED), "--out", tmp, "--compare", "all", "--n-boot", "100"]) == 0
        comp = pd.read_csv(Path(tmp) / "stats_comparisons.csv")
    assert len(comp) > 100
    agree(comp)
