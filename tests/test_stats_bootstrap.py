"""Known-answer tests for smmile.scoring.statistics (faithful legacy bootstrap + modern statistics)."""

import math
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "inference_and_evaluation"))

from smmile.scoring import statistics as bs  # noqa: E402


# -- legacy (variance_analysis) bootstrap: vectorised == original loop, bit for bit ------------------
def legacy_bootstrap_loop(values, n_boot=1000, rng=None):
    """The original variance_analysis.py per-resample loop (the reference for the vectorised version)."""
    rng = np.random if rng is None else rng
    data = np.asarray(values)
    n = len(data)
    if n == 0:
        return float("nan"), float("nan")
    accuracies = [np.mean(data[rng.choice(n, n, replace=True)]) * 100 for _ in range(n_boot)]
    return float(np.mean(accuracies)), float(np.std(accuracies))


@pytest.mark.parametrize("n", [1, 2, 5, 111, 1038])
def test_legacy_choice_matrix_equals_sequential_calls(n):
    a = np.random.RandomState(42).choice(n, size=(300, n), replace=True)
    rng = np.random.RandomState(42)
    b = np.stack([rng.choice(n, n, replace=True) for _ in range(300)])
    assert np.array_equal(a, b)


@pytest.mark.parametrize("n", [1, 3, 111, 1038])
@pytest.mark.parametrize("kind", ["bool", "float01", "real"])
def test_vectorised_legacy_bootstrap_is_bit_identical_to_loop(n, kind):
    data_rng = np.random.RandomState(7)
    if kind == "bool":
        values = data_rng.rand(n) < 0.3
    elif kind == "float01":
        values = (data_rng.rand(n) < 0.6).astype(float)
    else:
        values = data_rng.rand(n)
    fast_rng, slow_rng = np.random.RandomState(42), np.random.RandomState(42)
    for _ in range(3):  # several cells on one stream: the stream position must stay in step
        assert bs.legacy_bootstrap(values, 1000, fast_rng) == legacy_bootstrap_loop(values, 1000, slow_rng)
    assert fast_rng.randint(0, 2**31) == slow_rng.randint(0, 2**31)


def test_legacy_bootstrap_uses_global_stream_like_the_original():
    values = [True, False, True, True, False] * 20
    np.random.seed(42)
    expected = legacy_bootstrap_loop(values)
    np.random.seed(42)
    assert bs.legacy_bootstrap(values) == expected


def test_legacy_bootstrap_chunking_keeps_the_stream(monkeypatch):
    values = (np.random.RandomState(1).rand(1038) < 0.4)
    whole = bs.legacy_bootstrap(values, 1000, np.random.RandomState(42))
    monkeypatch.setattr(bs, "_CHUNK_ELEMENTS", 1038 * 7)  # 7 rows per chunk, last chunk partial
    assert bs.legacy_bootstrap(values, 1000, np.random.RandomState(42)) == whole


def test_legacy_bootstrap_empty_draws_nothing():
    rng = np.random.RandomState(42)
    mean, std = bs.legacy_bootstrap([], 1000, rng)
    assert math.isnan(mean) and math.isnan(std)
    assert rng.randint(0, 2**31) == np.random.RandomState(42).randint(0, 2**31)


def test_mean_only():
    assert bs.mean_only([1, 0, 0, 1]) == 50.0
    assert math.isnan(bs.mean_only([]))


# -- percentile CIs ----------------------------------------------------------------------------------
Z = 1.959963984540054


def test_ci_guards_for_tiny_samples():
    empty = bs.percentile_ci([])
    assert math.isnan(empty.estimate) and math.isnan(empty.low) and empty.n == 0
    one = bs.percentile_ci([1.0])  # Wilson for 1 of 1: [1 / (1 + z²), 1]
    assert one.estimate == 1.0 and one.n == 1 and one.method == bs.BOUND
    assert (one.low, one.high) == pytest.approx((1 / (1 + Z * Z), 1.0))
    single_cluster = bs.percentile_ci([1, 0, 1], clusters=["a", "a", "a"])
    u = Z * Z / (1 + Z * Z)  # one unit: at most this share of units could differ from 2/3
    assert single_cluster.n_clusters == 1
    assert (single_cluster.low, single_cluster.high) == pytest.approx((2 / 3 * (1 - u), 2 / 3 + u / 3))


@pytest.mark.parametrize("n", [1, 5, 111, 1038])
def test_intervals_at_0_and_100_percent_are_wilson_intervals(n):
    for value in (0.0, 1.0):
        ci = bs.percentile_ci([value] * n, n_boot=500)
        low, high = _wilson(value, n)
        assert (ci.low, ci.high) == pytest.approx((low, high), abs=1e-12)
        assert ci.high > ci.low and ci.method == bs.BOUND and math.isnan(ci.se)
    assert bs.percentile_ci([0.0] * 111).high == pytest.approx(0.03345, abs=1e-5)  # issue #12: 0/111


def _wilson(p, n):
    """Textbook Wilson score interval (written here independently of the code under test)."""
    centre = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
    half = Z / (1 + Z * Z / n) * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def test_constant_clusters_and_tiny_n_boot_never_give_zero_width():
    clustered = bs.percentile_ci([0.5] * 48, clusters=["a"] * 24 + ["b"] * 24)
    assert clustered.low < 0.5 < clustered.high and clustered.n_clusters == 2
    one_resample = bs.percentile_ci([1, 0, 1, 0, 1], n_boot=1)
    assert one_resample.high > one_resample.low


def test_ci_is_seeded_and_brackets_the_estimate():
    values = (np.random.RandomState(3).rand(500) < 0.3).astype(float)
    first = bs.percentile_ci(values, n_boot=2000, seed=5)
    assert first == bs.percentile_ci(values, n_boot=2000, seed=5)
    assert first.low < first.estimate < first.high
    binomial_sd = math.sqrt(first.estimate * (1 - first.estimate) / 500)
    assert first.se == pytest.approx(binomial_sd, rel=0.1)
    assert first.high - first.low == pytest.approx(2 * 1.96 * binomial_sd, rel=0.15)


def test_ci_coverage_sanity():
    rng = np.random.default_rng(11)
    p, n, hits, trials = 0.3, 200, 0, 300
    for seed in range(trials):
        ci = bs.percentile_ci((rng.random(n) < p).astype(float), n_boot=1000, seed=seed)
        hits += ci.low <= p <= ci.high
    assert 0.89 <= hits / trials <= 0.99


def test_generic_path_for_continuous_values_agrees_with_theory():
    values = np.random.RandomState(4).rand(300)  # >64 distinct values: index resampling path
    ci = bs.percentile_ci(values, n_boot=4000, seed=1)
    assert ci.se == pytest.approx(values.std(ddof=0) / math.sqrt(300), rel=0.1)


def test_cluster_bootstrap_is_wider_on_perfectly_clustered_data():
    base = (np.random.RandomState(8).rand(100) < 0.4).astype(float)
    values = np.repeat(base, 10)  # 10 identical permutations per base problem
    ids = [f"p{i}_perm_{k}" for i in range(100) for k in range(10)]
    clusters = bs.base_problem_ids(ids)
    iid = bs.percentile_ci(values, n_boot=4000, seed=0)
    clustered = bs.percentile_ci(values, clusters=clusters, n_boot=4000, seed=0)
    assert clustered.n_clusters == 100 and iid.n_clusters == 1000
    assert clustered.estimate == iid.estimate
    ratio = (clustered.high - clustered.low) / (iid.high - iid.low)
    assert 2.5 < ratio < 4.0  # theory: sqrt(10) ≈ 3.16


def test_singleton_clusters_match_iid_width():
    values = (np.random.RandomState(9).rand(400) < 0.5).astype(float)
    iid = bs.percentile_ci(values, n_boot=4000, seed=0)
    singleton = bs.percentile_ci(values, clusters=[str(i) for i in range(400)], n_boot=4000, seed=0)
    assert singleton.se == pytest.approx(iid.se, rel=0.1)


def test_base_problem_ids():
    ids = ["abc_perm_0", "abc_perm_12", "def", "x_perm_y"]
    assert bs.base_problem_ids(ids) == ["abc", "abc", "def", "x_perm_y"]
    assert bs.has_permutations(ids) and not bs.has_permutations(["abc", "def"])
