"""``smmile export eee`` (issue #35): Every Eval Ever records of the published SMMILE outputs pass the
every-eval-ever package's own validator; a record with one field broken is refused by it and nothing is written."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pandas as pd
import pytest

from smmile import cli
from smmile.export import eee

NO_PACKAGE = ("every-eval-ever is not importable: pip install 'smmile[eee]' (Python >= 3.12; in no lock); on 3.11 "
              "see docs/interop.md (--no-deps --ignore-requires-python --target DIR, PYTHONPATH=DIR)")


@pytest.fixture
def validator():
    checks = pytest.importorskip("every_eval_ever.validator", reason=NO_PACKAGE)
    return checks.validate_aggregate, checks.validate_instance_file


def _copy(published, tmp_path, pattern="result_*"):
    root = tmp_path / "results"
    root.mkdir(exist_ok=True)
    for path in published.glob(pattern):
        shutil.copy(path, root)
    return root


def _written(out: Path) -> dict[str, dict]:
    return {json.loads(p.read_text())["evaluation_id"]: json.loads(p.read_text())
            for p in out.glob("data/*/*/*/*.json")}


@pytest.mark.slow
def test_published_outputs_pass_the_validator(published, tmp_path, validator):
    results = _copy(published, tmp_path)
    assert cli.main(["export", "eee", str(results), "--out", str(tmp_path / "eee")]) == 0
    aggregates = _written(tmp_path / "eee")
    assert len(aggregates) == len(list(results.glob("result_*.csv")))
    for path in (tmp_path / "eee").glob("data/*/*/*/*"):  # checked again here, by the package itself
        check = validator[0] if path.suffix == ".json" else validator[1]
        assert check(path).valid, (path, check(path).errors[:2])
    gpt = next(a for a in aggregates.values() if a["evaluation_id"].startswith("SMMILE/smmile_gpt-4o/ICL/open/"))
    by_metric = {r["metric_config"]["metric_name"]: r for r in gpt["evaluation_results"]}
    judged = json.loads((results / "result_gpt-4o_ICL_open_evaluationllm.json").read_text())
    llm = by_metric["LLM-as-a-judge"]["score_details"]
    assert llm["score"] == pytest.approx(judged["correct_examples"] / (111 - 3))  # as smmile stats: 3 failures out
    assert llm["uncertainty"]["num_samples"] == 108 and llm["details"]["n_failed"] == "3"
    method = by_metric["LLM-as-a-judge"]["metric_config"]["llm_scoring"]
    assert method["judges"][0]["model_info"]["id"] == "ollama/llama3.3" and "{question}" in method["input_prompt"]
    lines = [json.loads(line) for line in
             (tmp_path / "eee" / gpt["detailed_evaluation_results"]["file_path"]).read_text().splitlines()]
    lines = [line for line in lines if line["evaluation_result_id"].endswith("/EM")]
    assert len(lines) == 111 and {line["metadata"]["outcome"] for line in lines} == {"correct", "wrong", "failed"}
    assert all(line["error"] for line in lines if line["metadata"]["outcome"] == "failed")
    mcqa = next(a for a in aggregates.values() if a["evaluation_id"].startswith("SMMILE/smmile_gpt-4o/ICL/mcqa/"))
    lines = [json.loads(line) for line in
             (tmp_path / "eee" / mcqa["detailed_evaluation_results"]["file_path"]).read_text().splitlines()]
    lines = [line for line in lines if line["evaluation_result_id"].endswith("/MCQA")]
    refused = [line for line in lines if line["metadata"]["outcome"] == "refused"]
    assert len(refused) == 2 and all(r["error"] and not r["evaluation"]["is_correct"] for r in refused)
    assert mcqa["evaluation_results"][0]["score_details"]["details"]["n_refused"] == "2"


def test_a_broken_field_is_refused_and_nothing_is_written(published, tmp_path, validator, monkeypatch, capsys):
    results = _copy(published, tmp_path, "result_gpt-4o_ICL_mcqa*")
    built = eee.records_of_result

    def broken(records, now):
        stem, aggregate, text = built(records, now)
        aggregate["evaluation_results"][0]["metric_config"]["score_type"] = "percent"  # binary|continuous|levels
        return stem, aggregate, text

    monkeypatch.setattr(eee, "records_of_result", broken)
    assert cli.main(["export", "eee", str(results), "--out", str(tmp_path / "eee")]) == 2
    err = capsys.readouterr().err
    assert "every-eval-ever refused the aggregate record" in err and "score_type" in err
    assert not list((tmp_path / "eee").rglob("*.json*"))


def test_without_the_package_refused_unless_skip_validation(published, tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "every_eval_ever", None)
    monkeypatch.setitem(sys.modules, "every_eval_ever.validator", None)
    results = _copy(published, tmp_path, "result_gpt-4o_ICL_mcqa*")
    assert cli.main(["export", "eee", str(results), "--out", str(tmp_path / "eee")]) == 2
    assert "pip install 'smmile[eee]'" in capsys.readouterr().err
    assert cli.main(["export", "eee", str(results), "--out", str(tmp_path / "eee"), "--skip-validation"]) == 0
    assert "were not validated" in capsys.readouterr().err
    (aggregate,) = _written(tmp_path / "eee").values()
    assert aggregate["evaluation_results"][0]["score_details"]["score"] == pytest.approx(0.5, abs=0.5)


def test_a_run_on_a_hub_dataset_names_the_commit_read(demo_dir, tmp_path, validator):
    from smmile.cli.baselines import main as baselines

    res = tmp_path / "res"
    assert baselines(["--baseline", "random", "--task_format", "mcqa", "--dataset", "demo", "--output-dir",
                      str(res)]) == 0
    manifest = res / "result_random_ICL_mcqa.manifest.json"
    data = json.loads(manifest.read_text())
    data["dataset"].update(kind="hub", id="smmile/SMMILE", revision=None, resolved_revision="a" * 40)
    manifest.write_text(json.dumps(data))
    assert cli.main(["export", "eee", str(res), "--out", str(tmp_path / "eee")]) == 0
    (aggregate,) = _written(tmp_path / "eee").values()
    source = aggregate["evaluation_results"][0]["source_data"]
    assert source["source_type"] == "hf_dataset" and source["hf_repo"] == "smmile/SMMILE"
    assert source["additional_details"]["resolved_revision"] == "a" * 40 and source["samples_number"] == 24
    lines = (tmp_path / "eee" / aggregate["detailed_evaluation_results"]["file_path"]).read_text().splitlines()
    assert all(json.loads(line)["input"]["formatted"] for line in lines)  # the request as sent, journaled


def test_a_jury_is_named_as_the_method_with_majority_vote(demo_dir, tmp_path, validator):
    from smmile.cli.baselines import main as baselines
    from smmile.record import verdicts
    from smmile.record.result_csv import csv_sha256

    res = tmp_path / "res"
    assert baselines(["--baseline", "random", "--task_format", "open", "--dataset", "demo", "--output-dir",
                      str(res)]) == 0
    csv = res / "result_random_ICL.csv"
    ids = [str(i) for i in pd.read_csv(csv)["problem_id"]]
    members = [{"backend": "ollama", "model": "a"}, {"backend": "ollama", "model": "b"}]
    rows = [{"problem_id": pid, "reply": "1", "status": "ok", "value": 1,
             "jury": [{"judge": "ollama:a", "value": 1}, {"judge": "ollama:b", "value": 1}]} for pid in ids]
    verdicts.write(csv, csv_sha256(csv), {"backend": "jury", "model": "ollama:a, ollama:b", "jury": members},
                   None, {pid: 100.0 for pid in ids}, rows)
    assert cli.main(["export", "eee", str(res), "--out", str(tmp_path / "eee")]) == 0
    (aggregate,) = _written(tmp_path / "eee").values()
    llm = next(r for r in aggregate["evaluation_results"] if r["metric_config"]["metric_name"] == "LLM-as-a-judge")
    method = llm["metric_config"]["llm_scoring"]
    assert [j["model_info"]["id"] for j in method["judges"]] == ["ollama/a", "ollama/b"]
    assert method["aggregation_method"] == "majority_vote" and llm["score_details"]["score"] == 1.0
