"""Tiny random-weight checkpoints of every local architecture, built offline in seconds (test helper).

Each builder writes what a hub checkpoint holds (config, weights, tokenizer, image-processor config,
processor config, chat template) so the harness goes through its real `from_pretrained` paths.
Traps avoided (shared/notes/offline-testing.md §1): zero-initialised Mllama gates / Gemma3 projector are
set non-zero, the Qwen/OneVision processors are written from their parts (no torchvision here), the
Llama/Gemma templates emit BOS themselves. Builds are deterministic (fixed seeds, fixed corpus).
They build under transformers 5 (requirements.lock) and under the paper's 4.51.0 / 4.46.3 (requirements-paper*.lock):
the few names that differ are chosen by `smmile.models.hf.compat.transformers_version` in `_v5`, `_image_processor`,
`_qwen_config` and `build_tokenizer`; the folders hold the same tokenizer and processor settings either way.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

TEXT = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=4096)

WORDS = ("What color can be seen in the abnormal lesion ? How many nodules are visible in this image On which side "
         "is the opacity located What shape of highlighted structure Is there a fracture line Red Black White Purple "
         "Yellow Blue Left Right Circle Square Triangle Yes No 1 2 3 4 answer option select Please best following "
         "Your task Think through question enclose reasoning process tags Then provide correct single letter choice "
         "A B C D E F Example expected format This my thought Correct letter step by Alternatively The X Now "
         "You are an expert medical professional with extensive knowledge imaging diagnosis and clinical practice "
         "helpful assistant user system USER ASSISTANT INST Question Answer").split()

QWEN_TEMPLATE = (
    "{% for message in messages %}{% if loop.first and message['role'] != 'system' %}<|im_start|>system\n"
    "You are a helpful assistant.<|im_end|>\n{% endif %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}<|im_end|>\n{% else %}"
    "{% for content in message['content'] %}{% if content['type'] == 'image' %}<|vision_start|><|image_pad|>"
    "<|vision_end|>{% elif content['type'] == 'text' %}{{ content['text'] }}{% endif %}{% endfor %}<|im_end|>\n"
    "{% endif %}{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
MLLAMA_TEMPLATE = (
    "{{- bos_token }}{%- for message in messages %}{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n' }}"
    "{%- if message['content'] is string %}{{- message['content'] }}{%- else %}{%- for content in message['content'] %}"
    "{%- if content['type'] == 'image' %}{{- '<|image|>' }}{%- elif content['type'] == 'text' %}{{- content['text'] }}"
    "{%- endif %}{%- endfor %}{%- endif %}{{- '<|eot_id|>' }}{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{%- endif %}"
)
GEMMA_TEMPLATE = (
    "{{ bos_token }}{%- if messages[0]['role'] == 'system' -%}{%- if messages[0]['content'] is string -%}"
    "{%- set first_user_prefix = messages[0]['content'] + '\n\n' -%}{%- else -%}"
    "{%- set first_user_prefix = messages[0]['content'][0]['text'] + '\n\n' -%}{%- endif -%}"
    "{%- set loop_messages = messages[1:] -%}{%- else -%}{%- set first_user_prefix = '' -%}"
    "{%- set loop_messages = messages -%}{%- endif -%}{%- for message in loop_messages -%}"
    "{%- if (message['role'] == 'assistant') -%}{%- set role = 'model' -%}{%- else -%}{%- set role = message['role'] -%}"
    "{%- endif -%}{{ '<start_of_turn>' + role + '\n' + (first_user_prefix if loop.first else '') }}"
    "{%- if message['content'] is string -%}{{ message['content'] | trim }}{%- else -%}"
    "{%- for item in message['content'] -%}{%- if item['type'] == 'image' -%}{{ '<start_of_image>' }}"
    "{%- elif item['type'] == 'text' -%}{{ item['text'] | trim }}{%- endif -%}{%- endfor -%}{%- endif -%}"
    "{{ '<end_of_turn>\n' }}{%- endfor -%}{%- if add_generation_prompt -%}{{ '<start_of_turn>model\n' }}{%- endif -%}"
)
LLAVA_TEMPLATE = (
    "{% for message in messages %}{% if message['role'] != 'system' %}{{ message['role'].upper() + ': ' }}{% endif %}"
    "{% for content in message['content'] | selectattr('type', 'equalto', 'image') %}{{ '<image>\n' }}{% endfor %}"
    "{% for content in message['content'] | selectattr('type', 'equalto', 'text') %}{{ content['text'] + ' ' }}"
    "{% endfor %}{% endfor %}{% if add_generation_prompt %}{{ 'ASSISTANT:' }}{% endif %}"
)
LLAVA_NEXT_TEMPLATE = (
    "{% for message in messages %}{% if message['role'] == 'system' %}{{ '<<SYS>>\n' + message['content'][0]['text'] + "
    "'\n<</SYS>>\n\n' }}{% elif message['role'] == 'user' %}{{ '[INST] ' }}"
    "{% for content in message['content'] | selectattr('type', 'equalto', 'image') %}{{ '<image>\n' }}{% endfor %}"
    "{% for content in message['content'] | selectattr('type', 'equalto', 'text') %}{{ content['text'] }}{% endfor %}"
    "{{ ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ ' ' + message['content'][0]['text'] + '</s> ' }}"
    "{% endif %}{% endfor %}"
)
ONEVISION_TEMPLATE = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + ' ' }}"
    "{% for content in message['content'] | selectattr('type', 'equalto', 'image') %}{{ '<image>' }}{% endfor %}"
    "{% for content in message['content'] | selectattr('type', 'equalto', 'text') %}{{ '\n' + content['text'] }}"
    "{% endfor %}{{ '<|im_end|>' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


def _corpus():
    rng = random.Random(0)
    for _ in range(3000):
        yield " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12)))


def _v5() -> bool:
    from smmile.models.hf.compat import transformers_version

    return transformers_version() >= (5, 0)


def _image_processor(module: str, name: str):
    """The PIL image processor class `<name>ImageProcessor` of `transformers.models.<module>` (5.x: `...Pil`)."""
    import importlib

    import transformers

    if _v5():
        return getattr(importlib.import_module(f"transformers.models.{module}.image_processing_pil_{module}"),
                       f"{name}ImageProcessorPil")
    return getattr(transformers, f"{name}ImageProcessor")


def build_tokenizer(specials, *, bos=None, eos=None, pad=None, unk=None, add_bos=False, named_extra=None,
                    chat_template=None, vocab_size=600, cls_4x: str = "PreTrainedTokenizerFast"):
    """`cls_4x`: the class transformers 4.x saves (a processor that type-checks its tokenizer needs its own)."""
    import transformers
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE(unk_token=unk))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(_corpus(), trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=list(specials), initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False))
    if add_bos:
        tok.post_processor = processors.TemplateProcessing(
            single=f"{bos} $A", pair=f"{bos} $A {bos} $B", special_tokens=[(bos, tok.token_to_id(bos))])
    named = {k: v for k, v in dict(bos_token=bos, eos_token=eos, pad_token=pad, unk_token=unk).items() if v}
    cls = transformers.PreTrainedTokenizerFast if _v5() else getattr(transformers, cls_4x)
    fast = cls(tokenizer_object=tok, chat_template=chat_template, padding_side="left",
               model_input_names=["input_ids", "attention_mask"], **named,
               **({"extra_special_tokens": named_extra} if named_extra else {}))
    rest = [t for t in specials if t not in named.values() and t not in (named_extra or {}).values()]
    word = "extra" if _v5() else "additional"
    fast.add_special_tokens({f"{word}_special_tokens": rest}, **{f"replace_{word}_special_tokens": False})
    return fast


def _seed():
    import torch

    torch.manual_seed(0)


def _fix_weights(model) -> None:
    """Non-zero Mllama gates and Gemma3 projector, or images would not reach the logits."""
    import torch

    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(("cross_attn_attn_gate", "cross_attn_mlp_gate")) or name.endswith(".gate"):
                p.fill_(1.0)
            elif name.endswith("mm_input_projection_weight"):
                p.normal_(0.0, p.shape[0] ** -0.5)


def _save(model, out: Path, processor=None, parts=None, processor_config=None, chat_template=None) -> Path:
    _fix_weights(model)
    model.save_pretrained(out)
    if processor is not None:
        processor.save_pretrained(out)
    for part in parts or ():
        part.save_pretrained(out)
    if processor_config is not None:
        (out / "processor_config.json").write_text(json.dumps(processor_config, indent=2))
    if chat_template is not None:  # as each version's save_pretrained writes it (4.46.3 reads only the .json)
        if _v5():
            (out / "chat_template.jinja").write_text(chat_template)
        else:
            (out / "chat_template.json").write_text(json.dumps({"chat_template": chat_template}, indent=2))
    return out


def _qwen_tokenizer():
    return build_tokenizer(["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>",
                            "<|image_pad|>", "<|video_pad|>"], eos="<|im_end|>", pad="<|endoftext|>",
                           chat_template=QWEN_TEMPLATE, cls_4x="Qwen2TokenizerFast")


def _qwen_image_processor():
    return _image_processor("qwen2_vl", "Qwen2VL")(min_pixels=28 * 28 * 4, max_pixels=28 * 28 * 16, patch_size=14,
                                                   merge_size=2, temporal_patch_size=2)


def _qwen_ids(tok) -> dict:
    return dict(image_token_id=tok.convert_tokens_to_ids("<|image_pad|>"),
                video_token_id=tok.convert_tokens_to_ids("<|video_pad|>"),
                vision_start_token_id=tok.convert_tokens_to_ids("<|vision_start|>"),
                vision_end_token_id=tok.convert_tokens_to_ids("<|vision_end|>"))


def _qwen_config(cls, tok, vision: dict):
    """5.x nests the text model (`rope_parameters`); 4.51 has it flat (`rope_scaling` + `rope_theta`)."""
    text = dict(vocab_size=len(tok), **TEXT, bos_token_id=None, eos_token_id=tok.convert_tokens_to_ids("<|im_end|>"),
                pad_token_id=tok.convert_tokens_to_ids("<|endoftext|>"))
    if _v5():
        rope = {"rope_type": "default", "mrope_section": [2, 3, 3], "rope_theta": 1e6}
        return cls(text_config={**text, "rope_parameters": rope}, vision_config=vision, **_qwen_ids(tok))
    return cls(**text, rope_theta=1e6, rope_scaling={"type": "mrope", "mrope_section": [2, 3, 3]},
               vision_config=vision, **_qwen_ids(tok))


def build_qwen2_5_vl(out: Path) -> Path:
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration

    _seed()
    tok = _qwen_tokenizer()
    cfg = _qwen_config(Qwen2_5_VLConfig, tok, dict(
        depth=2, hidden_size=32, intermediate_size=64, num_heads=2, patch_size=14, spatial_merge_size=2,
        temporal_patch_size=2, window_size=112, out_hidden_size=64, fullatt_block_indexes=[1]))
    model = Qwen2_5_VLForConditionalGeneration(cfg).eval()
    return _save(model, out, parts=[tok, _qwen_image_processor()], chat_template=QWEN_TEMPLATE,
                 processor_config={"processor_class": "Qwen2_5_VLProcessor"})


def build_qwen2_vl(out: Path) -> Path:
    from transformers import Qwen2VLConfig, Qwen2VLForConditionalGeneration

    _seed()
    tok = _qwen_tokenizer()
    cfg = _qwen_config(Qwen2VLConfig, tok, dict(
        depth=2, embed_dim=32, hidden_size=64, num_heads=2, mlp_ratio=2, patch_size=14, spatial_merge_size=2,
        temporal_patch_size=2))
    model = Qwen2VLForConditionalGeneration(cfg).eval()
    return _save(model, out, parts=[tok, _qwen_image_processor()], chat_template=QWEN_TEMPLATE,
                 processor_config={"processor_class": "Qwen2VLProcessor"})


def build_mllama(out: Path) -> Path:
    from transformers import MllamaConfig, MllamaForConditionalGeneration, MllamaProcessor

    _seed()
    tok = build_tokenizer(["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>",
                           "<|eot_id|>", "<|image|>", "<|python_tag|>", "<|finetune_right_pad_id|>"],
                          bos="<|begin_of_text|>", eos="<|eot_id|>", pad="<|finetune_right_pad_id|>", add_bos=True,
                          chat_template=MLLAMA_TEMPLATE)
    ids = tok.convert_tokens_to_ids
    cfg = MllamaConfig(vision_config=dict(hidden_size=32, attention_heads=2, num_hidden_layers=2, num_global_layers=1,
                                          intermediate_size=64, image_size=56, patch_size=14, max_num_tiles=4,
                                          intermediate_layers_indices=[0, 1], vision_output_dim=96),
                       text_config=dict(**{**TEXT, "num_hidden_layers": 3}, vocab_size=len(tok),
                                        cross_attention_layers=[1], bos_token_id=ids("<|begin_of_text|>"),
                                        eos_token_id=[ids("<|eot_id|>"), ids("<|end_of_text|>")],
                                        pad_token_id=ids("<|finetune_right_pad_id|>"),
                                        **({} if _v5() else {"rope_scaling": {"rope_type": "default"}})),
                       image_token_index=ids("<|image|>"))
    model = MllamaForConditionalGeneration(cfg).eval()
    improc = _image_processor("mllama", "Mllama")(size={"height": 56, "width": 56}, max_image_tiles=4)
    proc = MllamaProcessor(improc, tok,
                           chat_template=MLLAMA_TEMPLATE)
    return _save(model, out, processor=proc)


def build_gemma3(out: Path) -> Path:
    from transformers import Gemma3Config, Gemma3ForConditionalGeneration, Gemma3Processor

    _seed()
    extra = {"boi_token": "<start_of_image>", "eoi_token": "<end_of_image>", "image_token": "<image_soft_token>"}
    tok = build_tokenizer(["<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>", "<start_of_image>",
                           "<end_of_image>", "<image_soft_token>"], bos="<bos>", eos="<eos>", pad="<pad>", unk="<unk>",
                          add_bos=True, named_extra=extra, chat_template=GEMMA_TEMPLATE)
    ids = tok.convert_tokens_to_ids
    cfg = Gemma3Config(
        text_config=dict(**TEXT, vocab_size=len(tok), head_dim=16, query_pre_attn_scalar=16, sliding_window=64,
                         **({"layer_types": ["sliding_attention", "full_attention"]} if _v5()
                            else {"sliding_window_pattern": 2}), pad_token_id=ids("<pad>"),
                         bos_token_id=ids("<bos>"), eos_token_id=[ids("<eos>"), ids("<end_of_turn>")]),
        vision_config=dict(model_type="siglip_vision_model", hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                           num_attention_heads=2, image_size=64, patch_size=8, vision_use_head=False),
        mm_tokens_per_image=16, boi_token_index=ids("<start_of_image>"), eoi_token_index=ids("<end_of_image>"),
        image_token_index=ids("<image_soft_token>"))
    model = Gemma3ForConditionalGeneration(cfg).eval()
    improc = _image_processor("gemma3", "Gemma3")(size={"height": 64, "width": 64})
    proc = Gemma3Processor(improc, tok, image_seq_length=16, chat_template=GEMMA_TEMPLATE)
    return _save(model, out, processor=proc)


def _llama_tokenizer(template, extra=()):
    return build_tokenizer(["<unk>", "<s>", "</s>", "<image>", "<pad>", *extra], bos="<s>", eos="</s>", pad="<pad>",
                           unk="<unk>", add_bos=True, named_extra={"image_token": "<image>"}, chat_template=template)


def _clip_vision(**kw) -> dict:
    return dict(model_type="clip_vision_model", hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                num_attention_heads=2, image_size=56, patch_size=14, projection_dim=32, **kw)


def _clip_processor(cls=None, **kw):
    cls = cls or _image_processor("clip", "CLIP")
    return cls(size={"shortest_edge": 56}, crop_size={"height": 56, "width": 56}, **kw)


def build_llava(out: Path) -> Path:
    from transformers import LlavaConfig, LlavaForConditionalGeneration, LlavaProcessor

    _seed()
    tok = _llama_tokenizer(LLAVA_TEMPLATE)
    ids = tok.convert_tokens_to_ids
    cfg = LlavaConfig(vision_config=_clip_vision(), text_config=dict(
        model_type="llama", **TEXT, vocab_size=len(tok), bos_token_id=ids("<s>"), eos_token_id=ids("</s>"),
        pad_token_id=ids("<pad>")), image_token_index=ids("<image>"), image_seq_length=16, vision_feature_layer=-2,
        vision_feature_select_strategy="default")
    model = LlavaForConditionalGeneration(cfg).eval()
    proc = LlavaProcessor(_clip_processor(), tok, patch_size=14, vision_feature_select_strategy="default",
                          num_additional_image_tokens=1, chat_template=LLAVA_TEMPLATE)
    return _save(model, out, processor=proc)


def build_llava_next(out: Path) -> Path:
    from transformers import LlavaNextConfig, LlavaNextForConditionalGeneration, LlavaNextProcessor

    _seed()
    tok = _llama_tokenizer(LLAVA_NEXT_TEMPLATE)
    ids = tok.convert_tokens_to_ids
    pins = [[56, 112], [112, 56], [112, 112]]
    cfg = LlavaNextConfig(vision_config=_clip_vision(), text_config=dict(
        model_type="mistral", **TEXT, vocab_size=len(tok), bos_token_id=ids("<s>"), eos_token_id=ids("</s>"),
        pad_token_id=ids("<pad>")), image_token_index=ids("<image>"), image_grid_pinpoints=pins,
        vision_feature_layer=-2, vision_feature_select_strategy="default",
        image_seq_length=16)  # (56/14)^2: below it, 4.46.3's forward takes the ids as unexpanded (legacy)
    model = LlavaNextForConditionalGeneration(cfg).eval()
    improc = _clip_processor(_image_processor("llava_next", "LlavaNext"), image_grid_pinpoints=pins)
    proc = LlavaNextProcessor(improc, tok,
                              patch_size=14, vision_feature_select_strategy="default", num_additional_image_tokens=1,
                              chat_template=LLAVA_NEXT_TEMPLATE)
    return _save(model, out, processor=proc)


def build_llava_onevision(out: Path) -> Path:
    from transformers import LlavaOnevisionConfig, LlavaOnevisionForConditionalGeneration

    _seed()
    extra = {"image_token": "<image>", "video_token": "<video>"}
    tok = build_tokenizer(["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<image>", "<video>"], eos="<|im_end|>",
                          pad="<|endoftext|>", named_extra=extra, chat_template=ONEVISION_TEMPLATE)
    ids = tok.convert_tokens_to_ids
    pins = [[56, 56], [56, 112], [112, 56], [112, 112]]
    cfg = LlavaOnevisionConfig(
        vision_config=dict(model_type="siglip_vision_model", hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                           num_attention_heads=2, image_size=56, patch_size=14, vision_use_head=False),
        text_config=dict(model_type="qwen2", **TEXT, vocab_size=len(tok), eos_token_id=ids("<|im_end|>"),
                         pad_token_id=ids("<|endoftext|>")),
        image_token_index=ids("<image>"), video_token_index=ids("<video>"), image_grid_pinpoints=pins,
        vision_feature_layer=-1, vision_feature_select_strategy="full", vision_aspect_ratio="anyres_max_9")
    model = LlavaOnevisionForConditionalGeneration(cfg).eval()
    improc = _image_processor("llava_onevision", "LlavaOnevision")(size={"height": 56, "width": 56},
                                                                  image_grid_pinpoints=pins)
    pcfg = {"processor_class": "LlavaOnevisionProcessor", "num_image_tokens": 16,
            "vision_feature_select_strategy": "full", "vision_aspect_ratio": "anyres_max_9"}
    return _save(model, out, parts=[tok, improc], processor_config=pcfg, chat_template=ONEVISION_TEMPLATE)


def build_llavamed_original(out: Path) -> Path:
    """A tiny LLaVA-Med v1.5 checkpoint in the ORIGINAL layout (LlavaMistralForCausalLM + separate CLIP tower)."""
    import torch
    from safetensors.torch import save_file
    from transformers import CLIPVisionConfig, CLIPVisionModel, MistralConfig, MistralForCausalLM

    _seed()
    tower_dir = out / "clip-vit-tiny"
    tower = CLIPVisionModel(CLIPVisionConfig(**{k: v for k, v in _clip_vision().items() if k != "model_type"}))
    tower.save_pretrained(tower_dir)
    _clip_processor().save_pretrained(tower_dir)
    tok = build_tokenizer(["<unk>", "<s>", "</s>"], bos="<s>", eos="</s>", unk="<unk>", add_bos=True)
    lm = MistralForCausalLM(MistralConfig(**TEXT, vocab_size=len(tok), bos_token_id=1, eos_token_id=2))
    state = dict(lm.state_dict())
    state["model.mm_projector.0.weight"] = torch.randn(64, 32) * 0.2
    state["model.mm_projector.0.bias"] = torch.zeros(64)
    state["model.mm_projector.2.weight"] = torch.randn(64, 64) * 0.1
    state["model.mm_projector.2.bias"] = torch.zeros(64)
    save_file({k: v.contiguous() for k, v in state.items()}, str(out / "model.safetensors"), metadata={"format": "pt"})
    config = {**lm.config.to_dict(), "architectures": ["LlavaMistralForCausalLM"], "model_type": "llava_mistral",
              "mm_vision_tower": str(tower_dir), "mm_hidden_size": 32, "mm_projector_type": "mlp2x_gelu",
              "mm_vision_select_layer": -2, "mm_vision_select_feature": "patch", "image_aspect_ratio": "pad",
              "mm_use_im_start_end": False, "mm_use_im_patch_token": False, "tune_mm_mlp_adapter": False}
    (out / "config.json").write_text(json.dumps(config, indent=2, default=str))
    tok.save_pretrained(out)
    return out


BUILDERS = {
    "qwen2_5_vl": build_qwen2_5_vl, "qwen2_vl": build_qwen2_vl, "mllama": build_mllama, "gemma3": build_gemma3,
    "llava": build_llava, "llava_next": build_llava_next, "llava_onevision": build_llava_onevision,
    "llavamed_original": build_llavamed_original,
}


def build(name: str, root: Path) -> Path:
    out = Path(root) / name
    if not (out / "config.json").exists():
        out.mkdir(parents=True, exist_ok=True)
        BUILDERS[name](out)
    return out


# -- shared, cached fixtures (no conftest: every test module calls these) -------------------------------------------
def cache_root() -> Path:
    """A per-machine cache keyed by this file's content (builds are deterministic)."""
    import hashlib
    import os
    import tempfile

    digest = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:12]
    return Path(os.environ.get("SMMILE_TINY_DIR", Path(tempfile.gettempdir()) / f"smmile-tiny-{digest}"))


def build_once(final: Path, make) -> Path:
    """`make(folder)` once into `final` (atomic rename, safe across parallel test processes)."""
    import os
    import shutil
    import tempfile

    if (final / "config.json").exists():
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=final.parent))
    try:
        make(tmp)
        os.replace(tmp, final)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
        if not (final / "config.json").exists():
            raise
    return final


def cached(name: str) -> Path:
    """Build `name` once into the cache."""
    final = cache_root() / name

    def make(tmp: Path) -> None:
        BUILDERS[name](tmp)
        if name == "llavamed_original":  # the config points at the tower inside the folder: fix the path
            cfg = json.loads((tmp / "config.json").read_text())
            cfg["mm_vision_tower"] = str(final / "clip-vit-tiny")
            (tmp / "config.json").write_text(json.dumps(cfg, indent=2))

    return build_once(final, make)


def demo_subset(n: int = 4) -> Path:
    """The first `n` problems of the demo dataset (incl. its 10-example problem) as a local dataset."""
    from smmile.data.demo import DEMO_VERSION, demo_path
    from smmile.data.load import load_problems
    from smmile.data.parquet import problems_to_records, write_dataset

    out = cache_root() / f"demo-v{DEMO_VERSION}-{n}"
    if (out / "data").is_dir():
        return out
    problems = load_problems(str(demo_path()))
    big = max(problems, key=lambda p: len(p.rows))
    chosen = problems[: n - 1] + ([big] if big not in problems[: n - 1] else problems[n - 1:n])
    chosen.sort(key=lambda p: problems.index(p))
    write_dataset(problems_to_records(chosen), out)
    return out


def served(arch: str) -> bool:
    """Whether this environment runs `arch` (a key of hf_reference/pinned.json): transformers 5 (requirements.lock)
    runs every family; a paper lock runs the families whose original script pinned its transformers release
    (4.51.0: Qwen, Llama-3.2, MedGemma, MedVLM-R1; 4.46.3: the LLaVA scripts and LLaVA-Med's image processor)."""
    from smmile.models.hf.compat import transformers_version

    version = transformers_version()
    pinned = json.loads((Path(__file__).parent / "hf_reference" / "pinned.json").read_text())[arch]["transformers"]
    return version >= (5, 0) or tuple(int(x) for x in pinned.split(".")[:2]) == version


def skip_unless_served(arch: str) -> None:
    import pytest

    from smmile.models.hf.compat import transformers_version

    if not served(arch):
        here = ".".join(map(str, transformers_version()))
        pytest.skip(f"{arch}: its original script pinned another transformers release than this {here}")
