"""How each original local-model script prompted its model and wrote its CSV rows (spec §3.1-§3.8, §3.16).

Under `--protocol paper` the answer columns are cut from the decodes exactly as the originals did (e.g. Qwen's
substring cut at "user"/"system" of the whole decoded sequence); under `--protocol corrected` the answer is the
decode of the new tokens only, stripped, and MCQA extraction never falls back to text that contains the prompt.
"""

from __future__ import annotations

from ...generation import GenerationSettings
from ...protocol.conversation import MessageStyle, build_conversation, render_messages, user_images
from ...protocol.extract import EXTRACTION_FAILED, extract_e1, extract_e3, extract_e4
from ...protocol.items import Item, Rngs
from ...protocol.options import medr1_letter, medr1_options
from ...protocol.templates import MEDGEMMA_SYSTEM, MEDR1_MCQA, MEDR1_OPEN
from ..base import Family, Response, base_row, mcqa_fields
from .imageprep import (DROP_ALPHA, WHITE, converter, qwen_4_51_step, qwen_vl_utils_fetch,
                        qwen_vl_utils_fetch_on_white)
from .request import ERRORS_LLAMA, ERRORS_MCQA_SCRIPT, ERRORS_MEDR1, ERRORS_PLAIN, PAD_FROM_TOKENIZER, HFRequest

MCQA7_NO_FULL = ["problem_id", "final_question", "true_answer", "correct_option", "selected_option", "is_correct",
                 "generated_answer"]
MCQA7_NO_GEN = ["problem_id", "final_question", "true_answer", "correct_option", "selected_option", "is_correct",
                "full_response"]


HF_GENERATE_KEYS = ("max_new_tokens", "do_sample", "temperature", "top_p", "top_k", "repetition_penalty")


def hf_generate_kwargs(generation: GenerationSettings) -> dict:
    """generate() keyword arguments: the generation settings that are set and that generate() takes."""
    sent = generation.sent()
    return {k: sent[k] for k in HF_GENERATE_KEYS if k in sent}


class LocalFamily(Family):
    """Shared parts: the canonical conversation rendered in the script's message style."""

    SETTINGS = ("protocol",)
    GENERATION = GenerationSettings(max_new_tokens=512, do_sample=False)
    style = MessageStyle()
    errors = ERRORS_PLAIN
    extra_generate_kwargs: dict = {}  # generate() arguments of the original that are not generation settings
    pinned_rgb = DROP_ALPHA  # how the paper's pinned processor made images RGB (imageprep)
    nested_images = False  # see encode.encode_chat

    def __init__(self, protocol: str = "paper", **_):
        self.protocol = protocol

    @property
    def corrected(self) -> bool:
        return self.protocol == "corrected"

    def gen_kwargs(self) -> dict:
        """generate() keyword arguments: the run's generation settings that are set, plus the script's extras."""
        return {**hf_generate_kwargs(self.generation), **self.extra_generate_kwargs}

    def request(self, item: Item) -> HFRequest:
        turns = build_conversation(item.problem, item.mode, item.target)
        return HFRequest("chat", user_images(turns), messages=render_messages(turns, self.style),
                         prep=self.image_step(), gen=self.gen_kwargs(), errors=dict(self.errors),
                         nested_images=self.nested_images, single_bos=self.corrected)

    def image_step(self):
        """What happens to each image before the processor (docs/images.md)."""
        return converter(self.protocol, self.pinned_rgb)


# -- Qwen2.5-VL (§3.1) -------------------------------------------------------------------------------------------
def qwen_cut(full: str) -> str:
    """Text after the last 'assistant', stripped, cut at the first 'user' and then the first 'system' (KEEP)."""
    try:
        pos = full.rfind("assistant")
        if pos == -1:
            return full.strip()
        text = full[pos + len("assistant"):].strip()
        for keyword in ("user", "system"):
            if keyword in text:
                text = text[: text.index(keyword)].strip()
        return text
    except Exception:  # the original kept the whole decode on any exception
        return full


class QwenFamily(LocalFamily):
    name = "qwen2.5-vl"
    mcqa_template = "A"
    mcqa_columns = MCQA7_NO_FULL

    GENERATION = GenerationSettings(max_new_tokens=512)  # the rest from the checkpoint's generation_config

    def image_step(self):
        return super().image_step() if self.corrected else qwen_4_51_step

    def answer(self, response: Response) -> str:
        return response.text.strip() if self.corrected else qwen_cut(response.full_text or "")

    def row(self, item: Item, response: Response) -> dict:
        row = base_row(item)
        gen, full = self.answer(response), response.full_text or ""
        if item.fmt == "mcqa":
            selected = extract_e1(gen, item.options)
            if selected == EXTRACTION_FAILED and not self.corrected:
                selected = extract_e1(full, item.options)
            row.update(mcqa_fields(item, selected))
        else:
            row.update(generated_answer=gen, full_response=full)
        return self.select(item, row)


# -- Llama-3.2-Vision (§3.2) --------------------------------------------------------------------------------------
class Llama32VFamily(LocalFamily):
    name = "llama-3.2-vision"
    mcqa_template = "B"
    mcqa_columns = MCQA7_NO_GEN
    style = MessageStyle(answer_suffix="\n")
    errors = ERRORS_LLAMA
    pinned_rgb = WHITE  # Mllama's own converter composited on white in 4.51 already
    nested_images = True

    def row(self, item: Item, response: Response) -> dict:
        row = base_row(item)
        no_new = response.usage.get("output_tokens", 1) == 0
        full = "" if no_new else (response.full_text or "")
        text = response.text if self.corrected else full
        if item.fmt == "mcqa":
            row.update(mcqa_fields(item, extract_e3(text)), full_response=full)
        else:
            gen = text.strip() if self.corrected else full.split("assistant")[-1].strip()
            row.update(generated_answer=gen, full_response=full)
        return self.select(item, row)


# -- MedGemma (§3.4) ----------------------------------------------------------------------------------------------
class MedGemmaFamily(LocalFamily):
    name = "medgemma"
    mcqa_template = "C"
    mcqa_columns = MCQA7_NO_GEN
    style = MessageStyle(system=MEDGEMMA_SYSTEM, system_as_parts=True, image_first=False, answer_as_parts=True)
    errors = ERRORS_LLAMA

    def request(self, item: Item) -> HFRequest:
        req = super().request(item)
        req.render = "chat_tokenize"
        req.processor_kwargs = {"padding": "longest", "pad_to_multiple_of": 8}
        return req

    def row(self, item: Item, response: Response) -> dict:
        row = base_row(item)
        if item.fmt == "mcqa":
            row.update(mcqa_fields(item, extract_e3(response.text)), full_response=response.text)
        else:
            row.update(generated_answer=response.text.strip(), full_response=response.text)
        return self.select(item, row)


# -- MedVLM-R1 (§3.3) ---------------------------------------------------------------------------------------------
MEDR1_MCQA_COLUMNS = ["problem_id", "original_question", "correct_letter", "correct_answer", "extracted_answer",
                      "is_correct", "full_response"]
MEDR1_OPEN_COLUMNS = ["problem_id", "original_question", "true_answer", "generated_answer", "full_response"]


class MedR1Family(LocalFamily):
    name = "medvlm-r1"
    errors = ERRORS_MEDR1

    def plan(self, item: Item, rngs: Rngs) -> None:  # no shuffle: options in letter order (§2.2)
        q = item.problem.query
        if item.fmt == "mcqa":
            lines = medr1_options(item.problem)
            item.options = {line[0]: line[3:] for line in lines}
            item.correct = medr1_letter(lines, q.answer)
            qtext = q.question + "\n" + "\n".join(lines)
        else:
            lines, qtext = [], q.question
        template = MEDR1_MCQA if item.fmt == "mcqa" else MEDR1_OPEN
        if item.mode == "ICL":
            context = "".join(self._example(i, row, lines) for i, row in enumerate(item.problem.examples, start=1))
            qtext = context + "Now answer this question:\n" + qtext
        item.target = template.replace("{Question}", qtext)

    @staticmethod
    def _example(i: int, row, lines: list[str]) -> str:
        if lines:
            q, a = row.question + "\n" + "\n".join(lines), medr1_letter(lines, row.answer)
        else:
            q, a = row.question, row.answer
        return f"Example {i}:\nQuestion: {q}\nAnswer: {a}\n\n"

    GENERATION = GenerationSettings(max_new_tokens=512, do_sample=False, temperature=1)
    extra_generate_kwargs = {"num_return_sequences": 1, "pad_token_id": PAD_FROM_TOKENIZER, "use_cache": True}

    def request(self, item: Item) -> HFRequest:
        messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": item.target}]}]
        fetch = qwen_vl_utils_fetch_on_white if self.corrected else qwen_vl_utils_fetch
        return HFRequest("chat", [item.problem.query.image], messages=messages, prep=fetch, gen=self.gen_kwargs(),
                         decode={"clean_up_tokenization_spaces": False}, errors=dict(self.errors),
                         single_bos=self.corrected)

    def columns(self, fmt: str) -> list[str]:
        return MEDR1_MCQA_COLUMNS if fmt == "mcqa" else MEDR1_OPEN_COLUMNS

    def _row(self, item: Item, full: str, extracted: str | None) -> dict:
        q = item.problem.query
        row = {"problem_id": item.problem.rows[0].problem_id, "original_question": q.question}
        if item.fmt == "mcqa":
            row.update(correct_letter=item.correct, correct_answer=q.answer, extracted_answer=extracted,
                       is_correct=extracted == item.correct, full_response=full)
        else:
            row.update(true_answer=q.answer, generated_answer=full, full_response=full)
        return self.select(item, row)

    def row(self, item: Item, response: Response) -> dict:
        return self._row(item, response.text, extract_e4(response.text) if item.fmt == "mcqa" else None)

    def error_row(self, item: Item, response: Response) -> dict:
        row = self._row(item, response.error or "ERROR", "ERROR")
        if item.fmt == "mcqa":
            row["is_correct"] = False
        return row


# -- LLaVA family (§3.5 open script, §3.6 _mcqa script) -----------------------------------------------------------
class LlavaFamily(LocalFamily):
    """`script="open"`: inference_llava.py; `script="mcqa"`: inference_llava_mcqa.py."""

    SETTINGS = ("protocol", "script")
    name = "llava"
    mcqa_template = "A"
    style = MessageStyle(answer_as_parts=True)
    extra_generate_kwargs = {"pad_token_id": PAD_FROM_TOKENIZER}

    def __init__(self, protocol: str = "paper", script: str = "open", **_):
        super().__init__(protocol)
        self.script = script
        self.errors = ERRORS_MCQA_SCRIPT if script == "mcqa" else ERRORS_PLAIN

    def row(self, item: Item, response: Response) -> dict:
        row = base_row(item)
        gen = response.text.strip() if self.corrected else response.text
        full = response.full_text or ""
        if item.fmt == "mcqa":
            selected = extract_e1(gen, None)
            if selected == EXTRACTION_FAILED:
                selected = extract_e1(gen, item.options)
            if selected == EXTRACTION_FAILED and not self.corrected:
                selected = extract_e1(full, item.options)
            row.update(mcqa_fields(item, selected), full_response=full)
        else:
            row.update(generated_answer=gen, full_response=full)
        return self.select(item, row)

