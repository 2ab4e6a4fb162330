"""API runs a lab can leave overnight (issue 32), against loopback fakes: keys that cannot leak (scrubbed failures,
an egress check on every request), no orphaned or over-budget batch, polling that survives, a ledger that refuses
damage. Each test names the finding it reproduces and the command line it stands for."""

from __future__ import annotations

import json

import pytest

import test_api_batch as tb
from api_server import FakeApi, LoopbackServer
from batch_fakes import FakeBatchApi, Scripted

pytestmark = pytest.mark.server
KEYS = {"anthropic": "sk-ant-SECRET-0123456789abcdef", "openai": "sk-SECRET-0123456789abcdef",
        "azure": "azure-SECRET-0123456789abcdef"}
BATCH = tb.BATCH


@pytest.fixture
def env(monkeypatch):
    for var in ("AZURE_OPENAI_API_KEY", "AZURE_OPENAI_ENDPOINT", "AZURE_OPENAI_API_VERSION", "OPENAI_API_KEY",
                "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_COMPATIBLE_API_KEY",
                "OPENAI_ORG_ID", "OPENAI_PROJECT_ID"):
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


def point(env, provider: str, url: str) -> list[str]:
    argv = tb.point(env, provider, url)
    env.setenv({"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY", "azure": "AZURE_OPENAI_API_KEY"}[provider],
               KEYS[provider])
    return argv


# -- finding 3: `smmile run ... --batch` with a refused key printed ~50 lines of traceback ending in the key --------
@pytest.mark.parametrize("provider,status,code", [("anthropic", 401, 2), ("openai", 401, 2), ("anthropic", 500, 1),
                                                   ("openai", 500, 1)])
def test_a_failed_batch_create_is_one_scrubbed_line(env, tmp_path, capsys, provider, status, code):
    def script(method, path, n):
        if method == "POST" and path.endswith("/batches"):
            message = f"Incorrect API key provided: {KEYS[provider]}"
            return Scripted(status, {"type": "error", "error": {"type": "api_error", "message": message}})
        return None

    with FakeBatchApi(script=script) as api:
        assert tb.front(point(env, provider, api.url), tmp_path, *BATCH, "--max-retries", "1") == code
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1]
    assert "Traceback" not in err and KEYS[provider] not in err
    assert last.startswith("error: ") and str(status) in last


# -- finding 4: a batch whose results_url names another host received x-api-key there ----------------------------------
class Recorder(LoopbackServer):
    """Any request recorded (headers too), answered 404."""

    def __init__(self):
        import http.server

        rec = self.seen = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                rec.append({k.lower(): v for k, v in self.headers.items()})
                self.send_response(404)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self._serve(Handler)


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1.nip.io", "127.0.0.1@evil.example"])
def test_results_url_on_another_host_never_receives_the_key(env, tmp_path, capsys, host):
    with Recorder() as other:
        port = other.url.rsplit(":", 1)[1]
        with FakeBatchApi(results_host=f"http://{host}:{port}") as api:
            code = tb.front(point(env, "anthropic", api.url), tmp_path, *BATCH)
        assert other.seen == []
    err = capsys.readouterr().err
    assert code == 2 and "refused to send the ANTHROPIC_API_KEY key" in err.strip().splitlines()[-1]
    assert KEYS["anthropic"] not in err


def test_a_redirect_to_another_host_is_refused_before_it_is_sent(env, tmp_path, capsys):
    import http.server

    with Recorder() as other:
        class Redirect(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                self.send_response(307)
                self.send_header("location", other.url.replace("127.0.0.1", "localhost") + self.path)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        server = LoopbackServer()
        server._serve(Redirect)
        with server:
            code = tb.front(point(env, "anthropic", server.url), tmp_path, "--max-retries", "0")
        assert other.seen == []
    assert code == 2 and "refused to send the ANTHROPIC_API_KEY key to localhost" in capsys.readouterr().err


# -- finding 12: `--base-url http://api.openai.com/v1` sent the key in plain text -----------------------------------------
def test_plain_http_to_a_remote_host_is_refused_before_anything_is_sent(env, tmp_path, capsys):
    env.setenv("OPENAI_API_KEY", KEYS["openai"])
    code = tb.front(["openai", "--model", "gpt-4o", "--provider", "openai", "--base-url", "http://api.openai.com/v1"],
                    tmp_path)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "plain text" in err[0] and KEYS["openai"] not in err[0]
    assert not (tmp_path / ".smmile").exists()


def test_the_manifest_says_plain_http_went_to_a_loopback_server_only(env, tmp_path):
    with FakeApi() as api:
        assert tb.front(point(env, "anthropic", api.url), tmp_path) == 0
    manifest = json.loads(next(tmp_path.glob("*.manifest.json")).read_text())
    assert "plain http to this machine" in manifest["backend"]["egress"]
