"""Unit tests for the MCQA letter extractors E1-E4 (spec §2.4), built from the spec's examples."""

from __future__ import annotations

import itertools
import re
import sys
from pathlib import Path

import pytest

try:
    from smmile.protocol import extract as ex
except ImportError:  # package not installed: run from a plain checkout
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "inference_and_evaluation"))
    from smmile.protocol import extract as ex

from smmile.protocol.extract import (
    ANSWER_PATTERNS,
    E3_PATTERNS,
    EXTRACTION_FAILED,
    extract_e1,
    extract_e2,
    extract_e3,
    extract_e4,
)

FAILED = EXTRACTION_FAILED

# Template A as it appears in a decoded prompt (§2.3): contains the prompt's own
# `<answer>...</answer>` and `<answer>Correct letter.</answer>`.
TEMPLATE_A = (
    "\nIs there a fracture?\n\nPlease select the best answer from the following options:\n"
    "B. No\nA. Yes\n\nYour task:\n1. Think through the question, enclose your reasoning process in "
    "<think>...</think> tags.\n2. Then provide the correct single-letter choice (A, B, C, D, E, F, ...) "
    "inside <answer>...</answer> tags.\nExample of the expected format:\n<think>This is my thought.</think>\n"
    "<answer>Correct letter.</answer>\n"
)


# --------------------------------------------------------------------------- constants


def test_constant():
    assert EXTRACTION_FAILED == "EXTRACTION_FAILED"


def test_pattern_list_is_verbatim_and_e3_is_patterns_3_to_14():
    assert len(ANSWER_PATTERNS) == 21
    assert ANSWER_PATTERNS[0] == r"answer is:?\s*([A-Z])[.\s]"
    assert ANSWER_PATTERNS[2] == r"\*\*Answer:\*\*\s*([A-Za-z])(?:\.\s*\w+|\.|\s+|$)"
    assert ANSWER_PATTERNS[13] == r"select\s*([A-Za-z])\b"
    assert ANSWER_PATTERNS[20] == r"final answer:?\s*([A-Z])"
    assert E3_PATTERNS == ANSWER_PATTERNS[2:14]
    assert len(E3_PATTERNS) == 12
    assert all(re.compile(p).groups == 1 for p in ANSWER_PATTERNS)


# --------------------------------------------------------------------------- non-str input


@pytest.mark.parametrize("bad", [None, 1, 1.5, b"<answer>A</answer>", ["A"], float("nan")])
@pytest.mark.parametrize("fn", [extract_e1, extract_e2, extract_e3, extract_e4])
def test_non_str_input_fails(fn, bad):
    assert fn(bad) == FAILED


@pytest.mark.parametrize("fn", [extract_e1, extract_e2])
def test_non_str_input_fails_with_options(fn):
    assert fn(None, {"A": "Yes"}) == FAILED


# --------------------------------------------------------------------------- E1 step 2: markers


def test_e1_text_after_last_assistant_marker():
    assert extract_e1("USER: q <answer>A</answer> ASSISTANT: <answer>B</answer>") == "B"


def test_e1_marker_with_largest_position_wins_regardless_of_list_order():
    # "assistant " is last in the list but occurs last in the text -> it wins.
    text = "ASSISTANT: <answer>A</answer> then assistant <answer>C</answer>"
    assert extract_e1(text) == "C"
    # "ASSISTANT:" is first in the list and occurs last -> it wins.
    text = "assistant <answer>A</answer> then ASSISTANT: <answer>D</answer>"
    assert extract_e1(text) == "D"


def test_e1_marker_ties_cannot_occur():
    # Tie-break rule (earlier marker in the list) is moot: no two distinct markers can
    # start at the same index, since they differ within their common length.
    for a, b in itertools.combinations(ex.ASSISTANT_MARKERS, 2):
        n = min(len(a), len(b))
        assert a[:n] != b[:n]
    # A text where "ASSISTANT:" and "ASSISTANT " both occur: the later one is used.
    assert extract_e1("ASSISTANT: <answer>A</answer> ASSISTANT <answer>B</answer>") == "B"


def test_e1_assistant_newline_is_not_a_marker():
    # Qwen/OneVision generation prompt "assistant\n": no marker -> whole response,
    # first tag in the text wins.
    assert extract_e1("<answer>A</answer>\nassistant\n<answer>B</answer>") == "A"


def test_e1_user_marker_list_order_not_text_order():
    # "User:" occurs first in the text, but "USER:" comes first in the marker list,
    # so truncation happens at "USER:" and "User: option C" survives (pattern 12).
    text = "ASSISTANT: maybe. User: option C is best. USER: bye"
    assert extract_e1(text) == "C"


def test_e1_user_marker_truncates_at_first_occurrence():
    # Truncated at the first "USER:" -> "I think" -> standalone capital "I".
    assert extract_e1("ASSISTANT: I think USER: option B USER: option C") == "I"


def test_e1_user_truncation_only_after_marker_found():
    # No assistant marker: full response, no user truncation.
    assert extract_e1("USER: what? <answer>E</answer>") == "E"


def test_e1_onevision_icl_marker_option_fallback_returns_last_icl_answer():
    # OneVision ICL turns contain "assistant " (with a space); the query turn uses
    # "assistant\n". The marker found is the one before the last ICL answer; after
    # truncation at "user " only "Yes" remains -> option-text fallback.
    options = {"B": "No", "A": "Yes"}
    text = (
        "user \nq1assistant \nNo\nuser \nq2assistant \nYes\nuser \n"
        + TEMPLATE_A
        + "assistant\nThe image shows no obvious break; so no."
    )
    assert extract_e1(text, options) == "A"
    assert extract_e1(text, None) == FAILED


# --------------------------------------------------------------------------- E1/E2 step 3: tag


@pytest.mark.parametrize("fn", [extract_e1, extract_e2])
@pytest.mark.parametrize(
    "text, expected",
    [
        ("<think>x</think>\n<answer>B</answer>", "B"),
        ("<answer> c </answer>", "C"),  # stripped and upper-cased
        ("<answer>Option b</answer>", "O"),  # first [A-Z] of candidate.upper()
        ("<answer>1</answer>", "1"),  # no letter -> first char
        ("<answer>...</answer>", "."),
        ("<answer>(d)</answer>", "D"),
        ("<think>y</think><answer>D\n\nMore text", "D"),  # open tag ended by blank line
        ("reasoning <answer> E", "E"),  # open tag to end of text
        ("<answer>\nF\n\n", "F"),
        ("<answer>A</answer> and later <answer>B</answer>", "A"),  # first tag
        ("<answer>\nC\n</answer>", "C"),  # DOTALL
    ],
)
def test_tag_step(fn, text, expected):
    assert fn(text) == expected


@pytest.mark.parametrize("fn", [extract_e1, extract_e2])
def test_empty_tag_continues_to_patterns(fn):
    assert fn("<answer></answer> The answer is C.") == "C"
    assert fn("<answer>  </answer>\n\nso option d") == "D"


def test_e1_prompt_own_answer_tag_gives_dot():
    # Full decode incl. prompt with no assistant marker (Qwen "assistant\n"):
    # the prompt's "<answer>...</answer>" is matched first -> ".".
    text = "system\nYou are helpful.\nuser\n" + TEMPLATE_A + "assistant\n<answer>B</answer>"
    assert extract_e1(text) == "."
    assert extract_e1(text, {"B": "No", "A": "Yes"}) == "."
    # With an ASSISTANT: marker (LLaVA-1.5), only the generated part is searched.
    assert extract_e1("USER:  \n" + TEMPLATE_A + " ASSISTANT: <answer>B</answer>") == "B"


def test_e2_prompt_own_answer_tag_gives_dot():
    assert extract_e2(TEMPLATE_A + "<answer>A</answer>") == "."


# --------------------------------------------------------------------------- step 4: patterns

# (pattern number 1-based, text that reaches exactly that pattern in the cascade, expected)
REACHABLE_PATTERN_CASES = [
    (1, "The answer is B.", "B"),
    (2, "Answer: C.", "C"),
    (3, "**Answer:** D", "D"),
    (4, "**Answer**: E", "E"),
    (5, "*Answer*: F", "F"),
    (6, "Answer: G", "G"),
    (7, "The correct answer is H", "H"),
    (8, "The answer is J", "J"),
    (9, "The correct answer K", "K"),
    (10, "My answer  is L", "L"),
    (11, "m is the correct answer", "M"),
    (12, "I pick option N", "N"),
    (13, "my choice p", "P"),
    (14, "i select q", "Q"),
    (19, "i chose r.", "R"),
    (20, "i choose t.", "T"),
    (21, "final answer v", "V"),
]


def _first_pattern_hit(text: str) -> int | None:
    for i, p in enumerate(ANSWER_PATTERNS, start=1):
        if re.search(p, text.strip(), re.IGNORECASE):
            return i
    return None


@pytest.mark.parametrize("number, text, expected", REACHABLE_PATTERN_CASES)
def test_cascade_reaches_pattern(number, text, expected):
    assert _first_pattern_hit(text) == number
    assert extract_e1(text) == expected
    assert extract_e2(text) == expected
    assert extract_e1("USER: q ASSISTANT: " + text) == expected


# Patterns 15-18 are shadowed: every text they match is matched earlier by
# pattern 1 (15) or 13/12/14 (16/17/18). They are still tested individually.
SHADOWED_PATTERN_CASES = [
    (15, 1, "the best answer is w.", "W"),
    (16, 13, "choice x.", "X"),
    (17, 12, "option y ", "Y"),
    (18, 14, "select z.", "Z"),
]


@pytest.mark.parametrize("number, shadow, text, expected", SHADOWED_PATTERN_CASES)
def test_shadowed_patterns_match_but_earlier_pattern_wins(number, shadow, text, expected):
    match = re.search(ANSWER_PATTERNS[number - 1], text, re.IGNORECASE)
    assert match and match.group(1).upper() == expected
    assert _first_pattern_hit(text) == shadow
    assert extract_e1(text) == expected


def test_every_pattern_matched_at_least_once():
    covered = {n for n, *_ in REACHABLE_PATTERN_CASES} | {n for n, *_ in SHADOWED_PATTERN_CASES}
    assert covered == set(range(1, 22))


def test_pattern_order_first_pattern_wins_not_first_position():
    # "option D" occurs first in the text but pattern 3 precedes pattern 12.
    assert extract_e1("option D looks odd. **Answer:** A") == "A"


@pytest.mark.parametrize("fn", [extract_e1, extract_e2])
def test_ignorecase_quirks(fn):
    # [A-Z] under IGNORECASE matches lower-case letters: the article "a" becomes A.
    assert fn("I think the answer is a fracture.") == "A"
    assert fn("the answer is b. Based on imaging") == "B"
    # "options"/"choices"/"selects" -> S via patterns 12/13/14.
    assert fn("looking at the options, none fit") == "S"
    assert fn("among the choices, none fit") == "S"
    assert fn("he selects nothing") == "S"
    # "final answer is ..." reaches pattern 21 only after the others; here pattern 8
    # is not reached ("The answer" absent) and 21 takes the "i" of "is".
    assert fn("final answer is unclear") == "I"


def test_the_answer_is_based_literal_patterns():
    # Spec §2.4 paraphrases this quirk as '"the answer is based…" -> B'. With the
    # verbatim patterns, "b" followed by "a" satisfies none of the trailing
    # constraints ([.\s], \.\s*\w+, \., \s+, $), so no pattern hits; the result
    # comes from the later steps. We pin down the verbatim-pattern behaviour.
    assert extract_e1("the answer is based on the image") == FAILED
    assert extract_e1("the answer is b ased on the image") == "B"


# --------------------------------------------------------------------------- steps 5-6


@pytest.mark.parametrize("fn", [extract_e1, extract_e2])
def test_emphasis(fn):
    assert fn("my pick: _d_") == "D"
    assert fn("my pick is **c**") == "C"
    assert fn("my pick: *b_") == "B"


@pytest.mark.parametrize("fn", [extract_e1, extract_e2])
def test_standalone_capital(fn):
    assert fn("I think it is fine") == "I"
    assert fn("it shows A lesion") == "A"
    assert fn("no capitals here at all") == FAILED
    assert fn("it shows a lesion") == FAILED  # case-sensitive step
    assert fn("Only Words Here") == FAILED  # capitals not standalone


# --------------------------------------------------------------------------- step 7: option text


OPTIONS = {"C": "Fracture", "A": "No fracture ", "B": "Yes"}


def test_e1_option_fallback_equality():
    assert extract_e1("USER: q ASSISTANT: yes", OPTIONS) == "B"
    assert extract_e1("USER: q ASSISTANT: no fracture", {"A": "No fracture ", "C": "x"}) == "A"


def test_e1_option_fallback_containment_in_display_order():
    # "fracture" (C, first in display order) is contained in "no fracture" and is
    # checked before A's exact equality.
    assert extract_e1("USER: q ASSISTANT: no fracture", OPTIONS) == "C"
    reordered = {"A": "No fracture ", "C": "Fracture", "B": "Yes"}
    assert extract_e1("USER: q ASSISTANT: no fracture", reordered) == "A"
    assert extract_e1("ASSISTANT: there is a small fracture here", OPTIONS) == "C"


def test_e1_option_fallback_requires_assistant_marker():
    assert extract_e1("yes", OPTIONS) == FAILED
    assert extract_e1("yes", None) == FAILED


def test_e1_option_fallback_uses_truncated_text():
    assert extract_e1("ASSISTANT: yes USER: no fracture", OPTIONS) == "B"


def test_e1_option_fallback_needs_options_and_text():
    assert extract_e1("ASSISTANT: yes", None) == FAILED
    assert extract_e1("ASSISTANT: yes", {}) == FAILED
    assert extract_e1("ASSISTANT:   ", OPTIONS) == FAILED
    assert extract_e1("ASSISTANT: maybe", {"A": "", "B": "  "}) == FAILED


def test_e2_option_fallback_whole_response():
    assert extract_e2("  yes \n", OPTIONS) == "B"
    assert extract_e2("no fracture", OPTIONS) == "C"
    assert extract_e2("no fracture", None) == FAILED
    assert extract_e2("unrelated", OPTIONS) == FAILED


def test_e2_ignores_speaker_markers():
    text = "USER: <answer>A</answer> ASSISTANT: <answer>B</answer>"
    assert extract_e2(text) == "A"
    assert extract_e1(text) == "B"


@pytest.mark.parametrize("fn", [extract_e1, extract_e2])
def test_whitespace_or_empty_fails(fn):
    assert fn("") == FAILED
    assert fn("   \n ") == FAILED
    assert fn("", OPTIONS) == FAILED


# --------------------------------------------------------------------------- E3


def test_e3_tag_single_letter():
    assert extract_e3("<think>t</think><answer>c</answer>") == "C"
    assert extract_e3("<ANSWER>b</ANSWER>") == "B"  # IGNORECASE on the tag too


def test_e3_cut_at_last_plain_assistant():
    text = "user\n\nq1<answer>A</answer>assistant\n\nB\nuser\n\nq<answer>X</answer>assistant\n\n<answer>C</answer>"
    assert extract_e3(text) == "C"
    # "assistants" contains the plain substring as well.
    assert extract_e3("<answer>A</answer> the assistants say <answer>D</answer>") == "D"
    # Case-sensitive: "ASSISTANT" is not a cut point.
    assert extract_e3("<answer>A</answer> ASSISTANT: <answer>D</answer>") == "A"
    # Nothing after the cut -> failure even though the text before has a tag.
    assert extract_e3("<answer>A</answer> assistant") == FAILED


def test_e3_tag_requires_single_letter():
    assert extract_e3("<answer> C</answer>") == FAILED
    assert extract_e3("<answer>C.</answer> **Answer:** B") == "B"


def test_e3_findall_first_hit_of_first_pattern_with_hits():
    assert extract_e3("Answer: B then Answer: C") == "B"
    assert extract_e3("option D looks odd. **Answer:** A") == "A"
    assert extract_e3("<answer>e</answer> **Answer:** A") == "E"


@pytest.mark.parametrize("number, text, expected", [c for c in REACHABLE_PATTERN_CASES if 3 <= c[0] <= 14])
def test_e3_patterns_3_to_14(number, text, expected):
    assert extract_e3(text) == expected


def test_e3_quirks():
    assert extract_e3("looking at the options, none fit") == "S"
    assert extract_e3("The answer is B.") == "B"  # pattern 8


def test_e3_does_not_use_patterns_1_2_15_21_emphasis_or_capitals():
    assert extract_e3("answer is: B.") == FAILED  # only pattern 1 matches
    assert extract_e1("answer is: B.") == "B"
    assert extract_e3("answer B.") == FAILED  # only pattern 2
    assert extract_e3("i chose r.") == FAILED  # pattern 19
    assert extract_e3("final answer v") == FAILED  # pattern 21
    assert extract_e3("my pick: _d_") == FAILED  # emphasis
    assert extract_e3("I think it is fine") == FAILED  # standalone capital


@pytest.mark.parametrize("text", ["", " ", "\n\t  "])
def test_e3_whitespace_only_fails(text):
    assert extract_e3(text) == FAILED


def test_e3_no_assistant_uses_whole_response():
    assert extract_e3("  <answer>f</answer>  ") == "F"


# --------------------------------------------------------------------------- E4


def test_e4_first_char_inside_tag():
    assert extract_e4("<think>x</think>\n<answer> (C)</answer>") == "("
    assert extract_e4("<answer>b) Yes</answer>") == "B"
    assert extract_e4("<answer>\nD\n</answer>") == "D"
    assert extract_e4("<answer>A</answer><answer>B</answer>") == "A"


def test_e4_standalone_a_to_j_fallback():
    assert extract_e4("<answer>  </answer> so B is right") == "B"
    assert extract_e4("I think so") == "I"  # "I" is within A-J
    assert extract_e4("<answer>C") == "C"  # unclosed tag: fallback finds standalone C
    assert extract_e4("option K, clearly") == FAILED  # K is outside A-J
    assert extract_e4("a lowercase b") == FAILED  # case-sensitive


def test_e4_failure():
    assert extract_e4("") == FAILED
    assert extract_e4("No letter here") == FAILED
