"""Writing analysis tables: one CSV per table and one JSON holding them all (NaN -> null)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from .. import fsguard


def json_safe(value):
    if isinstance(value, (np.integer, np.floating, np.bool_)):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def records(table) -> list[dict]:
    """A DataFrame or a list of dicts as JSON-safe row dicts."""
    rows = table.to_dict("records") if isinstance(table, pd.DataFrame) else table
    return [json_safe(row) for row in rows]


def write_tables(out: Path, stem: str, tables: dict, meta: dict) -> list[Path]:
    """`<out>/<stem>_<name>.csv` per table and `<out>/<stem>.json` = {**meta, name: rows...}."""
    out.mkdir(parents=True, exist_ok=True)
    written, payload = [], dict(json_safe(meta))
    for name, table in tables.items():
        frame = table if isinstance(table, pd.DataFrame) else pd.DataFrame(table)
        path = out / f"{stem}_{name}.csv"
        with fsguard.atomic_path(path) as tmp:
            frame.to_csv(tmp, index=False)
        written.append(path)
        payload[name] = records(frame)
    path = fsguard.atomic_write_text(out / f"{stem}.json", json.dumps(payload, indent=2, allow_nan=False) + "\n")
    return [path] + written


def fmt(value, spec: str = ".2f") -> str:
    return "--" if value is None or (isinstance(value, float) and math.isnan(value)) else format(value, spec)
