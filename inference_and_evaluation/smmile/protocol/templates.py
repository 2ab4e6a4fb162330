"""Instruction templates, verbatim from the original scripts (spec §2.3, §3.3, §3.9, §3.10)."""

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

MEDR1_MCQA = (
    "\n{Question}\n\nYour task:\n1. Think through the question step by step, enclose your reasoning process in "
    "<think>...</think> tags.\n2. Then provide the correct single-letter choice (A, B, C, D,...) inside "
    "<answer>...</answer> tags.\n3. No extra information or text outside of these tags.\n"
)
MEDR1_OPEN = "\n        {Question}\n\n        Please provide your response to this question.\n        "

MEDGEMMA_SYSTEM = (
    "You are an expert medical professional with extensive knowledge in medical imaging, diagnosis, "
    "and clinical practice."
)
API_SYSTEM = "You are a highly skilled physician and an excellent writer."

# Llama 3.3 text-only baseline, open-only script (§3.9)
TEXTONLY_OPEN_0SHOT = (
    'You are an expert medical question-answering system. Your task is to provide an answer to the following question: "{q}".'
)
TEXTONLY_OPEN_ICL_HEAD = (
    "You are an expert medical question-answering system. Here are some examples of questions and associated answers: \n"
)
TEXTONLY_OPEN_ICL_ITEM = "{q} {a}\n"
TEXTONLY_OPEN_ICL_TAIL = 'Your task is to provide an answer to the following question: "{q}".'

# Llama 3.3 text-only baseline, _mcqa script (§3.10)
TEXTONLY2_0SHOT_MCQA = (
    "You are an expert medical question-answering system. Your task is to provide an answer to the following "
    "multiple-choice question: \n\n"
)
TEXTONLY2_0SHOT_OPEN = (
    "You are an expert medical question-answering system. Your task is to provide an answer to the following question: \n\n"
)
TEXTONLY2_ICL_HEAD = (
    "You are an expert medical question-answering system. Here are some examples of questions and associated answers: \n\n"
)
TEXTONLY2_ICL_ITEM = "Question: {q}\nAnswer: {a}\n\n"
TEXTONLY2_ICL_MCQA = "Now, your task is to provide an answer to the following multiple-choice question: \n\n"
TEXTONLY2_ICL_OPEN = "Now, your task is to provide an answer to the following question: \n\n"
TEXTONLY_FOLLOW_UP = (
    "Based on your analysis above, what is your final answer? Please respond with just the letter (A, B, C, etc.) "
    "of the correct option. Format your answer as: <answer>X</answer> where X is the letter."
)


def mcqa_prompt(template: str, question: str, options_text: str) -> str:
    return template.format(question=question, options_text=options_text)
