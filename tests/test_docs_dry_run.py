"""Every offline command of docs/ runs in the suite (issue #36, deliverable 1): docs/reproducing-the-paper.md §8,
the dry run on the demo data, runs as written (its one bash block, loops and all) in one shell on a fresh copy of
the repository, and fails when a command in it is broken or out of order. The README's quick start runs in
test_readme_tutorial.py, docs/analyses.md's walk-throughs in test_diagnostics_doc.py and test_option_probs.py."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from test_readme_tutorial import blocks, fresh_copy, section

REPO = Path(__file__).resolve().parents[1]


def dry_run() -> str:
    found = blocks(section((REPO / "docs" / "reproducing-the-paper.md").read_text(encoding="utf-8"),
                           "8. Dry run on the demo data"))
    assert len(found) == 1
    return found[0]


def run(script: str, repo: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(repo / "inference_and_evaluation"), "PATH": os.pathsep.join(
        [str(Path(sys.executable).parent), os.environ.get("PATH", "")])}
    return subprocess.run(["bash", "-c", f"set -euo pipefail\n{script}\n"], cwd=repo / "inference_and_evaluation",
                          env=env, capture_output=True, text=True, timeout=1500)


@pytest.mark.slow
def test_the_dry_run_on_the_demo_data_runs_as_written(tmp_path):
    repo = fresh_copy(tmp_path / "repo")
    done = run(dry_run(), repo)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    results = repo / "results_demo"
    assert {p.name for p in results.glob("result_*.csv")} == {f"result_{b}_ICL{f}.csv" for b in ("random", "majority")
                                                              for f in ("", "_mcqa")}  # the original's names
    for name in ("model_stratification_em.json", "evaluation_results.txt", "latex_table.tex", "stats_estimates.csv"):
        assert (results / name).exists(), name
    analyses = {p.name for p in (results / "analysis").iterdir()}
    assert {"noise.json", "order.json", "permutation.json"} <= analyses, analyses
    assert "Random" in (repo / "report" / "index.html").read_text(encoding="utf-8")


def test_the_dry_run_out_of_order_fails(tmp_path):
    """What the test above relies on: a command moved before what it needs stops the shell."""
    lines = dry_run().splitlines()
    stratify = next(i for i, line in enumerate(lines) if line.startswith("python stratify.py"))
    assert stratify > next(i for i, line in enumerate(lines) if line.startswith("python evaluate_EM.py"))
    repo = tmp_path / "repo"
    (repo / "inference_and_evaluation").mkdir(parents=True)
    (repo / "results_demo").mkdir()
    for script in ("stratify.py", "evaluate_EM.py"):
        source = REPO / "inference_and_evaluation" / script
        (repo / "inference_and_evaluation" / script).write_bytes(source.read_bytes())
    assert run(re.sub(r"\s+", " ", lines[stratify]), repo).returncode != 0  # nothing scored yet
