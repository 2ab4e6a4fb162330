"""Write SMMILE-schema records as a hub-style parquet dataset that `datasets.load_dataset` reads offline."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

TEXT_COLUMNS = ("problem_id", "question", "answer", "image_url")


def _features(columns: list[str], records: list[dict]) -> dict:
    feats = {}
    for c in columns:
        if c == "image":
            feats[c] = {"_type": "Image"}
        elif c == "order":
            feats[c] = {"dtype": "int64", "_type": "Value"}
        else:
            feats[c] = {"dtype": "string", "_type": "Value"}
    return feats


def write_dataset(records: list[dict], out: Path, columns: list[str] | None = None, extra_files: dict | None = None) -> Path:
    """Write `records` to `out/data/train-00000-of-00001.parquet` atomically (temp folder + rename).

    Images are {"bytes", "path"} structs, the layout `datasets` uses for its Image feature.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns = columns or list(records[0])
    arrays = {}
    for c in columns:
        values = [r.get(c) for r in records]
        if c == "image":
            arrays[c] = pa.array(values, type=pa.struct([("bytes", pa.binary()), ("path", pa.string())]))
        elif c == "order":
            arrays[c] = pa.array(values, type=pa.int64())
        else:
            arrays[c] = pa.array([None if v is None else str(v) for v in values], type=pa.string())
    meta = {"huggingface": json.dumps({"info": {"features": _features(columns, records)}})}
    table = pa.table(arrays).replace_schema_metadata(meta)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    (tmp / "data").mkdir()
    pq.write_table(table, tmp / "data" / "train-00000-of-00001.parquet")
    for name, text in (extra_files or {}).items():
        (tmp / name).write_text(text)
    if out.exists():
        shutil.rmtree(out)
    os.replace(tmp, out)
    return out


def problems_to_records(problems) -> list[dict]:
    """Inverse of load.group: one record per row, in problem then `order` order."""
    records = []
    for p in problems:
        for r in p.rows:
            rec = {"problem_id": p.problem_id, "order": r.order, "question": r.question, "answer": r.answer,
                   "image": None if r.image is None else {"bytes": r.image.data, "path": r.image.name or None},
                   "image_url": r.image_url}
            rec.update(r.fields)
            records.append(rec)
    return records
