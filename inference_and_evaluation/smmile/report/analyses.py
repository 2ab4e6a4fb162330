"""Outputs of ``smmile analyze`` / ``smmile agreement`` (``<out>/<analysis>.json`` and a CSV per table,
docs/analyses.md) as report tables, never raw JSON. Known tables get a fixed layout of typed columns; per-problem
tables are counted and left to their CSV files; any other CSV or JSON becomes a plain table of its scalars. A field
renamed between versions is found under any of its names."""

from __future__ import annotations

import csv
import json
import os
from dataclasses import dataclass, field

from smmile.analysis.analyze_run import ANALYSES
from smmile.report.html import pick

SECTIONS = (("noise", "Noise: an unrelated example added"),
            ("order", "Order: the matching example first vs last"),
            ("permutation", "Permutations of the examples (SMMILE++)"),
            ("shots", "ICL diagnostics: shot curve (accuracy against the number of examples)"),
            ("flip", "ICL diagnostics: flipped answers"),
            ("images", "ICL diagnostics: examples without images, blind query"),
            ("diagnostics", "ICL diagnostics: summary per model"),
            ("policies", "ICL: demonstration policies against the experts' examples"),
            ("agreement", "Agreement: judge vs humans and exact match"),
            ("variance_components", "Variance components (SMMILE++): problem and order shares, order sensitivity, "
                                    "minimum detectable difference (smmile analyze variance-components)"),
            ("other", "Other analysis files"))
PER_PROBLEM = ("flips", "by_problem", "items", "reviewed_cells")
MAX_ROWS = 200
IMAGE_EXTS = (".png", ".svg")


class Col:
    """A typed column: ``fmt`` says how html renders it; ``keys``: one field under any of its names, or the
    fields of ``ci`` (estimate, low, high) and ``pair``."""

    def __init__(self, header: str, fmt: str, *keys: str):
        self.header, self.fmt, self.keys = header, fmt, keys


MODEL, METRIC, MODE = Col("Model", "model", "model"), Col("Metric", "metric", "metric"), Col("Mode", "text", "mode")
N, N_PAIRS = Col("n", "int", "n"), Col("n", "int", "n_pairs", "n")
SUMMARY = (MODEL, METRIC, MODE, N_PAIRS, Col("base problems", "int", "n_problems", "n_clusters"),
           Col("reference %", "pct", "accuracy_reference"), Col("variant %", "pct", "accuracy_variant"),
           Col("difference pp [CI]", "ci", "difference", "ci_low", "ci_high"),
           Col("relative %", "signed", "relative_change"), Col("gained / lost", "pair", "gained", "lost"),
           Col("p", "p", "p_value", "p_mcnemar"), Col("test", "text", "p_method"),
           Col("p (adjusted)", "p", "p_adjusted", "p_holm"),
           Col("significant", "flag", "significant"))
AVERAGES = (Col("Variant", "text", "variant"), Col("Reference", "text", "reference"), METRIC, MODE,
            Col("models", "int", "n_models"), Col("mean reference %", "pct", "mean_accuracy_reference"),
            Col("mean variant %", "pct", "mean_accuracy_variant"),
            Col("mean difference pp", "signed", "mean_difference"),
            Col("relative change of the mean %", "signed", "relative_change"),
            Col("mean of relative changes % [min, max]", "ci", "mean_of_relative_changes", "min_relative_change",
                "max_relative_change"),
            Col("mean relative % [min, max]", "ci", "mean_relative_change", "min_relative_change",
                "max_relative_change"))
RECENCY = (MODEL, METRIC, MODE, N_PAIRS, Col("original %", "pct", "accuracy_original"),
           Col("first %", "pct", "accuracy_first"), Col("last %", "pct", "accuracy_last"),
           Col("last − first pp [CI]", "ci", "last_minus_first", "last_minus_first_ci_low",
               "last_minus_first_ci_high"))
CONSISTENCY = (Col("Variant", "text", "variant"), MODEL, METRIC, MODE, Col("rows", "int", "n_rows"),
               Col("base problems", "int", "n_base", "n_problems"), Col("order-sensitive", "int", "order_sensitive"),
               Col("order-sensitive %", "pct", "share_order_sensitive"))
RATER_PAIRS = (Col("Rater A", "rater", "rater_a"), Col("Rater B", "rater", "rater_b"), N,
               Col("agreement %", "pct", "percent"), Col("Cohen's κ", "coef", "cohen_kappa"))
VERSUS = (Col("Scope", "text", "scope"), MODEL, MODE, N, Col("ties excluded", "int", "ties_excluded"),
          Col("agreement %", "pct", "percent"), Col("Cohen's κ", "coef", "cohen_kappa"),
          Col("judge %", "pct", "judge_accuracy"), Col("human %", "pct", "human_accuracy"),
          Col("EM %", "pct", "em_accuracy"), Col("bias pp", "signed", "bias"))
JUDGES = (Col("Comparison", "text", "comparison"), MODE, Col("Format", "text", "format"),
          Col("by", "text", "by"), Col("stratum", "text", "stratum"),
          Col("Rater A", "rater", "rater_a"), Col("Rater B", "rater", "rater_b"), N,
          Col("base problems", "int", "n_clusters"), Col("ties excluded", "int", "ties_excluded"),
          Col("jury ties", "int", "ties"), Col("left out", "int", "left_out"),
          Col("agreement % [CI]", "ci", "percent", "percent_low", "percent_high"),
          Col("κ [CI]", "ci", "cohen_kappa", "kappa_low", "kappa_high"),
          Col("Fleiss' κ [CI]", "ci", "fleiss_kappa", "kappa_low", "kappa_high"), Col("interval", "text", "interval"))
DISPUTED = (MODEL, MODE, Col("Format", "text", "format"), Col("Problem", "text", "problem_id"),
            Col("verdict shown", "int", "verdict_shown"), Col("reviewers", "int", "reviewed"),
            Col("exact match", "int", "em"), Col("reviews", "text", "reviews"), Col("notes", "text", "notes"))
CORRELATION = (MODE, Col("results", "int", "n_results"), Col("Pearson r", "coef", "pearson_r"),
               Col("mean bias pp", "signed", "mean_bias"))
INTER_RATER = (Col("raters", "int", "n_raters"), Col("labels", "int", "n_labels"), Col("items", "int", "n_items"),
               Col("items with ≥ 2 labels", "int", "n_items_multi"),
               Col("pairwise agreement %", "pct", "pairwise_percent"),
               Col("unanimous %", "pct", "unanimous_percent"), Col("Fleiss' κ", "coef", "fleiss_kappa"))
CURVE = (MODEL, METRIC, Col("k", "text", "point"), Col("run", "text", "set"), MODE, Col("n", "int", "n_rows"),
         Col("accuracy % [CI]", "ci", "accuracy", "ci_low", "ci_high"))
DIAGNOSTICS = (MODEL, METRIC, Col("gain from examples pp [CI]", "ci", "gain", "gain_ci_low", "gain_ci_high"),
               Col("with flipped answers pp [CI]", "ci", "flipped", "flipped_ci_low", "flipped_ci_high"),
               Col("share of the gain %", "signed", "flipped_share"),
               Col("without example images pp [CI]", "ci", "no_example_images", "no_example_images_ci_low",
                   "no_example_images_ci_high"),
               Col("share of the gain %", "signed", "no_example_images_share"),
               Col("query image, ICL pp [CI]", "ci", "query_image_icl", "query_image_icl_ci_low",
                   "query_image_icl_ci_high"),
               Col("query image, 0-shot pp [CI]", "ci", "query_image_0shot", "query_image_0shot_ci_low",
                   "query_image_0shot_ci_high"),
               Col("not computed (missing runs)", "text", "not_computed"))
LAYOUTS = {  # a table's name in the JSON -> (its title, its columns)
    "summary": ("Paired differences", SUMMARY), "averages": ("Mean over models", AVERAGES),
    "curve": ("Accuracy at each number of examples", CURVE), "recency": ("Recency", RECENCY),
    "diagnostics": ("ICL diagnostics per model (A − B in pp; share = part of the gain from examples left)",
                    DIAGNOSTICS),
    "consistency": ("Consistency across orders", CONSISTENCY), "rater_pairs": ("Human raters, pairwise", RATER_PAIRS),
    "judge_vs_humans": ("Judge vs the human majority", VERSUS), "em_vs_judge": ("Exact match vs judge", VERSUS),
    "judge_human_correlation": ("Judge vs humans across models", CORRELATION),
    "inter_rater": ("Human raters", INTER_RATER),
    "em_judge_correlation": ("Exact match vs judge across models", CORRELATION),
    "judges": ("Judges of the jury: pairwise, Fleiss, vs exact match", JUDGES),
    "reviews": ("Judge and exact match vs reviewers", JUDGES), "reviews_disputed": ("Disputed verdicts", DISPUTED)}
VARIANT_TABLES = ("averages", "recency", "consistency", "curve", "diagnostics")  # beside a variant's summary
AGREEMENT_TABLES = ("inter_rater", "rater_pairs", "judge_vs_humans", "judge_human_correlation", "em_vs_judge",
                    "em_judge_correlation", "judges", "reviews", "reviews_disputed")  # smmile agreement's, in order


@dataclass
class TableView:
    title: str
    columns: tuple  # Col
    rows: list  # dicts
    n_rows: int = 0
    note: str = ""  # what a left-out column held (the same in every row)


@dataclass
class AnalysisView:
    section: str
    title: str
    path: str
    tables: list = field(default_factory=list)  # TableView
    summary: list = field(default_factory=list)  # rows of a variant summary / agreement comparison
    figure: str = ""  # "forest" | "dumbbell" | "" (what report.figures draws from ``summary``)
    notes: list = field(default_factory=list)
    image: str | None = None  # a PNG/SVG file found in the folder


def section_of(text: str) -> str:
    lowered = text.lower()
    if "perm" in lowered:
        return "permutation"
    return next((key for key, _ in SECTIONS if key in lowered), "other")


def present_columns(columns, rows: list[dict]) -> tuple:
    return tuple(c for c in columns if any(pick(r, c.keys[:1] if c.fmt in ("ci", "pair") else c.keys)
                                           not in (None, "") for r in rows))


def is_records(value) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def settings_note(data: dict) -> str:
    settings = data.get("settings") if isinstance(data.get("settings"), dict) else {}
    shown = {True: "yes", False: "no"}
    parts = [f"{k.replace('_', ' ')} {shown.get(v, v) if isinstance(v, bool) else v}" for k, v in settings.items()
             if v is not None and v != "" and not isinstance(v, (dict, list))]
    return "settings: " + ", ".join(parts) if parts else ""


def sets_note(data: dict) -> str:
    sets = data.get("sets") if isinstance(data.get("sets"), list) else []
    parts = [f"{s.get('label')} = {s.get('path')} ({len(s.get('files') or [])} result files)"
             for s in sets if isinstance(s, dict)]
    return "result sets: " + "; ".join(parts) if parts else ""


def compact(columns: tuple, rows: list[dict]) -> tuple[tuple, str]:
    """Leave out what every row repeats: the test's name (said in the note), base problems equal to n."""
    keep, notes = [], []
    for c in columns:
        values = {str(pick(r, c.keys)) for r in rows}
        if c.keys == ("p_method",) and len(values) == 1:
            notes.append(f"test: {values.pop()}")
        elif c.header == "base problems" and all(pick(r, c.keys) == pick(r, ("n_pairs", "n")) for r in rows):
            continue
        else:
            keep.append(c)
    return tuple(keep), "; ".join(notes)


def typed_table(name: str, rows: list[dict], title: str | None = None) -> TableView:
    default_title, layout = LAYOUTS[name]
    columns, note = compact(present_columns(layout, rows), rows)
    return TableView(title or default_title, columns, rows[:MAX_ROWS], len(rows), note)


def variant_view(data: dict, path: str, relative: str) -> AnalysisView:
    kind = data["analysis"]
    view = AnalysisView(kind, relative, path, figure="" if kind == "shots" else "forest")  # shots: its own PNG
    summary = data.get("summary") if is_records(data.get("summary")) else []
    view.summary = summary
    for pair in dict.fromkeys((r.get("variant"), r.get("reference")) for r in summary):
        rows = [r for r in summary if (r.get("variant"), r.get("reference")) == pair]
        view.tables.append(typed_table("summary", rows, f"{pair[0]} − {pair[1]}"))
    view.notes += [f"not computed (missing runs): {m}" for m in data.get("missing") or [] if isinstance(m, str)]
    for name in VARIANT_TABLES:
        if is_records(data.get(name)):
            view.tables.append(typed_table(name, data[name]))
    view.notes = [n for n in (sets_note(data), settings_note(data)) if n] + view.notes + closing_notes(data, path)
    return view


def agreement_view(data: dict, path: str, relative: str) -> AnalysisView:
    folder = os.path.dirname(relative)
    view = AnalysisView("agreement", "smmile agreement" + (f" ({folder})" if folder else ""), path, figure="dumbbell")
    for name in AGREEMENT_TABLES:
        rows = [data[name]] if isinstance(data.get(name), dict) else data.get(name)  # inter_rater: one row
        if is_records(rows):
            view.tables.append(typed_table(name, rows))
    humans = [r for r in data.get("judge_vs_humans") or [] if isinstance(r, dict) and r.get("scope") == "model"]
    view.summary = humans or [r for r in data.get("em_vs_judge") or [] if isinstance(r, dict)]
    view.notes = [n for n in (settings_note(data),) if n] + closing_notes(data, path)
    return view


def closing_notes(data: dict, path: str) -> list[str]:
    stem = os.path.splitext(os.path.basename(path))[0]
    notes = [f"{len(data[name])} per-problem rows ({name}) are in {stem}_{name}.csv beside {os.path.basename(path)}"
             for name in PER_PROBLEM if is_records(data.get(name))]
    return notes + [f"warning: {w}" for w in data.get("warnings") or [] if isinstance(w, str)]


def flatten(value, prefix: str = "") -> dict:
    """Nested dicts as ``a.b`` keys; lists as their length (or their items when few scalars)."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            out.update(flatten(v, f"{prefix}{k}."))
        return out
    if isinstance(value, list):
        scalars = all(not isinstance(v, (dict, list)) for v in value)
        text = ", ".join(os.path.basename(str(v)) for v in value) if scalars and len(value) <= 6 else f"{len(value)} items"
        return {prefix[:-1]: text}
    return {prefix[:-1]: value}


def generic_view(data, path: str, relative: str) -> AnalysisView:
    """A JSON of another layout: its lists of records as tables, the rest as one key/value table."""
    view = AnalysisView(section_of(relative), relative, path)
    if is_records(data):
        data = {"rows": data}
    if not isinstance(data, dict):
        data = {"value": data}
    scalars = {k: v for k, v in data.items() if not is_records(v)}
    if scalars:
        view.tables.append(plain_table("values", [{"key": k, "value": v} for k, v in flatten(scalars).items()]))
    for k, v in data.items():
        if is_records(v):
            view.tables.append(plain_table(k, [flatten(r) for r in v]))
    return view


def plain_table(title: str, rows: list[dict]) -> TableView:
    keys = list(dict.fromkeys(k for r in rows for k in r))
    columns = tuple(Col(k, "auto", k) for k in keys)
    return TableView(title, columns, rows[:MAX_ROWS], len(rows))


def load_json(path: str):
    """The file's JSON, or the exception that kept it from being read."""
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError) as exc:  # UnicodeDecodeError is a ValueError
        return exc


def json_view(data, path: str, relative: str) -> AnalysisView:
    if isinstance(data, Exception):
        return AnalysisView(section_of(relative), relative, path, notes=[f"unreadable: {type(data).__name__}: {data}"])
    if isinstance(data, dict) and data.get("analysis") in ANALYSES:
        return variant_view(data, path, relative)
    if isinstance(data, dict) and any(k in data for k in AGREEMENT_TABLES):
        return agreement_view(data, path, relative)
    return generic_view(data, path, relative)


def read_csv(path: str, relative: str) -> AnalysisView:
    view = AnalysisView(section_of(relative), relative, path)
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            view.tables.append(plain_table(relative, list(csv.DictReader(handle))))
    except (OSError, csv.Error, UnicodeDecodeError) as exc:
        view.notes.append(f"unreadable: {type(exc).__name__}: {exc}")
    return view


def _files(directory: str) -> list[str]:
    found = []
    for root, dirs, names in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        found.extend(os.path.join(root, n) for n in sorted(names) if not n.startswith("."))
    return found


def load_directory(directory: str) -> list[AnalysisView]:
    paths = _files(directory)
    loaded = {p: load_json(p) for p in paths if p.endswith(".json")}
    covered = {f"{os.path.splitext(p)[0]}_{k}.csv" for p, data in loaded.items() if isinstance(data, dict)
               for k, v in data.items() if is_records(v)}  # <stem>_<key>.csv: a table of <stem>.json
    views = []
    for path in paths:
        relative = os.path.relpath(path, directory)
        if path in loaded:
            views.append(json_view(loaded[path], path, relative))
        elif path.endswith(".csv") and path not in covered:
            views.append(read_csv(path, relative))
        elif path.endswith(IMAGE_EXTS) and not (path.endswith(".svg") and os.path.exists(path[:-4] + ".png")):
            views.append(AnalysisView(section_of(relative), relative, path, image=path))
    return views


def load_analyses(directories, warnings: list | None = None) -> list[AnalysisView]:
    views = []
    for directory in directories:
        found = load_directory(directory)
        if not found and warnings is not None:
            warnings.append(f"{directory}: no analysis output (JSON, CSV, PNG or SVG) found")
        views += found
    return views
