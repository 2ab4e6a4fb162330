"""How each original local-model script prompted its model (spec §3.1-§3.8); its rows and error texts are
its output spec's (`protocol.outputs`, named by `output_key`)."""

from __future__ import annotations

from ...generation import MAX_NEW_TOKENS, GenerationSettings
from ...protocol.conversation import MessageStyle, build_conversation, render_messages, user_images
from ...protocol.items import Item, Rngs
from ...protocol.options import medr1_letter, medr1_options
from ...protocol.templates import MEDGEMMA_SYSTEM, medr1_prompt
from ..base import Family
from .imageprep import (DROP_ALPHA, WHITE, drop_alpha_step, on_white_step, qwen_4_51_step, qwen_vl_utils_fetch,
                        qwen_vl_utils_fetch_on_white)
from .request import PAD_FROM_TOKENIZER, HFRequest

HF_GENERATE_KEYS = ("max_new_tokens", "do_sample", "temperature", "top_p", "top_k", "repetition_penalty")


def hf_generate_kwargs(generation: GenerationSettings) -> dict:
    """generate() keyword arguments: the generation settings that are set and that generate() takes."""
    sent = generation.sent()
    return {k: sent[k] for k in HF_GENERATE_KEYS if k in sent}


class LocalFamily(Family):
    SETTINGS = ("protocol",)
    GENERATION = GenerationSettings(max_new_tokens=MAX_NEW_TOKENS, do_sample=False)
    style = MessageStyle()
    extra_generate_kwargs: dict = {}  # generate() arguments of the original that are not generation settings
    pinned_rgb = DROP_ALPHA  # how the paper's pinned processor made images RGB (imageprep)
    nested_images = False  # see encode.encode_chat

    def __init__(self, protocol: str = "paper", script: str = "open", **_):
        """`script="mcqa"`: the `_mcqa` script of a family that had two (LLaVA, LLaVA-Med), with its own errors."""
        self.protocol, self.script = protocol, script
        if script == "mcqa":
            self.output_key += "_mcqa"

    @property
    def corrected(self) -> bool:
        return self.protocol == "corrected"

    def gen_kwargs(self) -> dict:
        return {**hf_generate_kwargs(self.generation), **self.extra_generate_kwargs}

    def request(self, item: Item) -> HFRequest:
        turns = build_conversation(item.problem, item.mode, item.target)
        return HFRequest("chat", user_images(turns), messages=render_messages(turns, self.style),
                         prep=self.image_step(), gen=self.gen_kwargs(), errors=dict(self.output.errors),
                         nested_images=self.nested_images, single_bos=self.corrected)

    def image_step(self):
        """What happens to each image before the processor (docs/images.md)."""
        return on_white_step if self.corrected or self.pinned_rgb == WHITE else drop_alpha_step


class QwenFamily(LocalFamily):  # spec §3.1
    name = "qwen2.5-vl"
    output_key = "qwen"
    mcqa_template = "A"

    GENERATION = GenerationSettings(max_new_tokens=MAX_NEW_TOKENS)  # the rest from the checkpoint's generation_config

    def image_step(self):
        return super().image_step() if self.corrected else qwen_4_51_step


class Llama32VFamily(LocalFamily):  # spec §3.2
    name = "llama-3.2-vision"
    output_key = "llama32v"
    mcqa_template = "B"
    style = MessageStyle(answer_suffix="\n")
    pinned_rgb = WHITE  # Mllama's own converter composited on white in 4.51 already
    nested_images = True


class MedGemmaFamily(LocalFamily):  # spec §3.4
    name = "medgemma"
    output_key = "medgemma"
    mcqa_template = "C"
    style = MessageStyle(system=MEDGEMMA_SYSTEM, system_as_parts=True, image_first=False, answer_as_parts=True)

    def request(self, item: Item) -> HFRequest:
        req = super().request(item)
        req.render = "chat_tokenize"
        req.processor_kwargs = {"padding": "longest", "pad_to_multiple_of": 8}
        return req


class MedR1Family(LocalFamily):  # spec §3.3
    name = "medvlm-r1"
    output_key = "medr1"

    def plan(self, item: Item, rngs: Rngs) -> None:  # no shuffle: options in letter order (§2.2)
        lines = medr1_options(item.problem) if item.fmt == "mcqa" else []
        if item.fmt == "mcqa":
            item.options = {line[0]: line[3:] for line in lines}
            item.correct = medr1_letter(lines, item.problem.query.answer)
        item.target = medr1_prompt(item.problem, item.mode, item.fmt, lines)

    GENERATION = GenerationSettings(max_new_tokens=MAX_NEW_TOKENS, do_sample=False, temperature=1)
    extra_generate_kwargs = {"num_return_sequences": 1, "pad_token_id": PAD_FROM_TOKENIZER, "use_cache": True}

    def request(self, item: Item) -> HFRequest:
        messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": item.target}]}]
        fetch = qwen_vl_utils_fetch_on_white if self.corrected else qwen_vl_utils_fetch
        return HFRequest("chat", [item.problem.query.image], messages=messages, prep=fetch, gen=self.gen_kwargs(),
                         decode={"clean_up_tokenization_spaces": False}, errors=dict(self.output.errors),
                         single_bos=self.corrected)


class LlavaFamily(LocalFamily):  # spec §3.5, §3.6
    """`script="open"`: inference_llava.py; `script="mcqa"`: inference_llava_mcqa.py."""

    SETTINGS = ("protocol", "script")
    name = "llava"
    output_key = "llava"
    mcqa_template = "A"
    style = MessageStyle(answer_as_parts=True)
    extra_generate_kwargs = {"pad_token_id": PAD_FROM_TOKENIZER}
