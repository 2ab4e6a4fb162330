"""Run-level behaviour of the local front doors: resume after SIGKILL, failed problems, CUDA OOM, batches."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("transformers")

from smmile.cli import local_models as cli  # noqa: E402
from smmile.models.hf.backend import HFBackend  # noqa: E402
from test_hf_frontdoors import flags, read_csv  # noqa: E402

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1] / "inference_and_evaluation"


def _script(args: list[str]) -> subprocess.Popen:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen([sys.executable, "inference_llava_mcqa.py", *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_resume_after_sigkill(tmp_path):
    from smmile.data.demo import demo_path

    base = ["--model_name", "llava_7b", "--task_format", "mcqa"]
    killed = [*base, *flags("llava", tmp_path / "killed", tokens=24, dataset=demo_path())]
    journal = tmp_path / "killed" / ".smmile" / "result_llava_7b_ICL_mcqa.journal.jsonl"
    proc = _script(killed)
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        if journal.exists() and len(journal.read_text().splitlines()) >= 3:
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the run finished before it could be killed"
    done_before = len(journal.read_text().splitlines())
    assert not (tmp_path / "killed" / "result_llava_7b_ICL_mcqa.csv").exists()
    resumed = _script(killed)
    out, err = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, err
    assert f"{24 - done_before} computed this run" in out or "computed this run" in out
    straight = [*base, *flags("llava", tmp_path / "straight", tokens=24, dataset=demo_path())]
    assert cli.llava_mcqa_main(straight) == 0
    a = (tmp_path / "killed" / "result_llava_7b_ICL_mcqa.csv").read_bytes()
    b = (tmp_path / "straight" / "result_llava_7b_ICL_mcqa.csv").read_bytes()
    assert a == b


def _failing_generate(monkeypatch, fail_on: set[int], exc_factory):
    """Make HFBackend._generate raise on the given single-problem calls (1-based), and on every batch."""
    original = HFBackend._generate
    calls = {"n": 0}

    def fake(self, inputs, gen):
        if inputs["input_ids"].shape[0] > 1:
            raise exc_factory()  # every batch fails as a whole: the backend retries its problems one at a time
        calls["n"] += 1
        if calls["n"] in fail_on:
            raise exc_factory()
        return original(self, inputs, gen)

    monkeypatch.setattr(HFBackend, "_generate", fake)


def test_failed_problem_exits_nonzero_and_is_retried(tmp_path, monkeypatch, capsys):
    args = ["--task_format", "mcqa", *flags("mllama", tmp_path)]
    _failing_generate(monkeypatch, {2}, lambda: RuntimeError("boom"))
    assert cli.llama32v_main(args) == 1
    err = capsys.readouterr().err
    assert "1 problem(s) failed" in err and "ERROR: Generation failed - boom" in err
    _, rows = read_csv(tmp_path / "result_llama32_vision_90b_ICL_mcqa.csv")
    bad = [r for r in rows if r["selected_option"] == "ERROR"]
    assert len(bad) == 1 and bad[0]["full_response"] == "ERROR: Generation failed - boom"
    assert bad[0]["problem_id"] in err
    monkeypatch.undo()
    assert cli.llama32v_main(args) == 0  # the rerun retries only the failed problem
    assert "1 computed this run" in capsys.readouterr().out


def test_cuda_oom_is_that_problems_error_and_the_run_continues(tmp_path, monkeypatch, capsys):
    import torch

    args = ["--task_format", "open", "--batch-size", "2", *flags("gemma3", tmp_path)]
    _failing_generate(monkeypatch, {3}, lambda: torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate"))
    assert cli.medgemma_main(args) == 1
    _, rows = read_csv(tmp_path / "result_medgemma_4b_ICL_open.csv")
    assert [r["generated_answer"] for r in rows].count("ERROR: CUDA OOM") == 1
    assert sum(1 for r in rows if not r["generated_answer"].startswith("ERROR")) == 3
    manifest = json.loads((tmp_path / "result_medgemma_4b_ICL_open.manifest.json").read_text())
    assert manifest["counts"]["failed"] == 1 and manifest["failures"][0]["error"] == "ERROR: CUDA OOM"
    assert "ERROR: CUDA OOM" in capsys.readouterr().err


def test_qwen_error_text_is_the_exception(tmp_path, monkeypatch):
    _failing_generate(monkeypatch, {1}, lambda: ValueError("bad input"))
    assert cli.qwen_main(["--models", "3B", *flags("qwen2_5_vl", tmp_path)]) == 1
    _, rows = read_csv(tmp_path / "result_qwen3B_ICL_open.csv")
    assert rows[0]["generated_answer"] == rows[0]["full_response"] == "ERROR: bad input"
