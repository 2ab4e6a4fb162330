"""``smmile stats``: point estimates with percentile CIs and paired comparisons for a results directory.

Per (model, metric, mode) — metric LLM (judge), EM (flexible exact match) or MCQA — the accuracy,
n and a seeded percentile bootstrap CI (cluster bootstrap by base problem for SMMILE++, whose
``<uuid>_perm_<k>`` rows are permutations of one problem and not independent). Paired comparisons
(ICL vs 0-shot per model and metric; model vs model within a metric and mode) are computed on the
problems both sides share (inner join on problem_id) with a paired bootstrap CI of the difference
and an exact McNemar p-value, Holm-corrected across every comparison reported.

Model keys are the variance_analysis ones (``qwen72B``, ``text only``; spec §7.2). Every estimate
uses the same seed, so results do not depend on file order.
"""

from __future__ import annotations

import argparse
import glob
import json
import math
import os
import sys
from dataclasses import dataclass
from itertools import combinations

import numpy as np
import pandas as pd

from smmile.errors import UserError
from smmile.frontdoor import guarded
from smmile.scoring import bootstrap, tables
from smmile.scoring.exact_match import ResultFileError, flexible_matches, read_result_csv
from smmile.scoring.naming import evaluationllm_json_path, extract_model_info

METRICS = ("LLM", "EM", "MCQA")
MODES = ("0-shot", "ICL")
CLUSTER_CHOICES = ("auto", "none", "base")
COMPARE_CHOICES = ("all", "icl", "models", "none")
OWN_OUTPUTS = ("stats_estimates.csv", "stats_comparisons.csv")  # written here; never read as results


@dataclass
class Record:
    """One scored result: per-problem correctness in [0, 1] indexed by problem_id (file order)."""

    model: str
    metric: str
    mode: str
    source: str
    scores: pd.Series


# -- loading ------------------------------------------------------------------------------------------
def _per_problem(ids, values) -> pd.Series:
    """Series indexed by problem_id; duplicated ids are averaged (first-appearance order)."""
    series = pd.Series(np.asarray(values, dtype=np.float64), index=pd.Index([str(i) for i in ids], name="problem_id"))
    return series.groupby(level=0, sort=False).mean() if series.index.has_duplicates else series


def mcqa_scores(csv_path: str) -> pd.Series:
    """MCQA: ``str(is_correct).lower() == 'true'`` per row (spec §7.2)."""
    frame = read_result_csv(csv_path, ("problem_id", "is_correct"))
    return _per_problem(frame["problem_id"], [str(v).lower() == "true" for v in frame["is_correct"]])


def em_scores(csv_path: str) -> pd.Series:
    """EM: flexible exact match (spec §4.4, pandas NA semantics)."""
    frame = read_result_csv(csv_path)
    return _per_problem(frame["problem_id"], flexible_matches(frame))


def llm_scores(csv_path: str) -> pd.Series | None:
    """LLM judge: ``problem_accuracies`` / 100 from ``<stem>_evaluationllm.json``; None if absent."""
    json_path = os.fspath(evaluationllm_json_path(csv_path))
    if not os.path.exists(json_path):
        return None
    try:
        with open(json_path) as handle:
            accuracies = json.load(handle)["problem_accuracies"]
        return _per_problem(accuracies.keys(), [float(v) / 100 for v in accuracies.values()])
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ResultFileError(f"{json_path}: unusable judge file ({type(exc).__name__}: {exc})") from None


def file_records(path: str) -> list[Record]:
    """The scores of one result CSV: MCQA (is_correct), or EM plus LLM judge when judged."""
    info = extract_model_info(path)
    if info.is_closed:
        loaders = [("MCQA", mcqa_scores)]
    else:
        loaders = [("EM", em_scores), ("LLM", llm_scores)]
    records = []
    for metric, loader in loaders:
        scores = loader(path)
        if scores is not None:
            records.append(Record(info.model, metric, info.mode, path, scores))
    return records


def load_records(directory: str, warn=None) -> list[Record]:
    """All scorable results of ``directory`` (CSV names in sorted order; a later file with the same
    (model, metric, mode) replaces an earlier one, as in variance_analysis). Unreadable files and
    files without a mode are reported through ``warn`` and skipped."""
    warn = warn or (lambda message: print(message, file=sys.stderr))
    found: dict[tuple, Record] = {}
    for path in sorted(glob.glob(os.path.join(directory, "*.csv"))):
        if os.path.basename(path) in OWN_OUTPUTS:
            continue
        if extract_model_info(path).mode not in MODES:
            warn(f"warning: {path}: no 0-shot/ICL mode in the file name; skipped")
            continue
        try:
            for record in file_records(path):
                found[(record.model, record.metric, record.mode)] = record
        except ResultFileError as exc:
            warn(f"warning: {exc}; skipped")
    return list(found.values())


# -- estimates ---------------------------------------------------------------------------------------
def clusters_for(ids, cluster: str):
    """Cluster labels for the bootstrap: ``base`` → base problem ids, ``none`` → None (iid),
    ``auto`` → base problem ids only when some id carries ``_perm_<k>``."""
    ids = list(ids)
    if cluster == "base" or (cluster == "auto" and bootstrap.has_permutations(ids)):
        return bootstrap.base_problem_ids(ids)
    return None


def _pct(value: float) -> float:
    return value * 100 if not math.isnan(value) else float("nan")


def estimate(record: Record, n_boot: int, seed: int, cluster: str, level: float) -> dict:
    """One row of ``stats_estimates``: accuracy, CI and se in percent."""
    clusters = clusters_for(record.scores.index, cluster)
    ci = bootstrap.percentile_ci(record.scores.to_numpy(), clusters, n_boot, seed, level)
    return {"model": record.model, "metric": record.metric, "mode": record.mode,
            "n": ci.n, "n_clusters": ci.n_clusters, "clustered": clusters is not None,
            "accuracy": _pct(ci.estimate), "ci_low": _pct(ci.low), "ci_high": _pct(ci.high),
            "se": _pct(ci.se), "level": level, "n_boot": n_boot, "seed": seed,
            "source": os.path.basename(record.source)}


def estimates(records: list[Record], n_boot: int, seed: int, cluster: str, level: float) -> list[dict]:
    """Estimates in table order: model rows as in evaluation_results.txt, then metric, then mode."""
    rows = [estimate(r, n_boot, seed, cluster, level) for r in records]
    return sorted(rows, key=_table_order(rows))


def _table_order(rows: list[dict]):
    models = {row["model"] for row in rows}
    order = {m: i for i, m in enumerate(tables.priority_rows(models) + tables.other_rows(models))}
    return lambda row: (order[row["model"]], METRICS.index(row["metric"]), MODES.index(row["mode"]))


# -- paired comparisons -------------------------------------------------------------------------------
def comparison_pairs(records: list[Record], compare: str) -> list[tuple[str, Record, Record]]:
    """(kind, A, B) pairs; the reported difference is A − B.

    ``icl``: ICL − 0-shot per model and metric. ``models``: model − model within (metric, mode),
    every unordered pair once, in table order. ``all``: both. ``none``: nothing."""
    index = {(r.model, r.metric, r.mode): r for r in records}
    models = {r.model for r in records}
    ordered = tables.priority_rows(models) + tables.other_rows(models)
    pairs = []
    if compare in ("all", "icl"):
        for model in ordered:
            for metric in METRICS:
                icl, zero = index.get((model, metric, "ICL")), index.get((model, metric, "0-shot"))
                if icl is not None and zero is not None:
                    pairs.append(("icl_vs_0shot", icl, zero))
    if compare in ("all", "models"):
        for metric in METRICS:
            for mode in MODES:
                present = [index[(m, metric, mode)] for m in ordered if (m, metric, mode) in index]
                pairs.extend(("model_vs_model", a, b) for a, b in combinations(present, 2))
    return pairs


def _is_binary(values: np.ndarray) -> bool:
    return bool(np.isin(values, (0.0, 1.0)).all())


def compare_pair(kind: str, a: Record, b: Record, n_boot: int, seed: int, cluster: str, level: float) -> dict:
    """Paired bootstrap CI of A − B (percentage points) and exact McNemar on the shared problems."""
    joined = pd.concat([a.scores.rename("a"), b.scores.rename("b")], axis=1, join="inner")
    left, right = joined["a"].to_numpy(), joined["b"].to_numpy()
    clusters = clusters_for(joined.index, cluster)
    diff = bootstrap.paired_difference_ci(left, right, clusters, n_boot, seed, level)
    test = bootstrap.mcnemar_exact(left, right) if len(left) and _is_binary(left) and _is_binary(right) else None
    return {"kind": kind, "metric": a.metric, "model_a": a.model, "mode_a": a.mode,
            "model_b": b.model, "mode_b": b.mode, "n": diff.n, "n_clusters": diff.n_clusters,
            "clustered": clusters is not None,
            "accuracy_a": _pct(float(left.mean())) if len(left) else float("nan"),
            "accuracy_b": _pct(float(right.mean())) if len(right) else float("nan"),
            "difference": _pct(diff.estimate), "ci_low": _pct(diff.low), "ci_high": _pct(diff.high),
            "only_a_correct": test.b if test else None, "only_b_correct": test.c if test else None,
            "p_mcnemar": test.p_value if test else float("nan"), "p_holm": float("nan"),
            "level": level, "n_boot": n_boot, "seed": seed}


def comparisons(records: list[Record], compare: str, n_boot: int, seed: int, cluster: str,
                level: float) -> list[dict]:
    """All requested comparisons with Holm-adjusted McNemar p-values (family = all rows reported)."""
    rows = [compare_pair(kind, a, b, n_boot, seed, cluster, level)
            for kind, a, b in comparison_pairs(records, compare)]
    for row, adjusted in zip(rows, bootstrap.holm([row["p_mcnemar"] for row in rows])):
        row["p_holm"] = adjusted
    return rows


# -- outputs ------------------------------------------------------------------------------------------
def _json_safe(value):
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, (np.integer, np.floating, np.bool_)):
        return _json_safe(value.item())
    return value


def write_rows(rows: list[dict], stem: str, settings: dict) -> list[str]:
    """``<stem>.csv`` (one row per entry) and ``<stem>.json`` (``{"settings", "rows"}``; NaN → null)."""
    pd.DataFrame(rows).to_csv(stem + ".csv", index=False)
    payload = {"settings": settings, "rows": [{k: _json_safe(v) for k, v in row.items()} for row in rows]}
    with open(stem + ".json", "w", encoding="utf-8") as handle:
        json.dump(payload, handle, indent=2, allow_nan=False)
        handle.write("\n")
    return [stem + ".csv", stem + ".json"]


def console_table(rows: list[dict]) -> str:
    """Human-readable estimates: ``model  metric mode  acc [low, high]  n``."""
    lines = [f"{'model':<22} {'metric':<5} {'mode':<7} {'acc %':>7}  {'95% CI':<17} {'n':>6} {'units':>6}"]
    for row in rows:
        ci = f"[{row['ci_low']:.2f}, {row['ci_high']:.2f}]"
        lines.append(f"{row['model']:<22} {row['metric']:<5} {row['mode']:<7} {row['accuracy']:>7.2f}  "
                     f"{ci:<17} {row['n']:>6} {row['n_clusters']:>6}")
    return "\n".join(lines)


def comparison_summary(rows: list[dict], alpha: float = 0.05) -> str:
    significant = [r for r in rows if r["p_holm"] is not None and r["p_holm"] < alpha]
    lines = [f"{len(rows)} paired comparison(s); {len(significant)} significant at Holm-adjusted p < {alpha}"]
    for r in rows:
        if r["kind"] == "icl_vs_0shot":
            lines.append(f"  ICL - 0-shot  {r['model_a']:<22} {r['metric']:<5} {r['difference']:+7.2f} pp "
                         f"[{r['ci_low']:+.2f}, {r['ci_high']:+.2f}]  p={r['p_mcnemar']:.3g}  p_holm={r['p_holm']:.3g}  n={r['n']}")
    return "\n".join(lines)


# -- command line ------------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="smmile stats",
        description="Accuracy with seeded percentile bootstrap CIs per model/metric/mode, and paired "
                    "comparisons (bootstrap CI of the difference, exact McNemar, Holm correction).")
    parser.add_argument("results_dir", help="directory with result_*.csv (+ *_evaluationllm.json)")
    parser.add_argument("--out", help="output directory (default: results_dir)")
    parser.add_argument("--n-boot", type=int, default=bootstrap.DEFAULT_N_BOOT, help="bootstrap resamples (default 10000)")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    parser.add_argument("--level", type=float, default=bootstrap.DEFAULT_LEVEL, help="CI level (default 0.95)")
    parser.add_argument("--cluster", choices=CLUSTER_CHOICES, default="auto",
                        help="auto: resample base problems when ids end in _perm_<k> (SMMILE++); "
                             "base: always by base problem; none: rows iid")
    parser.add_argument("--compare", choices=COMPARE_CHOICES, default="all",
                        help="icl: ICL vs 0-shot per model; models: model vs model per metric/mode; all; none")
    return parser


def _check(args) -> None:
    if not os.path.isdir(args.results_dir):
        raise UserError(f"results directory {args.results_dir} not found")
    if args.n_boot < 1:
        raise UserError("--n-boot must be at least 1")
    if not 0 < args.level < 1:
        raise UserError("--level must be between 0 and 1")


def run(args) -> int:
    _check(args)
    problems: list[str] = []

    def warn(message: str) -> None:
        print(message, file=sys.stderr)
        problems.append(message)

    records = load_records(args.results_dir, warn)
    if not records:
        raise UserError(f"no scorable result files in {args.results_dir}")
    out = args.out or args.results_dir
    os.makedirs(out, exist_ok=True)
    settings = {"results_dir": os.path.abspath(args.results_dir), "n_boot": args.n_boot, "seed": args.seed,
                "level": args.level, "cluster": args.cluster, "compare": args.compare}
    rows = estimates(records, args.n_boot, args.seed, args.cluster, args.level)
    written = write_rows(rows, os.path.join(out, "stats_estimates"), settings)
    with open(os.path.join(out, "stats_table.tex"), "w", encoding="utf-8") as handle:
        handle.write(tables.ci_latex_table(rows))
    written.append(os.path.join(out, "stats_table.tex"))
    print(console_table(rows))
    if args.compare != "none":
        pairs = comparisons(records, args.compare, args.n_boot, args.seed, args.cluster, args.level)
        written += write_rows(pairs, os.path.join(out, "stats_comparisons"), settings)
        print(comparison_summary(pairs))
    print("Written: " + ", ".join(written))
    return 1 if problems else 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``smmile stats``; returns the exit status (2 on bad input)."""
    args = build_parser().parse_args(argv)
    return guarded(lambda: run(args))
