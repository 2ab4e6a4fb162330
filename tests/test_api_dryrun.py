"""--dry-run sends nothing and estimates tokens by each provider's documented rule; the fake server counts
usage by the same documents (tests/api_server.py `_tokens`), and the real run's manifest holds both."""

from __future__ import annotations

import json
import math
import re

import pytest

from api_server import FakeApi
from smmile.cli import api_models
from smmile.models.api.accounting import anthropic_image_tokens, openai_image_tokens

pytestmark = pytest.mark.server
KEY = "sk-DRYRUN-9a8b7c6d5e4f"


def test_documented_image_rules():
    # OpenAI's worked examples: 1024x1024 high = 765; 2048x4096 high = 1105; any size at low = 85
    assert openai_image_tokens(1024, 1024) == 765
    assert openai_image_tokens(2048, 4096) == 1105
    assert openai_image_tokens(4096, 8192, "low") == 85
    # Anthropic's table: 1092x1092 (1.19 MP, scaled to 1.15 MP) ~ 1533; 200x200 ~ 54
    assert anthropic_image_tokens(200, 200) == math.ceil(200 * 200 / 750)
    assert abs(anthropic_image_tokens(1092, 1092) - 1533) <= 1


@pytest.mark.parametrize("front", ["openai", "anthropic"])
def test_dry_run_sends_nothing_and_estimates_within_10_percent(monkeypatch, tmp_path, capsys, front):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    for var in ("AZURE_OPENAI_API_KEY", "AZURE_OPENAI_ENDPOINT"):
        monkeypatch.delenv(var, raising=False)

    def call(api, *extra):
        common = ["--dataset", "demo", "--output-dir", str(tmp_path), "--allow-key-for-host", "127.0.0.1", *extra]
        if front == "openai":
            return api_models.openai_main(["--model", "gpt-4o", "--base-url", api.url + "/v1", *common])
        return api_models.anthropic_main(["--base-url", api.url, *common])

    with FakeApi() as api:
        assert call(api, "--dry-run") == 0
        assert api.requests() == []
    out = capsys.readouterr().out
    assert not any(p.is_file() for p in tmp_path.rglob("*"))
    assert "requests: 24" in out and "images: " in out and "batch" in out
    estimate = int(re.search(r"estimated input tokens: ([\d,]+)", out).group(1).replace(",", ""))
    with FakeApi() as api:
        assert call(api) == 0
        used = sum(r["body"] and 0 for r in api.requests())  # noqa: F841 (the fake reports usage per reply)
    stem = "result_gpt-4o_ICL_open" if front == "openai" else "result_claude-3-7-sonnet_ICL_open"
    manifest = json.loads((tmp_path / f"{stem}.manifest.json").read_text())
    real = manifest["usage"]["input_tokens"]
    assert abs(estimate - real) <= 0.10 * real
    before = manifest["backend"]["accounting"]["estimate_before_sending"]
    assert before["input_tokens"] == estimate and manifest["usage"]["cost_usd"] > 0
