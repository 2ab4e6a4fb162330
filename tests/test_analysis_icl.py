"""The ICL analyses that answer their question (issue #34, deliverable 5), on baseline runs over the demo data: the
shot curve over seeded nested draws leaves out short problems and carries a trend test recomputed here from the
result CSVs; the family of the sign-flip test's step-down minP adjustment is one research question, model and metric
(adding a model changes no other model's adjusted p; issue #31: p-values recomputed by brute force); a share of a non-positive gain is not given."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from smmile.cli import main as smmile
from smmile.cli.baselines import main as baselines
from smmile.data.load import load_problems
from signflip_brute import family, unit_values

KS, DRAWS = (1, 2, 3), (1, 2)


@pytest.fixture(scope="module")
def runs(tmp_path_factory, demo_dir):
    root = tmp_path_factory.mktemp("icl")
    sets = {"original": demo_dir / "smmile"}
    for k in KS:
        for d in DRAWS:
            out = root / "ds" / f"k{k}d{d}"
            assert smmile(["data", "variant", "k-shot", "--k", str(k), "--draw", str(d), "--dataset",
                           str(sets["original"]), "--out", str(out)]) == 0
            sets[f"k-shot-{k}-draw{d}"] = out
    for label, dataset in sets.items():
        for kind in ("majority", "random"):
            assert baselines(["--baseline", kind, "--task_format", "mcqa", "--dataset", str(dataset),
                              "--output-dir", str(root / "res" / label)]) == 0
    return root, sets


def analyze(root, kind, labels, out) -> dict:
    assert smmile(["analyze", kind, *[str(root / "res" / x) for x in labels], "--out", str(root / out),
                   "--n-boot", "100"]) == 0
    return json.loads((root / out / f"{kind}.json").read_text())


def test_shot_curve_over_draws_without_short_problems_and_its_trend(runs, demo_dir):
    root, sets = runs
    shots = analyze(root, "shots", list(sets), "an-shots")
    long_enough = [p.problem_id for p in load_problems(str(sets["original"])) if len(p.examples) >= max(KS)]
    rows = [r for r in shots["curve"] if (r["model"], r["metric"]) == ("majority", "MCQA")]
    assert [r["point"] for r in rows] == ["1", "2", "3", "all"] and {r["draws"] for r in rows} == {1, len(DRAWS)}
    assert all(r["n_problems"] == len(long_enough) for r in rows)
    scores = {}  # recomputed from the CSVs: per problem, the mean over draws at each k
    for k in KS:
        per_draw = [pd.read_csv(root / "res" / f"k-shot-{k}-draw{d}" / "result_majority_ICL_mcqa.csv")
                    .set_index("problem_id")["is_correct"].astype(float) for d in DRAWS]
        scores[k] = pd.concat(per_draw, axis=1).mean(axis=1).loc[long_enough]
    matrix = pd.DataFrame(scores).to_numpy()
    ks = np.array(KS, dtype=float)
    slopes = (matrix - matrix.mean(axis=1, keepdims=True)) @ (ks - ks.mean()) / ((ks - ks.mean()) ** 2).sum()
    assert rows[0]["trend_slope"] == pytest.approx(slopes.mean() * 100)
    assert rows[0]["trend_ks"] == "1, 2, 3" and rows[0]["trend_problems"] == len(long_enough)
    for r in rows:
        if r["point"] != "all":
            assert r["accuracy"] == pytest.approx(scores[int(r["point"])].mean() * 100)
    assert shots["correction"].startswith("Westfall-Young step-down minP (max-T on the sign-flip mid-p-values) "
                                          "within each family")
    by_format = {r["subset"] for r in shots["by_format"] if r["model"] == "majority"}
    formats = {p.query.fields["flag_answer_format"] for p in load_problems(str(sets["original"]))}
    assert by_format == {f"format: {f}" for f in formats}
    for r in shots["by_format"]:  # each subset's pairs are the problems of that format
        n = sum(p.query.fields["flag_answer_format"] == r["subset"][8:] for p in load_problems(str(sets["original"])))
        assert r["n_pairs"] <= n


def test_adding_a_model_leaves_the_others_adjusted_p(runs, tmp_path):
    root, sets = runs
    labels = ["original", "k-shot-1-draw1", "k-shot-2-draw1"]
    both = analyze(root, "shots", labels, "an-both")
    only = tmp_path / "only"
    for label in labels:
        only.joinpath(label).mkdir(parents=True)
        for f in (root / "res" / label).glob("result_majority_ICL_mcqa*"):
            only.joinpath(label, f.name).write_bytes(f.read_bytes())
    assert smmile(["analyze", "shots", *[str(only / x) for x in labels], "--out", str(tmp_path / "an"),
                   "--n-boot", "100"]) == 0
    alone = json.loads((tmp_path / "an" / "shots.json").read_text())["summary"]
    mine = [r for r in both["summary"] if (r["model"], r["metric"]) == ("majority", "MCQA")]
    adjusted = {r["comparison"]: r["p_adjusted"] for r in mine}
    assert adjusted and {r["comparison"]: r["p_adjusted"] for r in alone if r["metric"] == "MCQA"} == adjusted
    flips = pd.DataFrame(both["flips"])  # recomputed from the pairs' scores: sign flips of their base problems
    pairs = [flips[(flips["model"] == "majority") & (flips["metric"] == "MCQA") & (flips["comparison"] == r["comparison"])]
             for r in mine]
    p, minp = family([unit_values(f["score_variant"], f["score_reference"], f["base_problem_id"]) for f in pairs])
    assert [r["p_value"] for r in mine] == pytest.approx(p, abs=1e-12)
    assert [r["p_adjusted"] for r in mine] == pytest.approx(minp, abs=1e-12)
    assert {r["holm_family"] for r in both["summary"]} >= {"how many examples? majority MCQA",
                                                           "how many examples? random MCQA"}


def test_a_share_of_a_non_positive_gain_is_not_given():
    from smmile.analysis.diagnostics import _share

    s = {"seed": 0, "n_boot": 200, "level": 0.95}
    gain, kept = np.array([1.0, 1, 0, 1, 0, 1, 1, 0]), np.array([1.0, 0, 0, 1, 0, 0, 1, 0])
    share, low, high = _share(kept, gain, s)
    assert share == pytest.approx(kept.mean() / gain.mean() * 100) and low <= share <= high
    assert _share(kept, -gain, s) == (None, None, None) and _share(kept, 0 * gain, s) == (None, None, None)
