"""Instruction templates, verbatim from the original scripts (spec §2.3, §3.3, §3.9, §3.10), and the prompt
builders of the scripts that wrote their prompt as one text (MedVLM-R1, the Llama 3.3 text-only baseline)."""

from __future__ import annotations

from .options import medr1_letter
from .problem import Problem

TEMPLATE_A = (
    "\n{question}\n\nPlease select the best answer from the following options:\n{options_text}\n\n"
    "Your task:\n1. Think through the question, enclose your reasoning process in <think>...</think> tags.\n"
    "2. Then provide the correct single-letter choice (A, B, C, D, E, F, ...) inside <answer>...</answer> tags.\n"
    "Example of the expected format:\n<think>This is my thought.</think>\n<answer>Correct letter.</answer>\n"
)

_B_HEAD = (
    "\n{question}\n\nPlease select the best answer from the following options:\n{options_text}\n\n"
    "Your task:\n1. Think through the question step by step, enclose your reasoning process in <think>...</think> tags.\n"
    "2. Then provide the correct single-letter choice ({letters_hint}) inside <answer>...</answer> tags.\n"
    "Example of the expected format:\n<think>This is my thought.</think>\n<answer>X</answer>\n"
)
# Template B as released; the published Llama-3.2 prompts show "(A, B, C, D, E,...)" (spec §2.3 note).
TEMPLATE_B = _B_HEAD.replace("{letters_hint}", "A, B, C, D, E, ...") + "Alternatively:\nThe correct answer is X.\n"
TEMPLATE_B_PUBLISHED = _B_HEAD.replace("{letters_hint}", "A, B, C, D, E,...") + "Alternatively:\nThe correct answer is X.\n"
TEMPLATE_C = _B_HEAD.replace("{letters_hint}", "A, B, C, D, E, ...")

MCQA_TEMPLATES = {"A": TEMPLATE_A, "B": TEMPLATE_B, "B_published": TEMPLATE_B_PUBLISHED, "C": TEMPLATE_C}

MEDR1_MCQA = ("\n{Question}\n\nYour task:\n1. Think through the question step by step, enclose your reasoning process "
              "in <think>...</think> tags.\n2. Then provide the correct single-letter choice (A, B, C, D,...) inside "
              "<answer>...</answer> tags.\n3. No extra information or text outside of these tags.\n")
MEDR1_OPEN = "\n        {Question}\n\n        Please provide your response to this question.\n        "

MEDGEMMA_SYSTEM = ("You are an expert medical professional with extensive knowledge in medical imaging, diagnosis, "
                   "and clinical practice.")
API_SYSTEM = "You are a highly skilled physician and an excellent writer."

# the Llama 3.3 text-only baseline: open-only script (§3.9), then the _mcqa script (§3.10)
_EXPERT = "You are an expert medical question-answering system. "
_EXAMPLES = "Here are some examples of questions and associated answers: \n"
_TASK = "Your task is to provide an answer to the following "
TEXTONLY_FOLLOW_UP = ("Based on your analysis above, what is your final answer? Please respond with just the letter "
                      "(A, B, C, etc.) of the correct option. Format your answer as: <answer>X</answer> where X is the "
                      "letter.")


def mcqa_prompt(template: str, question: str, options_text: str) -> str:
    return template.format(question=question, options_text=options_text)


def medr1_prompt(problem: Problem, mode: str, fmt: str, lines: list[str]) -> str:
    """§3.3: the template with {Question} := (the ICL examples, then) the query; `lines`: the MCQA option lines."""
    qtext = problem.query.question + "\n" + "\n".join(lines) if fmt == "mcqa" else problem.query.question
    if mode == "ICL":
        context = ""
        for i, row in enumerate(problem.examples, start=1):
            if lines:
                q, a = row.question + "\n" + "\n".join(lines), medr1_letter(lines, row.answer)
            else:
                q, a = row.question, row.answer
            context += f"Example {i}:\nQuestion: {q}\nAnswer: {a}\n\n"
        qtext = context + "Now answer this question:\n" + qtext
    return (MEDR1_MCQA if fmt == "mcqa" else MEDR1_OPEN).replace("{Question}", qtext)


def textonly_open_prompt(problem: Problem, mode: str) -> str:
    """§3.9: the open-only text-only script's prompt."""
    task = f'{_TASK}question: "{problem.query.question}".'
    if mode != "ICL":
        return _EXPERT + task
    return _EXPERT + _EXAMPLES + "".join(f"{r.question} {r.answer}\n" for r in problem.examples) + task


def textonly_mcqa_prompt(problem: Problem, mode: str, fmt: str, target: str) -> str:
    """§3.10: the _mcqa text-only script's prompt (both formats); `target`: the question or Template A."""
    ask = f"{'multiple-choice question' if fmt == 'mcqa' else 'question'}: \n\n{target}"
    if mode != "ICL":
        return _EXPERT + _TASK + ask
    shots = "".join(f"Question: {r.question}\nAnswer: {r.answer}\n\n" for r in problem.examples)
    return f"{_EXPERT}{_EXAMPLES}\n{shots}Now, your task is to provide an answer to the following {ask}"
