"""LLM judge (spec §5) with a fake judge: prompt, parsing, cache, concurrency, retries, CLI."""

import json
import socket
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

from smmile.scoring import judge, judge_backends, judge_cli
from smmile.scoring.judge_cache import JudgeCache

PUBLISHED = Path(__file__).resolve().parents[1].parent / "shared" / "published" / "smmile"
OPEN_HEADER = "problem_id,final_question,true_answer,generated_answer,full_response\n"
LLM_KEYS = ["model", "inference_mode", "total_examples", "original_count", "excluded_count", "llm_err_count",
            "correct_examples", "accuracy", "err_count", "problem_accuracies", "incorrect_examples", "word_count"]


def test_prompt_snapshot():
    row = pd.Series({"final_question": "What colour?", "true_answer": "Red", "generated_answer": float("nan")})
    assert judge.build_prompt(row, "final_question") == (
        'A medical AI model is provided with an image and asked the question "What colour?". The correct '
        'answer to this question is: "Red". The AI model outputs "nan" as its response. Is the AI model '
        "correct? Please output your answer as a single digit, where 1 indicates that the AI model is correct "
        "and 0 indicates that the AI model is incorrect with respect to the correct answer. Do not provide "
        "anything other than the digit in your response.")


@pytest.mark.parametrize("reply, parsed", [
    ("1", (1, "ok")), ("0", (0, "ok")), (" 1", (0, "unparseable")), ("1\n", (0, "unparseable")),
    ("Yes", (0, "unparseable")), ("", (0, "unparseable")), (None, (0, "unparseable")),
])
def test_parse_reply_strict(reply, parsed):
    assert judge.parse_reply(reply) == parsed


def test_settings_options_and_keys():
    paper = judge.JudgeSettings()
    corrected = judge.JudgeSettings(protocol="corrected", seed=7, max_tokens=3)
    assert paper.options() == {}
    assert corrected.options() == {"temperature": 0.0, "seed": 7, "max_tokens": 3}
    keys = {paper.cache_key("p"), corrected.cache_key("p"), judge.JudgeSettings(model="x").cache_key("p"),
            judge.JudgeSettings(backend="openai").cache_key("p"), paper.cache_key("q")}
    assert len(keys) == 5
    assert paper.cache_key("p") == judge.JudgeSettings(base_url="http://elsewhere").cache_key("p")


class FakeJudge:
    """Answers by a rule; counts calls and the largest number of calls in flight."""

    def __init__(self, rule, delay=0.0):
        self.rule, self.delay, self.calls, self.active, self.peak = rule, delay, 0, 0, 0
        self.lock = threading.Lock()

    def __call__(self, prompt):
        with self.lock:
            self.calls += 1
            self.active += 1
            self.peak = max(self.peak, self.active)
        time.sleep(self.delay)
        with self.lock:
            self.active -= 1
        return self.rule(prompt)


def _frame(n):
    return pd.DataFrame({"problem_id": [f"p{i}" for i in range(n)], "final_question": ["q"] * n,
                         "true_answer": [f"a{i}" for i in range(n)], "generated_answer": ["x"] * n})


def test_judge_frame_concurrency_and_cache(tmp_path):
    fake = FakeJudge(lambda p: "1" if '"a1"' in p or '"a2"' in p else "maybe", delay=0.02)
    settings = judge.JudgeSettings(concurrency=3)
    cache = JudgeCache(tmp_path / "c.jsonl")
    out = judge.judge_frame(_frame(12), settings, fake, cache)
    assert [j.row for j in out] == list(range(12))
    assert fake.calls == 12 and 1 < fake.peak <= 3
    assert [j.value for j in out[:3]] == [0, 1, 1] and out[0].status == "unparseable"
    stats = judge.judge_stats(_frame(12), out, "m", "ICL", 12, 0)
    assert list(stats) == LLM_KEYS and stats["llm_err_count"] == 10 and stats["correct_examples"] == 2
    again = judge.judge_frame(_frame(12), settings, fake, JudgeCache(tmp_path / "c.jsonl"))
    assert fake.calls == 12 and all(j.cached for j in again)
    assert [j.reply for j in again] == [j.reply for j in out]


def test_failures_are_not_cached(tmp_path):
    def flaky(prompt):
        if '"a0"' in prompt:
            raise judge_backends.JudgeRequestError("boom")
        return "0"
    cache = JudgeCache(tmp_path / "c.jsonl")
    out = judge.judge_frame(_frame(2), judge.JudgeSettings(), flaky, cache)
    assert out[0].status == "failed" and "boom" in out[0].error and out[0].reply is None
    assert len(JudgeCache(tmp_path / "c.jsonl")) == 1


def test_cache_ignores_torn_lines_and_empty_replies(tmp_path):
    path = tmp_path / "c.jsonl"
    cache = JudgeCache(path)
    cache.put("k1", "1", judge.JudgeSettings())
    cache.put("k2", "", judge.JudgeSettings())
    with open(path, "a") as handle:
        handle.write('{"key": "k3", "rep')
    reloaded = JudgeCache(path)
    assert len(reloaded) == 1 and reloaded.get("k1") == "1" and reloaded.get("k2") is None


def test_with_retries():
    attempts, waits = [], []

    def call():
        attempts.append(1)
        if len(attempts) < 3:
            raise judge_backends.TransientJudgeError("503")
        return "1"
    assert judge_backends.with_retries(call, retries=3, wait=0.5, sleep=waits.append) == "1"
    assert waits == [0.5, 1.0]
    with pytest.raises(judge_backends.JudgeRequestError, match="after 2 attempts"):
        judge_backends.with_retries(lambda: (_ for _ in ()).throw(judge_backends.TransientJudgeError("x")),
                                    retries=1, wait=0, sleep=waits.append)


def _results_dir(tmp_path):
    (tmp_path / "result_llava_7b_ICL.csv").write_text(OPEN_HEADER + "p1,q1,Red,red,x\np2,q2,Blue,,x\n")
    (tmp_path / "result_MedVLM-R1_0-shot_open.csv").write_text(
        "problem_id,original_question,true_answer,generated_answer\np1,oq1,Red,Blue\n")
    return tmp_path


def _fake_backend(monkeypatch, fake):
    monkeypatch.setattr(judge_backends, "make_asker", lambda settings: fake)


def test_judge_cli_end_to_end_with_fake(tmp_path, monkeypatch, capsys):
    d = _results_dir(tmp_path)
    fake = FakeJudge(lambda p: "1" if "oq1" in p or '"red"' in p else "The answer is 0")
    _fake_backend(monkeypatch, fake)
    assert judge_cli.main([str(d)]) == 0
    stats = json.loads((d / "result_llava_7b_ICL_evaluationllm.json").read_text())
    assert list(stats) == LLM_KEYS and stats["model"] == "llava_7B"
    assert stats["correct_examples"] == 1 and stats["llm_err_count"] == 1
    medvlm = json.loads((d / "result_MedVLM-R1_0-shot_open_evaluationllm.json").read_text())
    assert medvlm["correct_examples"] == 1  # question from original_question
    lines = (d / "result_llava_7b_ICL_judgements.jsonl").read_text().splitlines()
    records = [json.loads(x) for x in lines]
    assert [r["status"] for r in records] == ["ok", "unparseable"]
    assert records[1]["reply"] == "The answer is 0" and records[1]["value"] == 0
    assert {"problem_id", "prompt_sha256", "cache_key", "cached", "backend", "model", "protocol"} <= set(records[0])
    assert (d / "model_comparison_llm.txt").exists()
    out = capsys.readouterr().out
    assert "LLM as a Judge accuracy: 50.00%" in out and "unparseable replies: 1" in out
    assert fake.calls == 3
    assert judge_cli.main([str(d)]) == 0
    assert fake.calls == 3  # all cached
    assert "Judge requests sent: 0; cache hits: 2" in capsys.readouterr().out
    assert judge_cli.main([str(d), "--protocol", "corrected"]) == 0
    assert fake.calls == 6  # different settings -> different cache keys
    assert judge_cli.main([str(d), "--no-cache"]) == 0 and fake.calls == 9


def test_judge_cli_failed_requests(tmp_path, monkeypatch, capsys):
    d = _results_dir(tmp_path)

    def down(prompt):
        raise judge_backends.JudgeRequestError("connection refused")
    _fake_backend(monkeypatch, down)
    assert judge_cli.main([str(d)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all("judge request(s) failed" in e and "connection refused" in e for e in err)
    assert not list(d.glob("*_evaluationllm.json"))
    assert not (d / ".smmile" / "judge_cache.jsonl").exists()


def test_visualize_only_missing_json(tmp_path, monkeypatch, capsys):
    d = _results_dir(tmp_path)
    _fake_backend(monkeypatch, FakeJudge(lambda p: "1"))
    assert judge_cli.main([str(d), "--model", "llava_7b"]) == 0
    capsys.readouterr()
    assert judge_cli.main([str(d), "--visualize-only"]) == 1
    captured = capsys.readouterr()
    assert "no LLM-judge results" in captured.err and "Traceback" not in captured.err
    assert "LLM AS A JUDGE EVALUATION RESULTS FOR llava_7B (ICL)" in captured.out
    assert "MedVLM-R1" not in captured.out  # not reported with stale stats


def test_corrupt_inputs_and_missing_sdk(tmp_path, monkeypatch, capsys):
    (tmp_path / "result_gpt-4o_ICL_open.csv").write_text("problem_id,generated_answer\np1,a\n")
    (tmp_path / "result_qwen7B_ICL_open.csv").write_text("problem_id,true_answer,generated_answer\np1,a,a\n")
    _fake_backend(monkeypatch, FakeJudge(lambda p: "1"))
    assert judge_cli.main([str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "missing required column(s): true_answer" in err and "no question column" in err
    monkeypatch.undo()
    monkeypatch.setitem(sys.modules, "ollama", None)
    assert judge_cli.main([str(tmp_path)]) == 2
    assert "pip install ollama" in capsys.readouterr().err


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("backend, url", [("openai", "http://127.0.0.1:{port}/v1"), ("ollama", "http://127.0.0.1:{port}")])
def test_connection_refused_is_reported_not_cached(tmp_path, capsys, backend, url):
    pytest.importorskip(backend)
    (tmp_path / "result_llava_7b_ICL.csv").write_text(OPEN_HEADER + "p1,q1,Red,red,x\n")
    argv = [str(tmp_path), "--judge-backend", backend, "--judge-base-url", url.format(port=_free_port()),
            "--judge-retries", "0", "--judge-timeout", "5"]
    assert judge_cli.main(argv) == 1
    err = capsys.readouterr().err
    assert "judge request(s) failed" in err and "Traceback" not in err
    assert not (tmp_path / ".smmile" / "judge_cache.jsonl").exists()
    record = json.loads((tmp_path / "result_llava_7b_ICL_judgements.jsonl").read_text())
    assert record["status"] == "failed"


@pytest.mark.skipif(not PUBLISHED.is_dir(), reason="published SMMILE outputs not available")
def test_visualize_only_on_published(tmp_path, capsys):
    import shutil
    for f in PUBLISHED.glob("result_*"):
        if not f.name.endswith("_mcqa.csv") and not f.name.endswith("_evaluation.json"):
            shutil.copy(f, tmp_path / f.name)
    assert judge_cli.main([str(tmp_path), "--visualize-only"]) == 0
    text = (tmp_path / "model_comparison_llm.txt").read_text()
    assert text.count("| 6.02      ") == 34  # KEEP: one word count for all rows
    assert "llama32_vision_90b         | ICL        | 40.54" in text  # from the shipped JSON


def test_identical_rows_are_sent_once(tmp_path):
    frame = pd.concat([_frame(2), _frame(2)], ignore_index=True)
    fake = FakeJudge(lambda p: "1", delay=0.01)
    out = judge.judge_frame(frame, judge.JudgeSettings(concurrency=4), fake, JudgeCache(tmp_path / "c.jsonl"))
    assert fake.calls == 2 and [j.cached for j in out] == [False, False, True, True]
    assert [j.value for j in out] == [1, 1, 1, 1] and [j.row for j in out] == [0, 1, 2, 3]


def test_unreachable_judge_stops_sending(tmp_path, monkeypatch, capsys):
    (tmp_path / "result_llava_7b_ICL.csv").write_text(
        OPEN_HEADER + "".join(f"p{i},q{i},Red,red,x\n" for i in range(20)))
    calls = []

    def down(prompt):
        calls.append(prompt)
        raise judge_backends.JudgeUnavailable("connection refused (after 4 attempts)")
    _fake_backend(monkeypatch, down)
    assert judge_cli.main([str(tmp_path), "--judge-concurrency", "1"]) == 1
    assert len(calls) == 1
    records = [json.loads(x) for x in (tmp_path / "result_llava_7b_ICL_judgements.jsonl").read_text().splitlines()]
    assert len(records) == 20 and all(r["status"] == "failed" for r in records)
    assert "not sent, judge unreachable" in records[-1]["error"]
    assert "20 of 20 judge request(s) failed" in capsys.readouterr().err
