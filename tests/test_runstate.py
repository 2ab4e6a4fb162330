"""Run state (issue 9): the journal holds responses, keys cover the problem id and the request, rows are derived
by the current code, generation settings are one typed object, one run per output (issue 10)."""

import json
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from smmile.data.load import load_problems
from smmile.data.parquet import problems_to_records, write_dataset
from smmile.errors import UserError
from smmile.generation import GenerationSettings, RunSettings
from smmile.models import registry
from smmile.models.base import Backend, Response, resolve_settings
from smmile.runner.run import RunSpec, Runner, run
from test_cli_guarded import SLOW_RUN

CALLS: list[str] = []


class CountingBackend(Backend):
    """Answers every problem with a fixed sentence that names option B; counts the calls."""

    name = "counting"
    RUN_ONLY = ("concurrency",)  # how requests are sent, not what is asked (as ApiBackend declares it)

    def generate(self, work, on_done):
        for item, request in work:
            CALLS.append(item.problem_id)
            on_done(item, Response(text="After careful thought, the answer is B.", usage={"output_tokens": 9}))


def register_counting():
    registry.register(registry.Preset("counting-chat", "counting-chat", "api.chat_family:ApiChatFamily",
                                      "test_runstate:CountingBackend", "counting-chat",
                                      family_args={"answer_role": "assistant"}))


@pytest.fixture
def four_problems(tmp_path, demo_dir):
    return load_problems(str(demo_dir / "smmile"))[:4]


@pytest.fixture
def data(tmp_path, four_problems):
    """The four problems as a local dataset, and the counting backend registered with no call counted yet."""
    register_counting()
    CALLS.clear()
    return write_dataset(problems_to_records(four_problems), tmp_path / "d")


def dataset_with_twin(tmp_path, problems):
    """The problems plus a copy of the first one that differs only in its id (as SMMILE++ identity permutations)."""
    twin_id = problems[0].problem_id + "_twin"
    records = problems_to_records(problems)
    twin = [{**r, "problem_id": twin_id} for r in records if r["problem_id"] == problems[0].problem_id]
    out = tmp_path / "twin"
    write_dataset(records + twin, out)
    return out, twin_id


@pytest.mark.parametrize("fmt", ["open", "mcqa"])
def test_problems_identical_but_for_their_id_get_their_own_rows(tmp_path, four_problems, fmt):
    data, twin_id = dataset_with_twin(tmp_path, four_problems)
    result = run(RunSpec(model="majority", fmt=fmt, dataset=str(data), output_dir=tmp_path / "o", quiet=True))
    frame = pd.read_csv(result.csv_path, keep_default_na=False)
    assert len(frame) == 5 and frame.problem_id.nunique() == 5
    assert twin_id in set(frame.problem_id)
    first = frame[frame.problem_id == four_problems[0].problem_id].iloc[0]
    twin = frame[frame.problem_id == twin_id].iloc[0]
    assert (twin.final_question, twin.true_answer) == (first.final_question, first.true_answer)
    journal = tmp_path / "o" / ".smmile" / f"{result.csv_path.stem}.journal.jsonl"
    assert len({json.loads(line)["key"] for line in journal.read_text().splitlines()}) == 5


def test_a_changed_extractor_rederives_rows_with_zero_model_calls(tmp_path, four_problems, data, monkeypatch):
    spec = RunSpec(model="counting-chat", fmt="mcqa", dataset=str(data), output_dir=tmp_path / "o", quiet=True)
    first = run(spec)
    assert len(CALLS) == 4 and set(pd.read_csv(first.csv_path).selected_option) == {"B"}
    before = first.csv_path.read_bytes()

    from dataclasses import replace

    from smmile.protocol import outputs
    fixed = replace(outputs.OUTPUTS["api"], extractors=(outputs.Extract(lambda text, options: "A"),))
    monkeypatch.setitem(outputs.OUTPUTS, "api", fixed)  # "a fix to the extractor"
    second = run(spec)
    assert len(CALLS) == 4, "no model call for a change in how rows are derived"
    assert second.computed == 0
    assert first.csv_path.read_bytes() != before
    assert set(pd.read_csv(first.csv_path).selected_option) == {"A"}

    monkeypatch.undo()
    run(spec)
    assert first.csv_path.read_bytes() == before and len(CALLS) == 4


def test_journal_records_hold_the_response_and_the_planned_item(tmp_path, four_problems, data):
    result = run(RunSpec(model="counting-chat", fmt="mcqa", dataset=str(data), output_dir=tmp_path / "o", quiet=True))
    journal = tmp_path / "o" / ".smmile" / f"{result.csv_path.stem}.journal.jsonl"
    records = [json.loads(line) for line in journal.read_text().splitlines()]
    assert [r["problem_id"] for r in records] == [p.problem_id for p in four_problems]
    for rec, problem in zip(records, four_problems):
        assert rec["v"] == 2 and "row" not in rec
        assert rec["response"]["text"] == "After careful thought, the answer is B."
        assert rec["response"]["usage"] == {"output_tokens": 9}
        item = rec["item"]
        assert item["true_answer"] == problem.query.answer
        assert item["options"][item["correct"]] == problem.query.answer
        assert problem.query.question in item["target"]


def test_the_request_is_part_of_the_key(tmp_path, four_problems, data, monkeypatch):
    """A change to the rendered request (here: the system prompt) is a new request: it is sent again."""
    spec = RunSpec(model="counting-chat", fmt="open", dataset=str(data), output_dir=tmp_path / "o", quiet=True)
    run(spec)
    import smmile.models.api.chat_family as chat_family
    monkeypatch.setattr(chat_family, "API_SYSTEM", "You are a different assistant.")
    run(spec)
    assert len(CALLS) == 8


def test_generation_settings_are_typed_resolved_once_and_keyed(tmp_path, four_problems, data):
    spec = RunSpec(model="counting-chat", fmt="open", dataset=str(data), output_dir=tmp_path / "o", quiet=True,
                   settings=RunSettings(concurrency=2), generation=GenerationSettings(max_new_tokens=64, seed=3))
    runner = Runner(spec)
    assert runner.generation == GenerationSettings(max_new_tokens=64, temperature=0.0, seed=3)
    assert runner.settings == RunSettings(concurrency=2)
    assert runner.family.request(runner.plan(runner_load(runner))[0]).max_tokens == 64
    result = runner.run()
    manifest = json.loads(result.csv_path.with_name(result.csv_path.stem + ".manifest.json").read_text())
    assert manifest["generation"]["max_new_tokens"] == 64 and manifest["generation"]["seed"] == 3
    assert manifest["journal"]["format"] == 2
    run(replace(spec, settings=RunSettings(concurrency=5)))  # transport only: same keys
    assert len(CALLS) == 4
    run(replace(spec, settings=RunSettings(), generation=GenerationSettings(max_new_tokens=64, seed=4)))  # new keys
    assert len(CALLS) == 8


def runner_load(runner):
    from smmile.data.load import load_for_run

    return load_for_run(runner.spec.dataset, None)


def test_resolution_precedence_flags_over_preset_over_family():
    preset = registry.Preset("p", "p", "api.chat_family:ApiChatFamily", "x:y", settings=RunSettings(dtype="a"),
                             generation=GenerationSettings(max_new_tokens=100))
    spec = RunSpec(model="p", settings=RunSettings(dtype="b"), generation=GenerationSettings(temperature=0.5))
    settings, gen = resolve_settings(preset, spec, GenerationSettings(max_new_tokens=512, temperature=0.0))
    assert settings == RunSettings(dtype="b")
    assert gen == GenerationSettings(max_new_tokens=100, temperature=0.5)
    assert GenerationSettings(stop=("x",)).over(GenerationSettings()).stop == ("x",)


def test_a_journal_of_the_earlier_format_is_refused_in_one_line(tmp_path, data):
    journal = tmp_path / "o" / ".smmile" / "result_majority_ICL_mcqa.journal.jsonl"
    journal.parent.mkdir(parents=True)
    journal.write_text(json.dumps({"key": "abc", "status": "ok", "row": {"problem_id": "x"}}) + "\n")
    with pytest.raises(UserError, match="earlier smmile version"):
        run(RunSpec(model="majority", fmt="mcqa", dataset=str(data), output_dir=tmp_path / "o", quiet=True))
    assert journal.read_text().count("\n") == 1  # untouched


def test_two_identical_runs_into_one_folder_send_each_request_once(tmp_path):
    script, calls = tmp_path / "race.py", tmp_path / "calls.txt"
    script.write_text(SLOW_RUN)  # a slow backend that logs each request it is sent
    cmd = [sys.executable, str(script), str(tmp_path / "o"), str(calls)]
    first = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while not calls.exists() and time.time() < deadline:
        time.sleep(0.05)
    second = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert second.returncode == 2
    assert f"process {first.pid}" in second.stderr and "Traceback" not in second.stderr
    assert first.wait(timeout=120) == 0
    sent = calls.read_text().split()
    assert len(sent) == len(set(sent)) == 24


def test_output_folder_checked_before_the_backend_is_built(tmp_path, monkeypatch):
    register_counting()
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    built = []
    monkeypatch.setattr(Runner, "build_backend", lambda self: built.append(1))
    with pytest.raises(UserError, match="a_file is a file"):
        run(RunSpec(model="counting-chat", dataset="demo", output_dir=blocker / "results"))
    if Path("/proc").is_dir():  # a folder nobody can write, not even root (tests run as root here)
        with pytest.raises(UserError, match="cannot write"):
            run(RunSpec(model="counting-chat", dataset="demo", output_dir=Path("/proc/smmile-results")))
    assert built == []


def test_smmile_run_generation_flags_reach_the_manifest(tmp_path):
    from smmile.cli import run as cli

    code = cli.main(["--model", "majority", "--dataset", "demo", "--output-dir", str(tmp_path), "--temperature",
                     "0.3", "--seed", "7", "--stop", "###", "--stop", "END", "--do-sample", "false"])
    assert code == 0
    manifest = json.loads((tmp_path / "result_majority_ICL_open.manifest.json").read_text())
    gen = manifest["generation"]
    assert (gen["temperature"], gen["seed"], gen["stop"], gen["do_sample"]) == (0.3, 7, ["###", "END"], False)
    assert "temperature" not in manifest["settings"]


def test_help_shows_a_default_of_zero():
    from smmile.cli import common as fd

    p = fd.parser("x")
    p.add_argument("--n", type=int, default=0, help="how many")
    assert "(default: 0)" in p.format_help()


def test_the_manifest_records_the_model_identity(tmp_path):
    result = run(RunSpec(model="majority", dataset="demo", output_dir=tmp_path, quiet=True))
    manifest = json.loads(result.csv_path.with_name(result.csv_path.stem + ".manifest.json").read_text())
    assert manifest["model"]["identity"] == {"key": "majority", "scoring_name": "majority (baseline)",
                                             "display": manifest["model"]["identity"]["display"],
                                             "latex": "Majority"}


def test_replacing_another_configurations_csv_says_how_to_get_it_back(tmp_path, four_problems, data, capsys):
    paper = RunSpec(model="counting-chat", fmt="mcqa", dataset=str(data), output_dir=tmp_path / "o", quiet=True)
    first = run(paper).csv_path.read_bytes()
    run(replace(paper, protocol="corrected"))
    assert "held the results of another configuration" in capsys.readouterr().err
    assert len(CALLS) == 8
    again = run(paper)  # back: derived from the journal, no model call
    assert again.csv_path.read_bytes() == first and again.computed == 0 and len(CALLS) == 8
