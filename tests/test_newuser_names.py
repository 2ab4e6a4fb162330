"""Names that never lie about which model ran (issue #36, deliverable 2): a preset run on another checkpoint
(`--model-path`) is labelled as that checkpoint with the preset named beside it, unless the folder is the preset's
own hub snapshot; two `hf:` folders named `checkpoint-500` give two result files, two table rows, two labels."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip("transformers")

import tiny_generic as tg  # noqa: E402
import tiny_models  # noqa: E402
from smmile import cli  # noqa: E402
from smmile.runner.run import Runner, RunSpec  # noqa: E402

pytestmark = pytest.mark.slow


def short(path: Path) -> str:
    return hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:6]


def test_a_preset_on_another_checkpoint_is_named_after_the_checkpoint(tmp_path):
    folder = tmp_path / "my-finetune"
    folder.mkdir()
    runner = Runner(RunSpec(model="qwen3B", model_path=str(folder), output_dir=tmp_path / "out"))
    identity = runner.preset.identity
    assert identity.key == identity.scoring_name == f"my-finetune-{short(folder)}"
    assert identity.display == f"my-finetune #{short(folder)} (Qwen2.5-VL-3B preset)"
    assert "Qwen2.5-VL-3B" not in identity.key and "qwen3B" not in identity.latex


def test_the_presets_own_hub_snapshot_keeps_the_papers_name(tmp_path):
    snapshot = tmp_path / "hub" / "models--Qwen--Qwen2.5-VL-3B-Instruct" / "snapshots" / "66285546d2b821cf"
    snapshot.mkdir(parents=True)
    identity = Runner(RunSpec(model="qwen3B", model_path=str(snapshot))).preset.identity
    assert (identity.key, identity.display) == ("qwen3B", "Qwen2.5-VL-3B")
    other = tmp_path / "hub" / "models--Qwen--Qwen2.5-VL-7B-Instruct" / "snapshots" / "abc"
    other.mkdir(parents=True)  # the 7B's snapshot given to the 3B preset is another checkpoint
    assert Runner(RunSpec(model="qwen3B", model_path=str(other))).preset.identity.key != "qwen3B"


def test_two_checkpoint_500_folders_give_two_files_rows_and_labels(tmp_path, capsys):
    source = tg.cached("idefics3")
    folders = [tmp_path / run / "checkpoint-500" for run in ("run-a", "run-b")]
    for folder in folders:
        shutil.copytree(source, folder)
    results = tmp_path / "results"
    for folder in folders:
        assert cli.main(["run", "--model", f"hf:{folder}", "--inference_mode", "ICL", "--task_format", "open",
                         "--dataset", str(tiny_models.demo_subset(4)), "--output-dir", str(results),
                         "--max-new-tokens", "2", "--dtype", "float32", "-q"]) == 0, capsys.readouterr().err
    stems = sorted(f"result_checkpoint-500-{short(f)}_ICL_open" for f in folders)
    assert sorted(p.stem for p in results.glob("result_*.csv")) == stems
    for stem, folder in zip(stems, sorted(folders, key=lambda f: f"checkpoint-500-{short(f)}")):
        identity = json.loads((results / f"{stem}.manifest.json").read_text())["model"]["identity"]
        assert identity["display"] == f"checkpoint-500 #{short(folder)}"
    capsys.readouterr()

    assert cli.main(["stats", str(results), "--out", str(tmp_path / "stats")]) == 0
    table = capsys.readouterr().out
    rows = [line for line in table.splitlines() if "checkpoint-500" in line]
    assert len(rows) == 2 and all(any(short(f) in r for r in rows) for f in folders), table

    assert cli.main(["report", str(results), "--out", str(tmp_path / "report"), "--n-boot", "50"]) == 0
    page = (tmp_path / "report" / "index.html").read_text()
    for folder in folders:
        assert f"checkpoint-500 #{short(folder)}" in page
