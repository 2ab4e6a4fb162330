"""The report's figures: what to draw (plain-data jobs for ``smmile.plotting``, display names only), drawn once
each on the worker pool. Files are ``<out>/<slug>_<key>.<fmt>`` (the prefix names the results folder, so its
figures keep their names), ``sets_<metric>`` across folders and ``analysis_<i>_<name>`` for analyses."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field

from smmile import plotting
from smmile.report import names
from smmile.report.analyses import SECTIONS
from smmile.report.build import model_order, strat_flags
from smmile.scoring import stratify


@dataclass
class Figure:
    """One figure: ``files`` maps format -> written path; ``place`` says where the page shows it."""

    key: str
    place: tuple
    title: str
    files: dict = field(default_factory=dict)


def _pct_level(level: float) -> str:
    return f"{level * 100:g}%"


def _n_text(rows: list[dict], clustered: bool) -> str:
    """``n = 111 problems`` or, for SMMILE++, ``n = 1038 rows, 86 base problems`` (ranges when they vary)."""
    if clustered:
        rows_n, problems_n = _span(r.get("n_rows") for r in rows), _span(r.get("n_problems") for r in rows)
        return f"n = {rows_n} rows, {problems_n} base problems"
    return f"n = {_span(r.get('n_problems', r.get('n_rows')) for r in rows)} problems"


def heatmap_panels(panels: list[dict]) -> tuple[list[dict], list[tuple[str, str]]]:
    """The heatmap's panels without the strata too small to read (or empty) for every model, and the
    ``(panel title, column)`` left out (the table under the figure lists them)."""
    kept, left_out = [], []
    for p in panels:
        cols = [j for j in range(len(p["columns"]))
                if any(row[j] is not None and not small[j] for row, small in zip(p["values"], p["small"]))]
        left_out += [(p["title"], c) for j, c in enumerate(p["columns"]) if j not in cols]
        if cols:
            kept.append({"title": p["title"], "columns": [p["columns"][j] for j in cols],
                         "values": [[row[j] for j in cols] for row in p["values"]],
                         "small": [[row[j] for j in cols] for row in p["small"]]})
    return kept, left_out


# -- per results folder -----------------------------------------------------------------------------
def accuracy_jobs(rset, level: float) -> list[tuple[Figure, str, dict]]:
    found = []
    for metric in names.METRICS:
        rows = [r for r in rset.estimates if r["metric"] == metric and not math.isnan(r["accuracy"])]
        if not rows:
            continue
        models = [m for m in rset.models() if any(r["model"] == m for r in rows)]
        values = {(r["model"], r["mode"]): [r["accuracy"], r["ci_low"], r["ci_high"]] for r in rows}
        series = [mode for mode in names.MODES if any(r["mode"] == mode for r in rows)]
        which = " vs ".join(series) if len(series) > 1 else f"{series[0]} only"
        clustered = any(r.get("clustered") for r in rows)
        title = f"{names.metric(metric)}: {which} ({rset.label}; {_n_text(rows, clustered)})"
        spec = {"rows": [{"label": names.display(m), "values": {mode: values[(m, mode)] for mode in series
                                                               if (m, mode) in values}} for m in models],
                "series": series, "title": title, "ylabel": "accuracy (%)",
                "n_baselines": sum(m in names.BASELINES for m in models),
                "ci_label": f"{_pct_level(level)} CI" + (" (cluster bootstrap by base problem)" if clustered else "")}
        found.append((Figure(f"{rset.slug}_accuracy_{metric.lower()}", ("main", rset.slug), title), "bars", spec))
    return found


def _paired(row: dict) -> dict:
    """A forest row's estimate, interval (nan where there is none) and significance from a paired difference."""
    low, high = (float("nan") if row.get(k) is None else row[k] for k in ("ci_low", "ci_high"))
    return {"estimate": row["difference"], "low": low, "high": high, "significant": bool(row.get("significant"))}


def gain_jobs(rset, level: float) -> list[tuple[Figure, str, dict]]:
    if not rset.gains:
        return []
    rows = [{"label": names.display(g["model_a"]), "panel": names.metric(g["metric"]), **_paired(g)}
            for g in rset.gains]
    models = [names.display(m) for m in rset.models() if any(g["model_a"] == m for g in rset.gains)]
    panels = [names.metric(m) for m in names.METRICS if any(g["metric"] == m for g in rset.gains)]
    title = f"ICL − 0-shot per model, paired {_pct_level(level)} CI ({rset.label})"
    spec = {"rows": rows, "labels": models, "panels": panels, "title": title, "xlabel": "difference (pp)",
            "significance": f"significant (family-adjusted sign-flip p < {1 - level:g}; the CI then excludes 0)"}
    return [(Figure(f"{rset.slug}_icl_gain", ("gain", rset.slug), title), "forest", spec)]


def _label_order(labels: list, counts: dict) -> list:
    """Numeric labels in numeric order; others by size (largest stratum first), then name."""
    try:
        return sorted(labels, key=float)
    except (TypeError, ValueError):
        return sorted(labels, key=lambda label: (-counts.get(label, 0), str(label)))


def interval_entries(rset):
    """Every stratum's interval entry of the folder (``strat_ci``: kind -> key -> flag -> label -> entry)."""
    return (entry for by_key in rset.strat_ci.values() for by_flag in by_key.values()
            for by_label in by_flag.values() for entry in by_label.values())


def counted_in_rows(rset) -> bool:
    """A SMMILE++ folder whose strata have no clustered interval (neither stratify's ``_ci.json`` nor a
    dataset): they count result rows, so they have neither an interval nor a small-stratum mark."""
    return rset.permuted and not any(str(e.get("method", "")).startswith("cluster") for e in interval_entries(rset))


NO_LABEL = {"None": "not recorded", "nan": "not recorded", "": "not recorded"}  # as stratify.py keys a missing value


def strata_panel(rset, kind: str, flag: str, mode: str, models: list[str]) -> dict | None:
    """One mode's panel of a heatmap: columns (labels with n), values and small flags per model row."""
    keys = {names.key_for_scoring(k.rsplit(":", 1)[0]): k
            for k in rset.stratification[kind] if k.rsplit(":", 1)[1] == mode}
    intervals = {model: rset.strat_ci[kind].get(key, {}).get(flag, {}) for model, key in keys.items()}
    rows_only = counted_in_rows(rset)
    counts: dict = {}
    for entries in intervals.values():
        for label, entry in entries.items():
            n = entry.get("n_rows") if rows_only else entry.get("n_problems", entry.get("n"))
            counts.setdefault(label, set()).add(n)
    if not counts:
        return None
    labels = _label_order(list(counts), {label: max(v) for label, v in counts.items()})
    cell = lambda model, label: intervals.get(model, {}).get(label)  # noqa: E731
    unit = " rows" if rows_only else ""
    return {"title": mode, "labels": labels,
            "columns": [f"{NO_LABEL.get(str(label), label)} (n={_span(counts[label])}{unit})" for label in labels],
            "values": [[(cell(m, l) or {}).get("accuracy") for l in labels] for m in models],
            "small": [[bool((cell(m, l) or {}).get("small")) and not rows_only for l in labels] for m in models],
            "entries": [[cell(m, l) for l in labels] for m in models]}


def _span(values) -> str:
    """The counts (None left out) as ``n`` or ``low–high``; ``?`` without any."""
    values = sorted({int(v) for v in values if v is not None})
    return "?" if not values else str(values[0]) if values[0] == values[-1] else f"{values[0]}–{values[-1]}"


def strata_panels(rset, kind: str, flag: str) -> tuple[list[str], list[dict]]:
    """(model rows in table order, unknown names after the known ones; panels): one panel per mode, without a
    mode of one label only (the derived ICL flags of 0-shot results) when another mode has more."""
    present = {names.key_for_scoring(k.rsplit(":", 1)[0]) for k in rset.stratification[kind]}
    models = [m for m in rset.models() if m in present]
    models += sorted(present - set(models))
    panels = [p for p in (strata_panel(rset, kind, flag, mode, models) for mode in names.MODES) if p]
    informative = [p for p in panels if len(p["labels"]) > 1]
    return models, informative or panels


def strata_unit(rset) -> str:
    """What a stratum's n counts: ``rows`` (``counted_in_rows``), ``base problems`` or ``problems``."""
    return "rows" if counted_in_rows(rset) else "base problems" if rset.permuted else "problems"


def strata_jobs(rset) -> list[tuple[Figure, str, dict]]:
    """A heatmap per metric and flag, without the strata too small for every model (none when all are)."""
    found = []
    unit = strata_unit(rset)
    for kind, strata in rset.stratification.items():
        for flag in strat_flags(strata):
            models, panels = strata_panels(rset, kind, flag)
            shown, left_out = heatmap_panels(panels)
            if not shown:
                continue
            title = f"{names.metric(kind.upper())} accuracy (%) by {names.flag(flag)} ({rset.label})"
            if left_out:
                title += f"; {len(left_out)} stratum column(s) with fewer than {stratify.MIN_PROBLEMS} {unit} left out"
            spec = {"panels": shown, "rows": [names.display(m) for m in models], "title": title,
                    "small_label": f"fewer than {stratify.MIN_PROBLEMS} {unit} for this model: too few to read, "
                                   "value in the table"}
            key = f"{rset.slug}_stratification_{kind}_{flag}"
            found.append((Figure(key, ("strat", rset.slug, kind, flag), title), "heatmap", spec))
    return found


# -- across folders and analyses ---------------------------------------------------------------------
def sets_jobs(data) -> list[tuple[Figure, str, dict]]:
    """Per metric, each later folder's change from the first as the side-by-side table gives it, one panel per
    mode; a model missing from a folder gets a "no result" mark."""
    if len(data.sets) < 2:
        return []
    labels = [s.label for s in data.sets]
    later = [f"{lab} − {labels[0]}" for lab in labels[1:]]
    level = data.settings.level
    found = []
    for metric in names.METRICS:
        changes = {(c["set"], c["model"], c["mode"]): c for c in data.changes if c["metric"] == metric}
        if not changes:
            continue
        present = {(r["model"], r["mode"]) for s in data.sets for r in s.estimates
                   if r["metric"] == metric and not math.isnan(r["accuracy"])}
        models = [m for m in data.models() if any(k[0] == m for k in present)]
        modes = [mode for mode in names.MODES if any(k[1] == mode for k in present)]
        rows = []
        for model, mode in ((m, mode) for m in models for mode in modes if (m, mode) in present):
            for lab, series in zip(labels[1:], later):
                c = changes.get((lab, model, mode))
                row = {"label": names.display(model), "panel": mode, "series": series}
                rows.append({**row, "missing": True} if c is None else {**row, **_paired(c)})
        title = (f"{names.metric(metric)}: {' and '.join(later)} (pp), paired by base problem, "
                 f"{_pct_level(level)} CI as in the table")
        spec = {"rows": rows, "labels": [names.display(m) for m in models], "panels": modes,
                "series": later if len(later) > 1 else [], "title": title, "xlabel": "paired change (pp)",
                "significance": "significant (shaded in the table)"}
        found.append((Figure(f"sets_{metric.lower()}", ("sets", metric), title), "forest", spec))
    return found


def analysis_jobs(views, level: float) -> list[tuple[Figure, str, dict]]:
    found = []
    for i, view in enumerate(views):
        spec = (forest_spec(view, level) if view.figure == "forest" else
                agreement_spec(view) if view.figure == "dumbbell" else None)
        if spec is None:
            continue
        key = f"analysis_{i + 1}_{os.path.splitext(os.path.basename(view.path))[0]}"
        found.append((Figure(key, ("analysis", view.path), spec["title"]), view.figure, spec))
    return found


def _models_in(rows: list[dict]) -> list[str]:
    return [names.display(m) for m in model_order([r for r in rows if r.get("model")])]


def forest_spec(view, level: float) -> dict | None:
    rows = [r for r in view.summary if isinstance(r.get("difference"), (int, float))]
    if not rows:
        return None
    pairs = list(dict.fromkeys(f"{r.get('variant')} − {r.get('reference')}" for r in rows))
    panel = lambda r: f"{names.metric(r.get('metric'))}, {r.get('mode')}"  # noqa: E731
    return {"rows": [{"label": names.display(r["model"]), "panel": panel(r),
                      "series": f"{r.get('variant')} − {r.get('reference')}", **_paired(r)} for r in rows],
            "labels": _models_in(rows), "panels": list(dict.fromkeys(panel(r) for r in rows)),
            "series": pairs if len(pairs) > 1 else [], "xlabel": "difference (pp)",
            "title": f"{dict(SECTIONS).get(view.section, view.section)}: difference (pp), paired "
                     f"{_pct_level(level)} CI" + (f", {pairs[0]}" if len(pairs) == 1 else ""),
            "significance": f"significant (family-adjusted sign-flip p < {1 - level:g}; the CI then excludes 0)"}


def agreement_spec(view) -> dict | None:
    rows = [r for r in view.summary if r.get("model") not in (None, "*")]
    other = "humans" if any("human_accuracy" in r for r in rows) else "exact match"
    field = "human_accuracy" if other == "humans" else "em_accuracy"
    rows = [r for r in rows if r.get("judge_accuracy") is not None and r.get(field) is not None]
    if not rows:
        return None
    nan = float("nan")
    return {"rows": [{"label": names.display(r["model"]), "panel": r.get("mode", ""),
                      "values": {"LLM judge": [r["judge_accuracy"], nan, nan], other: [r[field], nan, nan]}}
                     for r in rows],
            "labels": _models_in(rows), "panels": list(dict.fromkeys(r.get("mode", "") for r in rows)),
            "series": ["LLM judge", other], "title": f"Accuracy (%) by the LLM judge and by {other}",
            "xlabel": "accuracy (%)", "interval": False}


def plan(data, out: str, formats=plotting.FORMATS, size: str = "page") -> list[tuple[Figure, dict]]:
    """Every figure of the report, heatmaps first (the longest to draw), drawn at ``size`` (``plotting.SIZES``, which
    ``plotting.draw`` checks)."""
    level = data.settings.level
    planned = [job for rset in data.sets for job in strata_jobs(rset)]
    for rset in data.sets:
        planned += accuracy_jobs(rset, level) + gain_jobs(rset, level)
    planned += sets_jobs(data) + analysis_jobs(data.analysis_views, level)
    return [(fig, {"kind": kind, "spec": spec, "out": out, "name": fig.key, "formats": list(formats), "size": size})
            for fig, kind, spec in planned]


def submit(pool, planned: list[tuple[Figure, dict]]) -> list[tuple[Figure, object]]:
    return [(fig, pool.submit(plotting.draw, job)) for fig, job in planned]


def collect(submitted: list[tuple[Figure, object]]) -> list[Figure]:
    """Wait for the figures; each gets its files (format -> path)."""
    done = []
    for fig, handle in submitted:
        fig.files = {os.path.splitext(p)[1][1:]: p for p in handle.result()}
        done.append(fig)
    return done
