"""Write SMMILE-schema records as a hub-style parquet dataset that `datasets.load_dataset` reads offline."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from .. import fsguard
from ..errors import UserError

PARQUET_NAME = "train-00000-of-00001.parquet"
DATASET_OWNER = "smmile data"


def write_dataset(records: list[dict], out: Path, columns: list[str] | None = None, extra_files: dict | None = None,
                  *, owner: str = DATASET_OWNER, force: bool = False) -> Path:
    """Write `records` to `out/data/train-00000-of-00001.parquet` (+ `extra_files`), built in a temp folder
    beside `out` and moved into place: nothing half-written stays behind, even on Ctrl-C. `out` may be new or
    empty, or a dataset folder `owner` wrote earlier (replaced whole); with `force`, our files are added to any
    other allowed folder. One process at a time per folder (`<out>.lock` beside it)."""
    import pyarrow.parquet as pq

    out = Path(out)
    check_dataset_dir(out, owner, force)
    table = _table(records, columns or list(records[0]))
    out.parent.mkdir(parents=True, exist_ok=True)
    with fsguard.OutputLock(out, f"the dataset folder {out}", beside=True):
        replace = check_dataset_dir(out, owner, force)  # again: the folder may have changed meanwhile
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
        try:
            (tmp / "data").mkdir()
            pq.write_table(table, tmp / "data" / PARQUET_NAME)
            for name, text in (extra_files or {}).items():
                (tmp / name).write_text(text)
            files = sorted(str(p.relative_to(tmp)) for p in tmp.rglob("*") if p.is_file())
            fsguard.write_marker(tmp, owner, stamp=False, files=files)
            _install(tmp, out, replace)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp)
    return out


def check_dataset_dir(out: Path, owner: str = DATASET_OWNER, force: bool = False) -> bool:
    """Raise UserError unless `owner` may write a dataset to `out`; True when an earlier dataset of `owner` (only
    the files its marker lists) is to be replaced whole."""
    fsguard.check_output_dir(out, owner, force)
    marker = fsguard.read_marker(out) if out.is_dir() else None
    if not marker or marker.get("owner") != owner:
        return False
    written = set(marker.get("files") or ())
    others = sorted(str(p.relative_to(out)) for p in out.rglob("*")
                    if p.is_file() and p.name not in (fsguard.MARKER, fsguard.LOCK_IN_FOLDER)
                    and str(p.relative_to(out)) not in written)
    if others and not force:
        raise UserError(f"output folder {out} holds files `{owner}` did not write ({', '.join(others[:3])}"
                        f"{', ...' if len(others) > 3 else ''}); move them or choose another folder")
    return not others


def _install(tmp: Path, out: Path, replace: bool) -> None:
    """Move `tmp` to `out`: a rename, a swap with our earlier dataset, or file by file (an empty or --force folder)."""
    if not out.exists():
        os.rename(tmp, out)
    elif replace:
        old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
        os.replace(out, old)
        try:
            os.rename(tmp, out)
        except BaseException:
            os.replace(old, out)
            raise
        shutil.rmtree(old)
    else:
        for f in sorted(p for p in tmp.rglob("*") if p.is_file()):
            target = out / f.relative_to(tmp)
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(f, target)


def _table(records: list[dict], columns: list[str]):
    """Images as {"bytes", "path"} structs and the `datasets` features metadata: the hub's layout."""
    import pyarrow as pa

    arrays, features = {}, {}
    for c in columns:
        values = [r.get(c) for r in records]
        if c == "image":
            arrays[c] = pa.array(values, type=pa.struct([("bytes", pa.binary()), ("path", pa.string())]))
            features[c] = {"_type": "Image"}
        elif c == "order":
            arrays[c] = pa.array(values, type=pa.int64())
            features[c] = {"dtype": "int64", "_type": "Value"}
        else:
            arrays[c] = pa.array([None if v is None else str(v) for v in values], type=pa.string())
            features[c] = {"dtype": "string", "_type": "Value"}
    meta = {"huggingface": json.dumps({"info": {"features": features}})}
    return pa.table(arrays).replace_schema_metadata(meta)


def problems_to_records(problems) -> list[dict]:
    """Inverse of schema.group: one record per row, in problem then `order` order."""
    return [{"problem_id": p.problem_id, "order": r.order, "question": r.question, "answer": r.answer,
             "image": None if r.image is None else {"bytes": r.image.data, "path": r.image.name or None},
             "image_url": r.image_url, **r.fields} for p in problems for r in p.rows]
