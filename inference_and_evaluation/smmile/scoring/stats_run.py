"""`smmile stats`: the estimates and comparisons of ``scoring.estimates`` for a results directory, written
as ``stats_estimates.csv/json`` and ``stats_comparisons.csv/json``, and its console report."""

from __future__ import annotations

import logging
import math
import os
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from smmile import fsguard, logs
from smmile.errors import UserError
from smmile.scoring import metrics, signflip, statistics, tables
from smmile.scoring.estimates import (COMPARISON_FAMILIES, FAILURE_CHOICES, FAILURES, OTHER_RULE, SHOW_OTHER_PP,
                                      WEIGHT_CHOICES, check_resampling, comparisons, dataset_gold, em_only_records,
                                      estimates)
from smmile.scoring.scores import SCORED_FROM_JSON, datasets_named, load_records

log = logging.getLogger(__name__)


def json_safe(value):
    """``value`` with numpy scalars as Python ones and NaN as None, through dicts and lists (for JSON)."""
    if isinstance(value, (np.integer, np.floating, np.bool_)):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def write_rows(rows: list[dict], stem: str, settings: dict) -> list[str]:
    """``<stem>.csv`` (one row per entry) and ``<stem>.json`` (``{"settings", "rows"}``; NaN → null)."""
    with fsguard.atomic_path(stem + ".csv") as tmp:
        pd.DataFrame(rows).to_csv(tmp, index=False)
    payload = {"settings": settings, "rows": json_safe(rows)}
    fsguard.atomic_write_json(stem + ".json", payload, allow_nan=False)
    return [stem + ".csv", stem + ".json"]


RULES = {"exclude": "transport failures (connection errors, timeouts, 5xx after retries) left out",
         "wrong": "transport failures scored wrong (the paper's rule)"}


def _other(value: float, other: float, rule: str) -> str:
    """``value`` and, when it differs by more than ``SHOW_OTHER_PP``, the other failure rule's beside it."""
    return f" ({OTHER_RULE[rule]}: {other:.2f})" if abs(value - other) > SHOW_OTHER_PP else ""


def console_table(rows: list[dict]) -> str:
    """Human-readable estimates: ``model  metric mode  acc [low, high]  (other weighting: acc [low, high])  n_rows
    n_problems  n_eff  fail``; the primary weighting, the interval and the failure rule said once below."""
    level = rows[0]["level"] if rows else statistics.DEFAULT_LEVEL
    weight = rows[0]["weight"] if rows else "row"
    alt = next(name for name in WEIGHT_CHOICES if name != weight)
    lines = [f"{'model':<22} {'metric':<5} {'mode':<7} {f'{weight} %':>7}  {f'{level:.0%} CI':<17} "
             f"{f'{alt} %':>9}  {f'{level:.0%} CI':<17} {'rows':>6} {'probl.':>6} {'n_eff':>6}  refused/failed/empty"]
    for row in rows:
        ci = f"[{row['ci_low']:.2f}, {row['ci_high']:.2f}]"
        other = f"[{row[f'ci_low_{alt}']:.2f}, {row[f'ci_high_{alt}']:.2f}]"
        counts = [row.get(f"n_{kind}") for kind in metrics.FAILURE_KINDS]
        failed = "unknown" if None in counts else "/".join(map(str, counts))
        lines.append(f"{row['model']:<22} {row['metric']:<5} {row['mode']:<7} {row['accuracy']:>7.2f}  "
                     f"{ci:<17} {row[f'accuracy_{alt}']:>9.2f}  {other:<17} {row['n_rows']:>6} {row['n_problems']:>6} "
                     f"{row['n_eff']:>6.0f}  {failed}" + _other(row["accuracy"], row["accuracy_other_rule"],
                                                               row["failures"]))
    if rows:
        rule = rows[0]["failures"]
        lines.append(f"primary: {rows[0]['estimand']} (--weight {weight}); beside it the {alt}-weighted "
                     f"estimate ({statistics.ESTIMANDS[alt]}; equal where no problem has several rows); interval: "
                     f"{rows[0]['ci_method']}; {RULES[rule]}; refused and empty responses are the model's answers, "
                     f"scored wrong; (exclude: x) / (wrong: x): the accuracy under the other rule, where it differs "
                     f"by more than {SHOW_OTHER_PP:g} pp")
        for ours, fix in ((True, "rerun the same command (smmile run) to fill them"),
                          (False, "these results have no run manifest of ours, so only their producer can fill them")):
            hit = [row for row in rows if row.get("n_failed") and row["rerunnable"] == ours]
            if hit and rule == "exclude":
                lines.append(f"{sum(row['n_failed'] for row in hit)} transport failure(s) in {len(hit)} result(s) "
                             f"are not answers and were left out: {fix}")
    return "\n".join(lines)


def comparison_summary(rows: list[dict], level: float = statistics.DEFAULT_LEVEL) -> str:
    """Per family, once: how many are significant, by which procedure, and what the intervals are; then the ICL
    lines, whose interval and * come from that one procedure."""
    alpha = 1 - level
    lines = []
    for kind in COMPARISON_FAMILIES:
        family = [r for r in rows if r["kind"] == kind]
        if family:
            lines.append(f"{len(family)} {kind} comparison(s); {sum(r['significant'] for r in family)} significant "
                         f"(*: adjusted p < {alpha:.2g}, {family[0]['adjustment']}; test: sign-flip randomisation "
                         f"over base problems, mid-p, exact up to 2^{signflip.EXACT_MAX} patterns, else seeded Monte "
                         f"Carlo); "
                         f"each interval comes from the same procedure and family, so it excludes 0 exactly when "
                         f"* is shown; estimand: {family[0]['estimand']}")
    for r in rows:
        if r["kind"] == "icl_vs_0shot":
            mark = " *" if r["significant"] else ""
            lines.append(f"  ICL - 0-shot  {r['model_a']:<22} {r['metric']:<5} {r['difference']:+7.2f} pp "
                         f"[{_bound(r['ci_low'])}, {_bound(r['ci_high'])}]{mark}  mid-p={r['p_value']:.3g}  "
                         f"p_adj={r['p_adjusted']:.3g}  n_pairs={r['n_pairs']} ({r['n_problems']} problems, "
                         f"{r['problems_favour_a']} favour ICL, {r['problems_favour_b']} 0-shot; "
                         f"{next(n for n in WEIGHT_CHOICES if n != r['weight'])}-weighted "
                         f"{r['difference_' + next(n for n in WEIGHT_CHOICES if n != r['weight'])]:+.2f} pp; "
                         f"{r['gold_mismatches']} gold mismatch(es) "
                         f"{'kept' if r['gold_mismatches_included'] else 'excluded'}); {_failures(r)}"
                         + _other(r["difference"], r["difference_other_rule"], r["failures"]))
    return "\n".join(lines)


def _bound(value: float) -> str:
    """An interval bound with 2 decimals, more where a non-zero bound would print as 0.00 (so a printed
    interval never looks like it touches 0 when it does not)."""
    return f"{value:+.2f}" if value == 0 or abs(value) >= 0.005 else f"{value:+.1e}"


def _failures(row: dict) -> str:
    """``refused/failed/empty ICL a/b/c, 0-shot d/e/f`` of a comparison's pairs."""
    sides = []
    for side in ("a", "b"):
        counts = [row.get(f"n_{kind}_{side}") for kind in metrics.FAILURE_KINDS]
        sides.append("unknown" if None in counts else "/".join(map(str, counts)))
    return f"refused/failed/empty {row['mode_a']} {sides[0]}, {row['mode_b']} {sides[1]}"


@dataclass(frozen=True)
class StatsSettings(statistics.Resampling):
    """How ``run_stats`` estimates and compares (recorded in its outputs, in this order: the resampling first)."""

    compare: str = "icl"
    include_gold_mismatch: bool = False
    weight: str = "row"
    failures: str = FAILURES
    adjust: str = "minP"
    n_flips: int = signflip.DEFAULT_N_FLIPS
    dataset: str | None = None  # the dataset whose answers each estimate's gold answers are checked against


def run_stats(results_dir: str, *, out: str | None = None, force: bool = False, **settings) -> tuple[int, str]:
    """Estimates (and comparisons, unless ``compare="none"``) for the results in ``results_dir``, written
    to ``out`` (a folder this command owns, locked while writing; ``force``: any allowed folder) or, by
    default, as ``stats_*`` files into ``results_dir``. ``settings``: the fields of ``StatsSettings``.
    Returns the exit status (1 when some input was skipped, named on stderr) and the console report."""
    s = StatsSettings(**settings)
    if not os.path.isdir(results_dir):
        raise UserError(f"results directory {results_dir} not found")
    check_resampling(s.n_boot, s.level)
    if s.weight not in WEIGHT_CHOICES:
        raise UserError(f"--weight must be one of {', '.join(WEIGHT_CHOICES)}")
    if s.n_flips < 1:
        raise UserError("--n-flips must be at least 1")
    if s.failures not in FAILURE_CHOICES:
        raise UserError(f"--failures must be one of {', '.join(FAILURE_CHOICES)}")
    if not out:
        fsguard.check_writable_dir(results_dir, "results directory")
        return _compute_into(results_dir, results_dir, s)
    folder = os.fspath(fsguard.prepare_output_dir(out, "smmile stats", force=force))
    with fsguard.OutputLock(folder, f"the statistics folder {folder}"):
        return _compute_into(results_dir, folder, s)


def dataset_versions(records) -> list[str]:
    """One warning per dataset whose results were read at different versions (a hub dataset's resolved commit, a
    local folder's content fingerprint), naming each version and a result read at it."""
    seen: dict[tuple, dict[str, str]] = {}
    for record in records:
        dataset = ((record.result.manifest if record.result is not None else None) or {}).get("dataset")
        if not isinstance(dataset, dict) or not dataset.get("id"):
            continue
        version = dataset.get("resolved_revision") if dataset.get("kind") == "hub" else dataset.get("fingerprint")
        if version:
            where = seen.setdefault((dataset.get("kind"), str(dataset["id"])), {})
            where.setdefault(str(version), os.path.basename(record.source))
    return [f"warning: the results compared read {name} at {len(found)} different "
            f"{'commits' if kind == 'hub' else 'contents (fingerprints)'}: "
            + "; ".join(f"{version} ({source})" for version, source in found.items())
            + (" (pin one with --revision)" if kind == "hub" else "")
            for (kind, name), found in seen.items() if len(found) > 1]


def with_costs(rows: list[dict], records) -> list[dict]:
    """The estimate rows with ``cost_per_correct`` of their record."""
    costs = {(r.model, r.metric, r.mode): cost_per_correct(r) for r in records}
    return [{**row, **costs.get((row["model"], row["metric"], row["mode"]), {})} for row in rows]


def cost_per_correct(record) -> dict:
    """Input and output tokens and dollars per correct answer from the run's recorded usage (a judge's tokens are
    not counted), with the price table's date; None where the provider reported no usage (never zero), and for a
    metric that scores failures."""
    manifest = (record.result.manifest if record.result is not None else None) or {}
    usage = manifest.get("usage") if isinstance(manifest.get("usage"), dict) else {}
    backend = manifest.get("backend") if isinstance(manifest.get("backend"), dict) else {}
    accounting = backend.get("accounting") if isinstance(backend.get("accounting"), dict) else {}
    correct = 0.0 if metrics.get_metric(record.metric).measures_failures else float(record.scores.sum())
    per = {f"{name}_per_correct": (usage[key] / correct if correct and isinstance(usage.get(key), (int, float))
                                   else None)
           for name, key in (("input_tokens", "input_tokens"), ("output_tokens", "output_tokens"),
                             ("usd", "cost_usd"))}
    return {**per, "prices_date": accounting.get("prices_date") if per["usd_per_correct"] is not None else None}


COST_HEAD = ["model", "metric", "mode", "input tokens / correct", "output tokens / correct", "USD / correct",
             "prices of"]
COST_NOTE = "tokens and cost per correct answer (the run's recorded usage over its correct answers; judges not counted)"


def cost_cells(rows: list[dict]) -> list[list[str]]:
    """``COST_HEAD``'s cells of the rows whose run recorded usage ([] when none did); "missing", never 0."""
    cell = lambda v, f: "missing" if v is None or v != v else format(v, f)  # noqa: E731
    return [[r["model"], r["metric"], r["mode"], cell(r["input_tokens_per_correct"], ".1f"),
             cell(r["output_tokens_per_correct"], ".1f"), cell(r["usd_per_correct"], ".6f"),
             r.get("prices_date") or "-"]
            for r in rows if r.get("input_tokens_per_correct") is not None or r.get("usd_per_correct") is not None]


def cost_table(rows: list[dict]) -> str:
    cells = cost_cells(rows)
    widths = [max(len(str(c)) for c in column) for column in zip(COST_HEAD, *cells)]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(row, widths)) for row in [COST_HEAD, *cells]]
    return "\n".join([COST_NOTE + ":", *lines]) if cells else ""


def _compute_into(results_dir: str, out: str, s: StatsSettings) -> tuple[int, str]:
    with logs.kept_warnings() as said:
        records = load_records(results_dir)
    skipped = [message for message in said if SCORED_FROM_JSON not in message]
    records += em_only_records(results_dir, records)
    if not records:
        raise UserError(f"no scorable result files in {results_dir}")
    settings = {"results_dir": os.path.abspath(results_dir), **asdict(s)}
    gold = dataset_gold(s.dataset) if s.dataset else None
    rows = estimates(records, s.n_boot, s.seed, s.cluster, s.level, s.weight, s.failures, gold)
    for message in dataset_versions(records):
        log.warning(message)
    named = sorted({i for i, _ in datasets_named({r.result.path: r.result for r in records if r.result}.values())})
    if len(named) > 1:  # said, not refused: a folder may hold them on purpose
        log.warning(f"note: these results were run on {len(named)} datasets ({', '.join(named)}): each estimate is "
                    "on its own dataset's problems, a comparison on the problems both results share")
    rows = with_costs(rows, records)
    written = write_rows(rows, os.path.join(out, "stats_estimates"), settings)
    fsguard.atomic_write_text(os.path.join(out, "stats_table.tex"), tables.ci_latex_table(rows))
    written.append(os.path.join(out, "stats_table.tex"))
    report = [console_table(rows)] + [t for t in (cost_table(rows),) if t]
    if s.compare != "none":
        paper = [r for r in records if metrics.get_metric(r.metric).paper]  # NOANS leaves the families as they were
        pairs = comparisons(paper, s.compare, s.n_boot, s.seed, s.cluster, s.level, s.include_gold_mismatch,
                            s.weight, s.failures, s.adjust, s.n_flips)
        written += write_rows(pairs, os.path.join(out, "stats_comparisons"), settings)
        report.append(comparison_summary(pairs, s.level))
    report.append("Written: " + ", ".join(written))
    return (1 if skipped else 0), "\n".join(report)
