"""Issue #20 item 8: an answer of any length round-trips through the CSV into every scoring command.

Python's ``csv`` module stops at 131,072 characters a field; the result CSV is written with it and read
back with pandas, and the integrity check (and ``smmile merge``) read it with ``csv`` too. A runaway or
reasoning model's answer is longer than that. Expected values come from the published outputs: every
other problem keeps its published score, the long (wrong) answer scores 0.
"""

import json
import shutil

import pandas as pd
import pytest

from smmile.cli import em as em_cli
from smmile.cli import judge as judge_cli
from smmile.cli import stats as stats_cli
from smmile.runner.csv_writer import csv_text
from smmile.scoring import judge_run
from smmile.scoring.variance import run_variance

LONG = 300_000  # characters: more than twice the csv module's default field limit
STEM = "result_gpt-4o_ICL_open"


@pytest.fixture
def long_answer(tmp_path, published):
    """The published gpt-4o ICL results with the first answer replaced by a 300,000-character one, written
    by the runner's own CSV writer."""
    frame = pd.read_csv(published / f"{STEM}.csv", dtype=str, keep_default_na=False)
    frame.loc[0, "generated_answer"] = "the answer is " + "very " * (LONG // 5)
    d = tmp_path / "results"
    d.mkdir()
    (d / f"{STEM}.csv").write_text(csv_text(list(frame.columns), frame.to_dict("records")), encoding="utf-8")
    published_em = json.loads((published / f"{STEM}_evaluation.json").read_text())["problem_accuracies"]
    return d, frame.loc[0, "problem_id"], published_em


def test_exact_match_reads_a_long_answer(long_answer, capsys):
    d, long_id, published_em = long_answer
    assert em_cli.main([str(d)]) == 0, capsys.readouterr().err
    scores = json.loads((d / f"{STEM}_evaluation.json").read_text())["problem_accuracies"]
    assert scores.keys() == published_em.keys()
    assert scores[long_id] == 0.0
    assert {k: v for k, v in scores.items() if k != long_id} == {k: v for k, v in published_em.items() if k != long_id}


def test_stats_and_variance_read_a_long_answer(long_answer, tmp_path, capsys):
    d, long_id, published_em = long_answer
    assert stats_cli.main([str(d), "--out", str(tmp_path / "stats"), "--n-boot", "200", "--failures", "wrong"]) in (0, 1)
    err = capsys.readouterr().err
    assert "do not parse" not in err and "field larger" not in err
    estimates = pd.read_csv(tmp_path / "stats" / "stats_estimates.csv")  # failures as wrong: the EM JSON's rule
    em = estimates[estimates["metric"] == "EM"].iloc[0]
    expected = sum(v for k, v in published_em.items() if k != long_id) / len(published_em)
    assert em["accuracy"] == pytest.approx(expected)
    assert run_variance(str(d), mean_only=True) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert f"EM Accuracy ({len(published_em)} samples): {expected:.2f}" in out


def test_judge_reads_a_long_answer(long_answer, monkeypatch, capsys):
    d, long_id, _ = long_answer
    prompts = []

    from smmile.models.base import Backend, Response

    class Judge(Backend):
        def generate(self, work, on_done):
            for key, request in work:
                prompts.append(request.messages[0]["content"])
                on_done(key, Response(text="0"))

        def endpoint(self):
            return "http://judge.invalid:1"

    monkeypatch.setattr(judge_run, "build_backend", lambda settings: Judge())
    assert judge_cli.main([str(d)]) == 0, capsys.readouterr().err
    assert max(len(p) for p in prompts) > LONG
    judged = json.loads((d / f"{STEM}_evaluationllm.json").read_text())
    assert judged["total_examples"] == len(pd.read_csv(d / f"{STEM}.csv"))


def test_merge_reads_a_long_answer(tmp_path, demo_dir):
    """Shards of a run whose answer is long merge (``smmile merge`` reads shards with ``csv``)."""
    import subprocess
    import sys

    from conftest import FRONT

    out = tmp_path / "o"
    for i in (1, 2):
        r = subprocess.run([sys.executable, "inference_baselines.py", "--baseline", "random", "--dataset", "demo",
                            "--output-dir", str(out), "--shard", f"{i}/2"], cwd=FRONT, capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 0, r.stderr
    shard = out / "result_random_ICL.shard-1-of-2.csv"
    frame = pd.read_csv(shard, dtype=str, keep_default_na=False)
    frame.loc[0, "generated_answer"] = "x" * LONG
    shard.write_text(csv_text(list(frame.columns), frame.to_dict("records")), encoding="utf-8")
    from smmile.runner.merge import merge

    merged = merge([shard, out / "result_random_ICL.shard-2-of-2.csv"])
    back = pd.read_csv(merged, dtype=str, keep_default_na=False)
    assert LONG in set(back["generated_answer"].str.len())
