"""The run records of a folder scored (``load_records``: one ``Record`` per result and metric), what every
scoring command, the analyses and the report read; the records themselves are found by ``record.run_record.scan``.
Also the checks the scoring commands share: a result's problem count against its dataset's (``screen``), an output
never replaced by one from fewer inputs (``replace_output``), the exit status (``Outcome``).
"""

from __future__ import annotations

import logging
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import pandas as pd

from smmile.errors import UserError
from smmile.fsguard import atomic_write_text
from smmile.record import naming
from smmile.record.result_csv import ResultFileError
from smmile.record.run_record import MODES, RunRecord, judge_only, read, scan
from smmile.scoring import metrics, statistics

log = logging.getLogger(__name__)


def problem_count(frame) -> int:
    return int(frame["problem_id"].nunique())


def screen(results: Sequence, read: Callable, count: Callable) -> tuple[dict, dict]:
    """Read every result once (``read(result)``, raising ``ResultFileError``), then flag each whose problem count
    (``count(data)``) is not its dataset's most common one (ties: the larger; files without a manifest form one
    group): a file cut at a line break parses cleanly. Returns ``({path: data}, {path: message})``."""
    data, failures = {}, {}
    for result in results:
        try:
            data[result.path] = read(result)
        except ResultFileError as exc:
            failures[result.path] = str(exc)
    groups: dict = {}
    for result in (r for r in results if r.path in data):
        dataset = (getattr(result, "manifest", None) or {}).get("dataset")
        group = isinstance(dataset, dict) and tuple(str(dataset.get(k)) for k in ("id", "revision", "fingerprint"))
        groups.setdefault(group, []).append((result, count(data[result.path])))
    for members in groups.values():
        tally = Counter(n for _, n in members)
        reference = max(tally, key=lambda n: (tally[n], n))
        for result, n in members:
            if n != reference:
                failures[result.path] = (f"{result.path}: {n} problem(s), but the other results of its dataset "
                                         f"have {reference} (a cut or incomplete file?); not scored")
                del data[result.path]
    return data, failures


def check_results_dir(results_dir: str | os.PathLike) -> None:
    """Deviation: the original created a missing ``results_dir`` and then found nothing (exit 1)."""
    path = os.fspath(results_dir)
    if not os.path.exists(path):
        raise UserError(f"results directory does not exist: {path}")
    if not os.path.isdir(path):
        raise UserError(f"results path is not a directory: {path}")
    if not os.access(path, os.R_OK | os.X_OK):
        raise UserError(f"results directory is not readable: {path}")


def find_result_files(results_dir, patterns: Sequence[str], model: str | None, mode: str | None) -> list[RunRecord]:
    """``patterns`` (§4.2) in ``results_dir``, else in the current directory (as the original)."""
    found = scan(results_dir, patterns=patterns) or scan(".", patterns=patterns)
    if not found:
        print("No result files found matching the criteria.")
        if model:
            print(f"  Model: {model}")
        if mode:
            print(f"  Inference mode: {mode}")
    return found


def replace_output(path: str | os.PathLike, text: str, entries: set, existing: Callable[[str], set],
                   what: str) -> str | None:
    """Write ``text`` atomically unless the file there holds entries (``existing(old text)``) that ``entries``
    lacks: then a one-line warning is returned. Identical content is not rewritten; an unreadable file is replaced."""
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
        example = ", ".join(sorted(" ".join(map(str, e)) if isinstance(e, tuple) else str(e) for e in lost)[:3])
        return (f"warning: {path} kept: it holds {len(lost)} {what} this run did not produce (e.g. {example}); "
                "remove it to replace it with this run's result")
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, text)
    return None


@dataclass
class Outcome:
    """What happened to the files of one run: ``exit_code`` 1 if any file was skipped or kept."""

    failed: list[str] = field(default_factory=list)

    def fail(self, message: str) -> None:
        log.error(f"error: {message}")
        self.failed.append(message)

    def warn(self, message: str) -> None:
        """A warning that also makes the exit status 1."""
        log.warning(message)
        self.failed.append(message)

    @property
    def exit_code(self) -> int:
        return 1 if self.failed else 0

    def finish(self) -> int:
        """The exit status, the count of what was skipped or kept printed first when there is any."""
        if self.failed:
            print(f"{len(self.failed)} file(s) skipped or output(s) kept because of errors (see above).")
        return self.exit_code


def datasets_named(results) -> set[tuple[str, str | None]]:
    """The (dataset id, revision) pairs the manifests of ``results`` (``RunRecord``s) name."""
    return {(str(d["id"]), d.get("revision")) for r in results
            if isinstance(d := (getattr(r, "manifest", None) or {}).get("dataset"), dict) and d.get("id")}


def refuse_if_none_known(found: list[RunRecord]) -> None:
    """``UserError`` (nothing to score) when no file of ``found`` names a model; each is printed as skipped."""
    if not found or any(r.known for r in found):
        return
    for result in found:
        print(f"Skipping: {result.path}")
    if len(found) == 1:
        raise UserError(found[0].unknown_reason)
    for result in found:
        log.warning(f"warning: {result.unknown_reason}")
    raise UserError(f"nothing scored: none of the {len(found)} result files names a model (see the warnings above)")


def screened(found: list[RunRecord], read: Callable, count: Callable, outcome: Outcome) -> list[tuple]:
    """``(result, read(result))`` of the results worth scoring; the others are printed skipped or go to ``outcome``."""
    refuse_if_none_known(found)
    data, failures = screen([r for r in found if r.known], read, count)
    usable = []
    for result in found:
        if not result.known:
            print(f"Skipping: {result.path}")
            log.warning(f"warning: {result.unknown_reason}")
        elif result.path in failures:
            outcome.fail(failures[result.path])
        else:
            usable.append((result, data[result.path]))
    return usable


@dataclass
class Record:
    """One scored result: ``scores`` in [0, 1] by problem_id (file order; a duplicated id's rows averaged);
    ``failures``: ``metrics.failure_series`` (None for a judge JSON without its CSV)."""

    model: str
    metric: str
    mode: str
    source: str
    scores: pd.Series
    gold: pd.Series | None = None
    result: RunRecord | None = None
    frame: pd.DataFrame | None = None
    failures: pd.Series | None = None


def _per_problem(scores: pd.Series, path) -> pd.Series:
    if not scores.index.has_duplicates:
        return scores
    duplicated = scores.index[scores.index.duplicated()].unique()
    log.warning(f"warning: {path}: {len(duplicated)} problem id(s) appear more than once (first: {duplicated[0]}); "
                "their rows are averaged into one score per problem")
    return scores.groupby(level=0, sort=False).mean()


def result_records(result: RunRecord, frame: pd.DataFrame, paper: bool = False) -> list[Record]:
    """The records of one result: MCQA, or EM plus the judge when it was run."""
    gold = None if "true_answer" not in frame.columns else pd.Series(
        frame["true_answer"].to_numpy(), index=frame["problem_id"].astype(str)).groupby(level=0, sort=False).first()
    failures = metrics.failure_series(frame, result).groupby(level=0, sort=False).first()
    records = []
    for metric in metrics.metrics_for(result.fmt, paper=paper):
        try:
            scores = metrics.metric_scores(result, metric, frame=frame)
        except ResultFileError as exc:
            if metric.source != "judge":
                raise
            log.warning(f"warning: {exc}; {metric.name} skipped")  # the file's other metrics are still scored
            continue
        judged = naming.evaluationllm_json_path(result.csv)
        if scores is not None and scores.empty:
            log.warning(f"warning: {judged}: no scored problem; {metric.name} skipped")
        elif scores is not None:
            scores = _per_problem(scores, result.csv if metric.source == "csv" else judged)
            records.append(Record(result.identity.key, metric.name, result.mode, os.fspath(result.csv),
                                  scores, gold, result, frame, None if metric.measures_failures else failures))
    return records


SCORED_FROM_JSON = "the judge metric is scored from the JSON's problem_accuracies"  # said, not a skipped input


def judge_only_records(directory: str, found: list[RunRecord]) -> list[Record]:
    """Judge JSONs without their result CSV, scored from ``problem_accuracies`` with a warning."""
    records = []
    for result in judge_only(directory, found):
        json_path = os.fspath(naming.evaluationllm_json_path(result.csv))
        try:
            scores = metrics.judge_scores(result)
        except ResultFileError as exc:
            log.warning(f"warning: {json_path}: judge results without their result CSV, and no usable per-problem "
                        f"scores ({exc}); left out")
            continue
        if result.mode not in MODES or scores is None or scores.empty:
            log.warning(f"warning: {json_path}: judge results without their result CSV "
                        f"({'no 0-shot/ICL mode' if result.mode not in MODES else 'no problem_accuracies'}); left out")
            continue
        log.warning(f"warning: {json_path}: no result CSV ({result.csv.name}); {SCORED_FROM_JSON} ({len(scores)} "
                    "problems); failures and gold answers unknown")
        scores = _per_problem(scores, json_path)
        records.append(Record(result.identity.key, metrics.LLM.name, result.mode, json_path, scores, None, result))
    return records


def load_records(directory: str, paper: bool = False) -> list[Record]:
    """All scorable results of ``directory`` (variance_analysis's rules), scored by every registered metric
    (``paper``: the paper's only); what is skipped is logged as a warning."""
    found = []
    for result in scan(directory, rules="variance"):
        if result.mode not in MODES:
            log.warning(f"warning: {result.path}: no 0-shot/ICL mode in the file name or manifest; skipped")
        else:
            found.append(result)
    frames, failures = screen(found, lambda r: r.rows, problem_count)
    for message in failures.values():
        log.warning(f"warning: {message.removesuffix('; not scored')}; skipped")
    records = []
    for result in found:
        if result.path in frames:
            try:
                records += result_records(result, frames[result.path], paper)
            except ResultFileError as exc:
                log.warning(f"warning: {exc}; skipped")
    return records + judge_only_records(directory, found)


@dataclass
class ResultSet:
    """A labelled results folder (or one CSV) and its scored records; the report adds what it derived."""

    label: str
    path: Path
    records: list[Record] = field(default_factory=list)

    @property
    def results_dir(self) -> str:
        return os.fspath(self.path)

    def index(self) -> dict[tuple[str, str, str], Record]:
        return {(r.model, r.metric, r.mode): r for r in self.records}

    @property
    def permuted(self) -> bool:
        """Whether its rows are SMMILE++ permutations (``<id>_perm_<k>``)."""
        return any(statistics.has_permutations(r.scores.index) for r in self.records)


def records_of(path: str | os.PathLike) -> list[Record]:
    """The records of a results folder, or of one result CSV, by the paper's metrics (what the analyses compare);
    a file that cannot be scored is a UserError."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise UserError(f"results {path} not found")
    try:
        if os.path.isdir(path):
            return load_records(path, paper=True)
        result = read(path, rules="variance")
        if result.mode not in MODES:
            raise ResultFileError(f"{path}: no 0-shot/ICL mode (file name or manifest)")
        return result_records(result, result.rows, paper=True)
    except ResultFileError as exc:
        raise UserError(str(exc)) from None
