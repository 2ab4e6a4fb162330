"""MCQA options, templates and the canonical conversation, against spec §2.1-§2.3."""

import random

from smmile.protocol.conversation import MessageStyle, build_conversation, render_messages, user_images
from smmile.protocol.options import medr1_letter, medr1_options, options_text, shuffled_options, unique_answers
from smmile.protocol.problem import ImageRef, Problem, Row
from smmile.protocol.templates import MEDR1_OPEN, TEMPLATE_A, TEMPLATE_B, TEMPLATE_B_PUBLISHED, TEMPLATE_C, mcqa_prompt


def problem(answers, query_answer=None, pid="p1"):
    answers = list(answers) + ([query_answer] if query_answer is not None else [])
    rows = tuple(Row(pid, i, f"q{i}", a, ImageRef(bytes([i]), name=f"img{i}")) for i, a in enumerate(answers))
    return Problem(pid, rows)


def test_unique_answers_exact_string_first_occurrence():
    p = problem(["Yes", "No", "Yes ", "Yes", "No\n"], "Yes")
    assert unique_answers(p) == ["Yes", "No", "Yes ", "No\n"]


def test_letters_stay_with_answers_only_display_order_shuffles():
    p = problem(["White.", "Purple.", "Red."], "Black.")
    options, correct = shuffled_options(p, random.Random(42))
    assert sorted(options.items()) == [("A", "White."), ("B", "Purple."), ("C", "Red."), ("D", "Black.")]
    assert correct == "D"
    letters = ["A", "B", "C", "D"]
    random.Random(42).shuffle(letters)
    assert list(options) == letters  # one CPython shuffle of the letter list


def test_correct_letter_is_first_occurrence_and_independent_of_shuffle():
    p = problem(["Red.", "Black.", "Red."], "Red.")
    for seed in range(5):
        assert shuffled_options(p, random.Random(seed))[1] == "A"


def test_one_shuffle_per_problem_consumes_the_stream():
    rng, ref = random.Random(42), random.Random(42)
    probs = [problem(["a", "b", "c"], "a", pid=str(i)) for i in range(3)]
    orders = [list(shuffled_options(p, rng)[0]) for p in probs]
    expected = []
    for _ in probs:
        letters = ["A", "B", "C"]
        ref.shuffle(letters)
        expected.append(letters)
    assert orders == expected


def test_options_text_lines():
    assert options_text({"C": "Red.", "A": "White."}) == "C. Red.\nA. White."


def test_template_a_verbatim():
    text = mcqa_prompt(TEMPLATE_A, "What color?", "A. Red.\nB. Blue.")
    assert text == (
        "\nWhat color?\n\nPlease select the best answer from the following options:\nA. Red.\nB. Blue.\n\n"
        "Your task:\n1. Think through the question, enclose your reasoning process in <think>...</think> tags.\n"
        "2. Then provide the correct single-letter choice (A, B, C, D, E, F, ...) inside <answer>...</answer> tags.\n"
        "Example of the expected format:\n<think>This is my thought.</think>\n<answer>Correct letter.</answer>\n"
    )


def test_templates_b_and_c():
    assert TEMPLATE_B.endswith("<answer>X</answer>\nAlternatively:\nThe correct answer is X.\n")
    assert "(A, B, C, D, E, ...)" in TEMPLATE_B and "step by step" in TEMPLATE_B
    assert "(A, B, C, D, E,...)" in TEMPLATE_B_PUBLISHED
    assert TEMPLATE_C == TEMPLATE_B[: -len("Alternatively:\nThe correct answer is X.\n")]


def test_question_with_braces_is_kept():
    assert "{x}" in mcqa_prompt(TEMPLATE_A, "Is {x} set?", "A. y")


def test_medr1_options_and_substring_letter():
    p = problem(["Yes - Panel B", "No", "Yes "], "Yes")
    lines = medr1_options(p)
    assert lines == ["A) Yes - Panel B", "B) No", "C) Yes ", "D) Yes"]
    assert medr1_letter(lines, "Yes") == "A"  # KEEP: substring, not equality
    assert medr1_letter(lines, "No") == "B"


def test_medr1_open_template_indentation():
    assert MEDR1_OPEN.format(Question="Q?") == "\n        Q?\n\n        Please provide your response to this question.\n        "


def test_conversation_icl_and_zero_shot():
    p = problem(["a1", "a2"], "qa")
    icl = build_conversation(p, "ICL", "TARGET")
    assert [(t.role, t.text) for t in icl] == [("user", "q0"), ("assistant", "a1"), ("user", "q1"),
                                              ("assistant", "a2"), ("user", "TARGET")]
    assert [i.name for i in user_images(icl)] == ["img0", "img1", "img2"]
    zero = build_conversation(p, "0-shot", "T")
    assert len(zero) == 1 and zero[0].image.name == "img2"


def test_render_styles():
    p = problem(["a1"], "qa")
    turns = build_conversation(p, "ICL", "T")
    llama = render_messages(turns, MessageStyle(answer_suffix="\n"))
    assert llama[0]["content"][0] == {"type": "image"} and llama[1] == {"role": "assistant", "content": "a1\n"}
    gemma = render_messages(turns, MessageStyle(system="S", system_as_parts=True, image_first=False, answer_as_parts=True))
    assert gemma[0] == {"role": "system", "content": [{"type": "text", "text": "S"}]}
    assert gemma[1]["content"][0]["type"] == "text" and gemma[2]["content"] == [{"type": "text", "text": "a1"}]
    gpt = render_messages(turns, MessageStyle(system="S", image_first=False, answer_role="system", answer_as_parts=True))
    assert gpt[2]["role"] == "system"
