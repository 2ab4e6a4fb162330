"""`smmile merge`: join the shard CSVs of one run into the file an unsharded run writes."""

from __future__ import annotations

from pathlib import Path

from ..runner.merge import merge
from . import common as fd


def main(argv: list[str] | None = None) -> int:
    p = fd.parser("Join shard results (from `--shard i/N` runs) into one result CSV in problem order.")
    p.add_argument("shards", nargs="+", type=Path, help="the shard CSVs: <name>.shard-<i>-of-<N>.csv")
    p.add_argument("--out", type=Path, default=None, help="merged CSV (default: <name>.csv beside the shards); "
                   "its manifest is <out name>.manifest.json beside it")
    p.add_argument("--force", action="store_true", help="replace an existing --out that no merge wrote")

    def go() -> int:
        args = p.parse_args(argv)
        print(f"merged into {merge(args.shards, args.out, args.force)}")
        return 0

    return fd.guarded(go, interrupted="interrupted: nothing was merged (the merged CSV is written whole or not at all)")
