"""End to end (issue #23): a tiny `hf:` checkpoint and the baselines through every ICL diagnostic variant of a
4-problem demo subset, `smmile analyze shots|flip|images|diagnostics`, and the report's sections."""

from __future__ import annotations

import json
import re
import shutil

import pytest

pytest.importorskip("transformers")

import tiny_generic as tg  # noqa: E402
import tiny_models  # noqa: E402
from smmile.cli import main as smmile  # noqa: E402
from smmile.cli.baselines import main as baselines  # noqa: E402

pytestmark = pytest.mark.slow

VARIANTS = {"k-shot-1": ["k-shot", "--k", "1"], "k-shot-2": ["k-shot", "--k", "2"], "flip-answers": ["flip-answers"],
            "no-example-images": ["no-example-images"], "no-query-image": ["no-query-image"]}
MODES = {"original": ("0-shot", "ICL"), "no-query-image": ("0-shot", "ICL")}  # others: ICL only
KEY = "Tiny-Idefics3"  # the model name, with or without its checkpoint's hash


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    root = tmp_path_factory.mktemp("diag")
    model = root / "Tiny Idefics3"
    shutil.copytree(tg.cached("idefics3"), model)
    datasets = {"original": str(tiny_models.demo_subset(4))}
    for label, args in VARIANTS.items():
        assert smmile(["data", "variant", *args, "--dataset", datasets["original"], "--out", str(root / "ds" / label)]) == 0
        datasets[label] = str(root / "ds" / label)
    for label, dataset in datasets.items():
        out = str(root / "res" / label)
        for mode in MODES.get(label, ("ICL",)):
            assert smmile(["run", "--model", f"hf:{model}", "--inference_mode", mode, "--task_format", "open",
                           "--dataset", dataset, "--output-dir", out, "--max-new-tokens", "4", "--dtype", "float32"]) == 0
        assert baselines(["--baseline", "majority", "--task_format", "mcqa", "--dataset", dataset, "--output-dir", out]) == 0
    return root


def analyze(root, kind: str, labels) -> dict:
    assert smmile(["analyze", kind, *[str(root / "res" / label) for label in labels], "--out", str(root / "an"),
                   "--n-boot", "200"]) == 0
    return json.loads((root / "an" / f"{kind}.json").read_text())


def test_every_variant_to_the_report(root, capsys):
    shots = analyze(root, "shots", ["original", "k-shot-1", "k-shot-2"])
    assert {s["label"] for s in shots["sets"]} == {"original", "k-shot-1", "k-shot-2"}  # read from the manifests
    points = [(r["point"], r["set"], r["mode"]) for r in shots["curve"] if r["model"].startswith(KEY)]
    assert points == [("0", "original", "0-shot"), ("1", "k-shot-1", "ICL"), ("2", "k-shot-2", "ICL"),
                      ("all", "original", "ICL")]
    assert {r["comparison"] for r in shots["summary"] if r["model"] == "majority"} == {"k-shot-1 − all examples",
                                                                                       "k-shot-2 − all examples"}
    assert all(r["n_problems"] == 4 and r["trend_ks"] == "1, 2" for r in shots["curve"])  # none shorter than 2
    for r in shots["summary"]:
        assert r["ci_low"] <= r["difference"] <= r["ci_high"] and r["n_pairs"] == 4
        assert r["accuracy_variant"] - r["accuracy_reference"] == pytest.approx(r["difference"])
    assert (root / "an" / "shots_curve.png").stat().st_size > 0
    flip = analyze(root, "flip", ["original", "flip-answers"])
    assert {(r["model"][:len(KEY)], r["comparison"]) for r in flip["summary"]} >= {
        (KEY, "flip-answers − 0-shot (0-shot)"), ("majority", "flip-answers − original (ICL)")}
    images = analyze(root, "images", ["original", "no-example-images", "no-query-image"])
    assert {r["variant"] for r in images["summary"] if r["model"].startswith(KEY)} == {
        "no-example-images ICL", "no-query-image 0-shot", "no-query-image ICL"}
    diag = analyze(root, "diagnostics", ["original", "flip-answers", "no-example-images", "no-query-image"])
    mine = next(r for r in diag["diagnostics"] if r["model"].startswith(KEY))
    assert mine["not_computed"] == "" and mine["gain_ci_low"] <= mine["gain"] <= mine["gain_ci_high"]
    majority = next(r for r in diag["diagnostics"] if r["model"] == "majority")
    assert "gain from examples" in majority["not_computed"]  # a baseline has no 0-shot run
    capsys.readouterr()
    assert smmile(["report", str(root / "res" / "original"), "--analyses", str(root / "an"),
                   "--out", str(root / "report")]) == 0
    page = (root / "report" / "index.html").read_text()
    section = page[page.index('id="analyses"'):]
    assert re.findall(r"<h3>ICL diagnostics: ([^<]*)</h3>", section) == [
        "shot curve (accuracy against the number of examples)", "flipped answers",
        "examples without images, blind query", "summary per model"]
    assert "shots_curve" in section and "not computed (missing runs)" in section


def test_shots_without_matplotlib_writes_tables_and_warns(root, tmp_path, monkeypatch, caplog):
    """Without the optional matplotlib the curve's figure is left out with a warning; the tables are written."""
    from smmile import plotting
    from smmile.errors import MissingDependency

    def missing():
        raise MissingDependency("matplotlib", "plots", why="figures")

    monkeypatch.setattr(plotting, "pyplot", missing)
    out = tmp_path / "an"
    assert smmile(["analyze", "shots", *[str(root / "res" / label) for label in ("original", "k-shot-1")],
                   "--out", str(out), "--n-boot", "50"]) == 0
    assert json.loads((out / "shots.json").read_text())["curve"]
    assert not (out / "shots_curve.png").exists()
    assert "the curve's figure was not drawn" in caplog.text and "matplotlib" in caplog.text
