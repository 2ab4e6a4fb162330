"""Load SMMILE-schema data (hub id, local parquet, or the generated demo) into Problems."""

from __future__ import annotations

import contextlib
import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from ..errors import MissingDependency, UserError
from ..protocol.problem import Problem, Row
from .images import recover
from .schema import check_columns, group

SMMILE_ID = "smmile/SMMILE"
PLUSPLUS_ID = "smmile/SMMILE-plusplus"
DATED_IDS = {"smmile/SMMILE-050525": SMMILE_ID, "smmile/SMMILE-augmented-050825": PLUSPLUS_ID}
DEMO_NAMES = {"demo": "smmile", "demo-plusplus": "plusplus", "demo++": "plusplus"}


@dataclass(frozen=True)
class Source:
    kind: str  # "hub" | "local" | "demo"
    ref: str  # hub id or path
    revision: str | None = None

    def describe(self) -> dict:
        return {"kind": self.kind, "id": self.ref, "revision": self.revision}


@dataclass
class Loaded:
    source: Source
    problems: list[Problem]  # kept problems, dataset order
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (problem_id, image_url) of dropped problems
    recovered: list[tuple[str, str]] = field(default_factory=list)  # images found in the missing-images folder
    columns: list[str] = field(default_factory=list)
    fingerprint: str = ""


def resolve(dataset: str | None, revision: str | None = None, augmented: bool = False) -> Source:
    """`dataset` may be None (SMMILE), `augmented`, `demo`/`demo-plusplus`, a local path or a hub id."""
    if dataset in (None, "", "smmile"):
        dataset = PLUSPLUS_ID if augmented else SMMILE_ID
    if dataset == "augmented":
        dataset = PLUSPLUS_ID
    if dataset in DEMO_NAMES:
        from .demo import demo_path

        name = "demo-plusplus" if augmented and dataset == "demo" else dataset
        return Source("demo", str(demo_path(DEMO_NAMES[name])), None)
    path = Path(dataset).expanduser()
    if path.exists():
        return Source("local", str(path.resolve()), None)
    if dataset.count("/") == 1 and not dataset.startswith((".", "/", "~")):
        return Source("hub", dataset, revision)
    raise UserError(f"dataset {dataset!r} is not an existing path, 'demo', 'augmented' or a hub id (owner/name)")


def read_records(source: Source) -> tuple[list[str], list[dict]]:
    """Column names and row dicts, images as {bytes, path} structs (never decoded here). A dataset without
    a row is refused (it is empty: nothing to run, score or vary)."""
    columns, records = _read_hub(source) if source.kind == "hub" else _read_parquet(Path(source.ref))
    if not records:
        raise UserError(f"dataset {source.ref} is empty: it has the SMMILE columns but no row; pass a dataset "
                        "with problems (--dataset PATH|ID, or `demo`)")
    return columns, records


def _parquet_files(path: Path) -> list[Path]:
    """The parquet files of the one dataset in `path` (its `train` split when it has one); hidden files
    and folders (temp folders of a write in progress) are skipped."""
    if path.is_file():
        return [path]
    files = sorted(f for f in path.rglob("*.parquet") if not any(part.startswith(".") for part in f.relative_to(path).parts))
    if not files:
        raise UserError(f"dataset folder {path} holds no .parquet file")
    roots = sorted({str(_dataset_root(f.relative_to(path))) for f in files})
    if len(roots) > 1:
        raise UserError(f"dataset folder {path} holds {len(roots)} datasets ({', '.join(roots)}); "
                        "pass the folder of one of them")
    train = [f for f in files if "train" in f.name or "train" in f.parent.name]
    return train or files


def _dataset_root(relative: Path) -> Path:
    """The folder a parquet file's dataset starts at: above a `data/` folder (hub layout), else its own."""
    parts = relative.parts[:-1]
    return Path(*parts[:parts.index("data")]) if "data" in parts else Path(*parts)


def _read_parquet(path: Path) -> tuple[list[str], list[dict]]:
    import pyarrow.parquet as pq

    columns: list[str] | None = None
    records: list[dict] = []
    for f in _parquet_files(path):
        try:
            table = pq.ParquetFile(f).read()
        except Exception as exc:  # pyarrow raises several types for corrupt files
            raise UserError(f"cannot read parquet file {f}: {str(exc).splitlines()[0]}") from None
        columns = columns or table.column_names
        check_columns(table.column_names, str(f))
        records.extend(table.to_pylist())
    return columns or [], records


def _read_hub(source: Source) -> tuple[list[str], list[dict]]:
    ds = _open_hub(source)
    return list(ds.column_names), [dict(r) for r in ds]


def _open_hub(source: Source):
    """The hub dataset's train split (memory-mapped by `datasets`), images left encoded."""
    try:
        import datasets
    except ImportError:
        raise MissingDependency("datasets", "data", why=f"loading {source.ref} from the Hugging Face hub") from None
    from .. import hub

    down = None if hub.offline_requested() else hub.unreachable()
    if down:
        print(f"The Hugging Face hub is unreachable ({down}): looking for '{source.ref}' in the local cache")
    print(f"Loading dataset '{source.ref}'...")
    try:
        with hub.offline_mode() if down else contextlib.nullcontext():
            ds = datasets.load_dataset(source.ref, split="train", revision=source.revision,
                                       token=os.environ.get("HF_TOKEN") or None)
    except Exception as exc:
        if down or hub.offline_requested():
            why = down or "offline mode (HF_HUB_OFFLINE) is on"
            raise UserError(f"cannot load dataset {source.ref}: {why} and it is not in the Hugging Face cache; "
                            "load it once where the hub is reachable, or pass a local copy with --dataset PATH") from None
        first = str(exc).splitlines()[0] if str(exc) else ""
        raise UserError(f"cannot load dataset {source.ref} from the hub: {type(exc).__name__}: {first}") from None
    check_columns(ds.column_names, source.ref)
    return ds.cast_column("image", datasets.Image(decode=False))


def iter_records(source: Source, batch_rows: int = 64) -> Iterator[list[dict]]:
    """The rows of `read_records` a batch at a time (file order, at most `batch_rows` rows per batch), for a
    caller that keeps only part of each row: the images of the whole dataset are never in memory together."""
    if source.kind == "hub":
        ds = _open_hub(source)
        for start in range(0, len(ds), batch_rows):
            batch = ds[start:start + batch_rows]
            yield [dict(zip(batch, values)) for values in zip(*batch.values())]
        return
    import pyarrow.parquet as pq

    for f in _parquet_files(Path(source.ref)):
        try:  # a buffered stream without pre-buffering: a row group is read a page at a time, not whole
            handle = pq.ParquetFile(f, pre_buffer=False, buffer_size=1 << 20)
            check_columns(handle.schema_arrow.names, str(f))
            batches = handle.iter_batches(batch_size=batch_rows)
        except UserError:
            raise
        except Exception as exc:  # pyarrow raises several types for corrupt files
            raise UserError(f"cannot read parquet file {f}: {str(exc).splitlines()[0]}") from None
        while True:
            try:
                batch = next(batches, None)
            except Exception as exc:
                raise UserError(f"cannot read parquet file {f}: {str(exc).splitlines()[0]}") from None
            if batch is None:
                break
            yield batch.to_pylist()


def fingerprint(problems: list[Problem]) -> str:
    h = hashlib.sha256()
    for p in problems:
        for r in p.rows:
            h.update(repr((r.problem_id, r.order, r.question, r.answer, r.image_url)).encode())
            h.update(r.image.digest if r.image else b"-")
    return h.hexdigest()[:16]


def load_problems(dataset: str | None, revision: str | None = None, augmented: bool = False) -> list[Problem]:
    """Every problem of the dataset, missing images included (what stratify.py needs)."""
    source = resolve(dataset, revision, augmented)
    _, records = read_records(source)
    return group(records)


def dropped(row: Row) -> bool:
    """The row's image was removed on purpose (``smmile data variant no-example-images|no-query-image``): its
    empty image cell is marked in the ``image_dropped`` column."""
    from .diagnostic_variants import DROPPED

    return str(row.fields.get(DROPPED, "")).lower() == "true"


def load_for_run(dataset: str | None, revision: str | None = None, *, augmented: bool = False,
                 image_dir: Path | None = None, recover_missing: bool = False) -> Loaded:
    """Problems a run processes: those with every image present (spec §1.4).

    With `recover_missing` (protocol `corrected`), a missing image is looked up in `image_dir`
    under the file name derived from its URL before the problem is given up.
    """
    source = resolve(dataset, revision, augmented)
    columns, records = read_records(source)
    problems = group(records)
    kept, skipped, recovered = [], [], []
    for p in problems:
        rows, missing = [], []
        for r in p.rows:
            if r.image is None and dropped(r):  # removed on purpose by a variant: not a missing download
                rows.append(r)
                continue
            if r.image is None and recover_missing and image_dir is not None:
                ref = recover(p.problem_id, r.image_url, image_dir)
                if ref is not None:
                    recovered.append((p.problem_id, r.image_url or ""))
                    r = Row(r.problem_id, r.order, r.question, r.answer, ref, r.image_url, r.fields)
            elif r.image is None and image_dir is not None:
                from .images import missing_image_path

                missing_image_path(p.problem_id, r.image_url, image_dir)  # rejects URLs that try to escape
            if r.image is None:
                missing.append(r.image_url or "")
            rows.append(r)
        if missing:
            skipped.extend((p.problem_id, url) for url in missing)
        else:
            kept.append(Problem(p.problem_id, tuple(rows)))
    return Loaded(source, kept, skipped, recovered, columns, fingerprint(kept))
