"""The run record is what scoring reads (scoring/scores.py): a result's journaled responses where a run
record exists, the original's CSV text otherwise. Worked example: "the model refused or failed to answer"
(metrics.response_failure) counted from the journal by `smmile stats` and the report.

The journal lines are written here by hand in the runner's format 2 (runner/executor.py), so the expected
counts come from the responses below, not from anything the suite produced."""

from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest

from smmile.cli import stats as stats_cli
from smmile.report import build
from smmile.scoring.statistics import Resampling
from smmile.record import run_record

HEADER = "problem_id,final_question,true_answer,generated_answer\n"
# What the CSV says (the original's text rules): p1 right, p2 an ERROR row, p3 blank, p4 blank, p5 an ERROR row
# (no journal record), p6 a plain answer (journaled under two configurations).
CSV = HEADER + "p1,q,Red,Red\np2,q,Red,ERROR: Generation failed - boom\np3,q,Red,\np4,q,Red,\np5,q,Red,ERROR: x\np6,q,Red,Blue\n"


def _line(key, pid, response, status="ok", mode="ICL", fmt="open"):
    item = {"mode": mode, "format": fmt, "target": "Red", "options": None, "correct": None, "true_answer": "Red",
            "extra": {}}
    return json.dumps({"v": 2, "key": key, "index": 0, "problem_id": pid, "item": item, "status": status,
                       "response": response, "time": 1.0})


def _run_record(folder, manifest=True):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "result_mine_ICL.csv").write_text(CSV)
    if not manifest:
        return folder
    (folder / ".smmile").mkdir()
    lines = [
        _line("k1", "p1", {"text": "Red", "error": None, "extra": {}}),
        _line("k2", "p2", {"text": "", "error": "Generation failed - boom", "extra": {}}, status="error"),
        # a content filter answered with nothing: the CSV can only see an empty answer
        _line("k3", "p3", {"text": "", "error": None, "extra": {"finish_reason": "content_filter"}}),
        _line("k4", "p4", {"text": None, "error": None, "extra": {}}),
        _line("k6a", "p6", {"text": "", "error": "timeout", "extra": {}}, status="error"),
        _line("k6b", "p6", {"text": "Blue", "error": None, "extra": {}}),
        _line("k1-mcqa", "p1", {"text": "", "error": "other run", "extra": {}}, status="error", fmt="mcqa"),
    ]
    (folder / ".smmile" / "result_mine_ICL.journal.jsonl").write_text("\n".join(lines) + "\n")
    (folder / "result_mine_ICL.manifest.json").write_text(json.dumps({
        "result_file": "result_mine_ICL.csv", "model": {"model_id": "my-model"}, "inference_mode": "ICL",
        "task_format": "open", "journal": {"file": ".smmile/result_mine_ICL.journal.jsonl", "format": 2}}))
    return folder


def _counts(out):
    row = pd.read_csv(out / "stats_estimates.csv").set_index("metric").loc["EM"]
    return int(row.n_refused), int(row.n_failed), int(row.n_empty)


def test_responses_of_the_manifests_run_only(tmp_path):
    (found,) = run_record.scan(_run_record(tmp_path / "r"), rules="variance")
    assert found.identity.key == "my-model"
    # p6 has responses of two configurations journaled (which one the CSV holds is unknown): left out; the
    # MCQA record of p1 is another run's
    assert sorted(found.responses) == ["p1", "p2", "p3", "p4"]
    assert found.responses["p1"]["text"] == "Red"
    (bare,) = run_record.scan(_run_record(tmp_path / "b", manifest=False), rules="variance")
    assert bare.responses is None and bare.identity.key == "mine"  # spec §7.2: the token of the file name


def test_stats_counts_failures_from_the_journal(tmp_path, capsys):
    _run_record(tmp_path / "r")
    assert stats_cli.main([str(tmp_path / "r"), "--out", str(tmp_path / "o"), "--n-boot", "20"]) == 0
    # journal: p2 failed, p3 refused (finish reason), p4 empty (null text); CSV for p5 (failed) and p6 (answer)
    assert _counts(tmp_path / "o") == (1, 2, 1)
    assert "1/2/1" in capsys.readouterr().out  # the console table's refused/failed/empty column


def test_without_a_run_record_the_csv_text_decides(tmp_path):
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "result_qwen7B_ICL.csv").write_text(CSV)  # a published-style file, no manifest
    assert stats_cli.main([str(tmp_path / "b"), "--out", str(tmp_path / "o"), "--n-boot", "20"]) == 0
    assert _counts(tmp_path / "o") == (0, 2, 2)  # p3 and p4 blank, p2 and p5 ERROR rows


def test_the_report_shows_the_journals_counts(tmp_path):
    data = build.gather([(None, str(_run_record(tmp_path / "r")))], settings=Resampling(n_boot=20))
    (row,) = [r for r in data.sets[0].estimates if r["metric"] == "EM"]
    assert (row["n_refused"], row["n_failed"], row["n_empty"]) == (1, 2, 1)
    assert "result_mine_ICL.csv" in data.sets[0].runs


def _no_answer(folder, out) -> float:
    assert stats_cli.main([str(folder), "--out", str(out), "--n-boot", "20"]) == 0
    return float(pd.read_csv(out / "stats_estimates.csv").set_index("metric").loc["NOANS", "accuracy"])


def test_the_no_answer_metric_reads_the_raw_response(tmp_path, capsys):
    """NOANS ("the model refused or failed to answer", scoring/refusal.py): per problem from the journaled
    response, else the CSV text; in `smmile stats` and on the report's page."""
    folder = _run_record(tmp_path / "r")
    # journal: p2 failed, p3 refused, p4 empty; CSV: p5 an ERROR row; p1 and p6 answered
    assert _no_answer(folder, tmp_path / "a") == pytest.approx(100 * 4 / 6)
    assert "NOANS" in capsys.readouterr().out
    journal = folder / ".smmile" / "result_mine_ICL.journal.jsonl"
    # p1's reply was cut by a content filter after "Red": the CSV cannot tell, the raw response can
    journal.write_text(journal.read_text().replace('"text": "Red", "error": null, "extra": {}',
                                                   '"text": "Red", "error": null, "extra": {"finish_reason": '
                                                   '"content_filter"}'))
    assert _no_answer(folder, tmp_path / "b") == pytest.approx(100 * 5 / 6)
    data = build.gather([(None, str(folder))], settings=Resampling(n_boot=20))
    (row,) = [r for r in data.sets[0].estimates if r["metric"] == "NOANS"]
    assert row["accuracy"] == pytest.approx(100 * 5 / 6)
    from smmile.report import sections

    assert "Refused or failed to answer" in sections.main_section(data, data.sets[0], {}, str(tmp_path))


def test_the_reports_set_changes_count_transport_failures_as_its_estimates_do(tmp_path):
    """One default rule (estimates.FAILURES): the report's later-vs-first changes leave transport failures out, as
    its estimates and `smmile stats` do (they were scored wrong there)."""
    first = _run_record(tmp_path / "a")
    shutil.copytree(first, tmp_path / "b")
    data = build.gather([("a", str(first)), ("b", str(tmp_path / "b"))], settings=Resampling(n_boot=20))
    (change,) = [r for r in data.changes if r["metric"] == "EM"]
    (row,) = [r for r in data.sets[0].estimates if r["metric"] == "EM"]
    assert (change["failures"], change["n_failed_reference"]) == ("exclude", 2)
    assert change["n_pairs"] == row["n_rows"] == 6 - 2  # p2 failed (journal), p5 (its CSV's ERROR row)
