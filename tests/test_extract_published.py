"""Reproduce published MCQA extraction results (spec §11.4) with E1-E4.

Reads the shipped SMMILE result CSVs from ``<repo>/../shared/published/smmile``
(skipped when absent; nothing is copied into the repository). Rows whose stored
selection is ``ERROR`` (API/generation failures) are excluded.

What each check verifies, honestly:

* E3 (Llama-3.2-Vision 90B, MedGemma 4B) and E4 (MedVLM-R1): the stored
  ``full_response`` is exactly the text the script fed to the extractor (§2.5),
  so these are full reproductions.
* E1 on LLaVA-Med: ``full_response`` is the generated text only, which is what
  the script fed to E1. The options of the chunk are not stored (the prompt is
  not part of the response, and §2.1's options need the whole chunk). We therefore
  show that the option-text fallback (step 7) cannot have been reached with any
  options: every row either gets a result from steps 3-6 or has no assistant
  marker (E1's step-7 text is then empty). With that, E1(full_response, None)
  equals E1(full_response, options) for every possible options mapping.
* E1 on LLaVA-1.5 (13B, as in §11.4, plus 7B): the CSV stores the full decode
  (prompt + answer) but not ``generated_part``. We derive ``generated_part`` as the
  text after the ``ASSISTANT:`` that follows the last copy of the MCQA template's
  final line, and parse the displayed options from the query prompt contained in
  ``full_response``. We then run the §2.5 three-step sequence
  E1(gen, None) -> E1(gen, options) -> E1(full_response, options). The parsed
  options are cross-checked against ``generated_answer`` (§2.6).
* E2 on GPT-4o / Claude 3.7: the response is stored, the (unseeded) option order
  is not. We show step 7 is never reached (E2 with ``options=None`` already
  yields a letter for every row), so the result does not depend on the options.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pd = pytest.importorskip("pandas")

try:
    from smmile.protocol.extract import EXTRACTION_FAILED, extract_e1, extract_e2, extract_e3, extract_e4
except ImportError:  # package not installed: run from a plain checkout
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "inference_and_evaluation"))
    from smmile.protocol.extract import EXTRACTION_FAILED, extract_e1, extract_e2, extract_e3, extract_e4

from smmile.protocol import extract as ex

PUBLISHED = Path(__file__).resolve().parents[1].parent / "shared" / "published" / "smmile"

OPTIONS_HEADER = "Please select the best answer from the following options:\n"
OPTIONS_END = "\n\nYour task:\n"
TEMPLATE_A_LAST_LINE = "\n<answer>Correct letter.</answer>\n"


def _files(pattern: str, expected_count: int) -> list[Path]:
    if not PUBLISHED.is_dir():
        pytest.skip(f"published results not found at {PUBLISHED}")
    files = sorted(PUBLISHED.glob(pattern))
    assert len(files) == expected_count, f"{pattern}: {files}"
    return files


def _read(path: Path, column: str):
    frame = pd.read_csv(path, keep_default_na=False, dtype=str)
    return frame[frame[column] != "ERROR"].reset_index(drop=True)


def _mismatches(frame, column: str, extractor) -> list[tuple[str, str, str]]:
    got = frame["full_response"].map(extractor)
    bad = frame[got != frame[column]]
    return [(r.problem_id, r[column], got[i]) for i, r in bad.iterrows()]


@pytest.mark.parametrize("pattern", ["result_llama32_vision_90b_*_mcqa.csv", "result_medgemma_4b_*_mcqa.csv"])
def test_e3_reproduces_selected_option(pattern):
    for path in _files(pattern, 2):
        frame = _read(path, "selected_option")
        assert len(frame) == 111, path.name
        assert _mismatches(frame, "selected_option", extract_e3) == [], path.name


def test_e4_reproduces_medvlm_r1_extracted_answer():
    for path in _files("result_MedVLM-R1_*_mcqa.csv", 2):
        frame = _read(path, "extracted_answer")
        assert len(frame) == 111, path.name
        assert _mismatches(frame, "extracted_answer", extract_e4) == [], path.name


def test_e1_reproduces_llavamed_and_option_fallback_is_unreachable():
    for path in _files("result_llavamed_*_mcqa.csv", 2):
        frame = _read(path, "selected_option")
        assert len(frame) == 111, path.name
        assert _mismatches(frame, "selected_option", extract_e1) == [], path.name
        for response in frame["full_response"]:
            # Step 7 only matters if steps 1-6 failed AND an assistant marker exists.
            if extract_e1(response) == EXTRACTION_FAILED:
                assert ex._after_assistant_marker(response) is None, response


def _split_llava(full_response: str) -> tuple[dict[str, str], str]:
    """Parse (displayed options, generated_part) from a LLaVA-1.5 full decode.

    Options are the lines ``'{letter}. {answer}'`` of the last query prompt; a line
    not starting with a new letter continues the previous answer (answers may
    carry newlines, e.g. a trailing ``\\n``).
    """
    start = full_response.rindex(OPTIONS_HEADER) + len(OPTIONS_HEADER)
    end = full_response.index(OPTIONS_END, start)
    options: dict[str, str] = {}
    letter = None
    for line in full_response[start:end].split("\n"):
        if len(line) >= 3 and line[0].isupper() and line[1:3] == ". " and line[0] not in options:
            letter = line[0]
            options[letter] = line[3:]
        else:
            assert letter is not None, full_response
            options[letter] += "\n" + line
    assert sorted(options) == [chr(ord("A") + i) for i in range(len(options))]
    tail = full_response.rindex(TEMPLATE_A_LAST_LINE)
    marker = full_response.index("ASSISTANT:", tail) + len("ASSISTANT:")
    return options, full_response[marker:]


def _llava_sequence(full_response: str, options: dict[str, str], generated_part: str) -> str:
    """§2.5 llava_mcqa: E1(gen, None) -> E1(gen, options) -> E1(full, options)."""
    result = extract_e1(generated_part, None)
    if result == EXTRACTION_FAILED:
        result = extract_e1(generated_part, options)
    if result == EXTRACTION_FAILED:
        result = extract_e1(full_response, options)
    return result


@pytest.mark.parametrize("model", ["llava_13b", "llava_7b"])
def test_e1_three_step_sequence_reproduces_llava15(model):
    fallback_rows = 0
    for path in _files(f"result_{model}_*_mcqa.csv", 2):
        frame = _read(path, "selected_option")
        assert len(frame) == 111, path.name
        bad = []
        for row in frame.itertuples():
            options, generated_part = _split_llava(row.full_response)
            got = _llava_sequence(row.full_response, options, generated_part)
            if got != row.selected_option:
                bad.append((row.problem_id, row.selected_option, got))
            # Cross-check the parsed options against the stored generated_answer (§2.6).
            if row.selected_option in options:
                assert row.generated_answer == options[row.selected_option], row.problem_id
            else:
                assert row.generated_answer == f"INVALID_OPTION:{row.selected_option}", row.problem_id
            if extract_e1(generated_part, None) == EXTRACTION_FAILED and got != EXTRACTION_FAILED:
                fallback_rows += 1
        assert bad == [], path.name
    if model == "llava_13b":
        # §11.4: for 13B the result never depends on the options (plain E1 on the full decode matches).
        for path in _files(f"result_{model}_*_mcqa.csv", 2):
            frame = _read(path, "selected_option")
            assert _mismatches(frame, "selected_option", extract_e1) == [], path.name
        assert fallback_rows == 0
    else:
        # 7B: the option-text fallback (step 7 of the third call) is exercised.
        assert fallback_rows > 0


@pytest.mark.parametrize("model", ["gpt-4o", "claude-3-7-sonnet"])
def test_e2_reproduces_api_models_without_reaching_option_fallback(model):
    for path in _files(f"result_{model}_*_mcqa.csv", 2):
        frame = _read(path, "selected_option")
        assert len(frame) > 0
        # options=None: if step 7 were reached the result would be EXTRACTION_FAILED.
        assert _mismatches(frame, "selected_option", extract_e2) == [], path.name
        assert (frame["selected_option"] != EXTRACTION_FAILED).all(), path.name
