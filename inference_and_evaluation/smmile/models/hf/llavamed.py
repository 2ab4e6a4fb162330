"""LLaVA-Med v1.5 (spec §3.7, §3.8) on transformers' Llava classes: the `mistral_instruct` conversation,
LLaVA-Med's `tokenizer_image_token`, and its pad-to-square rule with offsets drawn from the global stream."""

from __future__ import annotations

from ...protocol.conversation import build_conversation, user_images
from ...protocol.items import Item, Rngs
from .families import LocalFamily
from .imageprep import drop_alpha, on_white_step, rgb_first_step
from .request import HFRequest

IMAGE_PLACEHOLDER = "<image>"
IMAGE_TOKEN_INDEX = -200  # LLaVA's placeholder id, replaced by the checkpoint's image token on expansion


def mistral_instruct(turns) -> str:
    """LLaVA's conv_templates['mistral_instruct'].get_prompt(): LLAMA_2 style, empty system, sep '', sep2 '</s>'."""
    ret = ""
    for turn in turns:
        if turn.role == "user":
            image = IMAGE_PLACEHOLDER + "\n" if turn.image is not None else ""
            ret += f"[INST] {image}{turn.text} [/INST]"
        else:
            ret += f" {turn.text} </s>"
    return ret  # the final assistant slot is empty -> adds nothing


def tokenizer_image_token(prompt: str, tokenizer, image_token_index: int = IMAGE_TOKEN_INDEX) -> list[int]:
    """LLaVA's mm_utils.tokenizer_image_token: chunks tokenized separately, BOS kept once, image ids between."""
    chunks = [tokenizer(chunk).input_ids for chunk in prompt.split(IMAGE_PLACEHOLDER)]
    ids: list[int] = []
    offset = 0
    if chunks and chunks[0] and chunks[0][0] == tokenizer.bos_token_id:
        offset = 1
        ids.append(chunks[0][0])
    for k, chunk in enumerate(chunks):
        if k > 0:
            ids.append(image_token_index)  # the separator [IMG] * (offset + 1), sliced like every chunk
        ids.extend(chunk[offset:])
    return ids


def pad_colour(mode: str, image_mean) -> int | tuple[int, ...]:
    """LLaVA-Med's `process_images` fill: the processor's mean x 255 as ints; for an L image one grey level,
    int(255 x the mean of the components) (114 for CLIP's mean, not its first component 122)."""
    if mode == "L":
        return int(255 * sum(image_mean) / len(image_mean))
    return tuple(int(x * 255) for x in image_mean)


def expand2square(image, background, offset: int):
    from PIL import Image

    w, h = image.size
    if w == h:
        return image
    out = Image.new(image.mode, (max(w, h), max(w, h)), background)
    out.paste(image, (0, offset) if w > h else (offset, 0))
    return out


def llavamed_images(req: HFRequest, image_mean) -> list:
    """The images LLaVA-Med's `process_images` hands its CLIP processor: padded to squares in their own mode (the
    `_mcqa` script converts to RGB first, via `req.prep`), then, under `paper`, convert("RGB") as the CLIP processor
    of transformers 4.36 did (transformers 5 would composite transparency on white instead)."""
    out = []
    for img, off in zip(req.load_images(), req.processor_kwargs["pad_offsets"]):
        if off is not None:
            img = expand2square(img, pad_colour(img.mode, image_mean), off)
        out.append(drop_alpha(img) if req.processor_kwargs["pinned_rgb"] else img)
    return out


class LlavaMedFamily(LocalFamily):
    """`script="open"`: inference_llavamed.py; `script="mcqa"`: inference_llavamed_mcqa.py."""

    SETTINGS = ("protocol", "script")
    name = "llava-med"
    output_key = "llavamed"
    mcqa_template = "A"

    def plan(self, item: Item, rngs: Rngs) -> None:
        super().plan(item, rngs)  # the problem's shuffle comes first, then one draw per non-square image
        offsets = []
        for ref in item.problem.images(item.mode):
            w, h = ref.size
            off = None if w == h else (max(w, h) - min(w, h)) // 2  # centred paste offset of a non-square image
            if off is not None and not self.corrected:
                off = rngs.py.randint(off, off + 1)
            offsets.append(off)
        item.extra["pad_offsets"] = offsets

    def request(self, item: Item) -> HFRequest:
        turns = build_conversation(item.problem, item.mode, item.target)
        if self.corrected:
            prep = on_white_step
        else:  # the _mcqa script converted to RGB before padding, the open script did not
            prep = rgb_first_step if self.script == "mcqa" else None
        return HFRequest("llavamed", user_images(turns), prompt=mistral_instruct(turns), prep=prep,
                         gen=self.gen_kwargs(), errors=dict(self.output.errors),
                         processor_kwargs={"pad_offsets": list(item.extra["pad_offsets"]),
                                           "pinned_rgb": not self.corrected})
