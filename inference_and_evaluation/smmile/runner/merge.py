"""`smmile merge`: join the shard CSVs of one run into the file an unsharded run writes."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

from .. import frontdoor as fd
from ..errors import UserError
from .outputs import write_csv, write_json

SHARD = re.compile(r"^(?P<stem>.+)\.shard-(?P<i>\d+)-of-(?P<n>\d+)\.csv$")


def _read_shard(path: Path) -> tuple[dict, list[str], list[dict]]:
    m = SHARD.match(path.name)
    if not m:
        raise UserError(f"{path} is not a shard result (expected <name>.shard-<i>-of-<N>.csv)")
    manifest_path = path.with_name(path.name[:-4] + ".manifest.json")
    if not manifest_path.exists():
        raise UserError(f"{path}: its manifest {manifest_path.name} is missing")
    manifest = json.loads(manifest_path.read_text())
    with path.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        rows = list(reader)
    if len(rows) != len(manifest["shard"]["indices"]):
        raise UserError(f"{path}: {len(rows)} rows but its manifest lists {len(manifest['shard']['indices'])}")
    if manifest["counts"]["failed"]:
        raise UserError(f"{path}: {manifest['counts']['failed']} problem(s) failed; rerun that shard first")
    return manifest, list(reader.fieldnames or []), rows


def merge(paths: list[Path], out: Path | None = None) -> Path:
    shards = [(p, *_read_shard(p)) for p in paths]
    stems = {SHARD.match(p.name)["stem"] for p, *_ in shards}
    counts = {m["shard"]["count"] for _, m, _, _ in shards}
    if len(stems) != 1 or len(counts) != 1:
        raise UserError("shards belong to different runs (names or shard counts differ)")
    n = counts.pop()
    seen = sorted(m["shard"]["index"] for _, m, _, _ in shards)
    if seen != list(range(1, n + 1)):
        raise UserError(f"need exactly shards 1..{n} once each; got {seen}")
    fingerprints = {m["dataset"]["fingerprint"] for _, m, _, _ in shards}
    if len(fingerprints) != 1:
        raise UserError("shards were run on different data (dataset fingerprints differ)")
    by_index: dict[int, dict] = {}
    for _, m, _, rows in shards:
        for idx, row in zip(m["shard"]["indices"], rows):
            if idx in by_index:
                raise UserError(f"problem index {idx} appears in more than one shard")
            by_index[idx] = row
    total = shards[0][1]["dataset"]["problems"]
    if sorted(by_index) != list(range(total)):
        raise UserError(f"shards cover {len(by_index)} of {total} problems")
    stem = stems.pop()
    out = out or paths[0].with_name(f"{stem}.csv")
    write_csv(out, shards[0][2], [by_index[i] for i in range(total)])
    merged = {k: v for k, v in shards[0][1].items() if k not in ("shard", "counts", "failures")}
    merged.update(result_file=out.name, merged_from=[p.name for p in paths], counts={"rows": total, "failed": 0})
    write_json(out.with_name(f"{stem}.manifest.json"), merged)
    return out


def main(argv: list[str] | None = None) -> int:
    p = fd.parser("Join shard results (from `--shard i/N` runs) into one result CSV in problem order.")
    p.add_argument("shards", nargs="+", type=Path, help="the shard CSVs: <name>.shard-<i>-of-<N>.csv")
    p.add_argument("--out", type=Path, default=None, help="merged CSV (default: <name>.csv beside the shards)")

    def go() -> int:
        args = p.parse_args(argv)
        print(f"merged into {merge(args.shards, args.out)}")
        return 0

    return fd.guarded(go)
