"""Figures (smmile.scoring.plots): files exist, are PNG/SVG and non-trivial."""

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "inference_and_evaluation"))

pytest.importorskip("matplotlib")

from smmile.scoring import plots  # noqa: E402

PUBLISHED = ROOT.parent / "shared" / "published" / "smmile"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _bench():
    spec = importlib.util.spec_from_file_location("bench_variance", ROOT / "benchmarks" / "bench_variance.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def check_figure(path: Path, min_png: int = 15_000):
    assert path.exists(), path
    data = path.read_bytes()
    if path.suffix == ".png":
        assert data.startswith(PNG_MAGIC) and len(data) > min_png
    else:
        assert b"<svg" in data[:2000] and len(data) > 10_000


def stratification_file(path: Path):
    data = {}
    for key, shift in (("qwen72B:0-shot", 0), ("qwen72B:ICL", 10), ("gpt-4o:ICL", 20)):
        data[key] = {
            "flag_num_ICL_accuracy": {"0": 10.0 + shift} if key.endswith("0-shot") else {"3": 30.0 + shift, "10": 50.0, "2": 5.0},
            "flag_num_ICL_total": {"0": 111} if key.endswith("0-shot") else {"3": 50, "10": 11, "2": 50},
            "flag_num_ICL_correct": {"0": 11} if key.endswith("0-shot") else {"3": 15, "10": 5, "2": 2},
            "speciality_accuracy": {"radiology": 40.0 + shift, "pathology": 20.0},
            "speciality_total": {"radiology": 58, "pathology": 21},
            "speciality_correct": {"radiology": 23, "pathology": 4},
        }
    path.write_text(json.dumps(data))


def test_figures_on_synthetic_smmilepp(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    _bench().build_results_dir(results, n_files=12, n_rows=1038, seed=2)
    stratification_file(results / "model_stratification_llm.json")
    out = tmp_path / "figs"
    assert plots.main([str(results), "--out", str(out), "--n-boot", "500"]) == 0
    names = ["accuracy_llm", "accuracy_em", "accuracy_mcqa", "icl_gain",
             "stratification_llm_flag_num_ICL", "stratification_llm_speciality"]
    for name in names:
        for ext in ("png", "svg"):
            check_figure(out / f"{name}.{ext}")
    assert not (out / "stratification_em_speciality.png").exists()


def test_numeric_labels_sorted_numerically():
    assert plots._sorted_labels(["3", "10", "2"]) == ["2", "3", "10"]
    assert plots._sorted_labels(["true", "false"]) == ["true", "false"]


def test_default_out_is_figures_beside_results(tmp_path):
    assert plots.default_out(str(tmp_path / "results")) == str(tmp_path / "figures")


def test_bad_inputs(tmp_path, capsys):
    assert plots.main([str(tmp_path / "missing")]) == 2
    empty = tmp_path / "empty"
    empty.mkdir()
    assert plots.main([str(empty), "--out", str(tmp_path / "o")]) == 1
    (empty / "model_stratification_em.json").write_text("[1, 2]")
    assert plots.main([str(empty), "--out", str(tmp_path / "o")]) == 2
    assert "not a stratification file" in capsys.readouterr().err


@pytest.mark.skipif(not PUBLISHED.is_dir(), reason="published SMMILE outputs not available")
def test_published_heatmap_and_bars(tmp_path):
    out = tmp_path / "figs"
    assert plots.main([str(PUBLISHED), "--out", str(out), "--n-boot", "300", "--flags", "speciality",
                       "--formats", "png"]) == 0
    for name in ("accuracy_llm", "icl_gain", "stratification_em_speciality", "stratification_llm_speciality"):
        check_figure(out / f"{name}.png", min_png=40_000)
    assert not list(out.glob("*.svg"))
