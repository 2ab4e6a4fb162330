"""Result sets in, tables out: folders (or files) of result CSVs labelled by the dataset they ran on
(``LABEL=PATH``, or read from the run manifests), and analysis tables as CSVs plus one JSON (NaN -> null)."""

from __future__ import annotations

import json
import logging
import math
from contextlib import contextmanager
from pathlib import Path

import pandas as pd

from .. import fsguard, logs
from ..data.load import DATED_IDS, PLUSPLUS_ID
from ..data.variant_datasets import LABEL, variant_identity
from ..errors import UserError
from ..scoring.scores import Record, ResultSet, records_of
from ..scoring.stats_run import json_safe

ORIGINAL = "original"
log = logging.getLogger(__name__)


def variant_kind(dataset: dict) -> str:
    """The variant a run recorded (``dataset.variant``, at run time), `permute` for SMMILE++ on the hub, else
    `original`; a run from before variants were recorded: its local folder's checked manifest, with a warning."""
    ref = dataset.get("id") or ""
    recorded = dataset.get("variant")
    if recorded is not None:
        kind = recorded.get("kind") if isinstance(recorded, dict) else None
        if not (isinstance(kind, str) and LABEL.match(kind)):
            raise UserError(f"a run manifest records a malformed variant ({str(recorded)[:60]}); label the set "
                            "explicitly as LABEL=PATH")
        return kind
    if dataset.get("kind") == "hub":
        return "permute" if PLUSPLUS_ID in (ref, DATED_IDS.get(ref)) else ORIGINAL
    if "variant" in dataset:  # recorded at run time: no variant
        return ORIGINAL
    legacy = variant_identity(ref) if ref else None
    if legacy:
        log.warning(f"warning: a run on {ref} did not record its variant; read {legacy['kind']!r} from that folder "
                    "now (it may have changed since): rerun it to record the variant")
    return legacy["kind"] if legacy else ORIGINAL


def detect_label(path: Path, records: list[Record]) -> str:
    datasets = [r.result.manifest.get("dataset") for r in records if r.result is not None and r.result.manifest]
    kinds = {variant_kind(d if isinstance(d, dict) else {"id": d}) for d in datasets}
    if len(kinds) > 1:
        raise UserError(f"{path}: runs on different datasets ({', '.join(sorted(kinds))}); "
                        "split them or label the set explicitly as LABEL=PATH")
    return kinds.pop() if kinds else ORIGINAL


def parse_spec(text: str) -> tuple[str | None, Path]:
    """``LABEL=PATH`` or ``PATH``."""
    label, sep, rest = text.partition("=")
    if sep and label and "/" not in label and not Path(text).exists():
        return label, Path(rest)
    return None, Path(text)


def load_sets(texts: list[str]) -> dict[str, ResultSet]:
    sets: dict[str, ResultSet] = {}
    for text in texts:
        label, path = parse_spec(text)
        records = records_of(path)
        if not records:
            raise UserError(f"{path}: no scorable result file (result_*.csv)")
        s = ResultSet(label or detect_label(path, records), path, records)
        if s.label in sets:
            raise UserError(f"two result sets are labelled {s.label!r} ({sets[s.label].path}, {s.path}); "
                            "write LABEL=PATH to tell them apart")
        sets[s.label] = s
    return sets


@contextmanager
def output_folder(out: str, command: str, force: bool, what: str):
    """``out`` (made by ``command``, or new/empty; ``force``: any allowed folder), locked while the block runs, and
    the warnings logged in the block (``logs.kept_warnings``), for the output JSON."""
    folder = fsguard.prepare_output_dir(out, command, force=force)
    with fsguard.OutputLock(folder, f"the {what} folder {folder}"), logs.kept_warnings() as warnings:
        yield folder, warnings


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
        payload[name] = [json_safe(row) for row in frame.to_dict("records")]
    path = fsguard.atomic_write_text(out / f"{stem}.json", json.dumps(payload, indent=2, allow_nan=False) + "\n")
    return [path] + written


def fmt(value, spec: str = ".2f") -> str:
    return "--" if value is None or (isinstance(value, float) and math.isnan(value)) else format(value, spec)
