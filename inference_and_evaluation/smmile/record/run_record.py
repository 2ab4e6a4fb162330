"""One result (``RunRecord``) and ``scan``, the one way to find them: the manifest, the rows, the journaled
responses (with the request as sent), the judge's verdicts. Without a run record (the published outputs, runs of the
original code) a CSV is identified by the original's file-name rules (``record.naming``) and its judge scores come
from the original's files (``record.original``). Never found: shards, CSVs the runner moved aside, our own
``stats_*.csv``. Of two files of one (model, mode, format) the one with a manifest (else the name sorting last) is
kept, with a warning."""

from __future__ import annotations

import glob
import json
import logging
import os
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Sequence

from smmile.errors import UserError
from smmile.identity import UNKNOWN, ModelIdentity
from smmile.models.registry import identity_from_manifest
from smmile.protocol.outputs import SCORED
from smmile.record import naming, original, verdicts as verdicts_file
from smmile.record.result_csv import ResultFileError, csv_sha256, read_whole
from smmile.runner.executor import RESPONSES_FORMAT, Journal

MODES = ("0-shot", "ICL")
FORMATS = ("open", "mcqa")
RULES = ("scoring", "variance")
COLUMNS = {"open": SCORED, "mcqa": ("problem_id", "is_correct")}  # what scoring needs of each format
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

    def frame(self, columns: Sequence[str] | None = None):
        """The CSV's rows read whole with ``columns`` required (default: its format's); ``ResultFileError``."""
        return read_whole(self.csv, COLUMNS.get(self.fmt, ()) if columns is None else columns)

    @cached_property
    def rows(self):
        return self.frame()

    @cached_property
    def journal(self) -> dict[str, list[dict]] | None:
        """problem_id -> its journal records of the run the manifest describes (its mode and format); None without
        a readable journal."""
        journal = (self.manifest or {}).get("journal")
        if not isinstance(journal, dict) or not isinstance(journal.get("file"), str):
            return None
        path = os.path.normpath(self.csv.parent / journal["file"])
        if not path.startswith(os.path.normpath(self.csv.parent) + os.sep):
            return None
        try:
            records = Journal(path, RESPONSES_FORMAT).records().values()
        except (UserError, OSError, ValueError):
            return None
        wanted = (self.manifest.get("inference_mode"), self.manifest.get("task_format"))
        by_problem: dict[str, list[dict]] = {}
        for rec in records:
            item = rec.get("item") or {}
            if (item.get("mode"), item.get("format")) == wanted and isinstance(rec.get("response"), dict):
                by_problem.setdefault(str(rec["problem_id"]), []).append(rec)
        return by_problem

    @property
    def responses(self) -> dict[str, dict] | None:
        """The journaled response by problem id; a problem with several configurations journaled is left out."""
        if self.journal is None:
            return None
        return {pid: found[0]["response"] for pid, found in self.journal.items() if len(found) == 1}

    @cached_property
    def judgement(self) -> dict | None:
        """The judge's verdicts on the CSV as it is now (``record.verdicts``), or None."""
        try:
            return verdicts_file.read(self.csv, csv_sha256(self.csv))
        except ResultFileError:
            return None

    @cached_property
    def judge_accuracies(self) -> dict | None:
        """problem_id -> the judge's accuracy ×100: the recorded verdicts, else the original's
        ``_evaluationllm.json`` if it judged this CSV's rows; None when no judge scored them; ``ResultFileError``
        for an export that cannot be used."""
        if self.judgement is not None:
            return self.judgement["problem_accuracies"]
        judged = original.exported(self.csv, "llm")
        if judged is None:
            return None
        try:
            frame = self.rows
        except ResultFileError:  # an unreadable CSV is not compared
            frame = None
        original.check_judgement(self.csv, judged, frame)
        return judged["problem_accuracies"]

    @cached_property
    def verdicts(self) -> dict[str, dict[str, float]]:
        """``verdicts[judge][problem_id]``: each judge's 0/1 (NaN: none), a jury's own as ``jury``; {} unless a
        judge recorded them (else the replies file of an earlier judge run)."""
        return verdicts_file.by_judge(self._judge_rows())

    @cached_property
    def replies(self) -> dict[str, tuple]:
        """problem_id -> (the judge's reply, its status)."""
        return verdicts_file.replies(self._judge_rows())

    @cached_property
    def jury(self) -> dict[str, list[dict]]:
        """problem_id -> each jury member's reply and vote (``record.verdicts.members``); {} for one judge."""
        return verdicts_file.members(self._judge_rows())

    def judges(self) -> list[str]:
        """Who judged the rows (``BACKEND:MODEL``, a jury's members); [] when unrecorded."""
        if self.judgement is not None:
            return verdicts_file.judges(self.judgement.get("judge"))
        named = dict.fromkeys(label for rec in self._judge_rows() for label in verdicts_file.judges(rec))
        return list(named) or verdicts_file.judges((original.judge_record(self.csv) or {}).get("judge"))

    def _judge_rows(self) -> list[dict]:
        if self.judgement is not None:
            return self.judgement["rows"]
        try:
            return list(original.reply_records(self.csv))
        except (OSError, ValueError):
            return []

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


def read(path: str | os.PathLike, rules: str = "scoring") -> RunRecord:
    """Identify one file: its manifest, else the file-name ``rules``; an unreadable manifest is reported."""
    if rules not in RULES:
        raise ValueError(f"rules must be one of {RULES}, not {rules!r}")
    path = Path(path)
    name = path.name
    manifest, reason = manifest_of(path)
    if reason is not None:
        log.warning(f"warning: {naming.manifest_path(path)}: unreadable manifest ({reason}); {name} is identified by "
                    "its file name")
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


def _dedupe(results: list[RunRecord], rules: str) -> list[RunRecord]:
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
            log.warning(f"warning: {out[i].path} and {result.path} are both results of {slot[0]} ({slot[1]}, "
                        f"{slot[2]}); using {kept.path}")
            out[i] = kept
    return out


def scan(results_dir: str | os.PathLike, *, patterns: Sequence[str] | None = None, sort: bool = True,
         rules: str = "scoring") -> list[RunRecord]:
    """The results of ``results_dir`` in discovery order. ``patterns`` (globs, e.g. ``naming.em_patterns``) keep
    the original's selection and order (``sort=False``: ``glob.glob``'s order, as variance_analysis)."""
    results = [read(p, rules) for p in _candidates(results_dir, patterns, sort)]
    return _dedupe([r for r in results if not (r.manifest or {}).get("shard")], rules)


def judge_only(results_dir: str | os.PathLike, found: Sequence[RunRecord]) -> list[RunRecord]:
    """The results of ``results_dir`` known only by their judge export (``<stem>_evaluationllm.json`` without its
    CSV; the paper's SMMILE++ folder has one), identified by variance_analysis's file-name rules."""
    have = {os.path.abspath(naming.evaluationllm_json_path(r.csv)) for r in found}
    out = []
    for json_path in sorted(glob.glob(os.path.join(os.fspath(results_dir), "*_evaluationllm.json"))):
        csv_path = json_path[: -len("_evaluationllm.json")] + ".csv"
        if os.path.abspath(json_path) not in have and not os.path.exists(csv_path):
            out.append(read(csv_path, rules="variance"))
    return out
