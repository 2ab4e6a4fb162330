"""API runs a lab can leave overnight (issue 32), against loopback fakes: keys that cannot leak (scrubbed failures,
an egress check on every request), no orphaned or over-budget batch, polling that survives, a ledger that refuses
damage. Each test names the finding it reproduces and the command line it stands for."""

from __future__ import annotations

import json
import re
import threading

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


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1.nip.io", "127.0.0.1@evil.example",
                                  "\u0430pi.anthropic.com"])  # (a Cyrillic a: IDNA look-alike)
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


# -- finding 2: a create that timed out was retried by the SDK: two batches billed, one in the ledger ------------------
@pytest.mark.parametrize("provider", ["anthropic", "openai"])
@pytest.mark.parametrize("performed", [True, False], ids=["created-answer-lost", "not-created"])
def test_a_create_that_times_out_leaves_exactly_one_batch_billed_and_collected(env, tmp_path, provider, performed):
    def script(method, path, n):
        if method == "POST" and path.endswith("/batches") and n == 0:  # the first create: no answer within 1 s
            return Scripted(500, {"error": {"message": "late"}}, delay=2.5, then_serve=performed)
        return None

    with FakeApi(reply=tb.reply) as sync_api:
        assert tb.front(point(env, provider, sync_api.url), tmp_path / "sync") == 0
    with FakeBatchApi(reply=tb.reply, script=script) as api:
        assert tb.front(point(env, provider, api.url), tmp_path / "b", *BATCH, "--timeout", "1") == 0
        created = api.created()
    assert len(created) == 1 and len(created[0]["custom_ids"]) == 24
    assert tb.csv_bytes(tmp_path / "b", provider) == tb.csv_bytes(tmp_path / "sync", provider)
    assert [(r["key"], r["state"]) for r in tb.ledger(tmp_path / "b", provider)] == [
        (f"batch:{created[0]['id']}", "submitted"), (f"batch:{created[0]['id']}", "collected")]


def ledger_records(out, provider="anthropic") -> list[dict]:
    path = out / ".smmile" / f"{tb.STEM[provider].format(mode='0-shot')}.batches.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.exists() else []


def test_the_intent_with_its_input_file_is_on_disk_before_the_create(env, tmp_path):
    seen = []

    def script(method, path, n):
        if method == "POST" and path == "/v1/batches":
            seen.append([r["intent"] for r in ledger_records(tmp_path, "openai") if r["state"] == "intent"])
        return None

    with FakeBatchApi(script=script) as api:
        assert tb.front(point(env, "openai", api.url), tmp_path, *BATCH) == 0
        [batch] = api.batches.values()
    [[intent]] = seen
    assert intent["input_file_id"] == batch["input_file_id"] and batch["metadata"] == {"smmile_tag": intent["tag"]}
    assert sorted(intent["custom_ids"]) == sorted(c for c, _ in batch["items"])


# -- finding 6: `smmile run` without --batch after a killed --batch run sent every in-flight item again -----------------
def killed_in_flight(env, api, out, provider="anthropic") -> list[str]:
    """A --batch run killed once its batch is submitted and polled (the batch stays in flight)."""
    api.release.clear()
    argv = point(env, provider, api.url)
    proc = tb.start_child(argv, out)
    try:
        tb.wait_for(lambda: tb.ledger(out, provider) and ("GET", f"/v1/messages/batches/{api.created()[0]['id']}")
                    in api.calls if provider == "anthropic" else len(api.calls) >= 4, proc)
    finally:
        proc.kill()
        proc.wait()
    return argv


def test_a_run_without_batch_refuses_while_its_batches_are_in_flight(env, tmp_path, capsys):
    from smmile.cli import batches

    out = tmp_path / "o"
    with FakeBatchApi(reply=tb.reply) as api:
        argv = killed_in_flight(env, api, out)
        [batch] = api.created()
        capsys.readouterr()
        assert tb.front(argv, out) == 2
        assert not [c for c in api.calls if c[1] == "/v1/messages"]  # nothing sent synchronously
        err = [x for x in capsys.readouterr().err.strip().splitlines() if "problems done" not in x]  # (progress)
        assert len(err) == 1 and batch["id"] in err[0] and "--batch" in err[0]
        assert f"smmile batches cancel {out}" in err[0]
        assert batches.main(["ls", str(out)]) == 0
        listed = capsys.readouterr().out
        assert batch["id"] in listed and "submitted" in listed and "in_progress 0/24" in listed
        assert batches.main(["cancel", str(out)]) == 0
        assert f"canceled {batch['id']}" in capsys.readouterr().out
        assert (("POST", f"/v1/messages/batches/{batch['id']}/cancel")) in api.calls
    with FakeApi(reply=tb.reply) as sync_api:  # canceled: a synchronous run may send them now
        assert tb.front(point(env, "anthropic", sync_api.url), out) == 0


def test_batches_adopt_records_a_batch_whose_create_the_ledger_never_saw_answered(env, tmp_path, capsys):
    from smmile.cli import batches

    out = tmp_path / "o"
    with FakeApi(reply=tb.reply) as sync_api:
        assert tb.front(point(env, "anthropic", sync_api.url), tmp_path / "sync") == 0
    with FakeBatchApi(reply=tb.reply) as api:
        argv = killed_in_flight(env, api, out)
        [batch] = api.created()
        path = out / ".smmile" / f"{tb.STEM['anthropic'].format(mode='0-shot')}.batches.jsonl"
        path.write_text(path.read_text().splitlines()[0] + "\n")  # the intent only: the create's answer was lost
        assert batches.main(["adopt", str(out)]) == 0
        assert f"adopted {batch['id']}" in capsys.readouterr().out
        api.release.set()
        assert tb.front(argv, out, *BATCH) == 0
        assert api.created() == [batch]
    assert tb.csv_bytes(out, "anthropic") == tb.csv_bytes(tmp_path / "sync", "anthropic")


# -- finding 5: a network blip while polling ended a 24-hour wait with an APIConnectionError traceback -----------------
@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_polling_outlives_dropped_connections_and_server_errors(env, tmp_path, provider):
    def script(method, path, n):
        status_check = method == "GET" and re.fullmatch(r"/v1(/messages)?/batches/[^/]+", path)
        if status_check and n < 4:
            return Scripted((0, 503, 0, 502)[n], {"error": {"message": "blip"}})
        return None

    with FakeApi(reply=tb.reply) as sync_api:
        assert tb.front(point(env, provider, sync_api.url), tmp_path / "sync") == 0
    with FakeBatchApi(reply=tb.reply, script=script, polls=2) as api:
        # four failures in a row: more than --max-retries, which bounds a request, not the wait for a batch
        assert tb.front(point(env, provider, api.url), tmp_path / "b", *BATCH, "--max-retries", "1") == 0
        assert len(api.created()) == 1
    assert tb.csv_bytes(tmp_path / "b", provider) == tb.csv_bytes(tmp_path / "sync", provider)


# -- finding 7: a batch failed for a full queue (token_limit_exceeded) was resubmitted at once, 6 times in 2 s -----------
def test_a_batch_failed_for_quota_waits_and_is_split(env, tmp_path, caplog):
    def failed(kind, items):
        if len(items) > 6:
            return [{"code": "token_limit_exceeded", "message": "Enqueued token limit reached", "line": None}]
        return None

    with FakeApi(reply=tb.reply) as sync_api:
        assert tb.front(point(env, "openai", sync_api.url), tmp_path / "sync") == 0
    with FakeBatchApi(reply=tb.reply, failed=failed) as api:
        assert tb.front(point(env, "openai", api.url), tmp_path / "b", *BATCH) == 0
        sizes = [len(b["custom_ids"]) for b in api.created()]
    assert sizes == [24, 12, 12, 6, 6, 6, 6]
    assert sum("waiting" in r.getMessage() and "smaller batches" in r.getMessage() for r in caplog.records) == 3
    assert tb.csv_bytes(tmp_path / "b", "openai") == tb.csv_bytes(tmp_path / "sync", "openai")


def test_a_batch_refused_as_invalid_stops_and_names_the_line(env, tmp_path, capsys):
    def failed(kind, items):
        return [{"code": "invalid_request", "message": "Unrecognized request argument", "line": 3}]

    with FakeBatchApi(reply=tb.reply, failed=failed) as api:
        assert tb.front(point(env, "openai", api.url), tmp_path, *BATCH) == 2
        [batch] = api.created()
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert f"line 3 (problem {batch['custom_ids'][2]})" in err and "Unrecognized request argument" in err


# -- finding 11: the ledger under damage -------------------------------------------------------------------------------
def ledger_file(out, provider="anthropic"):
    return out / ".smmile" / f"{tb.STEM[provider].format(mode='0-shot')}.batches.jsonl"


def edit_submitted(out, edit) -> None:
    """Apply `edit` to the `submitted` record of the ledger (as a user's editor or a bad disk would)."""
    path = ledger_file(out)
    lines = path.read_text().splitlines()
    i = next(i for i, x in enumerate(lines) if json.loads(x)["state"] == "submitted")
    rec = json.loads(lines[i])
    edit(rec)
    lines[i] = json.dumps(rec)
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("damage", ["no batch.id", "custom_ids 5"])
def test_a_damaged_ledger_record_is_one_line_and_exit_2(env, tmp_path, capsys, damage):
    out = tmp_path / "o"
    with FakeBatchApi(reply=tb.reply) as api:
        argv = killed_in_flight(env, api, out)
        edit_submitted(out, (lambda r: r["batch"].pop("id")) if damage == "no batch.id"
                       else (lambda r: r["batch"].update(custom_ids=5)))
        capsys.readouterr()
        assert tb.front(argv, out, *BATCH) == 2
        assert len(api.created()) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and str(ledger_file(out)) in err.strip().splitlines()[-1]


def test_a_ledger_whose_last_record_was_cut_short_is_reconciled_not_paid_twice(env, tmp_path):
    out = tmp_path / "o"
    with FakeApi(reply=tb.reply) as sync_api:
        assert tb.front(point(env, "anthropic", sync_api.url), tmp_path / "sync") == 0
    with FakeBatchApi(reply=tb.reply) as api:
        argv = killed_in_flight(env, api, out)
        path = ledger_file(out)
        lines = path.read_text().splitlines()
        i = next(i for i, x in enumerate(lines) if json.loads(x)["state"] == "submitted")
        path.write_text("\n".join(lines[:i] + [lines[i][: len(lines[i]) // 2]]))  # the kill came mid-record
        api.release.set()
        assert tb.front(argv, out, *BATCH) == 0
        assert len(api.created()) == 1
    assert tb.csv_bytes(out, "anthropic") == tb.csv_bytes(tmp_path / "sync", "anthropic")


@pytest.mark.timeout(120)
def test_a_ledger_replaced_by_a_named_pipe_is_refused_without_hanging(env, tmp_path, capsys):
    import os

    out = tmp_path / "o"
    with FakeBatchApi(reply=tb.reply) as api:
        argv = killed_in_flight(env, api, out)
        ledger_file(out).unlink()
        os.mkfifo(ledger_file(out))
        assert tb.front(argv, out, *BATCH) == 2
    assert "is not a regular file" in capsys.readouterr().err


def test_an_edited_expiry_cancels_nothing(env, tmp_path):
    out = tmp_path / "o"
    with FakeBatchApi(reply=tb.reply, polls=3) as api:
        argv = killed_in_flight(env, api, out)
        edit_submitted(out, lambda r: r["batch"].update(expires_at=1))
        api.release.set()
        assert tb.front(argv, out, *BATCH) == 0
        assert len(api.created()) == 1 and not [c for c in api.calls if c[1].endswith("/cancel")]


def test_smmile_folder_link_is_followed_and_a_ledger_link_refused_as_the_journal_is(env, tmp_path, capsys):
    out, elsewhere = tmp_path / "o", tmp_path / "state-disk"
    out.mkdir()
    elsewhere.mkdir()
    (out / ".smmile").symlink_to(elsewhere)
    with FakeBatchApi(reply=tb.reply) as api:
        argv = point(env, "anthropic", api.url)
        assert tb.front(argv, out, *BATCH) == 0
        assert {p.name.split(".")[-2] for p in elsewhere.iterdir()} >= {"journal", "batches"}
        other = tmp_path / "o2"
        (other / ".smmile").mkdir(parents=True)
        (other / ".smmile" / ledger_file(out).name).symlink_to(elsewhere / ledger_file(out).name)
        assert tb.front(argv, other, *BATCH) == 2
    assert "the batch ledger" in capsys.readouterr().err.strip().splitlines()[-1]


@pytest.mark.parametrize("flags,says", [(("--batch", "--poll-interval", "1e-6"), "between 0.01 and 3600"),
                                        (("--batch", "--poll-interval", "1e9"), "between 0.01 and 3600"),
                                        (("--concurrency", "100000"), "at most 512"),
                                        (("--poll-interval", "5"), "--poll-interval is for --batch runs only")])
def test_out_of_range_batch_flags_are_one_line(env, tmp_path, capsys, flags, says):
    env.setenv("ANTHROPIC_API_KEY", KEYS["anthropic"])
    try:
        code = tb.front(["anthropic", "--base-url", "http://127.0.0.1:9"], tmp_path, *flags)
    except SystemExit as exc:  # argparse's own exit
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert says in err[-1] and not (tmp_path / ".smmile").exists()


def test_batch_progress_shows_batches_not_request_concurrency(env, tmp_path, capsys):
    with FakeBatchApi(reply=tb.reply) as api:
        assert tb.front(point(env, "anthropic", api.url), tmp_path, *BATCH) == 0
    progress = [x for x in capsys.readouterr().err.splitlines() if "24/24 problems" in x]
    assert progress and "batches in flight" in progress[-1] and "concurrency" not in progress[-1]


# -- finding 9: Azure ------------------------------------------------------------------------------------------------
def test_azure_waits_for_its_upload_to_be_processed_before_creating(env, tmp_path):
    with FakeBatchApi(reply=tb.reply, file_pending=2) as api:  # the upload answers `pending` twice
        assert tb.front(point(env, "azure", api.url), tmp_path, *BATCH) == 0
        assert len(api.created()) == 1
        checks = [c for c in api.calls if c == ("GET", "/openai/files/file-0001")]
    assert len(checks) == 3


def test_azure_batches_past_their_window_are_not_canceled(env, tmp_path):
    with FakeBatchApi(reply=tb.reply, expires_in=-2 * 3600) as api:  # past its window (Azure does not expire it)
        api.release.clear()
        threading.Timer(1.5, api.release.set).start()
        assert tb.front(point(env, "azure", api.url), tmp_path, *BATCH) == 0
        assert len(api.created()) == 1 and not [c for c in api.calls if c[1].endswith("/cancel")]


def test_azure_batch_deployment_is_sent_and_priced_as_its_model(env, tmp_path, caplog):
    with FakeBatchApi(reply=tb.reply) as api:
        assert tb.front(point(env, "azure", api.url), tmp_path / "a", *BATCH) == 0
        assert "--batch-deployment" in caplog.text
        assert tb.front(point(env, "azure", api.url), tmp_path / "b", *BATCH, "--batch-deployment", "gpt-4o-gb") == 0
        models = {b["model"] for b in api.bodies().values()}
    assert models == {"gpt-4o-gb"}
    manifest = json.loads(next((tmp_path / "b").glob("*.manifest.json")).read_text())["backend"]["accounting"]
    assert manifest["price_usd_per_mtok"] == {"input": 2.5, "output": 10.0} and manifest["estimated_cost_usd"] > 0


# -- finding 12: IPv6 hosts lost their brackets; uploaded files were never deleted; prices dated in code ----------------
def test_ipv6_hosts_keep_their_brackets():
    from smmile.models.api.secrets import public_url

    assert public_url("http://user:pw@[::1]:8000/v1?k=1") == "http://[::1]:8000/v1"


def test_uploaded_and_result_files_are_deleted_once_collected(env, tmp_path):
    with FakeBatchApi(reply=tb.reply) as api:
        assert tb.front(point(env, "openai", api.url), tmp_path, *BATCH) == 0
        [batch] = api.batches.values()
        assert batch["input_file_id"] in api.deleted and batch["out_id"] in api.deleted and api.files == {}


def test_a_prices_file_overrides_the_shipped_dated_table_and_the_dry_run_says_its_date(env, tmp_path, capsys):
    from smmile.models.api import prices

    shipped = json.loads(prices.SHIPPED.read_text())
    assert shipped["date"] and shipped["models"]["gpt-4o"] == [2.5, 10.0]
    mine = tmp_path / "prices.json"
    mine.write_text(json.dumps({"date": "2031-01-01", "models": {"claude-3-7-sonnet-20250219": [30, 150]}}))
    env.setenv("ANTHROPIC_API_KEY", KEYS["anthropic"])
    argv = ["anthropic", "--base-url", "http://127.0.0.1:9", "--allow-key-for-host", "127.0.0.1"]
    assert tb.front(argv, tmp_path / "a", "--dry-run") == 0
    assert tb.front(argv, tmp_path / "b", "--dry-run", "--prices", str(mine)) == 0
    shipped_line, mine_line = [x for x in capsys.readouterr().out.splitlines() if "estimated cost" in x]
    assert f"prices of {shipped['date']}" in shipped_line and f"prices of 2031-01-01 ({mine})" in mine_line
    assert "USD 30 / 150 per million" in mine_line


# -- deliverable 7: --deadline: a batch, and its stragglers sent synchronously when the deadline nears -------------------
@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_deadline_cancels_the_batch_and_sends_its_stragglers_synchronously(env, tmp_path, provider):
    import time

    with FakeApi(reply=tb.reply) as sync_api:
        assert tb.front(point(env, provider, sync_api.url), tmp_path / "sync") == 0
    with FakeBatchApi(reply=tb.reply) as api:
        api.release.clear()  # the batch would not end by itself
        t0 = time.monotonic()
        assert tb.front(point(env, provider, api.url), tmp_path / "d", "--deadline", "3s", "--poll-interval", "0.05",
                        *PRICE_FLAGS) == 0
        seconds = time.monotonic() - t0
        [batch] = api.created()
        sync_posts = [c for c in api.calls if c[0] == "POST" and c[1] in ("/v1/messages", "/v1/chat/completions")]
        assert [c for c in api.calls if c[1].endswith(f"{batch['id']}/cancel")]
    assert len(sync_posts) == 24 and seconds < 3 + 15
    assert tb.csv_bytes(tmp_path / "d", provider) == tb.csv_bytes(tmp_path / "sync", provider)
    assert [r["state"] for r in tb.ledger(tmp_path / "d", provider)] == ["submitted", "collected"]


PRICE_FLAGS = ("--max-cost", "100")
