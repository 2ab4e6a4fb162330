"""Keys only to their own provider, credentials never inside URLs, a refused key stops the run, a reply
without content is a failure, and `smmile run --model gpt-4o` picks the provider as inference_openai.py does."""

from __future__ import annotations

import csv
import json

import pytest

from api_server import Action, FakeApi
from smmile.cli import api_models
from smmile.cli.run import main as smmile_run

pytestmark = pytest.mark.server
KEY = "sk-KEYTEST-7f3a9c21-only-for-its-provider"
VARS = ("AZURE_OPENAI_API_KEY", "AZURE_OPENAI_ENDPOINT", "OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_ORG_ID",
        "OPENAI_PROJECT_ID", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_COMPATIBLE_API_KEY")


@pytest.fixture
def env(monkeypatch):
    for var in VARS:
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


def gpt(api, out, *extra) -> int:
    return api_models.openai_main(["--model", "gpt-4o", "--dataset", "demo", "--output-dir", str(out),
                                   "--inference_mode", "0-shot", "--base-url", api.url + "/v1", *extra])


def claude(api, out, *extra) -> int:
    return api_models.anthropic_main(["--dataset", "demo", "--output-dir", str(out), "--inference_mode", "0-shot",
                                      "--base-url", api.url, *extra])


def test_openai_key_not_sent_to_another_host(env, tmp_path, capsys):
    env.setenv("OPENAI_API_KEY", KEY)
    with FakeApi() as api:
        assert gpt(api, tmp_path / "a") == 2
        assert api.requests() == []
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--allow-key-for-host 127.0.0.1" in err[0] and KEY not in err[0]
    with FakeApi() as api:  # allowed explicitly: sent
        assert gpt(api, tmp_path / "b", "--allow-key-for-host", "127.0.0.1", "--max-retries", "0") == 0
        assert api.requests()[0]["headers"]["authorization"] == f"Bearer {KEY}"


def test_anthropic_key_only_to_named_endpoint(env, tmp_path, capsys):
    env.setenv("ANTHROPIC_API_KEY", KEY)
    with FakeApi() as api:
        assert claude(api, tmp_path / "a") == 2
        assert api.requests() == []
        env.setenv("ANTHROPIC_BASE_URL", api.url)  # the variable naming the key's endpoint allows its host
        assert claude(api, tmp_path / "b") == 0
        assert KEY in json.dumps(api.requests()[0]["headers"])
    assert "ANTHROPIC_API_KEY is sent only to api.anthropic.com" in capsys.readouterr().err


def test_openai_account_headers_not_sent_to_compatible_servers(env, tmp_path):
    env.setenv("OPENAI_ORG_ID", "org-SECRETORG123")
    env.setenv("OPENAI_PROJECT_ID", "proj-SECRETPROJ456")
    with FakeApi() as api:
        assert smmile_run(["--backend", "openai-compatible", "--base-url", api.url + "/v1", "--model", "m",
                           "--dataset", "demo", "--inference_mode", "0-shot", "--output-dir", str(tmp_path)]) == 0
        headers = [r["headers"] for r in api.requests()]
    assert headers and not any("openai-organization" in h or "openai-project" in h for h in headers)


@pytest.mark.parametrize("url", ["http://user:PW-secret-99@127.0.0.1:9/v1", "http://127.0.0.1:9/v1?api-key=K-secret-99"])
def test_credentials_in_urls_refused_before_anything_is_written(env, tmp_path, capsys, url):
    env.setenv("OPENAI_API_KEY", KEY)
    assert smmile_run(["--backend", "openai", "--base-url", url, "--model", "gpt-4o", "--dataset", "demo",
                       "--output-dir", str(tmp_path / "run")]) == 2
    assert api_models.openai_main(["--model", "gpt-4o", "--dataset", "demo", "--output-dir", str(tmp_path / "fd"),
                                   "--base-url", url]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all("must not carry credentials" in line for line in err)
    assert not any(p.is_file() for p in tmp_path.rglob("*"))


def test_401_stops_the_run_at_once(env, tmp_path, capsys):
    env.setenv("ANTHROPIC_API_KEY", KEY)
    with FakeApi(script=lambda rec: Action("status", 401, message="invalid x-api-key")) as api:
        env.setenv("ANTHROPIC_BASE_URL", api.url)
        rc = claude(api, tmp_path, "--concurrency", "1")
        sent = len(api.requests())
    err = capsys.readouterr().err
    assert rc == 2 and sent == 1  # not retried, nothing else launched
    lines = [x for x in err.splitlines() if "401" in x]
    assert len(lines) == 1 and lines[0].startswith("error: 401") and "23 problems not started" in lines[0]
    assert KEY not in err


@pytest.mark.parametrize("front", ["openai", "anthropic"])
def test_null_content_is_a_failure(env, tmp_path, capsys, front):
    env.setenv("OPENAI_API_KEY", KEY)
    env.setenv("ANTHROPIC_API_KEY", KEY)
    with FakeApi(script=lambda rec: Action("null") if rec["n"] == 0 else None) as api:
        env.setenv("OPENAI_BASE_URL", api.url + "/v1")  # names the endpoint: the key may go there
        env.setenv("ANTHROPIC_BASE_URL", api.url)
        # --protocol corrected: under paper the row is the original's empty answer (tests/test_api_empty_reply.py)
        rc = (gpt if front == "openai" else claude)(api, tmp_path, "--concurrency", "1", "--protocol", "corrected")
    name = "result_gpt-4o_0-shot_open" if front == "openai" else "result_claude-3-7-sonnet_0-shot_open"
    manifest = json.loads((tmp_path / f"{name}.manifest.json").read_text())
    with open(tmp_path / f"{name}.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert rc == 1 and manifest["counts"]["failed"] == 1
    assert sum(r["generated_answer"].startswith("ERROR: API Request Failed - the reply has no") for r in rows) == 1
    assert "1 problem(s) failed" in capsys.readouterr().err


def test_smmile_run_gpt4o_picks_openai_like_the_front_door(env, tmp_path):
    env.setenv("OPENAI_API_KEY", KEY)
    with FakeApi() as api:
        rc = smmile_run(["--model", "gpt-4o", "--dataset", "demo", "--inference_mode", "0-shot", "--output-dir",
                         str(tmp_path), "--base-url", api.url + "/v1", "--allow-key-for-host", "127.0.0.1"])
        protocols = {r["protocol"] for r in api.requests()}
    assert rc == 0 and protocols == {"openai"}
