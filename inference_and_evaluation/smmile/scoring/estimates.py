"""Accuracies with intervals and paired comparisons of result records: the numbers ``smmile stats``, ``smmile
analyze`` and the report show, one estimand per number, stated in the output (issue #20): row-weighted by
default (every SMMILE++ order counts, as in the paper's tables), ``weight="problem"`` the alternative. Every
estimate uses the same seed, so results do not depend on file order."""

from __future__ import annotations

import logging
import math
import os
from itertools import combinations
from typing import Callable

import numpy as np
import pandas as pd

from smmile.errors import UserError
from smmile.record import result_csv
from smmile.scoring import metrics, signflip, statistics, tables
from smmile.scoring.scores import MODES, Record

METRICS = tuple(metrics.METRICS)  # LLM, EM, MCQA (then NOANS): the tables' column order
COMPARED = tuple(name for name, m in metrics.METRICS.items() if m.paper)  # NOANS is estimated, not compared
CLUSTER_CHOICES = ("auto", "none", "base")
WEIGHT_CHOICES = statistics.WEIGHTS  # row (default, the paper's tables), problem
FAILURE_CHOICES = ("exclude", "wrong")  # exclude: transport failures left out; wrong: the paper's rule
FAILURES = "exclude"  # the default of every command and function that scores or compares
EXCLUDED_KINDS = ("failed",)  # transport failures (connection errors, timeouts, 5xx after retries): not answers
OTHER_RULE = {"exclude": "wrong", "wrong": "exclude"}
SHOW_OTHER_PP = 1.0  # the other rule's result is printed beside one that differs by more than this
COMPARE_CHOICES = ("icl", "models", "all", "none")
COMPARISON_FAMILIES = ("icl_vs_0shot", "model_vs_model")  # each kind is its own family of comparisons
MAX_NOTES = 10  # pairing warnings printed in full; the rest are counted


log = logging.getLogger(__name__)


# -- estimates ---------------------------------------------------------------------------------------
def clusters_for(ids, cluster: str):
    """Cluster labels for the bootstrap and the test: ``base`` → base problem ids, ``none`` → None
    (iid), ``auto`` → base problem ids only when some id carries ``_perm_<k>``."""
    ids = list(ids)
    if cluster == "base" or (cluster == "auto" and statistics.has_permutations(ids)):
        return statistics.base_problem_ids(ids)
    return None


def _estimand(weight: str, clusters) -> str:
    return statistics.ESTIMANDS[weight] if clusters is not None else "per problem (independent rows)"


def failure_counts(kinds: pd.Series | None) -> dict:
    """``n_refused``, ``n_failed``, ``n_empty`` (None each when unknown: a judge JSON without its CSV)."""
    if kinds is None:
        return {f"n_{kind}": None for kind in metrics.FAILURE_KINDS}
    counts = kinds.value_counts()
    return {f"n_{kind}": int(counts.get(kind, 0)) for kind in metrics.FAILURE_KINDS}


def literal_answers(records: list[Record]) -> None:
    """A response that is literally ``None`` (or ``NA``, ``null``…) is an answer, not an empty row: pandas reads
    such text as missing, so rows counted ``empty`` are checked against the CSV's raw text (only for the
    statistics; the faithful scorers keep pandas' reading). Idempotent; changes ``record.failures`` in place."""
    for record in records:
        if record.failures is None or record.frame is None or not (record.failures == "empty").any():
            continue
        column = "full_response" if "full_response" in record.frame.columns else "generated_answer"
        text = result_csv.raw_text(record.source, column)
        if text is None:
            continue
        answered = [pid for pid in record.failures.index[record.failures == "empty"]
                    if str(text.get(pid, "")).strip()]
        record.failures = record.failures.copy()
        record.failures.loc[answered] = ""


def _failed(record: Record, ids, kinds=EXCLUDED_KINDS) -> np.ndarray:
    """True for each id whose row's failure kind is one of ``kinds`` (False when unknown). Refused and empty
    responses are the model's answers (scored wrong); only transport failures are not."""
    if record.failures is None:
        return np.zeros(len(ids), dtype=bool)
    found = pd.Series([str(i) for i in ids], dtype=object).map(record.failures).fillna("").astype(str)
    return found.isin(kinds).to_numpy(dtype=bool)


def _under(scores: pd.Series, record: Record, failures: str) -> pd.Series:
    """The scores under the failure rule; a metric that measures failures (NOANS) keeps every row."""
    if failures != "exclude" or getattr(metrics.METRICS.get(record.metric), "measures_failures", False):
        return scores
    return scores[~_failed(record, scores.index)]


def estimate(record: Record, n_boot: int, seed: int, cluster: str, level: float, weight: str = "row",
             failures: str = FAILURES) -> dict:
    """One row of ``stats_estimates``: the ``weight``-ed accuracy with its Wilson interval on the effective
    sample size, se and the bootstrap se in percent; n_rows, n_problems, n_eff; failure counts (of the
    whole result), the rule applied to them and the accuracy under the other rule."""
    counts = failure_counts(record.failures)
    scores = _under(record.scores, record, failures)
    other = _under(record.scores, record, OTHER_RULE[failures])
    clusters = clusters_for(scores.index, cluster)
    ci = statistics.proportion_interval(scores.to_numpy(), clusters, weight, level)
    se_boot = statistics.bootstrap_se(scores.to_numpy(), clusters, weight, n_boot, seed)
    both = {}  # issue #31: both weightings side by side, labelled; ``weight`` is the primary
    for name in WEIGHT_CHOICES:
        alt = ci if name == weight else statistics.proportion_interval(scores.to_numpy(), clusters, name, level)
        both.update({f"accuracy_{name}": 100 * alt.estimate, f"ci_low_{name}": 100 * alt.low,
                     f"ci_high_{name}": 100 * alt.high, f"n_eff_{name}": alt.n_eff})
    return {"model": record.model, "metric": record.metric, "mode": record.mode,
            "estimand": _estimand(weight, clusters), "weight": weight, "n_rows": ci.n, "n_problems": ci.n_clusters,
            "clustered": clusters is not None, "accuracy": 100 * ci.estimate, "ci_low": 100 * ci.low,
            "ci_high": 100 * ci.high, "ci_method": ci.method, "n_eff": ci.n_eff, "icc": ci.icc, "se": 100 * ci.se,
            "se_bootstrap": 100 * se_boot, **counts, "failures": failures,
            "accuracy_other_rule": 100 * weighted_mean(other.to_numpy(), clusters_for(other.index, cluster), weight),
            "rerunnable": getattr(record.result, "manifest", None) is not None, **both,
            "level": level, "n_boot": n_boot,
            "seed": seed, "source": os.path.basename(record.source)}


def gold_disagreements(records: list[Record]) -> dict[str, list[str]]:
    """Per result file: the problems whose gold answer differs from the one most results of the folder give
    (the published qwen3B/qwen7B SMMILE files use other answers on 18 of 111 problems)."""
    golds = {r.source: r.gold.rename(index=str).astype(str) for r in records if r.gold is not None}
    if len(golds) < 2:
        return {}
    table = pd.DataFrame(golds)
    usual = table.mode(axis=1)[0]
    return {source: [pid for pid in table.index[table[source].notna() & (table[source] != usual)]]
            for source in table.columns}


def dataset_gold(dataset: str) -> pd.Series:
    """The dataset's answer to each problem's query, by problem_id (``smmile stats --dataset``)."""
    from smmile.data.load import load_problems

    return pd.Series({p.problem_id: p.query.answer for p in load_problems(dataset)}, dtype=object)


def _against(record: Record, gold: pd.Series) -> list[str]:
    """The record's problems whose gold answer is not the dataset's (compared as exact match compares)."""
    from smmile.scoring.exact_match import normalize_answer

    theirs = record.gold.rename(index=str)
    shared = theirs.index.intersection(gold.index)
    return [pid for pid in shared if normalize_answer(theirs[pid]) != normalize_answer(gold[pid])]


def estimates(records: list[Record], n_boot: int, seed: int, cluster: str, level: float, weight: str = "row",
              failures: str = FAILURES, gold: pd.Series | None = None) -> list[dict]:
    """Estimates in table order: model rows as in evaluation_results.txt, then metric, then mode; each with the
    number of its problems whose gold answer differs from the folder's usual one and, with the dataset's
    answers ``gold``, from the dataset's (named in a logged warning)."""
    literal_answers(records)
    rows = [estimate(r, n_boot, seed, cluster, level, weight, failures) for r in records]
    differ, dataset_differ = gold_disagreements(records), {}
    for row, record in zip(rows, records):
        row["gold_differs"] = len(differ.get(record.source, [])) if record.gold is not None else None
        if gold is not None:
            against = _against(record, gold) if record.gold is not None else None
            row["gold_vs_dataset"] = None if against is None else len(against)
            if against:
                dataset_differ.setdefault(record.source, against)
    for source, ids in differ.items():
        if ids:
            log.warning(f"warning: {source}: {len(ids)} problem(s) have another gold answer (true_answer) than most "
                        f"results of this folder (first: {ids[0]}); its estimates score answers to other questions")
    for source, ids in dataset_differ.items():
        log.warning(f"warning: {source}: {len(ids)} problem(s) have another gold answer (true_answer) than "
                    f"the dataset's (first: {ids[0]})")
    order = {m: i for i, m in enumerate(tables.row_order({row["model"] for row in rows}))}
    return sorted(rows, key=lambda row: (order[row["model"]], METRICS.index(row["metric"]), MODES.index(row["mode"])))


# -- exact-match JSONs without their CSV ------------------------------------------------------------------------
def em_only_records(directory: str, records: list[Record]) -> list[Record]:
    """``<stem>_evaluation.json`` (evaluate_EM's export) whose result CSV is missing (the paper's SMMILE++ text-only
    0-shot): scored from its ``problem_accuracies`` under the model of a loaded result with the same file tag and
    the JSON's ``inference_mode``, with a warning; named and left out when that is not possible."""
    import glob
    import re

    from smmile.record import original

    loaded = {(r.model, r.metric, r.mode) for r in records}
    out = []
    for path in sorted(glob.glob(os.path.join(directory, "*_evaluation.json"))):
        stem = path[: -len("_evaluation.json")]
        if os.path.exists(stem + ".csv"):
            continue
        tag = re.sub(r"_(ICL|0-shot)(_open)?$", "", os.path.basename(stem))
        try:
            doc = original.read_export(path)
            mode, values = doc["inference_mode"], doc["problem_accuracies"]
            scores = pd.Series({str(k): float(v) / 100 for k, v in values.items()}, dtype=float)
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            log.warning(f"warning: {path}: exact-match results without their result CSV, unreadable ({exc}); left out")
            continue
        models = {r.model for r in records if os.path.basename(r.source).startswith(tag + "_")}
        if len(models) != 1 or mode not in MODES or scores.empty or (next(iter(models)), "EM", mode) in loaded:
            log.warning(f"warning: {path}: exact-match results without their result CSV "
                        f"({os.path.basename(stem)}.csv), not matched to one model and mode of this folder; left out")
            continue
        log.warning(f"warning: {path}: no result CSV; exact match scored from the JSON's problem_accuracies "
                    f"({len(scores)} problems); failures and gold answers unknown")
        out.append(Record(next(iter(models)), "EM", mode, path, scores))
    return out


# -- pairing -----------------------------------------------------------------------------------------
# An inner join on problem_id (or on a key such as the base problem of a SMMILE++ row) that says what it left
# out. Paired problems whose gold answers differ (the published qwen3B/qwen7B files use another true_answer on
# 18 of 111 problems, spec §9 item 38) compare answers to different questions: dropped by default, counted.
def pair_scores(a: pd.Series, b: pd.Series, gold_a: pd.Series | None = None, gold_b: pd.Series | None = None,
                key: Callable[[str], str] | None = None, exclude_gold_mismatch: bool = True,
                what: str = "") -> tuple[pd.DataFrame, int, list[str]]:
    """Pair A's problems with B's: A's id ``i`` pairs with B's ``key(i)`` (default ``i``). Scores and gold
    answers are Series indexed by problem_id (gold None: not checked). Returns one row per pair in A's order
    (``problem_id``: A's id, ``key``: B's, scores ``a``, ``b``), the number of pairs with different gold answers
    (dropped when ``exclude_gold_mismatch``) and warning lines (no ``warning:``) on what pairing ``what`` left out."""
    ids = [str(i) for i in a.index]
    keys = [key(i) for i in ids] if key else ids
    frame = pd.DataFrame({"problem_id": ids, "key": keys, "a": a.to_numpy(dtype=float)})
    b_scores = pd.Series(b.to_numpy(dtype=float), index=[str(i) for i in b.index])
    frame["b"] = frame["key"].map(b_scores)
    frame = frame.dropna(subset=["a", "b"]).reset_index(drop=True)
    joined, used = len(frame), int(frame["key"].nunique())
    mismatches: list[str] = []
    if gold_a is not None and gold_b is not None:
        left = frame["problem_id"].map(gold_a.rename(index=str))
        right = frame["key"].map(gold_b.rename(index=str))
        differ = [not (pd.isna(x) and pd.isna(y)) and str(x) != str(y) for x, y in zip(left, right)]
        mismatches = frame.loc[differ, "problem_id"].tolist()
        if exclude_gold_mismatch and mismatches:
            frame = frame.loc[[not d for d in differ]].reset_index(drop=True)
    notes = []
    if joined != len(a) or used != len(b):
        of = f" ({used} of the {len(b)} paired)" if used != joined else ""
        notes.append(f"{what}: {joined} pairs from {len(a)} and {len(b)} problems{of}; "
                     "the difference uses the paired problems only")
    if mismatches:
        action = ("excluded (--include-gold-mismatch keeps them)" if exclude_gold_mismatch
                  else "kept (--include-gold-mismatch)")
        notes.append(f"{what}: {len(mismatches)} paired problem(s) have different gold answers "
                     f"(first: {mismatches[0]}); {action}")
    return frame, len(mismatches), notes


# -- paired comparisons -------------------------------------------------------------------------------
def comparison_pairs(records: list[Record], compare: str) -> list[tuple[str, Record, Record]]:
    """(kind, A, B) pairs, the difference being A − B: ``icl``: ICL − 0-shot per model and metric;
    ``models``: model − model within (metric, mode), every unordered pair once, in table order; ``all``."""
    index = {(r.model, r.metric, r.mode): r for r in records}
    ordered = tables.row_order({r.model for r in records})
    pairs = []
    if compare in ("all", "icl"):
        for model in ordered:
            for metric in COMPARED:
                icl, zero = index.get((model, metric, "ICL")), index.get((model, metric, "0-shot"))
                if icl is not None and zero is not None:
                    pairs.append(("icl_vs_0shot", icl, zero))
    if compare in ("all", "models"):
        for metric in COMPARED:
            for mode in MODES:
                present = [index[(m, metric, mode)] for m in ordered if (m, metric, mode) in index]
                pairs.extend(("model_vs_model", a, b) for a, b in combinations(present, 2))
    return pairs


def weighted_mean(values: np.ndarray, clusters, weight: str) -> float:
    """Mean of ``values`` with the weighting of the estimand (row: plain mean; problem: mean of clusters)."""
    if not len(values):
        return float("nan")
    if clusters is None or weight == "row":
        return float(np.mean(values))
    return float(pd.Series(values).groupby(np.asarray(clusters, dtype=object)).mean().mean())


def paired(a: Record, b: Record, label: str, *, key=None, cluster: str = "auto", weight: str = "row",
           level: float = statistics.DEFAULT_LEVEL, n_boot: int = statistics.DEFAULT_N_BOOT, seed: int = 0,
           include_gold_mismatch: bool = False, failures: str = FAILURES,
           notes: list | None = None) -> tuple[dict, pd.DataFrame]:
    """The one paired comparison (``smmile stats``, ``smmile analyze``): A − B in percentage points, with
    ``statistics.paired_score``'s interval and test.

    A's problem ``i`` pairs with B's ``key(i)`` (``pair_scores``); pairs with different gold answers
    are dropped unless ``include_gold_mismatch``; with ``failures="exclude"`` a pair goes when either side
    failed in transport (refused and empty responses are answers, scored wrong). Returns the row and the paired frame (``problem_id``, ``key``, ``a``,
    ``b``); what was left out is appended to ``notes``. ``p_adjusted``/``significant`` are set by ``apply_family``."""
    frame, mismatches, found = pair_scores(a.scores, b.scores, a.gold, b.gold, key=key,
                                           exclude_gold_mismatch=not include_gold_mismatch, what=label)
    kinds = {f"n_{kind}_{side}": None if rec.failures is None else int(_failed(rec, frame[col], (kind,)).sum())
             for side, rec, col in (("a", a, "problem_id"), ("b", b, "key")) for kind in metrics.FAILURE_KINDS}
    if notes is not None:
        notes.extend(found)
    out = _failed(a, frame["problem_id"]) | _failed(b, frame["key"])
    other = frame if failures == "exclude" else frame.loc[~out]
    dropped = 0
    if failures == "exclude":
        dropped = int(out.sum())
        frame = frame.loc[~out].reset_index(drop=True)  # counted (failure_pairs_excluded), not a warning
    left, right = frame["a"].to_numpy(), frame["b"].to_numpy()
    clusters = clusters_for(frame["problem_id"], cluster)
    result = statistics.paired_score(left, right, clusters, weight, level)
    diff = result.interval
    se_boot = statistics.bootstrap_se(left - right, clusters, weight, n_boot, seed)
    mover = statistics.mover_difference(left, right, clusters, weight, level)
    row = {"estimand": _estimand(weight, clusters), "weight": weight, "n_a": len(a.scores), "n_b": len(b.scores),
           "n_pairs": diff.n, "n_problems": diff.n_clusters, "clustered": clusters is not None,
           "gold_mismatches": mismatches, "gold_mismatches_included": bool(include_gold_mismatch),
           **kinds, "failures": failures, "failure_pairs_excluded": dropped,
           "difference_other_rule": 100 * weighted_mean(
               (other["a"] - other["b"]).to_numpy(), clusters_for(other["problem_id"], cluster), weight),
           "accuracy_a": 100 * weighted_mean(left, clusters, weight),
           "accuracy_b": 100 * weighted_mean(right, clusters, weight),
           "difference": 100 * diff.estimate, "ci_low": 100 * diff.low, "ci_high": 100 * diff.high,
           **{f"difference_{name}": 100 * weighted_mean(left - right, clusters, name) for name in WEIGHT_CHOICES},
           "ci_method": diff.method, "se": 100 * diff.se, "se_bootstrap": 100 * se_boot,
           "ci_low_mover": 100 * mover.low, "ci_high_mover": 100 * mover.high,
           "only_a_correct": result.only_a, "only_b_correct": result.only_b, **_favour(left - right, frame, cluster),
           "statistic": result.statistic,
           "p_value": result.p_value, "p_method": result.method, "p_holm": float("nan"), "significant": False,
           "level": level, "n_boot": n_boot, "seed": seed}
    return row, frame


def _favour(diff: np.ndarray, frame: pd.DataFrame, cluster: str) -> dict:
    """Discordance in resampling units: base problems (or problems) whose mean difference favours A, B."""
    means = pd.Series(diff).groupby(np.asarray(_labels(frame, cluster), dtype=object)).mean()
    return {"problems_favour_a": int((means > 0).sum()), "problems_favour_b": int((means < 0).sum())}


def _labels(frame: pd.DataFrame, cluster: str):
    """The resampling unit of each pair: its base problem (clustered) or its problem."""
    clusters = clusters_for(frame["problem_id"], cluster)
    return frame["problem_id"].astype(str).to_list() if clusters is None else clusters


def _flip_method(result: signflip.FlipResult, seed: int) -> str:
    how = "exact" if result.exact else f"Monte Carlo, seed {seed}"
    return f"sign-flip randomisation over base problems, mid-p ({how}, {result.n_patterns} patterns)"


def apply_family(rows: list[dict], frames: list[pd.DataFrame], level: float, cluster: str = "auto",
                 adjust: str = "minP", n_flips: int = signflip.DEFAULT_N_FLIPS, seed: int = 0) -> None:
    """One family's sign-flip test (``signflip``): ``p_value`` each comparison's own, ``p_adjusted`` by
    ``adjust`` within the family, ``significant``, and the interval ``ci_low``/``ci_high`` from the same
    procedure (it excludes 0 exactly when significant), its sides that do not decide significance widened to the
    MOVER interval at the family's Bonferroni level (``signflip.widen``: where few base problems differ the
    sign-flip interval alone is short, scripts/coverage_simulation.py); ``ci_*_marginal``: the same for the
    comparison alone; ``p_exact`` the conventional sign-flip p beside the mid-p. The score test's p and interval stay
    as ``p_score``, ``ci_low_score``, ``ci_high_score``."""
    family = [signflip.units(f["a"] - f["b"], _labels(f, cluster), row["weight"]) for row, f in zip(rows, frames)]
    results = signflip.family_test(family, 1 - level, adjust, n_flips, seed)
    name = f"{signflip.ADJUSTMENT_NAMES[adjust]} within a family of {len(rows)} comparison(s)"
    wide = 1 - (1 - level) / len(rows)  # MOVER's far side at the Bonferroni level of the family
    for row, unit, result, f in zip(rows, family, results, frames):
        estimate = row["difference"] / 100
        low, high = signflip.interval(estimate, unit, result.critical)
        low_m, high_m = signflip.interval(estimate, unit, result.marginal)
        if math.isnan(low):  # no base problem with a difference: the no-spread bound of the score interval
            low, high = low_m, high_m = row["ci_low"] / 100, row["ci_high"] / 100
        mover = statistics.mover_difference(f["a"], f["b"], clusters_for(f["problem_id"], cluster), row["weight"], wide)
        low, high = signflip.widen((low, high), (mover.low, mover.high), result.significant)
        low_m, high_m = signflip.widen((low_m, high_m), (row["ci_low_mover"] / 100, row["ci_high_mover"] / 100),
                                       result.p_value < 1 - level)
        row.update({"p_score": row["p_value"], "ci_low_score": row["ci_low"], "ci_high_score": row["ci_high"],
                    "p_value": result.p_value, "p_exact": result.p_exact, "p_method": _flip_method(result, seed),
                    "p_adjusted": result.p_adjusted, "adjustment": name, "significant": result.significant,
                    "ci_low": 100 * low, "ci_high": 100 * high, "ci_low_marginal": 100 * low_m,
                    "ci_high_marginal": 100 * high_m,
                    "ci_method": f"sign-flip critical value of the {signflip.ADJUSTMENT_NAMES[adjust]} step (D ± c·se0), "
                                 f"the side away from 0 widened to MOVER at {wide:.4g}"})
        row.pop("p_holm", None)


def comparisons(records: list[Record], compare: str, n_boot: int, seed: int, cluster: str, level: float,
                include_gold_mismatch: bool = False, weight: str = "row",
                failures: str = FAILURES, adjust: str = "minP", n_flips: int = signflip.DEFAULT_N_FLIPS) -> list[dict]:
    """The rows of ``stats_comparisons``, each kind its own family (``apply_family``); pairing warnings are
    logged (the first ``MAX_NOTES`` in full, then a count)."""
    notes: list[str] = []
    rows, frames = [], []
    literal_answers(records)
    for kind, a, b in comparison_pairs(records, compare):
        label = (f"{a.model} {a.metric} ICL vs 0-shot" if kind == "icl_vs_0shot"
                 else f"{a.metric} {a.mode}: {a.model} vs {b.model}")
        row, frame = paired(a, b, label, cluster=cluster, weight=weight, level=level, n_boot=n_boot, seed=seed,
                            include_gold_mismatch=include_gold_mismatch, failures=failures, notes=notes)
        rows.append({"kind": kind, "metric": a.metric, "model_a": a.model, "mode_a": a.mode, "model_b": b.model,
                     "mode_b": b.mode, **row})
        frames.append(frame)
    for kind in COMPARISON_FAMILIES:
        members = [i for i, row in enumerate(rows) if row["kind"] == kind]
        if members:
            apply_family([rows[i] for i in members], [frames[i] for i in members], level, cluster, adjust,
                         n_flips, seed)
    for note in notes[:MAX_NOTES]:
        log.warning(f"warning: {note}")
    if len(notes) > MAX_NOTES:
        log.warning(f"warning: and {len(notes) - MAX_NOTES} more pairing warning(s) like these; see the n_a, n_b, "
                    "n_pairs and gold_mismatches columns")
    return rows


def check_resampling(n_boot: int, level: float) -> None:
    """The bootstrap settings every command takes (``--n-boot``, ``--level``), checked before any work."""
    if n_boot < 1:
        raise UserError("--n-boot must be at least 1")
    if not 0 < level < 1:
        raise UserError("--level must be between 0 and 1")
