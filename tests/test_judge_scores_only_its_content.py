"""Issue #20 item 6: judge scores are used only for the content they judged.

A judgement records the sha256 of the CSV bytes it read; scoring that meets a judgement of other
content refuses it for that file (one line naming both), and the faithful table prints ``-`` for the
LLM cell instead of mixing EM of the new rows with the judge's verdicts on the old ones. Judgements
without a hash (the published outputs) are compared by judged problem ids and rows. Expected numbers come
from the published outputs.
"""

import json
import shutil

import pandas as pd

from smmile import logs
from smmile.cli import judge as judge_cli
from smmile.models.base import Backend
from smmile.runner.csv_writer import csv_text
from smmile.scoring import judge_run
from smmile.scoring import scores as stats
from smmile.scoring.variance import run_variance

STEM = "result_gpt-4o_ICL_open"


def write_rows(path, frame):
    path.write_text(csv_text(list(frame.columns), frame.to_dict("records")), encoding="utf-8")


def table_line(folder, model: str) -> str:
    return next(line for line in (folder / "evaluation_results.txt").read_text().splitlines()
                if line.split(" & ")[0].strip() == model)


def test_published_judgement_beside_other_rows_is_refused(tmp_path, published, capsys):
    """The issue's case: a published ``_evaluationllm.json`` (111 problems) beside a 24-row CSV."""
    frame = pd.read_csv(published / f"{STEM}.csv", dtype=str, keep_default_na=False).head(24)
    write_rows(tmp_path / f"{STEM}.csv", frame)
    shutil.copy(published / f"{STEM}_evaluationllm.json", tmp_path)
    published_em = json.loads((published / f"{STEM}_evaluation.json").read_text())["problem_accuracies"]

    assert run_variance(str(tmp_path), mean_only=True) == 1
    captured = capsys.readouterr()
    refusals = [line for line in captured.err.splitlines() if "judged other rows" in line]
    assert len(refusals) == 1
    assert f"{STEM}.csv" in refusals[0] and f"{STEM}_evaluationllm.json" in refusals[0]
    em = sum(published_em[pid] for pid in frame["problem_id"]) / 24
    assert f"EM Accuracy (24 samples): {em:.2f}" in captured.out
    assert "LLM-as-a-Judge Accuracy (111" not in captured.out
    cells = [c.strip() for c in table_line(tmp_path, "gpt-4o").split(" & ")]
    assert cells[2] == "-" and cells[4] == f"{em:.2f}"  # LLM ICL empty; EM ICL from the new rows

    records = stats.load_records(str(tmp_path))
    assert [(r.metric, len(r.scores)) for r in records] == [("EM", 24), ("NOANS", 24)]  # EM (and the no-answer rate) kept, the judge refused


def test_published_judgements_are_all_used(published, tmp_path, capsys):
    """Every published judgement matches its CSV: nothing is refused and the table is unchanged."""
    with logs.kept_warnings() as said:
        records = stats.load_records(str(published))
    assert not said
    judged = {r.source for r in records if r.metric == "LLM"}
    assert len(judged) == len(list(published.glob("*_evaluationllm.json")))


class Judge(Backend):
    def __init__(self, reply):
        self.reply, self.calls = reply, 0

    def generate(self, work, on_done):
        from smmile.models.base import Response
        for key, _ in work:
            self.calls += 1
            on_done(key, Response(text=self.reply))

    def endpoint(self):
        return "http://judge.invalid:1"


def test_rejudged_folder_with_new_rows_refuses_the_old_verdicts(tmp_path, published, monkeypatch, capsys):
    """Judge a folder, then the CSV gets other answers to the same problems (a rerun): the judgement's
    hash no longer matches, so no command scores it; judging again makes it usable."""
    frame = pd.read_csv(published / f"{STEM}.csv", dtype=str, keep_default_na=False).head(30)
    csv = tmp_path / f"{STEM}.csv"
    write_rows(csv, frame)
    monkeypatch.setattr(judge_run, "build_backend", lambda settings: Judge("1"))
    assert judge_cli.main([str(tmp_path)]) == 0
    record = json.loads((tmp_path / f"{STEM}_evaluationllm.manifest.json").read_text())
    import hashlib
    assert record["result_sha256"] == hashlib.sha256(csv.read_bytes()).hexdigest()
    assert run_variance(str(tmp_path), mean_only=True) == 0
    assert "LLM-as-a-Judge Accuracy (30 samples): 100.00" in capsys.readouterr().out

    frame["generated_answer"] = "no idea"  # same problem ids, other answers
    write_rows(csv, frame)
    assert run_variance(str(tmp_path), mean_only=True) == 1
    captured = capsys.readouterr()
    refusal = [line for line in captured.err.splitlines() if "judged other content" in line]
    assert len(refusal) == 1 and f"{STEM}_evaluationllm.json" in refusal[0] and "sha256" in refusal[0]
    assert "100.00" not in captured.out and "EM Accuracy (30 samples): 0.00" in captured.out
    assert judge_cli.main([str(tmp_path), "--visualize-only"]) == 1
    assert "judged other content" in capsys.readouterr().err

    monkeypatch.setattr(judge_run, "build_backend", lambda settings: Judge("0"))
    assert judge_cli.main([str(tmp_path)]) == 0
    assert run_variance(str(tmp_path), mean_only=True) == 0
    assert "LLM-as-a-Judge Accuracy (30 samples): 0.00" in capsys.readouterr().out
