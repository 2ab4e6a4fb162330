"""Figures (`smmile figures`, smmile.plotting): PNG at 300 dpi + SVG with deterministic bytes,
text of at least 9 pt, display names only, small strata greyed, titles that match the data."""

import importlib.util
import json
import struct
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "inference_and_evaluation"))

pytest.importorskip("matplotlib")

from report_fixtures import svg_texts, svg_width_pt  # noqa: E402
from smmile.cli import main as smmile  # noqa: E402
from smmile.report.figures_only import default_out  # noqa: E402
from smmile import plotting
from smmile.scoring import stratify  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
PREFIX = "smmile-pp_"  # the folder's figures are <slug>_<name> whatever the number of folders (issue #20 item 9)


def _bench():
    spec = importlib.util.spec_from_file_location("bench_variance", ROOT / "benchmarks" / "bench_variance.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data.startswith(PNG_MAGIC)
    return struct.unpack(">II", data[16:24])


def stratification_file(path: Path):
    """qwen72B 0-shot/ICL and gpt-4o ICL; the 'pathology' and num_ICL '10' strata are small."""
    data = {}
    for key, shift in (("qwen72B:0-shot", 0), ("qwen72B:ICL", 10), ("gpt-4o:ICL", 20)):
        data[key] = {
            "flag_num_ICL_accuracy": {"0": 10.0 + shift} if key.endswith("0-shot") else {"3": 30.0 + shift, "10": 50.0, "2": 5.0},
            "flag_num_ICL_total": {"0": 111} if key.endswith("0-shot") else {"3": 50, "10": 11, "2": 50},
            "flag_num_ICL_correct": {"0": 11} if key.endswith("0-shot") else {"3": 15, "10": 5, "2": 2},
            "speciality_accuracy": {"radiology": 40.0 + shift, "pathology": 37.5},
            "speciality_total": {"radiology": 58, "pathology": 9},
            "speciality_correct": {"radiology": 23, "pathology": 2},
        }
    path.write_text(json.dumps(data))
    flags = ["flag_num_ICL", "speciality"]
    intervals = {key: stratify.stratum_intervals(strata, flags) for key, strata in data.items()}
    for by_flag in intervals.values():  # as stratify.py writes them for SMMILE++ rows (this folder's)
        for entry in (e for by_label in by_flag.values() for e in by_label.values()):
            entry["method"] = "cluster percentile bootstrap"
    path.with_name(path.stem + "_ci.json").write_text(json.dumps(intervals))


@pytest.fixture(scope="module")
def figures(tmp_path_factory):
    root = tmp_path_factory.mktemp("figs")
    results = root / "results"
    results.mkdir()
    _bench().build_results_dir(results, n_files=12, n_rows=1038, seed=2)
    stratification_file(results / "model_stratification_llm.json")
    out = root / "figs"
    assert smmile(["figures", str(results), "--out", str(out), "--n-boot", "500"]) == 0
    return results, out


def test_files_png_300dpi_and_svg(figures):
    _, out = figures
    names = ["accuracy_llm", "accuracy_em", "accuracy_mcqa", "icl_gain",
             "stratification_llm_flag_num_ICL", "stratification_llm_speciality"]
    for name in (PREFIX + n for n in names):
        svg = (out / f"{name}.svg").read_text()
        width, _ = png_size(out / f"{name}.png")
        assert abs(width - svg_width_pt(svg) / 72 * plotting.DPI) <= 2, name  # 300 dpi at the SVG's size
        assert svg_width_pt(svg) <= plotting.MAX_WIDTH * 72
    assert not (out / f"{PREFIX}stratification_em_speciality.png").exists()


def test_text_at_least_9pt_and_editable(figures):
    _, out = figures
    for svg in out.glob("*.svg"):
        texts = svg_texts(svg.read_text())
        assert texts, f"{svg.name}: text is kept as text"
        assert min(size for _, size in texts) >= plotting.MIN_FONT, svg.name


def test_display_names_only(figures):
    _, out = figures
    words = {t for svg in out.glob("*.svg") for t, _ in svg_texts(svg.read_text())}
    assert {"Qwen2.5-VL-72B", "GPT-4o", "MedVLM-R1", "Majority", "Random"} <= words
    assert not words & {"qwen72B", "qwen72B:ICL", "gpt-4o", "gpt-4o:ICL", "majority", "random (baseline)"}


def test_small_strata_left_out(figures):
    """'pathology' (9 problems for every model) is left out of the map, not hatched (issue #20 item 9: most
    cells were hatched); the title says a column was left out; 0-shot is left out of the num_ICL map (one
    label only), and its '10' stratum (11 problems) too."""
    _, out = figures
    svg = (out / f"{PREFIX}stratification_llm_speciality.svg").read_text()
    texts = [t for t, _ in svg_texts(svg)]
    assert "radiology (n=58)" in texts and not any(t.startswith("pathology") for t in texts)
    assert "<pattern" not in svg and not any(t.startswith("fewer than 20 ") for t in texts)
    assert "left out" in " ".join(texts)
    assert "38" not in texts  # the small stratum's accuracy (37.5) is not printed
    assert {"40", "50", "60"} <= set(texts)
    icl = [t for t, _ in svg_texts((out / f"{PREFIX}stratification_llm_flag_num_ICL.svg").read_text())]
    assert "ICL" in icl and "0-shot" not in icl and "10 (n=11)" not in icl and "3 (n=50)" in icl


def test_titles_match_the_data(figures):
    _, out = figures
    texts = [t for t, _ in svg_texts((out / f"{PREFIX}accuracy_mcqa.svg").read_text())]
    start = next(i for i, t in enumerate(texts) if t.startswith("MCQA"))
    title = " ".join(texts[start:start + 3])  # a long title is wrapped over lines
    assert "0-shot vs ICL" in title and "1038 rows" in title and "base problems" in title


def test_same_inputs_same_bytes(figures, tmp_path):
    results, out = figures
    again = tmp_path / "again"
    assert smmile(["figures", str(results), "--out", str(again), "--n-boot", "500"]) == 0
    for path in out.glob("*.*g"):
        assert (again / path.name).read_bytes() == path.read_bytes(), path.name


def test_default_out_is_figures_beside_results(tmp_path):
    assert default_out(str(tmp_path / "results")) == str(tmp_path / "figures")


def test_bad_inputs(tmp_path, capsys):
    assert smmile(["figures", str(tmp_path / "missing")]) == 2
    empty = tmp_path / "empty"
    empty.mkdir()
    assert smmile(["figures", str(empty), "--out", str(tmp_path / "o")]) == 1
    file_out = tmp_path / "file"
    file_out.write_text("x")
    assert smmile(["figures", str(empty), "--out", str(file_out)]) == 2
    err = capsys.readouterr().err
    assert "not found" in err and "nothing to plot" in err and "is a file" in err and "Traceback" not in err


def test_stages_and_ctrl_c(figures, tmp_path, monkeypatch, capsys):
    results, _ = figures
    assert smmile(["figures", str(results), "--out", str(tmp_path / "a"), "--n-boot", "50", "--formats", "svg",
                   "--flags", "speciality"]) == 0
    err = capsys.readouterr().err
    assert "smmile figures [" in err and "statistics for" in err and "figures: " in err
    assert sorted(p.name for p in (tmp_path / "a").glob("*strat*")) == [f"{PREFIX}stratification_llm_speciality.svg"]

    def interrupted(job):
        raise KeyboardInterrupt

    monkeypatch.setattr(plotting, "draw", interrupted)
    assert smmile(["figures", str(results), "--out", str(tmp_path / "b"), "--n-boot", "50", "--jobs", "1"]) == 130
    err = capsys.readouterr().err
    assert "interrupted" in err and "journal" not in err and "Traceback" not in err


def test_published_figures(published, tmp_path):
    out = tmp_path / "figs"
    assert smmile(["figures", str(published), "--out", str(out), "--n-boot", "300", "--flags", "speciality",
                   "image_type", "--formats", "svg"]) == 0
    words = {t for svg in out.glob("*.svg") for t, _ in svg_texts(svg.read_text())}
    assert {"Qwen2.5-VL-72B", "LLaVA-v1.5-7B", "Text only*", "LLaVA-Med**"} <= words
    assert not words & {"qwen72B", "llava_7B", "llama33textonly (baseline)", "qwen72B:ICL", "llavamed_7B"}
    assert "EEG (n=1)" not in words and "MRI (n=1)" not in words  # below 20 problems: left out of the map
    assert any("left out" in t for t in words)


def _luminance(hex_colour: str) -> float:
    r, g, b = (int(hex_colour[i:i + 2], 16) / 255 for i in (1, 3, 5))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def test_colours_read_in_grayscale():
    """The heatmap scale (cividis) gets lighter monotonically; the two modes' bars differ in lightness,
    and series differ by marker shape as well as colour (Okabe-Ito)."""
    import matplotlib

    scale = [_luminance(matplotlib.colors.to_hex(matplotlib.colormaps["cividis"](x / 20))) for x in range(21)]
    assert all(b > a for a, b in zip(scale, scale[1:]))
    assert abs(_luminance(plotting.MODE_COLOURS["0-shot"]) - _luminance(plotting.MODE_COLOURS["ICL"])) > 0.2
    assert len(set(plotting.SERIES_MARKERS)) == len(plotting.SERIES_MARKERS) == len(set(plotting.SERIES_COLOURS))


def test_default_folder_with_only_its_gitkeep(figures, tmp_path):
    """`smmile figures ../results` writes into the repository's figures/, which holds only .gitkeep."""
    import shutil

    results, _ = figures
    copy = tmp_path / "results"
    shutil.copytree(results, copy)
    (tmp_path / "figures").mkdir()
    (tmp_path / "figures" / ".gitkeep").write_text("")
    assert smmile(["figures", str(copy), "--n-boot", "50", "--formats", "svg", "--flags", "speciality"]) == 0
    assert (tmp_path / "figures" / f"{PREFIX}accuracy_llm.svg").is_file() and (tmp_path / "figures" / ".gitkeep").exists()
    (tmp_path / "figures2").mkdir()
    (tmp_path / "figures2" / "draft.svg").write_text("mine")
    assert smmile(["figures", str(copy), "--out", str(tmp_path / "figures2"), "--n-boot", "50"]) == 2


def test_warnings_named_and_exit_1(figures, tmp_path, capsys):
    """A SMMILE++ stratification without its _ci file is drawn, counted in rows, and said so."""
    import shutil

    results, _ = figures
    copy = tmp_path / "results"
    shutil.copytree(results, copy)
    (copy / "model_stratification_llm_ci.json").unlink()
    assert smmile(["figures", str(copy), "--out", str(tmp_path / "o"), "--n-boot", "50", "--formats", "svg"]) == 1
    assert "strata are counted in rows, not base problems" in capsys.readouterr().err


def test_no_text_runs_off_its_figure():
    """A long title over one model (the demo report's case) wraps instead of being cut at the edge."""
    title = "LLM-as-a-judge accuracy: 0-shot vs ICL (SMMILE; n = 24 problems, 95% percentile bootstrap)"
    figures = [
        plotting.bars_figure([{"label": "toy", "values": {"0-shot": [33.3, 16.7, 54.2], "ICL": [50.0, 29.2, 70.8]}}],
                          ["0-shot", "ICL"], title, "accuracy (%)"),
        plotting.heatmap_figure([{"title": "ICL", "columns": ["a (n=3)"], "values": [[50.0]], "small": [[False]]}],
                             ["toy"], title + title, "fewer than 20 problems"),
    ]
    for fig in figures:
        fig.canvas.draw()
        box = fig.bbox
        for text in fig.findobj(lambda a: hasattr(a, "get_text") and hasattr(a, "get_window_extent")):
            if not text.get_visible() or not text.get_text().strip():
                continue
            extent = text.get_window_extent()
            assert extent.x0 >= box.x0 - 1 and extent.x1 <= box.x1 + 1, text.get_text()
        plotting.pyplot().close(fig)
