"""--max-cost that holds in flight (issue 32, findings 1 and 8): under --batch each chunk's at-most estimate (batch
price) is reserved before it is submitted, batches in flight (this run's and an earlier, killed run's) included;
synchronously, a request waits for the reservations in flight instead of stopping the run early."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys

import pytest

import test_api_batch as tb
from api_server import FakeApi
from batch_fakes import FakeBatchApi
from childproc import default_signals
from smmile.models.api import batch as batchmod

pytestmark = pytest.mark.server
PRICE = ("--price", "1:100")  # USD per million input:output tokens: the output cap dominates the at-most estimate
STEM = tb.STEM["anthropic"].format(mode="0-shot")


@pytest.fixture
def env(monkeypatch):
    for var in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


def manifest(out) -> dict:
    return json.loads((out / f"{STEM}.manifest.json").read_text())["backend"]["accounting"]


def journal_cost(out) -> float:
    if not (out / ".smmile" / f"{STEM}.journal.jsonl").exists():
        return 0.0
    return sum(r["response"]["usage"].get("cost_usd", 0.0) for r in tb.journal(out, "anthropic").values())


# -- finding 1: `smmile run ... --batch --max-cost 0.001` spent 15.6x its budget -----------------------------------------
def test_a_batch_over_the_budget_submits_nothing_and_says_so(env, tmp_path, capsys):
    with FakeBatchApi() as api:
        tb.front(tb.point(env, "anthropic", api.url), tmp_path, *tb.BATCH, *PRICE, "--max-cost", "0.001")
        assert api.created() == [] and ("POST", "/v1/messages/batches") not in api.calls
    err = capsys.readouterr().err
    line = next(x for x in err.splitlines() if "--max-cost 0.001 USD" in x)
    assert "submitted nothing" in line and "24 problems not started" in line


CHILD = """
import sys
sys.path.insert(0, {front!r})
from smmile.models.api import batch
batch.LIMITS["anthropic"] = (10, 10**9)
from smmile.cli import api_models
sys.exit(api_models.anthropic_main(sys.argv[1:]))
"""


def test_a_batch_run_killed_and_rerun_stays_within_the_budget_counting_its_first_submission(env, tmp_path, monkeypatch):
    monkeypatch.setitem(batchmod.LIMITS, "anthropic", (10, 10**9))
    with FakeBatchApi() as api:  # the whole run's at-most estimate, as its manifest records it
        assert tb.front(tb.point(env, "anthropic", api.url), tmp_path / "whole", *tb.BATCH, *PRICE) == 0
    whole = manifest(tmp_path / "whole")["estimate_before_sending"]["cost_usd_at_most"]
    assert whole > 0
    budget = round(0.6 * whole, 6)  # one batch of 10 fits, two do not
    out = tmp_path / "killed"
    with FakeBatchApi() as api:
        api.release.clear()
        argv = tb.point(env, "anthropic", api.url)
        cmd = [sys.executable, "-c", CHILD.format(front=str(tb.FRONT)), *argv[1:], "--dataset", "demo",
               "--output-dir", str(out), "--inference_mode", "0-shot", *tb.BATCH, *PRICE, "--max-cost", str(budget)]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                preexec_fn=default_signals)
        try:
            tb.wait_for(lambda: tb.ledger(out, "anthropic") and len(api.calls) >= 3, proc)
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        assert [len(b["custom_ids"]) for b in api.created()] == [10]  # the second 10 waited for the first
        api.release.set()
        assert tb.front(argv, out, *tb.BATCH, *PRICE, "--max-cost", str(budget)) == 0
    # never more in flight than the budget: replay the ledger (estimates reserved at submission, freed at collection)
    in_flight, most = {}, 0.0
    for rec in tb.ledger(out, "anthropic"):
        if rec["state"] == "submitted":
            in_flight[rec["key"]] = rec["batch"]["estimate_usd"]
        else:
            in_flight.pop(rec["key"], None)
        most = max(most, sum(in_flight.values()))
    assert 0 < most <= budget
    assert journal_cost(out) <= budget and len(tb.journal(out, "anthropic")) == 24
    assert tb.csv_bytes(out, "anthropic") == tb.csv_bytes(tmp_path / "whole", "anthropic")


# -- finding 8: synchronous --max-cost stopped at 3 of 8 problems, "$0.0192 left, less than ... $0.0098" -------------------
def at_most(out, api) -> float:
    """The largest at-most estimate of one request: its estimated input tokens (journal) and max_tokens (sent)."""
    cap = max(r["body"]["max_tokens"] for r in api.requests())
    return max(r["response"]["extra"]["estimated_input_tokens"] * 1 / 1e6 + cap * 100 / 1e6
               for r in tb.journal(out, "anthropic").values())


def test_synchronous_budget_waits_for_reservations_in_flight_instead_of_stopping_early(env, tmp_path, capsys):
    with FakeApi(latency=0.05) as api:
        argv = tb.point(env, "anthropic", api.url)
        assert tb.front(argv, tmp_path / "whole", *PRICE, "--concurrency", "4") == 0
        one = at_most(tmp_path / "whole", api)
        budget = journal_cost(tmp_path / "whole") + one
        assert tb.front(argv, tmp_path / "fits", *PRICE, "--concurrency", "4", "--max-cost", f"{budget:.6f}") == 0
    assert len(tb.journal(tmp_path / "fits", "anthropic")) == 24
    assert manifest(tmp_path / "fits")["stopped_by_max_cost"] is False
    with FakeApi(latency=0.05) as api:  # half the real cost and a little: it stops, and its line adds up
        tb.front(tb.point(env, "anthropic", api.url), tmp_path / "half", *PRICE, "--concurrency", "4",
                 "--max-cost", f"{journal_cost(tmp_path / 'whole') / 2 + one:.6f}")
    line = next(x for x in capsys.readouterr().err.splitlines() if "USD reached" in x)
    left, estimate = map(float, re.search(r"([\d.]+) USD left, less than the next request's at-most estimate of "
                                          r"([\d.]+) USD", line).groups())
    assert left < estimate
    assert 0 < len(tb.journal(tmp_path / "half", "anthropic")) < 24
