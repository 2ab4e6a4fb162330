"""A result (``RunRecord``: its journal of responses, its manifest and its judges' journals) and the one loader
every scoring command, the analyses and the report read (``load_results``; ``load_records`` scores them). Without
a run record (the published outputs) the CSV is identified by the original's file-name rules (``scoring.naming``).
Never loaded: shards, CSVs the runner moved aside, our own ``stats_*.csv``. Of two files of one (model, mode,
format) the one with a manifest (else the name sorting last) is kept, with a warning.
"""

from __future__ import annotations

import glob
import json
import logging
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Callable, Sequence

import pandas as pd

from smmile.errors import UserError
from smmile.fsguard import atomic_write_text
from smmile.identity import UNKNOWN, ModelIdentity
from smmile.models.registry import identity_from_manifest
from smmile.runner.executor import RESPONSES_FORMAT, Journal
from smmile.scoring import metrics, naming
from smmile.scoring.exact_match import (ResultFileError, content_sha256, exclude_problems, problem_accuracies,
                                        read_csv_bytes)
from smmile.scoring.judge import FAILED, JudgeSettings, judgements, label, plan_frame, verdicts

MODES = ("0-shot", "ICL")
FORMATS = ("open", "mcqa")
RULES = ("scoring", "variance")
OWN_OUTPUTS = ("stats_estimates.csv", "stats_comparisons.csv")
_SHARD = re.compile(r"\.shard-\d+-of-\d+")
_REPLACED = re.compile(r"\.replaced-\d{8}T\d{6}(-\d+)?\.csv$")  # a CSV the runner moved aside (runner.run)
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunRecord:
    """One result: ``path`` is the file found (a CSV, or the JSON stratify reads)."""

    path: Path
    identity: ModelIdentity
    mode: str  # "0-shot" | "ICL" (or "unknown" for a file-name-identified file without a mode marker)
    fmt: str  # "open" | "mcqa"
    manifest: dict | None = None
    tag: str = ""  # the model token of its file name (manifest: model.tag)

    @property
    def csv(self) -> Path:
        return Path(naming.result_stem(self.path) + ".csv")

    @cached_property
    def rows(self) -> pd.DataFrame:
        return metrics.read_rows(self)

    @cached_property
    def responses(self) -> dict[str, dict] | None:
        """The journaled responses by problem id of the run the manifest describes (its mode and format); a
        problem with several configurations journaled is left out; None without a readable journal."""
        journal = (self.manifest or {}).get("journal")
        if not isinstance(journal, dict) or not isinstance(journal.get("file"), str):
            return None
        try:
            records = Journal(self.csv.parent / journal["file"], RESPONSES_FORMAT).records().values()
        except (UserError, OSError, ValueError):
            return None
        wanted = (self.manifest.get("inference_mode"), self.manifest.get("task_format"))
        by_problem: dict[str, list[dict]] = {}
        for rec in records:
            item = rec.get("item") or {}
            if (item.get("mode"), item.get("format")) == wanted and isinstance(rec.get("response"), dict):
                by_problem.setdefault(str(rec["problem_id"]), []).append(rec["response"])
        return {pid: found[0] for pid, found in by_problem.items() if len(found) == 1}

    @cached_property
    def judge_accuracies(self) -> dict | None:
        """From the judge's journals; None where the record is incomplete (scoring then reads the JSON)."""
        try:
            return journaled_accuracies(self)
        except (OSError, ValueError, KeyError, TypeError, AttributeError, UserError):
            return None

    @property
    def known(self) -> bool:
        """False when spec §4.3 knows no such model (evaluate_EM and stratify print ``Skipping``)."""
        return self.identity.scoring_name != UNKNOWN

    @property
    def unknown_reason(self) -> str:
        manifest = naming.manifest_path(self.path)
        tag = self.tag or naming.result_stem(self.path.name).removeprefix("result_") or "NAME"
        why = ("its manifest names no model" if self.manifest is not None else
               f"no manifest beside it ({manifest.name}) and the original's file-name rules know no model in its "
               "name")
        return (f"{self.path.name}: not scored: {why}; to score it, write {manifest.name} holding "
                f'{{"model": {{"model_id": "{tag}"}}}} (smmile runs write one), or rename the file after a paper '
                "model's tag (result_<tag>_<0-shot|ICL>[_mcqa].csv, e.g. result_qwen7B_ICL_open.csv) if it is one")

    @property
    def scoring_key(self) -> str:  # the key of evaluate_EM's results and of stratify's JSON
        return f"{self.identity.scoring_name}:{self.mode}"

    def __fspath__(self) -> str:
        return os.fspath(self.path)


def journaled_accuracies(result: RunRecord) -> dict | None:
    """The CSV's rows planned, looked up in each judge's journal (the judge record names them) and combined as
    the judge did; None unless the CSV holds the bytes judged and every journal answers every row."""
    csv = result.csv
    record = json.loads(naming.judge_record_path(csv).read_text(encoding="utf-8"))
    identity, journals = record["judge"], record["journals"]
    panel = identity["jury"] if identity["backend"] == "jury" else [identity]
    if len(panel) != len(journals) or record["result_sha256"] != content_sha256(read_csv_bytes(os.fspath(csv))):
        return None
    frame = exclude_problems(result.rows)[0]
    judges, per_judge = [], []
    for who, journal in zip(panel, journals):
        judges.append(JudgeSettings(who["backend"], who["model"], protocol=who["protocol"],
                                    seed=who["options"].get("seed", 0), max_tokens=who["options"].get("max_tokens")))
        records = Journal(csv.parent / journal, RESPONSES_FORMAT).records()
        per_judge.append(judgements(plan_frame(frame, judges[-1]), records, set(), judges[-1], set()))
        if judges[-1].options() != who["options"] or any(j.status == FAILED for j in per_judge[-1]):
            return None
    judged = verdicts(per_judge, [label(s) for s in judges])
    return problem_accuracies(frame, [j.value == 1 for j in judged])


def manifest_of(path: str | os.PathLike) -> tuple[dict | None, str | None]:
    """(manifest, None), (None, None) when there is none, or (None, reason) when it is unreadable."""
    manifest = naming.manifest_path(path)
    if not manifest.is_file():
        return None, None
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        return data, None
    except (OSError, ValueError) as exc:
        return None, str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def _name_mode(name: str, rules: str) -> str:
    return (naming.extract_model_info(name) if rules == "variance" else naming.get_model_info(name)).mode


def _name_fmt(name: str) -> str:
    return "mcqa" if naming.result_stem(name).endswith("_mcqa") else "open"


def _manifest_tag(manifest: dict) -> str | None:
    model = manifest.get("model") if isinstance(manifest.get("model"), dict) else {}
    return next((model[k] for k in ("tag", "preset") if isinstance(model.get(k), str) and model[k]), None)


def result_for_path(path: str | os.PathLike, rules: str = "scoring",
                    warn: Callable[[str], None] = log.warning) -> RunRecord:
    """Identify one file: its manifest, else the file-name ``rules``; an unreadable manifest is reported."""
    if rules not in RULES:
        raise ValueError(f"rules must be one of {RULES}, not {rules!r}")
    path = Path(path)
    name = path.name
    manifest, reason = manifest_of(path)
    if reason is not None:
        warn(f"warning: {naming.manifest_path(path)}: unreadable manifest ({reason}); {name} is identified by its "
             "file name")
    identity = identity_from_manifest(manifest) if manifest else None
    if identity is None:
        return RunRecord(path, naming.identity_from_name(name), _name_mode(name, rules), _name_fmt(name),
                         manifest, naming.file_tag(name))
    mode, fmt = manifest.get("inference_mode"), manifest.get("task_format")
    return RunRecord(path, identity, mode if mode in MODES else _name_mode(name, rules),
                     fmt if fmt in FORMATS else _name_fmt(name), manifest,
                     _manifest_tag(manifest) or naming.file_tag(name))


def _is_candidate(path: str, patterned: bool) -> bool:
    name = os.path.basename(path)
    if _SHARD.search(name) or _REPLACED.search(name) or name in OWN_OUTPUTS:
        return False
    return patterned or name.startswith("result_") or naming.manifest_path(path).is_file()


def _candidates(results_dir, patterns: Sequence[str] | None, sort: bool) -> list[str]:
    found: list[str] = []
    for pattern in patterns if patterns is not None else ("*.csv",):
        hits = glob.glob(os.path.join(os.fspath(results_dir), pattern))
        found.extend(sorted(hits) if sort else hits)
    return [p for p in dict.fromkeys(found) if _is_candidate(p, patterns is not None)]


def _preferred(first: RunRecord, second: RunRecord) -> RunRecord:
    if (first.manifest is None) != (second.manifest is None):
        return first if first.manifest is not None else second
    return max(first, second, key=lambda r: (r.path.name, os.fspath(r.path)))


def _dedupe(results: list[RunRecord], rules: str, warn: Callable[[str], None]) -> list[RunRecord]:
    out: list[RunRecord] = []
    position: dict[tuple[str, str, str], int] = {}
    for result in results:
        slot = (result.identity.key, result.mode, result.fmt)
        if (result.identity.key if rules == "variance" else result.identity.scoring_name) == UNKNOWN:
            out.append(result)
        elif slot not in position:
            position[slot] = len(out)
            out.append(result)
        else:
            i = position[slot]
            kept = _preferred(out[i], result)
            warn(f"warning: {out[i].path} and {result.path} are both results of {slot[0]} ({slot[1]}, {slot[2]}); "
                 f"using {kept.path}")
            out[i] = kept
    return out


def load_results(results_dir: str | os.PathLike, *, patterns: Sequence[str] | None = None, sort: bool = True,
                 rules: str = "scoring", warn: Callable[[str], None] = log.warning) -> list[RunRecord]:
    """The results of ``results_dir`` in discovery order. ``patterns`` (globs, e.g. ``naming.em_patterns``) keep
    the original's selection and order (``sort=False``: ``glob.glob``'s order, as variance_analysis)."""
    results = [result_for_path(p, rules, warn) for p in _candidates(results_dir, patterns, sort)]
    return _dedupe([r for r in results if not (r.manifest or {}).get("shard")], rules, warn)


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
    found = load_results(results_dir, patterns=patterns) or load_results(".", patterns=patterns)
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

    def warn(self, message: str, printed: bool = False) -> None:
        """A warning that also makes the exit status 1 (logged unless ``printed`` already)."""
        if not printed:
            log.warning(message)
        self.failed.append(message)

    @property
    def exit_code(self) -> int:
        return 1 if self.failed else 0

    def summary(self) -> str | None:
        n = len(self.failed)
        return f"{n} file(s) skipped or output(s) kept because of errors (see above)." if n else None


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


def _per_problem(scores: pd.Series, path, warn) -> pd.Series:
    if not scores.index.has_duplicates:
        return scores
    duplicated = scores.index[scores.index.duplicated()].unique()
    warn(f"warning: {path}: {len(duplicated)} problem id(s) appear more than once (first: {duplicated[0]}); "
         "their rows are averaged into one score per problem")
    return scores.groupby(level=0, sort=False).mean()


def result_records(result: RunRecord, frame: pd.DataFrame, warn: Callable[[str], None]) -> list[Record]:
    """The records of one result: MCQA, or EM plus the judge when it was run."""
    gold = None if "true_answer" not in frame.columns else pd.Series(
        frame["true_answer"].to_numpy(), index=frame["problem_id"].astype(str)).groupby(level=0, sort=False).first()
    failures = metrics.failure_series(frame, result).groupby(level=0, sort=False).first()
    records = []
    for metric in metrics.metrics_for(result.fmt):
        try:
            scores = metrics.metric_scores(result, metric, frame=frame)
        except ResultFileError as exc:
            if metric.source != "judge":
                raise
            warn(f"warning: {exc}; {metric.name} skipped")  # the file's other metrics are still scored
            continue
        judged = naming.evaluationllm_json_path(result.csv)
        if scores is not None and scores.empty:
            warn(f"warning: {judged}: no scored problem; {metric.name} skipped")
        elif scores is not None:
            scores = _per_problem(scores, result.csv if metric.source == "csv" else judged, warn)
            records.append(Record(result.identity.key, metric.name, result.mode, os.fspath(result.csv),
                                  scores, gold, result, frame, failures))
    return records


def judge_only_records(directory: str, found: list[RunRecord], warn, inform) -> list[Record]:
    """Judge JSONs without their result CSV, scored from ``problem_accuracies`` with a warning."""
    have = {os.path.abspath(naming.evaluationllm_json_path(r.csv)) for r in found}
    records = []
    for json_path in sorted(glob.glob(os.path.join(directory, "*_evaluationllm.json"))):
        csv_path = json_path[: -len("_evaluationllm.json")] + ".csv"
        if os.path.abspath(json_path) in have or os.path.exists(csv_path):
            continue  # scored with its CSV, or a CSV skipped for its own reason (already named)
        result = result_for_path(csv_path, rules="variance", warn=warn)
        try:
            scores = metrics.judge_scores(result)
        except ResultFileError as exc:
            warn(f"warning: {json_path}: judge results without their result CSV, and no usable per-problem "
                 f"scores ({exc}); left out")
            continue
        if result.mode not in MODES or scores is None or scores.empty:
            warn(f"warning: {json_path}: judge results without their result CSV "
                 f"({'no 0-shot/ICL mode' if result.mode not in MODES else 'no problem_accuracies'}); left out")
            continue
        inform(f"warning: {json_path}: no result CSV ({os.path.basename(csv_path)}); the judge metric is "
                         f"scored from the JSON's problem_accuracies ({len(scores)} problems); failures and gold "
                         "answers unknown")
        scores = _per_problem(scores, json_path, warn)
        records.append(Record(result.identity.key, metrics.LLM.name, result.mode, json_path, scores, None, result))
    return records


def load_records(directory: str, warn=None, inform=None) -> list[Record]:
    """All scorable results of ``directory`` (variance_analysis's rules), scored; what is skipped goes to ``warn``."""
    warn = warn or log.warning
    found = []
    for result in load_results(directory, rules="variance", warn=warn):
        if result.mode not in MODES:
            warn(f"warning: {result.path}: no 0-shot/ICL mode in the file name or manifest; skipped")
        else:
            found.append(result)
    frames, failures = screen(found, lambda r: r.rows, problem_count)
    for message in failures.values():
        warn(f"warning: {message.removesuffix('; not scored')}; skipped")
    records = []
    for result in found:
        if result.path in frames:
            try:
                records += result_records(result, frames[result.path], warn)
            except ResultFileError as exc:
                warn(f"warning: {exc}; skipped")
    return records + judge_only_records(directory, found, warn, inform or warn)


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


def records_of(path: str | os.PathLike, warn=None) -> list[Record]:
    """The records of a results folder, or of one result CSV; a file that cannot be scored is a UserError."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise UserError(f"results {path} not found")
    warn = warn or log.warning
    try:
        if os.path.isdir(path):
            return load_records(path, warn)
        result = result_for_path(path, rules="variance", warn=warn)
        if result.mode not in MODES:
            raise ResultFileError(f"{path}: no 0-shot/ICL mode (file name or manifest)")
        return result_records(result, result.rows, warn)
    except ResultFileError as exc:
        raise UserError(str(exc)) from None
