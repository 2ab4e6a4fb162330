"""How each original script turned a model's reply into its CSV row (spec §2.5, §2.6, §3, §3.16): an `OutputSpec`
per script (answer cut, MCQA extractor chain, columns, error texts), applied by `derive_row` / `failed_row`. Under
`--protocol corrected` some scripts have a second spec (`<script>/corrected`): the answer is the new tokens only,
stripped, and MCQA extraction never falls back to text that contains the prompt. A reply is a `models.base.Response`."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping

from .extract import EXTRACTION_FAILED, extract_e1, extract_e2, extract_e3, extract_e4
from .items import Item
from .templates import TEXTONLY_FOLLOW_UP

# THE column sets of the original's result CSVs (spec §3.15), for the runner, scoring and naming alike
OPEN = ("problem_id", "final_question", "true_answer", "generated_answer", "full_response")
MCQA = ("problem_id", "final_question", "true_answer", "correct_option", "selected_option", "is_correct",
        "generated_answer", "full_response")
MCQA_NO_FULL = MCQA[:-1]  # Qwen's MCQA file
MCQA_NO_GEN = MCQA[:-2] + ("full_response",)  # Llama-3.2-V's and MedGemma's MCQA files
MEDR1_OPEN = ("problem_id", "original_question", "true_answer", "generated_answer", "full_response")
MEDR1_MCQA = ("problem_id", "original_question", "correct_letter", "correct_answer", "extracted_answer",
              "is_correct", "full_response")

# MedVLM-R1's names for the common fields: CSV column -> field of a derived row
ALIASES = {"original_question": "final_question", "correct_letter": "correct_option",
           "correct_answer": "true_answer", "extracted_answer": "selected_option"}

QUESTION = ("final_question", "original_question")  # the question column, whichever the file has
SCORED = ("problem_id", "true_answer", "generated_answer")  # what exact match needs of an open file

# Faithful per-script error texts by stage ({e} = the exception text)
ERRORS_PLAIN = {"input": "ERROR: {e}", "oom": "ERROR: {e}", "other": "ERROR: {e}"}  # qwen, llava/llavamed open
ERRORS_LLAMA = {"input": "ERROR: Input processing failed - {e}", "oom": "ERROR: CUDA OOM",
                "other": "ERROR: Generation failed - {e}"}  # llama32v, medgemma
ERRORS_MEDR1 = {"input": "ERROR: Generation failed - {e}", "oom": "ERROR: CUDA OOM",
                "other": "ERROR: Generation failed - {e}"}
ERRORS_MCQA_SCRIPT = {"input": "ERROR: Input processing failed - {e}", "oom": "ERROR: CUDA OOM",
                      "other": "ERROR: {e}"}  # llava_mcqa, llavamed_mcqa
ERRORS_API = dict.fromkeys(ERRORS_PLAIN, "ERROR: API Request Failed - {e}")  # anthropic, openai


@dataclass(frozen=True)
class Extract:
    """`fn` on the `source` text ("answer": the cut answer, "full": full_response, "text": the raw reply), given
    the option texts unless `options` is False."""

    fn: Callable[..., str]
    source: str = "answer"
    options: bool = True

    def __call__(self, texts: dict, item: Item) -> str:
        return self.fn(texts[self.source], item.options) if self.options else self.fn(texts[self.source])


@dataclass(frozen=True)
class OutputSpec:
    """`cut(reply) -> (answer, full_response)`; the MCQA letter is the first extractor result that does not fail
    (no chain: the reply is the letter)."""

    cut: Callable[[Any], tuple[str, str]]
    extractors: tuple[Extract, ...] = ()
    open_columns: tuple[str, ...] = OPEN
    mcqa_columns: tuple[str, ...] = MCQA
    errors: Mapping[str, str] = field(default_factory=lambda: ERRORS_PLAIN)  # read-only
    failed_as_is: bool = False  # a failed extraction stored as EXTRACTION_FAILED, not INVALID_OPTION:... (API)
    full_is_option: bool = False  # MCQA full_response = the chosen option's text (baselines)
    # formats in which a reply without content (null) is written as the original's row of an empty reply (API scripts
    # under `paper`); the failure stays in the journal and manifest (`failed_row`)
    null_as_empty: tuple[str, ...] = ()

    def columns(self, fmt: str) -> tuple[str, ...]:
        return self.mcqa_columns if fmt == "mcqa" else self.open_columns


def csv_row(spec: OutputSpec, item: Item, answer: str, full: str, selected: str) -> dict:
    """The script's columns in its order (MedVLM-R1's names through `ALIASES`)."""
    q = item.problem.query
    row = {"problem_id": item.problem.rows[0].problem_id, "final_question": q.question, "true_answer": q.answer,
           "correct_option": item.correct, "selected_option": selected, "is_correct": selected == item.correct,
           "generated_answer": answer, "full_response": full}
    return {c: row[ALIASES.get(c, c)] for c in spec.columns(item.fmt)}


def derive_row(spec: OutputSpec, item: Item, reply) -> dict:
    """The row of a reply; in MCQA (§2.6) generated_answer is the selected option's text or INVALID_OPTION:<letter>."""
    answer, full = spec.cut(reply)
    selected = answer
    if item.fmt == "mcqa":
        texts = {"answer": answer, "full": full, "text": reply.text}
        for step in spec.extractors:
            selected = step(texts, item)
            if selected != EXTRACTION_FAILED:
                break
        answer = item.options.get(selected, f"INVALID_OPTION:{selected}")
        if spec.failed_as_is and selected == EXTRACTION_FAILED:
            answer = EXTRACTION_FAILED
        full = answer if spec.full_is_option else full
    return csv_row(spec, item, answer, full, selected)


def error_row(spec: OutputSpec, item: Item, message: str) -> dict:
    """The original's row for a failed problem: the error text in the answer columns, `ERROR` as letter."""
    return csv_row(spec, item, message, message, "ERROR")


def null_as_empty(spec: OutputSpec, item: Item, reply) -> bool:
    """Whether the original took this failed reply (no content: `extra["no_content"]`) as an empty answer."""
    return item.fmt in spec.null_as_empty and bool(reply.extra.get("no_content"))


def failed_row(spec: OutputSpec, item: Item, reply) -> dict:
    """The row of a failed reply: the error row, or the original's row of an empty reply (`null_as_empty`)."""
    if null_as_empty(spec, item, reply):
        return derive_row(spec, item, replace(reply, text="", full_text="", error=None))
    return error_row(spec, item, reply.error or "ERROR")


# -- answer cuts ----------------------------------------------------------------------------------------------------
def qwen_cut(full: str) -> str:
    """Text after the last 'assistant', stripped, cut at the first 'user' and then the first 'system' (KEEP)."""
    pos = full.rfind("assistant")
    if pos == -1:
        return full.strip()
    text = full[pos + len("assistant"):].strip()
    for keyword in ("user", "system"):
        text = text.partition(keyword)[0].strip()
    return text


def reply(r) -> tuple[str, str]:
    return r.text, r.text


def reply_stripped(r) -> tuple[str, str]:
    return r.text.strip(), r.text.strip()


def llama_sequence(r) -> str:
    """Llama-3.2-V's decode of the whole sequence, "" when no token was generated."""
    return "" if r.usage.get("output_tokens", 1) == 0 else (r.full_text or "")


def textonly_full(r) -> tuple[str, str]:
    """The reply; after the follow-up turn (§3.10) full_response holds both replies."""
    first = r.extra.get("first_reply")
    return r.text, r.text if first is None else f"{first}\n\nUser: {TEXTONLY_FOLLOW_UP}\n\nAssistant: {r.text}"


E1, E1_FULL = Extract(extract_e1), Extract(extract_e1, "full")
LLAVA_CHAIN = (Extract(extract_e1, options=False), E1, E1_FULL)
LLAVA = OutputSpec(lambda r: (r.text, r.full_text or ""), LLAVA_CHAIN)
LLAVA_CORRECTED = replace(LLAVA, cut=lambda r: (r.text.strip(), r.full_text or ""), extractors=LLAVA_CHAIN[:2])
LLAMA = OutputSpec(lambda r: (llama_sequence(r).split("assistant")[-1].strip(), llama_sequence(r)),
                   (Extract(extract_e3, "full", options=False),), mcqa_columns=MCQA_NO_GEN, errors=ERRORS_LLAMA)
API = OutputSpec(reply, (Extract(extract_e2),), errors=ERRORS_API, failed_as_is=True, null_as_empty=("open", "mcqa"))
TEXTONLY = OutputSpec(textonly_full, (E1,), null_as_empty=("open",))  # MCQA: the original asked again (§3.10)

OUTPUTS: dict[str, OutputSpec] = {  # key: the original script (spec §3.15), `/corrected`: its corrected variant
    "qwen": OutputSpec(lambda r: (qwen_cut(r.full_text or ""), r.full_text or ""), (E1, E1_FULL),
                       mcqa_columns=MCQA_NO_FULL),
    "qwen/corrected": OutputSpec(lambda r: (r.text.strip(), r.full_text or ""), (E1,), mcqa_columns=MCQA_NO_FULL),
    "llama32v": LLAMA,
    "llama32v/corrected": replace(LLAMA, cut=lambda r: (r.text.strip(), llama_sequence(r)),
                                  extractors=(Extract(extract_e3, "text", options=False),)),
    "medgemma": replace(LLAMA, cut=lambda r: (r.text.strip(), r.text)),
    "medr1": OutputSpec(reply, (Extract(extract_e4, "full", options=False),), MEDR1_OPEN, MEDR1_MCQA,
                        errors=ERRORS_MEDR1),
    "llava": LLAVA,
    "llava/corrected": LLAVA_CORRECTED,
    "llava_mcqa": replace(LLAVA, errors=ERRORS_MCQA_SCRIPT),
    "llava_mcqa/corrected": replace(LLAVA_CORRECTED, errors=ERRORS_MCQA_SCRIPT),
    "llavamed": OutputSpec(reply_stripped, (E1,)),  # generation from embeddings: new tokens only
    "llavamed_mcqa": OutputSpec(reply_stripped, (E1,), errors=ERRORS_MCQA_SCRIPT),
    "llama33textonly": TEXTONLY,  # both text-only scripts
    "llama33textonly/corrected": replace(TEXTONLY, null_as_empty=()),
    "api": API,  # anthropic, openai, and models served behind an OpenAI-compatible API
    "api/corrected": replace(API, null_as_empty=()),
    "generic": replace(API, cut=reply_stripped, errors=ERRORS_PLAIN, null_as_empty=()),  # hf:/vllm: any checkpoint
    "baselines": OutputSpec(reply, full_is_option=True),
}


def output_spec(script: str, protocol: str = "paper") -> OutputSpec:
    return OUTPUTS.get(f"{script}/{protocol}") or OUTPUTS[script]
