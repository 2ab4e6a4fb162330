"""Dataset variants written as local datasets (parquet + ``variant_manifest.json``), the cached variants the
original ``--noisy`` flags run on, the checked manifest and the identity a run records of it, and the refusal of
data without images where a script cannot show it."""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

from ..errors import UserError
from ..fsguard import read_json
from ..protocol.options import RECORDED
from ..protocol.problem import Problem
from .demo import DEMO_INFO, DEMO_OWNER
from .load import fingerprint, local_folder, read_records, resolve
from .parquet import check_dataset_dir, problems_to_records, write_dataset
from .schema import FORMAT_COLUMN, MANIFEST, group
from .variants import VARIANTS, DROPS, OPTION_VARIANTS, canonical_kind, check_params, label, transform

OWNER = "smmile data variant"
FORMAT_VERSION = 1
IMAGE_FREE_OUTPUTS = ("generic", "api", "llama33textonly", "baselines")  # hf:/vllm:, API chat, text-only, baselines
LABEL = re.compile(r"^[a-z][a-z0-9.+-]{0,63}$")  # a variant's name: k-shot-2, flip-answers-0.5, demos-retrieved-last


def _write(problems: list[Problem], columns: list[str], source: dict, kind: str, seed: int, out: Path,
           force: bool = False, **params) -> Path:
    """The variant and its manifest (``kind``: its label, as result sets are called; ``transform``: its kind)."""
    new, notes = transform(kind, problems, seed, **params)
    if not new:
        raise UserError(f"variant {kind} of {source['id']} has no problem (no ICL example answers like its query)")
    params = {k: v for k, v in params.items() if v is not None}
    retrieval = notes[0].pop("retrieval", None) if notes else None  # demos: the encoder, once
    dropped = DROPS.get(kind) if params.get("fill", "none") == "none" else None
    by_format: dict[str, list[str]] = {}  # problem ids per answer format (the analyses split by it)
    for p in new:
        by_format.setdefault(str(p.query.fields.get(FORMAT_COLUMN)), []).append(p.problem_id)
    manifest = {"generator": OWNER, "format": FORMAT_VERSION, "kind": label(kind, **params),
                "transform": kind, "params": params, "images_dropped": dropped, "seed": seed,
                "source": source, "counts": {"source_problems": len(problems), "problems": len(new),
                                             "rows": sum(len(p.rows) for p in new), **_tally(notes),
                                             "by_format": by_format},
                "mcqa_options": None if kind in OPTION_VARIANTS else f"the unmodified problem's, in column {RECORDED} (display "
                                                            "order seeded by the problem id)",
                **({"retrieval": retrieval} if retrieval else {}),
                "ids": "<id>_perm_<k>" if kind == "permute" else "original problem ids", "problems": notes}
    records = problems_to_records(new)
    columns = columns + [c for c in dict.fromkeys(k for r in records for k in r) if c not in columns]
    return write_dataset(records, Path(out), columns=columns, owner=OWNER, force=force,
                         extra_files={MANIFEST: json.dumps(manifest, indent=2, default=str) + "\n"})


def _tally(notes: list[dict]) -> dict:
    """What a run records of the per-problem notes: examples not changed, problems with the gold answer among the
    examples, short problems (ids), and problems whose questions refer to an image not shown."""
    out = {"not_changed": sum(n.get("not_changed", 0) for n in notes)} if any("not_changed" in n for n in notes) else {}
    for key in ("gold_among_examples", "short", "image_referenced"):
        if any(key in n for n in notes):
            out[key] = [n["problem_id"] for n in notes if n.get(key)]
    return out


def _load_source(dataset: str | None, revision: str | None, augmented: bool):
    source = resolve(dataset, revision, augmented)
    records = read_records(source)
    problems = group(records)
    return {**source.describe(), "fingerprint": fingerprint(problems)}, list(records[0]), problems


def check_out(dataset: str | None, out: Path, augmented: bool) -> None:
    """``out`` may be neither the local source dataset, nor inside it, nor hold it (the variant replaces it whole)."""
    folder = local_folder(dataset, augmented)
    if folder is None:
        return
    src, dst = folder.resolve(), Path(out).expanduser().resolve()
    where = "the source dataset" if dst == src else "inside the source dataset" if src in dst.parents else \
        "a folder holding the source dataset" if dst in src.parents else None
    if where:
        raise UserError(f"--out {out} is {where} {src}: write the variant to a folder of its own")


def write_variant(dataset: str | None, kind: str, out: str | os.PathLike, seed: int = 42,
                  revision: str | None = None, augmented: bool = False, force: bool = False, **params) -> Path:
    """Load `dataset` (hub id, path, demo), transform it and write it to `out`; `params` and `out` (new, empty,
    an earlier variant, or with `force` any allowed folder; never the source or a folder in or around it) are
    checked before anything is read."""
    kind = check_params(kind, **params)
    check_out(dataset, Path(out), augmented)
    check_dataset_dir(Path(out), OWNER, force)
    source, columns, problems = _load_source(dataset, revision, augmented)
    return _write(problems, columns, source, kind, seed, Path(out), force, **params)


def variant_summary(out: Path, seed: int) -> str:
    manifest = json.loads((Path(out) / MANIFEST).read_text())
    counts = manifest["counts"]
    unchanged = (f"; {counts['not_changed']} chosen example(s) could not be changed (kept their answer)"
                 if counts.get("not_changed") else "")
    return (f"{manifest['kind']} (seed {seed}): {counts['problems']} problems, {counts['rows']} rows "
            f"from {counts['source_problems']} source problems -> {out}{unchanged}")


def noisy_dataset(dataset: str | None, kind: str, seed: int = 42, augmented: bool = False,
                  revision: str | None = None) -> str:
    """Path of the `kind` variant of `dataset`, built once, cached by source fingerprint, kind and seed."""
    kind = canonical_kind(kind)
    source, columns, problems = _load_source(dataset, revision, augmented)
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "smmile" / "variants"
    out = Path(os.environ.get("SMMILE_VARIANT_DIR", cache)) / f"{source['fingerprint']}-{kind}-seed{seed}"
    if not (out / MANIFEST).is_file():
        _write(problems, columns, source, kind, seed, out)
    return str(out)


def noisy_output_dir(output_dir: str | os.PathLike, kind: str) -> Path:
    """`<output-dir>_<kind>`: a variant run's results (named as the original run's) never overwrite the original's."""
    return Path(f"{os.fspath(output_dir)}_{canonical_kind(kind)}")


def _read_manifest(path: Path) -> tuple[dict, str] | None:
    """The checked ``variant_manifest.json`` at ``path`` and its sha256; None where there is none. One line
    (``UserError``) where it is not one this command writes: a link, not a file, not UTF-8 JSON, not an object, or
    a kind that is not a variant's name."""
    if not (path.exists() or path.is_symlink()):
        return None

    def bad(why: str) -> UserError:
        return UserError(f"{path}: {why}; not a manifest `{OWNER}` writes (write the variant again)")

    if path.is_symlink() or not path.is_file():
        raise bad("a link or not a plain file")
    try:
        raw = path.read_bytes()
        info = json.loads(raw.decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise bad(f"unreadable as JSON ({type(exc).__name__})") from None
    if not isinstance(info, dict):
        raise bad(f"a JSON {type(info).__name__}, not an object")
    kind, made_by = info.get("kind"), info.get("transform")
    if not isinstance(kind, str) or not LABEL.match(kind) or made_by not in VARIANTS:
        raise bad(f"kind {kind!r} (transform {made_by!r}) is not a variant's name")
    if info.get("images_dropped") not in (None, "examples", "query") or not isinstance(info.get("params", {}), dict):
        raise bad("images_dropped or params malformed")
    return info, hashlib.sha256(raw).hexdigest()


def variant_identity(dataset, augmented: bool = False) -> dict | None:
    """What a run records of its dataset's variant (``dataset.variant`` in its manifest, read by the analyses): kind,
    transform, parameters, seed, source fingerprint, manifest hash and counts; the demo's SMMILE++ is ``permute``."""
    try:
        folder = local_folder(os.fspath(dataset), augmented) if isinstance(dataset, (str, os.PathLike)) else None
    except UserError:  # no such dataset: the loader says so
        folder = None
    read = _read_manifest(folder / MANIFEST) if folder else None
    if read is None:
        kind = (read_json(folder / DEMO_INFO) or {}).get("variant") if folder else None
        return {"kind": kind, "transform": kind, "generator": DEMO_OWNER} if kind == "permute" else None
    info, sha = read
    return {"kind": info["kind"], "transform": info["transform"], "params": info.get("params") or {},
            "seed": info.get("seed"), "source_fingerprint": (info.get("source") or {}).get("fingerprint"),
            "images_dropped": info.get("images_dropped"), "counts": info.get("counts"), "manifest_sha256": sha}


def refuse_dropped_images(dataset, script: str | None = None, output_key: str | None = None,
                          augmented: bool = False) -> dict | None:
    """Check ``dataset``'s variant manifest (one line if malformed) and return the run's record of it
    (``variant_identity``); refuse a variant whose images were dropped when the original script (``script``, or the
    one of ``output_key``) cannot represent a prompt without them (it drops such problems, spec §1.4); the any-model,
    API, text-only and baseline families can. ``refuse_imageless`` checks the problems themselves."""
    identity = variant_identity(dataset, augmented)
    whose = (identity or {}).get("images_dropped")
    if whose is None or (script is None and output_key in IMAGE_FREE_OUTPUTS):
        return identity
    what = "the ICL examples' images" if whose == "examples" else "the query image"
    raise _cannot(f"{dataset} is a variant without {what}", script or f"inference_{output_key}.py")


def _cannot(what: str, script: str) -> UserError:
    return UserError(f"{what}; {script} cannot represent a prompt without an image (it skips such problems): run it "
                     "with --model hf:<checkpoint> / vllm:<checkpoint>, an API model or the text-only baseline")


def refuse_imageless(problems: list[Problem], mode: str, output_key: str, dataset) -> None:
    """Refuse, from the family's own capability and whatever the data's origin, problems showing a model a row
    without an image (a dropped image is kept by the loader) when the family cannot represent such a prompt."""
    if output_key in IMAGE_FREE_OUTPUTS:
        return
    blind = [p.problem_id for p in problems if any(image is None for image in p.images(mode))]
    if blind:
        raise _cannot(f"{len(blind)} problem(s) of {dataset} show a row without an image ({blind[0]}, ...)",
                      f"inference_{output_key}.py")
