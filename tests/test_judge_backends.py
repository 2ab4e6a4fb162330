"""The ollama and openai SDK backends against a fake HTTP server on 127.0.0.1: request bodies
(protocol options), reply extraction and retries of transient errors."""

import http.server
import json
import threading

import pytest

from smmile.scoring import judge_backends
from smmile.scoring.judge import JudgeSettings


class FakeServer:
    """Records JSON request bodies; answers from a list of (status, body) (last one repeats)."""

    def __init__(self, answers):
        self.answers, self.requests = list(answers), []
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.requests.append((self.path, body))
                status, payload = fake.answers.pop(0) if len(fake.answers) > 1 else fake.answers[0]
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


OLLAMA_OK = {"model": "llama3.3", "created_at": "2025-01-01T00:00:00Z",
             "message": {"role": "assistant", "content": "1"}, "done": True}
OPENAI_OK = {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
             "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "0"}}]}


@pytest.fixture
def server(request):
    fake = FakeServer(request.param)
    yield fake
    fake.close()


@pytest.mark.parametrize("server", [[(503, {"error": "busy"}), (200, OLLAMA_OK)]], indirect=True)
def test_ollama_backend(server):
    pytest.importorskip("ollama")
    settings = JudgeSettings(backend="ollama", base_url=server.url, protocol="corrected", seed=5, max_tokens=2,
                             retry_wait=0.01)
    ask = judge_backends.make_asker(settings)
    assert ask("prompt") == "1"
    assert len(server.requests) == 2  # the 503 was retried
    path, body = server.requests[-1]
    assert path == "/api/chat" and body["model"] == "llama3.3"
    assert body["messages"] == [{"role": "user", "content": "prompt"}]
    assert body["options"] == {"temperature": 0.0, "seed": 5, "num_predict": 2}


@pytest.mark.parametrize("server", [[(200, OLLAMA_OK)]], indirect=True)
def test_ollama_paper_protocol_sends_no_options(server, monkeypatch):
    pytest.importorskip("ollama")
    monkeypatch.setenv("OLLAMA_HOST", server.url)
    assert judge_backends.make_asker(JudgeSettings())("p") == "1"
    assert not server.requests[0][1].get("options")


@pytest.mark.parametrize("server", [[(500, {"error": {"message": "oops"}}), (200, OPENAI_OK)]], indirect=True)
def test_openai_backend(server):
    pytest.importorskip("openai")
    settings = JudgeSettings(backend="openai", model="m", base_url=server.url + "/v1", retry_wait=0.01)
    assert judge_backends.make_asker(settings)("prompt") == "0"
    assert len(server.requests) == 2
    path, body = server.requests[-1]
    assert path == "/v1/chat/completions" and body["model"] == "m"
    assert "temperature" not in body and "seed" not in body and "max_tokens" not in body  # paper protocol
    corrected = JudgeSettings(backend="openai", model="m", base_url=server.url + "/v1", protocol="corrected")
    judge_backends.make_asker(corrected)("prompt")
    assert server.requests[-1][1]["temperature"] == 0.0 and server.requests[-1][1]["seed"] == 0


@pytest.mark.parametrize("server", [[(400, {"error": {"message": "bad request"}})]], indirect=True)
def test_openai_client_error_not_retried(server):
    pytest.importorskip("openai")
    settings = JudgeSettings(backend="openai", model="m", base_url=server.url + "/v1", retry_wait=0.01)
    with pytest.raises(judge_backends.JudgeRequestError, match="HTTP 400"):
        judge_backends.make_asker(settings)("prompt")
    assert len(server.requests) == 1
