"""The gold option's probability (``PGOLD``) in the ICL diagnostics: a run made with ``smmile run --score-options``
journals each MCQA option's probability (``models/hf/options.py``), and its MCQA record gets a ``PGOLD`` record
beside it, compared like any metric (paired by problem, one row per problem): per problem the probability the model
gave the gold option, 0 for a failed problem (as its MCQA score). A continuous score moves where 0/1 accuracy does
not, so a paired difference of a few points is resolved on fewer problems."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd

METRIC = "PGOLD"
NOTE = (f"{METRIC}: the mean probability (%) the model gave the gold option (runs with --score-options); "
        "A − B in points of probability")


def _answers(rec: dict, selected: str | None) -> bool:
    """Whether ``rec`` holds option probabilities whose most probable letter is the CSV's answer (when known)."""
    probs = (rec["response"].get("extra") or {}).get("option_probs")
    return isinstance(probs, dict) and bool(probs) and selected in (None, max(probs, key=probs.get))


def gold_probabilities(record, notes: list) -> pd.Series | None:
    """Per problem of an MCQA ``record``, the gold option's journaled probability; None unless its run scored
    options. Only probabilities whose most probable letter is the CSV's answer are read; a problem with several such
    scored configurations journaled (which one made the CSV is unknown) is left out, with a note."""
    result = record.result
    settings = ((result.manifest or {}).get("settings") or {}) if result is not None else {}
    if record.metric != "MCQA" or not settings.get("score_options") or result.journal is None:
        return None
    values, unclear = {}, 0
    frame = record.frame if record.frame is not None and "selected_option" in record.frame else None
    chosen = {} if frame is None else dict(zip(frame["problem_id"].astype(str), frame["selected_option"].astype(str)))
    for pid in record.scores.index:
        found = [r for r in result.journal.get(pid, []) if _answers(r, chosen.get(pid))]
        if record.failures is not None and record.failures.get(pid):
            values[pid] = 0.0
        elif len(found) == 1:
            values[pid] = float(found[0]["response"]["extra"]["option_probs"].get(found[0]["item"]["correct"], 0.0))
        else:
            unclear += 1
    if unclear:
        notes.append(f"{record.source}: {unclear} problem(s) without one journaled option probability are left out "
                     f"of {METRIC}")
    return pd.Series(values, dtype=float, index=pd.Index(list(values), name="problem_id"))


def with_gold_probability(sets: dict, notes: list) -> dict:
    """The result sets with a ``PGOLD`` record beside each MCQA record whose run scored options."""
    out = {}
    for label, found in sets.items():
        extra = [replace(r, metric=METRIC, scores=scores) for r in found.records
                 if (scores := gold_probabilities(r, notes)) is not None and len(scores)]
        out[label] = replace(found, records=found.records + extra) if extra else found
    return out
