"""The judge under interruption and concurrency: Ctrl-C leaves no traceback and nothing half-written; one judge
per results folder."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from childproc import default_signals

from api_server import FakeApi
from smmile.fsguard import OutputLock
from smmile.cli import judge as judge_cli

FRONT_DOORS = Path(__file__).resolve().parents[1] / "inference_and_evaluation"
OPEN_HEADER = "problem_id,final_question,true_answer,generated_answer,full_response\n"


def results(tmp_path, n):
    (tmp_path / "result_llava_7b_ICL.csv").write_text(
        OPEN_HEADER + "".join(f"p{i},q{i},Red{i},red{i},x\n" for i in range(n)))
    return tmp_path


def test_second_judge_in_the_same_folder_is_refused(tmp_path, capsys):
    d = results(tmp_path, 2)
    with OutputLock(d, "LLM-judge scoring"):
        assert judge_cli.main([str(d), "--judge-base-url", "http://127.0.0.1:9"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and f"process {os.getpid()}" in err
    assert not list(d.glob("*_judgements.jsonl"))


@pytest.mark.server
@pytest.mark.slow
@pytest.mark.parametrize("signame,status", [("SIGINT", 130), ("SIGTERM", 143)])
def test_ctrl_c_no_traceback_nothing_half_written_and_resume(tmp_path, monkeypatch, signame, status):
    d = results(tmp_path, 8)
    argv = [sys.executable, "evaluate_LLMJudge.py", str(d), "--judge-backend", "openai-compatible",
            "--judge-model", "m", "--judge-concurrency", "1"]
    with FakeApi(reply=lambda rec: "1", latency=0.15) as api:
        url = ["--judge-base-url", api.url + "/v1"]
        monkeypatch.delenv("OPENAI_COMPATIBLE_API_KEY", raising=False)
        proc = subprocess.Popen(argv + url, cwd=FRONT_DOORS, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, preexec_fn=default_signals)
        deadline = time.monotonic() + 60
        while len(api.requests()) < 3 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        proc.send_signal(getattr(signal, signame))
        _, err = proc.communicate(timeout=60)
        sent_before = len(api.requests())
        assert proc.returncode == status, err
        assert "Traceback" not in err and "interrupted: replies received so far are kept" in err
        assert not list(d.glob("*_evaluationllm*.json")) and not list(d.glob("*_judgements.jsonl"))
        assert not [p for p in d.rglob("*") if ".tmp" in p.name or p.name.endswith(".lock")]
        (journal,) = (d / ".smmile" / "judge").glob("openai-compatible-m-*.journal.jsonl")
        stored = [json.loads(x) for x in journal.read_text().splitlines()]
        assert 2 <= len(stored) <= sent_before < 8 and {r["status"] for r in stored} == {"ok"}
        assert judge_cli.main([*argv[2:], *url]) == 0
        assert len(api.requests()) - sent_before == 8 - len(stored)  # only what was not stored is asked
    assert json.loads((d / "result_llava_7b_ICL_evaluationllm.json").read_text())["total_examples"] == 8
