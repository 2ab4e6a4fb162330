"""LLM judge (spec §5) with a fake backend: prompt, parsing, keys, journal, CLI, refusal to replace another judge's
results."""

import hashlib
import json
import shutil

import pandas as pd
import pytest

from smmile.models.base import Backend, Response
from smmile.cli import judge as judge_cli
from smmile.scoring import judge, judge_run
from smmile.runner.executor import Executor
from smmile.runner.executor import RESPONSES_FORMAT, Journal

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
    row = {"question": "q", "true_answer": "a", "generated_answer": "r"}
    keys = {paper.key(row, "p"), corrected.key(row, "p"), judge.JudgeSettings(model="x").key(row, "p"),
            judge.JudgeSettings(backend="openai").key(row, "p"), paper.key(row, "q"),
            paper.key({**row, "generated_answer": "s"}, "p")}
    assert len(keys) == 6
    assert paper.key(row, "p") == judge.JudgeSettings(base_url="http://elsewhere").key(row, "p")
    assert paper.journal_path("r") == judge.JudgeSettings(base_url="http://elsewhere").journal_path("r")
    assert paper.journal_path("r") != corrected.journal_path("r")
    assert paper.journal_path("r").parent.as_posix() == "r/.smmile/judge"
    assert paper.journal_path("r").name.startswith("ollama-llama3.3-")
    assert judge.JudgeSettings(model="org/m:7b").journal_path("r").name.startswith("ollama-org_m_7b-")


def test_requests_carry_the_protocols_options():
    paper = judge_run.judge_request("p", judge.JudgeSettings())
    assert paper.messages == [{"role": "user", "content": "p"}]
    assert (paper.temperature, paper.seed, paper.max_tokens) == (None, None, None)  # server defaults
    fixed = judge_run.judge_request("p", judge.JudgeSettings(protocol="corrected", seed=5, max_tokens=2))
    assert (fixed.temperature, fixed.seed, fixed.max_tokens) == (0.0, 5, 2)


class FakeBackend(Backend):
    """The Backend interface the judge uses (generate(work, on_done), endpoint()), answering by a rule."""

    def __init__(self, rule):
        self.rule, self.calls = rule, 0

    def generate(self, work, on_done):
        for key, req in work:
            self.calls += 1
            try:
                response = Response(text=self.rule(req.messages[0]["content"]))
            except RuntimeError as exc:
                response = Response(error=str(exc))
            on_done(key, response)

    def endpoint(self):
        return "http://judge.invalid:1"


def _planned(prompts, settings=judge.JudgeSettings()):
    frame = pd.DataFrame({"problem_id": [f"p{i}" for i in range(len(prompts))], "final_question": prompts,
                          "true_answer": "t", "generated_answer": "g"})
    return judge.plan_frame(frame, settings)


def _run(planned, backend, journal, settings=judge.JudgeSettings()):
    from pathlib import Path
    from smmile.scoring.judge_run import FileJob, judge_work

    job = FileJob(Path("result.csv"), "m", "ICL", 0, 0, None, planned, "")
    executor = Executor(journal, judge_work([job], settings))
    executor.run(backend)
    return judge.judgements(planned, executor.records, executor.fresh, settings, set())


def test_journal_answers_again_without_requests(tmp_path):
    fake = FakeBackend(lambda p: "1" if '"a' in p else "")
    planned = _planned(["a1", "a2", "b"])
    journal = tmp_path / "j.jsonl"
    got = _run(planned, fake, Journal(journal, version=RESPONSES_FORMAT))
    assert fake.calls == 3 and not any(j.cached for j in got)
    again = _run(planned, fake, Journal(journal, version=RESPONSES_FORMAT))
    assert fake.calls == 4  # the empty reply is asked again; the two answers come from the journal
    assert [j.cached for j in again] == [True, True, False]
    assert [j.reply for j in again] == ["1", "1", ""]


def test_failures_are_recorded_not_reused(tmp_path):
    def flaky(prompt):
        if '"bad"' in prompt:
            raise RuntimeError("boom")
        return "0"
    got = _run(_planned(["bad", "good"]), FakeBackend(flaky), Journal(tmp_path / "j.jsonl", version=RESPONSES_FORMAT))
    assert got[0].error == "boom" and got[0].reply is None and got[1].reply == "0"
    lines = [json.loads(x) for x in (tmp_path / "j.jsonl").read_text().splitlines()]
    assert sorted(r["status"] for r in lines) == ["error", "ok"]
    assert {r["item"]["question"] for r in lines} == {"bad", "good"} and lines[0]["item"]["result_file"] == "result.csv"


def test_not_started_requests_are_failures(tmp_path):
    class Breaker(FakeBackend):
        def generate(self, work, on_done):  # stops after the first request, as a tripped circuit breaker does
            on_done(work[0][0], Response(error="Connection error."))

    got = _run(_planned(["a", "b", "c"]), Breaker(None), None)
    assert got[0].error == "Connection error." and not any(j.cached for j in got)
    assert all(j.error.startswith("not sent: the judge stopped launching requests") for j in got[1:])


def _results_dir(tmp_path):
    (tmp_path / "result_llava_7b_ICL.csv").write_text(OPEN_HEADER + "p1,q1,Red,red,x\np2,q2,Blue,,x\n")
    (tmp_path / "result_MedVLM-R1_0-shot_open.csv").write_text(
        "problem_id,original_question,true_answer,generated_answer\np1,oq1,Red,Blue\np2,oq2,Blue,Green\n")
    return tmp_path


@pytest.fixture
def fake_judge(monkeypatch):
    def install(rule):
        fake = FakeBackend(rule)
        monkeypatch.setattr(judge_run, "build_backend", lambda settings: fake)
        return fake
    return install


def test_judge_cli_end_to_end_with_fake(tmp_path, fake_judge, capsys):
    d = _results_dir(tmp_path)
    fake = fake_judge(lambda p: "1" if "oq1" in p or '"red"' in p else "The answer is 0")
    assert judge_cli.main([str(d)]) == 0
    stats = json.loads((d / "result_llava_7b_ICL_evaluationllm.json").read_text())
    assert list(stats) == LLM_KEYS and stats["model"] == "llava_7B"
    assert stats["correct_examples"] == 1 and stats["llm_err_count"] == 1
    medvlm = json.loads((d / "result_MedVLM-R1_0-shot_open_evaluationllm.json").read_text())
    assert medvlm["correct_examples"] == 1 and medvlm["total_examples"] == 2  # question from original_question
    records = [json.loads(x) for x in (d / "result_llava_7b_ICL_judgements.jsonl").read_text().splitlines()]
    assert [r["status"] for r in records] == ["ok", "unparseable"]
    assert records[1]["reply"] == "The answer is 0" and records[1]["value"] == 0
    assert {"problem_id", "prompt_sha256", "journal_key", "cached", "backend", "model", "protocol"} <= set(records[0])
    record = json.loads((d / "result_llava_7b_ICL_evaluationllm.manifest.json").read_text())
    assert record["judge"]["model"] == "llama3.3" and record["judge"]["endpoint"] == "http://judge.invalid:1"
    assert (d / "model_comparison_llm.txt").exists()
    out = capsys.readouterr().out
    assert "LLM as a Judge accuracy: 50.00%" in out and "unparseable replies: 1" in out
    assert fake.calls == 4
    assert judge_cli.main([str(d)]) == 0
    assert fake.calls == 4  # all from the store
    assert "Judge requests sent: 0; cache hits: 2" in capsys.readouterr().out
    assert judge_cli.main([str(d), "--protocol", "corrected"]) == 2  # another judge: refused, nothing sent
    assert fake.calls == 4 and "written by another judge (protocol 'paper' vs 'corrected'" in capsys.readouterr().err
    assert judge_cli.main([str(d), "--protocol", "corrected", "--overwrite"]) == 0
    assert fake.calls == 8  # different settings -> different keys
    assert judge_cli.main([str(d), "--protocol", "corrected", "--no-cache"]) == 0 and fake.calls == 12


def test_judge_cli_failed_requests(tmp_path, fake_judge, capsys):
    d = _results_dir(tmp_path)

    def down(prompt):
        raise RuntimeError("connection refused")
    fake_judge(down)
    assert judge_cli.main([str(d)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all("judge request(s) failed" in e and "connection refused" in e for e in err)
    assert not list(d.glob("*_evaluationllm*.json"))


def test_identical_rows_are_sent_once(tmp_path, fake_judge):
    body = "".join(f"p{i},q,a{i % 2},x,x\n" for i in range(4))
    (tmp_path / "result_llava_7b_ICL.csv").write_text(OPEN_HEADER + body)
    (tmp_path / "result_llava_13b_ICL.csv").write_text(OPEN_HEADER + body)
    fake = fake_judge(lambda p: "1")
    assert judge_cli.main([str(tmp_path)]) == 0
    assert fake.calls == 2
    first = [json.loads(x) for x in (tmp_path / "result_llava_13b_ICL_judgements.jsonl").read_text().splitlines()]
    second = [json.loads(x) for x in (tmp_path / "result_llava_7b_ICL_judgements.jsonl").read_text().splitlines()]
    assert [j["cached"] for j in first] == [False, False, True, True] and all(j["cached"] for j in second)
    assert [j["row"] for j in first] == [0, 1, 2, 3] and {j["value"] for j in first + second} == {1}


def _legacy_key(prompt):  # the earlier store's key, as it was written: sha256 over the sorted-keys JSON
    payload = {"prompt": prompt, "backend": "ollama", "model": "llama3.3", "options": {}}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode("utf-8")).hexdigest()


def test_the_earlier_judge_cache_still_answers(tmp_path, fake_judge, capsys):
    d = _results_dir(tmp_path)
    llava = pd.read_csv(d / "result_llava_7b_ICL.csv")
    medvlm = pd.read_csv(d / "result_MedVLM-R1_0-shot_open.csv")
    lines = [{"key": _legacy_key(judge.build_prompt(llava.iloc[0], "final_question")), "reply": "1",
              "backend": "ollama", "model": "llama3.3", "options": {}, "time": 0},  # the first format: no status
             {"key": _legacy_key(judge.build_prompt(llava.iloc[1], "final_question")), "status": "error",
              "reply": None, "error": "boom"},
             {"key": _legacy_key(judge.build_prompt(medvlm.iloc[0], "original_question")), "status": "ok",
              "reply": "0", "usage": {"output_tokens": 1}, "seconds": 0.5}]
    legacy = d / ".smmile" / "judge_cache.jsonl"
    legacy.parent.mkdir()
    legacy.write_text("".join(json.dumps(x) + "\n" for x in lines) + '{"key": "k3", "rep')
    before = legacy.read_bytes()
    fake = fake_judge(lambda p: "1")
    assert judge_cli.main([str(d)]) == 0
    assert fake.calls == 2 and legacy.read_bytes() == before  # two replies adopted; the old store only read
    assert capsys.readouterr().out.count("Judge requests sent: 1; cache hits: 1") == 2
    medvlm_json = json.loads((d / "result_MedVLM-R1_0-shot_open_evaluationllm.json").read_text())
    assert medvlm_json["correct_examples"] == 1  # p1 kept its stored "0"
    journal = Journal(judge.JudgeSettings().journal_path(d), version=RESPONSES_FORMAT).records()
    adopted = [r for r in journal.values() if r["response"]["extra"].get("adopted_from") == "judge_cache.jsonl"]
    assert sorted(r["response"]["text"] for r in adopted) == ["0", "1"] and len(journal) == 4


def test_an_unreadable_judge_cache_is_left_aside(tmp_path, fake_judge, capsys):
    d = _results_dir(tmp_path)
    (d / ".smmile").mkdir()
    (d / ".smmile" / "judge_cache.jsonl").write_text("not json\n")
    fake = fake_judge(lambda p: "1")
    assert judge_cli.main([str(d)]) == 0 and fake.calls == 4
    err = capsys.readouterr().err
    assert err.count("judge_cache.jsonl (the earlier judge cache) left aside") == 1


def test_visualize_only_missing_json(tmp_path, fake_judge, capsys):
    d = _results_dir(tmp_path)
    fake_judge(lambda p: "1")
    assert judge_cli.main([str(d), "--model", "llava_7b"]) == 0
    capsys.readouterr()
    assert judge_cli.main([str(d), "--visualize-only"]) == 1
    captured = capsys.readouterr()
    assert "no LLM-judge results" in captured.err and "Traceback" not in captured.err
    assert "LLM AS A JUDGE EVALUATION RESULTS FOR llava_7B (ICL)" in captured.out
    assert "MedVLM-R1" not in captured.out  # not reported with stale stats


def test_corrupt_inputs_and_missing_sdk(tmp_path, fake_judge, monkeypatch, capsys):
    import sys

    (tmp_path / "result_gpt-4o_ICL_open.csv").write_text("problem_id,generated_answer\np1,a\n")
    (tmp_path / "result_qwen7B_ICL_open.csv").write_text("problem_id,true_answer,generated_answer\np1,a,a\n")
    fake_judge(lambda p: "1")
    assert judge_cli.main([str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "missing required column(s): true_answer" in err and "no question column" in err
    monkeypatch.undo()
    monkeypatch.setitem(sys.modules, "ollama", None)
    assert judge_cli.main([str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pip install ollama" in err[0] and "[api]" in err[0]


def test_unrecorded_results_are_not_replaced(tmp_path, fake_judge, capsys):
    d = _results_dir(tmp_path)
    existing = d / "result_llava_7b_ICL_evaluationllm.json"
    existing.write_text('{"model": "llava_7B", "accuracy": 29.73}')
    fake = fake_judge(lambda p: "1")
    assert judge_cli.main([str(d)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "unrecorded judge" in err and "--overwrite" in err
    assert fake.calls == 0 and existing.read_text() == '{"model": "llava_7B", "accuracy": 29.73}'
    assert not (d / "result_MedVLM-R1_0-shot_open_evaluationllm.json").exists()  # refused before any work
    assert judge_cli.main([str(d), "--overwrite"]) == 0
    assert json.loads(existing.read_text())["accuracy"] == 100.0


def test_fewer_problems_do_not_replace_a_result(tmp_path, fake_judge, capsys):
    csv, out = tmp_path / "result_llava_7b_ICL.csv", tmp_path / "result_llava_7b_ICL_evaluationllm.json"
    csv.write_text(OPEN_HEADER + "p1,q1,Red,red,x\np2,q2,Blue,,x\n")
    fake = fake_judge(lambda p: "1")
    assert judge_cli.main([str(tmp_path)]) == 0
    csv.write_text(OPEN_HEADER + "p1,q1,Red,red,x\n")  # cut to one problem
    assert judge_cli.main([str(tmp_path)]) == 1
    assert "kept: it holds 1 problem(s) result_llava_7b_ICL.csv no longer has (e.g. p2)" in capsys.readouterr().err
    assert json.loads(out.read_text())["total_examples"] == 2 and fake.calls == 2
    csv.write_text(OPEN_HEADER)  # header only: not whole, not judged
    assert judge_cli.main([str(tmp_path)]) == 1
    assert "no rows (header only)" in capsys.readouterr().err
    assert json.loads(out.read_text())["total_examples"] == 2


def test_visualize_only_on_published(tmp_path, published, capsys):
    for f in published.glob("result_*"):
        if not f.name.endswith("_mcqa.csv") and not f.name.endswith("_evaluation.json"):
            shutil.copy(f, tmp_path / f.name)
    assert judge_cli.main([str(tmp_path), "--visualize-only"]) == 0
    text = (tmp_path / "model_comparison_llm.txt").read_text()
    assert text.count("| 6.02      ") == 34  # KEEP: one word count for all rows
    assert "llama32_vision_90b         | ICL        | 40.54" in text  # from the shipped JSON


def test_published_judgements_are_not_replaced_by_another_judge(tmp_path, published, fake_judge, capsys):
    shutil.copy(published / "result_qwen72B_0-shot_open.csv", tmp_path)
    shutil.copy(published / "result_qwen72B_0-shot_open_evaluationllm.json", tmp_path)
    before = (tmp_path / "result_qwen72B_0-shot_open_evaluationllm.json").read_bytes()
    fake = fake_judge(lambda p: "1")  # a judge that says "correct" to everything (29.73 -> 100.0)
    assert judge_cli.main([str(tmp_path), "--judge-backend", "openai-compatible", "--judge-base-url",
                           "http://127.0.0.1:9/v1", "--judge-model", "other"]) == 2
    assert fake.calls == 0 and (tmp_path / "result_qwen72B_0-shot_open_evaluationllm.json").read_bytes() == before


def test_help_shows_defaults(capsys):
    assert judge_cli.main(["--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    for default in ("(default: ollama)", "(default: llama3.3)", "auto (the default, ollama: 8)", "(default: 3)", "(default: 120.0)",
                    "(default: paper)", "(default: ../results)", "(default: 8)", "(default: 0)"):
        assert default in out, default
    assert "(default 4)" not in out
