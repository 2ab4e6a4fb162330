"""`smmile stats`: pairing made visible (n_pairs, gold answers), suspicious files named, output folders
checked before the work (issues #12 and #10)."""

from __future__ import annotations

import hashlib
import json
import os

import pandas as pd
import pytest

from smmile.cli import stats as stats_cli
from smmile.scoring import scores as stats
from stats_fixtures import write_mcqa, write_open

IDS = [f"p{i}" for i in range(8)]
TRUTH = ["Yes", "No"] * 4


def _run(root, out, *extra):
    return stats_cli.main([str(root), "--out", str(out), "--n-boot", "200", *extra])


def test_pairs_fewer_than_either_side_warn_and_are_counted(tmp_path, capsys):
    """The judge ran on 6 of the 8 ICL answers: LLM ICL vs 0-shot has 6 pairs, and says so."""
    write_open(tmp_path / "r", "qwen7B", "0-shot", IDS, TRUTH, [1, 0] * 4, [1, 0] * 4)
    icl = write_open(tmp_path / "r", "qwen7B", "ICL", IDS, TRUTH, [1] * 8, [1] * 8)
    judged = json.loads(icl.with_name("result_qwen7B_ICL_open_evaluationllm.json").read_text())
    judged["problem_accuracies"] = dict(list(judged["problem_accuracies"].items())[:6])
    icl.with_name("result_qwen7B_ICL_open_evaluationllm.json").write_text(json.dumps(judged))
    # its record says it judged this very CSV (else a judgement of other rows is refused: exact_match.check_judgement)
    sha = hashlib.sha256(icl.read_bytes()).hexdigest()
    icl.with_name("result_qwen7B_ICL_open_evaluationllm.manifest.json").write_text(json.dumps({"result_sha256": sha}))
    assert _run(tmp_path / "r", tmp_path / "o") == 0
    assert "qwen7B LLM ICL vs 0-shot: 6 pairs from 6 and 8 problems" in capsys.readouterr().err
    comp = pd.read_csv(tmp_path / "o" / "stats_comparisons.csv").set_index("metric")
    assert (comp.n_a["LLM"], comp.n_b["LLM"], comp.n_pairs["LLM"]) == (6, 8, 6)
    assert (comp.n_a["EM"], comp.n_b["EM"], comp.n_pairs["EM"]) == (8, 8, 8)


def test_a_result_of_another_size_than_its_peers_is_named_and_skipped(tmp_path, capsys):
    write_mcqa(tmp_path / "r", "qwen7B", "0-shot", IDS, TRUTH, [1, 0] * 4)
    write_mcqa(tmp_path / "r", "gpt-4o", "0-shot", IDS, TRUTH, [1, 0] * 4)
    write_mcqa(tmp_path / "r", "qwen7B", "ICL", IDS[:6], TRUTH[:6], [1] * 6)
    assert _run(tmp_path / "r", tmp_path / "o") == 1
    err = capsys.readouterr().err
    assert f"{tmp_path / 'r' / 'result_qwen7B_ICL_mcqa.csv'}: 6 problem(s), but the other results" in err
    assert sorted(pd.read_csv(tmp_path / "o" / "stats_estimates.csv").metric) == ["MCQA", "MCQA", "NOANS", "NOANS"]


def test_different_gold_answers_warn_and_can_be_excluded(tmp_path, capsys):
    other = TRUTH[:6] + ["Maybe", "Perhaps"]
    write_mcqa(tmp_path / "r", "qwen7B", "ICL", IDS, TRUTH, [1] * 8)
    write_mcqa(tmp_path / "r", "gpt-4o", "ICL", IDS, other, [0] * 6 + [1, 1])
    # issue #20 item 3: excluded by default (and counted), kept only with --include-gold-mismatch
    assert _run(tmp_path / "r", tmp_path / "o", "--compare", "models") == 0
    assert "2 paired problem(s) have different gold answers (first: p6); excluded" in capsys.readouterr().err
    dropped = pd.read_csv(tmp_path / "o" / "stats_comparisons.csv").iloc[0]
    assert (dropped.n_pairs, dropped.gold_mismatches, dropped.gold_mismatches_included) == (6, 2, False)
    assert abs(dropped.difference) == pytest.approx(100.0)  # p0..p5: one always right, the other never
    assert _run(tmp_path / "r", tmp_path / "o", "--compare", "models", "--include-gold-mismatch") == 0
    assert "kept" in capsys.readouterr().err
    kept = pd.read_csv(tmp_path / "o" / "stats_comparisons.csv").iloc[0]
    assert (kept.n_pairs, kept.gold_mismatches, kept.gold_mismatches_included) == (8, 2, True)


def test_header_only_and_duplicated_ids_are_named(tmp_path, capsys):
    root = tmp_path / "r"
    write_open(root, "qwen7B", "ICL", IDS, TRUTH, [1, 0] * 4)
    write_open(root, "llava_7b", "ICL", IDS + ["p0"], TRUTH + ["Yes"], [1] * 9)
    (root / "result_gpt-4o_ICL_open.csv").write_text("problem_id,final_question,true_answer,generated_answer\n")
    rc = _run(root, tmp_path / "o", "--compare", "none")
    err = capsys.readouterr().err
    assert rc == 1
    assert f"{root / 'result_gpt-4o_ICL_open.csv'}: no rows (header only); skipped" in err
    assert f"{root / 'result_llava_7b_ICL_open.csv'}: 1 problem id(s) appear more than once (first: p0)" in err
    est = pd.read_csv(tmp_path / "o" / "stats_estimates.csv")
    assert "gpt-4o" not in set(est.model) and est.accuracy.notna().all()


def test_output_folder_is_checked_before_the_work(tmp_path, capsys, monkeypatch):
    write_mcqa(tmp_path / "r", "qwen7B", "ICL", IDS, TRUTH, [1] * 8)
    loaded = []
    monkeypatch.setattr(stats, "load_records", lambda *a, **k: loaded.append(1) or [])
    (tmp_path / "file").write_text("x")
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    for out in (tmp_path / "file", foreign):
        assert _run(tmp_path / "r", out) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not loaded and (foreign / "notes.txt").read_text() == "mine"
    assert sorted(p.name for p in foreign.iterdir()) == ["notes.txt"]


def test_own_output_folder_is_reused_and_read_only_results_refused(tmp_path, capsys):
    write_mcqa(tmp_path / "r", "qwen7B", "ICL", IDS, TRUTH, [1] * 8)
    assert _run(tmp_path / "r", tmp_path / "o") == 0
    assert _run(tmp_path / "r", tmp_path / "o") == 0  # our own marker: reused
    os.chmod(tmp_path / "r", 0o555)
    try:
        if os.access(tmp_path / "r", os.W_OK):
            pytest.skip("running as a user who can write anywhere")
        assert stats_cli.main([str(tmp_path / "r"), "--n-boot", "50"]) == 2
        assert "cannot write" in capsys.readouterr().err
    finally:
        os.chmod(tmp_path / "r", 0o755)
