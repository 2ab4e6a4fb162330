"""Shared plumbing of the front-door scripts: the flags smmile adds, and error handling."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable

from .errors import UserError

MODE_HELP = "0-shot: the query alone; ICL: the solved examples first, then the query"
FORMAT_HELP = "open: free-text answer; mcqa: options from the problem's answers, a letter is extracted"
OUTPUT_HELP = "where result files go (with --dataset augmented: <output-dir>_augmented)"
PROTOCOL_HELP = ("paper (default): reproduce the original scripts, quirks included; corrected: apply every "
                 "documented fix at once (see docs/deviations.md)")


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    pass


def parser(description: str, epilog: str = "") -> argparse.ArgumentParser:
    return argparse.ArgumentParser(description=description, epilog=epilog, formatter_class=HelpFormatter)


def add_dataset_flag(p: argparse.ArgumentParser, flag: str = "--dataset") -> None:
    p.add_argument(flag, default=None, metavar="augmented|demo|ID|PATH",
                   help="'augmented' for SMMILE++ (as the original), 'demo' / 'demo-plusplus' for the generated demo "
                        "data, a Hugging Face dataset id (default smmile/SMMILE; HF_TOKEN is read from the "
                        "environment), or a local parquet file/folder in the SMMILE schema")


def add_run_flags(p: argparse.ArgumentParser, *, image_dir: str | None = "--image-dir") -> None:
    """Flags smmile adds to every inference front door."""
    g = p.add_argument_group("smmile additions")
    g.add_argument("--revision", default=None, help="dataset revision (commit, tag or branch) to pin on the hub")
    g.add_argument("--protocol", choices=["paper", "corrected"], default="paper", help=PROTOCOL_HELP)
    g.add_argument("--shard", default=None, metavar="i/N",
                   help="run only the i-th of N deterministic slices (1-based); join them with `smmile merge`")
    g.add_argument("--model-path", default=None,
                   help="load the preset's model from this local folder instead of its hub id")
    g.add_argument("--batch-size", type=int, default=1, help="problems per generate call (local models)")
    if image_dir and image_dir not in p._option_string_actions:
        g.add_argument(image_dir, default="../missing_images",
                       help="folder of manually downloaded images (used under --protocol corrected)")


def dataset_and_output(dataset: str | None, output_dir: str, augmented_flag: bool = False) -> tuple[str | None, bool, Path]:
    """The original's `--dataset augmented` also switches the output folder to `<output-dir>_augmented`."""
    augmented = augmented_flag or dataset == "augmented" or dataset in ("demo-plusplus", "demo++")
    out = output_dir + "_augmented" if (augmented_flag or dataset == "augmented") else output_dir
    return (None if dataset == "augmented" else dataset), augmented, Path(out)


def guarded(main: Callable[[], int]) -> int:
    """Run a CLI entry point: user mistakes become one line on stderr and exit status 2."""
    try:
        return main()
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("interrupted: finished problems are kept in the journal; rerun the same command to resume",
              file=sys.stderr)
        return 130
