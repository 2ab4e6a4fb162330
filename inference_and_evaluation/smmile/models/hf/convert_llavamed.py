"""`smmile convert llava-med SRC DST`: LLaVA-Med v1.5 (original LLaVA layout) -> transformers Llava checkpoint.

`LlavaMistralForCausalLM` weights (Mistral under `model.*`, projector `model.mm_projector.{0,2}`, CLIP tower named by
`mm_vision_tower`) -> `LlavaForConditionalGeneration` + LlavaProcessor; `<image>` and `<pad>` are added to the
tokenizer (embedding rows = the mean of the others). Image placement and padding stay the llavamed family's.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from ...errors import UserError
from ...identity import checkpoint_origin, weight_hashes
from ..registry import get as preset
from .compat import llava_weight_name

log = logging.getLogger(__name__)
HUB_ID = preset("llavamed").model_id  # the paper's checkpoint, which the converted folder is named after

MM_KEYS = ("mm_", "image_aspect_ratio", "tune_mm", "freeze_mm", "unfreeze_mm", "use_mm_proj", "image_grid",
           "tokenizer_model_max_length", "tokenizer_padding_side")


def read_state(src: Path) -> dict:
    import torch

    files = sorted(src.glob("*.safetensors"))
    state = {}
    if files:
        from safetensors.torch import load_file

        for f in files:
            state.update(load_file(str(f)))
    else:
        for f in sorted(src.glob("pytorch_model*.bin")):
            state.update(torch.load(f, map_location="cpu", weights_only=True))
    if not state:
        raise UserError(f"{src}: no *.safetensors or pytorch_model*.bin weights found")
    return state


def map_key(key: str) -> str | None:
    """Original key -> LlavaForConditionalGeneration key (None: belongs to the separate vision tower)."""
    if key.startswith("model.mm_projector."):
        idx, rest = key[len("model.mm_projector."):].split(".", 1)
        return f"model.multi_modal_projector.linear_{1 if idx == '0' else 2}.{rest}"
    if key.startswith("model.vision_tower.vision_tower.vision_model."):
        return "model.vision_tower." + key[len("model.vision_tower.vision_tower.vision_model."):]
    if key.startswith("model."):
        return "model.language_model." + key[len("model."):]
    if key.startswith("lm_head."):
        return key
    raise UserError(f"unexpected weight {key!r} in a LLaVA-Med checkpoint")


def text_config(cfg: dict):
    from transformers import MistralConfig

    keep = {k: v for k, v in cfg.items() if not k.startswith(MM_KEYS) and k not in ("architectures", "model_type",
                                                                                   "auto_map", "transformers_version")}
    return MistralConfig(**keep)


def load_tower(cfg: dict, override: str | None):
    from transformers import CLIPImageProcessor, CLIPVisionModel

    name = override or cfg.get("mm_vision_tower")
    if not name:
        raise UserError("the source config names no mm_vision_tower; pass --vision-tower")
    tower = CLIPVisionModel.from_pretrained(name)
    try:
        improc = CLIPImageProcessor.from_pretrained(name)
    except OSError:
        size = tower.config.image_size
        improc = CLIPImageProcessor(size={"shortest_edge": size}, crop_size={"height": size, "width": size})
    return tower, improc


def build(src: Path, dst: Path, vision_tower: str | None = None) -> Path:
    """Convert the checkpoint folder `src` into `dst`; `vision_tower` overrides the config's mm_vision_tower."""
    if not (src / "config.json").is_file():
        raise UserError(f"{src}: not a checkpoint folder (no config.json)")
    import torch
    from transformers import AutoTokenizer, LlavaConfig, LlavaForConditionalGeneration, LlavaProcessor

    cfg = json.loads((src / "config.json").read_text())
    tok = AutoTokenizer.from_pretrained(src)
    tok.add_special_tokens({"pad_token": tok.pad_token or "<pad>"})
    tok.add_tokens(["<image>"], special_tokens=True)
    tower, improc = load_tower(cfg, vision_tower)
    vc = tower.config
    tc = text_config(cfg)
    old_vocab = tc.vocab_size
    tc.vocab_size = len(tok)
    tc.pad_token_id = tok.pad_token_id
    config = LlavaConfig(vision_config=vc.to_dict(), text_config=tc.to_dict(),
                         image_token_index=tok.convert_tokens_to_ids("<image>"), projector_hidden_act="gelu",
                         vision_feature_layer=cfg.get("mm_vision_select_layer", -2),
                         vision_feature_select_strategy="default" if cfg.get("mm_vision_select_feature", "patch")
                         == "patch" else "full", image_seq_length=(vc.image_size // vc.patch_size) ** 2)
    state = {map_key(k): v for k, v in read_state(src).items()}
    if not any(k.startswith("model.vision_tower.") for k in state):
        state.update({"model.vision_tower." + k.removeprefix("vision_model."): v
                      for k, v in tower.state_dict().items()})
    for key in ("model.language_model.embed_tokens.weight", "lm_head.weight"):
        w = state[key]
        extra = w.mean(dim=0, keepdim=True).expand(len(tok) - old_vocab, -1)
        state[key] = torch.cat([w, extra.to(w.dtype)], dim=0)
    dtype = state["lm_head.weight"].dtype
    with torch.device("meta"):
        model = LlavaForConditionalGeneration(config)
    model.load_state_dict({llava_weight_name(k): v for k, v in state.items()}, strict=True, assign=True)
    model.to(dtype)
    dst.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(dst)
    LlavaProcessor(image_processor=improc, tokenizer=tok, patch_size=vc.patch_size,
                   vision_feature_select_strategy=config.vision_feature_select_strategy,
                   num_additional_image_tokens=1).save_pretrained(dst)
    source = checkpoint_origin(src, HUB_ID)  # runs of dst keep LLaVA-Med's name only when src is its checkpoint
    if source is None:
        log.warning(f"note: {src} is not recognised as {HUB_ID} (neither its Hugging Face cache snapshot nor one's "
                    "weights): runs of the converted folder are named after the folder, not LLaVA-Med. Convert the "
                    "snapshot `huggingface-cli download` prints to keep the paper's name")
    info = {"converted_from": str(src), "vision_tower": vision_tower or cfg.get("mm_vision_tower"),
            "image_aspect_ratio": cfg.get("image_aspect_ratio", "pad"), "conversation_template": "mistral_instruct",
            "source": source, "weights_sha256": weight_hashes(dst)}
    (dst / "smmile_llavamed.json").write_text(json.dumps(info, indent=2))
    return dst
