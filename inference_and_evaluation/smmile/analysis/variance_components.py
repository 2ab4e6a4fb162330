"""``smmile analyze variance-components``: how much of the SMMILE++ variance comes from problems and from the
order of the examples, how order-sensitive the models are, and the smallest difference the benchmark can detect
(issue #31, deliverable 6).

Per metric and mode, y_mpo is model m's score on order o of base problem p, on the rows every model has. With the
model means removed (models fixed), a method-of-moments (ANOVA) fit of the crossed random-effects model
y = μ_m + β_p + (mβ)_mp + γ_o(p) + ε_mo(p) (Searle, Casella & McCulloch 1992, ch. 4-5: mean squares set equal to
their expectations; unbalanced orders per problem through n₀ = (N − Σn_p²/N)/(K − 1), Donner 1986; negative
estimates set to 0):

    MS_E = σ²_ε;  MS_MP = σ²_ε + n₀σ²_mp;  MS_O(P) = σ²_ε + Mσ²_γ;  MS_P = σ²_ε + Mσ²_γ + n₀σ²_mp + Mn₀σ²_β

σ²_β: problem difficulty shared by the models; σ²_mp: a model's own problem effect; σ²_γ: an order that is hard
for every model; σ²_ε: the rest, one observation per cell (a model's own order effect and noise). With
deterministic decoding every difference between orders of one problem is order sensitivity, so the problem
share is (σ²_β + σ²_mp)/total and the order share (σ²_γ + σ²_ε)/total. Order sensitivity: the chance that two
orders of one base problem are scored differently (for 0/1 scores: 2c(n − c)/(n(n − 1)) with c of n right),
averaged over the base problems and models, with a seeded percentile bootstrap over base problems. Minimum
detectable difference of two models (or modes) on the same rows at 80 % power, two-sided alpha = 1 − level:
(z_(1−α/2) + z_0.8)·√(2σ²_mp·Σ(n_p/N)² + 2σ²_ε/N) (shared problem and order effects cancel in a paired
difference; on the probability scale, averaged over the models' accuracies).
"""

from __future__ import annotations

import math
import os
from statistics import NormalDist

import numpy as np
import pandas as pd

from smmile.errors import UserError
from smmile.scoring import statistics
from smmile.scoring.scores import load_records

POWER = 0.8
COMPONENTS = ("problem", "model_x_problem", "order", "residual")


def _matrix(records) -> pd.DataFrame:
    """Models × rows (the ids every model has) of one metric and mode."""
    frame = pd.DataFrame({r.model: r.scores for r in records})
    return frame.dropna().T


def components(y: pd.DataFrame) -> dict:
    """The method-of-moments variance components (module docstring) of models × rows ``y``."""
    m, n = y.shape
    problems = np.asarray(statistics.base_problem_ids(y.columns))
    codes = np.unique(problems, return_inverse=True)[1]
    k = int(codes.max()) + 1
    sizes = np.bincount(codes).astype(float)
    if m < 2 or k < 2 or n <= k:
        raise UserError("variance components need at least two models and SMMILE++ rows (<id>_perm_<k>) of "
                        "several orders per base problem")
    z = y.to_numpy(dtype=float)
    z = z - z.mean(axis=1, keepdims=True)
    order_means = z.mean(axis=0)
    model_problem = np.stack([np.bincount(codes, weights=row) / sizes for row in z])  # m × k
    problem_means = model_problem.mean(axis=0)
    ms_p = float(np.sum(m * sizes * problem_means ** 2)) / (k - 1)
    ms_o = float(np.sum(m * (order_means - problem_means[codes]) ** 2)) / (n - k)
    ms_mp = float(np.sum(sizes * (model_problem - problem_means) ** 2)) / ((m - 1) * (k - 1))
    resid = z - order_means - model_problem[:, codes] + problem_means[codes]
    ms_e = float(np.sum(resid ** 2)) / ((m - 1) * (n - k))
    n0 = (n - float(np.sum(sizes ** 2)) / n) / (k - 1)
    values = {"residual": ms_e, "model_x_problem": max(0.0, (ms_mp - ms_e) / n0),
              "order": max(0.0, (ms_o - ms_e) / m)}
    values["problem"] = max(0.0, (ms_p - ms_o - ms_mp + ms_e) / (m * n0))
    total = sum(values.values())
    share = {f"share_{c}": values[c] / total if total > 0 else math.nan for c in COMPONENTS}
    return {"n_models": m, "n_rows": n, "n_problems": k, "n0": n0, **{f"var_{c}": values[c] for c in COMPONENTS},
            **share, "share_problems": share["share_problem"] + share["share_model_x_problem"],
            "share_orders": share["share_order"] + share["share_residual"],
            "weights_sq": float(np.sum((sizes / n) ** 2))}


def order_sensitivity(y: pd.DataFrame, n_boot: int, seed: int, level: float) -> statistics.Interval:
    """Mean over base problems (and models) of the chance that two of its orders score differently."""
    problems = np.asarray(statistics.base_problem_ids(y.columns))
    per_problem = []
    for problem in dict.fromkeys(problems):
        block = y.loc[:, problems == problem].to_numpy(dtype=float)
        n = block.shape[1]
        if n < 2:
            continue
        sums, squares = block.sum(axis=1), (block ** 2).sum(axis=1)
        per_problem.append(float(np.mean(2 * (n * squares - sums ** 2) / (n * (n - 1)))))  # mean (y_i − y_j)² / 1
    return statistics.percentile_ci(per_problem, None, n_boot, seed, level)


def mdd(parts: dict, level: float) -> float:
    z = NormalDist().inv_cdf(1 - (1 - level) / 2) + NormalDist().inv_cdf(POWER)
    return z * math.sqrt(2 * parts["var_model_x_problem"] * parts["weights_sq"] + 2 * parts["var_residual"] /
                         parts["n_rows"])


def variance_components(results_dir: str, n_boot: int = statistics.DEFAULT_N_BOOT, seed: int = 0,
                        level: float = statistics.DEFAULT_LEVEL) -> list[dict]:
    """One row per metric and mode of ``results_dir`` with at least two models on SMMILE++ rows."""
    if not os.path.isdir(results_dir):
        raise UserError(f"results directory {results_dir} not found")
    from smmile.scoring.estimates import COMPARED

    records = [r for r in load_records(results_dir)
               if r.metric in COMPARED and statistics.has_permutations(r.scores.index)]
    rows = []
    for (metric, mode), group in pd.DataFrame([(r.metric, r.mode, r) for r in records],
                                              columns=["metric", "mode", "record"]).groupby(["metric", "mode"]):
        y = _matrix(list(group["record"]))
        if y.shape[0] < 2:
            continue
        parts = components(y)
        sens = order_sensitivity(y, n_boot, seed, level)
        rows.append({"metric": metric, "mode": mode, **parts, "order_sensitivity": 100 * sens.estimate,
                     "order_sensitivity_low": 100 * sens.low, "order_sensitivity_high": 100 * sens.high,
                     "mdd_pp": 100 * mdd(parts, level), "power": POWER, "level": level, "n_boot": n_boot,
                     "seed": seed, "method": "method of moments (ANOVA), crossed model x problem x order"})
    if not rows:
        raise UserError(f"no metric in {results_dir} has two or more models scored on SMMILE++ rows "
                        "(<id>_perm_<k>)")
    return rows


def console(rows: list[dict]) -> str:
    lines = [f"{'metric':<5} {'mode':<7} {'models':>6} {'problems %':>10} {'orders %':>9} {'shared order %':>15} "
             f"{'order sensitivity % [CI]':<28} {'MDD pp':>7}"]
    for r in rows:
        ci = f"{r['order_sensitivity']:.1f} [{r['order_sensitivity_low']:.1f}, {r['order_sensitivity_high']:.1f}]"
        lines.append(f"{r['metric']:<5} {r['mode']:<7} {r['n_models']:>6} {100 * r['share_problems']:>10.1f} "
                     f"{100 * r['share_orders']:>9.1f} {100 * r['share_order']:>15.1f} {ci:<28} {r['mdd_pp']:>7.2f}")
    lines.append("problems %: share of the variance from base problems (shared and per model); orders %: from the "
                 "order of the examples (shared: an order hard for every model); order sensitivity: chance that two "
                 f"orders of one base problem score differently ({rows[0]['level']:.0%} bootstrap CI over base "
                 f"problems); MDD: smallest paired difference detected with {POWER:.0%} power; method of moments "
                 "(docs/analyses.md)")
    return "\n".join(lines)


def run_variance_components(results: list[str], *, out: str, force: bool = False, n_boot: int, seed: int,
                            level: float) -> str:
    """Fit the one results folder ``results``, write ``variance_components.csv/json`` into ``out`` (a folder this
    command owns) and return the console report."""
    from smmile import fsguard
    from smmile.scoring.estimates import check_resampling
    from smmile.scoring.stats_run import write_rows

    if len(results) != 1 or "=" in results[0]:
        raise UserError("smmile analyze variance-components takes one SMMILE++ results folder (no LABEL=)")
    results_dir = results[0]
    check_resampling(n_boot, level)
    rows = variance_components(results_dir, n_boot, seed, level)
    folder = os.fspath(fsguard.prepare_output_dir(out, "smmile analyze", force=force))
    with fsguard.OutputLock(folder, f"the analysis folder {folder}"):
        settings = {"results_dir": os.path.abspath(results_dir), "n_boot": n_boot, "seed": seed, "level": level}
        written = write_rows(rows, os.path.join(folder, "variance_components"), settings)
    return console(rows) + "\nWritten: " + ", ".join(written)
