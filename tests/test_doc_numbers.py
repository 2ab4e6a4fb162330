"""Issue #20 item 10: the numbers the docs quote about the statistics come from scripts/doc_numbers.py."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _script():
    spec = importlib.util.spec_from_file_location("doc_numbers", REPO / "scripts" / "doc_numbers.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def numbers():
    script = _script()
    if not script.PUBLISHED.is_dir():
        pytest.skip("published SMMILE outputs not available")
    return script, script.compute()


def test_docs_quote_the_generated_numbers(numbers):
    script, values = numbers
    quoted = script.quoted()
    assert len(quoted) >= 20 and {key for _, key, _ in quoted} <= set(values)
    assert script.differences(values) == []


def test_a_typed_number_that_differs_is_caught(numbers, tmp_path):
    script, values = numbers
    doc = tmp_path / "deviations.md"
    text = (REPO / "docs" / "deviations.md").read_text()
    doc.write_text(text.replace(f"{values['llava13b_llm_p']}<!-- n:llava13b_llm_p -->", "0.119<!-- n:llava13b_llm_p -->"))
    assert script.differences(values, [doc]) == [f"deviations.md: llava13b_llm_p is 0.119 in the docs, "
                                                 f"{values['llava13b_llm_p']} from the outputs"]
    script.write(values, [doc])
    assert script.differences(values, [doc]) == []


def test_hand_checked_values(numbers):
    _, values = numbers
    assert values["wilson0_111"] == "3.35" and values["wilson0_86"] == "4.28"  # z²/(n + z²)
    assert values["neff_rho1"] == "51.0"  # 1038² / (27·2² + 24·6² + 35·24²)
    assert values["qwen7b_gold_mismatches"] == "18"  # spec §9 item 38
    assert values["smmile_icl_disagree"] == "0"


def test_no_stale_p_value_is_left():
    for name in ("analyses.md", "deviations.md"):
        assert "0.119" not in (REPO / "docs" / name).read_text()
