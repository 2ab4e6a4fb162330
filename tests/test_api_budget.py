"""--max-cost holds across reruns: it counts what the journal says this output already cost, and stops before
the request that would cross it, with one line saying how much is left."""

from __future__ import annotations

import json

import pytest

from api_server import FakeApi
from smmile.cli import api_models

pytestmark = pytest.mark.server
KEY = "sk-BUDGET-1c2d3e4f5a6b"


def spent(out) -> float:
    """USD of every reply journaled for this output (the fake's usage x the --price below, summed here)."""
    total = 0.0
    for line in (out / ".smmile" / "result_claude-3-7-sonnet_0-shot_open.journal.jsonl").read_text().splitlines():
        usage = json.loads(line)["response"]["usage"]
        total += usage.get("input_tokens", 0) * 1000 / 1e6 + usage.get("output_tokens", 0) * 0 / 1e6
    return total


def test_rerun_continues_within_the_same_budget(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    cmd = ["--dataset", "demo", "--output-dir", str(tmp_path), "--inference_mode", "0-shot", "--allow-key-for-host",
           "127.0.0.1", "--concurrency", "2", "--price", "1000:0", "--max-cost", "0.3"]
    with FakeApi() as api:
        assert api_models.anthropic_main([*cmd, "--base-url", api.url]) == 1
        first = len(api.requests())
    after_first = spent(tmp_path)
    err = capsys.readouterr().err
    assert 0 < first < 24 and after_first <= 0.3
    line = next(x for x in err.splitlines() if "--max-cost 0.3 USD reached" in x)
    assert f"{0.3 - after_first:.4f} USD left" in line
    with FakeApi() as api:  # the same command again: the budget is what is left of 0.3, not 0.3 again
        rc = api_models.anthropic_main([*cmd, "--base-url", api.url])
        second = len(api.requests())
    assert rc == 1 and second < 24 - first
    assert spent(tmp_path) <= 0.3
    assert "before this run" in capsys.readouterr().err
