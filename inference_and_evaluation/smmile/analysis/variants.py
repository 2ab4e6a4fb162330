"""The three variant analyses: which result sets are compared, and the tables each produces.

* ``noise``: every non-original set (noise-random, noise-targeted...) against the original.
* ``order``: order-first and order-last against the original, and order-last against order-first, on
  the problems all of them scored (the recency table lists the three accuracies side by side).
* ``permutation``: every permuted set (ids ``<id>_perm_<k>``) against the original, paired by base
  problem, clustered by base problem (``estimates.paired``); plus how consistent each model is across the
  orders of a problem.

Sets that cannot be compared are refused before any statistic: a variant set of another analysis's
kind, a permutation set without ``_perm_<k>`` rows, and two sets that share no problem. A result found
in only one of the two sets of a comparison is named in a note (nothing is left out silently). Holm's
family is every comparison of one run (``estimates.apply_holm``); ``significant`` also needs the interval to
exclude 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from ..data.variants import KINDS as VARIANT_KINDS
from ..errors import UserError
from ..scoring import statistics
from ..scoring.results import Record
from ..scoring.estimates import apply_holm
from .paired import compare
from .results import ORIGINAL, ResultSet

KINDS = ("noise", "order", "permutation")
FIRST, LAST = "order-first", "order-last"
ACCEPTS = {"noise": ("noise-random", "noise-targeted"), "order": (FIRST, LAST), "permutation": ("permute",)}


@dataclass
class Report:
    kind: str
    summary: list[dict] = field(default_factory=list)
    flips: list[pd.DataFrame] = field(default_factory=list)
    averages: list[dict] = field(default_factory=list)
    extra: dict[str, list[dict]] = field(default_factory=dict)  # recency / consistency / by_problem


def comparisons(kind: str, labels: list[str]) -> list[tuple[str, str]]:
    """(variant label, reference label) pairs, in a stable order."""
    if ORIGINAL not in labels:
        raise UserError("no result set labelled 'original' (label it as original=PATH)")
    others = [label for label in labels if label != ORIGINAL]
    if kind == "order":
        missing = [label for label in (FIRST, LAST) if label not in labels]
        if len(missing) == 2:
            raise UserError("the order analysis needs an order-first and/or order-last result set")
        pairs = [(label, ORIGINAL) for label in (FIRST, LAST) if label in labels]
        return pairs + ([(LAST, FIRST)] if not missing else [])
    if not others:
        raise UserError(f"the {kind} analysis needs at least one variant result set besides the original")
    return [(label, ORIGINAL) for label in others]


def missing_order_sets(present: list[str]) -> list[str]:
    """One note per order variant not given: what is analysed without it and how to add it."""
    missing = [label for label in (FIRST, LAST) if label not in present]
    if len(missing) != 1:
        return []
    (absent,), (there,) = missing, [label for label in (FIRST, LAST) if label in present]
    return [f"no {absent} result set given (missing): only {there} vs original is analysed; run the models on "
            f"`smmile data variant {absent}` and add {absent}=PATH to also compare it and last vs first"]


def _restrict(sets: dict[str, ResultSet], key: tuple, labels: list[str]) -> dict[str, Record]:
    """The records of `key` in `labels`, cut to the problems every one of them scored."""
    records = {label: sets[label].index()[key] for label in labels if key in sets[label].index()}
    if len(records) < 2:
        return records
    common = set.intersection(*(set(r.scores.index) for r in records.values()))
    return {label: Record(r.model, r.metric, r.mode, r.source, r.scores[r.scores.index.isin(common)], r.gold,
                          r.result, r.frame, r.failures)
            for label, r in records.items()}


def _keys(sets: dict[str, ResultSet]) -> list[tuple]:
    """(model, metric, mode) keys of the original, in its order."""
    return list(sets[ORIGINAL].index())


def _ids(result_set: ResultSet, by_base: bool) -> set[str]:
    ids = {str(i) for r in result_set.records for i in r.scores.index}
    return set(statistics.base_problem_ids(sorted(ids))) if by_base else ids


def _permuted(result_set: ResultSet) -> bool:
    return any(statistics.has_permutations(r.scores.index) for r in result_set.records)


def check_sets(kind: str, sets: dict[str, ResultSet], pairs: list[tuple[str, str]]) -> None:
    """Refuse sets that are the wrong kind of variant for ``kind`` or share no problem."""
    for variant, reference in pairs:
        shown = f"{variant!r} ({sets[variant].path})"
        if variant in VARIANT_KINDS and variant not in ACCEPTS[kind]:
            raise UserError(f"result set {shown} is a {variant} variant; the {kind} analysis compares "
                            f"{' / '.join(ACCEPTS[kind])} sets with the original")
        if kind == "permutation" and not _permuted(sets[variant]):
            raise UserError(f"result set {shown} has no <id>_perm_<k> rows: not a permuted (SMMILE++) set")
        if kind == "noise" and _permuted(sets[variant]) and not _permuted(sets[reference]):
            raise UserError(f"result set {shown} holds permuted <id>_perm_<k> rows and the original does not; "
                            "use `smmile analyze permutation`")
        by_base = kind == "permutation"
        if not _ids(sets[variant], by_base) & _ids(sets[reference], False):
            raise UserError(f"result sets {shown} and {reference!r} ({sets[reference].path}) share no problem; "
                            "were they run on the same dataset?")


def unmatched(sets: dict[str, ResultSet], pairs: list[tuple[str, str]]) -> list[str]:
    """Notes naming each (model, metric, mode) scored in only one set of a comparison."""
    notes = []
    for variant, reference in pairs:
        have_v, have_r = sets[variant].index(), sets[reference].index()
        for label, own, other, other_label in ((variant, have_v, have_r, reference),
                                               (reference, have_r, have_v, variant)):
            for key in own:
                if key not in other:
                    notes.append(f"{' '.join(key)}: scored in {label!r} ({own[key].source}) but not in "
                                 f"{other_label!r}; no {variant} vs {reference} comparison for it")
    return list(dict.fromkeys(notes))


def analyse(kind: str, sets: dict[str, ResultSet], n_boot: int, seed: int, level: float,
            include_gold_mismatch: bool = False, notes: list | None = None, weight: str = "row",
            failures: str = "wrong") -> Report:
    """Every comparison of ``kind``; what pairing left out, and results without a partner, are
    appended to ``notes``."""
    if kind not in KINDS:
        raise UserError(f"unknown analysis {kind!r}; choose one of {', '.join(KINDS)}")
    pairs = comparisons(kind, list(sets))
    check_sets(kind, sets, pairs)
    by_base = kind == "permutation"
    report = Report(kind)
    if notes is not None:
        notes.extend(unmatched(sets, pairs))
    present = [label for label in (ORIGINAL, FIRST, LAST) if label in sets]
    if kind == "order" and notes is not None:
        notes.extend(missing_order_sets(present))
    for key in _keys(sets):
        records = _restrict(sets, key, present) if kind == "order" else None
        for variant, reference in pairs:
            pair = records or {label: sets[label].index().get(key) for label in (variant, reference)}
            if pair.get(variant) is None or pair.get(reference) is None:
                continue
            row, table = compare(pair[reference], pair[variant], by_base, n_boot, seed, level,
                                 include_gold_mismatch, notes, weight, failures)
            row = {"analysis": kind, "variant": variant, "reference": reference, **row}
            report.summary.append(row)
            labels = {"model": row["model"], "metric": row["metric"], "mode": row["mode"],
                      "variant": variant, "reference": reference}
            report.flips.append(pd.concat([pd.DataFrame([labels] * len(table)), table], axis=1))
    if not report.summary:
        raise UserError("no model/metric/mode was scored in both the original and a variant set")
    apply_holm(report.summary, level)
    report.averages = averages(report.summary)
    if kind == "order":
        report.extra["recency"] = recency(report.summary)
    if kind == "permutation":
        report.extra["consistency"], report.extra["by_problem"] = consistency(sets, pairs)
    return report


def averages(rows: list[dict]) -> list[dict]:
    """Per (variant, reference, metric, mode), over models: the mean difference and the relative change
    of the mean accuracies, (mean variant − mean reference) / mean reference (the paper's "−9.1% on
    average"). The mean of the per-model relative changes, which one model near 0 % can dominate, is
    kept as a secondary column with its range; it leaves out models whose reference accuracy is 0 (no
    relative change), so ``n_models_relative`` says how many models it covers and
    ``models_without_relative_change`` names the others."""
    frame = pd.DataFrame(rows)
    out = []
    for (variant, reference, metric, mode), g in frame.groupby(["variant", "reference", "metric", "mode"], sort=False):
        rel = g["relative_change"].dropna()
        missing = g.loc[g["relative_change"].isna(), "model"].tolist()
        ref, var = float(g["accuracy_reference"].mean()), float(g["accuracy_variant"].mean())
        out.append({"variant": variant, "reference": reference, "metric": metric, "mode": mode,
                    "n_models": len(g), "mean_accuracy_reference": ref, "mean_accuracy_variant": var,
                    "mean_difference": float(g["difference"].mean()),
                    "relative_change": (var - ref) / ref * 100 if ref else float("nan"),
                    "n_models_relative": len(rel), "models_without_relative_change": ", ".join(missing),
                    "mean_of_relative_changes": float(rel.mean()) if len(rel) else float("nan"),
                    "min_relative_change": float(rel.min()) if len(rel) else float("nan"),
                    "max_relative_change": float(rel.max()) if len(rel) else float("nan")})
    return out


def recency(rows: list[dict]) -> list[dict]:
    """Accuracy with the relevant example first / last / as in the original, per model (same problems)."""
    table: dict[tuple, dict] = {}
    for r in rows:
        key = (r["model"], r["metric"], r["mode"])
        entry = table.setdefault(key, {"model": key[0], "metric": key[1], "mode": key[2], "n_pairs": r["n_pairs"]})
        if r["reference"] == ORIGINAL:
            entry["accuracy_original"] = r["accuracy_reference"]
            entry[f"accuracy_{r['variant'].split('-')[1]}"] = r["accuracy_variant"]
            entry[f"relative_change_{r['variant'].split('-')[1]}"] = r["relative_change"]
        else:
            entry["last_minus_first"] = r["difference"]
            entry["last_minus_first_ci_low"], entry["last_minus_first_ci_high"] = r["ci_low"], r["ci_high"]
    return list(table.values())


def _per_base(record: Record) -> pd.DataFrame:
    frame = pd.DataFrame({"score": record.scores.to_numpy(dtype=float),
                          "base_problem_id": statistics.base_problem_ids(record.scores.index)})
    return frame.groupby("base_problem_id", sort=False)["score"].agg(["count", "sum", "mean"])


def consistency(sets: dict[str, ResultSet], pairs: list[tuple[str, str]]) -> tuple[list[dict], list[dict]]:
    """Per model and permuted set: how many base problems get different outcomes under different
    orders (order-sensitive), and the per-base-problem share of orders answered correctly."""
    summary, by_problem = [], []
    for variant, _ in pairs:
        reference = sets[ORIGINAL].index()
        for key, record in sets[variant].index().items():
            per = _per_base(record)
            mixed = int(((per["mean"] > 0) & (per["mean"] < 1)).sum())
            summary.append({"variant": variant, "model": key[0], "metric": key[1], "mode": key[2],
                            "n_rows": int(per["count"].sum()), "n_base": len(per), "order_sensitive": mixed,
                            "share_order_sensitive": mixed / len(per) * 100 if len(per) else float("nan")})
            ref = reference[key].scores if key in reference else pd.Series(dtype=float)
            for base, r in per.iterrows():
                by_problem.append({"variant": variant, "model": key[0], "metric": key[1], "mode": key[2],
                                   "base_problem_id": base, "n_orders": int(r["count"]),
                                   "correct_orders": float(r["sum"]), "accuracy_orders": float(r["mean"]) * 100,
                                   "reference": float(ref[base]) if base in ref.index else None})
    return summary, by_problem
