"""Cluster-aware statistics on SMMILE++-shaped data (issue #12): the Durkalski test, significance that
agrees with its interval, intervals that never have zero width, and nothing changed on SMMILE."""

from __future__ import annotations

import math
from pathlib import Path
from statistics import NormalDist

import numpy as np
import pandas as pd
import pytest

from smmile.cli import stats as stats_cli
from smmile.scoring import statistics as bs
from stats_fixtures import CLUSTER_SIZES, base_of, build_plusplus, correlated, plusplus_ids

Z95 = 1.959963984540054
PUBLISHED = Path(__file__).resolve().parents[1].parent / "shared" / "published" / "smmile"


def durkalski_reference(a, b, clusters) -> float:
    """Durkalski et al. (2003), Stat Med 22:2417, the clustered-pairs McNemar statistic: with n_k pairs
    in cluster k, b_k / c_k of them right only under A / B,
    X² = (Σ_k (b_k − c_k)/n_k)² / Σ_k ((b_k − c_k)/n_k)², X² ~ χ²(1), so p = 2(1 − Φ(√X²))."""
    n_k, b_k, c_k = {}, {}, {}
    for x, y, k in zip(a, b, clusters):
        n_k[k] = n_k.get(k, 0) + 1
        b_k[k] = b_k.get(k, 0) + (x == 1 and y == 0)
        c_k[k] = c_k.get(k, 0) + (x == 0 and y == 1)
    d_k = [(b_k[k] - c_k[k]) / n_k[k] for k in n_k]
    denominator = sum(d * d for d in d_k)
    if denominator == 0:
        return 1.0
    return 2 * (1 - NormalDist().cdf(math.sqrt(sum(d_k) ** 2 / denominator)))


@pytest.mark.parametrize("seed", range(6))
def test_durkalski_matches_the_papers_formula(seed):
    rng = np.random.default_rng(seed)
    ids = plusplus_ids()
    a, b = correlated(ids, 0.45, rng), correlated(ids, 0.35, rng)
    clusters = base_of(ids).tolist()
    expected = durkalski_reference(a, b, clusters)
    test = bs.paired_score(a, b, clusters, "problem")
    assert test.method == bs.SCORE_PROBLEM
    assert abs(test.p_value - expected) < 1e-9
    assert (test.only_a, test.only_b) == (int(((a == 1) & (b == 0)).sum()), int(((a == 0) & (b == 1)).sum()))


def test_durkalski_against_scipy_chi2_when_available():
    chi2 = pytest.importorskip("scipy.stats").chi2
    rng = np.random.default_rng(3)
    ids = plusplus_ids()
    a, b = correlated(ids, 0.5, rng), correlated(ids, 0.3, rng)
    d = pd.Series(a - b).groupby(base_of(ids)).mean()
    assert bs.paired_score(a, b, base_of(ids), "problem").p_value == pytest.approx(chi2.sf(d.sum() ** 2 / (d ** 2).sum(), 1), abs=1e-12)


def test_singleton_clusters_give_the_classic_mcnemar_statistic():
    a = np.array([1] * 30 + [0] * 12 + [1] * 40 + [0] * 18)
    b = np.array([0] * 30 + [1] * 12 + [1] * 40 + [0] * 18)
    classic = 2 * (1 - NormalDist().cdf(math.sqrt((30 - 12) ** 2 / 42)))
    assert bs.paired_score(a, b, list(range(len(a))), "problem").p_value == pytest.approx(classic, abs=1e-12)
    assert bs.paired_score(a, b).method == bs.SCORE_IID  # independent rows: the same statistic
    assert bs.paired_score(a, b).p_value == pytest.approx(classic, abs=1e-12)
    assert bs.paired_score([1, 1], [1, 1], ["x", "x"], "problem").p_value == 1.0


def test_gain_carried_by_three_problems_is_not_significant(tmp_path):
    """ICL right on every order of three 24-order problems, otherwise as 0-shot: every discordant pair
    goes one way. Rows taken as independent this is p < 1e-11; it is three problems, and the clustered
    test says so."""
    ids = plusplus_ids()
    zero = correlated(ids, 0.3, np.random.default_rng(1))
    big = [f"b{i:03d}" for i, size in enumerate(CLUSTER_SIZES) if size == 24][:3]
    icl = zero.copy()
    icl[np.isin(base_of(ids), big)] = 1
    gained = int(((icl == 1) & (zero == 0)).sum())
    assert gained > 40 and bs.paired_score(icl, zero).p_value < 1e-11
    test = bs.paired_score(icl, zero, base_of(ids), "problem")
    assert test.p_value == pytest.approx(durkalski_reference(icl, zero, base_of(ids)), abs=1e-9)
    assert test.p_value > 0.05


@pytest.fixture(scope="module")
def plusplus(tmp_path_factory):
    root = tmp_path_factory.mktemp("pp") / "results"
    truth = build_plusplus(root)
    out = root.parent / "stats"
    assert stats_cli.main([str(root), "--out", str(out), "--compare", "all", "--n-boot", "2000"]) == 0
    return truth, pd.read_csv(out / "stats_estimates.csv"), pd.read_csv(out / "stats_comparisons.csv")


def test_plusplus_estimates_count_base_problems_and_never_have_zero_width(plusplus):
    _, est, _ = plusplus
    assert (est.n_rows == 1038).all() and (est.n_problems == 86).all() and est.clustered.all()
    assert (est.ci_high > est.ci_low).all()
    cells = est.set_index(["model", "metric", "mode"])
    bound = 100 * Z95 ** 2 / (86 + Z95 ** 2)  # Wilson for 0 of 86 base problems
    nothing, everything = cells.loc[("medgemma_4b", "EM", "0-shot")], cells.loc[("medgemma_4b", "EM", "ICL")]
    assert (nothing.ci_low, nothing.ci_high) == pytest.approx((0.0, bound))
    assert (everything.ci_low, everything.ci_high) == pytest.approx((100 - bound, 100.0))
    assert nothing.ci_method == bs.WILSON_DEFF and nothing.n_eff == 86  # issue #20: Wilson on n_eff


def row_weighted_reference(a, b, clusters) -> float:
    """The cluster score test of the row-weighted difference (issue #20): with S_k = Σ_{i∈k}(a_i − b_i),
    X² = (Σ_k S_k)² / Σ_k S_k², p = 2(1 − Φ(√X²)); Durkalski's statistic with weights n_k."""
    sums = {}
    for x, y, k in zip(a, b, clusters):
        sums[k] = sums.get(k, 0) + (x - y)
    denominator = sum(v * v for v in sums.values())
    if denominator == 0:
        return 1.0
    return 2 * (1 - NormalDist().cdf(math.sqrt(sum(sums.values()) ** 2 / denominator)))


def test_plusplus_comparisons_are_cluster_aware_and_never_significant_with_zero_inside(plusplus):
    truth, _, comp = plusplus
    scores = truth["scores"]
    assert comp.p_method.str.startswith("sign-flip").all() and (comp.n_pairs == 1038).all()
    assert (comp.n_problems == 86).all()
    assert (comp.ci_high > comp.ci_low).all()
    for row in comp.itertuples():
        a = scores[(row.model_a, row.metric, row.mode_a)]  # these models' keys are their file tags
        b = scores[(row.model_b, row.metric, row.mode_b)]
        assert abs(row.p_score - row_weighted_reference(a, b, base_of(truth["ids"]))) < 1e-9
        if row.ci_low_marginal != row.ci_high_marginal:  # one test, its own interval (issue #31: sign-flip)
            assert (row.p_value < 0.05) == (row.ci_low_marginal > 0 or row.ci_high_marginal < 0)
        assert row.significant == (row.p_adjusted < 0.05) == (row.ci_low > 0 or row.ci_high < 0)
        assert row.p_adjusted >= row.p_value - 1e-12
    same = comp[(comp.model_a == "MedVLM-R1") & (comp.kind == "icl_vs_0shot")].iloc[0]
    bound = 100 * Z95 ** 2 / (86 + Z95 ** 2)
    assert (same.difference, same.ci_low, same.ci_high) == pytest.approx((0.0, -bound, bound))
    gain = comp[(comp.model_a == "qwen72B") & (comp.kind == "icl_vs_0shot")].iloc[0]
    assert gain.only_b_correct == 0 and gain.only_a_correct > 0 and not gain.significant


def test_default_family_is_icl_vs_0shot(tmp_path):
    build_plusplus(tmp_path / "r")
    assert stats_cli.main([str(tmp_path / "r"), "--out", str(tmp_path / "o"), "--n-boot", "200"]) == 0
    comp = pd.read_csv(tmp_path / "o" / "stats_comparisons.csv")
    assert set(comp.kind) == {"icl_vs_0shot"}


@pytest.fixture(scope="module")
def published_stats(tmp_path_factory):
    if not PUBLISHED.is_dir():
        pytest.skip("published SMMILE outputs not available")
    out = tmp_path_factory.mktemp("pub") / "stats"
    assert stats_cli.main([str(PUBLISHED), "--out", str(out), "--n-boot", "2000", "--failures", "wrong"]) == 0
    est = pd.read_csv(out / "stats_estimates.csv")
    return PUBLISHED, est[est.metric != "NOANS"], pd.read_csv(out / "stats_comparisons.csv")  # the paper's metrics


def wilson_cc(k: int, n: int) -> tuple[float, float]:
    """Newcombe (1998) method 4, the continuity-corrected Wilson interval, written out for k of n."""
    p, z = k / n, Z95
    low = 0.0 if k == 0 else (2 * n * p + z * z - 1 - z * math.sqrt(z * z - 2 - 1 / n + 4 * p * (n * (1 - p) + 1))) / (2 * (n + z * z))
    high = 1.0 if k == n else (2 * n * p + z * z + 1 + z * math.sqrt(z * z + 2 - 1 / n + 4 * p * (n * (1 - p) - 1))) / (2 * (n + z * z))
    return 100 * low, 100 * high


def test_published_smmile_estimates_are_wilson_intervals_of_the_counts(published_stats):
    """Independent problems: the continuity-corrected Wilson interval of k of 111 (issue #20; before, a
    percentile bootstrap), the plain Wilson bound at 0 %."""
    root, est, comp = published_stats
    cells = est.set_index(["model", "metric", "mode"])
    for (model, metric, mode), tag in ((("gpt-4o", "MCQA", "ICL"), "gpt-4o"), (("qwen72B", "MCQA", "0-shot"), "qwen72B")):
        correct = pd.read_csv(root / f"result_{tag}_{mode}_mcqa.csv")["is_correct"].astype(str).str.lower().eq("true")
        k = int(correct.sum())
        row = cells.loc[(model, metric, mode)]
        assert row.accuracy == pytest.approx(100 * k / 111)
        assert (row.ci_low, row.ci_high) == pytest.approx(wilson_cc(k, 111), abs=1e-9)
    assert (~est.clustered).all() and (est.n_rows == 111).all() and (est.n_problems == 111).all()
    zero = est[est.accuracy == 0]
    assert len(zero) == 16 and (zero.ci_low == 0).all()
    assert zero.ci_high.tolist() == pytest.approx([100 * Z95 ** 2 / (111 + Z95 ** 2)] * 16)  # 3.35
    assert comp.p_method.str.startswith("sign-flip").all()


def test_published_smmile_iid_p_values_are_mcnemar_of_the_files(published_stats):
    root, _, comp = published_stats
    for tag, model in (("qwen72B", "qwen72B"), ("gpt-4o", "gpt-4o"), ("llava_7b", "llava_7b")):
        icl = pd.read_csv(root / f"result_{tag}_ICL_mcqa.csv").set_index("problem_id")["is_correct"]
        zero = pd.read_csv(root / f"result_{tag}_0-shot_mcqa.csv").set_index("problem_id")["is_correct"]
        zero = zero.reindex(icl.index)
        b, c = int((icl & ~zero).sum()), int((~icl & zero).sum())
        p = 2 * (1 - NormalDist().cdf(abs(b - c) / math.sqrt(b + c))) if b + c else 1.0
        row = comp[(comp.model_a == model) & (comp.metric == "MCQA")].iloc[0]
        assert (row.only_a_correct, row.only_b_correct) == (b, c)
        assert row.p_score == pytest.approx(p, rel=1e-9)
        n = b + c  # issue #31: the sign-flip test of independent 0/1 pairs is the exact McNemar (binomial) test
        exact = min(1.0, 2 * sum(math.comb(n, k) for k in range(min(b, c) + 1)) / 2 ** n) if b != c else 1.0
        tied = (2 if b != c else 1) * math.comb(n, min(b, c)) / 2 ** n  # P(|t(s)| = |t|)
        if n <= 20:
            assert row.p_exact == pytest.approx(exact, abs=1e-12)
            assert row.p_value == pytest.approx(exact - tied / 2, abs=1e-12)  # the mid-p (Lancaster)
        assert row.n_pairs == 111 and row.significant == (row.p_adjusted < 0.05) == (row.ci_low > 0 or row.ci_high < 0)
