"""Tiny random-weight checkpoints of architectures the paper did not use, for `--model hf:<path>` (test helper).

Each builder writes what a hub checkpoint holds (config, weights, tokenizer, image-processor and processor configs,
chat template) with the real processor and model classes of transformers; the chat templates are written in the
shape of the real checkpoints' (Idefics3's role prefixes and <end_of_utterance>, Qwen's im_start turns, InternVL's
<IMG_CONTEXT>, Aya Vision's alternating Cohere turns; BLIP-2's processor puts one image's query tokens before the
text, so its template renders no image). Random weights are spread (std 0.3) so that outputs depend on the
prompt and the images. Variants of the Idefics3 checkpoint carry templates that refuse a system turn, or images
outside the last user turn, to exercise the fallbacks. Builds are deterministic and cached per machine.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

import tiny_models as tm
from tiny_models import TEXT, build_tokenizer

SPREAD = 0.3

IDEFICS3_TEMPLATE = (
    "<|begin_of_text|>{% for message in messages %}{{ message['role'] | capitalize }}"
    "{% if message['content'][0]['type'] == 'image' %}{{ ':' }}{% else %}{{ ': ' }}{% endif %}"
    "{% for part in message['content'] %}{% if part['type'] == 'text' %}{{ part['text'] }}"
    "{% elif part['type'] == 'image' %}{{ '<image>' }}{% endif %}{% endfor %}<end_of_utterance>\n{% endfor %}"
    "{% if add_generation_prompt %}{{ 'Assistant:' }}{% endif %}")
# Gemma-2 style: no system turn
NO_SYSTEM_TEMPLATE = ("{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}"
                      "{% endif %}" + IDEFICS3_TEMPLATE)
# images only in the last user turn
LAST_TURN_IMAGES_TEMPLATE = (
    "{% for message in messages %}{% if not loop.last and message['role'] == 'user' %}"
    "{% for part in message['content'] %}{% if part['type'] == 'image' %}"
    "{{ raise_exception('Images are only supported in the last user message') }}{% endif %}{% endfor %}{% endif %}"
    "{% endfor %}" + IDEFICS3_TEMPLATE)
INTERNVL_TEMPLATE = tm.QWEN_TEMPLATE.replace("<|vision_start|><|image_pad|><|vision_end|>", "<IMG_CONTEXT>\n")
AYA_TEMPLATE = (
    "{{ bos_token }}{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}"
    "{{ '<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>' + messages[0]['content'][0]['text'] + '<|END_OF_TURN_TOKEN|>' }}"
    "{% else %}{% set loop_messages = messages %}{% endif %}"
    "{% for message in loop_messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
    "{{ '<|START_OF_TURN_TOKEN|>' + ('<|USER_TOKEN|>' if message['role'] == 'user' else '<|CHATBOT_TOKEN|>') }}"
    "{% for part in message['content'] %}{% if part['type'] == 'image' %}{{ '<image>' }}{% elif part['type'] == 'text' %}"
    "{{ part['text'] }}{% endif %}{% endfor %}{{ '<|END_OF_TURN_TOKEN|>' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>' }}{% endif %}")
BLIP2_TEMPLATE = (
    "{% for message in messages %}{% if message['role'] == 'system' %}{{ message['content'][0]['text'] + '\n' }}"
    "{% else %}{{ 'Question: ' if message['role'] == 'user' else 'Answer: ' }}"
    "{% for part in message['content'] %}{% if part['type'] == 'text' %}{{ part['text'] }}{% endif %}{% endfor %}"
    "{{ '\n' }}{% endif %}{% endfor %}{% if add_generation_prompt %}{{ 'Answer:' }}{% endif %}")


def _spread(model) -> None:
    """Random weights wide enough that the answers depend on the prompt and the images."""
    import torch

    torch.manual_seed(1)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() >= 2:
                p.normal_(0.0, SPREAD)


def _siglip(**kw) -> dict:
    return dict(model_type="siglip_vision_model", hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                num_attention_heads=2, image_size=56, patch_size=14, vision_use_head=False, **kw)


def build_idefics3(out: Path, template: str = IDEFICS3_TEMPLATE) -> Path:
    """Idefics3 (the SmolVLM family's architecture), image splitting on."""
    from transformers import Idefics3Config, Idefics3ForConditionalGeneration, Idefics3Processor
    from transformers.models.idefics3.image_processing_pil_idefics3 import Idefics3ImageProcessorPil

    tm._seed()
    rowcol = [f"<row_{i + 1}_col_{j + 1}>" for i in range(6) for j in range(6)]
    tok = build_tokenizer(["<|begin_of_text|>", "<|end_of_text|>", "<end_of_utterance>", "<fake_token_around_image>",
                           "<image>", "<global-img>", "<pad>", *rowcol], bos="<|begin_of_text|>",
                          eos="<end_of_utterance>", pad="<pad>", chat_template=template)
    ids = tok.convert_tokens_to_ids
    cfg = Idefics3Config(vision_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                            num_attention_heads=2, image_size=56, patch_size=14),
                         text_config=dict(model_type="llama", **TEXT, vocab_size=len(tok),
                                          bos_token_id=ids("<|begin_of_text|>"), eos_token_id=ids("<end_of_utterance>"),
                                          pad_token_id=ids("<pad>")),
                         scale_factor=2, image_token_id=ids("<image>"))
    model = Idefics3ForConditionalGeneration(cfg).eval()
    _spread(model)
    improc = Idefics3ImageProcessorPil(size={"longest_edge": 112}, max_image_size={"longest_edge": 56},
                                       do_image_splitting=True)
    return tm._save(model, out, processor=Idefics3Processor(improc, tok, image_seq_len=4, chat_template=template))


def build_qwen3_vl(out: Path) -> Path:
    """Qwen3-VL (interleaved M-RoPE, deepstack); its processor is built without the video processor here."""
    from transformers import Qwen3VLConfig, Qwen3VLForConditionalGeneration
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    tm._seed()
    tok = tm._qwen_tokenizer()
    text = dict(vocab_size=len(tok), **TEXT, head_dim=16, pad_token_id=tok.convert_tokens_to_ids("<|endoftext|>"),
                rope_parameters={"rope_type": "default", "mrope_section": [2, 3, 3], "rope_theta": 1e6,
                                 "mrope_interleaved": True})
    cfg = Qwen3VLConfig(text_config=text, vision_config=dict(
        depth=2, hidden_size=32, intermediate_size=64, num_heads=2, patch_size=16, spatial_merge_size=2,
        temporal_patch_size=2, out_hidden_size=64, num_position_embeddings=64, deepstack_visual_indexes=[0]),
        **tm._qwen_ids(tok))
    cfg.text_config.eos_token_id = tok.convert_tokens_to_ids("<|im_end|>")
    model = Qwen3VLForConditionalGeneration(cfg).eval()
    _spread(model)
    improc = Qwen2VLImageProcessorPil(min_pixels=32 * 32 * 4, max_pixels=32 * 32 * 16, patch_size=16, merge_size=2,
                                      temporal_patch_size=2)
    return tm._save(model, out, parts=[tok, improc], chat_template=tm.QWEN_TEMPLATE,
                    processor_config={"processor_class": "Qwen3VLProcessor"})


def build_internvl(out: Path) -> Path:
    """InternVL 3 (transformers' InternVL classes, GotOcr2 tiling); built without the video processor here."""
    from transformers import InternVLConfig, InternVLForConditionalGeneration
    from transformers.models.got_ocr2.image_processing_pil_got_ocr2 import GotOcr2ImageProcessorPil

    tm._seed()
    named = {"start_image_token": "<img>", "end_image_token": "</img>", "context_image_token": "<IMG_CONTEXT>",
             "video_token": "<video>"}
    tok = build_tokenizer(["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<img>", "</img>", "<IMG_CONTEXT>",
                           "<video>"], eos="<|im_end|>", pad="<|endoftext|>", named_extra=named)
    ids = tok.convert_tokens_to_ids
    cfg = InternVLConfig(vision_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                            num_attention_heads=2, image_size=[56, 56], patch_size=[14, 14]),
                         text_config=dict(model_type="qwen2", **TEXT, vocab_size=len(tok), eos_token_id=ids("<|im_end|>"),
                                          pad_token_id=ids("<|endoftext|>")),
                         image_token_id=ids("<IMG_CONTEXT>"), image_seq_length=4, downsample_ratio=0.5)
    model = InternVLForConditionalGeneration(cfg).eval()
    _spread(model)
    improc = GotOcr2ImageProcessorPil(size={"height": 56, "width": 56}, crop_to_patches=True, min_patches=1,
                                      max_patches=4)
    return tm._save(model, out, parts=[tok, improc], chat_template=INTERNVL_TEMPLATE,
                    processor_config={"processor_class": "InternVLProcessor", "image_seq_length": 4})


def build_aya_vision(out: Path) -> Path:
    """Aya Vision (Cohere 2 text model, SigLIP tiles, <|IMG_PATCH|> image tokens)."""
    from transformers import AyaVisionConfig, AyaVisionForConditionalGeneration, AyaVisionProcessor
    from transformers.models.got_ocr2.image_processing_pil_got_ocr2 import GotOcr2ImageProcessorPil

    tm._seed()
    tok = build_tokenizer(["<PAD>", "<BOS_TOKEN>", "<|END_OF_TURN_TOKEN|>", "<|START_OF_TURN_TOKEN|>", "<|USER_TOKEN|>",
                           "<|CHATBOT_TOKEN|>", "<|SYSTEM_TOKEN|>", "<image>", "<|START_OF_IMG|>", "<|END_OF_IMG|>",
                           "<|IMG_PATCH|>", "<|IMG_LINE_BREAK|>", "TILE", "TILE_GLOBAL",
                           *[f"TILE_{i}" for i in range(1, 13)]],
                          bos="<BOS_TOKEN>", eos="<|END_OF_TURN_TOKEN|>", pad="<PAD>", chat_template=AYA_TEMPLATE)
    ids = tok.convert_tokens_to_ids
    cfg = AyaVisionConfig(vision_config=_siglip(),
                          text_config=dict(model_type="cohere2", **TEXT, head_dim=16, vocab_size=len(tok),
                                           layer_types=["sliding_attention", "full_attention"], sliding_window=64,
                                           bos_token_id=ids("<BOS_TOKEN>"), eos_token_id=ids("<|END_OF_TURN_TOKEN|>"),
                                           pad_token_id=ids("<PAD>")),
                          image_token_index=ids("<|IMG_PATCH|>"), downsample_factor=2)
    model = AyaVisionForConditionalGeneration(cfg).eval()
    _spread(model)
    improc = GotOcr2ImageProcessorPil(size={"height": 56, "width": 56}, crop_to_patches=True, min_patches=1,
                                      max_patches=4)
    proc = AyaVisionProcessor(improc, tok, patch_size=14, img_size=56, downsample_factor=2, chat_template=AYA_TEMPLATE)
    return tm._save(model, out, processor=proc)


def build_blip2(out: Path) -> Path:
    """BLIP-2 (OPT): the processor prepends one image's query tokens; several images are silently cut to one.
    Its processor keeps no chat template: the template lives with the tokenizer (chat_template.jinja)."""
    from transformers import Blip2Config, Blip2ForConditionalGeneration, Blip2Processor
    from transformers.models.blip.image_processing_pil_blip import BlipImageProcessorPil

    tm._seed()
    tok = build_tokenizer(["<pad>", "</s>", "<image>"], bos="</s>", eos="</s>", pad="<pad>", add_bos=True,
                          chat_template=BLIP2_TEMPLATE)
    ids = tok.convert_tokens_to_ids
    cfg = Blip2Config(vision_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                         num_attention_heads=2, image_size=56, patch_size=14),
                      qformer_config=dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                          intermediate_size=64, encoder_hidden_size=32, vocab_size=len(tok)),
                      text_config=dict(model_type="opt", hidden_size=64, ffn_dim=128, num_hidden_layers=2,
                                       num_attention_heads=4, word_embed_proj_dim=64, vocab_size=len(tok),
                                       max_position_embeddings=2048, bos_token_id=ids("</s>"), eos_token_id=ids("</s>"),
                                       pad_token_id=ids("<pad>")),
                      num_query_tokens=4, image_token_index=ids("<image>"))
    model = Blip2ForConditionalGeneration(cfg).eval()
    _spread(model)
    proc = Blip2Processor(BlipImageProcessorPil(size={"height": 56, "width": 56}), tok, num_query_tokens=4)
    return tm._save(model, out, processor=proc, chat_template=BLIP2_TEMPLATE)


# architecture -> (builder, the transformers model class its config names)
BUILDERS = {
    "idefics3": (build_idefics3, "Idefics3ForConditionalGeneration"),
    "qwen3_vl": (build_qwen3_vl, "Qwen3VLForConditionalGeneration"),
    "internvl": (build_internvl, "InternVLForConditionalGeneration"),
    "aya_vision": (build_aya_vision, "AyaVisionForConditionalGeneration"),
    "blip2": (build_blip2, "Blip2ForConditionalGeneration"),
    "idefics3_no_system": (lambda out: build_idefics3(out, NO_SYSTEM_TEMPLATE), "Idefics3ForConditionalGeneration"),
    "idefics3_last_turn_images": (lambda out: build_idefics3(out, LAST_TURN_IMAGES_TEMPLATE),
                                  "Idefics3ForConditionalGeneration"),
}
MULTI_IMAGE = ("idefics3", "qwen3_vl", "internvl", "aya_vision")  # the four architectures run end to end


def cache_root() -> Path:
    """A per-machine cache keyed by the content of this file and of tiny_models.py (builds are deterministic)."""
    h = hashlib.sha256(Path(__file__).read_bytes() + Path(tm.__file__).read_bytes()).hexdigest()[:12]
    return Path(os.environ.get("SMMILE_TINY_GENERIC_DIR", Path(tempfile.gettempdir()) / f"smmile-tiny-generic-{h}"))


def cached(name: str) -> Path:
    """Build `name` once into the cache."""
    return tm.build_once(cache_root() / name, BUILDERS[name][0])
