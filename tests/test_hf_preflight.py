"""Fail fast, say why (issue #10, local models): a wrong --model-path, a missing torch/transformers, a CUDA-only
script on a machine without CUDA, and an unreachable hub are one line on stderr and exit 2, within seconds."""

from __future__ import annotations

import importlib.util
import time

import pytest

pytest.importorskip("transformers")

import tiny_models  # noqa: E402
from smmile import hub  # noqa: E402
from smmile.cli import local_models as cli  # noqa: E402
from test_hf_frontdoors import flags  # noqa: E402

CUDA_DOORS = {"inference_qwen.py": (cli.qwen_main, ["--models", "3B"], "qwen2_5_vl"),
              "inference_llama32v.py": (cli.llama32v_main, [], "mllama"),
              "inference_medr1.py": (cli.medr1_main, [], "qwen2_vl"),
              "inference_llavamed.py": (cli.llavamed_main, [], "llavamed"),
              "inference_llavamed_mcqa.py": (cli.llavamed_mcqa_main, [], "llavamed")}
OTHER_DOORS = {"inference_medgemma.py": (cli.medgemma_main, [], "gemma3"),
               "inference_llava.py": (cli.llava_main, ["--model_name", "llava_7b"], "llava"),
               "inference_llava_mcqa.py": (cli.llava_mcqa_main, ["--model_name", "llava_7b"], "llava")}


def one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    return err


def _args(arch: str, tmp_path, *, allow_cpu: bool = True, model_path: str | None = None) -> list[str]:
    args = flags(arch, tmp_path / "out")
    if not allow_cpu:
        args.remove("--allow-cpu")
    if model_path is not None:
        args[args.index("--model-path") + 1] = model_path
    if arch in ("llava", "llavamed"):
        args = [("--max-new-tokens" if a == "--max_new_tokens" else a) for a in args]
    return args


@pytest.mark.parametrize("script", list(CUDA_DOORS) + list(OTHER_DOORS))
def test_nonexistent_model_path_is_one_line(script, tmp_path, capsys):
    main, extra, arch = {**CUDA_DOORS, **OTHER_DOORS}[script]
    missing = str(tmp_path / "no-such-checkpoint")
    t0 = time.time()
    assert main([*extra, *_args(arch, tmp_path, model_path=missing)]) == 2
    assert one_line_error(capsys) == f"error: --model-path {missing}: no such folder"
    assert time.time() - t0 < 10 and not (tmp_path / "out").exists()


@pytest.mark.skipif(importlib.util.find_spec("torch") is not None and __import__("torch").cuda.is_available(),
                    reason="a CUDA device is present")
@pytest.mark.parametrize("script", list(CUDA_DOORS))
def test_scripts_that_needed_cuda_say_so_at_once(script, tmp_path, capsys):
    main, extra, arch = CUDA_DOORS[script]
    assert main([*extra, *_args(arch, tmp_path, allow_cpu=False)]) == 2
    err = one_line_error(capsys)
    assert f"{script} needs a CUDA GPU" in err and "--allow-cpu" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("script", list(OTHER_DOORS))
def test_other_scripts_do_not_ask_for_cuda(script, tmp_path, capsys):
    main, extra, arch = OTHER_DOORS[script]
    missing = str(tmp_path / "nothing")  # stops at the next check, after the CUDA one would have fired
    assert main([*extra, *_args(arch, tmp_path, allow_cpu=False, model_path=missing)]) == 2
    assert "no such folder" in one_line_error(capsys)


@pytest.mark.parametrize("package", ["torch", "transformers"])
def test_missing_library_names_the_extra(package, tmp_path, capsys, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == package else real(name, *a))
    assert cli.llava_main(["--model_name", "llava_7b", *_args("llava", tmp_path)]) == 2
    err = one_line_error(capsys)
    assert f"the package '{package}' is required" in err and "pip install -e '.[hf]'" in err


def test_model_path_that_is_a_file(tmp_path, capsys):
    f = tmp_path / "model.safetensors"
    f.write_bytes(b"")
    assert cli.medgemma_main(_args("gemma3", tmp_path, model_path=str(f))) == 2
    assert "not a folder" in one_line_error(capsys)


@pytest.mark.parametrize("offline", [True, False])
def test_hub_id_without_the_hub_fails_in_seconds(offline, tmp_path, capsys, monkeypatch):
    """A preset's hub id, no --model-path: offline mode on, or the hub unreachable (a closed local port)."""
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.delenv(var, raising=False)
    if offline:
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    else:
        monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))  # an empty cache
    hub.unreachable.cache_clear()
    monkeypatch.setattr(hub, "unreachable", hub.unreachable.__wrapped__)
    args = ["--model_name", "llava_7b", "--inference_mode", "0-shot", "--dataset", str(tiny_models.demo_subset(4)),
            "--output-dir", str(tmp_path / "out"), "--allow-cpu"]
    t0 = time.time()
    assert cli.llava_main(args) == 2
    err = capsys.readouterr().err
    line = [x for x in err.splitlines() if x.startswith("error:")]
    assert len(line) == 1 and "Traceback" not in err
    assert "llava-hf/llava-1.5-7b-hf" in line[0] and "--model-path" in line[0]
    assert ("offline mode (HF_HUB_OFFLINE) is on" if offline else "cannot reach 127.0.0.1:9") in line[0]
    assert time.time() - t0 < 30


def test_unreachable_hub_uses_the_cache(tmp_path, capsys, monkeypatch):
    """A preset's hub id that is in the cache runs with the hub unreachable: offline, no retries."""
    import shutil

    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.setattr(hub, "unreachable", hub.unreachable.__wrapped__)
    cache = tmp_path / "cache"
    repo = cache / "models--llava-hf--llava-1.5-7b-hf"
    shutil.copytree(tiny_models.cached("llava"), repo / "snapshots" / "0123abcd")
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("0123abcd")
    args = ["--model_name", "llava_7b", "--inference_mode", "0-shot", "--dataset", str(tiny_models.demo_subset(4)),
            "--output-dir", str(tmp_path / "out"), "--allow-cpu", "--hf_cache_dir", str(cache),
            "--max-new-tokens", "2", "--dtype", "float32"]
    t0 = time.time()
    assert cli.llava_main(args) == 0, capsys.readouterr().err
    assert "hub is unreachable (cannot reach 127.0.0.1:9" in capsys.readouterr().err
    assert (tmp_path / "out" / "result_llava_7b_0-shot.csv").exists() and time.time() - t0 < 30


def test_an_uncached_hf_id_offline_points_to_a_local_folder_not_model_path(tmp_path, capsys, monkeypatch):
    """`--model hf:ID` offline: the advice is `--model hf:/folder` (a preset's --model-path does not apply)."""
    from smmile.cli import main as smmile

    for var in ("TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))  # an empty cache
    hub.unreachable.cache_clear()
    monkeypatch.setattr(hub, "unreachable", hub.unreachable.__wrapped__)
    code = smmile(["run", "--model", "hf:someone/not-cached-vlm", "--inference_mode", "0-shot", "--dataset",
                   str(tiny_models.demo_subset(4)), "--output-dir", str(tmp_path / "out")])
    err = capsys.readouterr().err
    line = [x for x in err.splitlines() if x.startswith("error:")]
    assert code == 2 and len(line) == 1 and "Traceback" not in err, err
    assert "someone/not-cached-vlm" in line[0] and "--model hf:/path/to/folder" in line[0]
    assert "--model-path" not in line[0]
