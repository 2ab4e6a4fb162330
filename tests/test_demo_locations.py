"""The demo a new user runs first (issue #25 item 3): `scripts/demo.sh` and the reference (docs/reference.md, where
the README's reference moved in issue #36) agree on where the demo data
and results go, and the original's `inf ± inf` console line is explained beside it."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from smmile.cli.variance import main as variance_main
from smmile.data.demo import DEMO_VERSION, demo_root

REPO = Path(__file__).resolve().parents[1]
FAITHFUL_INF = "  LLM-as-a-Judge Accuracy (inf samples): inf ± inf"


def readme_row(start: str) -> str:
    rows = [line for line in (REPO / "docs" / "reference.md").read_text().splitlines() if line.startswith(start)]
    assert len(rows) == 1, rows
    return rows[0]


def test_readme_names_the_folder_the_demo_data_go_to(tmp_path, monkeypatch):
    row = readme_row("| the demo dataset")
    assert "`$SMMILE_DEMO_DIR`" in row and "`~/.cache/smmile/demo-v<version>`" in row
    monkeypatch.delenv("SMMILE_DEMO_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert demo_root() == tmp_path / ".cache" / "smmile" / f"demo-v{DEMO_VERSION}"
    monkeypatch.setenv("SMMILE_DEMO_DIR", str(tmp_path / "elsewhere"))
    assert demo_root() == tmp_path / "elsewhere"
    script = (REPO / "scripts" / "demo.sh").read_text()
    (line,) = [ln for ln in script.splitlines() if ln.strip().startswith("smmile data demo")]
    assert "--out" not in line  # the script uses the default the README names
    assert "results_demo/" in readme_row("| demo job results") and "$REPO/results_demo" in script


def test_the_inf_line_is_kept_and_explained_beside_it(tmp_path, capsys):
    rows = [{"problem_id": f"p{i}", "final_question": "q?", "true_answer": "Yes", "generated_answer": "Yes",
             "full_response": "Yes"} for i in range(4)]
    pd.DataFrame(rows).to_csv(tmp_path / "result_random_ICL.csv", index=False)
    assert variance_main([str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    assert FAITHFUL_INF in out.splitlines()  # the original's console line, unchanged
    (meaning,) = [line for line in err.splitlines() if "inf ± inf" in line]
    assert "no judge result" in meaning and "result_random_ICL_evaluationllm.json" in meaning
    assert "evaluate_LLMJudge.py" in meaning


@pytest.mark.slow
def test_demo_script_says_where_everything_went(tmp_path):
    env = {**os.environ, "SMMILE_DEMO_DIR": str(tmp_path / "demo-cache")}
    done = subprocess.run(["bash", str(REPO / "scripts" / "demo.sh"), "out"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert len(list((tmp_path / "out").glob("result_*.csv"))) == 4  # relative to where it was run
    assert f"smmile: {tmp_path / 'demo-cache' / 'smmile'}" in done.stdout.splitlines()
    assert f"Demo outputs are in {tmp_path / 'out'}" in done.stdout
    assert re.search(r"'-' \(and \"inf ± inf\" in the console.*\) is a cell\s+with no result", done.stdout)
