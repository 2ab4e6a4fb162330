"""Prompt snapshots of a fixed two-example problem for every local family (spec §3.1-§3.8), and the paper's
answer-cut rules, LLaVA-Med's conversation/tokenisation/padding and MedVLM-R1's image resize."""

from __future__ import annotations

import io
import os
import random

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from smmile.models import registry  # noqa: E402
from smmile.protocol.items import Item, Rngs  # noqa: E402
from smmile.protocol.problem import ImageRef, Problem, Row  # noqa: E402

Q = "What color is the lesion?"
SYS = "You are an expert medical professional with extensive knowledge in medical imaging, diagnosis, and clinical practice."
IMG = "<|vision_start|><|image_pad|><|vision_end|>"


def _png(w: int, h: int, colour) -> ImageRef:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (w, h), colour).save(buf, format="PNG")
    return ImageRef(buf.getvalue())


def problem() -> Problem:
    rows = [("Red.", (200, 0, 0), (40, 30)), ("Blue.", (0, 0, 200), (32, 32)), ("Red.", (190, 10, 10), (30, 47))]
    return Problem("p1", tuple(Row("p1", i, Q, a, _png(*size, c)) for i, (a, c, size) in enumerate(rows)))


def family(preset: str, protocol: str = "paper"):
    p = registry.get(preset)
    return registry.build_family(p, p.settings, protocol)


def planned(preset: str, mode="ICL", fmt="open", **kw):
    fam = family(preset, **kw)
    item = Item(0, problem(), mode, fmt)
    fam.plan(item, Rngs())
    return fam, item


QWEN_ICL = (f"<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n{IMG}{Q}<|im_end|>\n"
            f"<|im_start|>assistant\nRed.<|im_end|>\n<|im_start|>user\n{IMG}{Q}<|im_end|>\n<|im_start|>assistant\n"
            f"Blue.<|im_end|>\n<|im_start|>user\n{IMG}{Q}<|im_end|>\n<|im_start|>assistant\n")
LLAMA_ICL = "<|begin_of_text|>" + "".join(
    f"<|start_header_id|>user<|end_header_id|>\n\n<|image|>{Q}<|eot_id|><|start_header_id|>assistant<|end_header_id|>"
    f"\n\n{a}" for a in ("Red.\n<|eot_id|>", "Blue.\n<|eot_id|>", ""))
GEMMA_ICL = (f"<bos><start_of_turn>user\n{SYS}\n\n{Q}<start_of_image><end_of_turn>\n<start_of_turn>model\nRed.<end_of_turn>\n"
             f"<start_of_turn>user\n{Q}<start_of_image><end_of_turn>\n<start_of_turn>model\nBlue.<end_of_turn>\n"
             f"<start_of_turn>user\n{Q}<start_of_image><end_of_turn>\n<start_of_turn>model\n")
LLAVA_ICL = f"USER: <image>\n{Q} ASSISTANT: Red. USER: <image>\n{Q} ASSISTANT: Blue. USER: <image>\n{Q} ASSISTANT:"
NEXT_ICL = f"[INST] <image>\n{Q} [/INST] Red.</s> [INST] <image>\n{Q} [/INST] Blue.</s> [INST] <image>\n{Q} [/INST]"
OV_ICL = (f"<|im_start|>user <image>\n{Q}<|im_end|><|im_start|>assistant \nRed.<|im_end|><|im_start|>user <image>\n{Q}"
          f"<|im_end|><|im_start|>assistant \nBlue.<|im_end|><|im_start|>user <image>\n{Q}<|im_end|>"
          f"<|im_start|>assistant\n")
MEDR1_OPEN_ICL = (f"<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n{IMG}\n        "
                  f"Example 1:\nQuestion: {Q}\nAnswer: Red.\n\nExample 2:\nQuestion: {Q}\nAnswer: Blue.\n\n"
                  f"Now answer this question:\n{Q}\n\n        Please provide your response to this question.\n        "
                  f"<|im_end|>\n<|im_start|>assistant\n")
OPTS = "A) Red.\nB) Blue."
MEDR1_MCQA_ICL = (f"<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n{IMG}\n"
                  f"Example 1:\nQuestion: {Q}\n{OPTS}\nAnswer: A\n\nExample 2:\nQuestion: {Q}\n{OPTS}\nAnswer: B\n\n"
                  f"Now answer this question:\n{Q}\n{OPTS}\n\nYour task:\n1. Think through the question step by step, "
                  "enclose your reasoning process in <think>...</think> tags.\n2. Then provide the correct "
                  "single-letter choice (A, B, C, D,...) inside <answer>...</answer> tags.\n3. No extra information "
                  "or text outside of these tags.\n<|im_end|>\n<|im_start|>assistant\n")
# decoded shapes published in the spec (special tokens skipped)
DECODED = {
    "qwen3B": f"system\nYou are a helpful assistant.\nuser\n{Q}\nassistant\nRed.\nuser\n{Q}\nassistant\nBlue.\nuser\n{Q}"
              "\nassistant\n",
    "llama32_vision_90b": f"user\n\n{Q}assistant\n\nRed.\nuser\n\n{Q}assistant\n\nBlue.\nuser\n\n{Q}assistant\n\n",
    "llavaonevision_0.5b": f"user \n{Q}assistant \nRed.user \n{Q}assistant \nBlue.user \n{Q}assistant\n",
}
SNAPSHOTS = [("qwen3B", "qwen2_5_vl", "open", QWEN_ICL, 3), ("llama32_vision_90b", "mllama", "open", LLAMA_ICL, 3),
             ("medgemma_4b", "gemma3", "open", GEMMA_ICL, 3), ("llava_7b", "llava", "open", LLAVA_ICL, 3),
             ("llavanext_7b", "llava_next", "open", NEXT_ICL, 3), ("llavaonevision_0.5b", "llava_onevision", "open",
                                                                    OV_ICL, 3),
             ("MedVLM-R1", "qwen2_vl", "open", MEDR1_OPEN_ICL, 1), ("MedVLM-R1", "qwen2_vl", "mcqa", MEDR1_MCQA_ICL, 1)]


@pytest.mark.parametrize("preset,arch,fmt,expected,n_images", SNAPSHOTS, ids=[f"{s[0]}-{s[2]}" for s in SNAPSHOTS])
def test_rendered_prompt(preset, arch, fmt, expected, n_images):
    pytest.importorskip("transformers")
    import tiny_models
    from smmile.models.hf.encode import render_prompt
    from smmile.models.hf.processor import load_processor

    fam, item = planned(preset, fmt=fmt)
    req = fam.request(item)
    proc = load_processor(str(tiny_models.cached(arch)))
    text = render_prompt(proc, req)
    assert text == expected
    assert len(req.images) == n_images
    if preset in DECODED:
        ids = proc.tokenizer(text, add_special_tokens=False).input_ids
        assert proc.tokenizer.decode(ids, skip_special_tokens=True) == DECODED[preset]


def test_llavamed_prompt_and_tokens():
    from smmile.models.hf.llavamed import IMAGE_TOKEN_INDEX, mistral_instruct, tokenizer_image_token
    from smmile.protocol.conversation import build_conversation

    fam, item = planned("llavamed")
    req = fam.request(item)
    assert req.prompt == (f"[INST] <image>\n{Q} [/INST] Red. </s>[INST] <image>\n{Q} [/INST] Blue. </s>"
                          f"[INST] <image>\n{Q} [/INST]")
    zero = mistral_instruct(build_conversation(problem(), "0-shot", Q))
    assert zero == f"[INST] <image>\n{Q} [/INST]"

    class Tok:  # one id per character, BOS=1 added to every call, as a Llama tokenizer does
        bos_token_id = 1

        def __call__(self, text):
            return type("E", (), {"input_ids": [1] + [ord(c) for c in text]})()

    ids = tokenizer_image_token("ab<image>c<image>", Tok())
    assert ids == [1, ord("a"), ord("b"), IMAGE_TOKEN_INDEX, ord("c"), IMAGE_TOKEN_INDEX]


def test_llavamed_pad_offsets_drawn_after_the_shuffle():
    fam, item = planned("llavamed", fmt="mcqa")
    rng = random.Random(42)
    letters = ["A", "B"]
    rng.shuffle(letters)
    expected = []
    for w, h in [(40, 30), (32, 32), (30, 47)]:
        off = (max(w, h) - min(w, h)) // 2
        expected.append(None if w == h else rng.randint(off, off + 1))
    assert item.extra["pad_offsets"] == expected
    assert list(item.options) == letters
    fam_c, item_c = planned("llavamed", fmt="mcqa", protocol="corrected")
    assert item_c.extra["pad_offsets"] == [5, None, 8]  # centred, no draw


def test_expand2square():
    from PIL import Image

    from smmile.models.hf.llavamed import expand2square, pad_colour

    clip_mean = (0.48145466, 0.4578275, 0.40821073)
    wide = Image.new("RGB", (40, 30), (255, 0, 0))
    out = expand2square(wide, pad_colour("RGB", clip_mean), 6)
    assert out.size == (40, 40) and out.getpixel((0, 5)) == (122, 116, 104) and out.getpixel((0, 6)) == (255, 0, 0)
    grey = expand2square(Image.new("L", (10, 20), 255), pad_colour("L", clip_mean), 5)
    assert grey.size == (20, 20) and grey.getpixel((4, 0)) == 114 and grey.getpixel((5, 0)) == 255


def test_paper_cut_rules():
    from smmile.models.base import Response
    from smmile.protocol.outputs import qwen_cut

    full = "system\nYou are a helpful assistant.\nuser\nQ?\nassistant\nBlack.\nuser\nQ?\nassistant\n The users see it"
    assert qwen_cut(full) == "The"  # cut at the first "user" substring, as the original (KEEP)
    assert qwen_cut("nothing here ") == "nothing here"
    fam, item = planned("qwen3B")
    assert fam.row(item, Response(text="The users see it", full_text=full))["generated_answer"] == "The"
    fam_c, item_c = planned("qwen3B", protocol="corrected")
    assert fam_c.row(item_c, Response(text=" The users see it", full_text=full))["generated_answer"] == "The users see it"
    llama, item = planned("llama32_vision_90b")
    row = llama.row(item, Response(text="Black.\n", full_text="user\n\nQ?assistant\n\nBlack.\n", usage={"output_tokens": 3}))
    assert row["generated_answer"] == "Black." and row["full_response"] == "user\n\nQ?assistant\n\nBlack.\n"
    gemma, item = planned("medgemma_4b")
    row = gemma.row(item, Response(text="Black.\n"))
    assert (row["generated_answer"], row["full_response"]) == ("Black.", "Black.\n")
    llava, item = planned("llava_7b")
    row = llava.row(item, Response(text=" Red. ", full_text="USER: \nQ ASSISTANT: Red. "))
    assert row["generated_answer"] == " Red. "  # decode of new tokens, unstripped


def test_mcqa_extraction_sequences():
    from smmile.models.base import Response

    fam, item = planned("qwen3B", fmt="mcqa")
    full = item.target + "\nassistant\nsomething"
    row = fam.row(item, Response(text="something", full_text="system\n...user\n" + full))
    assert set(row) == {"problem_id", "final_question", "true_answer", "correct_option", "selected_option",
                        "is_correct", "generated_answer"}
    assert row["selected_option"] == "."  # E1 fell back to the prompt's own <answer>Correct letter.</answer> (KEEP)
    fam_c, item_c = planned("qwen3B", fmt="mcqa", protocol="corrected")
    assert fam_c.row(item_c, Response(text="something", full_text=full))["selected_option"] == "EXTRACTION_FAILED"
    r1, item = planned("MedVLM-R1", fmt="mcqa")
    row = r1.row(item, Response(text="<think>x</think><answer> (B)</answer>"))
    assert row["extracted_answer"] == "(" and row["correct_letter"] == "A" and row["is_correct"] is False
    err = r1.error_row(item, Response(error="ERROR: CUDA OOM"))
    assert err["extracted_answer"] == "ERROR" and err["full_response"] == "ERROR: CUDA OOM"


def test_smart_resize_matches_qwen_vl_utils():
    from smmile.models.hf.imageprep import smart_resize

    assert smart_resize(30, 47) == (56, 84)  # below min_pixels: scaled up to 4*28*28
    assert smart_resize(1000, 700) == (1008, 700)
    h, w = smart_resize(20000, 15000)
    assert h % 28 == 0 and w % 28 == 0 and h * w <= 16384 * 28 * 28


def test_presets_and_settings():
    for name, model_id, dtype in [("qwen72B", "Qwen/Qwen2.5-VL-72B-Instruct", "bfloat16"),
                                  ("llama32_vision_90b", "meta-llama/Llama-3.2-90B-Vision-Instruct", "bfloat16"),
                                  ("MedVLM-R1", "JZPeterPan/MedVLM-R1", "bfloat16"),
                                  ("medgemma_4b", "google/medgemma-4b-it", "bfloat16"),
                                  ("llavanext_7b", "llava-hf/llava-v1.6-mistral-7b-hf", "float16"),
                                  ("llavamed", "microsoft/llava-med-v1.5-mistral-7b", "float16")]:
        p = registry.get(name)
        assert (p.model_id, p.settings.dtype, family(name).generation.max_new_tokens) == (model_id, dtype, 512)
    assert family("qwen3B").gen_kwargs() == {"max_new_tokens": 512}
    assert family("llama32_vision_90b").gen_kwargs() == {"max_new_tokens": 512, "do_sample": False}


@pytest.mark.parametrize("preset,template", [("qwen3B", "A"), ("llava_7b", "A"), ("llavamed", "A"),
                                             ("llama32_vision_90b", "B"), ("medgemma_4b", "C")])
def test_mcqa_target_and_query_turn(preset, template):
    from smmile.protocol.templates import MCQA_TEMPLATES

    fam, item = planned(preset, fmt="mcqa")
    rng = random.Random(42)
    letters = ["A", "B"]
    rng.shuffle(letters)  # one shuffle per problem from random.Random(42) (spec §2.1)
    options = "\n".join(f"{letter}. {dict(A='Red.', B='Blue.')[letter]}" for letter in letters)
    assert item.target == MCQA_TEMPLATES[template].format(question=Q, options_text=options)
    assert item.correct == "A"
    req = fam.request(item)
    if req.messages is not None:
        last = req.messages[-1]
        assert last["role"] == "user" and {"type": "text", "text": item.target} in last["content"]
    else:
        assert req.prompt.endswith(f"[INST] <image>\n{item.target} [/INST]")
