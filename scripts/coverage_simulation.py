"""Coverage of smmile's intervals on SMMILE++-shaped clustered data (issue #20 item 2).

SMMILE++ has 86 base problems with 2, 6 or 24 orders (27, 24 and 35 of them; 1038 rows). Each
simulated data set draws, per base problem, a success probability p_k from a Beta distribution with
mean p and intraclass correlation ρ (Beta(p(1−ρ)/ρ, (1−p)(1−ρ)/ρ)), then its orders as Bernoulli(p_k):
the orders of one problem are correlated with ICC ρ. The estimand is the row-weighted accuracy, whose
expectation is p. Reported: the share of 95 % intervals (``statistics.proportion_interval``) that
contain p, and for paired differences (two such models, A with p + Δ on the same problems, outcomes
correlated through a shared problem effect) the share of ``statistics.paired_score`` intervals that
contain the true row-weighted difference.

Issue #31 adds the rare-event paired cells, where the exact-match findings are: the interval and test that
``smmile stats`` prints for a comparison alone (``signflip``: the sign-flip test over base problems, its mid-p,
its interval D ± c·se₀ with the far side from MOVER), on SMMILE++ (86 base problems) and SMMILE (111 independent
problems) shapes: 2 % → +2 pp, 5 % → +5 pp, one-directional discordance (B always wrong, A 3 %), and no
difference at 2 % and 5 % (size); beside it the conventional sign-flip p's rejection rate, and "ceiling": the
most any non-randomised test symmetric in A and B can reject while its size given the K base problems with a
difference stays ≤ 0.07 (E[2⌊0.035·2^K⌋/2^K]: of the 2^K equally likely sign patterns it may reject at most
that many, in ± pairs). For speed the simulation enumerates at most 2^12 patterns and draws 1999 beyond
(``smmile stats``: 2^20, 100 000).

    python scripts/coverage_simulation.py [--reps 2000] [--seed 2025] [--paired-reps 1000]

The fast version runs in ``tests/test_estimand_coverage.py``; docs/analyses.md §4 records the figures
of the full run.
"""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "inference_and_evaluation"))

from smmile.scoring import signflip, statistics  # noqa: E402

SIZES = np.array([2] * 27 + [6] * 24 + [24] * 35)
ACCURACIES = (0.005, 0.05, 0.5)
ICCS = (0.3, 0.8)


def clusters(sizes=SIZES) -> np.ndarray:
    return np.repeat(np.arange(len(sizes)), sizes)


def draw(p: float, rho: float, rng: np.random.Generator, sizes=SIZES, latent=None, fixed=False) -> np.ndarray:
    """One data set of 0/1 rows; ``latent`` (uniforms per problem) couples two models' problem effects;
    ``fixed``: the Beta quantiles from one table per (p, ρ) (``_table``), so two models with the same p and ρ
    have the same problem probabilities, as a null needs."""
    a, b = p * (1 - rho) / rho, (1 - p) * (1 - rho) / rho
    u = rng.random(len(sizes)) if latent is None else latent
    samples = _table(a, b) if fixed else np.sort(rng.beta(a, b, size=4001))
    p_k = samples[np.minimum((u * 4001).astype(int), 4000)]  # monotone in u, so a shared u couples two models
    return (rng.random(int(sizes.sum())) < np.repeat(p_k, sizes)).astype(float)


@functools.lru_cache(maxsize=None)
def _table(a: float, b: float) -> np.ndarray:
    return np.sort(np.random.default_rng(0).beta(a, b, size=4001))


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


SHAPES = {"SMMILE++": SIZES, "SMMILE": np.ones(111, dtype=int)}
RARE = (("2% -> +2pp", 0.02, 0.02), ("5% -> +5pp", 0.05, 0.05), ("3% vs 0", 0.0, 0.03),
        ("2% = 2% (size)", 0.02, 0.0), ("5% = 5% (size)", 0.05, 0.0))


def signflip_cell(shape: str, p: float, delta: float, rho: float, reps: int, seed: int) -> dict:
    """Coverage of the interval smmile prints for one comparison (sign-flip, family of one) and the share of
    data sets in which it is significant (the size where ``delta`` = 0). ``p`` = 0: B is always wrong
    (one-directional discordance), A right with chance ``delta``."""
    sizes = SHAPES[shape]
    labels = clusters(sizes)
    rng = np.random.default_rng(seed)
    hits = rejected = mover_hits = mover_rejected = printed_hits = conventional = ceiling = 0
    for _ in range(reps):
        latent = rng.random(len(sizes))
        a = draw(p + delta, rho, rng, sizes, latent, fixed=True)
        b = draw(p, rho, rng, sizes, latent, fixed=True) if p > 0 else np.zeros(len(a))
        unit = signflip.units(a - b, labels)
        flip_seed = int(rng.integers(2 ** 31))
        result, = signflip.family_test([unit], 0.05, n_flips=1999, seed=flip_seed)
        conventional += signflip.family_test([unit], 0.05, n_flips=1999, seed=flip_seed, mid=False)[0].significant
        k = int(np.count_nonzero(unit.values))
        ceiling += 2 * int(0.035 * 2 ** k) / 2 ** k if k < 60 else 0.07
        estimate = float(np.mean(a - b))
        low, high = signflip.interval(estimate, unit, result.marginal)
        if np.isnan(low):  # no base problem with a difference: the bound on the K units
            low, high = statistics.bound_interval(estimate, len(sizes), statistics.DIFFERENCE)
        hits += low <= delta <= high
        rejected += result.p_value < 0.05
        mover = statistics.mover_difference(a, b, labels if shape == "SMMILE++" else None)
        mover_hits += mover.low <= delta <= mover.high
        mover_rejected += mover.low > 0 or mover.high < 0
        low, high = signflip.widen((low, high), (mover.low, mover.high), result.p_value < 0.05)
        printed_hits += low <= delta <= high
    return {"coverage": hits / reps, "significant": rejected / reps, "mover_coverage": mover_hits / reps,
            "mover_significant": mover_rejected / reps, "printed_coverage": printed_hits / reps,
            "conventional": conventional / reps, "ceiling": ceiling / reps}


def rare_table(reps: int, seed: int) -> list[dict]:
    signflip.EXACT_MAX = 12
    rows = []
    for shape in SHAPES:
        for rho in (ICCS if shape == "SMMILE++" else (0.3,)):
            for what, p, delta in RARE:
                rows.append({"shape": shape, "what": what, "icc": rho, **signflip_cell(shape, p, delta, rho, reps, seed)})
    return rows


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
    parser.add_argument("--paired-reps", type=int, default=1000, help="data sets per rare-event paired cell (0: skip)")
    parser.add_argument("--rare-only", action="store_true", help="only the rare-event paired cells (issue #31)")
    a = parser.parse_args(argv)
    if not a.rare_only:
        print(f"{'quantity':<18} {'p':>6} {'ICC':>4} {'coverage':>9}   (nominal 0.95, {a.reps} data sets each)")
        for row in table(a.reps, a.seed):
            print(f"{row['what']:<18} {row['p']:>6.3f} {row['icc']:>4.1f} {row['coverage']:>9.3f}")
    if a.paired_reps:
        print(f"\n{'shape':<9} {'paired cell':<15} {'ICC':>4} {'printed: cover':>15} {'signif.':>8} "
              f"{'conventional':>12} {'ceiling':>8} {'sign-flip alone':>16} {'MOVER: cover':>13} {'signif.':>8}   "
              f"(nominal 0.95 / size 0.05, {a.paired_reps} data sets each, seed {a.seed})")
        for row in rare_table(a.paired_reps, a.seed):
            print(f"{row['shape']:<9} {row['what']:<15} {row['icc']:>4.1f} {row['printed_coverage']:>15.3f} "
                  f"{row['significant']:>8.3f} {row['conventional']:>12.3f} {row['ceiling']:>8.3f} "
                  f"{row['coverage']:>16.3f} {row['mover_coverage']:>13.3f} {row['mover_significant']:>8.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
