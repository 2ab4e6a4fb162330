"""The judge's key rule is inference's (issue #21): a key from the environment goes only to its provider's
official host, a host the user allowed (--allow-key-for-host), or the host of the variable naming its endpoint;
any other --judge-base-url is refused before anything is sent or written."""

from __future__ import annotations

import json

import pytest

from api_server import FakeApi
from smmile.cli import judge as judge_cli

pytestmark = pytest.mark.server
KEY = "sk-JUDGEKEY-4b8e2f19-only-for-its-provider"
HEADER = "problem_id,final_question,true_answer,generated_answer,full_response\n"


@pytest.fixture
def folder(tmp_path, monkeypatch):
    for var in ("AZURE_OPENAI_API_KEY", "AZURE_OPENAI_ENDPOINT", "OPENAI_API_KEY", "OPENAI_BASE_URL",
                "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_COMPATIBLE_API_KEY", "OLLAMA_HOST"):
        monkeypatch.delenv(var, raising=False)
    (tmp_path / "result_llava_7b_ICL.csv").write_text(HEADER + "".join(f"p{i},q{i},A{i},a{i},x\n" for i in range(3)))
    return tmp_path


def refused(capsys, folder, api) -> None:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--allow-key-for-host 127.0.0.1" in err[0] and KEY not in err[0]
    assert api.requests() == [] and not (folder / ".smmile").exists()


def test_anthropic_key_refused_for_a_loopback_url_unless_allowed(folder, monkeypatch, capsys):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    with FakeApi(reply=lambda rec: "1") as api:
        argv = [str(folder), "--judge-backend", "anthropic", "--judge-base-url", api.url + "/v1",
                "--judge-model", "claude-judge"]
        assert judge_cli.main(argv) == 2
        refused(capsys, folder, api)
        assert judge_cli.main([*argv, "--dry-run"]) == 2  # a dry run is refused the same way
        refused(capsys, folder, api)
        assert judge_cli.main([str(folder), "--jury", f"anthropic:claude-judge@{api.url}/v1", "ollama:x"]) == 2
        refused(capsys, folder, api)

        assert judge_cli.main([*argv, "--allow-key-for-host", "127.0.0.1"]) == 0
        sent = api.requests()
    assert len(sent) == 3 and all(KEY in json.dumps(r["headers"]) for r in sent)
    for p in folder.rglob("*"):
        assert not p.is_file() or KEY not in p.read_text(errors="replace"), p


def test_openai_key_goes_to_a_loopback_url_only_when_allowed(folder, monkeypatch):
    """Not allowed: the URL is an OpenAI-compatible server (OPENAI_API_KEY stays home, as before); allowed: the
    openai judge sends OPENAI_API_KEY there, as inference does."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with FakeApi(reply=lambda rec: "1") as api:
        argv = [str(folder), "--judge-backend", "openai", "--judge-base-url", api.url + "/v1", "--judge-model", "j"]
        assert judge_cli.main(argv) == 0
        assert {r["headers"]["authorization"] for r in api.requests()} == {"Bearer EMPTY"}
        assert judge_cli.main([*argv, "--allow-key-for-host", "127.0.0.1", "--overwrite"]) == 0
        assert {r["headers"]["authorization"] for r in api.requests()[3:]} == {f"Bearer {KEY}"}
    record = json.loads((folder / "result_llava_7b_ICL_evaluationllm.manifest.json").read_text())
    assert record["judge"]["backend"] == "openai" and KEY not in json.dumps(record)
