"""Issue #34: `smmile run --score-options` (each MCQA option letter scored by a transformers model) and the gold
option's probability (PGOLD) in the ICL analyses, on tiny random checkpoints."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from smmile.analysis.option_probs import gold_probabilities
from smmile.cli import main as smmile
from smmile.record.run_record import read
from smmile.scoring.scores import records_of
from signflip_brute import family, unit_values


def _csv(folder: Path) -> Path:
    return next(folder.glob("result_*.csv"))


def _manifest(folder: Path) -> dict:
    return json.loads(next(folder.glob("result_*.manifest.json")).read_text())


def _probs(folder: Path) -> dict:
    """problem id -> the journaled option probabilities (the journal may hold generated responses too)."""
    return {pid: rec["response"]["extra"]["option_probs"] for pid, found in read(_csv(folder)).journal.items()
            for rec in found if "option_probs" in rec["response"]["extra"]}


def _scored(folder: Path) -> tuple[dict, dict, dict]:
    """(responses, journal records, CSV rows) of the one result in ``folder``, by problem id."""
    result = read(_csv(folder))
    rows = {r["problem_id"]: r for r in csv.DictReader(_csv(folder).open(encoding="utf-8"))}
    return result.responses, {pid: found[0] for pid, found in result.journal.items()}, rows


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The tiny Idefics3 checkpoint (`hf:`) with --score-options on four demo problems and on their 1-shot variant."""
    pytest.importorskip("transformers")
    import tiny_generic
    import tiny_models

    root, model, data = tmp_path_factory.mktemp("option-probs"), tiny_generic.cached("idefics3"), \
        tiny_models.demo_subset(4)
    assert smmile(["data", "variant", "k-shot", "--k", "1", "--dataset", str(data), "--out", str(root / "k1")]) == 0
    for name, dataset in (("original", data), ("k1", root / "k1")):
        assert smmile(["run", "--model", f"hf:{model}", "--task_format", "mcqa", "--dataset", str(dataset),
                       "--output-dir", str(root / "res" / name), "--dtype", "float32", "--score-options"]) == 0
    return root, model, data


@pytest.mark.slow
def test_probabilities_sum_to_one_and_the_answer_is_their_argmax(runs):
    root = runs[0]
    for name in ("original", "k1"):
        responses, records, rows = _scored(root / "res" / name)
        assert len(rows) == 4 and set(responses) == set(rows) and all(r["extra"]["layout"] for r in responses.values())
        for pid, response in responses.items():
            probs = response["extra"]["option_probs"]
            assert set(probs) == set(records[pid]["item"]["options"]) and len(probs) >= 2
            assert sum(probs.values()) == pytest.approx(1, abs=1e-9) and all(0 < p < 1 for p in probs.values())
            best = max(probs, key=probs.get)
            assert rows[pid]["selected_option"] == best
            assert rows[pid]["is_correct"] == str(best == rows[pid]["correct_option"])
        assert _manifest(root / "res" / name)["settings"]["score_options"] is True


@pytest.mark.slow
def test_probabilities_equal_a_direct_forward_pass(runs):
    """The journaled probabilities against the tiny model's own logits: the chat template's prompt with the
    answer tag appended as text, tokenized by the processor, one plain forward pass, softmax over the letters."""
    import torch
    from transformers import AutoModelForImageTextToText, AutoProcessor

    from smmile.data.load import load_problems
    from smmile.models.hf.generic import conversation, rgb_on_white

    root, model_dir, data = runs
    processor = AutoProcessor.from_pretrained(model_dir)
    model = AutoModelForImageTextToText.from_pretrained(model_dir).float().eval()
    tok = processor.tokenizer
    problems = {p.problem_id: p for p in load_problems(str(data))}
    responses, records, _ = _scored(root / "res" / "original")
    for pid, response in responses.items():
        record = records[pid]
        messages, refs = conversation(problems[pid], "ICL", record["item"]["target"])
        assert [r.digest.hex() for r in refs] == [i["image_sha256"] for i in record["request"]["images"]]
        text = processor.apply_chat_template(record["request"]["messages"], tokenize=False,
                                             add_generation_prompt=True) + "<answer>"
        inputs = processor(text=[text], images=[[rgb_on_white(i, r.load()) for i, r in enumerate(refs)]],
                           return_tensors="pt", add_special_tokens=not text.startswith(tok.bos_token))
        with torch.no_grad():
            logits = model(**inputs).logits[0, -1].double()
        letters = list(response["extra"]["option_probs"])
        expected = torch.softmax(logits[[tok.convert_tokens_to_ids(letter) for letter in letters]], 0)
        got = [response["extra"]["option_probs"][letter] for letter in letters]
        assert got == pytest.approx(expected.tolist(), abs=1e-5)
        logprobs = torch.log_softmax(logits, 0)
        assert [response["extra"]["option_logprobs"][x] for x in letters] == pytest.approx(
            [float(logprobs[tok.convert_tokens_to_ids(x)]) for x in letters], abs=1e-4)


@pytest.mark.slow
def test_the_analysis_compares_the_gold_options_probability(runs, capsys):
    root = runs[0]
    out = root / "an"
    assert smmile(["analyze", "shots", str(root / "res" / "original"), str(root / "res" / "k1"), "--out",
                   str(out)]) == 0
    assert "PGOLD: the mean probability (%) the model gave the gold option" in capsys.readouterr().out
    summary = json.loads((out / "shots.json").read_text())["summary"]
    row = next(r for r in summary if r["metric"] == "PGOLD" and r["comparison"] == "k-shot-1 − all examples")
    gold = {}
    for name in ("original", "k1"):  # independently: the journaled probabilities at the CSV's correct letter
        responses, _, rows = _scored(root / "res" / name)
        gold[name] = {pid: responses[pid]["extra"]["option_probs"][rows[pid]["correct_option"]] for pid in rows}
    pairs = sorted(set(gold["original"]) & set(gold["k1"]))
    assert row["n_pairs"] == len(pairs) == 4
    mean = {name: 100 * sum(gold[name][p] for p in pairs) / len(pairs) for name in gold}
    assert row["accuracy_variant"] == pytest.approx(mean["k1"])
    assert row["accuracy_reference"] == pytest.approx(mean["original"])
    assert row["difference"] == pytest.approx(mean["k1"] - mean["original"])
    assert row["ci_low"] <= row["difference"] <= row["ci_high"]
    # issue #31: the sign-flip test over the pairs' per-problem differences, recomputed by brute force in its family
    mine = [r for r in summary if (r["model"], r["metric"]) == (row["model"], "PGOLD")]
    flips = json.loads((out / "shots.json").read_text())["flips"]
    pairs = [[f for f in flips if (f["model"], f["metric"], f["comparison"]) == (r["model"], "PGOLD", r["comparison"])]
             for r in mine]
    p, adjusted = family([unit_values(*zip(*[(f["score_variant"], f["score_reference"], f["base_problem_id"])
                                              for f in pair])) for pair in pairs])
    assert [r["p_value"] for r in mine] == pytest.approx(p, abs=1e-12)
    assert [r["p_adjusted"] for r in mine] == pytest.approx(adjusted, abs=1e-12)
    assert row["significant"] == (row["ci_low"] > 0 or row["ci_high"] < 0)
    assert any(r["metric"] == "MCQA" for r in summary)
    curve = json.loads((out / "shots.json").read_text())["curve"]
    assert {r["point"] for r in curve if r["metric"] == "PGOLD"} == {"1", "all"}


@pytest.mark.slow
def test_a_preset_scores_options_and_its_default_output_is_unchanged(tmp_path):
    """A paper preset (Qwen2.5-VL on its tiny checkpoint): scored rows are the argmax; the generated run's CSV is
    the same bytes before and after a scored run in the same folder (the scored responses are a new
    configuration, never reused for it)."""
    pytest.importorskip("transformers")
    import tiny_models

    base = ["run", "--model", "qwen7B", "--model-path", str(tiny_models.cached("qwen2_5_vl")), "--task_format", "mcqa",
            "--dataset", str(tiny_models.demo_subset(4)), "--output-dir", str(tmp_path), "--dtype", "float32",
            "--max-new-tokens", "4"]
    assert smmile(base) == 0
    generated = _csv(tmp_path).read_bytes()
    assert smmile([*base, "--score-options"]) == 0
    probs, rows = _probs(tmp_path), _scored(tmp_path)[2]
    assert len(probs) == len(rows) == 4
    for pid, p in probs.items():
        assert sum(p.values()) == pytest.approx(1, abs=1e-9)
        assert rows[pid]["selected_option"] == max(p, key=p.get)
    notes = []  # the analysis reads the scored configuration, not the generated one the journal also holds
    mcqa = next(r for r in records_of(tmp_path) if r.metric == "MCQA")
    gold = gold_probabilities(mcqa, notes).to_dict()
    assert not notes and gold == pytest.approx({pid: p[rows[pid]["correct_option"]] for pid, p in probs.items()})
    batched = [*base[:base.index("--output-dir")], "--output-dir", str(tmp_path / "b2"), *base[base.index("--dtype"):]]
    assert smmile([*batched, "--score-options", "--batch-size", "2"]) == 0  # a padded batch scores as batch size 1
    batch = _probs(tmp_path / "b2")
    assert set(batch) == set(probs) and all(batch[pid] == pytest.approx(probs[pid], abs=1e-4) for pid in probs)
    assert smmile(base) == 0
    assert _csv(tmp_path).read_bytes() == generated
    assert "score_options" not in _manifest(tmp_path)["settings"]


@pytest.mark.parametrize("args, says", [
    (["--model", "hf:some/model"], "the open format has none"),
    (["--model", "random", "--task_format", "mcqa"], "cannot score options"),
    (["--model", "qwen7B", "--backend", "vllm", "--task_format", "mcqa"], "cannot score options"),
    (["--model", "gpt-4o", "--task_format", "mcqa"], "cannot score options"),
])
def test_refused_where_options_cannot_be_scored(args, says, tmp_path, capsys, demo_dir):
    assert smmile(["run", *args, "--dataset", "demo", "--output-dir", str(tmp_path / "out"), "--score-options"]) == 2
    err = capsys.readouterr().err.strip()
    assert says in err and len(err.splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_the_documented_example_runs(tmp_path, monkeypatch, demo_dir, capsys):
    """docs/analyses.md §5 "Option probabilities", as written, with the tiny Idefics3 checkpoint as models/tiny-vlm."""
    pytest.importorskip("transformers")
    import shlex
    import shutil

    import tiny_generic

    doc = (Path(__file__).resolve().parents[1] / "docs" / "analyses.md").read_text()
    block = doc.split("### Option probabilities", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(tmp_path)
    shutil.copytree(tiny_generic.cached("idefics3"), tmp_path / "models" / "tiny-vlm")
    commands = [shlex.split(line)[1:] for line in block.splitlines() if line.startswith("smmile ")]
    assert len(commands) == 5
    for args in commands:
        assert smmile(args) == 0, args
    assert "PGOLD" in capsys.readouterr().out
    rows = json.loads((tmp_path / "probs" / "an" / "policies.json").read_text())["summary"]
    assert {r["metric"] for r in rows} == {"MCQA", "PGOLD"}
    pgold = next(r for r in rows if r["metric"] == "PGOLD")
    assert 0 < pgold["accuracy_reference"] < 100 and pgold["n_pairs"] > 0
