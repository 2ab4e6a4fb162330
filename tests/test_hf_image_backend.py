"""--image-backend pil|torchvision|auto (issue #15): what every local family asks transformers for, per protocol and
flag (recorded arguments; torchvision is not installed here), what the manifest records, and what reaches vLLM."""

from __future__ import annotations

import json
import os
import sys

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
pytest.importorskip("transformers")

import tiny_models  # noqa: E402
from smmile.cli import local_models as cli  # noqa: E402
from smmile.generation import GenerationSettings, RunSettings  # noqa: E402
from smmile.runner.run import RunSpec, Runner  # noqa: E402
from test_hf_frontdoors import flags, model_path  # noqa: E402
from test_hf_vllm import FakeVLLM  # noqa: E402

ARCHS = {"qwen2_5_vl": "qwen3B", "qwen2_vl": "MedVLM-R1", "mllama": "llama32_vision_90b", "gemma3": "medgemma_4b",
         "llava": "llava_7b", "llava_next": "llavanext_7b", "llava_onevision": "llavaonevision_0.5b",
         "llavamed": "llavamed"}


@pytest.fixture
def requested(monkeypatch):
    """Every AutoImageProcessor.from_pretrained call's keyword arguments (the real loader still runs)."""
    from transformers import AutoImageProcessor

    calls = []
    real = AutoImageProcessor.from_pretrained.__func__

    def spy(cls, path, *args, **kwargs):
        calls.append(kwargs)
        return real(cls, path, *args, **kwargs)

    monkeypatch.setattr(AutoImageProcessor, "from_pretrained", classmethod(spy))
    return calls


def _backend(arch: str, protocol: str, **settings):
    spec = RunSpec(model=ARCHS[arch], protocol=protocol, model_path=str(model_path(arch)),
                   settings=RunSettings(**settings))
    return Runner(spec).build_backend()


@pytest.mark.parametrize("arch", list(ARCHS))
@pytest.mark.parametrize("protocol,flag,expected", [("paper", None, "pil"), ("corrected", None, "auto"),
                                                    ("paper", "torchvision", "torchvision"),
                                                    ("corrected", "pil", "pil")])
def test_requested_backend_per_protocol_and_flag(arch, protocol, flag, expected, requested):
    from smmile.environment import torchvision_usable
    from smmile.models.hf.compat import image_processor_backend
    from smmile.models.hf.processor import describe_image_processor, load_processor

    backend = _backend(arch, protocol, **({"image_backend": flag} if flag else {}))
    assert backend.image_backend() == expected
    proc = load_processor(backend.path, image_backend=backend.image_backend())
    keys = ("backend", "use_fast")  # transformers 5 / 4.x (the paper locks)
    asked = [{k: c[k] for k in keys if k in c} for c in requested if any(k in c for k in keys)]
    if expected == "auto":
        assert asked == []  # transformers' own choice: AutoProcessor as is
    else:
        assert asked == [image_processor_backend(expected)]
        import transformers

        got = describe_image_processor(proc.image_processor, expected)["backend"]
        name = type(proc.image_processor).__name__
        has_fast = (name.endswith("Fast") or hasattr(transformers, f"{name}Fast")
                    or (name.endswith("Pil") and hasattr(transformers, name[:-3])))
        # without torchvision (or a torchvision class: 4.51's Mllama) PIL is all there is
        assert got == (expected if torchvision_usable() and has_fast else "pil")


def test_front_door_flag_and_manifest(tmp_path, capsys):
    args = ["--model_name", "llava_7b", "--inference_mode", "0-shot", "--image-backend", "torchvision",
            *flags("llava", tmp_path)]
    assert cli.llava_main(args) == 0
    manifest = json.loads((tmp_path / "result_llava_7b_0-shot.manifest.json").read_text())
    info = manifest["backend"]["image_processor"]
    assert info["requested"] == "torchvision" and manifest["settings"]["image_backend"] == "torchvision"
    err = capsys.readouterr().err
    assert f"image processor: {info['class']} (backend {info['backend']}, requested torchvision)" in err
    if info["backend"] != "torchvision":  # no torchvision here: the run says it got something else
        assert "warning: the torchvision image processor backend was requested" in err


def test_a_missing_pil_class_is_said(capsys):
    from smmile.models.hf.backend import report_image_processor

    report_image_processor({"class": "FancyImageProcessor", "backend": "torchvision", "requested": "pil"})
    err = capsys.readouterr().err
    assert "image processor: FancyImageProcessor (backend torchvision, requested pil)" in err
    assert "warning: the pil image processor backend was requested, but transformers offers only" in err
    report_image_processor({"class": "CLIPImageProcessorPil", "backend": "pil", "requested": "pil"})
    assert "warning" not in capsys.readouterr().err


def test_smmile_run_has_the_flag():
    import argparse

    p = argparse.ArgumentParser()
    cli.add_local_model_flags(p)
    assert RunSettings.from_flags(p.parse_args(["--image-backend", "pil"])).image_backend == "pil"


@pytest.mark.parametrize("arch,preset,pinned", [("llava", "llava_7b", True), ("gemma3", "medgemma_4b", True),
                                                ("llava_onevision", "llavaonevision_0.5b", False),
                                                ("qwen2_5_vl", "qwen3B", False)])
def test_vllm_gets_the_backend_where_it_can(arch, preset, pinned, monkeypatch, tmp_path, capsys):
    fake = FakeVLLM()
    monkeypatch.setitem(sys.modules, "vllm", fake)
    spec = RunSpec(model=preset, mode="0-shot", dataset=str(tiny_models.demo_subset(4)), output_dir=tmp_path,
                   model_path=str(model_path(arch)), backend="vllm_backend:VLLMBackend", quiet=True,
                   settings=RunSettings(dtype="float32"), generation=GenerationSettings(max_new_tokens=2))
    from smmile.runner.run import run

    run(spec)
    engine = fake.engines[0]
    manifest = json.loads(next(tmp_path.glob("*.manifest.json")).read_text())
    from smmile.models.hf.compat import mm_processor_backend_passes_through

    if pinned and mm_processor_backend_passes_through():  # transformers 5 (4.x would hand use_fast to the tokenizer)
        assert engine["mm_processor_kwargs"] == {"backend": "pil"}
        assert manifest["backend"]["image_processor"]["mm_processor_kwargs"] == {"backend": "pil"}
    else:
        assert "mm_processor_kwargs" not in engine
        assert "cannot be passed to vLLM" in capsys.readouterr().err
        assert manifest["backend"]["image_processor"]["note"].startswith("not pinned")
    requests, _ = fake.calls[0]
    assert not any(r["prompt"].startswith("<bos>") for r in requests)  # vLLM adds BOS itself: no second one
