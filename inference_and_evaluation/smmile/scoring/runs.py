"""Shared command-line plumbing of the scoring front doors (evaluate_EM, evaluate_LLMJudge, stratify).

* ``check_results_dir`` — the results directory must exist and be readable (exit 2 otherwise).
* ``find_files`` — §4.2 discovery, with the original's "No result files found" message (exit 1).
* ``Outcome`` — counts per-file failures; ``exit_code`` is 1 if any file was skipped for an error.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from smmile.errors import UserError
from smmile.scoring.naming import discover


def error(message: str) -> None:
    """One line on stderr, no traceback."""
    print(f"error: {message}", file=sys.stderr)


def check_results_dir(results_dir: str | os.PathLike) -> None:
    """Raise ``UserError`` (exit 2) if ``results_dir`` is missing, not a directory or unreadable.

    Deviation: the original created a missing results directory and then found nothing (exit 1).
    """
    path = os.fspath(results_dir)
    if not os.path.exists(path):
        raise UserError(f"results directory does not exist: {path}")
    if not os.path.isdir(path):
        raise UserError(f"results path is not a directory: {path}")
    if not os.access(path, os.R_OK | os.X_OK):
        raise UserError(f"results directory is not readable: {path}")


def find_files(results_dir, patterns: Sequence[str], model: str | None, mode: str | None) -> list[Path]:
    """Discover result files; print the original's message and return [] if none match."""
    files = discover(results_dir, patterns)
    if not files:
        print("No result files found matching the criteria.")
        if model:
            print(f"  Model: {model}")
        if mode:
            print(f"  Inference mode: {mode}")
    return files


@dataclass
class Outcome:
    """What happened to the files of one run."""

    failed: list[str] = field(default_factory=list)

    def fail(self, message: str) -> None:
        error(message)
        self.failed.append(message)

    @property
    def exit_code(self) -> int:
        return 1 if self.failed else 0

    def summary(self) -> str | None:
        if not self.failed:
            return None
        return f"{len(self.failed)} file(s) skipped because of errors (see above)."


def run_main(body, argv, parser) -> int:
    """Parse ``argv`` and call ``body(args)``; map argparse errors and ``UserError`` to exit 2."""
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: --help (0) or a bad command line (2)
        return int(exc.code or 0)
    try:
        return body(args)
    except UserError as exc:
        error(str(exc))
        return exc.exit_code
