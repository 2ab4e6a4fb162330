"""§7.3 / §7.4 table formats on hand-made results (edge cases: inf, None std, mean-only, ordering)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "inference_and_evaluation"))

from smmile.scoring import tables  # noqa: E402

INF = float("inf")
RESULTS = {
    "qwen7B": {"LLM": {"ICL": (40.912, 1.5149)}, "MCQA": {"0-shot": (INF, INF)}},
    "text only": {"EM": {"0-shot": (0.0, 0.0), "unknown": (5.0, 1.0)}},
    "MedVLM-R1": {"EM": {"ICL": (24.3249, None)}},
    "majority": {"MCQA": {"ICL": (16.749, 1.1651)}},
    "my_model": {"LLM": {"0-shot": (12.0, INF)}},
}


def test_text_table_exact():
    expected = "\n".join([
        "Model Name || LLM, 0-shot || LLM, ICL || EM, 0-shot || EM, ICL || MCQA, 0-shot || MCQA, ICL",
        "-" * 91,
        "majority & - & - & - & - & - & 16.75 ± 1.17",
        "text only & - & - & 0.00 ± 0.00 & - & - & -",
        "MedVLM-R1 & - & - & - & 24.32 & - & -",
        "my_model & 12.00 & - & - & - & - & -",
        "qwen7B & - & 40.91 ± 1.51 & - & - & - & -",
    ])
    assert tables.text_table(RESULTS) == expected


def test_text_table_mean_only_and_empty():
    assert tables.text_table(RESULTS, mean_only=True).split("\n")[2] == "majority & - & - & - & - & - & 16.75"
    assert tables.text_table({}) == "No results found."


def test_latex_table_exact():
    expected = "\n".join([
        r"Majority & - & - & - & - & - & $16.75 \pm \scriptstyle{1.17}$ \\",
        r"Text only$^*$ & - & - & $0.00 \pm \scriptstyle{0.00}$ & - & - & - \\",
        r"\midrule",
        r"MedVLM-R1 & - & - & - & $24.32$ & - & - \\",
        r"my-model & $12.00$ & - & - & - & - & - \\",
        r"Qwen2.5-VL-7B & - & $40.91 \pm \scriptstyle{1.51}$ & - & - & - & - \\",
        r"\bottomrule",
    ])
    assert tables.latex_table(RESULTS) == expected


def test_latex_midrule_always_and_names():
    assert tables.latex_table({"gpt-4o": {}}) == "\\midrule\nGPT-4o & - & - & - & - & - & - \\\\\n\\bottomrule"
    assert tables.latex_name("llavanext_7b") == "LLaVa-v1.6-Mistral-7B"
    assert tables.latex_name("llama4_17b") == "llama4-17b"
    assert tables.latex_table({}, mean_only=True) == "\\midrule\n\\bottomrule"


def test_ci_latex_table():
    rows = [{"model": "random", "metric": "MCQA", "mode": "ICL", "accuracy": 36.04, "ci_low": 27.03, "ci_high": 45.05},
            {"model": "qwen72B", "metric": "LLM", "mode": "0-shot", "accuracy": 29.73,
             "ci_low": float("nan"), "ci_high": float("nan")}]
    assert tables.ci_latex_table(rows).split("\n") == [
        r"Random & - & - & - & - & - & $36.04$ {\scriptsize [27.03, 45.05]} \\",
        r"\midrule",
        r"Qwen2.5-VL-72B & $29.73$ & - & - & - & - & - \\",
        r"\bottomrule",
    ]
