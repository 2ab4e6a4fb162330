"""Every local-model front door, end to end on tiny random-weight checkpoints of its architecture (offline).

0-shot and ICL, open and MCQA: original file names, columns, one row per problem, summaries, manifests.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

pytest.importorskip("transformers")

import tiny_models  # noqa: E402
from smmile.cli import local_models as cli  # noqa: E402
from smmile.models.hf.compat import transformers_version  # noqa: E402

pytestmark = pytest.mark.slow


OPEN5 = ["problem_id", "final_question", "true_answer", "generated_answer", "full_response"]
MCQA8 = ["problem_id", "final_question", "true_answer", "correct_option", "selected_option", "is_correct",
         "generated_answer", "full_response"]
MCQA_NO_FULL = MCQA8[:-1]
MCQA_NO_GEN = MCQA8[:6] + ["full_response"]
MEDR1_OPEN = ["problem_id", "original_question", "true_answer", "generated_answer", "full_response"]
MEDR1_MCQA = ["problem_id", "original_question", "correct_letter", "correct_answer", "extracted_answer", "is_correct",
              "full_response"]

# front door, tiny architecture, extra flags, file tag, open columns, mcqa columns, summary name
DOORS = {
    "qwen": (cli.qwen_main, "qwen2_5_vl", ["--models", "3B"], "qwen3B", OPEN5, MCQA_NO_FULL, None),
    "llama32v": (cli.llama32v_main, "mllama", [], "llama32_vision_90b", OPEN5, MCQA_NO_GEN, None),
    "medr1": (cli.medr1_main, "qwen2_vl", [], "MedVLM-R1", MEDR1_OPEN, MEDR1_MCQA, None),
    "medgemma": (cli.medgemma_main, "gemma3", [], "medgemma_4b", OPEN5, MCQA_NO_GEN, None),
    "llava15": (cli.llava_mcqa_main, "llava", ["--model_name", "llava_7b"], "llava_7b", OPEN5, MCQA8, "llava_7b"),
    "llavanext": (cli.llava_mcqa_main, "llava_next", ["--model_name", "llavanext_7b"], "llavanext_7b", OPEN5, MCQA8,
                  "llavanext_7b"),
    "onevision": (cli.llava_mcqa_main, "llava_onevision", ["--model_name", "llavaonevision_0.5b"],
                  "llavaonevision_0.5b", OPEN5, MCQA8, "llavaonevision_0.5b"),
    "llavamed": (cli.llavamed_mcqa_main, "llavamed", [], "llavamed", OPEN5, MCQA8, "llavamed"),
}


def model_path(arch: str) -> Path:
    if arch != "llavamed":
        return tiny_models.cached(arch)
    out = tiny_models.cache_root() / "llavamed-hf"
    if not (out / "config.json").exists():
        from smmile.models.hf.convert_llavamed import build

        build(tiny_models.cached("llavamed_original"), out)
    return out


def read_csv(path: Path) -> tuple[list[str], list[dict]]:
    import io

    text = path.read_bytes().decode("utf-8").replace("\r", "")  # a lone CR is not quoted (nor by pandas)
    reader = csv.DictReader(io.StringIO(text, newline=""))
    return list(reader.fieldnames or []), list(reader)


def flags(arch: str, out: Path, *, tokens: int = 4, dataset: Path | None = None) -> list[str]:
    tok_flag = "--max_new_tokens" if arch in ("llava", "llava_next", "llava_onevision", "llavamed") else "--max-new-tokens"
    return ["--model-path", str(model_path(arch)), "--dataset", str(dataset or tiny_models.demo_subset(4)),
            "--output-dir", str(out), tok_flag, str(tokens), "--dtype", "float32", "--allow-cpu"]


@pytest.mark.paper_env
@pytest.mark.parametrize("fmt", ["open", "mcqa"])
@pytest.mark.parametrize("mode", ["0-shot", "ICL"])
@pytest.mark.parametrize("door", list(DOORS))
def test_front_door(door, mode, fmt, tmp_path, capsys):
    main, arch, extra, tag, open_cols, mcqa_cols, summary = DOORS[door]
    tiny_models.skip_unless_served(arch)
    code = main(["--inference_mode", mode, "--task_format", fmt, *extra, *flags(arch, tmp_path)])
    assert code == 0, capsys.readouterr().err
    csv_path = tmp_path / f"result_{tag}_{mode}_{fmt}.csv"
    columns, rows = read_csv(csv_path)
    assert columns == (mcqa_cols if fmt == "mcqa" else open_cols)
    assert len(rows) == 4 and len({r["problem_id"] for r in rows}) == 4
    manifest = json.loads(csv_path.with_name(f"result_{tag}_{mode}_{fmt}.manifest.json").read_text())
    assert manifest["backend"]["attn_implementation"] in ("sdpa", "eager", "flash_attention_2")
    assert manifest["counts"]["failed"] == 0
    assert manifest["backend"]["model_class"].endswith("ForConditionalGeneration")
    image_processor = manifest["backend"]["image_processor"]  # --protocol paper: the paper's PIL processors
    assert image_processor["requested"] == image_processor["backend"] == "pil"
    assert image_processor["class"].endswith("ImageProcessorPil" if transformers_version() >= (5, 0) else "Processor")
    has_summary = (tmp_path / f"accuracy_summary_{summary}_{mode}_mcqa.txt").exists()
    assert has_summary == (summary is not None and fmt == "mcqa")
    if fmt == "mcqa":
        assert "MCQA Accuracy:" in capsys.readouterr().out


@pytest.mark.paper_env
@pytest.mark.parametrize("mode", ["0-shot", "ICL"])
@pytest.mark.parametrize("door,arch,extra,tag", [
    ("llava", "llava", ["--model_name", "llava_13b"], "llava_13b"),
    ("llava", "llava_onevision", ["--model_name", "llavaonevision_7b"], "llavaonevision_7b"),
    ("llavamed", "llavamed", [], "llavamed"),
])
def test_open_only_scripts(door, arch, extra, tag, mode, tmp_path):
    tiny_models.skip_unless_served(arch)
    main = cli.llava_main if door == "llava" else cli.llavamed_main
    args = flags(arch, tmp_path)
    args[args.index("--max_new_tokens")] = "--max-new-tokens"
    assert main(["--inference_mode", mode, *extra, *args]) == 0
    columns, rows = read_csv(tmp_path / f"result_{tag}_{mode}.csv")  # no _open suffix, as the original
    assert columns == OPEN5 and len(rows) == 4
    assert all(r["full_response"].endswith(r["generated_answer"]) for r in rows)  # prompt + new tokens


@pytest.mark.paper_env
def test_qwen_models_all_share_one_stream(tmp_path):
    """--models all runs 3B, 7B, 32B, 72B in order with one random stream (later models see other orders)."""
    tiny_models.skip_unless_served("qwen2_5_vl")
    args = ["--models", "all", "--task_format", "mcqa", *flags("qwen2_5_vl", tmp_path, tokens=1)]
    assert cli.qwen_main(args) == 0
    for size in ("3B", "7B", "32B", "72B"):
        assert (tmp_path / f"result_qwen{size}_ICL_mcqa.csv").exists()


def test_llava_noisy_flag_runs_on_the_variant_into_its_own_folder(tmp_path):
    out = tmp_path / "res"
    args = ["--model_name", "llava_7b", "--noisy", "AddOneExample", *flags("llava", out)]
    args[args.index("--max_new_tokens")] = "--max-new-tokens"
    assert cli.llava_main(args) == 0
    variant_dir = tmp_path / "res_noise-random"
    manifest = json.loads((variant_dir / "result_llava_7b_ICL.manifest.json").read_text())
    assert "noise" in json.dumps(manifest["dataset"])  # ran on the variant, not on the plain dataset
    assert not (out / "result_llava_7b_ICL.csv").exists()  # the original run's file is never overwritten


def test_help_of_every_front_door(capsys):
    for main in (cli.qwen_main, cli.llama32v_main, cli.medr1_main, cli.medgemma_main, cli.llava_main,
                 cli.llava_mcqa_main, cli.llavamed_main, cli.llavamed_mcqa_main):
        with pytest.raises(SystemExit) as exc:
            main(["--help"])
        assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "vLLM" in out and "--batch-size" in out and "--attn-implementation" in out


def test_smmile_run_with_local_flags(tmp_path):
    from smmile.cli.run import main as run_main

    args = ["--model", "llava_7b", "--script", "mcqa", "--task_format", "mcqa", "--batch-size", "2",
            "--model-path", str(model_path("llava")), "--dataset", str(tiny_models.demo_subset(4)),
            "--output-dir", str(tmp_path), "--max-new-tokens", "3", "--dtype", "float32", "--backend", "hf"]
    assert run_main(args) == 0
    manifest = json.loads((tmp_path / "result_llava_7b_ICL_mcqa.manifest.json").read_text())
    assert manifest["settings"]["script"] == "mcqa" and manifest["settings"]["batch_size"] == 2
    assert manifest["backend"]["batch_size"] == 2


def test_processor_fallback_and_pixel_limits(tmp_path):
    """Qwen's processor is built without its torchvision video processor; --max-pixels shrinks the images."""
    from smmile.runner.executor import Journal

    def run_qwen(out, *extra):
        assert cli.qwen_main(["--models", "3B", *flags("qwen2_5_vl", out, tokens=1), *extra]) == 0
        stem = "result_qwen3B_ICL_open"
        manifest = json.loads((out / f"{stem}.manifest.json").read_text())
        records = Journal(out / ".smmile" / f"{stem}.journal.jsonl").records().values()
        return manifest, sum(r["response"]["usage"]["input_tokens"] for r in records)

    manifest, tokens = run_qwen(tmp_path / "a")
    try:
        import torchvision  # noqa: F401
    except ImportError:
        assert manifest["backend"]["processor"] == "Qwen2_5_VLProcessor (image-only, no torchvision)"
    small_manifest, small = run_qwen(tmp_path / "b", "--max-pixels", str(28 * 28 * 4))
    assert small < tokens and small_manifest["generation"]["max_pixels"] == 28 * 28 * 4


@pytest.mark.parametrize("script", ["qwen", "llama32v", "medr1", "medgemma", "llava", "llava_mcqa", "llavamed",
                                    "llavamed_mcqa"])
def test_script_files_run_as_main(script, monkeypatch, capsys):
    import runpy

    path = Path(__file__).resolve().parents[1] / "inference_and_evaluation" / f"inference_{script}.py"
    monkeypatch.setattr("sys.argv", [str(path), "--help"])
    with pytest.raises(SystemExit) as exc:
        runpy.run_path(str(path), run_name="__main__")
    assert exc.value.code == 0 and "--inference_mode" in capsys.readouterr().out


def test_model_revision_recorded_and_part_of_the_resume_key(tmp_path):
    base = ["--models", "3B", "--inference_mode", "0-shot", *flags("qwen2_5_vl", tmp_path, tokens=1)]
    assert cli.qwen_main(base) == 0
    assert cli.qwen_main([*base, "--model-revision", "v1"]) == 0
    manifest = json.loads((tmp_path / "result_qwen3B_0-shot_open.manifest.json").read_text())
    assert manifest["backend"]["model_revision"] == "v1" and "model_commit" in manifest["backend"]
    assert manifest["counts"]["computed_this_run"] == manifest["counts"]["rows"]  # another revision: recomputed


def test_unloadable_checkpoint_is_one_line_exit_2(tmp_path, capsys):
    empty = tmp_path / "not-a-checkpoint"
    empty.mkdir()
    args = ["--models", "3B", *flags("qwen2_5_vl", tmp_path / "out")]
    args[args.index("--model-path") + 1] = str(empty)
    assert cli.qwen_main(args) == 2
    err = capsys.readouterr().err
    assert "cannot load model" in err and str(empty) in err and "Traceback" not in err
    assert not list((tmp_path / "out").glob("*.csv")) if (tmp_path / "out").exists() else True
