"""The run record's file names: the original's file-name rules as tables (for files without a run manifest:
§4.3's ``get_model_info``, §7.2's ``extract_model_info``, both in ``identity_from_name``), the glob patterns of
each scoring script and the names of the files written beside a result CSV.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from smmile.identity import BY_KEY, UNKNOWN, ModelIdentity, identity_for_tag, latex_for_key
from smmile.protocol.outputs import QUESTION as QUESTION_COLUMNS

# §4.3: the first marker contained in the basename gives the mode
_MODES_BASIC = (("_0-shot", "0-shot"), ("_ICL", "ICL"))
_MODES_FEW_SHOT = _MODES_BASIC + (("_few-shot", "ICL"),)
_MODES_QWEN = _MODES_FEW_SHOT + (("_with_answers", "ICL"),)
_MODES_BASELINE = (("_ICL", "ICL"),)


@dataclass(frozen=True)
class ModelRule:
    """A §4.3 row: ``token`` in the basename means the scoring name of ``tag`` (the tag itself outside the paper)."""

    token: str
    tag: str | None = None  # default: the token
    modes: tuple[tuple[str, str], ...] = _MODES_BASIC
    ignore_case: bool = False
    size_regex: str | None = None  # qwen: "qwen" + first match of this regex (e.g. "72B")

    def matches(self, basename: str) -> bool:
        return self.token.lower() in basename.lower() if self.ignore_case else self.token in basename

    def display_name(self, basename: str) -> str:
        display = identity_for_tag(self.tag or self.token).scoring_name
        found = re.search(self.size_regex, basename, flags=re.IGNORECASE) if self.size_regex else None
        return display + found.group(1) if found else display

    def mode(self, basename: str) -> str:
        return next((mode for marker, mode in self.modes if marker in basename), UNKNOWN)


# First matching rule wins (order matters: e.g. `llava_7b` before `llavamed`).
MODEL_RULES: tuple[ModelRule, ...] = (
    ModelRule("llama32_vision_90b", modes=_MODES_FEW_SHOT),
    ModelRule("qwen", modes=_MODES_QWEN, ignore_case=True, size_regex=r"qwen(\d+B)"),
    ModelRule("llava_7b"),
    ModelRule("llavamed"),
    ModelRule("llava_13b"),
    ModelRule("llavanext_7b"),
    ModelRule("llavaonevision_7b"),
    ModelRule("llavaonevision_0.5b"),
    ModelRule("llama33textonly"),
    ModelRule("random", modes=_MODES_BASELINE),
    ModelRule("majority", modes=_MODES_BASELINE),
    ModelRule("aya_vision_32b", modes=_MODES_FEW_SHOT),
    ModelRule("llama4_17b", modes=_MODES_FEW_SHOT),
    ModelRule("gpt-4o", modes=_MODES_FEW_SHOT),
    ModelRule("claude-3-7-sonnet", modes=_MODES_FEW_SHOT),
    ModelRule("MedVLM-R1", modes=_MODES_FEW_SHOT),
    ModelRule("medgemma", "medgemma_4b", _MODES_FEW_SHOT),
)


@dataclass(frozen=True)
class ModelInfo:
    model: str  # §4.3: the scoring name; §7.2: the row key (``qwen72B``, ``text only``)
    mode: str


def get_model_info(filename: str | os.PathLike) -> ModelInfo:
    """Spec §4.3; no rule → model and mode ``unknown``."""
    basename = os.path.basename(os.fspath(filename))
    rule = next((r for r in MODEL_RULES if r.matches(basename)), None)
    return ModelInfo(rule.display_name(basename), rule.mode(basename)) if rule else ModelInfo(UNKNOWN, UNKNOWN)


_VARIANCE_REGEX = re.compile(r"result_(.+?)_(0-shot|ICL|few-shot)")


def file_tag(filename: str | os.PathLike) -> str:
    """The model token of a result file name (spec §7.2's regex); "" if none."""
    found = _VARIANCE_REGEX.search(os.path.basename(os.fspath(filename)))
    return found.group(1) if found else ""


def extract_model_info(filename: str | os.PathLike) -> ModelInfo:
    basename = os.path.basename(os.fspath(filename))
    tag = file_tag(basename)
    mode = next((m for marker, m in _MODES_FEW_SHOT if marker in basename), UNKNOWN)
    return ModelInfo(identity_for_tag(tag).key if tag else UNKNOWN, mode)


def identity_from_name(filename: str | os.PathLike) -> ModelIdentity:
    """``key`` from §7.2, ``scoring_name`` from §4.3 (either may be ``unknown``), ``display`` from the paper's
    table for a known key, else the key."""
    key = extract_model_info(filename).model
    display = BY_KEY[key].display if key in BY_KEY else key
    return ModelIdentity(key, get_model_info(filename).model, display, latex_for_key(key))


# §4.2 / §5 / §6 glob patterns: suffixes after ``result_<model>_``, per filter combination
_SUFFIXES_MODEL_ONLY = ("0-shot", "0-shot_open", "ICL", "ICL_open", "few-shot")
_SUFFIXES_ALL = ("0-shot", "0-shot_open", "ICL", "ICL_open", "few-shot", "with_answers")


def _suffixes(model: str | None, mode: str | None, both: tuple[str, ...]) -> list[tuple[str, str]]:
    if model and mode:
        return [(model, s) for s in both]
    if model:
        return [(model, s) for s in _SUFFIXES_MODEL_ONLY]
    if mode:
        return [("*", s) for s in (mode, f"{mode}_open") + (("few-shot",) if mode == "ICL" else ())]
    return [("*", s) for s in _SUFFIXES_ALL]


def em_patterns(model: str | None = None, mode: str | None = None) -> list[str]:
    """§4.2 (evaluate_EM): with model and mode only ``result_<model>_<mode>.csv`` (no ``_open``)."""
    both = (mode,) if mode else ()
    return [f"result_{m}_{s}.csv" for m, s in _suffixes(model, mode, both)]


def judge_patterns(model: str | None = None, mode: str | None = None) -> list[str]:
    """§5 (evaluate_LLMJudge): as §4.2, but model + mode also globs the ``_open`` variant."""
    both = (mode, f"{mode}_open") if mode else ()
    return [f"result_{m}_{s}.csv" for m, s in _suffixes(model, mode, both)]


def stratify_patterns(ext: str, model: str | None = None, mode: str | None = None) -> list[str]:
    """§6 (stratify), ``ext`` = ``evaluation`` or ``evaluationllm``. Deviation (docs/deviations.md, Scoring):
    with model + mode the original globbed a CSV and failed to parse it as JSON; we glob the JSONs."""
    both = (mode, f"{mode}_open") if mode else ()
    return [f"result_{m}_{s}_{ext}.json" for m, s in _suffixes(model, mode, both)]


def _stem(csv_path: str | os.PathLike) -> str:
    text = os.fspath(csv_path)
    return text[: -len(".csv")] if text.endswith(".csv") else text


def result_stem(path: str | os.PathLike) -> str:
    """``d/result_x_ICL`` for ``d/result_x_ICL.csv`` and for the files scoring writes beside it."""
    text = os.fspath(path)
    beside = ("_evaluationllm.json", "_evaluation.json", "_judgements.jsonl", ".manifest.json", ".csv")
    suffix = next((s for s in beside if text.endswith(s)), "")
    return text[: len(text) - len(suffix)]


def manifest_path(path: str | os.PathLike) -> Path:
    """The run manifest of a result CSV (or of a file scoring wrote beside it)."""
    return Path(result_stem(path) + ".manifest.json")


def evaluation_json_path(csv_path: str | os.PathLike) -> Path:
    return Path(_stem(csv_path) + "_evaluation.json")


def evaluationllm_json_path(csv_path: str | os.PathLike) -> Path:
    return Path(_stem(csv_path) + "_evaluationllm.json")


def judge_record_path(csv_path: str | os.PathLike) -> Path:
    """Which judge wrote the ``_evaluationllm.json``, from which journals, on which CSV content."""
    return Path(_stem(csv_path) + "_evaluationllm.manifest.json")


def judgements_path(csv_path: str | os.PathLike) -> Path:
    return Path(_stem(csv_path) + "_judgements.jsonl")


def verdicts_path(csv_path: str | os.PathLike) -> Path:
    """The judge's verdicts on the rows of a result CSV, beside its run's journal (the record, not an export)."""
    path = Path(csv_path)
    return path.parent / ".smmile" / (Path(_stem(path)).name + ".verdicts.json")


def question_column(columns: Iterable[str]) -> str:
    """The question column of a result frame or column list (§3.15: MedVLM-R1's is ``original_question``)."""
    present = set(columns)
    for name in QUESTION_COLUMNS:
        if name in present:
            return name
    raise KeyError(f"no question column (expected one of {', '.join(QUESTION_COLUMNS)})")
