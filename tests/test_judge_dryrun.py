"""The judge's --dry-run (issue #21): nothing sent, nothing written; inference's report (`format_estimate` of
`ApiBackend.estimate`) per judge, a jury's total; the estimate within 10% of the usage the loopback fake
(tests/api_server.py, which counts tokens by the providers' documented rules) reports once the judge really runs."""

from __future__ import annotations

import json
import re

import pytest

from api_server import FakeApi
from smmile.cli import judge as judge_cli

pytestmark = pytest.mark.server
HEADER = "problem_id,final_question,true_answer,generated_answer,full_response\n"
STEM = "result_llava_7b_ICL"
KEY = "sk-ant-DRYRUN-5e4f3a2b1c"


@pytest.fixture
def folder(tmp_path, monkeypatch):
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_COMPATIBLE_API_KEY", "ANTHROPIC_API_KEY",
                "ANTHROPIC_BASE_URL", "OLLAMA_HOST"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    d = tmp_path / "results"
    d.mkdir()
    (d / f"{STEM}.csv").write_text(HEADER + "".join(
        f"p{i},Which finding in image {i} best explains the patient's symptoms?,Finding number {i},"
        f"a finding of kind {i * 7},x\n" for i in range(6)))
    return d


def files(d) -> dict:
    return {p: p.read_bytes() for p in d.rglob("*") if p.is_file()}


def estimates(out: str) -> list[int]:
    return [int(n.replace(",", "")) for n in re.findall(r"estimated input tokens: ([\d,]+)", out)]


def journal_usage(d, slug: str) -> int:
    (path,) = (d / ".smmile" / "judge").glob(f"{slug}-*.journal.jsonl")
    return sum(json.loads(x)["response"]["usage"]["input_tokens"] for x in path.read_text().splitlines())


def test_dry_run_single_judge_sends_and_writes_nothing(folder, capsys):
    before = files(folder)
    with FakeApi(reply=lambda rec: "1") as api:
        argv = [str(folder), "--judge-backend", "openai-compatible", "--judge-model", "m", "--judge-base-url",
                api.url + "/v1", "--protocol", "corrected", "--judge-max-tokens", "3", "--price", "2:8"]
        assert judge_cli.main([*argv, "--dry-run"]) == 0
        assert api.requests() == []
        assert files(folder) == before and not (folder / ".smmile").exists()
        out = capsys.readouterr().out
        assert "dry run: nothing sent. m (openai-compatible)" in out
        assert "requests: 6 (6 judge requests planned, 0 already journaled)" in out
        assert "output tokens: at most 18 (max_tokens 3 per request)" in out
        (estimate,) = estimates(out)
        sync = (estimate * 2 + 18 * 8) / 1e6  # --price 2:8 overrides the table
        assert f"${sync:,.4f} synchronous, ${sync / 2:,.4f} batch" in out

        assert judge_cli.main(argv) == 0
        assert len(api.requests()) == 6
        used = journal_usage(folder, "openai-compatible-m")
        assert abs(estimate - used) <= 0.10 * used

        capsys.readouterr()
        after = files(folder)
        assert judge_cli.main([*argv, "--dry-run"]) == 0  # the journal answers every request now
        assert "requests: 0 (6 judge requests planned, 6 already journaled)" in capsys.readouterr().out
        assert len(api.requests()) == 6 and files(folder) == after


def test_dry_run_of_a_jury_per_judge_then_each_judge_within_10_percent(folder, capsys):
    with FakeApi(reply=lambda rec: "1") as api:
        argv = [str(folder), "--allow-key-for-host", "127.0.0.1", "--jury", f"openai-compatible:m@{api.url}/v1",
                f"anthropic:claude-sonnet-4-20250514@{api.url}"]
        assert judge_cli.main([*argv, "--dry-run"]) == 0
        assert api.requests() == []
        assert not (folder / ".smmile").exists() and not list(folder.glob("*_evaluationllm*"))
        out = capsys.readouterr().out
        assert out.count("requests: 6 (6 judge requests planned, 0 already journaled)") == 2
        assert "claude-sonnet-4-20250514 (anthropic)" in out and "m (openai-compatible)" in out
        # paper protocol: OpenAI-compatible sends no cap; Anthropic's API needs one (512, the backend's)
        assert "output tokens: not capped (no max_tokens sent: the server decides)" in out
        assert "output tokens: at most 3,072 (max_tokens 512 per request)" in out
        assert "USD 3 / 15 per million input / output tokens" in out  # prices.py
        assert "unknown (no price for this model" in out
        assert "jury of 2: 12 requests" in out and "unknown synchronous, unknown batch" in out
        est_compatible, est_claude = estimates(out)

        assert judge_cli.main(argv) == 0
        assert len(api.requests()) == 12
    for slug, estimate in (("openai-compatible-m", est_compatible), ("anthropic-claude-sonnet-4-20250514", est_claude)):
        used = journal_usage(folder, slug)
        assert abs(estimate - used) <= 0.10 * used, slug


def test_dry_run_refusals_are_one_line(folder, capsys):
    assert judge_cli.main([str(folder), "--dry-run", "--visualize-only"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--visualize-only" in err
