"""Concurrency, retries, reruns, cost limits, size checks and secret scrubbing of the API backends."""

from __future__ import annotations

import csv
import json
import sys
import time

import pytest

from api_server import Action, FakeApi, body_key, permanent_failure, transient_failures
from smmile.cli import api_models

pytestmark = pytest.mark.server
SENTINEL = "sk-SENTINEL-5b1e0d44-never-written"


@pytest.fixture
def env(monkeypatch):
    for var in ("AZURE_OPENAI_API_KEY", "AZURE_OPENAI_ENDPOINT", "OPENAI_API_KEY", "ANTHROPIC_API_KEY",
                "OPENAI_COMPATIBLE_API_KEY", "OLLAMA_HOST", "OLLAMA_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", SENTINEL)
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", SENTINEL)
    return monkeypatch


def claude(api, out, *extra) -> int:
    return api_models.anthropic_main(["--dataset", "demo", "--output-dir", str(out), "--base-url", api.url,
                                   "--allow-key-for-host", "127.0.0.1", "--inference_mode", "0-shot", *extra])


def read(out, name="result_claude-3-7-sonnet_0-shot_open"):
    with open(out / f"{name}.csv", newline="") as fh:
        return list(csv.DictReader(fh)), json.loads((out / f"{name}.manifest.json").read_text())


def test_concurrency_is_bounded_and_faster(env, tmp_path):
    with FakeApi(latency=0.1) as api:
        t0 = time.monotonic()
        assert claude(api, tmp_path / "c1", "--concurrency", "1") == 0  # (also warms the imports)
        slow = time.monotonic() - t0
        assert api.max_in_flight == 1
    with FakeApi(latency=0.1) as api:
        t0 = time.monotonic()
        assert claude(api, tmp_path / "c6", "--concurrency", "6") == 0
        fast = time.monotonic() - t0
        assert api.max_in_flight == 6
    assert slow > 2.4 and fast < slow / 2.5
    a, _ = read(tmp_path / "c6")
    b, _ = read(tmp_path / "c1")
    assert [r["problem_id"] for r in a] == [r["problem_id"] for r in b]  # problem order, whatever finished first


def test_transient_failures_are_retried(env, tmp_path):
    with FakeApi(script=transient_failures(rate=0.2)) as api:
        assert claude(api, tmp_path, "--concurrency", "4") == 0
        actions = [r["action"] for r in api.requests()]
    rows, manifest = read(tmp_path)
    assert {429, 500} <= set(actions) and len(rows) == 24 and len({r["problem_id"] for r in rows}) == 24
    assert not any(r["generated_answer"].startswith("ERROR") for r in rows)
    assert manifest["backend"]["stats"]["retries"] == actions.count(429) + actions.count(500)
    assert manifest["usage"]["requests"] == len(actions)


def test_retry_after_is_honoured(env, tmp_path):
    first = []

    def script(rec):
        if not first:
            first.append(body_key(rec))
            return Action("status", 429, headers={"retry-after": "1"})
        return None

    with FakeApi(script=script) as api:
        assert claude(api, tmp_path, "--concurrency", "1") == 0
        reqs = [r for r in api.requests() if body_key(r) == first[0]]
    assert len(reqs) == 2 and reqs[1]["time"] - reqs[0]["time"] >= 1.0


def test_timeouts_and_malformed_bodies_are_retried(env, tmp_path):
    seen = {}

    def script(rec):
        k = body_key(rec)
        seen[k] = seen.get(k, 0) + 1
        if seen[k] == 1 and rec["n"] % 2 == 0:
            return Action("sleep", seconds=3.0)
        if seen[k] == 1:
            return Action("malformed")
        return None

    with FakeApi(script=script) as api:
        t0 = time.monotonic()
        assert claude(api, tmp_path, "--timeout", "0.5", "--concurrency", "24") == 0
        assert time.monotonic() - t0 < 10
        assert len(api.requests()) == 48
    rows, _ = read(tmp_path)
    assert not any(r["generated_answer"].startswith("ERROR") for r in rows)


def test_permanent_failure_named_and_rerun_retries_only_it(env, tmp_path, capsys):
    script = permanent_failure(500)
    with FakeApi(script=script) as api:
        assert claude(api, tmp_path, "--max-retries", "2") == 1
        doomed = [r for r in api.requests() if r["doomed"]]
    assert len(doomed) == 3  # first try + 2 retries
    rows, manifest = read(tmp_path)
    failed = [r for r in rows if r["generated_answer"].startswith("ERROR: API Request Failed - ")]
    assert len(failed) == 1 and manifest["failures"][0]["problem_id"] == failed[0]["problem_id"]
    assert failed[0]["problem_id"] in capsys.readouterr().err
    with FakeApi() as api:
        assert claude(api, tmp_path) == 0
        again = api.requests()
    assert len(again) == 1 and body_key(again[0]) == script.doomed[0]
    rows, _ = read(tmp_path)
    assert len(rows) == 24 and not any(r["generated_answer"].startswith("ERROR") for r in rows)


def test_max_cost_stops_launching(env, tmp_path, capsys):
    with FakeApi(latency=0.02) as api:
        rc = claude(api, tmp_path, "--concurrency", "2", "--price", "1000:0", "--max-cost", "0.5")
        first = len(api.requests())
    assert rc == 1 and 0 < first < 24
    err = capsys.readouterr().err
    assert "--max-cost 0.5 USD reached" in err and "not started" in err
    assert not (tmp_path / "result_claude-3-7-sonnet_0-shot_open.csv").exists()
    with FakeApi() as api:
        assert claude(api, tmp_path) == 0
        assert len(api.requests()) == 24 - first
    _, manifest = read(tmp_path)
    assert manifest["usage"]["cost_usd"] > 0.4 and manifest["usage"]["input_tokens"] > 0  # stopped before 0.5


def test_oversized_images_downscaled_under_corrected_only(env, tmp_path, monkeypatch):
    from smmile.models.api.anthropic_backend import AnthropicBackend

    with FakeApi() as api:
        assert claude(api, tmp_path / "paper", "--max-image-side", "32") == 0
        paper = api.requests()
    with FakeApi() as api:
        assert claude(api, tmp_path / "fixed", "--max-image-side", "32", "--protocol", "corrected") == 0
        fixed = api.requests()

    def sides(reqs):
        import base64, io
        from PIL import Image

        return [max(Image.open(io.BytesIO(base64.b64decode(r["body"]["messages"][0]["content"][1]["source"]["data"]))).size)
                for r in reqs]

    assert max(sides(paper)) > 32 and max(sides(fixed)) == 32
    _, manifest = read(tmp_path / "fixed")
    assert manifest["backend"]["max_image_side"] == 32 and manifest["backend"]["stats"]["downscaled_images"] > 0
    monkeypatch.setattr(AnthropicBackend, "limits", {"request_bytes": 200})
    with FakeApi() as api:
        assert claude(api, tmp_path / "big", "--protocol", "corrected") == 1
        assert api.requests() == []  # too large: detected before sending
    rows, manifest = read(tmp_path / "big")
    assert "exceeds the 200-byte limit (not sent)" in rows[0]["generated_answer"]
    assert manifest["backend"]["stats"]["not_sent_too_large"] == 24


def test_secrets_never_written(env, tmp_path, capsys):
    def echo_key(rec):  # a hostile server echoing the credential back in its error message
        auth = rec["headers"].get("authorization") or rec["headers"].get("api-key", "")
        return Action("status", 400, message=f"bad credentials {auth}") if rec["n"] % 3 == 0 else None

    with FakeApi(script=echo_key) as api:
        env.setenv("AZURE_OPENAI_ENDPOINT", api.url)
        claude(api, tmp_path, "--task_format", "mcqa")
        api_models.openai_main(["--model", "gpt-4o", "--dataset", "demo", "--output-dir", str(tmp_path),
                             "--inference_mode", "0-shot"])
        assert any(SENTINEL in json.dumps(r["headers"]) for r in api.requests())  # it was used...
    captured = capsys.readouterr()
    assert "bad credentials" in captured.err and "***" in captured.err
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(written) >= 6  # CSVs, manifests, journals
    for p in written:
        assert SENTINEL not in p.read_text(errors="replace"), p  # ...and never written
    assert SENTINEL not in captured.out + captured.err


def test_missing_key_and_missing_sdk_are_one_line_errors(env, tmp_path, capsys, monkeypatch):
    env.delenv("ANTHROPIC_API_KEY")
    with FakeApi() as api:
        assert claude(api, tmp_path) == 2
    assert capsys.readouterr().err.strip() == "error: ANTHROPIC_API_KEY environment variable not set"
    env.setenv("ANTHROPIC_API_KEY", SENTINEL)
    monkeypatch.setitem(sys.modules, "anthropic", None)
    with FakeApi() as api:
        assert claude(api, tmp_path) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pip install anthropic" in err[0] and "[api]" in err[0]


def test_base_url_with_credentials_is_refused(env, tmp_path, capsys):
    from smmile.cli.run import main

    rc = main(["--backend", "openai-compatible", "--base-url", "http://user:pw@127.0.0.1:9/v1", "--model", "m",
               "--dataset", "demo", "--output-dir", str(tmp_path)])
    assert rc == 2 and "must not carry credentials" in capsys.readouterr().err


def test_unreachable_server_stops_early_and_resumes(env, tmp_path, capsys):
    import socket

    with socket.socket() as s:  # a port with nobody listening
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    rc = api_models.anthropic_main(["--dataset", "demo", "--output-dir", str(tmp_path), "--base-url", dead,
                                 "--allow-key-for-host", "127.0.0.1", "--inference_mode", "0-shot", "--max-retries", "0", "--concurrency", "2",
                                 "--max-consecutive-failures", "3"])
    err = capsys.readouterr().err
    assert rc == 1 and "in a row failed" in err and "not started" in err
    line = next(x for x in err.splitlines() if "in a row failed" in x)  # the cause, not only the count
    assert f"after all retries at {dead}" in line and "(last error: Connection error" in line
    assert not (tmp_path / "result_claude-3-7-sonnet_0-shot_open.csv").exists()  # no all-error result file
    with FakeApi() as api:  # the server is back: the rerun does everything
        assert claude(api, tmp_path) == 0
        assert len(api.requests()) == 24
