"""A crawl explained (issue #36, deliverable 5): a local model on CPU slower than `CrawlHint.SECONDS` a problem at a
long output limit gets one line naming --max-new-tokens; a short limit or a fast model gets none."""

from __future__ import annotations

import pytest

pytest.importorskip("transformers")

import tiny_generic as tg  # noqa: E402
import tiny_models  # noqa: E402
from smmile import cli  # noqa: E402
from smmile.runner import run as run_mod  # noqa: E402

pytestmark = pytest.mark.slow


def hint_lines(tmp_path, capsys, tokens: str) -> list[str]:
    assert cli.main(["run", "--model", f"hf:{tg.cached('idefics3')}", "--dataset", str(tiny_models.demo_subset(4)),
                     "--output-dir", str(tmp_path / tokens), "--max-new-tokens", tokens, "--dtype", "float32",
                     "--inference_mode", "0-shot"]) == 0
    return [x for x in capsys.readouterr().err.splitlines() if "s a problem on CPU" in x]


def test_a_slow_problem_on_cpu_names_the_flag_once(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(run_mod.CrawlHint, "SECONDS", 0.0)  # any time counts as slow
    (line,) = hint_lines(tmp_path, capsys, "80")
    assert "--max-new-tokens" in line and "up to 80 new tokens" in line


def test_no_hint_at_a_short_limit_or_when_fast(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(run_mod.CrawlHint, "SECONDS", 0.0)
    assert hint_lines(tmp_path, capsys, "8") == []  # the flag is already short: not the lever
    monkeypatch.setattr(run_mod.CrawlHint, "SECONDS", 3600.0)
    assert hint_lines(tmp_path, capsys, "80") == []
