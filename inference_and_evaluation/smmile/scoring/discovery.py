"""Which files a scoring command scores, and whose results they are (one discovery function).

``find_results`` lists the result files of a folder as ``ResultFile``s:

* **Identity from the run manifest first.** ``<stem>.manifest.json`` beside the CSV (written by every
  smmile run and by ``smmile merge``) names the model (``model.identity``, else the preset, tag or model
  id: ``smmile.identity.identity_from_manifest``), the mode (``inference_mode``), the format
  (``task_format``) and the dataset. Only files without a manifest (the published outputs) are
  identified by the original's file-name rules (``scoring.naming``): ``rules="scoring"`` applies spec
  §4.3 (evaluate_EM, evaluate_LLMJudge, stratify), ``rules="variance"`` spec §7.2 (variance_analysis,
  ``smmile stats``); the two differ only in the mode of unusual names (``_few-shot``,
  ``_with_answers``, a baseline's ``_0-shot``) and in which names are ``unknown``.
* **Never** a shard (``*.shard-<i>-of-<N>*``, or a manifest with a ``shard``: ``smmile merge`` joins
  them into the result), one of
  our own outputs (``stats_*.csv``), or, without ``patterns``, a CSV that is neither named
  ``result_*.csv`` nor has a manifest.
* **Two files for one (model key, mode, format)**: a warning naming both, and one is kept, in the
  position of the first: a file with a manifest over one without, else the one whose name sorts last
  (``result_x_ICL_open.csv`` over ``result_x_ICL.csv``, which is also the file whose scores the
  original's later-file-overwrites rule ended up with).

``patterns`` (globs relative to the folder, e.g. ``naming.em_patterns``) keep the original's selection
and order: matches of each pattern in turn, sorted within a pattern (``sort=False``: ``glob.glob``'s
file-system order, as variance_analysis faithfully uses). They may match result CSVs or the
``_evaluation(llm).json`` files scoring wrote beside them (stratify); either way the manifest is
``<stem>.manifest.json``.
"""

from __future__ import annotations

import glob
import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from smmile.identity import UNKNOWN, ModelIdentity, identity_from_manifest
from smmile.scoring import naming

MODES = ("0-shot", "ICL")
FORMATS = ("open", "mcqa")
RULES = ("scoring", "variance")
OWN_OUTPUTS = ("stats_estimates.csv", "stats_comparisons.csv")
_SHARD = re.compile(r"\.shard-\d+-of-\d+")
_REPLACED = re.compile(r"\.replaced-\d{8}T\d{6}(-\d+)?\.csv$")  # a CSV the runner moved aside (runner.run)


def print_to_stderr(message: str) -> None:
    print(message, file=sys.stderr)


@dataclass(frozen=True)
class ResultFile:
    """One result: ``path`` is the file found (a CSV, or the JSON stratify reads)."""

    path: Path
    identity: ModelIdentity
    mode: str  # "0-shot" | "ICL" (or "unknown" for a file-name-identified file without a mode marker)
    fmt: str  # "open" | "mcqa"
    manifest: dict | None = None
    dataset: str | None = None  # the manifest's dataset id
    tag: str = ""  # the model token of its file name (manifest: model.tag)

    @property
    def csv(self) -> Path:
        """The result CSV (for a JSON found by stratify: the CSV it was scored from)."""
        return Path(naming.result_stem(self.path) + ".csv")

    @property
    def known(self) -> bool:
        """False when spec §4.3 knows no such model (evaluate_EM and stratify print ``Skipping``)."""
        return self.identity.scoring_name != UNKNOWN

    @property
    def unknown_reason(self) -> str:
        """Why an unknown file (``not self.known``) is skipped and what makes it scorable, in one line."""
        manifest = naming.manifest_path(self.path)
        tag = self.tag or naming.result_stem(self.path.name).removeprefix("result_") or "NAME"
        why = ("its manifest names no model" if self.manifest is not None else
               f"no manifest beside it ({manifest.name}) and the original's file-name rules know no model in its "
               "name")
        return (f"{self.path.name}: not scored: {why}; to score it, write {manifest.name} holding "
                f'{{"model": {{"model_id": "{tag}"}}}} (smmile runs write one), or rename the file after a paper '
                "model's tag (result_<tag>_<0-shot|ICL>[_mcqa].csv, e.g. result_qwen7B_ICL_open.csv) if it is one")

    @property
    def scoring_key(self) -> str:
        """``<scoring name>:<mode>``: the key of evaluate_EM's results and of stratify's JSON."""
        return f"{self.identity.scoring_name}:{self.mode}"

    @property
    def slot(self) -> tuple[str, str, str]:
        return (self.identity.key, self.mode, self.fmt)

    def __fspath__(self) -> str:
        return os.fspath(self.path)


def read_manifest(path: str | os.PathLike, warn: Callable[[str], None] = print_to_stderr) -> dict | None:
    """The run manifest beside ``path``; None if there is none. An unreadable one is reported through
    ``warn`` and ignored (the file is then identified by its name)."""
    manifest = naming.manifest_path(path)
    if not manifest.is_file():
        return None
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        return data
    except (OSError, ValueError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        warn(f"warning: {manifest}: unreadable manifest ({reason}); {os.path.basename(path)} is identified "
             "by its file name")
        return None


def _name_mode(name: str, rules: str) -> str:
    return (naming.extract_model_info(name) if rules == "variance" else naming.get_model_info(name)).mode


def _name_fmt(name: str) -> str:
    return "mcqa" if naming.result_stem(name).endswith("_mcqa") else "open"


def _manifest_value(manifest: dict, key: str, allowed: Sequence[str]) -> str | None:
    value = manifest.get(key)
    return value if value in allowed else None


def _manifest_tag(manifest: dict) -> str | None:
    model = manifest.get("model")
    if isinstance(model, dict):
        for key in ("tag", "preset"):
            if isinstance(model.get(key), str) and model[key]:
                return model[key]
    return None


def _manifest_dataset(manifest: dict) -> str | None:
    dataset = manifest.get("dataset")
    if isinstance(dataset, dict) and dataset.get("id") is not None:
        return str(dataset["id"])
    return dataset if isinstance(dataset, str) else None


def result_for_path(path: str | os.PathLike, rules: str = "scoring",
                    warn: Callable[[str], None] = print_to_stderr) -> ResultFile:
    """Identify one file: its manifest, else the file-name ``rules`` ("scoring" §4.3, "variance" §7.2)."""
    if rules not in RULES:
        raise ValueError(f"rules must be one of {RULES}, not {rules!r}")
    path = Path(path)
    name = path.name
    manifest = read_manifest(path, warn)
    identity = identity_from_manifest(manifest) if manifest else None
    if identity is None:
        return ResultFile(path, naming.identity_from_name(name), _name_mode(name, rules), _name_fmt(name),
                          manifest, _manifest_dataset(manifest) if manifest else None, naming.file_tag(name))
    return ResultFile(path, identity, _manifest_value(manifest, "inference_mode", MODES) or _name_mode(name, rules),
                      _manifest_value(manifest, "task_format", FORMATS) or _name_fmt(name), manifest,
                      _manifest_dataset(manifest), _manifest_tag(manifest) or naming.file_tag(name))


def _is_candidate(path: str, patterned: bool) -> bool:
    name = os.path.basename(path)
    if _SHARD.search(name) or _REPLACED.search(name) or name in OWN_OUTPUTS:
        return False
    return patterned or name.startswith("result_") or naming.manifest_path(path).is_file()


def _candidates(results_dir, patterns: Sequence[str] | None, sort: bool) -> list[str]:
    base = os.fspath(results_dir)
    found: list[str] = []
    for pattern in patterns if patterns is not None else ("*.csv",):
        hits = glob.glob(os.path.join(base, pattern))
        found.extend(sorted(hits) if sort else hits)
    unique = list(dict.fromkeys(found))
    return [p for p in unique if _is_candidate(p, patterns is not None)]


def _identified(result: ResultFile, rules: str) -> bool:
    return (result.identity.key if rules == "variance" else result.identity.scoring_name) != UNKNOWN


def _preferred(first: ResultFile, second: ResultFile) -> ResultFile:
    """A file with a manifest over one without; else the one whose name sorts last."""
    if (first.manifest is None) != (second.manifest is None):
        return first if first.manifest is not None else second
    return max(first, second, key=lambda r: (r.path.name, os.fspath(r.path)))


def _dedupe(results: list[ResultFile], rules: str, warn: Callable[[str], None]) -> list[ResultFile]:
    out: list[ResultFile] = []
    position: dict[tuple[str, str, str], int] = {}
    for result in results:
        if not _identified(result, rules):
            out.append(result)
            continue
        if result.slot not in position:
            position[result.slot] = len(out)
            out.append(result)
            continue
        i = position[result.slot]
        kept = _preferred(out[i], result)
        key, mode, fmt = result.slot
        warn(f"warning: {out[i].path} and {result.path} are both results of {key} ({mode}, {fmt}); "
             f"using {kept.path}")
        out[i] = kept
    return out


def _wanted(result: ResultFile, model: str | None, mode: str | None, fmt: str | None) -> bool:
    names = (result.identity.key, result.identity.scoring_name, result.tag)
    return (model is None or model in names) and (mode is None or result.mode == mode) and \
        (fmt is None or result.fmt == fmt)


def find_results(results_dir: str | os.PathLike, *, model: str | None = None, mode: str | None = None,
                 fmt: str | None = None, patterns: Sequence[str] | None = None, sort: bool = True,
                 rules: str = "scoring", warn: Callable[[str], None] = print_to_stderr) -> list[ResultFile]:
    """The result files of ``results_dir`` (module docstring), in discovery order.

    ``model`` matches a file's identity key, scoring name or file tag; ``mode`` ("0-shot"/"ICL") and
    ``fmt`` ("open"/"mcqa") its mode and format. ``warn`` receives one line per duplicate and per
    unreadable manifest.
    """
    if rules not in RULES:
        raise ValueError(f"rules must be one of {RULES}, not {rules!r}")
    results = [result_for_path(p, rules, warn) for p in _candidates(results_dir, patterns, sort)]
    results = [r for r in results if not (r.manifest or {}).get("shard") and _wanted(r, model, mode, fmt)]
    return _dedupe(results, rules, warn)
