"""docs/analyses.md §5: the ICL-diagnostics walk-through runs as written, on the demo data (issue #23)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

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
