"""Human correctness labels for `smmile agreement` (format: docs/analyses.md).

A CSV with one row per (item, rater): ``problem_id, model, mode, rater, label`` (label 0/1, also
true/false); other columns are ignored. An item is one model's answer to one problem in one mode.
Rows whose rater is the judge name (default ``judge``) are judge labels, not human ones.
"""

from __future__ import annotations

import pandas as pd

from ..errors import UserError
from ..scoring.results import MODES, Record
from .agreement import ITEM

LABEL_COLUMNS = ("problem_id", "model", "mode", "rater", "label")
VALUES = {"0": 0, "1": 1, "false": 0, "true": 1, "0.0": 0, "1.0": 1}


def _parse_label(value: str, line: int, path: str) -> int:
    try:
        return VALUES[value.strip().lower()]
    except KeyError:
        raise UserError(f"{path} line {line}: label {value!r} is not 0/1") from None


def read_labels(path: str) -> pd.DataFrame:
    """The label table with label as int; bad files raise UserError naming the line."""
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise UserError(f"cannot read labels {path}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
    missing = [c for c in LABEL_COLUMNS if c not in frame.columns]
    if missing:
        raise UserError(f"{path}: missing column(s) {', '.join(missing)} (need {', '.join(LABEL_COLUMNS)})")
    frame = frame[list(LABEL_COLUMNS)].apply(lambda col: col.str.strip())
    frame["label"] = [_parse_label(v, i + 2, path) for i, v in enumerate(frame["label"])]
    bad = frame[~frame["mode"].isin(MODES)]
    if len(bad):
        raise UserError(f"{path} line {bad.index[0] + 2}: mode {bad['mode'].iloc[0]!r} is not 0-shot or ICL")
    dup = frame.duplicated(ITEM + ["rater"])
    if dup.any():
        row = frame[dup].iloc[0]
        raise UserError(f"{path} line {frame[dup].index[0] + 2}: rater {row['rater']!r} labels item "
                        f"({row['model']}, {row['mode']}, {row['problem_id']}) twice")
    return frame


def model_aliases(records: list[Record]) -> dict[str, str]:
    """lower-cased name -> the model key the analyses use. Every name of a result's model is
    accepted: its key (``text only``), the raw file token (``llama33textonly``), the scoring name
    (``llama33textonly (baseline)``) and the display name."""
    out = {}
    for r in records:
        names = [r.model]
        if r.result is not None:
            identity = r.result.identity
            names += [r.result.tag, identity.key, identity.scoring_name, identity.display]
        out.update({name.lower(): r.model for name in names if name})
    return out


def canonical_models(frame: pd.DataFrame, aliases: dict[str, str], warn=None) -> pd.DataFrame:
    """Label models renamed to the analyses' keys; with ``warn``, names no result has are reported."""
    unknown = sorted({m for m in frame["model"] if m.lower() not in aliases})
    if warn and unknown:
        warn(f"warning: labels name model(s) no result file has: {', '.join(unknown)}; their items get no "
             "judge label from the results")
    return frame.assign(model=[aliases.get(m.lower(), m) for m in frame["model"]])


def binary_scores(scores: pd.Series, what: str, warn=None) -> pd.Series:
    """The 0/1 scores among ``scores``. A fractional score (the share of a problem's rows judged correct,
    the one rule of ``scoring.metrics``) is no single label: it is left out, and ``warn`` says how many."""
    binary = scores[scores.isin((0.0, 1.0))]
    if warn and len(binary) < len(scores):
        warn(f"warning: {what}: {len(scores) - len(binary)} problem(s) with a fractional score (several rows "
             "per problem) left out of the agreement")
    return binary


def judge_from_results(records: list[Record], warn=None) -> pd.DataFrame:
    """Judge labels from `_evaluationllm.json` files (problem accuracy 100 -> 1, 0 -> 0)."""
    rows = [{"model": r.model, "mode": r.mode, "problem_id": str(pid), "label": int(v)}
            for r in records if r.metric == "LLM"
            for pid, v in binary_scores(r.scores, f"{r.source} (judge)", warn).items()]
    return pd.DataFrame(rows, columns=ITEM + ["label"])
