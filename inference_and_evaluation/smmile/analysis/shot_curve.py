"""The shot curve of ``smmile analyze shots``: accuracy against the number of examples k on one set of problems (those
with at least the largest k examples: a problem shorter than k is not a k-shot problem), each k the mean over its
seeded draws (``k-shot-<k>[-draw<d>]``), 0 = the 0-shot run and "all" = the ICL run on the same problems; and the
trend test: the mean per-problem least-squares slope of the score on k, by the package's paired score test."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from .. import plotting
from ..identity import display
from ..scoring import statistics
from ..scoring.estimates import estimate

KEYS = ("accuracy", "ci_low", "ci_high", "ci_method", "n_rows")


def _mean_record(records: list, keep: set):
    """One record whose score per problem is the mean over ``records`` (the draws of one k), on ``keep``."""
    scores = pd.concat([r.scores[r.scores.index.isin(keep)] for r in records], axis=1).dropna().mean(axis=1)
    first = records[0]
    return replace(first, scores=scores, gold=None, failures=None if len(records) > 1 else first.failures)


def curve(points: dict, keep: set, s: dict) -> tuple[list[dict], pd.DataFrame]:
    """``points``: k (0 for 0-shot, None for all) -> (label, [records of its draws]); rows of the curve and the
    per-problem mean scores at each k > 0 (columns k)."""
    rows, by_k = [], {}
    for k, (label, records) in points.items():
        record = _mean_record(records, keep)
        e = estimate(record, s["n_boot"], s["seed"], "auto", s["level"], s["weight"], s["failures"])
        rows.append({"point": "all" if k is None else str(k), "k": k, "set": label, "draws": len(records),
                     "n_problems": len(record.scores), **{key: e[key] for key in KEYS}})
        if k:
            by_k[k] = record.scores
    return rows, pd.DataFrame(by_k).dropna()


def trend(by_k: pd.DataFrame, level: float) -> dict:
    """Mean per-problem slope (pp per example) with the paired score test's interval and p-value (H: slope 0)."""
    ks = np.asarray(by_k.columns, dtype=float)
    if len(ks) < 2 or by_k.empty:
        return {"trend_ks": ", ".join(map(str, by_k.columns)), "trend_note": "needs two k or more"}
    centred = ks - ks.mean()
    slopes = by_k.to_numpy(dtype=float) @ centred / float(centred @ centred)
    result = statistics.paired_score(slopes, np.zeros_like(slopes), None, "row", level)
    i = result.interval
    return {"trend_ks": ", ".join(str(int(k)) for k in ks), "trend_problems": len(slopes),
            "trend_slope": i.estimate * 100, "trend_ci_low": i.low * 100, "trend_ci_high": i.high * 100,
            "trend_p_value": result.p_value, "trend_method": f"per-problem slope on k; {result.method}"}


def draw(rows: list[dict], out, level: float) -> list:
    """``shots_curve.png``: accuracy against k (0 = 0-shot); the ICL run with all examples as a dashed line."""
    plt = plotting.pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for i, key in enumerate(dict.fromkeys((r["model"], r["metric"]) for r in rows)):
        mine = sorted((r for r in rows if (r["model"], r["metric"]) == key and r["k"] is not None),
                      key=lambda r: r["k"])
        xs, ys = [r["k"] for r in mine], [r["accuracy"] for r in mine]
        err = [[max(0, y - r["ci_low"]) for y, r in zip(ys, mine)],
               [max(0, r["ci_high"] - y) for y, r in zip(ys, mine)]]
        line = ax.errorbar(xs, ys, yerr=err, marker=plotting.SERIES_MARKERS[i % len(plotting.SERIES_MARKERS)],
                           capsize=3, label=f"{display(key[0])} ({key[1]})")
        full = [r for r in rows if (r["model"], r["metric"]) == key and r["k"] is None]
        if full:
            ax.axhline(full[0]["accuracy"], linestyle="--", color=line.lines[0].get_color(), linewidth=1)
    ks = sorted({r["k"] for r in rows if r["k"] is not None})
    ax.set_xticks(ks, [str(k) for k in ks])
    ax.set_xlabel("ICL examples kept (k; 0 = the 0-shot run; dashed: all examples, same problems)")
    ax.set_ylabel(f"accuracy % ({level * 100:g}% interval)")
    ax.set_title("Shot curve: accuracy against the number of examples")
    ax.legend(fontsize="small")
    return plotting.save(fig, str(out), "shots_curve", formats=("png",))
