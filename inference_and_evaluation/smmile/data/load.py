"""Load SMMILE-schema data (hub id, local parquet, or the generated demo) into Problems; the missing-image folder
lookup and the check that every image decodes."""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterator
from urllib.parse import unquote

from .. import hub
from ..errors import MissingDependency, UserError
from ..protocol.problem import ImageRef, Problem
from .demo import demo_path
from .schema import DROPPED, check_columns, group

SMMILE_ID = "smmile/SMMILE"
PLUSPLUS_ID = "smmile/SMMILE-plusplus"
DATED_IDS = {"smmile/SMMILE-050525": SMMILE_ID, "smmile/SMMILE-augmented-050825": PLUSPLUS_ID}
DEMO_NAMES = {"demo": "smmile", "demo-plusplus": "plusplus", "demo++": "plusplus"}
_UNSAFE = re.compile(r'[\\/*?:"<>|]')
_TRAVERSAL = re.compile(r"(^|[\\/])\.\.([\\/]|$)")


@dataclass(frozen=True)
class Source:
    kind: str  # "hub" | "local" | "demo"
    ref: str  # hub id or path
    revision: str | None = None

    def describe(self) -> dict:
        """For manifests: ``revision`` as requested, ``resolved_revision`` the hub commit read (once loaded)."""
        return {"kind": self.kind, "id": self.ref, "revision": self.revision, "resolved_revision": hub_commit(self)}


_COMMIT = re.compile(r"[0-9a-f]{40}")


def hub_commit(source: Source) -> str | None:
    """The commit a hub dataset was read at: the revision if it is one, else what the local hub cache's ref for
    it (``refs/<revision or main>``, written when ``datasets`` downloaded it) names; None for local folders
    (their ``fingerprint`` says what was read) or without such a ref."""
    if source.kind != "hub":
        return None
    if source.revision and _COMMIT.fullmatch(source.revision):
        return source.revision
    try:
        from huggingface_hub import constants
    except ImportError:
        return None
    repo = Path(constants.HF_HUB_CACHE) / f"datasets--{source.ref.replace('/', '--')}"
    ref = repo / "refs" / (source.revision or "main")
    try:
        found = ref.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return found if _COMMIT.fullmatch(found) else None


@dataclass
class Loaded:
    source: Source
    problems: list[Problem]  # kept problems, dataset order
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (problem_id, image_url) of dropped problems
    recovered: list[tuple[str, str]] = field(default_factory=list)  # images found in the missing-images folder
    fingerprint: str = ""


def resolve(dataset: str | None, revision: str | None = None, augmented: bool = False) -> Source:
    """`dataset` may be None (SMMILE), `augmented`, `demo`/`demo-plusplus`, a local path or a hub id."""
    if dataset in (None, "", "smmile"):
        dataset = PLUSPLUS_ID if augmented else SMMILE_ID
    if dataset == "augmented":
        dataset = PLUSPLUS_ID
    if dataset in DEMO_NAMES:
        name = "demo-plusplus" if augmented and dataset == "demo" else dataset
        return Source("demo", str(demo_path(DEMO_NAMES[name])), None)
    path = Path(dataset).expanduser()
    if path.exists():
        return Source("local", str(path.resolve()), None)
    if dataset.count("/") == 1 and not dataset.startswith((".", "/", "~")):
        return Source("hub", dataset, revision)
    raise UserError(f"dataset {dataset!r} is not an existing path, 'demo', 'augmented' or a hub id (owner/name)")


def local_folder(dataset: str | None, augmented: bool = False) -> Path | None:
    """The folder of a local ``dataset`` (a path or ``demo``), None for a hub id (``resolve``'s one line for
    anything else)."""
    source = resolve(dataset, augmented=augmented)
    return None if source.kind == "hub" else Path(source.ref)


def refuse_output_in_dataset(output_dir: str | Path, dataset: str | None, augmented: bool = False) -> None:
    """An output folder equal to, or inside, the local dataset folder read is refused (one line, exit 2)."""
    folder = local_folder(dataset, augmented)
    out = Path(output_dir).expanduser().resolve()
    if folder is not None and folder.is_dir() and out.is_relative_to(folder.resolve()):
        raise UserError(f"--output-dir {output_dir} is {'the' if out == folder.resolve() else 'inside the'} dataset "
                        f"folder {folder}; write the results elsewhere (e.g. --output-dir ../results)")


def read_records(source: Source) -> list[dict]:
    """Every row of `iter_records`; an empty dataset is refused."""
    records = [record for batch in iter_records(source) for record in batch]
    if not records:
        raise UserError(f"dataset {source.ref} is empty: it has the SMMILE columns but no row; pass a dataset "
                        "with problems (--dataset PATH|ID, or `demo`)")
    return records


def _parquet_files(path: Path) -> list[Path]:
    """The parquet files of the one dataset in `path` (its `train` split if any); hidden files and folders
    (temp folders of a write in progress) are skipped."""
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


def _open_hub(source: Source):
    """The hub dataset's train split (memory-mapped by `datasets`), images left encoded."""
    try:
        import datasets
    except ImportError:
        raise MissingDependency("datasets", "data", why=f"loading {source.ref} from the Hugging Face hub") from None
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
    """The row dicts (columns in the dataset's order) in batches, images as {bytes, path} structs (never decoded
    here): the images of the whole dataset are never in memory together."""
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
        except Exception as exc:  # pyarrow raises several types for corrupt files
            raise UserError(f"cannot read parquet file {f}: {_first_line(exc)}") from None
        check_columns(handle.schema_arrow.names, str(f))
        try:
            for batch in handle.iter_batches(batch_size=batch_rows):
                yield batch.to_pylist()
        except Exception as exc:
            raise UserError(f"cannot read parquet file {f}: {_first_line(exc)}") from None


def fingerprint(problems: list[Problem]) -> str:
    h = hashlib.sha256()
    for p in problems:
        for r in p.rows:
            h.update(repr((r.problem_id, r.order, r.question, r.answer, r.image_url)).encode())
            h.update(r.image.digest if r.image else b"-")
    return h.hexdigest()[:16]


def load_problems(dataset: str | None, revision: str | None = None, augmented: bool = False) -> list[Problem]:
    """Every problem of the dataset, missing images included (what stratify.py needs)."""
    return group(read_records(resolve(dataset, revision, augmented)))


def load_for_run(dataset: str | None, revision: str | None = None, *, augmented: bool = False,
                 image_dir: Path | None = None, recover_missing: bool = False) -> Loaded:
    """Problems a run processes: those with every image present (spec §1.4). With `recover_missing` (protocol
    `corrected`), a missing image is looked up in `image_dir` under the file name derived from its URL."""
    source = resolve(dataset, revision, augmented)
    kept, skipped, recovered = [], [], []
    for p in group(read_records(source)):
        rows, missing = [], []
        for r in p.rows:
            lost = r.image is None and str(r.fields.get(DROPPED, "")).lower() != "true"  # not dropped by a variant
            if lost and image_dir is not None:
                path = missing_image_path(p.problem_id, r.image_url, image_dir)  # rejects URLs that try to escape
                if recover_missing and path is not None and path.is_file():
                    recovered.append((p.problem_id, r.image_url or ""))
                    r, lost = replace(r, image=ImageRef(path.read_bytes(), name=path.name)), False
            if lost:
                missing.append(r.image_url or "")
            rows.append(r)
        if missing:
            skipped.extend((p.problem_id, url) for url in missing)
        else:
            kept.append(Problem(p.problem_id, tuple(rows)))
    return Loaded(source, kept, skipped, recovered, fingerprint(kept))


def sanitized_name(url: str) -> str:
    """The original's file name for a URL: the part after the last '/', minus `\\ / * ? : " < > |` (spec §1.4)."""
    return _UNSAFE.sub("", url.split("/")[-1])


def missing_image_path(problem_id: str, url: str | None, image_dir: Path) -> Path | None:
    """Where a missing image would lie in `image_dir`, or None when the URL gives no usable name; UserError when
    the URL tries to leave the folder, so a crafted dataset can never make us read outside `image_dir`."""
    if not url:
        return None
    for form in (url, unquote(url)):
        if _TRAVERSAL.search(form):
            raise UserError(f"problem {problem_id}: image_url {url!r} tries to leave the missing-images folder")
    name = sanitized_name(url)
    if name in ("", ".", ".."):
        return None
    path = (image_dir / name).resolve()
    if path.parent != image_dir.resolve():
        raise UserError(f"problem {problem_id}: image_url {url!r} does not name a file inside {image_dir}")
    return path


def verify_images(problems: list[Problem]) -> None:
    """Decode every image once; a corrupt one, or a decompression bomb (over ``PIL.Image.MAX_IMAGE_PIXELS``),
    stops the run before anything is written: an input error (exit 2) naming the row, not a failed problem (a
    rerun would fail it again). PIL's warning between one and two times the limit stays a warning."""
    from PIL import Image, UnidentifiedImageError

    for problem in problems:
        for position, row in enumerate(problem.rows):
            if row.image is None:
                continue
            where = (f"problem {problem.problem_id}, row order {row.order} "
                     f"({'the query' if position == len(problem.rows) - 1 else f'ICL example {position + 1}'})")
            try:
                with Image.open(io.BytesIO(row.image.data)) as img:
                    img.verify()
            except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
                raise UserError(f"{where}: the image is too large to decode safely ({_first_line(exc)}); replace "
                                "it with a smaller copy in the dataset") from None
            except UnidentifiedImageError:
                raise UserError(f"{where}: the image cell holds {len(row.image.data)} bytes that are not an image PIL "
                                f"can read (starting {row.image.data[:16]!r}); fix that row of the dataset") from None
            except (OSError, SyntaxError, ValueError) as exc:
                raise UserError(f"{where}: the image cannot be decoded ({_first_line(exc)}); fix that row of the "
                                "dataset") from None


def _first_line(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return re.sub(r"<_io\.BytesIO object at 0x[0-9a-f]+>", "the image", text)
