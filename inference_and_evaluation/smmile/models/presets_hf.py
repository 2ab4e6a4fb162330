"""Presets of the paper's open-weight models (spec §3.1-§3.8, §8). Imports nothing heavy.

`settings` hold what the original script passed: dtype, attention implementation (flash_attention_2 falls back
to sdpa where flash-attn is unusable), max_new_tokens; the families set the rest of the decoding exactly as the
original (e.g. Qwen: only max_new_tokens, the rest from the checkpoint's generation_config).
"""

from __future__ import annotations

from .registry import Preset, register

HF = "hf.backend:HFBackend"
QWEN_SIZES = ("3B", "7B", "32B", "72B")
LLAVA_MODELS = {
    "llava_7b": "llava-hf/llava-1.5-7b-hf",
    "llava_13b": "llava-hf/llava-1.5-13b-hf",
    "llavanext_7b": "llava-hf/llava-v1.6-mistral-7b-hf",
    "llavaonevision_7b": "llava-hf/llava-onevision-qwen2-7b-ov-hf",
    "llavaonevision_0.5b": "llava-hf/llava-onevision-qwen2-0.5b-ov-hf",
}


def _s(dtype: str, attn: str | None = None, **extra) -> dict:
    out = {"dtype": dtype, "max_new_tokens": 512, "device_map": "auto", **extra}
    if attn:
        out["attn_implementation"] = attn
    return out


register(*(
    Preset(f"qwen{size}", f"qwen{size}", "hf.families:QwenFamily", HF, f"Qwen/Qwen2.5-VL-{size}-Instruct",
           settings=_s("bfloat16", "flash_attention_2"),
           notes="Qwen2.5-VL; decoding beyond max_new_tokens from the checkpoint's generation_config")
    for size in QWEN_SIZES
))
register(
    Preset("llama32_vision_90b", "llama32_vision_90b", "hf.families:Llama32VFamily", HF,
           "meta-llama/Llama-3.2-90B-Vision-Instruct", settings=_s("bfloat16"),
           notes="Mllama; greedy; HF backend only (vLLM support for Mllama is unreliable)"),
    Preset("MedVLM-R1", "MedVLM-R1", "hf.families:MedR1Family", HF, "JZPeterPan/MedVLM-R1",
           settings=_s("bfloat16", "flash_attention_2"), notes="Qwen2-VL based; single user turn, query image only"),
    Preset("medgemma_4b", "medgemma_4b", "hf.families:MedGemmaFamily", HF, "google/medgemma-4b-it",
           settings=_s("bfloat16"), notes="Gemma 3; system prompt; text before image"),
    Preset("llavamed", "llavamed", "hf.llavamed:LlavaMedFamily", HF, "microsoft/llava-med-v1.5-mistral-7b",
           settings=_s("float16", script="open"),
           notes="LLaVA-Med v1.5 on transformers' Llava classes; needs an HF-format checkpoint "
                 "(`smmile convert llava-med SRC DST`)"),
)
register(*(
    Preset(name, name, "hf.families:LlavaFamily", HF, model_id, settings=_s("float16", script="open"))
    for name, model_id in LLAVA_MODELS.items()
))
