"""vLLM backend request construction on CPU, with a stand-in `vllm` module (the real one needs CUDA)."""

from __future__ import annotations

import json
import sys
import types

import numpy as np
import pytest

pytest.importorskip("transformers")

import tiny_models  # noqa: E402
from smmile.cli import local_models as cli  # noqa: E402
from smmile.models.vllm_backend import sampling_settings  # noqa: E402
from test_hf_frontdoors import flags, read_csv  # noqa: E402


class FakeVLLM(types.ModuleType):
    """A stand-in `vllm` module. `LLM(**engine)` records the engine (refused above `max_images` images per prompt);
    `LLM.generate` answers every prompt " <answer>A</answer>"; `LLM.chat` too, with first-token log-probabilities
    that depend on the images the stand-in model uses (all of them, or the first `keeps`)."""

    def __init__(self, keeps: int | None = None, max_images: int | None = None):
        super().__init__("vllm")
        self.engines, self.calls = [], []
        fake = self

        class SamplingParams:
            def __init__(self, **kw):
                self.kw = kw

        class LLM:
            def __init__(self, **kw):
                fake.engines.append(kw)
                if max_images and kw["limit_mm_per_prompt"]["image"] > max_images:
                    raise ValueError(f"this model only supports at most {max_images} image items")

            def generate(self, requests, params):
                fake.calls.append((requests, params.kw))
                out = types.SimpleNamespace
                return [out(prompt_token_ids=[1, 2], outputs=[out(text=" <answer>A</answer>", token_ids=[3])])
                        for _ in requests]

            def chat(self, messages, params, chat_template=None, add_generation_prompt=False, use_tqdm=True):
                fake.calls.append({"messages": messages, "params": params.kw, "chat_template": chat_template,
                                   "add_generation_prompt": add_generation_prompt})
                return [fake.output(conv) for conv in messages]

        self.LLM, self.SamplingParams, self.keeps = LLM, SamplingParams, keeps

    def output(self, conv):
        images = [p["image_pil"] for m in conv for p in m["content"] if p["type"] == "image_pil"]
        used = images[: self.keeps] if self.keeps else images
        logprobs = {k: types.SimpleNamespace(logprob=-float(np.asarray(img).mean()) / 255) for k, img in enumerate(used)}
        gen = types.SimpleNamespace(text=" <answer>A</answer>", token_ids=[5, 6], logprobs=[logprobs])
        return types.SimpleNamespace(prompt_token_ids=[1, 2, 3], outputs=[gen])

    def generation_calls(self) -> list[dict]:
        """The `LLM.chat` calls that generate answers (not the probe's one-token calls)."""
        return [c for c in self.calls if "logprobs" not in c["params"]]


@pytest.fixture
def fake_vllm(monkeypatch):
    mod = FakeVLLM()
    monkeypatch.setitem(sys.modules, "vllm", mod)
    return mod


def test_one_call_same_prompts_explicit_sampling(fake_vllm, tmp_path):
    from smmile.models.hf.encode import render_prompt
    from smmile.models.hf.processor import load_processor
    from smmile.runner.run import Runner

    args = ["--model_name", "llava_7b", "--task_format", "mcqa", "--backend", "vllm", "--tensor-parallel-size", "2",
            *flags("llava", tmp_path)]
    assert cli.llava_mcqa_main(args) == 0
    assert len(fake_vllm.calls) == 1  # every prompt of the run in one generate call
    requests, params = fake_vllm.calls[0]
    assert len(requests) == 4
    assert params == {"max_tokens": 4, "n": 1, "temperature": 0.0}
    engine = fake_vllm.engines[0]
    assert engine["tensor_parallel_size"] == 2 and engine["dtype"] == "float32"
    assert engine["limit_mm_per_prompt"] == {"image": max(len(r["multi_modal_data"]["image"]) for r in requests)}
    assert engine["limit_mm_per_prompt"]["image"] == 11  # the demo's 10-example problem
    # the same rendered prompts as the HF backend
    runner = Runner(cli.spec_for(cli._llava_parser("x", mcqa_script=True, llava=True).parse_args(args), "llava_7b",
                                 "mcqa", dataset=str(tiny_models.demo_subset(4)), script="mcqa"))
    from smmile.data.load import load_for_run

    items = runner.plan(load_for_run(str(tiny_models.demo_subset(4))))
    proc = load_processor(str(tiny_models.cached("llava")))
    assert [r["prompt"] for r in requests] == [render_prompt(proc, runner.family.request(it)) for it in items]
    _, rows = read_csv(tmp_path / "result_llava_7b_ICL_mcqa.csv")
    assert {r["selected_option"] for r in rows} == {"A"}
    manifest = json.loads((tmp_path / "result_llava_7b_ICL_mcqa.manifest.json").read_text())
    assert manifest["model"]["backend"] == "vllm_backend:VLLMBackend"


def test_llavamed_requests_are_padded_squares(fake_vllm, tmp_path):
    from test_hf_frontdoors import model_path

    args = ["--inference_mode", "ICL", "--backend", "vllm", *flags("llavamed", tmp_path)]
    args[args.index("--model-path") + 1] = str(model_path("llavamed"))
    assert cli.llavamed_mcqa_main(args) == 0
    requests, _ = fake_vllm.calls[0]
    assert all(r["prompt"].startswith("[INST] <image>\n") for r in requests)
    assert all(img.width == img.height for r in requests for img in r["multi_modal_data"]["image"])


def test_llama32v_has_no_vllm_backend(capsys):
    with pytest.raises(SystemExit):
        cli.llama32v_main(["--backend", "vllm"])
    assert "unrecognized arguments: --backend" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.llama32v_main(["--help"])
    assert "vLLM" in capsys.readouterr().out


def test_missing_vllm_is_a_one_line_error(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "vllm", None)
    code = cli.medgemma_main(["--backend", "vllm", *flags("gemma3", tmp_path)])
    assert code == 2 and "pip install" in capsys.readouterr().err


def test_sampling_settings_follow_hf_defaults():
    qwen_cfg = {"do_sample": True, "top_k": 1, "top_p": 0.001, "temperature": 0.1, "repetition_penalty": 1.05}
    assert sampling_settings({"max_new_tokens": 512}, qwen_cfg) == {
        "max_tokens": 512, "n": 1, "repetition_penalty": 1.05, "temperature": 0.1, "top_p": 0.001, "top_k": 1}
    assert sampling_settings({"max_new_tokens": 512, "do_sample": False}, qwen_cfg) == {
        "max_tokens": 512, "n": 1, "repetition_penalty": 1.05, "temperature": 0.0}
    assert sampling_settings({"max_new_tokens": 8, "do_sample": False, "temperature": 1}, {}) == {
        "max_tokens": 8, "n": 1, "temperature": 0.0}
