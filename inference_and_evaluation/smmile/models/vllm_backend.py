"""vLLM backend (`--backend vllm`; `pip install -r requirements-vllm.txt` in its own environment).

Every prompt of a run goes into ONE `LLM.generate` call, with the HF backend's prompts and images. Sampling equals
what the original ran with on transformers: the checkpoint's generation_config under the script's generate()
arguments, greedy as temperature 0 (repetition_penalty kept: HF applies it to greedy decoding too).
Llama-3.2-Vision is not offered: vLLM's Mllama support has been broken or removed across versions.
"""

from __future__ import annotations

import contextlib
import json
import time
from pathlib import Path
from typing import Any

from ..errors import MissingDependency, UserError
from .base import Backend, Response
from .hf.preflight import check_model_path, hub_down, not_cached_message
from .hf.request import HFRequest

GENCONFIG_KEYS = ("do_sample", "temperature", "top_k", "top_p", "repetition_penalty")
NOT_ON_VLLM = ("hf.families:Llama32VFamily",)


def sampling_settings(gen: dict, generation_config: dict) -> dict:
    """SamplingParams keyword arguments equal to HF generate(**gen) on a checkpoint with `generation_config`."""
    merged = {k: generation_config[k] for k in GENCONFIG_KEYS if generation_config.get(k) is not None}
    merged.update({k: v for k, v in gen.items() if k in GENCONFIG_KEYS})
    out: dict[str, Any] = {"max_tokens": int(gen["max_new_tokens"]), "n": int(gen.get("num_return_sequences", 1))}
    if merged.get("repetition_penalty") is not None:
        out["repetition_penalty"] = float(merged["repetition_penalty"])
    if not merged.get("do_sample", False):
        out["temperature"] = 0.0
        return out
    out["temperature"] = float(merged.get("temperature", 1.0))
    out["top_p"] = float(merged.get("top_p", 1.0))
    top_k = merged.get("top_k", 50)  # HF's default top_k applies when sampling
    out["top_k"] = int(top_k) if top_k else -1
    return out


def without_leading_bos(prompt: str, tokenizer) -> str:
    """vLLM tokenizes a text prompt with the tokenizer's special tokens; a template that already starts with BOS
    would get a second one. The HF path gives these families one (MedGemma's apply_chat_template drops the second;
    Llama-3.2, the one family whose original doubled it, is not offered on vLLM)."""
    bos = getattr(tokenizer, "bos_token", None)
    if bos and prompt.startswith(bos) and tokenizer("x").input_ids[:1] == [tokenizer.bos_token_id]:
        return prompt[len(bos):]
    return prompt


def read_generation_config(path: str) -> dict:
    local = Path(path) / "generation_config.json"
    if local.is_file():
        return json.loads(local.read_text())
    try:
        from transformers import GenerationConfig

        return GenerationConfig.from_pretrained(path).to_dict()
    except Exception:
        return {}


class VLLMBackend(Backend):
    name = "vllm"

    def __init__(self, preset=None, spec=None, settings=None, generation=None):
        super().__init__(preset, spec, settings, generation)
        if preset is not None and preset.family in NOT_ON_VLLM:
            raise UserError(f"{preset.name} runs on transformers only (vLLM's Mllama support is unreliable)")
        check_model_path(spec.model_path if spec else None)
        self.path = str((spec.model_path if spec else None) or preset.model_id)
        self.tp = int(self.settings.tensor_parallel_size or 1)
        self.llm = None
        self.calls: list[dict] = []  # what was sent: engine arguments, sampling parameters, prompt count
        self.info = {"backend": self.name, "model_path": self.path, "tensor_parallel_size": self.tp,
                     "dtype": self.settings.dtype, "calls": self.calls}

    def _vllm(self):
        try:
            import vllm
        except ImportError:
            raise MissingDependency("vllm", why="--backend vllm (pip install -r requirements-vllm.txt)") from None
        return vllm

    def build_requests(self, work: list[tuple[Any, HFRequest]], processor) -> list[dict]:
        from .hf.encode import render_prompt
        from .hf.llavamed import llavamed_images

        out = []
        for _, req in work:
            if req.render == "llavamed":
                images, prompt = llavamed_images(req, processor.image_processor.image_mean), req.prompt
            else:
                images, prompt = req.load_images(), render_prompt(processor, req)
            entry: dict[str, Any] = {"prompt": without_leading_bos(prompt, processor.tokenizer)}
            if images:
                entry["multi_modal_data"] = {"image": images}
            out.append(entry)
        return out

    def image_backend_kwargs(self, processor) -> dict:
        """vLLM builds its own processor with `AutoProcessor.from_pretrained(model, **mm_processor_kwargs)`; the
        image backend can be pinned there only for processors without a video processor (transformers 5 hands the
        same `backend` to the video processor, which has no PIL version: Qwen2-VL, Qwen2.5-VL, LLaVA-OneVision)."""
        from .hf.backend import say
        from .hf.compat import mm_processor_backend_passes_through
        from .hf.processor import requested_image_backend

        requested = requested_image_backend(self.settings.image_backend, getattr(self.spec, "protocol", "paper"))
        kwargs, note = {}, "vLLM's default (torchvision where installed)"
        if requested != "auto":
            if hasattr(processor, "video_processor") or not mm_processor_backend_passes_through():
                note = ("not pinned: vLLM would pass the backend to the video processor too (or, with transformers "
                        "4, use_fast to the tokenizer); vLLM's default is used (torchvision where installed)")
                say(f"warning: --image-backend {requested} cannot be passed to vLLM for {type(processor).__name__}; "
                    "pixel values may differ from the paper's (use --backend hf to pin it)")
            else:
                kwargs, note = {"backend": requested}, "passed to vLLM as mm_processor_kwargs"
        self.info["image_processor"] = {"requested": requested, "mm_processor_kwargs": kwargs, "note": note}
        return {"mm_processor_kwargs": kwargs} if kwargs else {}

    def engine_kwargs(self, max_images: int) -> dict:
        kwargs = {"model": self.path, "tensor_parallel_size": self.tp,
                  "limit_mm_per_prompt": {"image": max(1, max_images)},
                  "dtype": self.settings.dtype or "auto", "seed": 42}
        for key in ("max_model_len", "gpu_memory_utilization", "enforce_eager"):
            if getattr(self.settings, key) is not None:
                kwargs[key] = getattr(self.settings, key)
        if self.settings.cache_dir:
            kwargs["download_dir"] = self.settings.cache_dir
        return kwargs

    def _engine(self, vllm, engine: dict):
        """vLLM's engine; with the hub unreachable a hub id comes from the local cache only (or one line)."""
        from .. import hub

        down = hub_down(self.path)
        try:
            with hub.offline_mode() if down else contextlib.nullcontext():
                return vllm.LLM(**engine)
        except OSError:
            if down:
                raise UserError(not_cached_message(self.path, down, self.spec)) from None
            raise

    def load_processor(self):
        from .hf.processor import load_processor

        return load_processor(self.path, min_pixels=self.generation.min_pixels, max_pixels=self.generation.max_pixels)

    def sampling(self, gen: dict) -> dict:
        """SamplingParams arguments: the family's generate() arguments over the checkpoint's generation config, plus
        the run's seed and stop strings."""
        params = sampling_settings(gen, read_generation_config(self.path))
        if self.generation.seed is not None:
            params["seed"] = self.generation.seed
        if self.generation.stop:
            params["stop"] = list(self.generation.stop)
        return params

    def generate(self, work: list[tuple[Any, HFRequest]], on_done) -> None:
        if not work:
            return
        vllm = self._vllm()
        processor = self.load_processor()
        requests = self.build_requests(work, processor)
        params = self.sampling(work[0][1].gen)
        engine = {**self.engine_kwargs(max(len(r.images) for _, r in work)), **self.image_backend_kwargs(processor)}
        self.calls.append({"engine": {k: v for k, v in engine.items() if k != "model"}, "sampling": params,
                           "prompts": len(requests)})
        t0 = time.time()
        self.llm = self.llm or self._engine(vllm, engine)
        self.deliver(work, on_done, t0, lambda: self.llm.generate(requests, vllm.SamplingParams(**params)),
                     lambda ids: processor.tokenizer.decode(ids, skip_special_tokens=True))

    def deliver(self, work, on_done, t0: float, call, full_text=None, extra: dict | None = None) -> None:
        """Hand each output of `call()` (one engine call for the whole run) to `on_done`; if the call fails, every
        problem fails with its error."""
        try:
            outputs = call()
        except Exception as exc:  # noqa: BLE001 - every problem of the call failed
            for item, req in work:
                on_done(item, Response(error=req.errors["other"].format(e=exc)))
            return
        seconds = (time.time() - t0) / len(work)
        for (item, _), out in zip(work, outputs):
            gen = out.outputs[0]
            prompt = list(out.prompt_token_ids or [])
            on_done(item, Response(text=gen.text, full_text=full_text(prompt + list(gen.token_ids)) if full_text
                                   else None, seconds=seconds, extra=dict(extra or {}),
                                   usage={"input_tokens": len(prompt), "output_tokens": len(gen.token_ids)}))
