"""Result sets for the variant analyses: a folder (or file) of result CSVs with a label.

A set's label says which dataset it was run on: ``original`` or a variant kind (``noise-random``,
``order-last``, ``permute``...). It is written ``LABEL=PATH`` on the command line, or read from the
run manifests (``<stem>.manifest.json``): a run on a local dataset that holds a
``variant_manifest.json`` gets that variant's kind, a run on SMMILE++ (hub or demo-plusplus) is
``permute``, any other run is ``original``.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..data.load import DATED_IDS, PLUSPLUS_ID
from ..data.schema import MANIFEST
from ..errors import UserError
from ..scoring.results import Record, ResultSet, records_of

ORIGINAL = "original"


def variant_kind(dataset: dict) -> str:
    """The variant a run manifest's dataset is: a local/demo folder's `variant_manifest.json` (or the
    demo's own `smmile_demo.json`), SMMILE++ on the hub (`permute`), else `original`."""
    ref = dataset.get("id") or ""
    if dataset.get("kind") == "hub":
        return "permute" if ref in (PLUSPLUS_ID, *[k for k, v in DATED_IDS.items() if v == PLUSPLUS_ID]) else ORIGINAL
    for name in (MANIFEST, "smmile_demo.json"):
        path = Path(ref) / name
        if ref and path.is_file():
            info = json.loads(path.read_text())
            return info.get("kind") or info.get("variant") or ORIGINAL
    return ORIGINAL


def detect_label(path: Path, records: list[Record]) -> str:
    """Label from the run manifests of the records; several different datasets is an error."""
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


def load_set(text: str, warn=None) -> ResultSet:
    label, path = parse_spec(text)
    records = records_of(path, warn)
    if not records:
        raise UserError(f"{path}: no scorable result file (result_*.csv)")
    return ResultSet(label or detect_label(path, records), path, records)


def load_sets(texts: list[str], warn=None) -> dict[str, ResultSet]:
    """label -> set; two sets with the same label are an error (label them explicitly)."""
    sets: dict[str, ResultSet] = {}
    for text in texts:
        s = load_set(text, warn)
        if s.label in sets:
            raise UserError(f"two result sets are labelled {s.label!r} ({sets[s.label].path}, {s.path}); "
                            "write LABEL=PATH to tell them apart")
        sets[s.label] = s
    return sets
