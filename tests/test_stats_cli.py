"""`smmile stats` (smmile.scoring.stats_run): estimates, clustering, paired comparisons, outputs."""

import importlib.util
import json
import math
import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "inference_and_evaluation"))

from smmile.cli import stats as stats_cli  # noqa: E402

PUBLISHED = ROOT.parent / "shared" / "published" / "smmile"


def _bench():
    spec = importlib.util.spec_from_file_location("bench_variance", ROOT / "benchmarks" / "bench_variance.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    root = tmp_path_factory.mktemp("pp")
    expected = _bench().build_results_dir(root, n_files=12, n_rows=1038, seed=5)
    return root, expected


def run(tmp_path, directory, *extra):
    out = tmp_path / "out"
    rc = stats_cli.main([str(directory), "--out", str(out), "--n-boot", "2000", *extra])
    est = pd.read_csv(out / "stats_estimates.csv")
    est = est[est.metric != "NOANS"]  # the paper's metrics (NOANS, scoring/refusal.py, is estimated, not compared)
    comp_path = out / "stats_comparisons.csv"
    comp = pd.read_csv(comp_path) if comp_path.exists() else None
    return rc, out, est, comp


def test_estimates_on_smmilepp_shape_are_clustered(synthetic, tmp_path):
    root, expected = synthetic
    rc, out, est, comp = run(tmp_path, root, "--compare", "icl")
    assert rc == 0
    assert len(est) == len(expected)
    for row in est.itertuples():
        correct, n = expected[(row.model, row.metric, row.mode)]
        assert row.accuracy == pytest.approx(100 * correct / n)
        assert row.n_rows == 1038 and row.n_problems == 111 and row.clustered
        assert row.ci_low < row.accuracy < row.ci_high
    json.loads((out / "stats_estimates.json").read_text())  # strict JSON (no NaN)
    tex = (out / "stats_table.tex").read_text()
    assert tex.split("\n")[2] == r"\midrule" and tex.endswith(r"\bottomrule")


def test_cluster_none_gives_narrower_intervals_on_correlated_data(synthetic, tmp_path):
    root, _ = synthetic
    _, _, clustered, _ = run(tmp_path / "a", root, "--compare", "none")
    _, _, iid, _ = run(tmp_path / "b", root, "--compare", "none", "--cluster", "none")
    assert not iid.clustered.any() and (iid.n_problems == 1038).all()
    wide = (clustered.ci_high - clustered.ci_low).mean()
    narrow = (iid.ci_high - iid.ci_low).mean()
    assert wide > 1.3 * narrow  # generator: strong per-base-problem effect


def test_icl_comparisons(synthetic, tmp_path):
    root, _ = synthetic
    _, _, est, comp = run(tmp_path, root, "--compare", "icl")
    assert set(comp.kind) == {"icl_vs_0shot"}
    assert (comp.mode_a == "ICL").all() and (comp.mode_b == "0-shot").all()
    for row in comp.itertuples():
        acc = est.set_index(["model", "metric", "mode"]).accuracy
        assert row.difference == pytest.approx(acc[(row.model_a, row.metric, "ICL")] - acc[(row.model_a, row.metric, "0-shot")])
        assert row.ci_low <= row.difference <= row.ci_high
        assert row.p_adjusted >= row.p_value - 1e-12
        assert (row.only_a_correct - row.only_b_correct) == pytest.approx(row.difference * row.n_pairs / 100)


def test_model_comparisons_and_holm_families(synthetic, tmp_path):
    root, _ = synthetic
    _, out, est, comp = run(tmp_path, root, "--compare", "all")
    models = comp[comp.kind == "model_vs_model"]
    groups = est.groupby(["metric", "mode"]).size()
    assert len(models) == sum(k * (k - 1) // 2 for k in groups)
    for kind, family in comp.groupby("kind"):  # each kind is its own family
        assert family.adjustment.str.endswith(f"within a family of {len(family)} comparison(s)").all()
    _, _, _, holm = run(tmp_path / "h", root, "--compare", "all", "--adjust", "holm")
    for _, family in holm.groupby("kind"):  # Holm stays available: on the sign-flip p-values
        m = family.p_value.notna().sum()
        smallest = family.p_value.idxmin()
        assert family.p_adjusted[smallest] == pytest.approx(min(1.0, m * family.p_value[smallest]))
    assert json.loads((out / "stats_comparisons.json").read_text())["settings"]["compare"] == "all"


def _write_mcqa(path, ids, correct):
    pd.DataFrame({"problem_id": ids, "is_correct": correct}).to_csv(path, index=False)


def test_pairing_is_an_inner_join_on_problem_id(tmp_path):
    root = tmp_path / "res"
    root.mkdir()
    _write_mcqa(root / "result_modelA_0-shot_mcqa.csv", ["p1", "p2", "p3", "p4"], [True, False, False, True])
    _write_mcqa(root / "result_modelA_ICL_mcqa.csv", ["p4", "p3", "p2", "p9"], [True, True, True, False])
    rc, _, est, comp = run(tmp_path, root, "--compare", "icl")
    assert rc == 0
    row = comp.iloc[0]
    assert (row.n_pairs, row.n_a, row.n_b) == (3, 4, 4)  # p2, p3, p4
    assert row.difference == pytest.approx(100 * (3 / 3 - 1 / 3))
    assert (row.only_a_correct, row.only_b_correct) == (2, 0)
    # issue #20: the McNemar score test (b − c)²/(b + c) on χ²₁, kept as p_score
    assert row.p_score == pytest.approx(math.erfc(math.sqrt((2 - 0) ** 2 / 2 / 2)))
    # issue #31: the exact sign-flip (here: sign) test, 2 of 2 discordant pairs favour ICL: 2 of 4 patterns; the
    # mid-p counts the observed pattern's tie by half: 1 of 4
    assert row.p_exact == pytest.approx(0.5, abs=1e-15) and row.p_method.startswith("sign-flip")
    assert row.p_value == pytest.approx(0.25, abs=1e-15) and "mid-p" in row.p_method


def test_bad_inputs(tmp_path, capsys):
    assert stats_cli.main([str(tmp_path / "missing")]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    empty = tmp_path / "empty"
    empty.mkdir()
    assert stats_cli.main([str(empty)]) == 2
    (empty / "result_x_ICL_mcqa.csv").write_text("problem_id,selected\na,B\n")
    _write_mcqa(empty / "result_y_ICL_mcqa.csv", ["a", "b"], [True, False])
    assert stats_cli.main([str(empty), "--out", str(tmp_path / "o"), "--n-boot", "100"]) == 1
    assert "is_correct" in capsys.readouterr().err


def test_deterministic(synthetic, tmp_path):
    root, _ = synthetic
    first = run(tmp_path / "1", root, "--compare", "icl")
    second = run(tmp_path / "2", root, "--compare", "icl")
    pd.testing.assert_frame_equal(first[2], second[2])
    pd.testing.assert_frame_equal(first[3], second[3])


@pytest.mark.skipif(not PUBLISHED.is_dir(), reason="published SMMILE outputs not available")
def test_published_estimates(tmp_path):
    rc, _, est, _ = run(tmp_path, PUBLISHED, "--compare", "none", "--failures", "wrong")  # the paper's rule
    assert rc == 0
    acc = est.set_index(["model", "metric", "mode"])
    assert round(acc.accuracy[("qwen72B", "LLM", "ICL")], 2) == 43.24  # spec §10.3
    assert round(acc.accuracy[("gpt-4o", "MCQA", "ICL")], 2) == 58.56
    assert not acc.clustered.any() and (acc.n_rows == 111).all()
    sd = math.sqrt(0.4324 * 0.5676 / 111) * 100
    assert acc.ci_high[("qwen72B", "LLM", "ICL")] - acc.ci_low[("qwen72B", "LLM", "ICL")] == pytest.approx(3.92 * sd, rel=0.15)
