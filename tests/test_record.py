"""The run record (``smmile.record``): one typed record per result, found by ``record.scan``; the original's files
(the published outputs) read into the same type; what ``smmile report`` and ``smmile stats`` make of a folder whose
files are not all there."""

from __future__ import annotations

import shutil

import pytest

from smmile.cli import main as smmile

TEXT_ONLY_CSV = "result_llama33textonly_0-shot.csv"  # the paper's SMMILE++ folder has its judge JSON, not its CSV


def without(published, tmp_path, *names):
    """A copy of the published outputs (writable) less ``names``."""
    folder = tmp_path / "published"
    shutil.copytree(published, folder)
    for name in names:
        (folder / name).unlink()
    return folder


@pytest.mark.slow
def test_report_on_a_judge_json_without_its_csv(published, tmp_path, capsys):
    folder = without(published, tmp_path, TEXT_ONLY_CSV)
    assert smmile(["report", str(folder), "--out", str(tmp_path / "o"), "--n-boot", "20", "--formats", "svg",
                   "--jobs", "1"]) == 0
    err = capsys.readouterr().err
    assert "Traceback" not in err and "no result CSV (result_llama33textonly_0-shot.csv)" in err
    page = (tmp_path / "o" / "index.html").read_text()
    assert "Text only" in page
