"""A reply without content (null) or with empty content, through every API front door (spec §3.9, §3.10, §3.12,
§3.13): under `--protocol paper` the CSV row is the original script's row of that reply (`''` open, EXTRACTION_FAILED
MCQA) and the exit status the original's 0; a null reply stays a failure in the journal and the manifest and is
counted by `smmile stats`. Under `corrected` a null reply keeps its ERROR row and exit status 1."""

from __future__ import annotations

import csv
import json

import pytest

from api_server import Action, FakeApi
from smmile.cli import api_models
from smmile.cli import stats as stats_cli
from smmile.protocol.extract import EXTRACTION_FAILED

pytestmark = pytest.mark.server
KEY = "sk-test-empty-reply"
DOORS = {  # front door -> (main, leading flags, result stem without mode/format)
    "openai": (api_models.openai_main, ["--model", "gpt-4o", "--provider", "openai"], "result_gpt-4o"),
    "anthropic": (api_models.anthropic_main, [], "result_claude-3-7-sonnet"),
    "textonly": (api_models.textonly_mcqa_main, [], "result_llama33textonly"),
}
# the text-only MCQA script asked again when no letter was found (§3.10): its row is the follow-up's, tested there
CASES = [(front, fmt) for front in DOORS for fmt in ("open", "mcqa") if (front, fmt) != ("textonly", "mcqa")]


def original_row(front: str, fmt: str, content: str | None) -> dict:
    """What the original script stored for a reply `content` (spec, not the code under test): anthropic takes
    '' for a reply without content, openai and ollama keep None, which pandas writes as an empty cell; MCQA runs E2
    and stores a failed extraction literally as EXTRACTION_FAILED."""
    text = "" if content is None else content
    if fmt == "open":
        return {"generated_answer": text, "full_response": text}
    return {"selected_option": EXTRACTION_FAILED, "is_correct": "False", "generated_answer": EXTRACTION_FAILED,
            "full_response": text}


def run(front: str, fmt: str, protocol: str, action: Action, out, env) -> int:
    main, lead, _ = DOORS[front]
    with FakeApi(script=lambda rec: action if rec["n"] == 0 else None) as api:
        base = {"openai": api.url + "/v1", "anthropic": api.url, "textonly": api.url}[front]
        return main([*lead, "--dataset", "demo", "--output-dir", str(out), "--inference_mode", "0-shot",
                     "--task_format", fmt, "--protocol", protocol, "--base-url", base, "--concurrency", "1",
                     "--allow-key-for-host", "127.0.0.1"])


@pytest.fixture
def env(monkeypatch):
    for var in ("AZURE_OPENAI_API_KEY", "AZURE_OPENAI_ENDPOINT", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL",
                "OLLAMA_HOST"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    return monkeypatch


def first_row_and_manifest(front: str, fmt: str, out) -> tuple[dict, dict]:
    stem = f"{DOORS[front][2]}_0-shot_{fmt}"
    with open(out / f"{stem}.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    return rows[0], json.loads((out / f"{stem}.manifest.json").read_text())


@pytest.mark.parametrize("front,fmt", CASES)
def test_null_reply_under_paper_is_the_originals_row_and_exit_0(env, tmp_path, front, fmt, capsys):
    rc = run(front, fmt, "paper", Action("null"), tmp_path, env)
    row, manifest = first_row_and_manifest(front, fmt, tmp_path)
    assert rc == 0, capsys.readouterr().err
    assert {k: row[k] for k in original_row(front, fmt, None)} == original_row(front, fmt, None)
    assert manifest["counts"]["failed"] == 1 and "the reply has no" in manifest["failures"][0]["error"]
    journal = [json.loads(x) for x in (tmp_path / manifest["journal"]["file"]).read_text().splitlines() if x.strip()]
    assert sum(rec.get("status") == "error" for rec in journal) == 1
    assert stats_cli.main([str(tmp_path), "--out", str(tmp_path / "stats"), "--n-boot", "20"]) == 0
    counted = json.loads((tmp_path / "stats" / "stats_estimates.json").read_text())["rows"]
    assert [r["n_failed"] for r in counted if r["n_failed"] is not None] == [1]  # the metric row that counts them


@pytest.mark.parametrize("front,fmt", CASES)
def test_empty_reply_is_the_originals_row_and_no_failure(env, tmp_path, front, fmt):
    rc = run(front, fmt, "paper", Action(reply=""), tmp_path, env)
    row, manifest = first_row_and_manifest(front, fmt, tmp_path)
    assert rc == 0 and manifest["counts"]["failed"] == 0
    assert {k: row[k] for k in original_row(front, fmt, "")} == original_row(front, fmt, "")


@pytest.mark.parametrize("front", ["openai", "anthropic"])
def test_null_reply_under_corrected_keeps_the_error_row(env, tmp_path, front):
    rc = run(front, "mcqa", "corrected", Action("null"), tmp_path, env)
    row, manifest = first_row_and_manifest(front, "mcqa", tmp_path)
    assert rc == 1 and manifest["counts"]["failed"] == 1
    assert row["selected_option"] == "ERROR" and row["generated_answer"].startswith("ERROR: API Request Failed - ")


def test_textonly_mcqa_null_reply_stays_an_error_row_under_paper(env, tmp_path):
    """The original asked a follow-up after a reply without a letter (§3.10): no row can be the original's here."""
    rc = run("textonly", "mcqa", "paper", Action("null"), tmp_path, env)
    row, _ = first_row_and_manifest("textonly", "mcqa", tmp_path)
    assert rc == 1 and row["selected_option"] == "ERROR" and row["generated_answer"].startswith("ERROR: ")
