"""The report beside a SMMILE++ folder (issue #36, deliverable 1): an empty --plusplus folder is said (exit 2, one
line), not shown as an empty set; a SMMILE++ dataset that cannot be loaded is named as the SMMILE++ id it resolved
to, not the plain --dataset value."""

from __future__ import annotations

from smmile import cli
from test_data_malformed_datasets import ORIGINAL, write_open

PERMUTED = {f"{pid}_perm_{k}": ok for pid, ok in ORIGINAL.items() for k in range(2)}


def test_an_empty_plusplus_folder_is_refused_in_one_line(tmp_path, capsys):
    write_open(tmp_path / "res", "qwen7B", ORIGINAL)
    (tmp_path / "pp").mkdir()
    assert cli.main(["report", str(tmp_path / "res"), "--plusplus", str(tmp_path / "pp"),
                     "--out", str(tmp_path / "report"), "--n-boot", "50"]) == 2
    err = capsys.readouterr().err
    (line,) = [x for x in err.splitlines() if x.startswith("error:")]  # after the stage line
    assert "Traceback" not in err and str(tmp_path / "pp") in line and "no scorable result file" in line
    assert not (tmp_path / "report").exists()


def test_the_plusplus_dataset_warning_names_the_plusplus_dataset(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # nothing in the cache: neither dataset loads
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    write_open(tmp_path / "res", "qwen7B", ORIGINAL)
    write_open(tmp_path / "pp", "qwen7B", PERMUTED)
    assert cli.main(["report", str(tmp_path / "res"), "--plusplus", str(tmp_path / "pp"), "--dataset", "smmile",
                     "--out", str(tmp_path / "report"), "--n-boot", "50"]) == 0
    err = capsys.readouterr().err
    (pp,) = [x for x in err.splitlines() if "could not be loaded" in x and "SMMILE++" in x.split("could not")[0]]
    assert pp.split(" for ")[0].endswith("smmile/SMMILE-plusplus"), pp
