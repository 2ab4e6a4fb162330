"""The report's figures: what to draw (plain-data jobs for ``smmile.scoring.plots``) and drawing them
once each, in worker processes when there are several.

Jobs carry display names only. Figure files are ``<out>/<prefix><key>.<fmt>``; the prefix names the
results folder when the report has several (``smmile_``, ``smmile-pp_``).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field

from smmile.report import names
from smmile.report.analyses import SECTIONS
from smmile.report.build import model_order, strat_flags
from smmile.scoring import plots, stratify

FORMATS = plots.FORMATS


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
    def span(values):
        values = sorted({int(v) for v in values if v is not None})
        return "?" if not values else str(values[0]) if len(values) == 1 else f"{values[0]}–{values[-1]}"
    if clustered:
        return f"n = {span(r.get('n_rows') for r in rows)} rows, {span(r.get('n_problems') for r in rows)} base problems"
    return f"n = {span(r.get('n_problems', r.get('n_rows')) for r in rows)} problems"


def _job(kind: str, spec: dict, out: str, name: str, formats) -> dict:
    return {"kind": kind, "spec": spec, "out": out, "name": name, "formats": list(formats)}


# -- per results folder -----------------------------------------------------------------------------
def accuracy_jobs(rset, prefix: str, level: float, out: str, formats) -> list[tuple[Figure, dict]]:
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
        key = f"{prefix}accuracy_{metric.lower()}"
        found.append((Figure(key, ("main", rset.slug), title), _job("bars", spec, out, key, formats)))
    return found


def gain_jobs(rset, prefix: str, level: float, out: str, formats) -> list[tuple[Figure, dict]]:
    if not rset.gains:
        return []
    rows = [{"label": names.display(g["model_a"]), "panel": names.metric(g["metric"]), "estimate": g["difference"],
             "low": g["ci_low"], "high": g["ci_high"], "significant": bool(g.get("significant"))} for g in rset.gains]
    models = [names.display(m) for m in rset.models() if any(g["model_a"] == m for g in rset.gains)]
    panels = [names.metric(m) for m in names.METRICS if any(g["metric"] == m for g in rset.gains)]
    title = f"ICL − 0-shot per model, paired {_pct_level(level)} CI ({rset.label})"
    spec = {"rows": rows, "labels": models, "panels": panels, "title": title, "xlabel": "difference (pp)",
            "significance": f"significant (Holm p < {1 - level:g} and CI excludes 0)"}
    key = f"{prefix}icl_gain"
    return [(Figure(key, ("gain", rset.slug), title), _job("forest", spec, out, key, formats))]


def _label_order(labels: list, counts: dict) -> list:
    """Numeric labels in numeric order; others by size (largest stratum first), then name."""
    try:
        return sorted(labels, key=float)
    except (TypeError, ValueError):
        return sorted(labels, key=lambda label: (-counts.get(label, 0), str(label)))


def strata_panel(rset, kind: str, flag: str, mode: str, models: list[str]) -> dict | None:
    """One mode's panel of a heatmap: columns (labels with n), values and small flags per model row."""
    keys = {names.key_for_scoring(k.rsplit(":", 1)[0]): k
            for k in rset.stratification[kind] if k.rsplit(":", 1)[1] == mode}
    intervals = {model: rset.strat_ci[kind].get(key, {}).get(flag, {}) for model, key in keys.items()}
    counts: dict = {}
    for entries in intervals.values():
        for label, entry in entries.items():
            counts.setdefault(label, set()).add(entry.get("n_problems", entry.get("n")))
    if not counts:
        return None
    labels = _label_order(list(counts), {label: max(v) for label, v in counts.items()})
    cell = lambda model, label: intervals.get(model, {}).get(label)  # noqa: E731
    return {"title": mode, "labels": labels,
            "columns": [f"{label} (n={_span(counts[label])})" for label in labels],
            "values": [[(cell(m, l) or {}).get("accuracy") for l in labels] for m in models],
            "small": [[bool((cell(m, l) or {}).get("small")) for l in labels] for m in models],
            "entries": [[cell(m, l) for l in labels] for m in models]}


def _span(values: set) -> str:
    values = sorted(v for v in values if v is not None)
    return "?" if not values else str(values[0]) if values[0] == values[-1] else f"{values[0]}–{values[-1]}"


def strata_models(rset, kind: str) -> list[str]:
    """Row keys of a stratification file, in table order (unknown names after the known rows)."""
    present = {names.key_for_scoring(k.rsplit(":", 1)[0]) for k in rset.stratification[kind]}
    ordered = [m for m in rset.models() if m in present]
    return ordered + sorted(present - set(ordered))


def strata_panels(rset, kind: str, flag: str) -> tuple[list[str], list[dict]]:
    """(model rows, panels): one panel per mode; a mode where every model has one label only (the
    derived ICL flags of 0-shot results) is left out when another mode has more."""
    models = strata_models(rset, kind)
    panels = [p for p in (strata_panel(rset, kind, flag, mode, models) for mode in names.MODES) if p]
    informative = [p for p in panels if len(p["labels"]) > 1]
    return models, informative or panels


def strata_jobs(rset, prefix: str, out: str, formats) -> list[tuple[Figure, dict]]:
    found = []
    unit = "base problems" if rset.permuted else "problems"
    for kind, strata in rset.stratification.items():
        for flag in strat_flags(strata):
            models, panels = strata_panels(rset, kind, flag)
            if not panels:
                continue
            title = f"{names.metric(kind.upper())} accuracy (%) by {names.flag(flag)} ({rset.label})"
            spec = {"panels": [{k: p[k] for k in ("title", "columns", "values", "small")} for p in panels],
                    "rows": [names.display(m) for m in models], "title": title,
                    "small_label": f"fewer than {stratify.MIN_PROBLEMS} {unit}: too few to read, value in the table"}
            key = f"{prefix}stratification_{kind}_{flag}"
            found.append((Figure(key, ("strat", rset.slug, kind, flag), title), _job("heatmap", spec, out, key, formats)))
    return found


# -- across folders and analyses ---------------------------------------------------------------------
def sets_jobs(data, out: str, formats) -> list[tuple[Figure, dict]]:
    if len(data.sets) < 2:
        return []
    labels = [s.label for s in data.sets]
    found = []
    for metric in names.METRICS:
        values: dict = {}
        for s in data.sets:
            for r in s.estimates:
                if r["metric"] == metric and not math.isnan(r["accuracy"]):
                    values.setdefault((r["model"], r["mode"]), {})[s.label] = [r["accuracy"], r["ci_low"], r["ci_high"]]
        shared = {k: v for k, v in values.items() if len(v) > 1}
        if not shared:
            continue
        models = [m for m in data.models() if any(k[0] == m for k in shared)]
        modes = [mode for mode in names.MODES if any(k[1] == mode for k in shared)]
        rows = [{"label": names.display(m), "panel": mode, "values": v} for (m, mode), v in shared.items()]
        title = f"{names.metric(metric)} accuracy (%): {' vs '.join(labels)}, {_pct_level(data.settings.level)} CI"
        spec = {"rows": rows, "labels": [names.display(m) for m in models], "panels": modes, "series": labels,
                "title": title, "xlabel": "accuracy (%)"}
        key = f"sets_{metric.lower()}"
        found.append((Figure(key, ("sets", metric), title), _job("dumbbell", spec, out, key, formats)))
    return found


def analysis_jobs(views, level: float, out: str, formats) -> list[tuple[Figure, dict]]:
    found = []
    for i, view in enumerate(views):
        spec = (forest_spec(view, level) if view.figure == "forest" else
                agreement_spec(view) if view.figure == "dumbbell" else None)
        if spec is None:
            continue
        key = f"analysis_{i + 1}_{os.path.splitext(os.path.basename(view.path))[0]}"
        found.append((Figure(key, ("analysis", view.path), spec["title"]),
                      _job(view.figure, spec, out, key, formats)))
    return found


def _models_in(rows: list[dict]) -> list[str]:
    return [names.display(m) for m in model_order([r for r in rows if r.get("model")])]


def forest_spec(view, level: float) -> dict | None:
    rows = [r for r in view.summary if isinstance(r.get("difference"), (int, float))]
    if not rows:
        return None
    pairs = list(dict.fromkeys(f"{r.get('variant')} − {r.get('reference')}" for r in rows))
    panel = lambda r: f"{names.metric(r.get('metric'))}, {r.get('mode')}"  # noqa: E731
    nan = float("nan")
    return {"rows": [{"label": names.display(r["model"]), "panel": panel(r), "series": f"{r.get('variant')} − {r.get('reference')}",
                      "estimate": r["difference"], "low": r.get("ci_low") if r.get("ci_low") is not None else nan,
                      "high": r.get("ci_high") if r.get("ci_high") is not None else nan,
                      "significant": bool(r.get("significant"))} for r in rows],
            "labels": _models_in(rows), "panels": list(dict.fromkeys(panel(r) for r in rows)),
            "series": pairs if len(pairs) > 1 else [], "xlabel": "difference (pp)",
            "title": f"{dict(SECTIONS).get(view.section, view.section)}: difference (pp), paired "
                     f"{_pct_level(level)} CI" + (f", {pairs[0]}" if len(pairs) == 1 else ""),
            "significance": f"significant (Holm p < {1 - level:g} and CI excludes 0)"}


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


def plan(data, out: str, formats=FORMATS) -> list[tuple[Figure, dict]]:
    """Every figure of the report, heatmaps first (the longest to draw)."""
    level, jobs = data.settings.level, []
    for rset in data.sets:
        prefix = "" if len(data.sets) == 1 else f"{rset.slug}_"
        jobs += strata_jobs(rset, prefix, out, formats)
    for rset in data.sets:
        prefix = "" if len(data.sets) == 1 else f"{rset.slug}_"
        jobs += accuracy_jobs(rset, prefix, level, out, formats) + gain_jobs(rset, prefix, level, out, formats)
    return jobs + sets_jobs(data, out, formats) + analysis_jobs(data.analysis_views, level, out, formats)


def submit(pool, planned: list[tuple[Figure, dict]]) -> list[tuple[Figure, object]]:
    """Start drawing every planned figure on ``pool``."""
    return [(fig, pool.submit(plots.draw, job)) for fig, job in planned]


def collect(submitted: list[tuple[Figure, object]]) -> list[Figure]:
    """Wait for the figures; each gets its written files (format -> path)."""
    done = []
    for fig, handle in submitted:
        fig.files = {os.path.splitext(p)[1][1:]: p for p in handle.result()}
        done.append(fig)
    return done
