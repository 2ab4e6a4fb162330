"""End to end: the random baseline and a tiny random-weight LLaVA on the original, noise and order
variants -> `smmile analyze` -> `smmile report`.

Skipped where torch/transformers or the tiny-checkpoint builder are not available.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
tiny_models = pytest.importorskip("tiny_models")

from smmile.cli import main as smmile  # noqa: E402
from smmile.generation import GenerationSettings  # noqa: E402
from smmile.models import registry  # noqa: E402
from smmile.runner.run import RunSpec, run  # noqa: E402
from test_anymodel_runs import local_tag  # noqa: E402

pytestmark = pytest.mark.slow
LABELS = ("noise-random", "order-first", "order-last")


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    try:
        registry.get("llava_7b")
    except Exception as exc:  # the HF presets are not there
        pytest.skip(f"no llava_7b preset: {exc}")
    root = tmp_path_factory.mktemp("tiny")
    model = tiny_models.build("llava", root / "models")
    datasets = {"original": "demo"}
    for kind in LABELS:
        assert smmile(["data", "variant", kind, "--dataset", "demo", "--out", str(root / "ds" / kind)]) == 0
        datasets[kind] = str(root / "ds" / kind)
    for label, dataset in datasets.items():
        spec = RunSpec(model="llava_7b", mode="ICL", fmt="open", dataset=dataset, open_suffix=False,
                       output_dir=root / "res" / label, model_path=str(model),
                       generation=GenerationSettings(max_new_tokens=4), quiet=True)
        assert run(spec).exit_code == 0
        baseline = RunSpec(model="random", mode="ICL", fmt="open", dataset=dataset, open_suffix=False,
                           output_dir=root / "res" / label, quiet=True)
        assert run(baseline).exit_code == 0
    return root


def test_tiny_model_noise_and_order(runs):
    out = runs / "an"
    assert smmile(["analyze", "noise", *[str(runs / "res" / k) for k in ("original", LABELS[0])],
                   "--out", str(out), "--n-boot", "200"]) == 0
    assert smmile(["analyze", "order", *[str(runs / "res" / k) for k in ("original", *LABELS[1:])],
                   "--out", str(out), "--n-boot", "200"]) == 0
    noise = json.loads((out / "noise.json").read_text())
    tiny = local_tag(runs / "models" / "llava")  # a preset on another checkpoint is named after it (issue #36)
    assert {(r["model"], r["variant"]) for r in noise["summary"]} == {(tiny, LABELS[0]), ("random", LABELS[0])}
    kept = json.loads((runs / "ds" / "order-last" / "variant_manifest.json").read_text())["counts"]["problems"]
    order = json.loads((out / "order.json").read_text())
    assert {r["n_pairs"] for r in order["summary"]} == {kept} and len(order["recency"]) == 2  # two models

    report = runs / "report"
    assert smmile(["report", str(runs / "res" / "original"), "--analyses", str(out), "--out", str(report),
                   "--n-boot", "200"]) == 0
    page = (report / "index.html").read_text()
    assert f"llava #{tiny[-6:]} (LLaVA-v1.5-7B preset)" in page and "Random" in page
    assert "noise" in page.lower() and "recency" in page.lower()
