"""`smmile data`: the demo dataset and dataset variants."""

from __future__ import annotations

from pathlib import Path

from .. import frontdoor as fd


def build_parser():
    p = fd.parser("Generate datasets in the SMMILE schema.")
    p.prog = "smmile data"
    sub = p.add_subparsers(dest="action", required=True)
    demo = sub.add_parser("demo", help="write the deterministic demo dataset (SMMILE + permuted SMMILE++ style)",
                          formatter_class=fd.HelpFormatter)
    demo.add_argument("--out", required=True, help="output folder (gets smmile/ and plusplus/ sub-folders)")
    demo.add_argument("--seed", type=int, default=42, help="generator seed; same seed, same bytes")
    _add_variant_parser(sub)
    return p


def _add_variant_parser(sub) -> None:
    from .variants import KINDS, NOISY_FLAGS

    v = sub.add_parser("variant", formatter_class=fd.HelpFormatter,
                       help="write a seeded variant of a dataset (permute, noise, order) as a local dataset",
                       description="Write a deterministic variant of an SMMILE-schema dataset as a local parquet "
                                   "dataset (+ variant_manifest.json) that every front door reads with --dataset "
                                   "PATH. See docs/analyses.md.")
    v.add_argument("kind", choices=list(KINDS) + list(NOISY_FLAGS), metavar="KIND",
                   help=f"one of {', '.join(KINDS)} (or the original --noisy values {', '.join(NOISY_FLAGS)})")
    fd.add_dataset_flag(v)
    v.add_argument("--revision", default=None, help="dataset revision to pin on the hub")
    v.add_argument("--augmented", action="store_true", help="start from SMMILE++ instead of SMMILE")
    v.add_argument("--out", required=True, help="output folder (replaced if it exists)")
    v.add_argument("--seed", type=int, default=42, help="variant seed; same seed and source, same bytes")


def _variant(args) -> int:
    import json

    from .variants import MANIFEST, write_variant

    out = write_variant(args.dataset, args.kind, Path(args.out), seed=args.seed, revision=args.revision,
                        augmented=args.augmented)
    manifest = json.loads((out / MANIFEST).read_text())
    counts = manifest["counts"]
    print(f"{manifest['kind']} (seed {args.seed}): {counts['problems']} problems, {counts['rows']} rows "
          f"from {counts['source_problems']} source problems -> {out}")
    return 0


def main(argv: list[str] | None = None) -> int:
    def go() -> int:
        args = build_parser().parse_args(argv)
        if args.action == "demo":
            from .demo import write_demo

            for name, path in write_demo(Path(args.out), seed=args.seed).items():
                print(f"{name}: {path}")
        elif args.action == "variant":
            return _variant(args)
        return 0

    return fd.guarded(go)
