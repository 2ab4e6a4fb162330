"""MCQA letter extractors E1-E4 (spec §2.4): each returns one character (normally an upper-case letter) or
``EXTRACTION_FAILED``. The quirks marked KEEP in the spec are replicated on purpose: IGNORECASE lets ``[A-Z]``
match lower case ("the answer is based" -> ``B``); a prompt's own ``<answer>Correct letter.</answer>`` example can
match (``.`` or ``C``); the standalone-capital fallback catches "I" / "A" in prose; E3 cuts at the last plain
``assistant``; E4 returns the first character inside ``<answer>`` (may be ``(``)."""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping

logger = logging.getLogger(__name__)

EXTRACTION_FAILED = "EXTRACTION_FAILED"

# The 21 patterns of E1/E2 (verbatim, in order). E3 uses patterns 3-14.
ANSWER_PATTERNS: tuple[str, ...] = (
    r"answer is:?\s*([A-Z])[.\s]", r"\banswer:?\s*([A-Z])[.\s]",
    r"\*\*Answer:\*\*\s*([A-Za-z])(?:\.\s*\w+|\.|\s+|$)",
    r"\*\*Answer\*\*:\s*([A-Za-z])(?:\.\s*\w+|\.|\s+|$)",
    r"\*Answer\*:\s*([A-Za-z])(?:\.\s*\w+|\.|\s+|$)",
    r"Answer:\s*([A-Za-z])(?:\.\s*\w+|\.|\s+|$)",
    r"The correct answer is\s*([A-Za-z])(?:\.\s*\w+|\.|\s+|$)",
    r"The answer(?:\s+is)?:?\s*([A-Za-z])(?:\.\s*\w+|\.|\s+|$)",
    r"The correct answer(?:\s+is)?:?\s*([A-Za-z])(?:\.\s*\w+|\.|\s+|$)",
    r"answer\s*is\s*([A-Za-z])(?:\.\s*\w+|\.|\s+|$)",
    r"([A-Za-z])\s*is the (?:correct )?answer",
    r"option\s*([A-Za-z])\b", r"choice\s*([A-Za-z])\b", r"select\s*([A-Za-z])\b",
    r"best answer is:?\s*([A-Z])[.\s]", r"choice\s*([A-Z])[.\s]", r"option\s*([A-Z])[.\s]",
    r"select\s*([A-Z])[.\s]", r"chose\s*([A-Z])[.\s]", r"choose\s*([A-Z])[.\s]", r"final answer:?\s*([A-Z])",
)
E3_PATTERNS: tuple[str, ...] = ANSWER_PATTERNS[2:14]

ASSISTANT_MARKERS = ("ASSISTANT:", "Assistant:", "assistant:", "ASSISTANT ", "Assistant ", "assistant ")
USER_MARKERS: tuple[str, ...] = ("USER:", "User:", "user:", "USER ", "User ", "user ")

_PATTERNS_RE = tuple(re.compile(p, re.IGNORECASE) for p in ANSWER_PATTERNS)
_E3_PATTERNS_RE = _PATTERNS_RE[2:14]
_TAG_RE = re.compile(r"<answer>(.*?)</answer>|<answer>(.*?)($|\n\n)", re.DOTALL)
_EMPHASIS_RE = re.compile(r"[*_](([A-Z])[*_])", re.IGNORECASE)
_CAPITAL_RE = re.compile(r"\b([A-Z])\b")
_UPPER_LETTER_RE = re.compile(r"([A-Z])")
_E3_TAG_RE = re.compile(r"<answer>([A-Za-z])</answer>", re.IGNORECASE)
_E4_TAG_RE = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)
_E4_LETTER_RE = re.compile(r"\b([A-J])\b")


def _after_assistant_marker(response: str) -> str | None:
    """Text after the last assistant marker (no two markers can start at one position), cut at the first user
    marker (in marker order); None when no assistant marker occurs."""
    pos, marker = max((response.rfind(m), m) for m in ASSISTANT_MARKERS)
    if pos == -1:
        return None
    text = response[pos + len(marker):].strip()
    cut = next((m for m in USER_MARKERS if m in text), None)
    return text if cut is None else text[: text.index(cut)].strip()


def _from_tag(text: str) -> str | None:
    """Step 3 of E1/E2: the first ``<answer>`` tag (closed or open-ended)."""
    match = _TAG_RE.search(text)
    if not match:
        return None
    candidate = (match.group(1) if match.group(1) is not None else match.group(2)).strip()
    if not candidate:
        return None
    letter = _UPPER_LETTER_RE.search(candidate.upper())
    return letter.group(1) if letter else candidate[0].upper()


def _from_patterns(text: str) -> str | None:
    """Steps 4-6 of E1/E2 on already stripped text."""
    for pattern in _PATTERNS_RE:
        match = pattern.search(text)
        if match:
            return match.group(1).upper()
    match = _EMPHASIS_RE.search(text)
    if match:
        return match.group(2).upper()
    match = _CAPITAL_RE.search(text)
    return match.group(1) if match else None


def _from_option_text(text: str, options: Mapping[str, str] | None) -> str | None:
    """Step 7: option text equal to, then contained in, ``text`` (display order)."""
    if not options or not text:
        return None
    lowered = text.lower()
    for letter, answer in options.items():
        option = str(answer).strip().lower()
        if option == lowered or (option and option in lowered):
            return letter
    return None


def _cascade(processed: str, fallback_text: str, options: Mapping[str, str] | None) -> str:
    result = _from_tag(processed) or _from_patterns(processed.strip()) or _from_option_text(fallback_text, options)
    if result is None:
        logger.debug("No answer pattern matched. Extraction failed.")
        return EXTRACTION_FAILED
    return result


def extract_e1(response: object, options: Mapping[str, str] | None = None) -> str:
    """E1: cascade with speaker markers (qwen, llava_mcqa, llavamed_mcqa, llama33textonly_mcqa)."""
    if not isinstance(response, str):
        return EXTRACTION_FAILED
    after_marker = _after_assistant_marker(response)
    processed = response if after_marker is None else after_marker
    return _cascade(processed, after_marker or "", options)


def extract_e2(response: object, options: Mapping[str, str] | None = None) -> str:
    """E2: cascade without speaker markers (anthropic, openai)."""
    if not isinstance(response, str):
        return EXTRACTION_FAILED
    return _cascade(response, response.strip(), options)


def extract_e3(response: object) -> str:
    """E3: ``<answer>X</answer>`` then patterns 3-14 (llama32v, medgemma)."""
    if not isinstance(response, str) or not response.strip():
        logger.debug("Empty or invalid response; extraction failed.")
        return EXTRACTION_FAILED
    pos = response.rfind("assistant")
    processed = response[pos + len("assistant"):].strip() if pos != -1 else response
    for pattern in (_E3_TAG_RE, *_E3_PATTERNS_RE):
        match = pattern.search(processed)
        if match:
            return match.group(1).upper()
    logger.debug("No answer pattern matched. Extraction failed.")
    return EXTRACTION_FAILED


def extract_e4(response: object) -> str:
    """E4: MedVLM-R1 extractor, applied to the generated text only."""
    if not isinstance(response, str):
        return EXTRACTION_FAILED
    match = _E4_TAG_RE.search(response)
    if match and match.group(1).strip():
        return match.group(1).strip()[0].upper()
    match = _E4_LETTER_RE.search(response)
    return match.group(1) if match else EXTRACTION_FAILED
