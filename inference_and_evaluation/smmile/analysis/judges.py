"""`smmile agreement --judges`: how the judges of a jury agree with each other and with exact match.

Each judge's verdict per problem is read from ``<stem>_judgements.jsonl`` (a jury's rows keep every judge's
verdict); a verdict that did not parse, or a failed request, is no label. Per mode and format and over all:
pairwise Cohen's kappa and percent agreement, Fleiss' kappa over the items with at least two verdicts, and each
judge (and the jury) against exact match, with cluster-bootstrap intervals (``estimates.clusters_for``).
"""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from .. import plotting
from ..scoring import kappa
from ..scoring.estimates import clusters_for
from ..scoring.naming import judgements_path
from .agreement import binary_scores

JURY = "jury"
CELL = ["model", "mode", "format", "problem_id"]


def verdicts(path) -> dict[str, dict[str, float]]:
    """judge label -> problem_id -> 0/1 (NaN: no parseable verdict), a problem's first row; the jury's own verdict
    is under ``jury``. Empty when the file is missing or unreadable."""
    out: dict[str, dict[str, float]] = {}
    try:
        with open(path, encoding="utf-8") as handle:
            lines = [json.loads(line) for line in handle if line.strip()]
    except (OSError, ValueError):
        return out
    for rec in (r for r in lines if isinstance(r, dict)):
        own = rec.get("value") if rec.get("status") == "ok" else None
        jury = rec.get("jury")
        members = jury + [{"judge": JURY, "value": own}] if isinstance(jury, list) else [
            {"judge": f"{rec.get('backend')}:{rec.get('model')}", "value": own}]
        pid = str(rec.get("problem_id"))
        for m in members:
            value = m.get("value")
            out.setdefault(str(m.get("judge")), {}).setdefault(pid, float(value) if value in (0, 1) else math.nan)
    return out


def judge_frame(records: list, warn=None) -> pd.DataFrame:
    """One row per judged cell: model, mode, format, problem_id, em (0/1 or NaN) and one column per judge."""
    em = {r.source: binary_scores(r.scores, f"{r.source} (exact match)", warn) for r in records
          if r.metric == "EM"}
    frames = []
    for r in (r for r in records if r.metric == "LLM" and r.result is not None):
        found = verdicts(judgements_path(r.result.csv))
        if not found:
            continue
        frame = pd.DataFrame(found)
        frame.index = frame.index.astype(str)
        frame = frame.reindex([str(p) for p in r.scores.index]).dropna(how="all")
        exact = em.get(r.source)
        frame.insert(0, "em", exact.reindex(frame.index).to_numpy(dtype=float) if exact is not None else math.nan)
        frames.append(frame.rename_axis("problem_id").reset_index().assign(
            model=r.model, mode=r.mode, format=r.result.fmt))
    if not frames:
        return pd.DataFrame(columns=CELL + ["em"])
    table = pd.concat(frames, ignore_index=True)
    judges = [c for c in table.columns if c not in CELL + ["em"]]
    return table[CELL + ["em"] + judges]


def scopes(table: pd.DataFrame):
    """(scope, rows): over all, then per (mode, format)."""
    yield {"mode": "*", "format": "*"}, table
    for (mode, fmt), g in table.groupby(["mode", "format"], sort=False):
        yield {"mode": mode, "format": fmt}, g


def judge_rows(table: pd.DataFrame, n_boot: int, seed: int, level: float, cluster: str = "auto") -> list[dict]:
    judges = [c for c in table.columns if c not in CELL + ["em", JURY]]
    raters = judges + ([JURY] if JURY in table.columns else [])
    rows = []
    for scope, g in scopes(table):
        def pair(kind: str, a: str, b: str, x: pd.Series, y: pd.Series) -> None:
            both = x.notna() & y.notna()
            if both.any():
                clusters = clusters_for(g.loc[both, "problem_id"], cluster)
                rows.append({"comparison": kind, **scope, "rater_a": a, "rater_b": b,
                             **kappa.pair_agreement(x[both], y[both], clusters, n_boot, seed, level)})

        for a, b in itertools.combinations(judges, 2):
            pair("judge pair", a, b, g[a], g[b])
        if len(judges) >= 2:
            values = g[judges].to_numpy(dtype=float)
            counts = np.column_stack([(values == 0).sum(axis=1), (values == 1).sum(axis=1)])
            rows.append({"comparison": "Fleiss", **scope, "rater_a": f"{len(judges)} judges", "rater_b": "",
                         **kappa.fleiss_agreement(counts, clusters_for(g["problem_id"], cluster), n_boot, seed, level)})
        for a in raters:
            pair("vs exact match", a, "exact match", g[a], g["em"])
    return rows


def draw(rows: list[dict], out, warn) -> list[Path]:
    """A forest of the kappas with their intervals (a panel per mode and format); a warning when it cannot be
    drawn."""
    rows = [r for r in rows if not math.isnan(r.get("cohen_kappa", r.get("fleiss_kappa", math.nan)))]
    if not rows:
        return []
    labels = [r["rater_a"] if r["comparison"] == "Fleiss" else f"{r['rater_a']} vs {r['rater_b']}" for r in rows]
    panels = ["all" if r["mode"] == "*" else f"{r['mode']}, {r['format']}" for r in rows]
    spec = {"rows": [{"label": label, "panel": panel, "series": None,
                      "estimate": r.get("cohen_kappa", r.get("fleiss_kappa")), "low": r["kappa_low"],
                      "high": r["kappa_high"], "significant": r["kappa_low"] > 0}
                     for r, label, panel in zip(rows, labels, panels)],
            "labels": list(dict.fromkeys(labels)), "panels": list(dict.fromkeys(panels)),
            "title": "Judge agreement: Cohen's κ (pairs, vs exact match) and Fleiss' κ",
            "xlabel": "κ", "significance": "interval above 0"}
    job = {"kind": "forest", "spec": spec, "out": str(out), "name": "agreement_judges", "formats": ("png", "svg")}
    try:
        return [Path(p) for p in plotting.draw(job)]
    except ImportError as exc:
        warn(f"warning: the judges' figure was not drawn ({exc})")
        return []
