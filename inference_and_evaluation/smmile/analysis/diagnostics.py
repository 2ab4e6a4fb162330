"""The ICL diagnostics ``smmile analyze shots|flip|images|diagnostics`` (docs/analyses.md §5): what in the examples
does a model use? Each comparison is one record against another (``variants.compare``, A − B in pp) of sets
labelled as their datasets: ``original``, ``k-shot-<k>``, ``flip-answers[-<fraction>]``, ``no-example-images``,
``no-query-image``."""

from __future__ import annotations

import re

from .. import plotting
from ..errors import UserError
from ..identity import display
from ..scoring.estimates import apply_holm, estimate
from .results import ORIGINAL, ResultSet
from .variants import Report, compare

KINDS = ("shots", "flip", "images", "diagnostics")
ZERO, ICL = "0-shot", "ICL"
KSHOT = re.compile(r"^k-shot-(\d+)$")
FLIP = re.compile(r"^flip-answers(-[0-9.]+)?$")
NO_EXAMPLE_IMAGES, NO_QUERY_IMAGE = "no-example-images", "no-query-image"
QUANTITIES = (  # diagnostics: (name, its column, A, B, what is needed to compute it)
    ("gain from examples", "gain", (ORIGINAL, ICL), (ORIGINAL, ZERO), "the original 0-shot and ICL runs"),
    ("gain with flipped answers", "flipped", ("flip-answers", ICL), (ORIGINAL, ZERO),
     "an ICL run on `smmile data variant flip-answers` (flip-answers=PATH) and the original 0-shot run"),
    ("gain without example images", "no_example_images", (NO_EXAMPLE_IMAGES, ICL), (ORIGINAL, ZERO),
     "an ICL run on `smmile data variant no-example-images` and the original 0-shot run"),
    ("query image (full − blind), ICL", "query_image_icl", (ORIGINAL, ICL), (NO_QUERY_IMAGE, ICL),
     "an ICL run on `smmile data variant no-query-image` and the original ICL run"),
    ("query image (full − blind), 0-shot", "query_image_0shot", (ORIGINAL, ZERO), (NO_QUERY_IMAGE, ZERO),
     "a 0-shot run on `smmile data variant no-query-image` and the original 0-shot run"),
)
Side = tuple[str, str]  # (set label, mode)


def k_of(label: str) -> int | None:
    found = KSHOT.match(label)
    return int(found.group(1)) if found else None


def plan(kind: str, labels: list[str]) -> list[tuple[str, Side, Side]]:
    """(comparison name, A, B) of ``kind`` for the given set labels; refuses a run without what it needs."""
    if ORIGINAL not in labels:
        raise UserError("no result set labelled 'original' (label it as original=PATH)")
    if kind == "shots":
        ks = sorted((k_of(x), x) for x in labels if k_of(x) is not None)
        if not ks:
            raise UserError("the shots analysis needs k-shot-<k> result sets (runs on "
                            "`smmile data variant k-shot --k N`)")
        return [(f"k={k} − 0-shot", (x, ICL), (ORIGINAL, ZERO)) for k, x in ks] + \
               [("all examples − 0-shot", (ORIGINAL, ICL), (ORIGINAL, ZERO))] + \
               [(f"k={k} − all examples", (x, ICL), (ORIGINAL, ICL)) for k, x in ks]
    if kind == "flip":
        flips = [x for x in labels if FLIP.match(x)]
        if not flips:
            raise UserError("the flip analysis needs a flip-answers result set (`smmile data variant flip-answers`)")
        return [(f"{x} − {ref} ({mode})", (x, ICL), (ORIGINAL, mode)) for x in flips
                for ref, mode in (("original", ICL), ("0-shot", ZERO))]
    if kind == "images":
        found = [x for x in (NO_EXAMPLE_IMAGES, NO_QUERY_IMAGE) if x in labels]
        if not found:
            raise UserError("the images analysis needs a no-example-images and/or no-query-image result set")
        modes = {NO_EXAMPLE_IMAGES: (ICL,), NO_QUERY_IMAGE: (ZERO, ICL)}
        return [(f"{x} − original ({m})", (x, m), (ORIGINAL, m)) for x in found for m in modes[x]]
    return [(name, a, b) for name, _, a, b, _ in QUANTITIES if a[0] in labels and b[0] in labels]


def missing_quantities(labels: list[str]) -> list[str]:
    return [f"{name}: needs {need}" for name, _, a, b, need in QUANTITIES if a[0] not in labels or b[0] not in labels]


def _models(sets: dict[str, ResultSet]) -> list[tuple[str, str]]:
    """(model, metric) of the original, in its order."""
    return list(dict.fromkeys((m, metric) for m, metric, _ in sets[ORIGINAL].index()))


def _record(sets: dict[str, ResultSet], side: Side, model: str, metric: str):
    label, mode = side
    return sets[label].index().get((model, metric, mode)) if label in sets else None


def analyse(kind: str, sets: dict[str, ResultSet], settings: dict, notes: list) -> Report:
    """Every comparison of ``kind`` per (model, metric) of the original; pairs that cannot be formed are noted."""
    if kind == "diagnostics":  # the flip quantity reads the full flip (fraction 1) only
        sets = {label: s for label, s in sets.items() if not FLIP.match(label) or label == "flip-answers"}
    comparisons, report, s = plan(kind, list(sets)), Report(kind), settings
    for model, metric in _models(sets):
        for name, a, b in comparisons:
            rec_a, rec_b = _record(sets, a, model, metric), _record(sets, b, model, metric)
            if rec_a is None or rec_b is None:
                side = " ".join(a if rec_a is None else b)
                notes.append(f"{model} {metric}: no {side} result; the comparisons with it are skipped")
                continue
            row, table = compare(rec_b, rec_a, False, notes=notes, **s)
            report.summary.append({"analysis": kind, "comparison": name, "variant": " ".join(a),
                                   "reference": " ".join(b), **row})
            report.flips.append(table.assign(model=model, metric=metric, comparison=name))
    notes[:] = list(dict.fromkeys(notes))
    if not report.summary:
        raise UserError(f"the {kind} analysis found no model scored in both sets of any comparison")
    apply_holm(report.summary, s["level"])
    if kind == "shots":
        report.extra["curve"] = curve(sets, s)
    if kind == "diagnostics":
        report.extra["diagnostics"] = diagnostics_table(report.summary)
    return report


def curve(sets: dict[str, ResultSet], s: dict) -> list[dict]:
    """Per (model, metric): accuracy with its interval at k = 0 (original 0-shot), each k, and "all" (original ICL)."""
    points = [("0", 0, (ORIGINAL, ZERO))] + sorted(((str(k_of(x)), k_of(x), (x, ICL)) for x in sets if k_of(x)),
                                                   key=lambda p: p[1]) + [("all", None, (ORIGINAL, ICL))]
    rows = []
    for model, metric in _models(sets):
        for point, k, side in points:
            record = _record(sets, side, model, metric)
            if record is None:
                continue
            e = estimate(record, s["n_boot"], s["seed"], "auto", s["level"], s["weight"], s["failures"])
            rows.append({"model": model, "metric": metric, "point": point, "k": k, "set": side[0], "mode": side[1],
                         **{key: e[key] for key in ("accuracy", "ci_low", "ci_high", "ci_method", "n_rows")}})
    return rows


def diagnostics_table(summary: list[dict]) -> list[dict]:
    """One row per (model, metric): each quantity with its interval; the gain left as a share of the gain."""
    table: dict[tuple, dict] = {}
    keys = {name: key for name, key, *_ in QUANTITIES}
    for r in summary:
        row = table.setdefault((r["model"], r["metric"]), {"model": r["model"], "metric": r["metric"]})
        key = keys[r["comparison"]]
        row.update({key: r["difference"], f"{key}_ci_low": r["ci_low"], f"{key}_ci_high": r["ci_high"]})
    for row in table.values():
        row["not_computed"] = ", ".join(name for name, key in keys.items() if key not in row)
        for key in ("flipped", "no_example_images"):
            gain = row.get("gain")
            row[f"{key}_share"] = row[key] / gain * 100 if key in row and gain else None
    return list(table.values())


def draw_curve(rows: list[dict], out, level: float) -> list:
    """``shots_curve.png``: the curve table, one line per model and metric ("all" one step past the largest k)."""
    plt = plotting.pyplot()
    ks = sorted({r["k"] for r in rows if r["k"] is not None})
    x_all = (max(ks) + 1) if ks else 1
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for i, key in enumerate(dict.fromkeys((r["model"], r["metric"]) for r in rows)):
        mine = [r for r in rows if (r["model"], r["metric"]) == key]
        xs = [x_all if r["k"] is None else r["k"] for r in mine]
        ys = [r["accuracy"] for r in mine]
        err = [[y - r["ci_low"] for y, r in zip(ys, mine)], [r["ci_high"] - y for y, r in zip(ys, mine)]]
        ax.errorbar(xs, ys, yerr=err, marker=plotting.SERIES_MARKERS[i % len(plotting.SERIES_MARKERS)], capsize=3,
                    label=f"{display(key[0])} ({key[1]})")
    ax.set_xticks(ks + [x_all], [str(k) for k in ks] + ["all"])
    ax.set_xlabel("ICL examples kept (k; 0 = the 0-shot run, all = the ICL run)")
    ax.set_ylabel(f"accuracy % ({level * 100:g}% interval)")
    ax.set_title("Shot curve: accuracy against the number of examples")
    ax.legend(fontsize="small")
    return plotting.save(fig, str(out), "shots_curve", formats=("png",))
