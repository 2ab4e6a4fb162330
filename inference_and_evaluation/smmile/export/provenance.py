"""What every export says about one result: its dataset (requested revision, resolved commit, fingerprint),
its judges (as the run record names them; the published outputs name none) and the failure rule."""

from __future__ import annotations

import datetime as dt
import os

import pandas as pd

from smmile.scoring.estimates import EXCLUDED_KINDS
from smmile.scoring.stats_run import RULES, StatsSettings

PAPER_JUDGE = "ollama:llama3.3"  # spec section 5: the judge of the published outputs, recorded nowhere in them
FAILURES = StatsSettings.failures  # smmile stats' default rule for transport failures
FAILURE_RULES = {rule: f"{text}; refused and empty responses are the model's answers, scored 0"
                 for rule, text in RULES.items()}


def scored(record, failures: str = FAILURES) -> pd.Series:
    """The record's per-problem scores as ``smmile stats`` counts them under ``failures``: with ``exclude`` its
    transport failures (``estimates.EXCLUDED_KINDS``) are missing."""
    scores = record.scores.astype(float)
    if failures == "exclude" and record.failures is not None:
        kinds = scores.index.map(lambda pid: record.failures.get(pid, ""))
        scores = scores.mask(pd.Series(kinds, index=scores.index).isin(EXCLUDED_KINDS))
    return scores


def created_at(result) -> dt.datetime:
    """When the run was written (its manifest), else the CSV's modification time, in UTC."""
    try:
        when = dt.datetime.strptime(str((result.manifest or {}).get("created")), "%Y-%m-%dT%H:%M:%S%z")
    except ValueError:
        when = dt.datetime.fromtimestamp(os.path.getmtime(result.csv), dt.timezone.utc)
    return when.astimezone(dt.timezone.utc)


def dataset_of(result) -> dict:
    """The manifest's dataset section (id, requested revision, resolved commit, fingerprint); {} without one."""
    dataset = (result.manifest or {}).get("dataset") if result is not None else None
    return {k: v for k, v in dataset.items() if k != "problems"} if isinstance(dataset, dict) else {}


def judges_of(result) -> tuple[list[str], bool]:
    """(the judges, ``BACKEND:MODEL`` each, a jury's members; whether the run recorded them): unrecorded, the
    published outputs' judge."""
    named = result.judges() if result is not None else []
    return (named, True) if named else ([PAPER_JUDGE], False)


def judge_label(result) -> str:
    named, recorded = judges_of(result)
    return ", ".join(named) + ("" if recorded else " (unrecorded: the paper's judge, spec section 5)")
