"""``smmile review assign``: assignment files for several reviewers (``analysis.reviews.assign``), each loaded
into the report's blind review queue."""

from __future__ import annotations

import json
from pathlib import Path

from ..analysis import reviews as rv
from ..errors import UserError
from . import common as fd


def build_parser():
    p = fd.parser("Assign answers of result folders to reviewers for the report's blind review queue: a seeded "
                  "sample per reviewer, stratified over model x mode, a share of it double-coded (also in another "
                  "reviewer's list) for inter-reviewer agreement.", prog="smmile review")
    sub = p.add_subparsers(dest="action", required=True)
    a = sub.add_parser("assign", help="write one assignment file per reviewer (load it in the review queue)",
                       formatter_class=fd.HelpFormatter)
    a.add_argument("results", nargs="+", metavar="PATH", help="result folders or CSVs the report shows")
    a.add_argument("--reviewers", nargs="+", required=True, metavar="NAME", help="the reviewers' names")
    a.add_argument("--size", type=fd.positive_int, default=50, help="answers per reviewer")
    a.add_argument("--double", type=float, default=0.2,
                   help="share of each reviewer's answers also given to another reviewer (0 to 1)")
    a.add_argument("--seed", type=int, default=0, help="seed of the sample")
    a.add_argument("--out", default="assignments", help="output folder (made by this command, or new/empty)")
    a.add_argument("--force", action="store_true", help="write into a non-empty --out folder")
    return p


def run(a) -> str:
    from ..analysis.result_sets import output_folder
    from ..fsguard import atomic_write_text
    from ..scoring.scores import records_of

    if not 0 <= a.double <= 1:
        raise UserError(f"--double {a.double} is not a share between 0 and 1")
    if len(set(a.reviewers)) < len(a.reviewers) or not all(n.strip() for n in a.reviewers):
        raise UserError("--reviewers: each name once, none empty")
    with output_folder(a.out, "smmile review", a.force, "assignments") as (folder, _):
        items = rv.answers([r for path in a.results for r in records_of(path)])
        if not items:
            raise UserError("no answer in the results to review")
        lists = rv.assign(items, a.reviewers, a.size, a.double, a.seed)
        lines = []
        for who, mine in lists.items():
            path = Path(folder) / f"assignment_{''.join(c if c.isalnum() else '_' for c in who)}.json"
            atomic_write_text(path, json.dumps({"format": rv.ASSIGNMENT, "reviewer": who, "seed": a.seed,
                                                "double": a.double, "items": mine}, indent=1) + "\n")
            lines.append(f"{who}: {len(mine)} answers ({sum(i['double'] for i in mine)} double-coded) -> {path}")
        return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    a = build_parser().parse_args(argv)
    return fd.guarded(lambda: print(run(a)) or 0)
