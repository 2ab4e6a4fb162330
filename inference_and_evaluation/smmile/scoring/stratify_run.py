"""The work of ``stratify.py`` / ``smmile stratify``: accuracy per problem flag (spec §6) of the
``*_evaluation.json`` (``--eval_type em``) or ``*_evaluationllm.json`` (``llm``) files, written to
``model_stratification_<eval_type>.json`` and (addition) ``..._ci.json`` with an interval per stratum. A JSON
that does not fit is reported and left out (exit 1); an output holding a model this run lacks is kept."""

from __future__ import annotations

import json
import logging
import os

from smmile.errors import UserError
from smmile.fsguard import check_writable_dir
from smmile.record import original
from smmile.record.naming import stratify_patterns
from smmile.record.result_csv import ResultFileError
from smmile.record.run_record import RunRecord
from smmile.scoring.exact_match import json_text
from smmile.scoring.scores import (Outcome, check_results_dir, datasets_named, find_result_files, replace_output,
                                    screened)
from smmile.scoring.stratify import (StratifyError, format_flag_table, stratify_accuracies, stratum_intervals,
                                     valid_flags)

EXTENSIONS = {"em": "evaluation", "llm": "evaluationllm"}

log = logging.getLogger(__name__)


def load_dataset_problems(dataset: str | None, revision: str | None) -> dict:
    """``problem_id -> Problem`` for all problems (no image filtering)."""
    from smmile.data.load import load_problems

    try:
        problems = load_problems(dataset, revision)
    except UserError:
        raise
    except Exception as exc:  # hub/network/parquet problems → one line
        raise UserError(f"cannot load dataset {dataset or 'smmile/SMMILE'}: {type(exc).__name__}: {exc}") from None
    print(f"Number of problems in the dataset: {len(problems)}")
    return {p.problem_id: p for p in problems}


def dataset_of(found: list) -> tuple[str | None, str | None]:
    """The (dataset, revision) every result's manifest names, for a run without --dataset (None, None: the
    original's default, smmile/SMMILE, for results without manifests); results of several datasets are refused."""
    named = datasets_named(found)
    if len(named) > 1:
        ids = ", ".join(sorted(str(i) for i, _ in named))
        raise UserError(f"the results were run on {len(named)} datasets ({ids}); pass --dataset to choose the one to "
                        "stratify by, or stratify each folder apart")
    if not named:
        log.info("No result's manifest names a dataset: stratifying by smmile/SMMILE, the original's default (pass "
                 "--dataset for another)")
        return None, None
    (dataset, revision), = named
    log.info(f"Dataset from the results' manifests: {dataset}" + (f" (revision {revision})" if revision else ""))
    return dataset, revision


def stratify_file(result: RunRecord, problems_by_id, flags) -> tuple:
    """(strata, number of problems) of one evaluation JSON; ``ResultFileError`` naming the file if it
    cannot be read or does not fit the dataset."""
    try:
        evaluation = original.read_export(result.path)
        accuracies = evaluation["problem_accuracies"]
        if result.path.name.endswith("_evaluationllm.json") and result.csv.exists():
            original.check_judgement(result.csv, evaluation)  # a judgement of other rows than the CSV's is refused
        return stratify_accuracies(accuracies, problems_by_id, flags, result.mode), len(accuracies)
    except ResultFileError:
        raise
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        reason = exc if isinstance(exc, StratifyError) else f"cannot read ({type(exc).__name__}: {exc})"
        raise ResultFileError(f"{result.path}: {reason}") from None


def write_outputs(results: dict, flags, base: str, outcome: Outcome) -> None:
    """``<base>.json`` and ``<base>_ci.json``, each unless an existing one holds a model this run lacks."""
    for path, data in ((base + ".json", results),
                       (base + "_ci.json", {key: stratum_intervals(strata, flags) for key, strata in results.items()})):
        kept = replace_output(path, json_text(data), set(results), lambda text: set(json.loads(text)), "model(s)")
        if kept:
            outcome.warn(kept)
            return
    print(f"Stratification results saved to: {base}.json (intervals: {base}_ci.json)")


def run_stratify(results_dir: str | os.PathLike, eval_type: str, *, model: str | None = None,
                 mode: str | None = None, dataset: str | None = None, revision: str | None = None) -> int:
    """Stratify the ``eval_type`` (``em``/``llm``) evaluations in ``results_dir`` (only ``model`` / ``mode``
    when given) by the flags of ``dataset`` at ``revision`` (default smmile/SMMILE); 0 when every file was
    stratified, 1 when none was found or some were left out or kept."""
    check_results_dir(results_dir)
    ext = EXTENSIONS[eval_type]
    found = find_result_files(results_dir, stratify_patterns(ext, model, mode), model, mode)
    if not found:
        step = "evaluate_LLMJudge.py" if eval_type == "llm" else "evaluate_EM.py"
        log.warning(f"note: stratify.py --eval_type {eval_type} reads the *_{ext}.json files that {step} writes beside "
                    f"the results: run {step} {os.fspath(results_dir)} first")
        return 1
    check_writable_dir(results_dir, "results folder")
    if dataset is None and revision is None:
        dataset, revision = dataset_of(found)
    problems_by_id = load_dataset_problems(dataset, revision)
    flags = valid_flags(list(problems_by_id.values()))
    outcome = Outcome()
    usable = screened(found, lambda r: stratify_file(r, problems_by_id, flags), lambda d: d[1], outcome)
    results = {result.scoring_key: data[0] for result, data in usable}  # "<scoring name>:<mode>" -> strata
    if results:  # never replace an existing file with an empty one
        for flag in flags:
            print(format_flag_table(flag, results))
        write_outputs(results, flags, os.path.join(os.fspath(results_dir), f"model_stratification_{eval_type}"),
                      outcome)
    return outcome.finish()
