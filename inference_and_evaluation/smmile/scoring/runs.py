"""What the scoring runs share (evaluate_EM, evaluate_LLMJudge, stratify, variance_analysis).

* ``check_results_dir`` — the results directory must exist and be readable (exit 2 otherwise).
* ``find_result_files`` — ``discovery.find_results`` with the original's current-directory fallback and
  "No result files found" message (exit 1).
* ``replace_output`` — write a scoring output atomically, unless the existing file holds an entry the new
  one lacks (a result computed from fewer inputs never replaces a fuller one).
* ``Outcome`` — counts per-file failures; ``exit_code`` is 1 if any file was skipped for an error.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from smmile.errors import UserError
from smmile.fsguard import atomic_write_text
from smmile.scoring.discovery import ResultFile, find_results


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


def find_result_files(results_dir, patterns: Sequence[str], model: str | None, mode: str | None) -> list[ResultFile]:
    """The results matching ``patterns`` (§4.2) in ``results_dir``, else in the current directory (the
    original's fallback); print the original's message and return [] if none match."""
    found = find_results(results_dir, patterns=patterns) or find_results(".", patterns=patterns)
    if not found:
        print("No result files found matching the criteria.")
        if model:
            print(f"  Model: {model}")
        if mode:
            print(f"  Inference mode: {mode}")
    return found


def replace_output(path: str | os.PathLike, text: str, entries: set, existing: Callable[[str], set],
                   what: str) -> str | None:
    """Write ``text`` to ``path`` atomically unless the file there holds entries (``existing(old text)``)
    that ``entries`` lacks; then nothing is written and a one-line warning is returned. Identical
    content is not rewritten. An existing file that cannot be read or parsed is replaced."""
    path = Path(path)
    try:
        old = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        old = None
    if old == text:
        return None
    try:
        lost = existing(old) - set(entries) if old is not None else set()
    except (ValueError, TypeError, KeyError, AttributeError):
        lost = set()
    if lost:
        example = ", ".join(sorted(_show(e) for e in lost)[:3])
        return (f"warning: {path} kept: it holds {len(lost)} {what} this run did not produce (e.g. {example}); "
                "remove it to replace it with this run's result")
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, text)
    return None


def _show(entry) -> str:
    return " ".join(map(str, entry)) if isinstance(entry, tuple) else str(entry)


@dataclass
class Outcome:
    """What happened to the files of one run."""

    failed: list[str] = field(default_factory=list)

    def fail(self, message: str) -> None:
        error(message)
        self.failed.append(message)

    def warn(self, message: str, printed: bool = False) -> None:
        """A one-line ``warning: ...`` (e.g. an output kept) that also makes the exit status 1; printed to
        stderr unless ``printed`` says it already was."""
        if not printed:
            print(message, file=sys.stderr)
        self.failed.append(message)

    @property
    def exit_code(self) -> int:
        return 1 if self.failed else 0

    def summary(self) -> str | None:
        if not self.failed:
            return None
        return f"{len(self.failed)} file(s) skipped or output(s) kept because of errors (see above)."


def refuse_if_none_known(found: list[ResultFile]) -> None:
    """Raise ``UserError`` (exit 2: nothing to score, not a run that did nothing) when no file of ``found``
    names a model the original's rules or a manifest know; each is first printed as ``Skipping: <path>``."""
    if not found or any(r.known for r in found):
        return
    for result in found:
        print(f"Skipping: {result.path}")
    if len(found) == 1:
        raise UserError(found[0].unknown_reason)
    for result in found:
        print(f"warning: {result.unknown_reason}", file=sys.stderr)
    raise UserError(f"nothing scored: none of the {len(found)} result files names a model (see the warnings above)")


def screened(found: list[ResultFile], read: Callable, count: Callable, outcome: "Outcome") -> list[tuple]:
    """``(result, what read returned)`` for the results worth scoring, each file read once: a model the
    original's rules do not know is ``Skipping: <path>`` (as the original) with the reason and what makes it
    scorable on stderr (``ResultFile.unknown_reason``; ``refuse_if_none_known`` when no file is known), a
    file that is not whole (``scoring.integrity.screen``) is reported through ``outcome``."""
    from smmile.scoring.integrity import screen

    refuse_if_none_known(found)
    data, failures = screen([r for r in found if r.known], read, count)
    usable = []
    for result in found:
        if not result.known:
            print(f"Skipping: {result.path}")
            print(f"warning: {result.unknown_reason}", file=sys.stderr)
        elif result.path in failures:
            outcome.fail(failures[result.path])
        else:
            usable.append((result, data[result.path]))
    return usable
