"""`smmile data`: the demo dataset and dataset variants."""

from __future__ import annotations

from pathlib import Path

from .. import frontdoor as fd


def build_parser():
    p = fd.parser("Generate datasets in the SMMILE schema.")
    sub = p.add_subparsers(dest="action", required=True)
    demo = sub.add_parser("demo", help="write the deterministic demo dataset (SMMILE + permuted SMMILE++ style)",
                          formatter_class=fd.HelpFormatter)
    demo.add_argument("--out", required=True, help="output folder (gets smmile/ and plusplus/ sub-folders)")
    demo.add_argument("--seed", type=int, default=42, help="generator seed; same seed, same bytes")
    return p


def main(argv: list[str] | None = None) -> int:
    def go() -> int:
        args = build_parser().parse_args(argv)
        if args.action == "demo":
            from .demo import write_demo

            for name, path in write_demo(Path(args.out), seed=args.seed).items():
                print(f"{name}: {path}")
        return 0

    return fd.guarded(go)
