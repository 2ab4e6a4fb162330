"""Presets of the paper's open-weight models (spec §3.1-§3.8, §8). Imports nothing heavy.

`settings` hold how the original script loaded its model (dtype, attention; flash_attention_2 falls back to sdpa
where unusable); the families set the decoding as the original did (`Family.GENERATION`).
"""

from __future__ import annotations

from pathlib import Path

from ..errors import UserError
from ..generation import RunSettings
from ..identity import checkpoint_identity, identity_for_model_id
from .preset import Lazy, Preset

HF = Lazy("smmile.models.hf.backend", "HFBackend")
BACKENDS = {"hf": HF, "vllm": Lazy("smmile.models.vllm_backend", "VLLMBackend")}  # `--backend hf|vllm`
# `--model hf:<hub id or local path>` / `vllm:<...>`: any checkpoint, with the backend its prefix names
PREFIXES = {"hf:": Lazy("smmile.models.hf.generic_backend", "GenericHFBackend"),
            "vllm:": Lazy("smmile.models.vllm_chat", "VLLMChatBackend")}
QWEN_SIZES = ("3B", "7B", "32B", "72B")
LLAVA_MODELS = {
    "llava_7b": "llava-hf/llava-1.5-7b-hf",
    "llava_13b": "llava-hf/llava-1.5-13b-hf",
    "llavanext_7b": "llava-hf/llava-v1.6-mistral-7b-hf",
    "llavaonevision_7b": "llava-hf/llava-onevision-qwen2-7b-ov-hf",
    "llavaonevision_0.5b": "llava-hf/llava-onevision-qwen2-0.5b-ov-hf",
}


def _s(dtype: str, attn: str | None = None, script: str | None = None) -> RunSettings:
    return RunSettings(dtype=dtype, device_map="auto", attn_implementation=attn, script=script)


PRESETS = (
    *(Preset(f"qwen{size}", f"qwen{size}", Lazy("smmile.models.hf.families", "QwenFamily"), HF,
             f"Qwen/Qwen2.5-VL-{size}-Instruct", settings=_s("bfloat16", "flash_attention_2"),
             notes="Qwen2.5-VL; decoding beyond max_new_tokens from the checkpoint's generation_config")
      for size in QWEN_SIZES),
    Preset("llama32_vision_90b", "llama32_vision_90b", Lazy("smmile.models.hf.families", "Llama32VFamily"), HF,
           "meta-llama/Llama-3.2-90B-Vision-Instruct", settings=_s("bfloat16"),
           notes="Mllama; greedy; HF backend only (vLLM support for Mllama is unreliable)"),
    Preset("MedVLM-R1", "MedVLM-R1", Lazy("smmile.models.hf.families", "MedR1Family"), HF,
           "JZPeterPan/MedVLM-R1", settings=_s("bfloat16", "flash_attention_2"),
           notes="Qwen2-VL based; single user turn, query image only"),
    Preset("medgemma_4b", "medgemma_4b", Lazy("smmile.models.hf.families", "MedGemmaFamily"), HF,
           "google/medgemma-4b-it", settings=_s("bfloat16"), notes="Gemma 3; system prompt; text before image"),
    Preset("llavamed", "llavamed", Lazy("smmile.models.hf.llavamed", "LlavaMedFamily"), HF,
           "microsoft/llava-med-v1.5-mistral-7b", settings=_s("float16", script="open"),
           notes="LLaVA-Med v1.5 on transformers' Llava classes; needs an HF-format checkpoint "
                 "(`smmile convert llava-med SRC DST`)"),
    *(Preset(name, name, Lazy("smmile.models.hf.families", "LlavaFamily"), HF, model_id,
             settings=_s("float16", script="open"))
      for name, model_id in LLAVA_MODELS.items()),
)


def preset_for(name: str) -> Preset:
    """The preset of `hf:<id>` / `vllm:<id>` (made by `registry.get` on first use; family: `hf.generic`)."""
    prefix = next((p for p in PREFIXES if name.startswith(p)), None)
    model_id = name[len(prefix):].strip() if prefix else ""
    if not model_id:
        raise UserError(f"--model {name!r}: expected hf:<hub id or local path> or vllm:<hub id or local path>")
    local = Path(model_id).expanduser().is_dir()  # a folder: its name and a short hash of where it is
    identity = checkpoint_identity(model_id) if local else identity_for_model_id(model_id)
    return Preset(name, identity.key, Lazy("smmile.models.hf.generic", "GenericFamily"), PREFIXES[prefix],
                  model_id, settings=RunSettings(dtype="auto", device_map="auto"), identity=identity,
                  notes="any checkpoint through its own chat template; served-model prompt (system prompt, "
                        "Template A + E2), greedy, max 512 new tokens; layout from the capability probe")
