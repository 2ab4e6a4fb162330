"""Result-file naming: model/mode parsing, glob patterns and per-file output names.

Everything the original recovered from file names with if/elif chains lives here as tables:

* ``get_model_info`` — spec §4.3 (evaluate_EM, evaluate_LLMJudge, stratify): display name + mode.
* ``extract_model_info`` — spec §7.2 (variance_analysis): raw model token + mode + Open/Closed;
  ``file_tag`` — the file-name model token its regex finds.
* ``identity_from_name`` — both, as a ``smmile.identity.ModelIdentity`` (names from the one table of
  the paper's models). These rules only identify files WITHOUT a run manifest: ``scoring.results``
  reads the manifest first.
* ``em_patterns`` / ``judge_patterns`` / ``stratify_patterns`` — spec §4.2, §5, §6 glob lists
  (``scoring.results.load_results`` globs them; ``find_result_files`` adds the current-directory fallback).
* ``evaluation_json_path`` / ``evaluationllm_json_path`` — per-file output names (§4.5, §5), with the
  judge's record ``judge_record_path``;
  ``result_stem`` / ``manifest_path`` — back from any of them to the result's stem and manifest.
* ``question_column`` — the question column of a result frame (§3.15: MedVLM-R1 uses
  ``original_question``).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from smmile.identity import BY_KEY, UNKNOWN, ModelIdentity, identity_for_tag, latex_for_key
from smmile.protocol.columns import QUESTION as QUESTION_COLUMNS

# -- §4.3: mode markers ---------------------------------------------------------------------------
# Each tuple is checked in order; the first marker contained in the basename gives the mode.
_MODES_BASIC = (("_0-shot", "0-shot"), ("_ICL", "ICL"))
_MODES_FEW_SHOT = _MODES_BASIC + (("_few-shot", "ICL"),)
_MODES_QWEN = _MODES_FEW_SHOT + (("_with_answers", "ICL"),)
_MODES_BASELINE = (("_ICL", "ICL"),)


@dataclass(frozen=True)
class ModelRule:
    """One row of the §4.3 table: if ``token`` occurs in the basename, the model is the scoring name of
    ``tag`` (``smmile.identity``; the tag itself for models outside the paper)."""

    token: str
    tag: str | None = None  # default: the token
    modes: tuple[tuple[str, str], ...] = _MODES_BASIC
    ignore_case: bool = False
    size_regex: str | None = None  # qwen: "qwen" + first match of this regex (e.g. "72B")

    @property
    def display(self) -> str:
        return identity_for_tag(self.tag or self.token).scoring_name

    def matches(self, basename: str) -> bool:
        if self.ignore_case:
            return self.token.lower() in basename.lower()
        return self.token in basename

    def display_name(self, basename: str) -> str:
        if self.size_regex is None:
            return self.display
        found = re.search(self.size_regex, basename, flags=re.IGNORECASE)
        return self.display + found.group(1) if found else self.display

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
    """Display name and mode of a result file (§4.3). ``key`` identifies a result."""

    model: str
    mode: str

    @property
    def key(self) -> str:
        return f"{self.model}:{self.mode}"

    @property
    def known(self) -> bool:
        return self.model != UNKNOWN


def get_model_info(filename: str | os.PathLike) -> ModelInfo:
    """Spec §4.3: parse the basename with ``MODEL_RULES``; no rule → model and mode ``unknown``."""
    basename = os.path.basename(os.fspath(filename))
    rule = next((r for r in MODEL_RULES if r.matches(basename)), None)
    if rule is None:
        return ModelInfo(UNKNOWN, UNKNOWN)
    return ModelInfo(rule.display_name(basename), rule.mode(basename))


# -- §7.2: variance_analysis naming ---------------------------------------------------------------
_VARIANCE_REGEX = re.compile(r"result_(.+?)_(0-shot|ICL|few-shot)")
_VARIANCE_MODES = (("_0-shot", "0-shot"), ("_ICL", "ICL"), ("_few-shot", "ICL"))


@dataclass(frozen=True)
class VarianceInfo:
    """Raw model token (``qwen72B``, ``text only``), mode and answer format (``Open``/``Closed``)."""

    model: str
    mode: str
    kind: str

    @property
    def is_closed(self) -> bool:
        return self.kind == "Closed"


def file_tag(filename: str | os.PathLike) -> str:
    """The model token of a result file name (``result_<tag>_<mode>...``, spec §7.2's regex); "" if none."""
    found = _VARIANCE_REGEX.search(os.path.basename(os.fspath(filename)))
    return found.group(1) if found else ""


def extract_model_info(filename: str | os.PathLike) -> VarianceInfo:
    """Spec §7.2 ``extract_model_info``: model, mode and Open/Closed of a result CSV name."""
    basename = os.path.basename(os.fspath(filename))
    tag = file_tag(basename)
    model = identity_for_tag(tag).key if tag else UNKNOWN
    mode = next((m for marker, m in _VARIANCE_MODES if marker in basename), UNKNOWN)
    kind = "Closed" if basename.endswith("_mcqa.csv") else "Open"
    return VarianceInfo(model, mode, kind)


# -- a file's identity from its name (files without a manifest) ----------------------------------------
def identity_from_name(filename: str | os.PathLike) -> ModelIdentity:
    """The identity the original's rules give a result file name: ``key`` from §7.2, ``scoring_name``
    from §4.3 (either may be ``unknown``), ``display`` and ``latex`` from the paper's table for a known
    key, else the key (its LaTeX name as ``tables.latex_name`` always made it)."""
    key = extract_model_info(filename).model
    scoring_name = get_model_info(filename).model
    known = BY_KEY.get(key)
    display = known.display if known else key
    return ModelIdentity(key, scoring_name, display, latex_for_key(key))


# -- §4.2 / §5 / §6: glob patterns ----------------------------------------------------------------
# Suffix lists (after ``result_<model>_``), per filter combination.
_SUFFIXES_MODEL_ONLY = ("0-shot", "0-shot_open", "ICL", "ICL_open", "few-shot")
_SUFFIXES_ALL = ("0-shot", "0-shot_open", "ICL", "ICL_open", "few-shot", "with_answers")


def _mode_suffixes(mode: str) -> tuple[str, ...]:
    return (mode, f"{mode}_open") + (("few-shot",) if mode == "ICL" else ())


def _suffixes(model: str | None, mode: str | None, both: tuple[str, ...]) -> list[tuple[str, str]]:
    """(model glob, suffix) pairs for the four filter combinations."""
    if model and mode:
        return [(model, s) for s in both]
    if model:
        return [(model, s) for s in _SUFFIXES_MODEL_ONLY]
    if mode:
        return [("*", s) for s in _mode_suffixes(mode)]
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
    """§6 (stratify) JSON patterns, ``ext`` = ``evaluation`` or ``evaluationllm``.

    Deviation (docs/deviations.md, Scoring): with model + mode the original globbed a CSV
    (``result_<model>_<mode>.csv``) and then failed to parse it as JSON; we glob the JSONs of
    ``result_<model>_<mode>`` and ``result_<model>_<mode>_open``.
    """
    both = (mode, f"{mode}_open") if mode else ()
    return [f"result_{m}_{s}_{ext}.json" for m, s in _suffixes(model, mode, both)]


# -- per-file output names ------------------------------------------------------------------------
# What scoring writes beside ``<stem>.csv``; ``result_stem`` strips any of these (or ``.csv``).
PER_FILE_SUFFIXES = ("_evaluationllm.json", "_evaluation.json", "_judgements.jsonl", ".manifest.json", ".csv")


def _stem(csv_path: str | os.PathLike) -> str:
    text = os.fspath(csv_path)
    return text[: -len(".csv")] if text.endswith(".csv") else text


def result_stem(path: str | os.PathLike) -> str:
    """``d/result_x_ICL`` for ``d/result_x_ICL.csv`` and for the files scoring writes beside it."""
    text = os.fspath(path)
    suffix = next((s for s in PER_FILE_SUFFIXES if text.endswith(s)), "")
    return text[: len(text) - len(suffix)]


def manifest_path(path: str | os.PathLike) -> Path:
    """``<stem>.manifest.json``: the run manifest of a result CSV (or of a file scoring wrote beside it)."""
    return Path(result_stem(path) + ".manifest.json")


def evaluation_json_path(csv_path: str | os.PathLike) -> Path:
    """``<csv path without .csv>_evaluation.json`` (evaluate_EM)."""
    return Path(_stem(csv_path) + "_evaluation.json")


def evaluationllm_json_path(csv_path: str | os.PathLike) -> Path:
    """``<csv path without .csv>_evaluationllm.json`` (evaluate_LLMJudge)."""
    return Path(_stem(csv_path) + "_evaluationllm.json")


def judge_record_path(csv_path: str | os.PathLike) -> Path:
    """``<stem>_evaluationllm.manifest.json``: which judge wrote the ``_evaluationllm.json``, on which content
    of the CSV (its sha256)."""
    return Path(_stem(csv_path) + "_evaluationllm.manifest.json")


def judgements_path(csv_path: str | os.PathLike) -> Path:
    """``<csv path without .csv>_judgements.jsonl``: raw judge replies (addition)."""
    return Path(_stem(csv_path) + "_judgements.jsonl")


# -- result-CSV columns (§3.15) -------------------------------------------------------------------


def question_column(columns: Iterable[str]) -> str:
    """Name of the question column of a result frame (``final_question``, or MedVLM-R1's
    ``original_question``). Accepts a DataFrame (iterates its columns) or any column list."""
    present = set(columns)
    for name in QUESTION_COLUMNS:
        if name in present:
            return name
    raise KeyError(f"no question column (expected one of {', '.join(QUESTION_COLUMNS)})")
