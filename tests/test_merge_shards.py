"""Issue #10, `smmile merge`: only shards of one run are joined; a bad --out is one line before any writing."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from smmile.cli import merge as merge_cli
from smmile.runner import merge

STEM = "result_qwen7B_ICL_open"
MANIFEST = {"result_file": "", "command": ["inference_qwen.py"], "created": "2025-01-01T00:00:00",
            "dataset": {"kind": "demo", "fingerprint": "abc", "problems": 4},
            "model": {"preset": "qwen7B", "model_id": "Qwen/Qwen2.5-VL-7B-Instruct"},
            "protocol": "paper", "inference_mode": "ICL", "task_format": "open",
            "generation": {"max_new_tokens": 256}, "backend": {"backend": "hf", "dtype": "bfloat16", "calls": 0},
            "counts": {"rows": 2, "failed": 0}, "failures": [], "usage": {}, "seconds_this_run": 1.0}


def _shards(folder: Path, change=None) -> list[Path]:
    """Two shards of a 4-problem run; `change(manifest)` edits the second one's manifest."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, indices in ((1, [0, 2]), (2, [1, 3])):
        name = f"{STEM}.shard-{i}-of-2"
        m = copy.deepcopy(MANIFEST)
        m.update(result_file=f"{name}.csv", command=["inference_qwen.py", "--shard", f"{i}/2"],
                 seconds_this_run=float(i),
                 shard={"index": i, "count": 2, "indices": indices, "problem_ids": [f"p{j}" for j in indices]})
        m["backend"]["calls"] = i
        if change and i == 2:
            change(m)
        (folder / f"{name}.manifest.json").write_text(json.dumps(m))
        rows = "".join(f"p{j},answer {j}\n" for j in indices)
        (folder / f"{name}.csv").write_text("problem_id,generated_answer\n" + rows)
        paths.append(folder / f"{name}.csv")
    return paths


def test_shards_of_one_run_merge_in_problem_order(tmp_path):
    out = merge.merge(_shards(tmp_path))
    assert out == tmp_path / f"{STEM}.csv"
    assert out.read_text().splitlines()[1:] == [f"p{j},answer {j}" for j in range(4)]
    manifest = json.loads((tmp_path / f"{STEM}.manifest.json").read_text())
    assert manifest["merged_from"] == [f"{STEM}.shard-1-of-2.csv", f"{STEM}.shard-2-of-2.csv"]
    assert merge.merge(_shards(tmp_path)) == out  # a merge may replace its own earlier merge


@pytest.mark.parametrize("change,field", [
    (lambda m: m.update(protocol="corrected"), "protocol: 'paper'"),
    (lambda m: m["generation"].update(max_new_tokens=512), "generation.max_new_tokens"),
    (lambda m: m["backend"].update(dtype="float16"), "backend.dtype"),
    (lambda m: m["model"].update(model_id="other/model"), "model.model_id"),
])
def test_shards_with_different_settings_are_refused(tmp_path, capsys, change, field):
    shards = _shards(tmp_path, change)
    assert merge_cli.main([str(p) for p in shards]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "shards were run with different settings" in err and field in err
    assert not (tmp_path / f"{STEM}.csv").exists()


def test_out_that_is_a_folder_or_unwritable_is_one_line(tmp_path, capsys, monkeypatch):
    shards = [str(p) for p in _shards(tmp_path / "s")]
    assert merge_cli.main(shards + ["--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err == f"error: merged CSV {tmp_path} is a folder, not a file\n"
    (tmp_path / "file").write_text("keep")
    assert merge_cli.main(shards + ["--out", str(tmp_path / "file" / "merged.csv")]) == 2
    assert "is a file" in capsys.readouterr().err and (tmp_path / "file").read_text() == "keep"
    from smmile import fsguard

    def read_only(*a, **k):
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(fsguard.tempfile, "TemporaryFile", read_only)
    assert merge_cli.main(shards + ["--out", str(tmp_path / "m.csv")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Read-only file system" in err and "Traceback" not in err


def test_an_unsharded_runs_csv_is_not_replaced_without_force(tmp_path, capsys):
    shards = [str(p) for p in _shards(tmp_path)]
    (tmp_path / f"{STEM}.csv").write_text("the full run\n")
    assert merge_cli.main(shards) == 2
    assert "not written by `smmile merge`" in capsys.readouterr().err
    assert (tmp_path / f"{STEM}.csv").read_text() == "the full run\n"
    assert merge_cli.main(shards + ["--force"]) == 0


def test_custom_out_gets_its_own_manifest_name(tmp_path):
    out = merge.merge(_shards(tmp_path / "s"), tmp_path / "joined.csv")
    assert json.loads((tmp_path / "joined.manifest.json").read_text())["result_file"] == "joined.csv"


def test_missing_shard_or_broken_manifest_is_one_line(tmp_path, capsys):
    shards = _shards(tmp_path)
    assert merge_cli.main([str(shards[0]), str(tmp_path / f"{STEM}.shard-2-of-2x.csv")]) == 2
    shards[1].with_name(f"{STEM}.shard-2-of-2.manifest.json").write_text("{not json")
    assert merge_cli.main([str(p) for p in shards]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and "not the manifest of a shard run" in err[1]
