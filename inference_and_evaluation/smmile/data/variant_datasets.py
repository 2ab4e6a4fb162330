"""Dataset variants written as local datasets (parquet + ``variant_manifest.json``), the cached variants the
original ``--noisy`` flags run on, and the refusal of a variant without images where a script cannot run it."""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..errors import UserError
from ..protocol.problem import Problem
from .load import fingerprint, read_records, resolve
from .parquet import check_dataset_dir, problems_to_records, write_dataset
from .schema import MANIFEST, group
from .variants import DROPS, canonical_kind, check_params, label, transform

OWNER = "smmile data variant"
FORMAT_VERSION = 1
IMAGE_FREE_OUTPUTS = ("generic", "api", "llama33textonly", "baselines")  # hf:/vllm:, API chat, text-only, baselines


def _write(problems: list[Problem], columns: list[str], source: dict, kind: str, seed: int, out: Path,
           force: bool = False, **params) -> Path:
    """The variant and its manifest (``kind``: its label, as result sets are called; ``transform``: its kind)."""
    new, notes = transform(kind, problems, seed, **params)
    if not new:
        raise UserError(f"variant {kind} of {source['id']} has no problem (no ICL example answers like its query)")
    params = {k: v for k, v in params.items() if v is not None}
    manifest = {"generator": OWNER, "format": FORMAT_VERSION, "kind": label(kind, **params),
                "transform": kind, "params": params, "images_dropped": DROPS.get(kind), "seed": seed,
                "source": source, "counts": {"source_problems": len(problems), "problems": len(new),
                                             "rows": sum(len(p.rows) for p in new)},
                "ids": "<id>_perm_<k>" if kind == "permute" else "original problem ids", "problems": notes}
    records = problems_to_records(new)
    columns = columns + [c for c in dict.fromkeys(k for r in records for k in r) if c not in columns]
    return write_dataset(records, Path(out), columns=columns, owner=OWNER, force=force,
                         extra_files={MANIFEST: json.dumps(manifest, indent=2, default=str) + "\n"})


def _load_source(dataset: str | None, revision: str | None, augmented: bool):
    source = resolve(dataset, revision, augmented)
    columns, records = read_records(source)
    problems = group(records)
    return {**source.describe(), "fingerprint": fingerprint(problems)}, columns, problems


def write_variant(dataset: str | None, kind: str, out: str | os.PathLike, seed: int = 42,
                  revision: str | None = None, augmented: bool = False, force: bool = False, **params) -> Path:
    """Load `dataset` (hub id, path, demo), transform it and write it to `out`; `params` and `out` (new, empty,
    an earlier variant, or with `force` any allowed folder) are checked before anything is read."""
    kind = check_params(kind, **params)
    check_dataset_dir(Path(out), OWNER, force)
    source, columns, problems = _load_source(dataset, revision, augmented)
    return _write(problems, columns, source, kind, seed, Path(out), force, **params)


def variant_summary(out: Path, seed: int) -> str:
    manifest = json.loads((Path(out) / MANIFEST).read_text())
    counts = manifest["counts"]
    return (f"{manifest['kind']} (seed {seed}): {counts['problems']} problems, {counts['rows']} rows "
            f"from {counts['source_problems']} source problems -> {out}")


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


def refuse_dropped_images(dataset, script: str | None = None, output_key: str | None = None) -> None:
    """Refuse (before anything is written) a local variant ``dataset`` whose images were dropped (its manifest says
    so) when the original script (``script``, or the one of ``output_key``) cannot represent a prompt without them (it
    drops such problems, spec §1.4); the any-model, API, text-only and baseline families can."""
    if not dataset or not isinstance(dataset, (str, os.PathLike)):
        return
    try:
        info = json.loads((Path(dataset).expanduser() / MANIFEST).read_text())
    except (OSError, ValueError):
        return
    whose = info.get("images_dropped") if isinstance(info, dict) else None
    if whose is None or (script is None and output_key in IMAGE_FREE_OUTPUTS):
        return
    script = script or f"inference_{output_key}.py"
    what = "the ICL examples' images" if whose == "examples" else "the query image"
    raise UserError(f"{dataset} is a variant without {what}; {script} cannot represent a prompt without an image "
                    "(it skips such problems): run it with --model hf:<checkpoint> / vllm:<checkpoint>, an API model "
                    "or the text-only baseline")
