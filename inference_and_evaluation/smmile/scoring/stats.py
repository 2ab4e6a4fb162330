"""The work of ``smmile stats``: point estimates with percentile CIs and paired comparisons for a results directory.

Per (model, metric, mode) — metric LLM (judge), EM (flexible exact match) or MCQA — the accuracy,
``n_rows`` and ``n_problems`` and a seeded percentile bootstrap CI (cluster bootstrap by base
problem for SMMILE++, whose ``<uuid>_perm_<k>`` rows are permutations of one problem and not
independent). Paired comparisons (ICL vs 0-shot per model and metric; model vs model within a metric
and mode) are computed on the problems both sides share (``scoring.pairing``) with a paired bootstrap
CI of the difference and one paired test (``bootstrap.paired_test``: exact McNemar for independent
problems, the cluster-adjusted McNemar of Durkalski et al. 2003 for clustered rows), Holm-corrected
within each kind of comparison; ``significant`` needs both the Holm-adjusted p < 1 − level and an
interval that excludes 0.

Model keys are the variance_analysis ones (``qwen72B``, ``text only``; spec §7.2). Every estimate
uses the same seed, so results do not depend on file order.
"""

from __future__ import annotations

import math
import os
import sys
from dataclasses import asdict, dataclass
from itertools import combinations

import numpy as np
import pandas as pd

from smmile import fsguard
from smmile.errors import UserError
from smmile.scoring import bootstrap, discovery, integrity, metrics, tables
from smmile.scoring.discovery import ResultFile
from smmile.scoring.exact_match import ResultFileError
from smmile.scoring.naming import evaluationllm_json_path
from smmile.scoring.pairing import pair_scores, pairing_notes

METRICS = tuple(metrics.METRICS)  # LLM, EM, MCQA: the tables' column order
MODES = discovery.MODES
CLUSTER_CHOICES = ("auto", "none", "base")
COMPARE_CHOICES = ("icl", "models", "all", "none")
KINDS = ("icl_vs_0shot", "model_vs_model")  # each kind is its own Holm family
MAX_NOTES = 10  # pairing warnings printed in full; the rest are counted


@dataclass
class Record:
    """One scored result: per-problem correctness in [0, 1] indexed by problem_id (file order; the
    rows of a duplicated id averaged), the gold answer per problem_id when the CSV has a
    ``true_answer`` column, the ``ResultFile`` it came from (its identity, tag, manifest) and the CSV
    as read (the records of one file share it; the report's problem explorer shows its answers)."""

    model: str
    metric: str
    mode: str
    source: str
    scores: pd.Series
    gold: pd.Series | None = None
    result: ResultFile | None = None
    frame: pd.DataFrame | None = None


def _warn_stderr(message: str) -> None:
    print(message, file=sys.stderr)


# -- loading (scoring.discovery finds and identifies the files, scoring.metrics scores them) -------------
def _per_problem(scores: pd.Series, path, warn) -> pd.Series:
    """One score per problem_id: rows of a duplicated id are averaged (as evaluate_EM's and the judge's
    ``problem_accuracies`` are), with a warning naming the file."""
    if not scores.index.has_duplicates:
        return scores
    duplicated = scores.index[scores.index.duplicated()].unique()
    warn(f"warning: {path}: {len(duplicated)} problem id(s) appear more than once (first: {duplicated[0]}); "
         "their rows are averaged into one score per problem")
    return scores.groupby(level=0, sort=False).mean()


def _gold(frame: pd.DataFrame) -> pd.Series | None:
    if "true_answer" not in frame.columns:
        return None
    ids = frame["problem_id"].astype(str)
    return pd.Series(frame["true_answer"].to_numpy(), index=ids).groupby(level=0, sort=False).first()


def result_records(result: ResultFile, frame: pd.DataFrame, warn=None) -> list[Record]:
    """The records of one result: MCQA, or EM plus the judge when it was run."""
    warn = warn or _warn_stderr
    records, gold = [], _gold(frame)
    for metric in metrics.metrics_for(result.fmt):
        try:
            scores = metrics.metric_scores(result, metric, frame=frame)
        except ResultFileError as exc:
            if metric.source != "judge":
                raise
            warn(f"warning: {exc}; {metric.name} skipped")  # the file's other metrics are still scored
            continue
        if scores is not None and scores.empty:
            warn(f"warning: {evaluationllm_json_path(result.csv)}: no scored problem; {metric.name} skipped")
        elif scores is not None:
            scores = _per_problem(scores, result.csv if metric.source == "csv" else
                                  evaluationllm_json_path(result.csv), warn)
            records.append(Record(result.identity.key, metric.name, result.mode, os.fspath(result.csv),
                                  scores, gold, result, frame))
    return records


def file_records(path: str, warn=None) -> list[Record]:
    """The records of one result CSV given by path (identified like ``load_records``'s files)."""
    warn = warn or _warn_stderr
    result = discovery.result_for_path(path, rules="variance", warn=warn)
    if result.mode not in MODES:
        raise ResultFileError(f"{path}: no 0-shot/ICL mode (file name or manifest)")
    return result_records(result, metrics.read_rows(result), warn)


def load_records(directory: str, warn=None) -> list[Record]:
    """All scorable results of ``directory`` (``discovery.find_results``, variance_analysis's naming
    rules for files without a manifest; of two files for one result, one is used and both named).
    A file that does not parse cleanly or has no rows, a file without a mode, and a result with
    another number of problems than the others of its dataset (``integrity``) are named through
    ``warn`` and skipped; duplicated problem ids are named too."""
    warn = warn or _warn_stderr
    found = []
    for result in discovery.find_results(directory, rules="variance", warn=warn):
        if result.mode not in MODES:
            warn(f"warning: {result.path}: no 0-shot/ICL mode in the file name or manifest; skipped")
        else:
            found.append(result)
    frames, failures = integrity.screen(found, metrics.read_rows, integrity.problem_count)
    for message in failures.values():
        warn(f"warning: {message.removesuffix('; not scored')}; skipped")
    records = []
    for result in found:
        if result.path in frames:
            try:
                records += result_records(result, frames[result.path], warn)
            except ResultFileError as exc:
                warn(f"warning: {exc}; skipped")
    return records


# -- estimates ---------------------------------------------------------------------------------------
def clusters_for(ids, cluster: str):
    """Cluster labels for the bootstrap and the test: ``base`` → base problem ids, ``none`` → None
    (iid), ``auto`` → base problem ids only when some id carries ``_perm_<k>``."""
    ids = list(ids)
    if cluster == "base" or (cluster == "auto" and bootstrap.has_permutations(ids)):
        return bootstrap.base_problem_ids(ids)
    return None


def _pct(value: float) -> float:
    return value * 100 if not math.isnan(value) else float("nan")


def estimate(record: Record, n_boot: int, seed: int, cluster: str, level: float) -> dict:
    """One row of ``stats_estimates``: accuracy, CI and se in percent; n_rows and n_problems."""
    clusters = clusters_for(record.scores.index, cluster)
    ci = bootstrap.percentile_ci(record.scores.to_numpy(), clusters, n_boot, seed, level)
    return {"model": record.model, "metric": record.metric, "mode": record.mode,
            "n_rows": ci.n, "n_problems": ci.n_clusters, "clustered": clusters is not None,
            "accuracy": _pct(ci.estimate), "ci_low": _pct(ci.low), "ci_high": _pct(ci.high),
            "ci_method": ci.method, "se": _pct(ci.se), "level": level, "n_boot": n_boot, "seed": seed,
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


def _label(kind: str, a: Record, b: Record) -> str:
    if kind == "icl_vs_0shot":
        return f"{a.model} {a.metric} ICL vs 0-shot"
    return f"{a.metric} {a.mode}: {a.model} vs {b.model}"


def compare_pair(kind: str, a: Record, b: Record, n_boot: int, seed: int, cluster: str, level: float,
                 exclude_gold_mismatch: bool = False, notes: list | None = None) -> dict:
    """Paired bootstrap CI of A − B (percentage points) and the paired test on the shared problems;
    what the pairing left out is appended to ``notes``. ``p_holm``/``significant`` are set by
    ``comparisons`` (they depend on the family)."""
    pairing = pair_scores(a.scores, b.scores, a.gold, b.gold, exclude_gold_mismatch=exclude_gold_mismatch)
    if notes is not None:
        notes.extend(pairing_notes(pairing, _label(kind, a, b)))
    left, right = pairing.frame["a"].to_numpy(), pairing.frame["b"].to_numpy()
    clusters = clusters_for(pairing.frame["problem_id"], cluster)
    diff = bootstrap.paired_difference_ci(left, right, clusters, n_boot, seed, level)
    test = bootstrap.paired_test(left, right, clusters)
    return {"kind": kind, "metric": a.metric, "model_a": a.model, "mode_a": a.mode,
            "model_b": b.model, "mode_b": b.mode, "n_a": len(a.scores), "n_b": len(b.scores),
            "n_pairs": diff.n, "n_problems": diff.n_clusters, "clustered": clusters is not None,
            "gold_mismatches": len(pairing.gold_mismatches), "gold_mismatches_excluded": pairing.excluded,
            "accuracy_a": _pct(float(left.mean())) if len(left) else float("nan"),
            "accuracy_b": _pct(float(right.mean())) if len(right) else float("nan"),
            "difference": _pct(diff.estimate), "ci_low": _pct(diff.low), "ci_high": _pct(diff.high),
            "ci_method": diff.method, "only_a_correct": test.only_a, "only_b_correct": test.only_b,
            "p_value": test.p_value, "p_method": test.method, "p_holm": float("nan"), "significant": False,
            "level": level, "n_boot": n_boot, "seed": seed}


def adjust(rows: list[dict], level: float) -> None:
    """Holm within each kind of comparison (its family), then ``significant`` = Holm-adjusted
    p < 1 − level AND the interval excludes 0."""
    for kind in KINDS:
        family = [row for row in rows if row["kind"] == kind]
        for row, adjusted in zip(family, bootstrap.holm([row["p_value"] for row in family])):
            row["p_holm"] = adjusted
            row["significant"] = bootstrap.is_significant(adjusted, row["ci_low"], row["ci_high"], 1 - level)


def comparisons(records: list[Record], compare: str, n_boot: int, seed: int, cluster: str, level: float,
                exclude_gold_mismatch: bool = False, warn=None) -> list[dict]:
    """All requested comparisons with Holm-adjusted p-values and ``significant``; pairing warnings go
    to ``warn`` (the first ``MAX_NOTES`` in full, then a count)."""
    notes: list[str] = []
    rows = [compare_pair(kind, a, b, n_boot, seed, cluster, level, exclude_gold_mismatch, notes)
            for kind, a, b in comparison_pairs(records, compare)]
    adjust(rows, level)
    warn = warn or _warn_stderr
    for note in notes[:MAX_NOTES]:
        warn(f"warning: {note}")
    if len(notes) > MAX_NOTES:
        warn(f"warning: {len(notes) - MAX_NOTES} more pairing warning(s) like these; see the n_a, n_b, n_pairs "
             "and gold_mismatches columns")
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
    with fsguard.atomic_path(stem + ".csv") as tmp:
        pd.DataFrame(rows).to_csv(tmp, index=False)
    payload = {"settings": settings, "rows": [{k: _json_safe(v) for k, v in row.items()} for row in rows]}
    fsguard.atomic_write_json(stem + ".json", payload, allow_nan=False)
    return [stem + ".csv", stem + ".json"]


def console_table(rows: list[dict]) -> str:
    """Human-readable estimates: ``model  metric mode  acc [low, high]  n_rows  n_problems``."""
    lines = [f"{'model':<22} {'metric':<5} {'mode':<7} {'acc %':>7}  {'95% CI':<17} {'rows':>6} {'probl.':>6}"]
    for row in rows:
        ci = f"[{row['ci_low']:.2f}, {row['ci_high']:.2f}]"
        lines.append(f"{row['model']:<22} {row['metric']:<5} {row['mode']:<7} {row['accuracy']:>7.2f}  "
                     f"{ci:<17} {row['n_rows']:>6} {row['n_problems']:>6}")
    return "\n".join(lines)


def comparison_summary(rows: list[dict], level: float = bootstrap.DEFAULT_LEVEL) -> str:
    alpha = 1 - level
    lines = []
    for kind in KINDS:
        family = [r for r in rows if r["kind"] == kind]
        if family:
            lines.append(f"{len(family)} {kind} comparison(s); {sum(r['significant'] for r in family)} significant "
                         f"(Holm-adjusted p < {alpha:.2g} within this family and the {level:.0%} CI excludes 0)")
    for r in rows:
        if r["kind"] == "icl_vs_0shot":
            mark = " *" if r["significant"] else ""
            lines.append(f"  ICL - 0-shot  {r['model_a']:<22} {r['metric']:<5} {r['difference']:+7.2f} pp "
                         f"[{r['ci_low']:+.2f}, {r['ci_high']:+.2f}]  p={r['p_value']:.3g}  p_holm={r['p_holm']:.3g}  "
                         f"n_pairs={r['n_pairs']} ({r['n_problems']} problems){mark}")
    return "\n".join(lines)


# -- the command's run --------------------------------------------------------------------------------
@dataclass(frozen=True)
class StatsSettings:
    """How ``run_stats`` estimates and compares (recorded in its outputs, in this order)."""

    n_boot: int = bootstrap.DEFAULT_N_BOOT
    seed: int = 0
    level: float = bootstrap.DEFAULT_LEVEL
    cluster: str = "auto"
    compare: str = "icl"
    exclude_gold_mismatch: bool = False


def run_stats(results_dir: str, *, out: str | None = None, force: bool = False, **settings) -> int:
    """Estimates (and comparisons, unless ``compare="none"``) for the results in ``results_dir``, written
    to ``out`` (a folder this command owns, locked while writing; ``force``: any allowed folder) or, by
    default, as ``stats_*`` files into ``results_dir``. ``settings``: the fields of ``StatsSettings``.
    0 on success, 1 when some input was skipped (named on stderr)."""
    s = StatsSettings(**settings)
    folder = _check(results_dir, out, force, s)
    if not out:
        return _compute_into(results_dir, folder, s)
    with fsguard.OutputLock(folder, f"the statistics folder {folder}"):
        return _compute_into(results_dir, folder, s)


def check_resampling(n_boot: int, level: float) -> None:
    """The bootstrap settings every command takes (``--n-boot``, ``--level``), checked before any work."""
    if n_boot < 1:
        raise UserError("--n-boot must be at least 1")
    if not 0 < level < 1:
        raise UserError("--level must be between 0 and 1")


def _check(results_dir: str, out: str | None, force: bool, s: StatsSettings) -> str:
    """Validate the settings and the output folder before any work; returns the output folder."""
    if not os.path.isdir(results_dir):
        raise UserError(f"results directory {results_dir} not found")
    check_resampling(s.n_boot, s.level)
    if out:
        return os.fspath(fsguard.prepare_output_dir(out, "smmile stats", force=force))
    fsguard.check_writable_dir(results_dir, "results directory")
    return results_dir


def _compute_into(results_dir: str, out: str, s: StatsSettings) -> int:
    problems: list[str] = []

    def warn(message: str) -> None:
        print(message, file=sys.stderr)
        problems.append(message)

    records = load_records(results_dir, warn)
    if not records:
        raise UserError(f"no scorable result files in {results_dir}")
    settings = {"results_dir": os.path.abspath(results_dir), **asdict(s)}
    rows = estimates(records, s.n_boot, s.seed, s.cluster, s.level)
    written = write_rows(rows, os.path.join(out, "stats_estimates"), settings)
    fsguard.atomic_write_text(os.path.join(out, "stats_table.tex"), tables.ci_latex_table(rows))
    written.append(os.path.join(out, "stats_table.tex"))
    print(console_table(rows))
    if s.compare != "none":
        pairs = comparisons(records, s.compare, s.n_boot, s.seed, s.cluster, s.level, s.exclude_gold_mismatch,
                            _warn_stderr)
        written += write_rows(pairs, os.path.join(out, "stats_comparisons"), settings)
        print(comparison_summary(pairs, s.level))
    print("Written: " + ", ".join(written))
    return 1 if problems else 0
