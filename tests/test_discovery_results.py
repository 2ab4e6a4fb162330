"""Result discovery (scoring/scores.py): manifest first, no shards, duplicates warned; and the scoring
commands end to end on a model outside the paper, a merged folder with its shards, and duplicate files."""

import json
from pathlib import Path

import pytest

from smmile import logs
from smmile.cli import em as em_cli
from smmile.cli import stratify as stratify_cli
from smmile.cli import variance as variance_cli
from smmile.record import naming
from smmile.record.run_record import scan as load_results

OPEN_HEADER = "problem_id,final_question,true_answer,generated_answer,full_response\n"
MCQA_HEADER = "problem_id,final_question,selected_option,correct_option,is_correct\n"


def open_csv(path: Path, ids, right) -> Path:
    rows = [f"{pid},q,Red,{'red' if ok else 'blue'},x" for pid, ok in zip(ids, right)]
    path.write_text(OPEN_HEADER + "\n".join(rows) + "\n")
    return path


def mcqa_csv(path: Path, ids, right) -> Path:
    rows = [f"{pid},q,{'A' if ok else 'B'},A,{ok}" for pid, ok in zip(ids, right)]
    path.write_text(MCQA_HEADER + "\n".join(rows) + "\n")
    return path


def manifest(csv: Path, mode: str, fmt: str, shard=None, **model) -> None:
    data = {"result_file": csv.name, "model": model, "inference_mode": mode, "task_format": fmt,
            "dataset": {"kind": "demo", "id": "demo", "revision": None, "fingerprint": "f"}, "shard": shard}
    naming.manifest_path(csv).write_text(json.dumps(data))


MY_MODEL = {"preset": "my-model", "model_id": "my-model", "tag": "my-model",
            "identity": {"key": "my-model", "scoring_name": "my-model", "display": "my-model", "latex": "my-model"}}
IDS = [f"p{i:02d}" for i in range(12)]


def names(results):
    return [r.path.name for r in results]


def test_manifest_identity_first_file_name_rules_otherwise(tmp_path):
    csv = open_csv(tmp_path / "result_my-model_ICL_open.csv", IDS, [True] * 12)
    (bare,) = load_results(tmp_path)
    assert bare.identity.scoring_name == "unknown" and not bare.known  # the original's rules: "Skipping"
    manifest(csv, "ICL", "open", **MY_MODEL)
    (found,) = load_results(tmp_path)
    assert found.known and found.identity.key == found.identity.scoring_name == "my-model"
    assert (found.mode, found.fmt, found.tag) == ("ICL", "open", "my-model")
    assert found.csv == csv and found.manifest["model"]["tag"] == "my-model"
    # a manifest of today's runner (no model.identity yet): identity from the preset/tag
    manifest(csv, "ICL", "open", preset="my-model", tag="my-model", model_id="my-model")
    assert load_results(tmp_path)[0].identity.key == "my-model"


def test_unreadable_manifest_is_reported_and_the_name_used(tmp_path):
    csv = open_csv(tmp_path / "result_qwen7B_ICL_open.csv", IDS, [True] * 12)
    naming.manifest_path(csv).write_text("{broken")
    with logs.kept_warnings() as warnings:
        (found,) = load_results(tmp_path)
    assert found.identity.key == "qwen7B" and found.manifest is None
    assert len(warnings) == 1 and "result_qwen7B_ICL_open.manifest.json" in warnings[0]


def test_shards_and_non_results_are_never_results(tmp_path):
    open_csv(tmp_path / "result_random_ICL.csv", IDS, [True] * 12)
    for i in (1, 2, 3):
        open_csv(tmp_path / f"result_random_ICL.shard-{i}-of-3.csv", IDS[:4], [True] * 4)
    (tmp_path / "stats_estimates.csv").write_text("model,metric\n")
    (tmp_path / "notes.csv").write_text("a,b\n1,2\n")
    run = open_csv(tmp_path / "my_run.csv", IDS, [True] * 12)  # any name, when a manifest says what it is
    manifest(run, "0-shot", "open", **MY_MODEL)
    assert names(load_results(tmp_path)) == ["my_run.csv", "result_random_ICL.csv"]
    renamed = open_csv(tmp_path / "result_random_0-shot.csv", IDS[:4], [True] * 4)  # a shard by its manifest
    manifest(renamed, "0-shot", "open", shard={"index": 1, "count": 3}, preset="random", tag="random")
    assert names(load_results(tmp_path)) == ["my_run.csv", "result_random_ICL.csv"]
    assert names(load_results(tmp_path, patterns=["result_*_ICL*.csv"])) == ["result_random_ICL.csv"]


def test_two_files_for_one_model_mode_and_format(tmp_path):
    open_csv(tmp_path / "result_llava_7b_ICL.csv", IDS, [True] * 12)
    open_csv(tmp_path / "result_llava_7b_ICL_open.csv", IDS, [False] * 12)
    open_csv(tmp_path / "result_qwen7B_ICL_open.csv", IDS, [True] * 12)
    mcqa_csv(tmp_path / "result_llava_7b_ICL_mcqa.csv", IDS, [True] * 12)  # another format: no clash
    with logs.kept_warnings() as warnings:
        found = load_results(tmp_path)
    assert names(found) == ["result_llava_7b_ICL_open.csv", "result_llava_7b_ICL_mcqa.csv",
                            "result_qwen7B_ICL_open.csv"]
    assert len(warnings) == 1
    assert "result_llava_7b_ICL.csv" in warnings[0] and "result_llava_7b_ICL_open.csv" in warnings[0]
    # a file with a manifest wins over one without, whatever the names
    manifest(tmp_path / "result_llava_7b_ICL.csv", "ICL", "open", tag="llava_7b", preset="llava_7b")
    assert names(load_results(tmp_path))[0] == "result_llava_7b_ICL.csv"


def test_scoring_jsons_take_the_manifest_of_their_csv(tmp_path):
    csv = tmp_path / "result_my-model_ICL_open.csv"
    (tmp_path / "result_my-model_ICL_open_evaluation.json").write_text("{}")
    manifest(csv, "ICL", "open", **MY_MODEL)
    (found,) = load_results(tmp_path, patterns=naming.stratify_patterns("evaluation"))
    assert found.identity.key == "my-model" and found.csv == csv


# -- the commands end to end ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def demo_ids():
    from smmile.data.load import load_problems

    return sorted(p.problem_id for p in load_problems("demo"))


def test_a_model_outside_the_paper_is_scored_by_every_command(tmp_path, demo_ids, capsys):
    right = [i % 3 == 0 for i in range(len(demo_ids))]
    for mode in ("0-shot", "ICL"):
        manifest(open_csv(tmp_path / f"result_my-model_{mode}_open.csv", demo_ids, right), mode, "open", **MY_MODEL)
        manifest(mcqa_csv(tmp_path / f"result_my-model_{mode}_mcqa.csv", demo_ids, right), mode, "mcqa",
                 preset="my-model", tag="my-model", model_id="my-model")  # today's manifest: no identity
    assert em_cli.main([str(tmp_path)]) == 0
    assert stratify_cli.main([str(tmp_path), "--eval_type", "em", "--dataset", "demo"]) == 0
    assert variance_cli.main([str(tmp_path), "--generate_table"]) == 0
    out = capsys.readouterr().out
    assert "Skipping" not in out
    assert "EXACT MATCH EVALUATION RESULTS FOR my-model (ICL)" in out
    comparison = (tmp_path / "model_comparison.txt").read_text()
    assert comparison.split("\n")[5].startswith("my-model ")
    assert json.loads((tmp_path / "result_my-model_ICL_open_evaluation.json").read_text())["model"] == "my-model"
    assert list(json.loads((tmp_path / "model_stratification_em.json").read_text())) == ["my-model:0-shot",
                                                                                         "my-model:ICL"]
    table = (tmp_path / "evaluation_results.txt").read_text().split("\n")
    assert table[2].startswith("my-model & - & - & ") and table[2].count(" ± ") == 4  # EM and MCQA, both modes
    assert (tmp_path / "latex_table.tex").read_text().split("\n")[1].startswith("my-model & ")


def test_a_merged_folder_with_its_shards_uses_only_the_merged_file(tmp_path, capsys):
    right = [i % 2 == 0 for i in range(12)]  # merged: 50 %
    merged = open_csv(tmp_path / "result_random_ICL.csv", IDS, right)
    manifest(merged, "ICL", "open", preset="random", tag="random")
    for i in (1, 2, 3):  # stale shard files beside it: all correct
        shard = open_csv(tmp_path / f"result_random_ICL.shard-{i}-of-3.csv", IDS[i - 1::3], [True] * 4)
        manifest(shard, "ICL", "open", shard={"index": i, "count": 3}, preset="random", tag="random")
    open_csv(tmp_path / "result_qwen7B_ICL_open.csv", IDS, [True] * 12)
    assert variance_cli.main([str(tmp_path), "--mean_only", "--sorted"]) == 0
    assert em_cli.main([str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "shard" not in out
    rows = {line.split(" & ")[0]: line for line in (tmp_path / "evaluation_results.txt").read_text().split("\n")}
    assert rows["random"] == "random & - & - & - & 50.00 & - & -"
    assert json.loads((tmp_path / "result_random_ICL_evaluation.json").read_text())["total_examples"] == 12


def test_two_files_for_one_result_are_named_by_every_command(tmp_path, capsys):
    open_csv(tmp_path / "result_llava_7b_ICL.csv", IDS, [True] * 12)
    open_csv(tmp_path / "result_llava_7b_ICL_open.csv", IDS, [False] * 12)
    open_csv(tmp_path / "result_qwen7B_ICL_open.csv", IDS, [True] * 12)
    assert em_cli.main([str(tmp_path)]) == 0
    assert variance_cli.main([str(tmp_path), "--mean_only"]) == 0
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning:")]
    assert len(err) == 2
    assert all("result_llava_7b_ICL.csv" in line and "result_llava_7b_ICL_open.csv" in line for line in err)
    assert not (tmp_path / "result_llava_7b_ICL_evaluation.json").exists()
    rows = {line.split(" & ")[0]: line for line in (tmp_path / "evaluation_results.txt").read_text().split("\n")}
    assert rows["llava_7b"] == "llava_7b & - & - & - & 0.00 & - & -"  # the _open file, as documented
