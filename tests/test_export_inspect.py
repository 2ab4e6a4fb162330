"""``smmile export inspect`` (issue #35): one inspect_ai log per result, read back with inspect_ai's own reader;
every sample's scores are the published files' (the judge's problem_accuracies, the MCQA ``is_correct``) and
smmile's exact match; ``inspect view`` serves the logs and shows a sample's answer."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request

import pandas as pd
import pytest

from smmile import cli
from smmile.export import samples as S
from smmile.data.load import load_problems
from smmile.scoring.scores import load_records

NO_PACKAGE = "inspect_ai is not installed: pip install 'smmile[inspect]' (requirements-test.lock has it)"


@pytest.fixture
def ilog():
    return pytest.importorskip("inspect_ai.log", reason=NO_PACKAGE)


def _copy(published, tmp_path, pattern):
    root = tmp_path / "results"
    root.mkdir(exist_ok=True)
    for path in published.glob(pattern):
        shutil.copy(path, root)
    return root


def _logs(ilog, out):
    logs = {}
    for path in sorted(out.glob("*.eval")):
        read = ilog.read_eval_log(str(path))
        logs[(read.eval.metadata["source"])] = read
    return logs


def _check_against_published(results, logs):
    """Each sample's scores against what the published files say (and smmile's EM, which they do not hold)."""
    em = {(os.path.basename(r.source)): r.scores for r in load_records(str(results)) if r.metric == "EM"}
    checked = 0
    for source, log in logs.items():
        frame = pd.read_csv(results / source, dtype=str).fillna("").drop_duplicates("problem_id").rename(
            columns={"correct_letter": "correct_option", "extracted_answer": "selected_option",
                     "correct_answer": "true_answer"})  # MedVLM-R1's MCQA columns (spec section 3)
        judged = results / source.replace(".csv", "_evaluationllm.json")
        llm = json.loads(judged.read_text())["problem_accuracies"] if judged.exists() else {}
        assert log.status == "success" and len(log.samples) == len(frame)
        for sample, row in zip(log.samples, frame.to_dict("records")):
            assert sample.id == str(row["problem_id"])
            scores = {name: score.value for name, score in sample.scores.items()}
            if "is_correct" in row:
                assert scores["mcqa"] == float(str(row["is_correct"]).lower() == "true")
                assert sample.scores["mcqa"].answer == str(row["selected_option"])
                assert sample.target == str(row["correct_option"])
            else:
                assert scores["exact_match"] == em[source][str(row["problem_id"])]
                assert sample.target == str(row["true_answer"])
                if llm:
                    assert scores["llm_as_a_judge"] == llm[str(row["problem_id"])] / 100
            assert sample.output.completion == str(row.get("full_response", row.get("generated_answer")))
            checked += 1
    return checked


@pytest.mark.slow
def test_published_outputs_read_back_with_their_scores(published, tmp_path, ilog):
    results = _copy(published, tmp_path, "result_*")
    assert cli.main(["export", "inspect", str(results), "--out", str(tmp_path / "logs")]) == 0
    logs = _logs(ilog, tmp_path / "logs")
    assert len(logs) == len([p for p in results.glob("result_*.csv")])
    assert _check_against_published(results, logs) > 5000
    gpt = logs["result_gpt-4o_ICL_open.csv"]
    assert gpt.eval.task == "SMMILE/ICL/open" and gpt.eval.model == "smmile/gpt-4o"
    assert {s.name for s in gpt.results.scores} >= {"exact_match", "llm_as_a_judge"}
    assert "llama3.3" in gpt.eval.metadata["judge"] and "{question}" in gpt.eval.metadata["judge_prompt"]
    failed = [s for s in gpt.samples if s.metadata.get("failure") == "failed"]
    assert len(failed) == 3 and all(s.scores["exact_match"].value == 0 and s.output.error for s in failed)
    refused = [s for s in logs["result_gpt-4o_ICL_mcqa.csv"].samples if s.metadata.get("failure") == "refused"]
    assert len(refused) == 2 and all(s.output.choices[0].stop_reason == "content_filter" for s in refused)
    accuracy = {s.name: s.metrics["accuracy"].value for s in gpt.results.scores}
    judged = json.loads((results / "result_gpt-4o_ICL_open_evaluationllm.json").read_text())
    assert accuracy["llm_as_a_judge"] == pytest.approx(judged["correct_examples"] / (111 - 3))  # failures left out
    assert cli.main(["stats", str(results), "--out", str(tmp_path / "s"), "--n-boot", "10", "--compare", "none"]) == 0
    stats = pd.read_csv(tmp_path / "s" / "stats_estimates.csv")
    for log in logs.values():  # each metric's accuracy is smmile stats' (its default failure rule)
        for score in log.results.scores:
            row = stats[(stats["source"] == log.eval.metadata["source"]) &
                        (stats["metric"].map(lambda m: S.scorer_name(m)) == score.name)]
            assert 100 * score.metrics["accuracy"].value == pytest.approx(row["accuracy"].item())


def _check_run(res, logs):
    """A run's logs: the manifest's dataset, settings and versions, and each sample's request as journaled."""
    for log in logs.values():
        manifest = json.loads((res / log.eval.metadata["source"].replace(".csv", ".manifest.json")).read_text())
        assert log.eval.metadata["dataset"]["fingerprint"] == manifest["dataset"]["fingerprint"]
        assert log.eval.metadata["manifest"]["generation"] == manifest["generation"]
        assert log.eval.packages == manifest["packages"] and log.eval.task_args["protocol"] == "paper"
        assert log.eval.task in ("SMMILE/ICL/open", "SMMILE/ICL/mcqa")
        journal = res / manifest["journal"]["file"]
        sent = {r["problem_id"]: r["request"] for r in map(json.loads, journal.read_text().splitlines())
                if r.get("item", {}).get("format") == manifest["task_format"]}
        assert sent and all(s.metadata["request_as_sent"] == sent[s.id] for s in log.samples)


def test_baseline_run_reads_back_with_settings_and_dataset(demo_dir, tmp_path, ilog):
    from smmile.cli.baselines import main as baselines

    res = tmp_path / "res"
    for fmt in ("open", "mcqa"):
        assert baselines(["--baseline", "random", "--task_format", fmt, "--dataset", "demo", "--output-dir",
                          str(res)]) == 0
    assert cli.main(["export", "inspect", str(res), "--out", str(tmp_path / "logs")]) == 0
    logs = _logs(ilog, tmp_path / "logs")
    assert _check_against_published(res, logs) > 0
    _check_run(res, logs)


@pytest.mark.slow
def test_tiny_model_run_reads_back_with_its_scores(tmp_path, ilog):
    """A tiny random-weight LLaVA through the HF backend, open and MCQA: every sample's scores are smmile's."""
    pytest.importorskip("transformers")
    tiny_models = pytest.importorskip("tiny_models")
    from smmile.generation import GenerationSettings
    from smmile.runner.run import RunSpec, run

    res, model, data = tmp_path / "res", tiny_models.cached("llava"), tiny_models.demo_subset()
    for fmt in ("open", "mcqa"):
        assert run(RunSpec(model="llava_7b", fmt=fmt, dataset=str(data), output_dir=res, model_path=str(model),
                           generation=GenerationSettings(max_new_tokens=4), quiet=True)).exit_code == 0
    assert cli.main(["export", "inspect", str(res), "--out", str(tmp_path / "logs")]) == 0
    logs = _logs(ilog, tmp_path / "logs")
    assert len(logs) == 2 and _check_against_published(res, logs) == 2 * len(load_problems(str(data)))
    assert {log.eval.model for log in logs.values()} == {f"smmile/{r.model}" for r in load_records(str(res))}
    _check_run(res, logs)


def test_without_inspect_ai_one_line_exit_2(published, tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "inspect_ai", None)
    results = _copy(published, tmp_path, "result_gpt-4o_ICL_mcqa*")
    assert cli.main(["export", "inspect", str(results), "--out", str(tmp_path / "logs")]) == 2
    err = capsys.readouterr().err
    assert "pip install 'smmile[inspect]'" in err and err.count("\n") == 1
    assert not (tmp_path / "logs").exists()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def viewer(published, tmp_path, ilog):
    """``inspect view`` on 127.0.0.1 serving the export of gpt-4o's ICL open result: (url, log file, an answer)."""
    results = _copy(published, tmp_path, "result_gpt-4o_ICL_open*")
    assert cli.main(["export", "inspect", str(results), "--out", str(tmp_path / "logs")]) == 0
    (log,) = (tmp_path / "logs").glob("*.eval")
    answer = pd.read_csv(results / "result_gpt-4o_ICL_open.csv")["generated_answer"].iloc[0]
    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "inspect_ai", "view", "start", "--log-dir", str(log.parent),
                               "--host", "127.0.0.1", "--port", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 90
        while time.time() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert server.poll() is None, "inspect view exited"
            time.sleep(0.5)
        yield f"http://127.0.0.1:{port}", log, answer
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.mark.slow
@pytest.mark.server
def test_inspect_view_lists_the_log_and_serves_its_samples(viewer):
    url, log, answer = viewer
    with urllib.request.urlopen(f"{url}/api/log-files", timeout=30) as reply:
        listed = json.load(reply)["files"]
    assert [(f["name"], f["task"]) for f in listed] == [(log.as_uri(), "SMMILE/ICL/open")]
    with urllib.request.urlopen(f"{url}/api/logs/{urllib.parse.quote(str(log), safe='')}", timeout=60) as reply:
        served = json.load(reply)
    assert served["samples"][0]["output"]["choices"][0]["message"]["content"].startswith(answer)


@pytest.mark.slow
@pytest.mark.server
def test_inspect_view_shows_a_sample_answer_in_the_browser(viewer, browser):
    url, _, answer = viewer
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.goto(f"{url}/")
    page.get_by_text("SMMILE/ICL/open").first.click(timeout=60_000)
    page.get_by_text(answer[:40]).first.wait_for(timeout=60_000)


def test_a_jury_verdicts_per_judge_read_back(demo_dir, tmp_path, ilog):
    """A judged run: the LLM score is the jury's verdict, each member's verdict and the reply beside it."""
    from smmile.cli.baselines import main as baselines
    from smmile.record import verdicts
    from smmile.record.result_csv import csv_sha256

    res = tmp_path / "res"
    assert baselines(["--baseline", "random", "--task_format", "open", "--dataset", "demo", "--output-dir",
                      str(res)]) == 0
    csv = res / "result_random_ICL.csv"
    ids = pd.read_csv(csv)["problem_id"].astype(str).tolist()
    members = [{"backend": "ollama", "model": "a"}, {"backend": "ollama", "model": "b"}]
    rows = [{"problem_id": pid, "reply": str(i % 2), "status": "ok", "value": i % 2,
             "jury": [{"judge": "ollama:a", "value": i % 2}, {"judge": "ollama:b", "value": 1}]}
            for i, pid in enumerate(ids)]
    verdicts.write(csv, csv_sha256(csv), {"backend": "jury", "model": "ollama:a, ollama:b", "jury": members},
                   None, {pid: 100.0 * (i % 2) for i, pid in enumerate(ids)}, rows)
    assert cli.main(["export", "inspect", str(res), "--out", str(tmp_path / "logs")]) == 0
    (log,) = _logs(ilog, tmp_path / "logs").values()
    assert log.eval.metadata["judge"] == "ollama:a, ollama:b"
    for i, sample in enumerate(log.samples):
        score = sample.scores["llm_as_a_judge"]
        assert score.value == i % 2 and score.explanation == f"judge reply: '{i % 2}' (ok)"
        assert score.metadata["verdicts"] == {"ollama:a": i % 2, "ollama:b": 1.0, "jury": i % 2}
