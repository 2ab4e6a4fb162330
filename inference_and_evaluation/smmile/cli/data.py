"""`smmile data`: the demo dataset and dataset variants."""

from __future__ import annotations

from pathlib import Path

from ..data.demo import demo_root, make_demo
from ..data.variant_datasets import variant_summary, write_variant
from ..data.demos import EMBEDS, POLICIES
from ..data.image_variants import FILLS
from ..data.label_variants import LABEL_VARIANTS
from ..data.variants import NOISY_FLAGS, PARAMS, VARIANTS
from . import common as fd

FORCE_HELP = ("write into a non-empty folder smmile did not make (files of the same names are replaced, nothing "
              "else is touched); never allowed for '.', '..', '/', the home folder or one holding the project")
INTERRUPTED = "interrupted: each dataset folder is written whole or not at all; rerun the same command"


def build_parser():
    p = fd.parser("Generate datasets in the SMMILE schema.", prog="smmile data")
    sub = p.add_subparsers(dest="action", required=True)
    demo = sub.add_parser("demo", help="write the deterministic demo dataset (SMMILE + permuted SMMILE++ style)",
                          formatter_class=fd.HelpFormatter)
    demo.add_argument("--out", default=None, help="output folder (gets smmile/ and plusplus/ sub-folders); "
                      "new, empty, or written by an earlier `smmile data demo` (default: where `--dataset demo` "
                      "reads it, $SMMILE_DEMO_DIR or ~/.cache/smmile/demo-v<version>)")
    demo.add_argument("--seed", type=int, default=42, help="generator seed; same seed, same bytes")
    demo.add_argument("--force", action="store_true", help=FORCE_HELP)
    v = sub.add_parser("variant", formatter_class=fd.HelpFormatter,
                       help="write a seeded variant of a dataset (permute, noise, order, ICL diagnostics, "
                            "demonstration policies) as a local dataset",
                       description="Write a deterministic variant of an SMMILE-schema dataset as a local parquet "
                                   "dataset (+ variant_manifest.json) that every front door reads with --dataset "
                                   "PATH. See docs/analyses.md.")
    v.add_argument("kind", choices=list(VARIANTS) + list(NOISY_FLAGS), metavar="KIND",
                   help=f"one of {', '.join(VARIANTS)} (or the original --noisy values {', '.join(NOISY_FLAGS)})")
    v.add_argument("--k", type=int, default=None, help="k-shot: keep K ICL examples (required); demos: show K "
                                                       "(default: as many as the experts gave)")
    v.add_argument("--draw", type=int, default=None,
                   help="k-shot: keep the first K of an order seeded by DRAW and the problem id (nested in K for one "
                        "draw; several draws give several random subsets); default: the first K")
    v.add_argument("--fraction", type=float, default=None,
                   help=f"{', '.join(LABEL_VARIANTS)}: share of each problem's examples changed (default 1)")
    v.add_argument("--fill", choices=FILLS, default=None,
                   help="no-example-images / no-query-image: delete the image (none, default), or show a blank "
                        "(grey) or seeded noise image of the same size")
    v.add_argument("--policy", choices=POLICIES, default=None,
                   help="demos: the experts' examples, random ones of the same speciality from other problems, the "
                        "retrieved most similar (last or first), or the experts' without one (--index)")
    v.add_argument("--index", type=int, default=None, help="demos --policy leave-one-out: the example left out (0 = "
                                                           "first)")
    v.add_argument("--encoder", default=None,
                   help="demos --policy retrieved-*: a CLIP-style or text model (folder or hub id) transformers "
                        "loads, or open_clip:<name> (e.g. BiomedCLIP; pip install open_clip_torch); embeddings are "
                        "cached in $SMMILE_EMBEDDING_DIR or ~/.cache/smmile/embeddings")
    v.add_argument("--embed", choices=EMBEDS, default=None,
                   help="demos --policy retrieved-*: what is compared (default image for a CLIP-style encoder, else "
                        "text)")
    fd.add_dataset_flag(v)
    v.add_argument("--revision", default=None, help="dataset revision to pin on the hub")
    v.add_argument("--augmented", action="store_true", help="start from SMMILE++ instead of SMMILE")
    v.add_argument("--out", required=True, help="output folder: new, empty, or an earlier variant (replaced whole)")
    v.add_argument("--seed", type=int, default=42, help="variant seed; same seed and source, same bytes")
    v.add_argument("--force", action="store_true", help=FORCE_HELP)
    return p


def main(argv: list[str] | None = None) -> int:
    def go() -> int:
        args = build_parser().parse_args(argv)
        if args.action == "demo":
            for name, path in make_demo(args.out or demo_root(), seed=args.seed, force=args.force).items():
                print(f"{name}: {path}")
        else:
            params = {name: getattr(args, name) for names in PARAMS.values() for name in names}  # --k, --fill, ...
            out = write_variant(args.dataset, args.kind, Path(args.out), seed=args.seed, revision=args.revision,
                                augmented=args.augmented, force=args.force, **params)
            print(variant_summary(out, args.seed))
        return 0

    return fd.guarded(go, interrupted=INTERRUPTED)
