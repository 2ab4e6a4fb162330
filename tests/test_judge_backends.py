"""The judge on the inference API stack, against the local fake API server (tests/api_server.py): the wire of
each backend, and retries, Retry-After, concurrency, scrubbing, key rules and the circuit breaker being the
inference backends' own."""

import json
import socket
import time

import pytest

from api_server import Action, FakeApi, body_key
from smmile.cli import judge as judge_cli
from smmile.scoring import judge_run
from smmile.scoring.judge import JudgeSettings

pytestmark = pytest.mark.server
SENTINEL = "sk-SENTINEL-3c9d71e8-judge-never-writes-it"
OPEN_HEADER = "problem_id,final_question,true_answer,generated_answer,full_response\n"


@pytest.fixture
def env(monkeypatch):
    for var in ("AZURE_OPENAI_API_KEY", "AZURE_OPENAI_ENDPOINT", "AZURE_OPENAI_API_VERSION", "OPENAI_API_KEY",
                "OPENAI_BASE_URL", "OPENAI_COMPATIBLE_API_KEY", "OLLAMA_HOST"):
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


def results(tmp_path, n=3):
    (tmp_path / "result_llava_7b_ICL.csv").write_text(
        OPEN_HEADER + "".join(f"p{i},q{i},Red{i},red{i},x\n" for i in range(n)))
    return tmp_path


def judgements(d):
    return [json.loads(x) for x in (d / "result_llava_7b_ICL_judgements.jsonl").read_text().splitlines()]


def one(rec):
    return "1"


def test_ollama_wire_paper_and_corrected(env, tmp_path):
    d = results(tmp_path)
    with FakeApi(reply=one) as api:
        assert judge_cli.main([str(d), "--judge-base-url", api.url]) == 0
        assert judge_cli.main([str(d), "--judge-base-url", api.url, "--protocol", "corrected", "--judge-seed", "5",
                               "--judge-max-tokens", "2", "--overwrite"]) == 0
        paper, corrected = api.requests("ollama")[:3], api.requests("ollama")[3:]
    assert len(paper) == len(corrected) == 3
    for r in paper:
        assert r["body"]["model"] == "llama3.3" and not r["body"].get("options")  # server defaults, as the original
        assert r["body"]["messages"] == [{"role": "user", "content": r["body"]["messages"][0]["content"]}]
    assert all(r["body"]["options"] == {"temperature": 0.0, "seed": 5, "num_predict": 2} for r in corrected)
    assert {j["value"] for j in judgements(d)} == {1}


def test_rerun_sends_nothing(env, tmp_path):
    d = results(tmp_path)
    with FakeApi(reply=one) as api:
        env.setenv("OLLAMA_HOST", api.url)
        assert judge_cli.main([str(d)]) == 0
        assert judge_cli.main([str(d)]) == 0
        assert len(api.requests()) == 3
    assert all(j["cached"] for j in judgements(d))


def test_retry_after_and_500_use_the_inference_retry_policy(env, tmp_path, monkeypatch):
    from smmile.models.api.openai_backend import OpenAICompatibleBackend
    from smmile.models.api.retry import RetryPolicy

    built = []
    real = judge_run.build_backend
    monkeypatch.setattr(judge_run, "build_backend", lambda s: built.append(real(s)) or built[-1])
    answers = iter([Action("status", 429, headers={"retry-after": "1"}), Action("status", 500)])
    d = results(tmp_path, n=1)
    with FakeApi(reply=one, script=lambda rec: next(answers, None)) as api:
        assert judge_cli.main([str(d), "--judge-backend", "openai-compatible", "--judge-base-url", api.url + "/v1",
                               "--judge-model", "m"]) == 0
        reqs = api.requests("openai")
    assert [r["action"] for r in reqs] == [429, 500, "ok"] and len({body_key(r) for r in reqs}) == 1
    assert reqs[1]["time"] - reqs[0]["time"] >= 1.0  # Retry-After honoured
    assert 0.4 <= reqs[2]["time"] - reqs[1]["time"] <= 2.0  # full-jitter backoff of the second attempt
    backend = built[0]
    assert isinstance(backend, OpenAICompatibleBackend) and isinstance(backend.policy, RetryPolicy)
    assert backend.stats["retries"] == 2 and backend.policy.max_retries == 3
    (journal,) = (d / ".smmile" / "judge").glob("openai-compatible-m-*.journal.jsonl")
    store = [json.loads(x) for x in journal.read_text().splitlines()]
    assert store[0]["response"]["extra"]["attempts"] == 3 and store[0]["status"] == "ok"


def test_concurrency_is_the_backends(env, tmp_path):
    d = results(tmp_path, n=9)
    with FakeApi(reply=one, latency=0.2) as api:
        assert judge_cli.main([str(d), "--judge-base-url", api.url, "--judge-concurrency", "3"]) == 0
        assert api.max_in_flight == 3 and len(api.requests()) == 9


def test_concurrency_defaults_to_auto_for_api_judges_and_fixed_for_ollama(env, tmp_path):
    """Issue #21: an API judge adapts (limiter.py's auto: climbs while requests succeed, backs off on 429);
    ollama keeps a fixed level, as inference does."""
    api_judge = judge_run.build_backend(JudgeSettings(backend="openai-compatible", base_url="http://127.0.0.1:9/v1"))
    assert api_judge.concurrency == "auto" and api_judge.limiter.fixed is None
    assert judge_run.build_backend(JudgeSettings()).limiter.fixed == 8
    d = results(tmp_path, n=40)
    with FakeApi(reply=one, latency=0.1) as api:
        assert judge_cli.main([str(d), "--judge-backend", "openai-compatible", "--judge-base-url", api.url + "/v1",
                               "--judge-model", "m"]) == 0
        assert api.max_in_flight > 4 and len(api.requests()) == 40  # climbed past the start level
    with FakeApi(reply=one, latency=0.1, limit=3, limit_retry_after="0.05") as api:  # a server taking 3 at once
        assert judge_cli.main([str(d), "--judge-backend", "openai-compatible", "--judge-base-url", api.url + "/v1",
                               "--judge-model", "m2", "--overwrite"]) == 0
        throttled = sum(r["action"] == 429 for r in api.requests())
    assert 0 < throttled < 20 and {j["value"] for j in judgements(d)} == {1}
    with FakeApi(reply=one, latency=0.1) as api:
        assert judge_cli.main([str(d), "--judge-base-url", api.url, "--overwrite"]) == 0  # ollama
        assert 4 < api.max_in_flight <= 8  # the fixed level (8), more than auto starts with; timing may lose one


def test_secrets_are_scrubbed(env, tmp_path, capsys):
    env.setenv("OPENAI_COMPATIBLE_API_KEY", SENTINEL)

    def echo_key(rec):  # a hostile server echoing the credential back in its error message
        return Action("status", 401, message=f"bad credentials {rec['headers'].get('authorization')}")

    d = results(tmp_path)
    with FakeApi(script=echo_key) as api:
        rc = judge_cli.main([str(d), "--judge-backend", "openai-compatible", "--judge-base-url", api.url + "/v1"])
        assert all(r["headers"]["authorization"] == f"Bearer {SENTINEL}" for r in api.requests())  # it was used...
    captured = capsys.readouterr()
    assert rc == 2 and "bad credentials Bearer ***" in captured.err  # a refused key stops the judge at once
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name.endswith(".journal.jsonl") and p.parent.name == "judge" for p in written)
    for p in written:
        assert SENTINEL not in p.read_text(errors="replace"), p  # ...and never written
    assert SENTINEL not in captured.out + captured.err


def test_openai_key_goes_only_to_openai(env, tmp_path, capsys):
    env.setenv("OPENAI_API_KEY", SENTINEL)
    d = results(tmp_path, n=1)
    with FakeApi(reply=one) as api:
        assert judge_cli.main([str(d), "--judge-backend", "openai", "--judge-base-url", api.url + "/v1"]) == 0
        env.setenv("OPENAI_COMPATIBLE_API_KEY", "server-key-123")
        assert judge_cli.main([str(d), "--judge-backend", "openai", "--judge-base-url", api.url + "/v1",
                               "--no-cache"]) == 0
        auth = [r["headers"].get("authorization") for r in api.requests()]
    assert auth == ["Bearer EMPTY", "Bearer server-key-123"]
    assert "OPENAI_API_KEY is not sent there" in capsys.readouterr().err
    official = judge_run.checked_settings(JudgeSettings(backend="openai", base_url="https://api.openai.com/v1"))
    assert official.backend == "openai" and judge_run.checked_settings(JudgeSettings(backend="openai")).backend == "openai"
    assert judge_run.build_backend(official).endpoint() == "https://api.openai.com/v1"


def test_azure_deployment(env, tmp_path):
    env.setenv("AZURE_OPENAI_API_KEY", SENTINEL)
    d = results(tmp_path, n=1)
    with FakeApi(reply=one) as api:
        env.setenv("AZURE_OPENAI_ENDPOINT", api.url)
        assert judge_cli.main([str(d), "--judge-backend", "azure", "--judge-model", "judge-deploy"]) == 0
        (r,) = api.requests("azure")
    assert r["path"] == "/openai/deployments/judge-deploy/chat/completions" and r["headers"]["api-key"] == SENTINEL
    assert json.loads((d / "result_llava_7b_ICL_evaluationllm.json").read_text())["accuracy"] == 100.0


def _dead_url() -> str:
    with socket.socket() as s:  # a port with nobody listening
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


@pytest.mark.parametrize("backend, suffix, cause", [("openai-compatible", "/v1", "Connection error"),
                                                    ("ollama", "", "Failed to connect to Ollama")])
def test_unreachable_judge_names_the_endpoint_and_the_error(env, tmp_path, capsys, backend, suffix, cause):
    d = results(tmp_path, n=6)
    url = _dead_url() + suffix
    t0 = time.monotonic()
    rc = judge_cli.main([str(d), "--judge-backend", backend, "--judge-base-url", url, "--judge-retries", "0",
                         "--judge-concurrency", "1", "--judge-max-consecutive-failures", "2"])
    err = capsys.readouterr().err
    assert rc == 1 and time.monotonic() - t0 < 30
    line = next(x for x in err.splitlines() if "in a row failed" in x)
    assert f"2 judge requests in a row failed after all retries at {url}" in line and f"last error: {cause}" in line
    assert "4 judge requests not started" in line
    records = judgements(d)
    assert [r["status"] for r in records] == ["failed"] * 6 and records[-1]["error"].startswith("not sent")
    assert not (d / "result_llava_7b_ICL_evaluationllm.json").exists()


def test_a_served_model_is_judged_and_shards_are_not(env, tmp_path, capsys):
    from smmile.cli.run import main as run

    out = tmp_path / "results"
    # the model answers "a reply"; the judge (model "judge") answers parseably: a judge with none exits 1
    with FakeApi(reply=lambda rec: "1" if rec["body"]["model"] == "judge" else "a reply") as api:
        for shard in ([], ["--shard", "1/2"]):
            assert run(["--backend", "openai-compatible", "--base-url", api.url + "/v1", "--model", "my-model",
                        "--dataset", "demo", "--output-dir", str(out), "--inference_mode", "0-shot", *shard]) == 0
        inference = len(api.requests())
        capsys.readouterr()
        assert judge_cli.main([str(out), "--judge-backend", "openai-compatible", "--judge-base-url", api.url + "/v1",
                               "--judge-model", "judge"]) == 0
        judged = [r for r in api.requests()[inference:] if r["body"]["model"] == "judge"]
    printed = capsys.readouterr().out
    assert "Skipping" not in printed and "LLM AS A JUDGE EVALUATION RESULTS FOR my-model (0-shot)" in printed
    assert sorted(p.name for p in out.glob("*_evaluationllm.json")) == ["result_my-model_0-shot_open_evaluationllm.json"]
    stats = json.loads((out / "result_my-model_0-shot_open_evaluationllm.json").read_text())
    rows = [json.loads(x) for x in (out / "result_my-model_0-shot_open_judgements.jsonl").read_text().splitlines()]
    assert stats["model"] == "my-model" and stats["total_examples"] == len(rows) == 24
    assert len(judged) == sum(not r["cached"] for r in rows)  # identical rows are asked once
    assert stats["llm_err_count"] == 0 and stats["accuracy"] == 100.0


def test_every_api_provider_is_a_judge(env, tmp_path):
    """The judge's backends are the inference providers (one table): Claude judges too."""
    assert set(judge_run.judge_backends()) == {"azure", "openai", "openai-compatible", "anthropic", "ollama"}
    d = results(tmp_path)
    env.setenv("ANTHROPIC_API_KEY", SENTINEL)
    with FakeApi(reply=one) as api:
        env.setenv("ANTHROPIC_BASE_URL", api.url)  # names the key's endpoint: the key may go there
        assert judge_cli.main([str(d), "--judge-backend", "anthropic", "--judge-base-url", api.url,
                               "--judge-model", "claude-judge"]) == 0
        sent = api.requests("anthropic")
    assert len(sent) == 3 and {r["body"]["model"] for r in sent} == {"claude-judge"}
    assert {j["value"] for j in judgements(d)} == {1}
