"""Issue #10, data: `smmile data` never deletes what it did not write; dataset folders holding more than one
dataset, or one problem twice, are refused; an unreachable hub fails within seconds."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from smmile.cli import data as cli
from smmile.data import parquet
from smmile.data.load import load_problems
from smmile.errors import UserError

REPO = Path(__file__).resolve().parents[1]


def _variant(out, *extra, kind="order-first"):
    return cli.main(["variant", kind, "--dataset", "demo", "--out", str(out), *extra])


def _hidden(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.startswith(".")]


def test_folder_with_a_foreign_file_survives_variant_permute(tmp_path, capsys):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    assert _variant(out, kind="permute") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not written by `smmile data variant`" in err
    assert [p.name for p in out.iterdir()] == ["notes.txt"] and _hidden(tmp_path) == []


def test_folder_with_a_foreign_file_survives_demo(tmp_path, capsys):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "notes.txt").write_text("mine")
    assert cli.main(["demo", "--out", str(tmp_path / "d")]) == 2
    assert [p.name for p in (tmp_path / "d").iterdir()] == ["notes.txt"]


@pytest.mark.parametrize("force", [[], ["--force"]])
def test_dot_and_dotdot_are_refused_and_left_intact(tmp_path, monkeypatch, capsys, force):
    work = tmp_path / "work"
    work.mkdir()
    (work / "data.csv").write_text("x")
    monkeypatch.chdir(work)
    for out in (".", ".."):
        assert _variant(out, *force) == 2
        assert "refusing to use" in capsys.readouterr().err
        assert cli.main(["demo", "--out", out, *force]) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["work"]
    assert [p.name for p in work.iterdir()] == ["data.csv"]


def test_out_file_is_one_line_and_leaves_no_temp_folder(tmp_path, capsys):
    (tmp_path / "f").write_text("keep")
    assert _variant(tmp_path / "f") == 2
    assert capsys.readouterr().err == f"error: output folder {tmp_path / 'f'} is a file; choose a folder\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f"] and (tmp_path / "f").read_text() == "keep"


def test_rerun_replaces_own_variant_but_not_files_added_by_the_user(tmp_path, capsys):
    out = tmp_path / "v"
    assert _variant(out) == 0
    assert _variant(out, "--seed", "7") == 0
    assert '"seed": 7' in (out / "variant_manifest.json").read_text() and _hidden(tmp_path) == []
    (out / "results.csv").write_text("precious")
    assert _variant(out) == 2
    assert "did not write (results.csv)" in capsys.readouterr().err
    assert _variant(out, "--force") == 0
    assert (out / "results.csv").read_text() == "precious"
    assert '"seed": 42' in (out / "variant_manifest.json").read_text()


def test_demo_rerun_and_another_commands_folder(tmp_path, capsys):
    assert cli.main(["demo", "--out", str(tmp_path / "d")]) == 0
    assert cli.main(["demo", "--out", str(tmp_path / "d"), "--seed", "3"]) == 0
    assert _variant(tmp_path / "d" / "smmile") == 2  # a demo dataset is not a variant folder
    assert "written by `smmile data`" in capsys.readouterr().err
    assert len(load_problems(str(tmp_path / "d" / "smmile"))) >= 24


def test_ctrl_c_while_writing_keeps_the_earlier_variant_and_no_temp(tmp_path, monkeypatch, capsys):
    out = tmp_path / "v"
    assert _variant(out) == 0
    before = {p.name: p.read_bytes() for p in (out / "data").iterdir()}
    import pyarrow.parquet as pq

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(pq, "write_table", interrupted)
    assert _variant(out, "--seed", "9") == 130
    err = capsys.readouterr().err
    assert "Traceback" not in err and "written whole or not at all" in err
    assert {p.name: p.read_bytes() for p in (out / "data").iterdir()} == before
    assert _hidden(tmp_path) == []


# ------------------------------------------------------------ dataset folders read as one dataset

def test_folder_with_two_datasets_is_refused_listing_them(demo_dir):
    with pytest.raises(UserError, match=r"holds 2 datasets \(plusplus, smmile\)"):
        load_problems(str(demo_dir))


def test_two_copies_of_one_parquet_are_refused_naming_a_problem(demo_dir, tmp_path):
    data = shutil.copytree(demo_dir / "smmile", tmp_path / "d")
    first = load_problems(str(data))[0].problem_id
    shutil.copy(data / "data" / parquet.PARQUET_NAME, data / "data" / "train-copy.parquet")
    with pytest.raises(UserError, match=f"problem {first}: two rows with order 0"):
        load_problems(str(data))


def test_a_backup_copy_in_a_sub_folder_is_a_second_dataset(demo_dir, tmp_path):
    data = shutil.copytree(demo_dir / "smmile", tmp_path / "d")
    shutil.copytree(data / "data", data / "backup" / "data")
    with pytest.raises(UserError, match=r"2 datasets \(\., backup\)"):
        load_problems(str(data))


def test_shards_of_one_dataset_and_hidden_temp_folders(demo_dir, tmp_path):
    import pyarrow.parquet as pq

    data = tmp_path / "d"
    (data / "data").mkdir(parents=True)
    table = pq.read_table(demo_dir / "smmile" / "data" / parquet.PARQUET_NAME)
    half = table.num_rows // 2
    pq.write_table(table.slice(0, half), data / "data" / "train-00000-of-00002.parquet")
    pq.write_table(table.slice(half), data / "data" / "train-00001-of-00002.parquet")
    shutil.copytree(data / "data", data / ".d.tmp-x" / "data")  # a write in progress
    assert len(load_problems(str(data))) == len(load_problems(str(demo_dir / "smmile")))


# ------------------------------------------------------------ hub unreachable

def test_unreachable_hub_fails_within_seconds_with_one_line(tmp_path):
    env = {k: v for k, v in os.environ.items()
           if k not in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE")
           and not k.lower().endswith("_proxy")}
    env.update(HF_ENDPOINT="http://127.0.0.1:9", HF_HOME=str(tmp_path / "hf"), PYTHONPATH=str(REPO / "inference_and_evaluation"))
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "smmile.cli", "data", "variant", "permute", "--dataset",
                           "someone/some-dataset", "--out", str(tmp_path / "v")],
                          capture_output=True, text=True, env=env, timeout=120)
    took = time.monotonic() - start
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert "cannot reach 127.0.0.1:9" in proc.stderr and "--dataset PATH" in proc.stderr
    assert took < 15, took
    assert not (tmp_path / "v").exists()


def test_offline_mode_switches_imported_clients_and_restores_them(monkeypatch):
    import huggingface_hub.constants as constants

    from smmile import hub

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    with hub.offline_mode():
        assert constants.is_offline_mode() and os.environ["HF_HUB_OFFLINE"] == "1"
    assert not constants.is_offline_mode() and "HF_HUB_OFFLINE" not in os.environ


def test_a_second_writer_of_the_same_folder_is_refused(tmp_path):
    from smmile import fsguard

    out = tmp_path / "v"
    with fsguard.OutputLock(out, "another writer", beside=True):
        with pytest.raises(UserError, match=rf"dataset folder {out} is being written by process {os.getpid()}"):
            parquet.write_dataset([dict(problem_id="a", order=0, question="q", answer="a", image=None)], out)
    assert not out.exists() and _hidden(tmp_path) == []
