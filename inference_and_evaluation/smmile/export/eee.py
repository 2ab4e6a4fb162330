"""``smmile export eee``: Every Eval Ever records (schema 0.3.0) of every scored result, laid out as its datastore
(``data/<benchmark>/<developer>/<model>/<uuid>.json`` + ``<uuid>_samples.jsonl``): one aggregate per result with
one evaluation result per metric (the judge and its prompt named as the LLM metric's method), and one
instance-level line per item and metric, where refused, failed and empty responses are their own outcome.
Each file is checked by the every-eval-ever package's own validator (``smmile[eee]``; Python >= 3.12) before
it is moved into place."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import tempfile
import time
import uuid
from pathlib import Path

from smmile import __version__, fsguard
from smmile.errors import UserError
from smmile.export import samples as S
from smmile.export.inspect_log import task_name
from smmile.export.provenance import FAILURE_RULES, FAILURES, created_at, dataset_of, judges_of, scored
from smmile.scoring import metrics
from smmile.scoring.judge import JUDGE_PROMPT

log = logging.getLogger(__name__)
OWNER = "smmile export eee"
SCHEMA_VERSION = "0.3.0"
INSTALL = "pip install 'smmile[eee]' (every-eval-ever; Python >= 3.12, on 3.11 see docs/interop.md)"
EXTRACTION = {"open": "the open answer after the family's cut rule (spec section 3)",
              "mcqa": "the option letter extracted from the reply (spec section 3)"}


def validator():
    """(validate_aggregate, validate_instance_file) of the every-eval-ever package; UserError without it."""
    try:
        from every_eval_ever.validator import validate_aggregate, validate_instance_file
    except ImportError:
        raise UserError(f"smmile export eee validates with every-eval-ever: {INSTALL}; or pass --skip-validation")
    return validate_aggregate, validate_instance_file


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or "unknown"


def _strings(mapping: dict) -> dict[str, str]:
    """Additional details: every value a string (the schema's rule), None left out."""
    return {k: v if isinstance(v, str) else json.dumps(v) for k, v in mapping.items() if v not in (None, "", {})}


def model_info(result) -> dict:
    model = (result.manifest or {}).get("model") or {}
    model_id = model.get("model_id") if isinstance(model.get("model_id"), str) and "/" in model["model_id"] else None
    return {"name": result.identity.display, "id": model_id or f"smmile/{_slug(result.identity.key)}",
            "additional_details": _strings({"deployment_type": "unknown", "model_availability": "unknown",
                                            "smmile_model_key": result.identity.key,
                                            "backend": model.get("backend"), "revision": model.get("revision")})}


def source_data(result, benchmark: str, n: int) -> dict:
    dataset = dataset_of(result)
    details = _strings({k: dataset.get(k) for k in ("revision", "resolved_revision", "fingerprint")})
    if dataset.get("kind") == "hub":
        return {"dataset_name": benchmark, "source_type": "hf_dataset", "hf_repo": str(dataset.get("id")),
                "hf_split": "train", "samples_number": n, "additional_details": details}
    details["location"] = str(dataset.get("id") or "unrecorded (the published SMMILE outputs)")
    return {"dataset_name": benchmark, "source_type": "other", "additional_details": details}


def _judge_method(result) -> dict:
    """The LLM metric's method: its judges (a jury's members) and the prompt each was given."""
    named, recorded = judges_of(result)
    judges = [{"model_info": {"name": label, "id": label.replace(":", "/", 1),
                              "additional_details": _strings({"deployment_type": "unknown",
                                                              "model_availability": "unknown",
                                                              "recorded": str(recorded).lower()})}}
              for label in named]
    method = {"judges": judges, "input_prompt": JUDGE_PROMPT}
    if len(judges) > 1:
        method["aggregation_method"] = "majority_vote"
    return method


def evaluation_result(record, result, benchmark: str, n: int, when: str) -> dict:
    metric = metrics.get_metric(record.metric)
    scores = scored(record).dropna()
    counts = (record.failures.value_counts() if record.failures is not None else {})
    config = {"evaluation_description": f"{metric.display} on {benchmark} ({result.mode}, {result.fmt})",
              "metric_id": f"smmile.{metric.name.lower()}", "metric_name": metric.display,
              "metric_kind": "rate" if metric.measures_failures else "accuracy", "metric_unit": "proportion",
              "lower_is_better": metric.measures_failures, "score_type": "continuous",
              "min_score": 0, "max_score": 1,
              "additional_details": _strings({"failure_rule": FAILURE_RULES[FAILURES]})}
    if metric.source == "judge":
        config["llm_scoring"] = _judge_method(result)
    details = {f"n_{k}": str(int(counts.get(k, 0))) for k in metrics.FAILURE_KINDS} if len(counts) else {}
    return {"evaluation_result_id": f"{benchmark}/{result.mode}/{result.fmt}/{metric.name}",
            "evaluation_name": f"{benchmark} {result.mode} {result.fmt}",
            "source_data": source_data(result, benchmark, n),
            "evaluation_timestamp": when, "metric_config": config,
            "score_details": {"score": float(scores.mean()), "details": details,
                              "uncertainty": {"num_samples": int(len(scores))}}}


def outcome(item: S.Item, score: float, metric) -> str:
    """The failure (``refused``, ``failed``, ``empty``) if the response was one, else ``correct``/``wrong``
    (``answered`` for a metric that scores failures)."""
    return item.failure or ("answered" if metric.measures_failures else "correct" if score >= 1 else "wrong")


def instance_lines(records, aggregate: dict, found: list[S.Item]) -> list[dict]:
    lines = []
    for item in found:
        for record, result in zip(records, aggregate["evaluation_results"]):
            if record.metric not in item.scores:
                continue
            score, metric = item.scores[record.metric], metrics.get_metric(record.metric)
            usage = item.usage
            tokens = None if usage.get("input_tokens") is None or usage.get("output_tokens") is None else {
                "input_tokens": int(usage["input_tokens"]), "output_tokens": int(usage["output_tokens"]),
                "total_tokens": int(usage["input_tokens"]) + int(usage["output_tokens"])}
            lines.append({
                "schema_version": aggregate["schema_version"], "evaluation_id": aggregate["evaluation_id"],
                "model_id": aggregate["model_info"]["id"], "evaluation_name": result["evaluation_name"],
                "evaluation_result_id": result["evaluation_result_id"], "sample_id": item.problem_id,
                "interaction_type": "single_turn",
                "input": {"raw": item.question, "reference": [item.target],
                          "formatted": None if item.request is None else json.dumps(item.request, ensure_ascii=False)},
                "output": {"raw": [item.response]},
                "answer_attribution": [{"turn_idx": 0, "source": "output.raw", "extracted_value": item.answer,
                                        "extraction_method": EXTRACTION[record.result.fmt], "is_terminal": True}],
                "evaluation": {"score": score, "is_correct": (score >= 1) != metric.measures_failures},
                "token_usage": tokens,
                "error": f"{item.failure}: {item.response}" if item.failure in ("refused", "failed") else None,
                "metadata": _strings({"outcome": outcome(item, score, metric),
                                      **({"judge_reply": item.judge_reply[0], "judge_status": item.judge_reply[1],
                                          "judge_verdicts": item.verdicts or None}
                                         if metric.source == "judge" and item.judge_reply else {}), **item.extra})})
    return lines


def records_of_result(records, now: float) -> tuple[str, dict, str]:
    """(relative path stem, aggregate, instance-level JSONL text) of one result."""
    result = records[0].result
    found = S.items(records)
    benchmark = task_name(result, [i.problem_id for i in found]).split("/")[0]
    info = model_info(result)
    when = str(int(created_at(result).timestamp()))
    digest = hashlib.sha256(f"{benchmark}|{info['id']}|{result.mode}|{result.fmt}|{when}".encode()).digest()
    file_uuid = str(uuid.UUID(bytes=digest[:16], version=4))
    folder = f"data/{_slug(benchmark)}/{_slug(info['id'].split('/')[0])}/{_slug(info['id'].split('/', 1)[-1])}"
    aggregate = {"schema_version": SCHEMA_VERSION,
                 "evaluation_id": f"{benchmark}/{info['id'].replace('/', '_')}/{result.mode}/{result.fmt}/{when}",
                 "evaluation_timestamp": when, "retrieved_timestamp": str(int(now)),
                 "source_metadata": {"source_name": "smmile", "source_type": "evaluation_run",
                                     "source_organization_name": "unknown", "evaluator_relationship": "third_party",
                                     "additional_details": _strings({"source_file": os.path.basename(result.csv)})},
                 "eval_library": {"name": "smmile", "version": __version__,
                                  "additional_details": _strings({"protocol": (result.manifest or {}).get("protocol"),
                                                                  "git": (result.manifest or {}).get(
                                                                      "smmile_git_revision")})},
                 "model_info": info,
                 "evaluation_results": [evaluation_result(r, result, benchmark, len(found), when) for r in records]}
    lines = instance_lines(records, aggregate, found)
    text = "".join(json.dumps(line, ensure_ascii=False, allow_nan=False) + "\n" for line in lines)
    aggregate["detailed_evaluation_results"] = {
        "format": "jsonl", "file_path": f"{folder}/{file_uuid}_samples.jsonl", "hash_algorithm": "sha256",
        "checksum": hashlib.sha256(text.encode()).hexdigest(), "total_rows": len(lines)}
    return f"{folder}/{file_uuid}", aggregate, text


def _check(check, path: Path, what: str) -> None:
    report = check(path)
    if not report.valid:
        first = report.errors[0] if report.errors else {}
        raise UserError(f"every-eval-ever refused the {what} of {path.name}: {first.get('loc')}: {first.get('msg')} "
                        f"({len(report.errors)} error(s)); nothing written")


def _stage(built, staging: Path, checks) -> None:
    for stem, aggregate, text in built:
        tmp = staging / stem
        tmp.parent.mkdir(parents=True, exist_ok=True)
        Path(f"{tmp}.json").write_text(json.dumps(aggregate, indent=2, ensure_ascii=False, allow_nan=False),
                                       encoding="utf-8")
        Path(f"{tmp}_samples.jsonl").write_text(text, encoding="utf-8")
        if checks:
            _check(checks[0], Path(f"{tmp}.json"), "aggregate record")
            _check(checks[1], Path(f"{tmp}_samples.jsonl"), "instance-level records")


def export_eee(results_dir: str, out: str, *, force: bool = False, validate: bool = True) -> list[str]:
    """Write the records of every scored result of ``results_dir`` under ``out``; every file is validated in a
    temporary folder first, so a refused record writes nothing. Returns the paths written."""
    checks = validator() if validate else None
    fsguard.check_output_dir(out, OWNER, force=force)
    groups = S.grouped(results_dir)
    now = time.time()
    built = [records_of_result(g, now) for g in groups]
    written = []
    with tempfile.TemporaryDirectory() as staging:
        _stage(built, Path(staging), checks)
        folder = fsguard.prepare_output_dir(out, OWNER, force=force)
        with fsguard.OutputLock(folder, f"the Every Eval Ever folder {folder}"):
            for stem, _, _ in built:
                for suffix in (".json", "_samples.jsonl"):
                    target = Path(folder) / f"{stem}{suffix}"
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.move(f"{Path(staging) / stem}{suffix}", target)
                    written.append(os.fspath(target))
    if not validate:
        log.warning(f"warning: the records in {folder} were not validated (--skip-validation); {INSTALL}")
    return written
