"""docs/analyses.md §5: the ICL-diagnostics walk-through (issue #23) and the worked policy study (issue #34) run as
written, on the demo data."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from smmile.cli import main as smmile

DOC = Path(__file__).resolve().parents[1] / "docs" / "analyses.md"


def walkthrough() -> list[list[str]]:
    text = DOC.read_text().split("## 5. ICL diagnostics", 1)[1]
    block = text.split("```bash\n", 1)[1].split("```", 1)[0]
    return [shlex.split(line)[1:] for line in block.splitlines() if line.startswith("smmile ")]


def test_the_walkthrough_runs(tmp_path, monkeypatch, demo_dir):
    monkeypatch.chdir(tmp_path)
    commands = walkthrough()
    assert len(commands) == 16
    for args in commands:
        assert smmile(args) == 0, args
    shots = json.loads((tmp_path / "an" / "shots.json").read_text())
    assert [r["point"] for r in shots["curve"]] == ["1", "2", "all"]  # the baseline has no 0-shot run
    diag = json.loads((tmp_path / "an" / "diagnostics.json").read_text())
    assert diag["diagnostics"][0]["not_computed"].startswith("gain from examples")
    assert "ICL diagnostics: summary per model" in (tmp_path / "report" / "index.html").read_text()


def study() -> list[list[str]]:
    text = DOC.read_text().split("### A worked study: do the experts' examples beat retrieved ones?", 1)[1]
    block = text.split("```bash\n", 1)[1].split("```", 1)[0]
    return [shlex.split(line)[1:] for line in block.splitlines() if line.startswith("smmile ")]


@pytest.mark.slow
def test_the_worked_study_runs_on_a_tiny_model(tmp_path, monkeypatch, demo_dir):
    """Issue #34: the policy study as written, with a tiny random-weight VLM and a tiny CLIP built locally."""
    pytest.importorskip("transformers")
    import shutil

    import tiny_encoder
    import tiny_generic

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SMMILE_EMBEDDING_DIR", str(tmp_path / "embeddings"))
    shutil.copytree(tiny_generic.cached("idefics3"), tmp_path / "models" / "tiny-vlm")
    shutil.copytree(tiny_encoder.cached_clip(), tmp_path / "models" / "tiny-clip")
    commands = study()
    assert len(commands) == 14
    for args in commands:
        assert smmile(args) == 0, args
    policies = json.loads((tmp_path / "study" / "an" / "policies.json").read_text())
    rows = policies["summary"]
    assert {r["variant"].split(" ")[0] for r in rows} == {"demos-retrieved-last", "demos-retrieved-first",
                                                          "demos-random"}
    assert {r["model"] for r in rows} >= {"random"} and len({r["model"] for r in rows}) == 2
    assert all(r["difference"] == 0 for r in rows if r["model"] == "random")  # the task is fixed: chance is fixed
    assert all(r["n_pairs"] > 0 and r["ci_low"] <= r["difference"] <= r["ci_high"] for r in rows)
    assert policies["by_format"]
    page = (tmp_path / "study" / "report" / "index.html").read_text()
    assert "demonstration policies against the experts" in page
