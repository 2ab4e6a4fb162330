"""--batch against loopback fakes of the OpenAI / Azure OpenAI Batch API and Anthropic Message Batches: CSVs and
request bodies identical to the synchronous path's, results matched by custom_id, partial errors and expiry
resubmitted alone, limits split, and a client killed between submit and collect re-attaching on rerun."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from api_server import FakeApi, body_key
from batch_fakes import FakeBatchApi
from childproc import default_signals
from smmile.cli import api_models
from smmile.models.api import batch as batchmod

pytestmark = pytest.mark.server
FRONT = Path(__file__).resolve().parents[1] / "inference_and_evaluation"
STEM = {"anthropic": "result_claude-3-7-sonnet_{mode}_open", "openai": "result_gpt-4o_{mode}_open",
        "azure": "result_gpt-4o_{mode}_open"}


def reply(rec: dict) -> str:
    """A reply that differs per problem (a result matched to the wrong problem shows in the CSV)."""
    return f"<think>compared the examples</think>\n<answer>{body_key(rec)[:10]}</answer>"


@pytest.fixture
def env(monkeypatch):
    for var in ("AZURE_OPENAI_API_KEY", "AZURE_OPENAI_ENDPOINT", "AZURE_OPENAI_API_VERSION", "OPENAI_API_KEY",
                "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_COMPATIBLE_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


def point(env, provider: str, url: str) -> list[str]:
    """Environment and argv of `provider`'s front door aimed at the fake at `url`."""
    if provider == "anthropic":
        env.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
        env.setenv("ANTHROPIC_BASE_URL", url)
        return ["anthropic", "--base-url", url]
    if provider == "openai":
        env.setenv("OPENAI_API_KEY", "sk-test")
        env.setenv("OPENAI_BASE_URL", url + "/v1")
        return ["openai", "--model", "gpt-4o", "--provider", "openai", "--base-url", url + "/v1"]
    env.setenv("AZURE_OPENAI_API_KEY", "azure-test")
    env.setenv("AZURE_OPENAI_ENDPOINT", url)
    return ["openai", "--model", "gpt-4o", "--provider", "azure"]


def front(argv: list[str], out: Path, *extra: str, mode: str = "0-shot") -> int:
    main = api_models.anthropic_main if argv[0] == "anthropic" else api_models.openai_main
    return main([*argv[1:], "--dataset", "demo", "--output-dir", str(out), "--inference_mode", mode, *extra])


def csv_bytes(out: Path, provider: str, mode: str = "0-shot") -> bytes:
    return (out / f"{STEM[provider].format(mode=mode)}.csv").read_bytes()


def journal(out: Path, provider: str, mode: str = "0-shot") -> dict[str, dict]:
    path = out / ".smmile" / f"{STEM[provider].format(mode=mode)}.journal.jsonl"
    return {r["key"]: r for r in map(json.loads, path.read_text().splitlines())}


def ledger(out: Path, provider: str, mode: str = "0-shot") -> list[dict]:
    path = out / ".smmile" / f"{STEM[provider].format(mode=mode)}.batches.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    return [r for r in records if r["key"].startswith("batch:")]  # (intents: test_api_overnight.py)


def canonical(body: dict) -> str:
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


BATCH = ("--batch", "--poll-interval", "0.02")


@pytest.mark.parametrize("provider,mode", [("anthropic", "ICL"), ("openai", "0-shot"), ("azure", "0-shot")])
def test_batch_and_sync_give_identical_csvs_and_request_bodies(env, tmp_path, provider, mode):
    with FakeApi(reply=reply) as sync_api:
        assert front(point(env, provider, sync_api.url), tmp_path / "sync", mode=mode) == 0
        sync_bodies = sorted(canonical(r["body"]) for r in sync_api.requests())
    with FakeBatchApi(reply=reply, polls=3) as api:
        assert front(point(env, provider, api.url), tmp_path / "batch", *BATCH, mode=mode) == 0
        created, bodies = api.created(), api.bodies()
        calls = list(api.calls)
    assert csv_bytes(tmp_path / "batch", provider, mode) == csv_bytes(tmp_path / "sync", provider, mode)
    assert len(created) == 1 and created[0]["kind"] == provider
    # the bodies are the synchronous ones (images included), key for key and value for value
    assert sorted(canonical(b) for b in bodies.values()) == sync_bodies
    assert any('"image' in b for b in sync_bodies)
    # custom_id = journal key; the ledger holds the batch id and its custom_id -> key map
    keys = journal(tmp_path / "batch", provider, mode)
    assert set(created[0]["custom_ids"]) == set(keys) and len(keys) == 24
    assert all(r["response"]["extra"]["batch"] == created[0]["id"] for r in keys.values())
    states = [(r["key"], r["state"]) for r in ledger(tmp_path / "batch", provider, mode)]
    assert states == [(f"batch:{created[0]['id']}", "submitted"), (f"batch:{created[0]['id']}", "collected")]
    assert ledger(tmp_path / "batch", provider, mode)[0]["batch"]["custom_ids"] == {k: k for k in keys}
    if provider == "azure":
        assert ("POST", "/openai/files") in calls and ("POST", "/openai/batches") in calls
    # a rerun finds every answer journaled: no batch, same CSV
    with FakeBatchApi(reply=reply) as api:
        assert front(point(env, provider, api.url), tmp_path / "batch", *BATCH, mode=mode) == 0
        assert api.created() == [] and api.calls == []
    assert csv_bytes(tmp_path / "batch", provider, mode) == csv_bytes(tmp_path / "sync", provider, mode)


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_partial_errors_and_expiry_resubmit_only_those_items(env, tmp_path, provider):
    with FakeApi(reply=reply) as sync_api:
        assert front(point(env, provider, sync_api.url), tmp_path / "sync") == 0
    fate: dict[str, object] = {}

    def outcome(cid, body, before):
        if before == 0 and len(fate) < 3:
            fate[cid] = (500, 400, "expired")[len(fate)]  # transient, permanent, expired
            return fate[cid]
        return "ok"

    with FakeBatchApi(reply=reply, outcome=outcome, polls=2) as api:
        assert front(point(env, provider, api.url), tmp_path / "b", *BATCH) == 1  # the 400 problem failed
        created = api.created()
    transient, permanent, expired = fate
    assert len(created) == 2 and len(created[0]["custom_ids"]) == 24
    assert sorted(created[1]["custom_ids"]) == sorted([transient, expired])  # only those, resubmitted at once
    records = journal(tmp_path / "b", provider)
    assert records[permanent]["status"] == "error" and "400" in records[permanent]["response"]["error"]
    assert records[transient]["response"]["extra"]["attempts"] == 2
    assert sum(r["status"] == "ok" for r in records.values()) == 23
    # a rerun sends the errored item alone and ends with the synchronous CSV
    with FakeBatchApi(reply=reply) as api:
        assert front(point(env, provider, api.url), tmp_path / "b", *BATCH) == 0
        assert [b["custom_ids"] for b in api.created()] == [[permanent]]
    assert csv_bytes(tmp_path / "b", provider) == csv_bytes(tmp_path / "sync", provider)


def test_batches_are_split_at_the_request_and_byte_limits(env, tmp_path, monkeypatch):
    monkeypatch.setitem(batchmod.LIMITS, "anthropic", (10, 10**9))
    with FakeBatchApi(reply=reply) as api:
        assert front(point(env, "anthropic", api.url), tmp_path / "n", *BATCH) == 0
        assert [len(b["custom_ids"]) for b in api.created()] == [10, 10, 4]
    size = {k: len((json.dumps({"custom_id": k, "params": b}, ensure_ascii=False) + "\n").encode())
            for k, b in api.bodies().items()}
    cap = sum(size.values()) // 3
    monkeypatch.setitem(batchmod.LIMITS, "anthropic", (10**6, cap))
    with FakeBatchApi(reply=reply) as api:
        assert front(point(env, "anthropic", api.url), tmp_path / "bytes", *BATCH) == 0
        created = api.created()
    assert sorted(c for b in created for c in b["custom_ids"]) == sorted(size) and len(created) >= 3
    assert all(sum(size[c] for c in b["custom_ids"]) <= cap for b in created)
    assert csv_bytes(tmp_path / "bytes", "anthropic") == csv_bytes(tmp_path / "n", "anthropic")


CHILD = """
import sys
sys.path.insert(0, {front!r})
from smmile.cli import api_models
main = api_models.anthropic_main if sys.argv[1] == "anthropic" else api_models.openai_main
sys.exit(main(sys.argv[2:]))
"""


def start_child(argv: list[str], out: Path) -> subprocess.Popen:
    cmd = [sys.executable, "-c", CHILD.format(front=str(FRONT)), argv[0], *argv[1:], "--dataset", "demo",
           "--output-dir", str(out), "--inference_mode", "0-shot", *BATCH]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=default_signals)


def wait_for(what, proc: subprocess.Popen, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not what():
        if proc.poll() is not None:
            pytest.fail(f"the child exited with {proc.returncode}: {proc.stderr.read()[-2000:]}")
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail("timed out waiting for the child")
        time.sleep(0.05)


@pytest.mark.parametrize("provider,sig", [("anthropic", signal.SIGKILL), ("openai", signal.SIGKILL),
                                          ("anthropic", signal.SIGINT)])
def test_client_killed_between_submit_and_collect_reattaches(env, tmp_path, provider, sig):
    with FakeApi(reply=reply) as sync_api:
        assert front(point(env, provider, sync_api.url), tmp_path / "sync") == 0
    with FakeBatchApi(reply=reply, polls=2) as api:
        assert front(point(env, provider, api.url), tmp_path / "whole", *BATCH) == 0
    out = tmp_path / "killed"
    with FakeBatchApi(reply=reply, polls=2) as api:
        api.release.clear()  # batches stay in flight until the client is gone
        argv = point(env, provider, api.url)
        proc = start_child(argv, out)
        try:
            wait_for(lambda: ledger(out, provider) and len(api.calls) >= 3, proc)  # recorded, and polled once
            proc.send_signal(sig)
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert proc.returncode == (-signal.SIGKILL if sig == signal.SIGKILL else 130), proc.stderr.read()[-2000:]
        assert not (out / f"{STEM[provider].format(mode='0-shot')}.csv").exists()
        [submitted] = api.created()
        api.release.set()
        assert front(argv, out, *BATCH) == 0
        assert api.created() == [submitted]  # re-attached: no new batch for the submitted items
    assert csv_bytes(out, provider) == csv_bytes(tmp_path / "whole", provider) == csv_bytes(tmp_path / "sync", provider)
    assert [r["state"] for r in ledger(out, provider)] == ["submitted", "collected"]


def test_a_batch_the_provider_no_longer_knows_is_resubmitted(env, tmp_path):
    out = tmp_path / "gone"
    with FakeBatchApi(reply=reply) as api:
        api.release.clear()
        proc = start_child(point(env, "anthropic", api.url), out)
        try:
            wait_for(lambda: ledger(out, "anthropic"), proc)
        finally:
            proc.kill()
            proc.wait()
        [lost] = api.created()
    with FakeBatchApi(reply=reply) as api:  # another server: the recorded batch is unknown there (404)
        assert front(point(env, "anthropic", api.url), out, *BATCH) == 0
        [again] = api.created()
    assert sorted(again["custom_ids"]) == sorted(lost["custom_ids"])
    assert [r["state"] for r in ledger(out, "anthropic")] == ["submitted", "gone", "submitted", "collected"]


def test_a_batch_open_past_its_window_is_canceled_and_its_items_resubmitted_boundedly(env, tmp_path):
    with FakeBatchApi(reply=reply, expires_in=-2 * 3600) as api:  # every batch is already past its 24 h window
        api.release.clear()  # ... and would never end by itself
        assert front(point(env, "anthropic", api.url), tmp_path, *BATCH, "--max-retries", "1") == 1
        created = api.created()
        cancels = [path for method, path in api.calls if path.endswith("/cancel")]
    assert len(created) == 2 and created[1]["custom_ids"] == created[0]["custom_ids"]  # resubmitted once, no more
    assert cancels == [f"/v1/messages/batches/{b['id']}/cancel" for b in created]
    records = journal(tmp_path, "anthropic")
    assert len(records) == 24 and {r["response"]["error"] for r in records.values()} == {
        "ERROR: API Request Failed - batch request canceled"}


def test_batch_is_refused_where_there_is_no_batch_api(env, tmp_path, capsys):
    env.setenv("OPENAI_COMPATIBLE_API_KEY", "k")
    from smmile.cli import run as run_cli

    code = run_cli.main(["--model", "gpt-4o", "--backend", "openai-compatible", "--base-url", "http://127.0.0.1:9/v1",
                         "--dataset", "demo", "--output-dir", str(tmp_path), "--batch"])
    assert code == 2 and "--batch is for the OpenAI, Azure OpenAI and Anthropic backends" in capsys.readouterr().err


def judge_reply(rec: dict) -> str:
    prompt = json.dumps(rec["body"]["messages"])
    return "1" if any(f"red{i}" in prompt for i in (0, 2, 3)) else "0"


@pytest.mark.parametrize("provider", ["anthropic", "azure"])  # (openai at a non-OpenAI URL is openai-compatible)
def test_judge_batch_gives_the_synchronous_verdicts(env, tmp_path, provider):
    from smmile.cli import judge as judge_cli

    header = "problem_id,final_question,true_answer,generated_answer,full_response\n"
    outputs = {}
    for how in ("sync", "batch"):
        d = tmp_path / how
        d.mkdir()
        (d / "result_llava_7b_ICL.csv").write_text(header + "".join(f"p{i},q{i},Red{i},red{i},x\n" for i in range(5)))
        fake = FakeApi(reply=judge_reply) if how == "sync" else FakeBatchApi(reply=judge_reply, polls=2)
        with fake as api:
            point(env, provider, api.url)
            argv = [str(d), "--judge-backend", provider, "--judge-model", "judge-m"]
            assert judge_cli.main(argv + (list(BATCH) if how == "batch" else [])) == 0
            if how == "batch":
                assert len(api.created()) == 1 and len(api.created()[0]["custom_ids"]) == 5
                assert judge_cli.main(argv + list(BATCH)) == 0  # everything journaled: no new batch
                assert len(api.created()) == 1
        stats = json.loads((d / "result_llava_7b_ICL_evaluationllm.json").read_text())
        verdicts = [(j["problem_id"], j["value"]) for j in
                    map(json.loads, (d / "result_llava_7b_ICL_judgements.jsonl").read_text().splitlines())]
        outputs[how] = (stats, verdicts)
    assert outputs["batch"] == outputs["sync"]
    assert [v for _, v in outputs["sync"][1]] == [1, 0, 1, 1, 0]
    ledgers = list((tmp_path / "batch" / ".smmile" / "judge").glob("*.batches.jsonl"))
    records = [json.loads(x) for x in ledgers[0].read_text().splitlines()]
    assert len(ledgers) == 1 and [r["state"] for r in records if r["key"].startswith("batch:")] == [
        "submitted", "collected"]


def test_batch_status_lines_follow_the_log_level(env, tmp_path, capsys):
    """Batch status lines go through the command line's log (stderr): shown by default, silenced by -q."""
    with FakeBatchApi(reply=reply) as api:
        assert front(point(env, "openai", api.url), tmp_path / "loud", *BATCH) == 0
        assert "submitted" in capsys.readouterr().err
        assert front(point(env, "openai", api.url), tmp_path / "quiet", *BATCH, "-q") == 0
        assert "batch " not in capsys.readouterr().err


def test_batch_run_cost_is_the_discounted_cost_its_responses_record(env, tmp_path):
    """The manifest's cost (and what --max-cost counts) is the sum of the journaled responses' cost_usd, which for
    a batch request carries the batch discount (it was the tokens re-priced at the synchronous rate: twice that)."""
    with FakeBatchApi(reply=reply) as api:
        assert front(point(env, "openai", api.url), tmp_path / "b", *BATCH) == 0
    records = journal(tmp_path / "b", "openai").values()
    journaled = sum(r["response"]["usage"]["cost_usd"] for r in records)
    manifest = json.loads((tmp_path / "b" / f"{STEM['openai'].format(mode='0-shot')}.manifest.json").read_text())
    assert journaled > 0
    assert manifest["backend"]["accounting"]["estimated_cost_usd"] == pytest.approx(journaled, abs=1e-6)


@pytest.mark.parametrize("provider", ["azure", "openai"])
def test_batch_client_keeps_openai_account_headers_to_openai(env, tmp_path, provider):
    """OPENAI_ORG_ID / OPENAI_PROJECT_ID go to OpenAI only, with --batch as without (the batch client is built
    with the synchronous client's header rule)."""
    env.setenv("OPENAI_ORG_ID", "org-SECRETORG123")
    env.setenv("OPENAI_PROJECT_ID", "proj-SECRETPROJ456")
    with FakeBatchApi(reply=reply) as api:
        assert front(point(env, provider, api.url), tmp_path / "b", *BATCH) == 0
    sent = {"openai-organization", "openai-project"} & api.header_names
    assert sent == (set() if provider == "azure" else {"openai-organization", "openai-project"})
