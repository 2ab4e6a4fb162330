"""One command line (issue #36, deliverable 4): the flags the front doors share are accepted by `smmile run` alike;
a bad flag is one line and "see --help"; the scoring scripts take the dataset from the results' manifests."""

from __future__ import annotations

import json
import os

import pytest

import tiny_models

from smmile import cli
from smmile.cli import local_models
from smmile.cli import run as run_cli
from smmile.cli.baselines import main as baselines_main
from smmile.cli.em import main as em_main
from smmile.cli.stratify import main as stratify_main

FRONT_DOORS = {"inference_qwen.py": local_models.qwen_main, "inference_medgemma.py": local_models.medgemma_main,
               "inference_llava_mcqa.py": local_models.llava_mcqa_main, "inference_baselines.py": baselines_main}
# the original's own flags, which name the model or its device where `smmile run` has --model / --device-map
ORIGINAL_ONLY = {"--models", "--model_name", "--baseline", "--use_vllm", "--dataset_id", "--augmented"}


def code(main, argv) -> int:
    """A command's exit status, whether returned or raised (argparse exits)."""
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)


def norm(flag: str) -> str:
    """Both spellings are accepted everywhere (`--inference_mode`, `--inference-mode`): compare one."""
    return flag[:2] + flag[2:].replace("_", "-")


def option_strings(main) -> set[str]:
    """Every flag a front door's parser declares (seen when `main(["--help"])` parses)."""
    seen: set[str] = set()
    original = local_models.fd.ArgumentParser.parse_known_args

    def spy(self, args=None, namespace=None):
        seen.update(s for s in self._option_string_actions if s.startswith("--"))
        return original(self, args, namespace)

    local_models.fd.ArgumentParser.parse_known_args = spy
    try:
        main(["--help"])
    except SystemExit:
        pass
    finally:
        local_models.fd.ArgumentParser.parse_known_args = original
    return seen


@pytest.mark.parametrize("script", sorted(FRONT_DOORS))
def test_every_flag_a_front_door_adds_is_accepted_by_smmile_run(script, capsys):
    door = option_strings(FRONT_DOORS[script])
    capsys.readouterr()
    run_flags = {norm(f) for f in run_cli.build_parser()._option_string_actions}
    missing = sorted(f for f in {norm(f) for f in door} - {norm(f) for f in ORIGINAL_ONLY} - {"--help"}
                     if f not in run_flags)
    assert not missing, f"{script} takes {missing}, smmile run does not"


def test_smmile_run_takes_allow_cpu(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert cli.main(["run", "--model", "random", "--dataset", "demo", "--output-dir", str(tmp_path),
                     "--allow-cpu", "--gpu-devices", "3", "--hf-cache-dir", str(tmp_path / "hf")]) == 0, \
        capsys.readouterr().err
    assert (tmp_path / "result_random_ICL_open.csv").exists()
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "3"  # as the front doors' --gpu_devices


@pytest.mark.parametrize("argv, prog", [
    (["run", "--model", "random", "--no-such-flag"], "smmile run"),
    (["run", "--model", "random", "--inference_mode", "few-shot"], "smmile run"),
    (["stats"], "smmile stats"),
])
def test_a_bad_flag_is_one_line_and_points_to_help(argv, prog, capsys):
    assert code(cli.main, argv) == 2
    captured = capsys.readouterr()
    lines = [x for x in captured.err.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"{prog}: error: ") and f"see {prog} --help" in lines[0]
    assert "usage:" not in captured.err and not captured.out


@pytest.mark.parametrize("main", ["openai_main", "anthropic_main", "textonly_main", "textonly_mcqa_main"])
@pytest.mark.parametrize("flag", [["--model-path", "weights"], ["--batch-size", "4"]])
def test_an_api_front_door_has_no_weights_to_load_or_batch(main, flag, capsys):
    """--model-path would rename an API model's results (and change its journal keys); both are refused."""
    from smmile.cli import api_models

    argv = (["--model", "gpt-4o"] if main == "openai_main" else []) + flag
    assert code(getattr(api_models, main), argv) == 2
    assert f"unrecognized arguments: {' '.join(flag)}" in capsys.readouterr().err


def test_a_front_doors_bad_flag_is_one_line_and_its_original_flags_still_work(tmp_path, capsys):
    assert code(baselines_main, ["--baseline", "random", "--bogus"]) == 2
    lines = [x for x in capsys.readouterr().err.splitlines() if x.strip()]
    assert len(lines) == 1 and "see " in lines[0] and "--help" in lines[0]
    assert baselines_main(["--baseline", "majority", "--inference_mode", "ICL", "--task_format", "mcqa",
                           "--dataset", "demo", "--output_dir", str(tmp_path)]) == 0
    assert (tmp_path / "result_majority_ICL_mcqa.csv").exists()


def test_stratify_takes_the_dataset_from_the_results_manifests(tmp_path, capsys):
    assert baselines_main(["--baseline", "random", "--dataset", "demo", "--output-dir", str(tmp_path)]) == 0
    assert em_main([str(tmp_path)]) == 0
    capsys.readouterr()
    assert stratify_main([str(tmp_path), "--eval_type", "em"]) == 0, capsys.readouterr().err
    out = capsys.readouterr().err
    manifest = json.loads((tmp_path / "result_random_ICL.manifest.json").read_text())
    assert f"Dataset from the results' manifests: {manifest['dataset']['id']}" in out
    strata = json.loads((tmp_path / "model_stratification_em.json").read_text())
    assert list(strata) == ["random (baseline):ICL"] or strata  # stratified by the demo's flags


def test_stratify_refuses_results_of_two_datasets_without_dataset(tmp_path, capsys):
    assert baselines_main(["--baseline", "random", "--dataset", "demo", "--output-dir", str(tmp_path)]) == 0
    other = tiny_models.demo_subset(4)  # a second dataset (a local folder of 4 demo problems)
    assert baselines_main(["--baseline", "majority", "--dataset", str(other), "--output-dir", str(tmp_path)]) == 0
    assert em_main([str(tmp_path)]) == 0
    capsys.readouterr()
    assert stratify_main([str(tmp_path), "--eval_type", "em"]) == 2
    assert "pass --dataset" in capsys.readouterr().err


def test_stratify_says_when_no_manifest_names_a_dataset_and_keeps_the_originals_flag(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # the original's default dataset is not loaded here: said first
    assert baselines_main(["--baseline", "random", "--dataset", "demo", "--output-dir", str(tmp_path)]) == 0
    assert em_main([str(tmp_path)]) == 0
    (tmp_path / "result_random_ICL.manifest.json").unlink()  # as the published results: no manifest
    capsys.readouterr()
    stratify_main([str(tmp_path), "--eval_type", "em"])
    assert "No result's manifest names a dataset: stratifying by smmile/SMMILE" in capsys.readouterr().err
    other = tiny_models.demo_subset(4)  # the original's --dataset_id (any id or folder) wins over the manifests
    assert baselines_main(["--baseline", "majority", "--dataset", "demo", "--output-dir", str(tmp_path / "m")]) == 0
    assert em_main([str(tmp_path / "m")]) == 0
    capsys.readouterr()
    stratify_main([str(tmp_path / "m"), "--eval_type", "em", "--dataset_id", str(other)])
    err = capsys.readouterr().err
    assert "from the results' manifests" not in err and "No result's manifest" not in err


def test_stats_says_when_the_manifests_name_several_datasets(tmp_path, capsys):
    assert baselines_main(["--baseline", "random", "--dataset", "demo", "--output-dir", str(tmp_path)]) == 0
    other = tiny_models.demo_subset(4)
    assert baselines_main(["--baseline", "majority", "--dataset", str(other), "--output-dir", str(tmp_path)]) == 0
    capsys.readouterr()
    assert cli.main(["stats", str(tmp_path), "--out", str(tmp_path / "stats"), "--n-boot", "50"]) == 0
    (line,) = [x for x in capsys.readouterr().err.splitlines() if "datasets" in x]
    assert "run on 2 datasets" in line and "demo" in line and str(other) in line
    (tmp_path / "result_majority_ICL.manifest.json").unlink()  # one dataset named: nothing to say
    assert cli.main(["stats", str(tmp_path), "--out", str(tmp_path / "stats"), "--n-boot", "50"]) == 0
    assert "datasets" not in capsys.readouterr().err


def test_the_report_without_dataset_names_the_one_the_manifests_name(tmp_path, capsys):
    assert baselines_main(["--baseline", "random", "--dataset", "demo", "--output-dir", str(tmp_path / "r")]) == 0
    capsys.readouterr()
    assert cli.main(["report", str(tmp_path / "r"), "--out", str(tmp_path / "report"), "--n-boot", "50"]) == 0
    dataset = json.loads((tmp_path / "r" / "result_random_ICL.manifest.json").read_text())["dataset"]["id"]
    (line,) = [x for x in capsys.readouterr().err.splitlines() if "without --dataset" in x]
    assert f"add --dataset {dataset} for images" in line
    assert cli.main(["report", str(tmp_path / "r"), "--dataset", "demo", "--out", str(tmp_path / "report2"),
                     "--n-boot", "50"]) == 0
    assert "without --dataset" not in capsys.readouterr().err
