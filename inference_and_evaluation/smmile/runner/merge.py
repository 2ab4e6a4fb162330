"""Join the shard CSVs of one run into the file an unsharded run writes (the work of `smmile merge`)."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

from .. import fsguard
from ..errors import UserError
from .csv_writer import allow_csv_fields, csv_text

SHARD = re.compile(r"^(?P<stem>.+)\.shard-(?P<i>\d+)-of-(?P<n>\d+)\.csv$")


def _read_shard(path: Path) -> tuple[dict, list[str], list[dict]]:
    m = SHARD.match(path.name)
    if not m:
        raise UserError(f"{path} is not a shard result (expected <name>.shard-<i>-of-<N>.csv)")
    manifest_path = path.with_name(path.name[:-4] + ".manifest.json")
    if not path.is_file():
        raise UserError(f"shard {path} does not exist")
    if not manifest_path.exists():
        raise UserError(f"{path}: its manifest {manifest_path.name} is missing")
    try:
        manifest = json.loads(manifest_path.read_text())
        manifest["shard"]["indices"], manifest["counts"]["failed"], manifest["dataset"]["fingerprint"]
    except (ValueError, KeyError, TypeError):
        raise UserError(f"{manifest_path} is not the manifest of a shard run (unreadable or incomplete)") from None
    allow_csv_fields(path.stat().st_size + 1)
    with path.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        rows = list(reader)
    if len(rows) != len(manifest["shard"]["indices"]):
        raise UserError(f"{path}: {len(rows)} rows but its manifest lists {len(manifest['shard']['indices'])}")
    if manifest["counts"]["failed"]:
        raise UserError(f"{path}: {manifest['counts']['failed']} problem(s) failed; rerun that shard first")
    return manifest, list(reader.fieldnames or []), rows


# Manifest entries that describe one shard's run rather than the settings the answers depend on.
PER_SHARD = ("result_file", "command", "created", "shard", "counts", "failures", "usage", "seconds_this_run",
             "seconds_generation_total", "journal", "rows_derived_by", "backend.stats", "backend.accounting",
             "backend.calls")


def _flatten(data: dict, prefix: str = "") -> dict[str, object]:
    out = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if name in PER_SHARD:
            continue
        if isinstance(value, dict) and value:
            out.update(_flatten(value, name + "."))
        else:
            out[name] = value
    return out


def check_same_run(shards: list[tuple[Path, dict]]) -> None:
    """Refuse shards whose manifests differ in anything but the shard (protocol, model, data, settings...)."""
    first_path, first = shards[0][0], _flatten(shards[0][1])
    for path, other in ((p, _flatten(m)) for p, m in shards[1:]):
        differ = sorted(k for k in first.keys() | other.keys() if first.get(k) != other.get(k))
        if differ:
            shown = "; ".join(f"{k}: {first.get(k)!r} in {first_path.name}, {other.get(k)!r} in {path.name}"
                              for k in differ[:3])
            more = f" (and {len(differ) - 3} more)" if len(differ) > 3 else ""
            raise UserError(f"shards were run with different settings, so they are not one run: {shown}{more}")


def merge(paths: list[Path], out: Path | None = None, force: bool = False) -> Path:
    shards = [(p, *_read_shard(p)) for p in paths]
    stems = {SHARD.match(p.name)["stem"] for p, *_ in shards}
    counts = {m["shard"]["count"] for _, m, _, _ in shards}
    if len(stems) != 1 or len(counts) != 1:
        raise UserError("shards belong to different runs (names or shard counts differ)")
    n = counts.pop()
    seen = sorted(m["shard"]["index"] for _, m, _, _ in shards)
    if seen != list(range(1, n + 1)):
        raise UserError(f"need exactly shards 1..{n} once each; got {seen}")
    if len({m["dataset"]["fingerprint"] for _, m, _, _ in shards}) != 1:
        raise UserError("shards were run on different data (dataset fingerprints differ)")
    check_same_run([(p, m) for p, m, _, _ in shards])
    by_index: dict[int, dict] = {}
    for _, m, _, rows in shards:
        for idx, row in zip(m["shard"]["indices"], rows):
            if idx in by_index:
                raise UserError(f"problem index {idx} appears in more than one shard")
            by_index[idx] = row
    total = shards[0][1]["dataset"]["problems"]
    if sorted(by_index) != list(range(total)):
        raise UserError(f"shards cover {len(by_index)} of {total} problems")
    out = out or paths[0].with_name(f"{stems.pop()}.csv")
    fsguard.check_writable_file(out, "merged CSV")
    manifest = out.with_name(f"{out.stem}.manifest.json")
    # an unsharded run's result has the same name: a CSV that no merge wrote is not replaced
    if out.exists() and not force and "merged_from" not in (fsguard.read_json(manifest) or {}):
        raise UserError(f"{out} exists and was not written by `smmile merge` (an unsharded run's result?); "
                        "choose another --out or pass --force to replace it")
    merged = {k: v for k, v in shards[0][1].items() if k not in ("shard", "counts", "failures")}
    merged.update(result_file=out.name, merged_from=[p.name for p in paths], counts={"rows": total, "failed": 0})
    with fsguard.OutputLock(out, f"the merged result {out.name}"):
        fsguard.atomic_write_text(out, csv_text(shards[0][2], [by_index[i] for i in range(total)]))
        fsguard.atomic_write_json(manifest, merged, ensure_ascii=False, default=str)
    return out
