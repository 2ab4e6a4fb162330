"""``smmile export matrix``: one models x items table per metric (rows = results, columns = problem ids, cells
1/0/missing) as CSV and Parquet, and a sidecar JSON naming, per row, the scorer, the judge, the dataset and the
failure rule. A row's mean is the accuracy ``smmile stats`` reports for that result (row-weighted)."""

from __future__ import annotations

import importlib.util
import logging
import os

import pandas as pd

from smmile import fsguard
from smmile.errors import UserError
from smmile.export.provenance import FAILURE_RULES, FAILURES, dataset_of, judge_label, scored
from smmile.scoring import metrics
from smmile.scoring.scores import Record, load_records

log = logging.getLogger(__name__)
OWNER = "smmile export matrix"


def _fmt(record: Record) -> str:
    return record.result.fmt if record.result is not None else metrics.get_metric(record.metric).formats[0]


def matrix(records: list[Record], failures: str = FAILURES) -> pd.DataFrame:
    """``model``, ``mode``, ``format``, then one column per problem id (first-seen order) for ``records`` of one
    metric."""
    rows = [pd.concat([pd.Series({"model": r.model, "mode": r.mode, "format": _fmt(r)}, dtype=object),
                       scored(r, failures)])
            for r in records]
    return pd.DataFrame(rows).reset_index(drop=True)


def describe(record: Record, failures: str) -> dict:
    """The sidecar's entry for one row."""
    metric = metrics.get_metric(record.metric)
    result = record.result
    entry = {"model": record.model, "mode": record.mode, "source": os.path.basename(record.source),
             "scorer": metric.display, "failure_rule": FAILURE_RULES[failures],
             "dataset": dataset_of(result) if result is not None else {}}
    if metric.source == "judge":
        entry["judge"] = judge_label(result)
    entry["n_items"] = int(record.scores.notna().sum())
    return entry


def export_matrix(results_dir: str, out: str | None = None, *, failures: str = FAILURES, parquet: bool | None = None,
                  force: bool = False) -> list[str]:
    """Write ``matrix_<METRIC>.csv`` (+ ``.parquet``) and ``matrix_<METRIC>.json`` for every metric found in
    ``results_dir`` into ``out`` (default ``<results_dir>/matrix``); returns the paths written. ``parquet``: None
    writes the Parquet copies where pyarrow is installed."""
    if failures not in FAILURE_RULES:
        raise UserError(f"--failures must be one of {', '.join(FAILURE_RULES)}")
    if not os.path.isdir(results_dir):
        raise UserError(f"results directory {results_dir} not found")
    records = load_records(results_dir)
    if not records:
        raise UserError(f"no scorable result files in {results_dir}")
    if parquet is None:
        parquet = importlib.util.find_spec("pyarrow") is not None
        if not parquet:
            log.warning("warning: the Parquet copies are left out: pyarrow is not installed (pip install pyarrow)")
    folder = os.fspath(fsguard.prepare_output_dir(out or os.path.join(results_dir, "matrix"), OWNER, force=force))
    written = []
    with fsguard.OutputLock(folder, f"the matrix folder {folder}"):
        for name in metrics.METRICS:
            chosen = [r for r in records if r.metric == name]
            if not chosen:
                continue
            stem = os.path.join(folder, f"matrix_{name}")
            table = matrix(chosen, failures)
            with fsguard.atomic_path(stem + ".csv") as tmp:
                table.to_csv(tmp, index=False)
            written.append(stem + ".csv")
            if parquet:
                with fsguard.atomic_path(stem + ".parquet") as tmp:
                    table.to_parquet(tmp, index=False)
                written.append(stem + ".parquet")
            sidecar = {"metric": name, "cells": "1 = correct, 0 = wrong, empty = not scored (missing)",
                       "columns": "model, mode, format, then one column per problem_id",
                       "rows": [describe(r, failures) for r in chosen]}
            fsguard.atomic_write_json(stem + ".json", sidecar)
            written.append(stem + ".json")
    return written
