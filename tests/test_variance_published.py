"""variance_analysis on the published SMMILE outputs (spec §10.3 raw accuracies, §7.3/§7.4 formats)."""

import math
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "inference_and_evaluation"))

from smmile.cli import variance as variance_cli  # noqa: E402
from smmile.scoring import variance  # noqa: E402

PUBLISHED = Path(__file__).resolve().parents[1].parent / "shared" / "published" / "smmile"
N = 111
COLUMNS = ["LLM 0-shot", "LLM ICL", "EM 0-shot", "EM ICL", "MCQA 0-shot", "MCQA ICL"]

# Spec §10.3, SMMILE (n = 111): raw accuracies in %, None = "–" (no such file).
SMMILE_RAW = {
    "MedVLM-R1": (25.23, 26.13, 3.60, 15.32, 36.04, 27.03),
    "claude-3-7-sonnet": (36.94, 36.04, 0.00, 2.70, 55.86, 42.34),
    "gpt-4o": (32.43, 49.55, 0.00, 9.01, 49.55, 58.56),
    "llama32_vision_90b": (31.53, 40.54, 0.00, 30.63, 54.95, 29.73),
    "text only": (5.41, 16.22, 0.00, 5.41, 38.74, 28.83),
    "llava_13b": (20.72, 21.62, 0.00, 19.82, 38.74, 25.23),
    "llava_7b": (15.32, 18.92, 0.00, 16.22, 40.54, 22.52),
    "llavamed": (22.52, 9.91, 0.00, 0.00, 0.00, 0.00),
    "llavanext_7b": (11.71, 23.42, 0.00, 2.70, 37.84, 28.83),
    "llavaonevision_0.5b": (18.02, 21.62, 2.70, 13.51, 44.14, 32.43),
    "llavaonevision_7b": (16.22, 24.32, 3.60, 22.52, 39.64, 27.03),
    "majority": (None, 27.03, None, 27.03, None, 24.32),
    "medgemma_4b": (27.93, 36.94, 0.00, 11.71, 41.44, 40.54),
    "qwen32B": (25.23, 41.44, 0.00, 31.53, 51.35, 49.55),
    "qwen3B": (27.03, 33.33, 0.00, 26.13, 37.84, 27.03),
    "qwen72B": (29.73, 43.24, 0.00, 16.22, 52.25, 54.95),
    "qwen7B": (18.02, 28.83, 0.00, 22.52, 38.74, 45.05),
    "random": (None, 23.42, None, 23.42, None, 36.04),
}
LATEX_NAMES = {"majority": "Majority", "random": "Random", "text only": r"Text only$^*$",
               "qwen72B": "Qwen2.5-VL-72B", "llavanext_7b": "LLaVa-v1.6-Mistral-7B",
               "medgemma_4b": "MedGemma 4B Multimodal", "llavamed": r"LLaVA-Med$^{**}$"}

pytestmark = pytest.mark.skipif(not PUBLISHED.is_dir(), reason="published SMMILE outputs not available")


def parse_table(text: str) -> dict:
    """{model: [cell, ...]} with cells as (mean, std|None) or None for '-'."""
    lines = text.split("\n")
    rows = {}
    for line in lines[2:]:
        model, *cells = line.split(" & ")
        rows[model] = [None if c == "-" else tuple(float(x) for x in c.split(" ± ")) for c in cells]
    return rows


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    out = tmp_path_factory.mktemp("variance")
    mean_rc = variance_cli.main([str(PUBLISHED), "--mean_only", "--output", str(out / "mean.txt")])
    boot_rc = variance_cli.main([str(PUBLISHED), "--generate_table", "--output", str(out / "boot.txt"),
                             "--latex_output", str(out / "latex.tex")])
    return {"mean_rc": mean_rc, "boot_rc": boot_rc, "mean": (out / "mean.txt").read_text(encoding="utf-8"),
            "boot": (out / "boot.txt").read_text(encoding="utf-8"),
            "latex": (out / "latex.tex").read_text(encoding="utf-8")}


def present_models():
    return {tag for tag in SMMILE_RAW
            if any(PUBLISHED.glob(f"result_{'llama33textonly' if tag == 'text only' else tag}_*.csv"))}


def test_mean_only_reproduces_raw_accuracy_table(runs):
    assert runs["mean_rc"] == 0
    table = parse_table(runs["mean"])
    models = present_models()
    assert models and set(table) == models
    for model in models:
        got = [None if c is None else round(c[0], 2) for c in table[model]]
        assert got == list(SMMILE_RAW[model]), model


def test_text_table_format(runs):
    lines = runs["boot"].split("\n")
    assert lines[0] == "Model Name || LLM, 0-shot || LLM, ICL || EM, 0-shot || EM, ICL || MCQA, 0-shot || MCQA, ICL"
    assert lines[1] == "-" * 91
    assert not runs["boot"].endswith("\n")
    order = [line.split(" & ")[0] for line in lines[2:]]
    priority = [m for m in ("majority", "random", "text only") if m in order]
    assert order == priority + sorted(set(order) - set(priority))
    cell = re.compile(r"^(-|\d+\.\d\d ± \d+\.\d\d)$")
    for line in lines[2:]:
        assert all(cell.match(c) for c in line.split(" & ")[1:]), line


def test_bootstrap_means_and_stds_are_close_to_binomial(runs):
    table = parse_table(runs["boot"])
    for model, cells in table.items():
        for column, cell, raw in zip(COLUMNS, cells, SMMILE_RAW[model]):
            assert (cell is None) == (raw is None), (model, column)
            if cell is None:
                continue
            mean, std = cell
            p = raw / 100
            assert abs(mean - raw) < 0.5 + 0.01, (model, column)
            assert abs(std - 100 * math.sqrt(p * (1 - p) / N)) < 0.3, (model, column)


def test_latex_structure(runs):
    latex = runs["latex"]
    assert not latex.endswith("\n")
    lines = latex.split("\n")
    priority = [m for m in ("majority", "random", "text only") if m in present_models()]
    assert lines[len(priority)] == r"\midrule" and lines[-1] == r"\bottomrule"
    assert len(lines) == len(present_models()) + 2
    names = [line.split(" & ")[0] for line in lines if " & " in line]
    for model, name in LATEX_NAMES.items():
        if model in present_models():
            assert name in names
    assert all("_" not in n for n in names)
    cell = re.compile(r"^(-|\$\d+\.\d\d \\pm \\scriptstyle\{\d+\.\d\d\}\$)$")
    for line in lines:
        if " & " in line:
            assert line.endswith(r" \\")
            assert all(cell.match(c) for c in line[: -len(r" \\")].split(" & ")[1:]), line


def test_faithful_run_is_deterministic_for_a_given_file_order(runs, tmp_path):
    files = variance.list_csvs(str(PUBLISHED), sort=True)
    first = variance.analyse(files).results
    assert variance.analyse(files).results == first
