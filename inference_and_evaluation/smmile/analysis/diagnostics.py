"""The ICL diagnostics ``smmile analyze shots|flip|images|diagnostics|policies`` (docs/analyses.md §5): what in the
examples does a model use, and which examples should it be shown? Each comparison is one record against another
(``variants.compare``, A − B in pp) of sets labelled by the variant their runs recorded: ``original``,
``k-shot-<k>[-draw<d>]``, the label conditions (``flip-answers``, ``random-labels``, ``unrelated-labels``,
``no-answers``, each ``[-<fraction>]``), the input conditions and the demonstration policies (``demos-<policy>``).

Problems a variant marks ``short`` (fewer examples than it asks for) are left out of its comparisons. Holm's
correction runs within one family per research question, model and metric (``holm_family``), so adding a model
leaves the others' adjusted p-values as they were."""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np

from ..data.label_variants import LABEL_VARIANTS
from ..errors import UserError
from . import option_probs, shot_curve
from .result_sets import ORIGINAL, ResultSet
from .variants import Report, adjust, compare

ANALYSES = ("shots", "flip", "images", "diagnostics", "policies")
QUESTIONS = {"shots": "how many examples?", "flip": "do the examples' answers matter?",
             "images": "do the images matter?", "diagnostics": "what in the examples is used?",
             "policies": "which examples?"}
FAMILY = "family: research question × model × metric (holm_family)"
ZERO, ICL = "0-shot", "ICL"
KSHOT = re.compile(r"^k-shot-(\d+)(?:-draw\d+)?$")
LABELS = re.compile(rf"^({'|'.join(LABEL_VARIANTS)})(?:-([0-9.]+))?$")
EXAMPLE_IMAGES = re.compile(r"^(no-example-images(-blank|-noise)?|swap-example-images)$")
QUERY_IMAGE = re.compile(r"^(no-query-image(-blank|-noise)?|other-query-image)$")
DEMOS, EXPERTS = re.compile(r"^demos-"), "demos-experts"
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


def _need_original(labels: list[str]) -> None:
    if ORIGINAL not in labels:
        raise UserError("no result set labelled 'original' (label it as original=PATH)")


def plan(kind: str, labels: list[str]) -> list[tuple[str, Side, Side]]:
    """(comparison name, A, B) of ``kind`` for the given set labels; refuses a run without what it needs."""
    if kind == "policies":
        policies = [x for x in labels if DEMOS.match(x) and x != EXPERTS]
        if not policies:
            raise UserError("the policies analysis needs demos-<policy> result sets (`smmile data variant demos`)")
        reference = EXPERTS if EXPERTS in labels else ORIGINAL
        if reference == ORIGINAL:
            _need_original(labels)
        return [(f"{x} − experts'", (x, ICL), (reference, ICL)) for x in policies]
    _need_original(labels)
    if kind == "shots":
        ks = sorted((k_of(x), x) for x in labels if k_of(x) is not None)
        if not ks:
            raise UserError("the shots analysis needs k-shot-<k> result sets (runs on "
                            "`smmile data variant k-shot --k N`)")
        return [(f"{x} − 0-shot", (x, ICL), (ORIGINAL, ZERO)) for _, x in ks] + \
               [("all examples − 0-shot", (ORIGINAL, ICL), (ORIGINAL, ZERO))] + \
               [(f"{x} − all examples", (x, ICL), (ORIGINAL, ICL)) for _, x in ks]
    if kind == "flip":
        flips = [x for x in labels if LABELS.match(x)]
        if not flips:
            raise UserError(f"the flip analysis needs a label-condition result set ({', '.join(LABEL_VARIANTS)})")
        return [(f"{x} − {ref} ({mode})", (x, ICL), (ORIGINAL, mode)) for x in flips
                for ref, mode in (("original", ICL), ("0-shot", ZERO))]
    if kind == "images":
        found = [x for x in labels if EXAMPLE_IMAGES.match(x) or QUERY_IMAGE.match(x)]
        if not found:
            raise UserError("the images analysis needs an input-condition result set (no-example-images, "
                            "no-query-image, swap-example-images, other-query-image)")
        return [(f"{x} − original ({m})", (x, m), (ORIGINAL, m)) for x in found
                for m in ((ZERO, ICL) if QUERY_IMAGE.match(x) else (ICL,))]
    return [(name, a, b) for name, _, a, b, _ in QUANTITIES if a[0] in labels and b[0] in labels]


def missing_quantities(labels: list[str]) -> list[str]:
    return [f"{name}: needs {need}" for name, _, a, b, need in QUANTITIES if a[0] not in labels or b[0] not in labels]


def recorded(result_set: ResultSet) -> dict:
    """The variant its runs recorded (``dataset.variant`` of the first manifest that has one), or {}."""
    for r in result_set.records:
        variant = ((r.result.manifest or {}).get("dataset") or {}).get("variant") if r.result else None
        if isinstance(variant, dict):
            return variant
    return {}


def _counts(sets: dict[str, ResultSet], label: str) -> dict:
    counts = recorded(sets[label]).get("counts") if label in sets else None
    return counts if isinstance(counts, dict) else {}


def _models(sets: dict[str, ResultSet]) -> list[tuple[str, str]]:
    """(model, metric) of every set, the original's (or the experts') first."""
    first = sorted(sets, key=lambda label: label not in (ORIGINAL, EXPERTS))
    return list(dict.fromkeys((m, metric) for label in first for m, metric, _ in sets[label].index()))


def _record(sets: dict[str, ResultSet], side: Side, model: str, metric: str, drop: set = frozenset()):
    label, mode = side
    record = sets[label].index().get((model, metric, mode)) if label in sets else None
    return replace(record, scores=record.scores[~record.scores.index.isin(drop)]) if record and drop else record


def _compare_all(kind, sets, comparisons, s, notes, subsets=None) -> Report:
    """Every comparison per (model, metric); ``subsets(a_label)``: {subset name: problem ids} to split by."""
    report = Report(kind)
    for model, metric in _models(sets):
        for name, a, b in comparisons:
            short = {str(i) for side in (a, b) for i in _counts(sets, side[0]).get("short", [])}
            rec_a, rec_b = _record(sets, a, model, metric, short), _record(sets, b, model, metric, short)
            if rec_a is None or rec_b is None:
                notes.append(f"{model} {metric}: no {' '.join(a if rec_a is None else b)} result; the comparisons "
                             "with it are skipped")
                continue
            if short and not subsets:
                notes.append(f"{name}: {len(short)} short problem(s) left out (fewer examples than the variant asks)")
            for subset, ids in (subsets(a[0]) if subsets else {None: None}).items():
                keep = rec_a if ids is None else \
                    _record(sets, a, model, metric, short | set(rec_a.scores.index.difference(list(ids))))
                row, table = compare(rec_b, keep, False, notes=notes if subset is None else [], **s)
                family = f"{QUESTIONS[kind]} {model} {metric}" + (f" [{subset}]" if subset else "")
                report.summary.append({"analysis": kind, "comparison": name, "variant": " ".join(a),
                                       "reference": " ".join(b), **({"subset": subset} if subset else {}),
                                       "holm_family": family, **row})
                report.flips.append(table.assign(model=model, metric=metric, comparison=name,
                                                 **({"subset": subset} if subset else {})))
    return report


def analyse(kind: str, sets: dict[str, ResultSet], settings: dict, notes: list) -> Report:
    """Every comparison of ``kind`` per (model, metric); pairs that cannot be formed, sets not used and short
    problems left out are noted; runs that scored the MCQA options add the gold option's probability
    (``option_probs``)."""
    given = sets = option_probs.with_gold_probability(sets, notes)
    if kind == "diagnostics":  # the flip quantity reads the full flip (fraction 1) only
        sets = {label: s for label, s in sets.items() if not LABELS.match(label) or label == "flip-answers"}
    comparisons, s = plan(kind, list(sets)), settings
    used = {side[0] for _, a, b in comparisons for side in (a, b)}
    notes += [f"result set {label!r} ({given[label].path}) is not used by the {kind} analysis" for label in given
              if label not in used]
    report = _compare_all(kind, sets, comparisons, s, notes)
    notes[:] = list(dict.fromkeys(notes))
    if not report.summary:
        raise UserError(f"the {kind} analysis found no model scored in both sets of any comparison")
    adjust(report.summary, report.flips, s, family=lambda row: row["holm_family"])
    if kind == "shots":
        report.extra["curve"] = curve(sets, s)
    if kind == "diagnostics":
        report.extra["diagnostics"] = diagnostics_table(report, s)
    for split, name in (("by_format", "by_format"), ("gold_among_examples", "by_gold")):
        if kind == "diagnostics" or (name == "by_gold" and kind != "flip"):
            continue
        extra = _compare_all(kind, sets, comparisons, s, notes, lambda label: _subsets(sets, label, split))
        adjust(extra.summary, extra.flips, s, family=lambda row: row["holm_family"])
        report.extra[name] = extra.summary
    if kind == "flip":
        report.extra["unchanged"] = [{"set": label, "not_changed": _counts(sets, label).get("not_changed"),
                                      "gold_among_examples": len(_counts(sets, label).get("gold_among_examples", []))}
                                     for label in sets if LABELS.match(label)]
        report.extra["fraction_curve"] = fraction_curve(report.summary)
    return report


def _subsets(sets: dict[str, ResultSet], label: str, split: str) -> dict:
    """Problem ids per subset of ``label``'s recorded counts: gold among the examples or not; per answer format."""
    counts = _counts(sets, label)
    if split == "by_format":
        return {f"format: {fmt}": {str(i) for i in ids} for fmt, ids in (counts.get("by_format") or {}).items()}
    if "gold_among_examples" not in counts:
        return {}
    among = {str(i) for i in counts["gold_among_examples"]}
    every = {str(i) for r in sets[label].records for i in r.scores.index}
    return {"gold among the examples": among, "gold not among the examples": every - among}


def fraction_curve(summary: list[dict]) -> list[dict]:
    """Per label condition, model and metric: accuracy against the share of examples changed (0 = original ICL)."""
    rows = []
    for r in summary:
        found = LABELS.match(r["variant"].split(" ")[0])
        if not found or not r["reference"].endswith(ICL) or r["reference"].split(" ")[0] != ORIGINAL:
            continue
        base = {"condition": found.group(1), "model": r["model"], "metric": r["metric"]}
        rows.append({**base, "fraction": 0.0, "accuracy": r["accuracy_reference"], "n_pairs": r["n_pairs"]})
        rows.append({**base, "fraction": float(found.group(2) or 1), "accuracy": r["accuracy_variant"],
                     "n_pairs": r["n_pairs"]})
    return [dict(t) for t in dict.fromkeys(tuple(sorted(row.items())) for row in rows)]


def curve(sets: dict[str, ResultSet], s: dict) -> list[dict]:
    """``shot_curve.curve`` per (model, metric) on the problems no k-shot set marks short, and its trend test."""
    labels = [x for x in sets if k_of(x) is not None]
    short = {str(i) for x in labels for i in _counts(sets, x).get("short", [])}
    rows = []
    for model, metric in _models(sets):
        points: dict = {}
        sides = [(0, (ORIGINAL, ZERO))] + sorted((k_of(x), (x, ICL)) for x in labels) + [(None, (ORIGINAL, ICL))]
        for k, side in sides:
            record = _record(sets, side, model, metric, short)
            if record is not None:
                points.setdefault(k, (side[0], []))[1].append(record)
        if not points:
            continue
        keep = set.intersection(*(set(r.scores.index) for _, records in points.values() for r in records))
        table, by_k = shot_curve.curve(points, keep, s)
        trend = shot_curve.trend(by_k, s["level"])
        rows += [{"model": model, "metric": metric, **row, "mode": ZERO if row["k"] == 0 else ICL,
                  "short_left_out": len(short), **trend} for row in table]
    return rows


def _share(x: np.ndarray, gain: np.ndarray, s: dict) -> tuple:
    """mean(x) / mean(gain) * 100 with a percentile bootstrap interval over problems; None where the gain is not
    positive (a share of a loss, or of nothing, is not defined)."""
    if len(gain) < 2 or gain.mean() <= 0:
        return None, None, None
    rng = np.random.default_rng(s["seed"])
    idx = rng.integers(0, len(gain), (s["n_boot"], len(gain)))
    g, v = gain[idx].mean(axis=1), x[idx].mean(axis=1)
    boots = np.where(g > 0, v / np.where(g > 0, g, 1), np.nan) * 100
    alpha = (1 - s["level"]) / 2
    low, high = np.nanquantile(boots, [alpha, 1 - alpha]) if np.isfinite(boots).any() else (None, None)
    return float(x.mean() / gain.mean() * 100), low, high


def diagnostics_table(report: Report, s: dict) -> list[dict]:
    """One row per (model, metric): each quantity with its interval; the gain left as a share of the gain (with a
    bootstrap interval; none where the gain from examples is not positive)."""
    table: dict[tuple, dict] = {}
    keys = {name: key for name, key, *_ in QUANTITIES}
    frames = {(f["model"].iat[0], f["metric"].iat[0], f["comparison"].iat[0]): f for f in report.flips if len(f)}
    for r in report.summary:
        row = table.setdefault((r["model"], r["metric"]), {"model": r["model"], "metric": r["metric"]})
        key = keys[r["comparison"]]
        row.update({key: r["difference"], f"{key}_ci_low": r["ci_low"], f"{key}_ci_high": r["ci_high"]})
    for (model, metric), row in table.items():
        row["not_computed"] = ", ".join(name for name, key in keys.items() if key not in row)
        gain = frames.get((model, metric, "gain from examples"))
        for name, key in (("gain with flipped answers", "flipped"), ("gain without example images",
                                                                      "no_example_images")):
            part = frames.get((model, metric, name))
            if gain is None or part is None:
                continue
            both = gain.merge(part, on="problem_id", suffixes=("_g", "_x"))
            share = _share((both["score_variant_x"] - both["score_reference_x"]).to_numpy(float),
                           (both["score_variant_g"] - both["score_reference_g"]).to_numpy(float), s)
            row[f"{key}_share"], row[f"{key}_share_ci_low"], row[f"{key}_share_ci_high"] = share
    return list(table.values())


def draw_curve(rows: list[dict], out, level: float) -> list:
    return shot_curve.draw(rows, out, level)
