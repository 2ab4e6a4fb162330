"""Coverage of smmile's intervals on SMMILE++-shaped clustered data (issue #20 item 2).

SMMILE++ has 86 base problems with 2, 6 or 24 orders (27, 24 and 35 of them; 1038 rows). Each
simulated data set draws, per base problem, a success probability p_k from a Beta distribution with
mean p and intraclass correlation ρ (Beta(p(1−ρ)/ρ, (1−p)(1−ρ)/ρ)), then its orders as Bernoulli(p_k):
the orders of one problem are correlated with ICC ρ. The estimand is the row-weighted accuracy, whose
expectation is p. Reported: the share of 95 % intervals (``statistics.proportion_interval``) that
contain p, and for paired differences (two such models, A with p + Δ on the same problems, outcomes
correlated through a shared problem effect) the share of ``statistics.paired_score`` intervals that
contain the true row-weighted difference.

    python scripts/coverage_simulation.py [--reps 2000] [--seed 2025]

The fast version runs in ``tests/test_estimand_coverage.py``; docs/analyses.md §4 records the figures
of the full run.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "inference_and_evaluation"))

from smmile.scoring import statistics  # noqa: E402

SIZES = np.array([2] * 27 + [6] * 24 + [24] * 35)
ACCURACIES = (0.005, 0.05, 0.5)
ICCS = (0.3, 0.8)


def clusters(sizes=SIZES) -> np.ndarray:
    return np.repeat(np.arange(len(sizes)), sizes)


def draw(p: float, rho: float, rng: np.random.Generator, sizes=SIZES, latent=None) -> np.ndarray:
    """One data set of 0/1 rows; ``latent`` (uniforms per problem) couples two models' problem effects."""
    a, b = p * (1 - rho) / rho, (1 - p) * (1 - rho) / rho
    u = rng.random(len(sizes)) if latent is None else latent
    p_k = _beta_quantile(u, a, b, rng)
    return (rng.random(int(sizes.sum())) < np.repeat(p_k, sizes)).astype(float)


def _beta_quantile(u, a, b, rng):
    """Beta draws driven by uniforms ``u`` (monotone in u, so a shared u couples two models)."""
    samples = np.sort(rng.beta(a, b, size=4001))
    return samples[np.minimum((u * 4001).astype(int), 4000)]


def proportion_coverage(p: float, rho: float, reps: int, seed: int, weight: str = "row") -> float:
    rng = np.random.default_rng(seed)
    labels = clusters()
    hits = 0
    for _ in range(reps):
        ci = statistics.proportion_interval(draw(p, rho, rng), labels, weight)
        hits += ci.low <= p <= ci.high
    return hits / reps


def difference_coverage(p: float, delta: float, rho: float, reps: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    labels = clusters()
    hits = 0
    for _ in range(reps):
        latent = rng.random(len(SIZES))
        a, b = draw(p + delta, rho, rng, latent=latent), draw(p, rho, rng, latent=latent)
        ci = statistics.paired_score(a, b, labels).interval
        hits += ci.low <= delta <= ci.high
    return hits / reps


def table(reps: int, seed: int) -> list[dict]:
    rows = []
    for rho in ICCS:
        for p in ACCURACIES:
            rows.append({"what": "accuracy", "p": p, "icc": rho,
                         "coverage": proportion_coverage(p, rho, reps, seed)})
        for p, delta in ((0.005, 0.0), (0.05, 0.05), (0.4, 0.1)):
            rows.append({"what": f"difference {delta:+.2f}", "p": p, "icc": rho,
                         "coverage": difference_coverage(p, delta, rho, reps, seed)})
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=2025)
    a = parser.parse_args(argv)
    print(f"{'quantity':<18} {'p':>6} {'ICC':>4} {'coverage':>9}   (nominal 0.95, {a.reps} data sets each)")
    for row in table(a.reps, a.seed):
        print(f"{row['what']:<18} {row['p']:>6.3f} {row['icc']:>4.1f} {row['coverage']:>9.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
