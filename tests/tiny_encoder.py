"""A tiny random-weight CLIP (text + vision) built offline from a config, for retrieved demonstrations."""

from __future__ import annotations

from pathlib import Path

import tiny_models


def build_clip(out: Path) -> Path:
    from transformers import CLIPConfig, CLIPModel

    tiny_models._seed()
    tok = tiny_models.build_tokenizer(["<unk>", "<s>", "</s>", "<pad>"], bos="<s>", eos="</s>", pad="<pad>",
                                      unk="<unk>", vocab_size=300)
    text = dict(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                num_attention_heads=2, max_position_embeddings=64, eos_token_id=tok.eos_token_id,
                bos_token_id=tok.bos_token_id, pad_token_id=tok.pad_token_id)
    vision = {k: v for k, v in tiny_models._clip_vision().items() if k != "model_type"}
    model = CLIPModel(CLIPConfig(text_config=text, vision_config=vision, projection_dim=16))
    model.save_pretrained(out)
    tok.save_pretrained(out)
    tiny_models._clip_processor().save_pretrained(out)
    return out


def cached_clip() -> Path:
    return tiny_models.build_once(tiny_models.cache_root() / "tiny-clip-encoder", build_clip)
