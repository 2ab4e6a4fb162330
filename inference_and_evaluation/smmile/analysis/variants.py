"""The variant analyses of ``smmile analyze noise|order|permutation`` (docs/analyses.md §2) and ``compare``, a
variant against a reference through ``estimates.paired`` (also used by the ICL diagnostics and the report). Sets of
the wrong kind, or sharing no problem, are refused before any statistic; a result without a partner is noted."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace

import pandas as pd

from ..data.schema import base_id
from ..data.variants import OPTION_VARIANTS
from ..errors import UserError
from ..scoring import signflip, statistics
from ..scoring.estimates import FAILURES, apply_family, paired
from ..scoring.scores import Record
from .result_sets import ORIGINAL, ResultSet

ANALYSES = ("noise", "order", "permutation")
FIRST, LAST = "order-first", "order-last"
ACCEPTS = {"noise": ("noise-random", "noise-targeted"), "order": (FIRST, LAST), "permutation": ("permute",)}
# a row's flip by (reference, variant) score; partial scores (a judge averaged over duplicated rows): up/down/same
FLIPS = {(0, 1): "gained", (1, 0): "lost", (1, 1): "both_correct", (0, 0): "both_wrong"}


@dataclass
class Report:
    kind: str
    summary: list[dict] = field(default_factory=list)
    flips: list[pd.DataFrame] = field(default_factory=list)
    averages: list[dict] = field(default_factory=list)
    extra: dict[str, list[dict]] = field(default_factory=dict)  # recency / consistency / by_problem


def compare(reference: Record, variant: Record, by_base: bool, n_boot: int, seed: int, level: float,
            include_gold_mismatch: bool = False, notes: list | None = None, weight: str = "row",
            failures: str = FAILURES) -> tuple[dict, pd.DataFrame]:
    """The row of variant − reference (``by_base``: ``<id>_perm_<k>`` pairs with ``<id>``, clustered by base
    problem) and the per-problem flip table; what the pairing left out is appended to ``notes``."""
    label = f"{variant.model} {variant.metric} {variant.mode}"
    core, frame = paired(variant, reference, label, key=(lambda pid: base_id(str(pid))) if by_base else None,
                         cluster="base" if by_base else "auto", weight=weight, level=level, n_boot=n_boot, seed=seed,
                         include_gold_mismatch=include_gold_mismatch, failures=failures, notes=notes)
    table = pd.DataFrame({"problem_id": frame["problem_id"],
                          "base_problem_id": statistics.base_problem_ids(frame["problem_id"]),
                          "score_reference": frame["b"], "score_variant": frame["a"]})
    table["flip"] = [FLIPS.get((r, v), "up" if v > r else "down" if v < r else "same")
                     for r, v in zip(table["score_reference"], table["score_variant"])]
    counts = table["flip"].value_counts()
    acc_ref, acc_var = core.pop("accuracy_b"), core.pop("accuracy_a")
    renamed = {"n_failed_a": "n_failed_variant", "n_failed_b": "n_failed_reference"}
    row = {"model": variant.model, "metric": variant.metric, "mode": variant.mode,
           "n_reference": core.pop("n_b"), "n_variant": core.pop("n_a"),
           "accuracy_reference": acc_ref, "accuracy_variant": acc_var,
           "relative_change": (acc_var - acc_ref) / acc_ref * 100 if acc_ref else float("nan"),
           "gained": int(counts.get("gained", 0)), "lost": int(counts.get("lost", 0)),
           **{renamed.get(k, k): v for k, v in core.items()},
           "source_reference": os.path.basename(reference.source), "source_variant": os.path.basename(variant.source)}
    return row, table


PROCEDURE = signflip.ADJUSTMENT_NAMES["minP"]


def adjust(rows: list[dict], tables: list[pd.DataFrame], settings: dict, family=lambda row: None,
           cluster: str = "auto") -> None:
    """``estimates.apply_family`` (as in `smmile stats`) within each family (``family(row)``; default: all rows one
    family), from each row's flip table: ``p_value`` the sign-flip mid-p over base problems, ``p_adjusted`` by
    Westfall-Young step-down minP, ``significant`` and the interval ``ci_low``/``ci_high`` from that same
    procedure; the score test's stay as ``p_score``/``ci_*_score``."""
    groups: dict = {}
    for row, table in zip(rows, tables):
        groups.setdefault(family(row), []).append((row, pd.DataFrame(
            {"problem_id": table["problem_id"], "a": table["score_variant"], "b": table["score_reference"]})))
    for members in groups.values():
        apply_family([row for row, _ in members], [frame for _, frame in members], settings["level"], cluster,
                     seed=settings["seed"])


def comparisons(kind: str, labels: list[str]) -> list[tuple[str, str]]:
    """(variant label, reference label) pairs, in a stable order."""
    if ORIGINAL not in labels:
        raise UserError("no result set labelled 'original' (label it as original=PATH)")
    if kind == "order":
        present = [label for label in (FIRST, LAST) if label in labels]
        if not present:
            raise UserError("the order analysis needs an order-first and/or order-last result set")
        return [(label, ORIGINAL) for label in present] + ([(LAST, FIRST)] if len(present) == 2 else [])
    others = [label for label in labels if label != ORIGINAL]
    if not others:
        raise UserError(f"the {kind} analysis needs at least one variant result set besides the original")
    return [(label, ORIGINAL) for label in others]


def _restrict(sets: dict[str, ResultSet], key: tuple, labels: list[str]) -> dict[str, Record]:
    """The records of `key` in `labels`, cut to the problems every one of them scored."""
    records = {label: sets[label].index()[key] for label in labels if key in sets[label].index()}
    if len(records) < 2:
        return records
    common = set.intersection(*(set(r.scores.index) for r in records.values()))
    return {label: replace(r, scores=r.scores[r.scores.index.isin(common)]) for label, r in records.items()}


def _ids(result_set: ResultSet, by_base: bool) -> set[str]:
    ids = {str(i) for r in result_set.records for i in r.scores.index}
    return set(statistics.base_problem_ids(sorted(ids))) if by_base else ids


def check_sets(kind: str, sets: dict[str, ResultSet], pairs: list[tuple[str, str]]) -> None:
    for variant, reference in pairs:
        shown = f"{variant!r} ({sets[variant].path})"
        if variant in OPTION_VARIANTS and variant not in ACCEPTS[kind]:
            raise UserError(f"result set {shown} is a {variant} variant; the {kind} analysis compares "
                            f"{' / '.join(ACCEPTS[kind])} sets with the original")
        if kind == "permutation" and not sets[variant].permuted:
            raise UserError(f"result set {shown} has no <id>_perm_<k> rows: not a permuted (SMMILE++) set")
        if kind == "noise" and sets[variant].permuted and not sets[reference].permuted:
            raise UserError(f"result set {shown} holds permuted <id>_perm_<k> rows and the original does not; "
                            "use `smmile analyze permutation`")
        if not _ids(sets[variant], kind == "permutation") & _ids(sets[reference], False):
            raise UserError(f"result sets {shown} and {reference!r} ({sets[reference].path}) share no problem; "
                            "were they run on the same dataset?")


def unmatched(sets: dict[str, ResultSet], pairs: list[tuple[str, str]]) -> list[str]:
    """Notes naming each (model, metric, mode) scored in only one set of a comparison."""
    notes = []
    for variant, reference in pairs:
        for label, other in ((variant, reference), (reference, variant)):
            own, theirs = sets[label].index(), sets[other].index()
            notes += [f"{' '.join(key)}: scored in {label!r} ({own[key].source}) but not in {other!r}; "
                      f"no {variant} vs {reference} comparison for it" for key in own if key not in theirs]
    return list(dict.fromkeys(notes))


def analyse(kind: str, sets: dict[str, ResultSet], settings: dict, notes: list) -> Report:
    """Every comparison of ``kind`` (``settings``: ``compare``'s keywords, ``level`` required); what pairing left
    out, and results without a partner, go to ``notes``."""
    pairs = comparisons(kind, list(sets))
    check_sets(kind, sets, pairs)
    notes.extend(unmatched(sets, pairs))
    if kind == "order" and len(pairs) == 1:
        (there, _), = pairs
        absent = LAST if there == FIRST else FIRST
        notes.append(f"no {absent} result set given (missing): only {there} vs original is analysed; run the models "
                     f"on `smmile data variant {absent}` and add {absent}=PATH to also compare it and last vs first")
    report = Report(kind)
    present = [label for label in (ORIGINAL, FIRST, LAST) if label in sets]
    for key in sets[ORIGINAL].index():
        records = _restrict(sets, key, present) if kind == "order" else None
        for variant, reference in pairs:
            pair = records or {label: sets[label].index().get(key) for label in (variant, reference)}
            if pair.get(variant) is None or pair.get(reference) is None:
                continue
            row, table = compare(pair[reference], pair[variant], kind == "permutation", notes=notes, **settings)
            report.summary.append({"analysis": kind, "variant": variant, "reference": reference, **row})
            labels = {"model": row["model"], "metric": row["metric"], "mode": row["mode"],
                      "variant": variant, "reference": reference}
            report.flips.append(pd.concat([pd.DataFrame([labels] * len(table)), table], axis=1))
    if not report.summary:
        raise UserError("no model/metric/mode was scored in both the original and a variant set")
    adjust(report.summary, report.flips, settings, cluster="base" if kind == "permutation" else "auto")
    report.averages = averages(report.summary)
    if kind == "order":
        report.extra["recency"] = recency(report.summary)
    if kind == "permutation":
        report.extra["consistency"], report.extra["by_problem"] = consistency(sets, pairs)
    return report


def averages(rows: list[dict]) -> list[dict]:
    """Over models: the mean difference and the relative change of the mean accuracies (the paper's "−9.1% on
    average"); the mean of the per-model relative changes, which one model near 0 % can dominate, is secondary
    and leaves out models whose reference accuracy is 0 (``models_without_relative_change``)."""
    out, frame = [], pd.DataFrame(rows)
    for (variant, reference, metric, mode), g in frame.groupby(["variant", "reference", "metric", "mode"], sort=False):
        rel = g["relative_change"].dropna()
        ref, var = float(g["accuracy_reference"].mean()), float(g["accuracy_variant"].mean())
        out.append({"variant": variant, "reference": reference, "metric": metric, "mode": mode,
                    "n_models": len(g), "mean_accuracy_reference": ref, "mean_accuracy_variant": var,
                    "mean_difference": float(g["difference"].mean()),
                    "relative_change": (var - ref) / ref * 100 if ref else float("nan"),
                    "n_models_relative": len(rel),
                    "models_without_relative_change": ", ".join(g.loc[g["relative_change"].isna(), "model"]),
                    "mean_of_relative_changes": float(rel.mean()), "min_relative_change": float(rel.min()),
                    "max_relative_change": float(rel.max())})
    return out


def recency(rows: list[dict]) -> list[dict]:
    """Accuracy with the relevant example first / last / as in the original, per model (same problems)."""
    table: dict[tuple, dict] = {}
    for r in rows:
        key = (r["model"], r["metric"], r["mode"])
        entry = table.setdefault(key, {"model": key[0], "metric": key[1], "mode": key[2], "n_pairs": r["n_pairs"]})
        if r["reference"] == ORIGINAL:
            end = r["variant"].split("-")[1]
            entry.update({"accuracy_original": r["accuracy_reference"], f"accuracy_{end}": r["accuracy_variant"],
                          f"relative_change_{end}": r["relative_change"]})
        else:
            entry.update({"last_minus_first": r["difference"], "last_minus_first_ci_low": r["ci_low"],
                          "last_minus_first_ci_high": r["ci_high"]})
    return list(table.values())


def consistency(sets: dict[str, ResultSet], pairs: list[tuple[str, str]]) -> tuple[list[dict], list[dict]]:
    """Per model and permuted set: the base problems whose outcome depends on the order; each one's share correct."""
    summary, by_problem = [], []
    reference = sets[ORIGINAL].index()
    for variant, _ in pairs:
        for key, record in sets[variant].index().items():
            per = pd.DataFrame({"score": record.scores.to_numpy(dtype=float),
                                "base_problem_id": statistics.base_problem_ids(record.scores.index)})
            per = per.groupby("base_problem_id", sort=False)["score"].agg(["count", "sum", "mean"])
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
