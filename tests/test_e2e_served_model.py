"""Issue 9 acceptance: a model outside the paper, served behind an OpenAI-compatible API, from `smmile run` to
every scoring and reporting command, identified by its run manifest (no file-name rule knows `my-model`)."""

import json

import pandas as pd
import pytest

from api_server import FakeApi
from smmile.cli import main as smmile
from smmile.cli.em import main as evaluate_em
from smmile.cli.judge import main as evaluate_judge
from smmile.cli.stratify import main as stratify
from smmile.cli.variance import main as variance_analysis


def reply(record: dict) -> str:
    """`my-model` says White for open questions and A for MCQA; the judge's verdict depends on the prompt."""
    body = record["body"]
    last = body["messages"][-1]["content"]
    text = last if isinstance(last, str) else " ".join(p.get("text", "") for p in last if p.get("type") == "text")
    if body["model"] == "judge":
        return str(len(text) % 2)
    return "The answer is A." if "A." in text and "B." in text else "White."


@pytest.mark.slow
def test_a_served_model_reaches_every_score_and_the_report(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    results = tmp_path / "results"
    with FakeApi(reply=reply) as api:
        for mode in ("0-shot", "ICL"):
            for fmt in ("open", "mcqa"):
                code = smmile(["run", "--backend", "openai-compatible", "--base-url", f"{api.url}/v1",
                               "--model", "my-model", "--dataset", "demo", "--output-dir", str(results),
                               "--inference_mode", mode, "--task_format", fmt])
                assert code == 0
        sent = len(api.requests())
        assert sent == 4 * 24
        assert evaluate_em([str(results)]) == 0
        assert evaluate_judge([str(results), "--judge-backend", "openai-compatible", "--judge-base-url",
                               f"{api.url}/v1", "--judge-model", "judge"]) == 0
        assert sent < len(api.requests()) <= sent + 2 * 24  # identical judge prompts are sent once
    assert stratify([str(results), "--eval_type", "llm", "--dataset", "demo"]) == 0
    assert variance_analysis([str(results), "--generate_table"]) == 0
    assert smmile(["stats", str(results), "--n-boot", "200", "--out", str(tmp_path / "stats")]) == 0
    assert smmile(["report", str(results), "--out", str(tmp_path / "report"), "--n-boot", "200"]) == 0
    out = capsys.readouterr().out
    assert "Skipping" not in out
    assert "EXACT MATCH EVALUATION RESULTS FOR my-model (ICL)" in out

    manifest = json.loads((results / "result_my-model_ICL_open.manifest.json").read_text())
    assert manifest["model"]["identity"]["key"] == "my-model"
    assert json.loads((results / "result_my-model_ICL_open_evaluation.json").read_text())["model"] == "my-model"
    assert json.loads((results / "result_my-model_ICL_open_evaluationllm.json").read_text())["model"] == "my-model"
    assert sorted(json.loads((results / "model_stratification_llm.json").read_text())) == ["my-model:0-shot",
                                                                                           "my-model:ICL"]
    table = (results / "evaluation_results.txt").read_text()
    assert any(line.startswith("my-model & ") and line.count(" ± ") == 6 for line in table.splitlines())
    estimates = pd.read_csv(tmp_path / "stats" / "stats_estimates.csv")
    assert set(estimates.model) == {"my-model"} and len(estimates) == 10  # LLM, EM, MCQA x 0-shot, ICL; NOANS x open, MCQA x 0-shot, ICL
    page = (tmp_path / "report" / "index.html").read_text()
    assert "my-model" in page
