"""End to end: demo data -> every variant -> baselines through the front door -> `smmile analyze`."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from smmile.cli.baselines import main as baselines
from smmile.cli import main as smmile
from smmile.data.schema import MANIFEST
from smmile.data.variants import OPTION_VARIANTS

RUNS = [("random", "open"), ("majority", "mcqa")]


@pytest.fixture(scope="module")
def runs(tmp_path_factory, demo_dir) -> Path:
    root = tmp_path_factory.mktemp("e2e")
    datasets = {"original": str(demo_dir / "smmile")}
    for kind in OPTION_VARIANTS:
        assert smmile(["data", "variant", kind, "--dataset", "demo", "--out", str(root / "ds" / kind)]) == 0
        datasets[kind] = str(root / "ds" / kind)
    for label, dataset in datasets.items():
        for baseline, fmt in RUNS:
            assert baselines(["--baseline", baseline, "--task_format", fmt, "--dataset", dataset,
                              "--output-dir", str(root / "res" / label)]) == 0
    return root


def manifest(root: Path, kind: str) -> dict:
    return json.loads((root / "ds" / kind / MANIFEST).read_text())


def analyze(root: Path, kind: str, labels: list[str]) -> dict:
    out = root / "an"
    # labels are read from the run manifests (no LABEL=PATH needed)
    assert smmile(["analyze", kind, *[str(root / "res" / label) for label in labels],
                   "--out", str(out), "--n-boot", "300"]) == 0
    return json.loads((out / f"{kind}.json").read_text())


def test_noise(runs):
    report = analyze(runs, "noise", ["original", "noise-random", "noise-targeted"])
    assert {s["label"] for s in report["sets"]} == {"original", "noise-random", "noise-targeted"}
    rows = report["summary"]
    assert {(r["model"], r["metric"]) for r in rows} == {("random", "EM"), ("majority", "MCQA")}
    assert {r["variant"] for r in rows} == {"noise-random", "noise-targeted"}
    assert all(r["n_pairs"] == manifest(runs, "noise-random")["counts"]["problems"] for r in rows)
    flips = pd.read_csv(runs / "an" / "noise_flips.csv")
    for r in rows:
        mine = flips[(flips["model"] == r["model"]) & (flips["variant"] == r["variant"])]
        assert (mine["flip"] == "lost").sum() == r["lost"] and (mine["flip"] == "gained").sum() == r["gained"]
        assert r["accuracy_variant"] - r["accuracy_reference"] == pytest.approx(r["difference"])


def test_order(runs):
    report = analyze(runs, "order", ["original", "order-first", "order-last"])
    kept = manifest(runs, "order-first")["counts"]["problems"]
    assert {r["n_pairs"] for r in report["summary"]} == {kept}
    assert len(report["recency"]) == 2
    assert {"accuracy_original", "accuracy_first", "accuracy_last", "last_minus_first"} <= set(report["recency"][0])


def test_permutation(runs):
    report = analyze(runs, "permutation", ["original", "permute"])
    counts = manifest(runs, "permute")["counts"]
    for r in report["summary"]:
        assert (r["n_pairs"], r["n_problems"], r["clustered"]) == (counts["problems"], counts["source_problems"], True)
    assert {c["n_base"] for c in report["consistency"]} == {counts["source_problems"]}
