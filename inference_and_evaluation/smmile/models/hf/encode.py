"""Turning HFRequests into model inputs, one path per original script style (always a padded batch)."""

from __future__ import annotations

from .compat import chat_template_processor_kwargs, image_token_id
from .request import HFRequest


def encode(processor, model, reqs: list[HFRequest]) -> dict:
    kinds = {r.render for r in reqs}
    if len(kinds) != 1:
        raise ValueError(f"one batch mixes render kinds {sorted(kinds)}")
    processor.tokenizer.padding_side = "left"
    return {"chat": encode_chat, "chat_tokenize": encode_chat_tokenize, "llavamed": encode_llavamed}[kinds.pop()](
        processor, model, reqs)


def render_prompt(processor, req: HFRequest) -> str:
    """The prompt text the original produced with the processor's chat template (generation prompt appended)."""
    return processor.apply_chat_template(req.messages, tokenize=False, add_generation_prompt=True)


def encode_chat(processor, model, reqs: list[HFRequest]) -> dict:
    """Chat template -> text, then processor(text, images): Qwen, Llama-3.2, MedVLM-R1, LLaVA family.

    The originals called the processor with the tokenizer's defaults, so a template that starts with BOS got a
    second one (Llama-3.2); `single_bos` (--protocol corrected) avoids it. Images go as one flat list, as the
    originals passed them: nesting them per conversation switches LLaVA-OneVision (transformers 5) to its
    multi-image mode without anyres tiles. Only Mllama gets nested lists (its processor needs them for batches).
    """
    texts = [render_prompt(processor, r) for r in reqs]
    images = [r.load_images() for r in reqs]
    kwargs = {}
    bos = getattr(processor.tokenizer, "bos_token", None)
    if reqs[0].single_bos and bos and all(t.startswith(bos) for t in texts):
        kwargs["add_special_tokens"] = False
    if any(images):
        kwargs["images"] = images if reqs[0].nested_images else [img for imgs in images for img in imgs]
    return processor(text=texts, padding=True, return_tensors="pt", **kwargs, **reqs[0].processor_kwargs)


def with_images(messages: list[dict], images: list, kind: str = "image") -> list[dict]:
    """Each image placeholder replaced by the next image, as the part `{"type": kind, kind: image}`."""
    it = iter(images)
    return [{**m, "content": [{"type": kind, kind: next(it)} if p.get("type") == "image" else p for p in m["content"]]
             if isinstance(m["content"], list) else m["content"]} for m in messages]


def encode_chat_tokenize(processor, model, reqs: list[HFRequest]) -> dict:
    convs = [with_images(r.messages, r.load_images()) for r in reqs]
    extra = chat_template_processor_kwargs(reqs[0].processor_kwargs)  # MedGemma's padding, as the version takes it
    return processor.apply_chat_template(convs, add_generation_prompt=True, tokenize=True, return_dict=True,
                                         return_tensors="pt", **extra)


def image_tokens_per_image(model) -> int:
    cfg = model.config
    vc = cfg.vision_config
    n = (vc.image_size // vc.patch_size) ** 2
    return n + 1 if getattr(cfg, "vision_feature_select_strategy", "default") == "full" else n


def encode_llavamed(processor, model, reqs: list[HFRequest]) -> dict:
    """LLaVA-Med: tokenizer_image_token ids (image placeholder expanded), pad-to-square CLIP pixel values."""
    import torch

    from .llavamed import IMAGE_TOKEN_INDEX, llavamed_images, tokenizer_image_token

    tok, improc = processor.tokenizer, processor.image_processor
    image_id, n_img = image_token_id(model.config), image_tokens_per_image(model)
    rows, pixels = [], []
    for r in reqs:
        ids = []
        for t in tokenizer_image_token(r.prompt, tok):
            ids.extend([image_id] * n_img if t == IMAGE_TOKEN_INDEX else [t])
        rows.append(ids)
        pixels.extend(llavamed_images(r, improc.image_mean))
    width = max(len(ids) for ids in rows)
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    input_ids = torch.tensor([[pad] * (width - len(ids)) + ids for ids in rows])
    mask = torch.tensor([[0] * (width - len(ids)) + [1] * len(ids) for ids in rows])
    pixel_values = improc(pixels, return_tensors="pt")["pixel_values"]
    return {"input_ids": input_ids, "attention_mask": mask, "pixel_values": pixel_values}
