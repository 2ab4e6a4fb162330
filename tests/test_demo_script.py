"""The README's first command: `scripts/demo.sh` builds the demo data and runs the main job on it, also where an
earlier smmile version left a demo folder behind (it wrote no output-folder marker)."""

import json
import os
import subprocess
from pathlib import Path

import pytest

from smmile.cli import main as smmile
from smmile.data.demo import DEMO_OWNER, write_demo
from smmile.fsguard import read_marker

REPO = Path(__file__).resolve().parents[1]


def test_a_demo_folder_of_an_earlier_version_is_reused(tmp_path, capsys):
    old = tmp_path / "demo"
    write_demo(old)
    for marker in old.rglob(".smmile-output.json"):  # what `smmile data demo` wrote before folders were marked
        marker.unlink()
    assert read_marker(old) is None and read_marker(old / "smmile") is None
    assert smmile(["data", "demo", "--out", str(old)]) == 0
    assert read_marker(old)["owner"] == DEMO_OWNER


def test_a_foreign_folder_is_still_refused(tmp_path, capsys):
    (tmp_path / "demo" / "smmile").mkdir(parents=True)
    (tmp_path / "demo" / "smmile" / "smmile_demo.json").write_text(json.dumps({"generator": "someone else"}))
    assert smmile(["data", "demo", "--out", str(tmp_path / "demo")]) == 2
    assert "not empty" in capsys.readouterr().err


def test_demo_without_out_goes_where_dataset_demo_reads(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SMMILE_DEMO_DIR", str(tmp_path / "cache"))
    assert smmile(["data", "demo"]) == 0
    assert (tmp_path / "cache" / "smmile" / "smmile_demo.json").is_file()


@pytest.mark.slow
def test_the_readme_demo_script_runs_end_to_end(tmp_path):
    env = {**os.environ, "SMMILE_DEMO_DIR": str(tmp_path / "demo-cache")}
    done = subprocess.run(["bash", str(REPO / "scripts" / "demo.sh"), str(tmp_path / "out")], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    out = tmp_path / "out"
    assert (out / "model_comparison.txt").is_file() and (out / "evaluation_results.txt").is_file()
    assert (out / "model_stratification_em.json").is_file()
    assert len(list(out.glob("result_*.csv"))) == 4
