"""`smmile analyze`: paired comparisons of the original vs noise / order / permutation result sets."""

from __future__ import annotations

import json
from pathlib import Path
from statistics import NormalDist

import pandas as pd
import pytest

from smmile.analysis import result_sets as rs
from smmile.cli.analyze import main as analyze_main
from smmile.analysis.variants import analyse
from smmile.errors import UserError
from signflip_brute import family, unit_values

N_BOOT = 500
SETTINGS = {"n_boot": N_BOOT, "seed": 0, "level": 0.95}


def write_open(folder: Path, name: str, correct: dict[str, int]) -> Path:
    """An open-format result CSV whose rows are right (1) or wrong (0) as given."""
    folder.mkdir(parents=True, exist_ok=True)
    rows = [{"problem_id": pid, "final_question": "q?", "true_answer": "Yes",
             "generated_answer": "Yes" if ok else "No", "full_response": "x"} for pid, ok in correct.items()]
    path = folder / f"result_{name}_ICL.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def write_mcqa(folder: Path, name: str, correct: dict[str, int]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    rows = [{"problem_id": pid, "final_question": "q?", "true_answer": "Yes", "correct_letter": "A",
             "selected_letter": "A" if ok else "B", "is_correct": bool(ok), "generated_answer": "A",
             "full_response": "A"} for pid, ok in correct.items()]
    path = folder / f"result_{name}_ICL_mcqa.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def write_judge(csv: Path, correct: dict[str, int]) -> None:
    stem = str(csv)[: -len(".csv")]
    Path(stem + "_evaluationllm.json").write_text(json.dumps(
        {"problem_accuracies": {pid: 100.0 * ok for pid, ok in correct.items()}}))


IDS = [f"p{i:02d}" for i in range(10)]
ORIGINAL = dict(zip(IDS, [1, 1, 1, 1, 1, 1, 0, 0, 0, 0]))
NOISY = dict(zip(IDS, [1, 1, 1, 0, 0, 0, 1, 0, 0, 0]))  # 3 lost, 1 gained: 60% -> 40%


def test_noise_summary_has_the_known_numbers(tmp_path):
    for label, scores in (("original", ORIGINAL), ("noise-random", NOISY)):
        write_judge(write_open(tmp_path / label, "qwen7B", scores), scores)
        write_mcqa(tmp_path / label, "qwen7B", scores)
    sets = rs.load_sets([f"original={tmp_path / 'original'}", f"noise-random={tmp_path / 'noise-random'}"])
    report = analyse("noise", sets, SETTINGS, [])
    assert {(r["metric"], r["model"]) for r in report.summary} == {("EM", "qwen7B"), ("LLM", "qwen7B"), ("MCQA", "qwen7B")}
    for row in report.summary:
        assert (row["accuracy_reference"], row["accuracy_variant"]) == pytest.approx((60.0, 40.0))
        assert row["difference"] == pytest.approx(-20.0)
        assert row["relative_change"] == pytest.approx(-20 / 60 * 100)
        assert (row["gained"], row["lost"], row["n_pairs"], row["n_problems"]) == (1, 3, 10, 10)
        assert row["ci_low"] <= row["difference"] <= row["ci_high"]
        # issue #20: McNemar's score statistic (b − c)²/(b + c) = (1 − 3)²/4 = 1 on χ²₁, kept beside as p_score
        assert row["p_score"] == pytest.approx(2 * (1 - NormalDist().cdf(1.0)))
        # issue #31: the sign-flip mid-p over the 4 discordant problems: |t| = 1 in 8 of 16 patterns, 2 in 2: 2/16 + ½·8/16
        assert row["p_method"].startswith("sign-flip randomisation over base problems, mid-p (exact, 16 patterns")
        assert row["significant"] is False and row["ci_low"] < 0 < row["ci_high"]
    values = unit_values([NOISY[p] for p in IDS], [ORIGINAL[p] for p in IDS], IDS)
    p, adjusted = family([values] * 3)  # one family: every comparison of the run
    assert p[0] == 6 / 16
    assert [r["p_value"] for r in report.summary] == pytest.approx(p, abs=1e-12)
    assert [r["p_adjusted"] for r in report.summary] == pytest.approx(adjusted, abs=1e-12)
    flips = pd.concat(report.flips)
    em = flips[flips["metric"] == "EM"].set_index("problem_id")["flip"]
    assert em["p03"] == "lost" and em["p06"] == "gained" and em["p00"] == "both_correct" and em["p09"] == "both_wrong"
    assert report.averages[0]["relative_change"] == pytest.approx(-20 / 60 * 100)


def test_pairing_uses_shared_problems_only(tmp_path):
    write_open(tmp_path / "o", "random", ORIGINAL)
    write_open(tmp_path / "v", "random", {pid: NOISY[pid] for pid in IDS[:6]} | {"extra": 1})
    sets = rs.load_sets([f"original={tmp_path / 'o'}", f"noise-targeted={tmp_path / 'v'}"])
    row = analyse("noise", sets, SETTINGS, []).summary[0]
    assert (row["n_pairs"], row["n_reference"], row["n_variant"]) == (6, 10, 7) and row["lost"] == 3 and row["gained"] == 0


def test_order_compares_first_last_and_original_on_common_problems(tmp_path):
    first = dict(zip(IDS[:8], [0, 0, 0, 0, 1, 1, 0, 0]))
    last = dict(zip(IDS[2:], [1, 1, 1, 1, 1, 1, 1, 0]))
    write_open(tmp_path / "o", "gpt-4o", ORIGINAL)
    write_open(tmp_path / "f", "gpt-4o", first)
    write_open(tmp_path / "l", "gpt-4o", last)
    sets = rs.load_sets([f"original={tmp_path / 'o'}", f"order-first={tmp_path / 'f'}", f"order-last={tmp_path / 'l'}"])
    report = analyse("order", sets, SETTINGS, [])
    pairs = [(r["variant"], r["reference"]) for r in report.summary]
    assert pairs == [("order-first", "original"), ("order-last", "original"), ("order-last", "order-first")]
    assert {r["n_pairs"] for r in report.summary} == {6}  # p02..p07 are in all three
    (recency,) = report.extra["recency"]
    common = IDS[2:8]
    assert recency["accuracy_original"] == pytest.approx(100 * sum(ORIGINAL[p] for p in common) / 6)
    assert recency["accuracy_first"] == pytest.approx(100 * sum(first[p] for p in common) / 6)
    assert recency["accuracy_last"] == pytest.approx(100 * sum(last[p] for p in common) / 6)
    assert recency["last_minus_first"] == pytest.approx(recency["accuracy_last"] - recency["accuracy_first"])
    # issue #31: the three comparisons are one family; step-down minP over their joint sign flips
    scores = {"original": ORIGINAL, "order-first": first, "order-last": last}
    p, adjusted = family([unit_values([scores[v][i] for i in common], [scores[r][i] for i in common], common)
                          for v, r in pairs])
    assert [r["p_value"] for r in report.summary] == pytest.approx(p, abs=1e-12)
    assert [r["p_adjusted"] for r in report.summary] == pytest.approx(adjusted, abs=1e-12)
    assert len(set(adjusted)) > 1 and adjusted != p
    for r in report.summary:
        assert r["significant"] == (r["p_adjusted"] < 0.05) == (r["ci_low"] > 0 or r["ci_high"] < 0)


def test_permutation_pairs_by_base_problem_with_clusters(tmp_path):
    base = {"a": 1, "b": 0, "c": 1}
    perms = {"a_perm_1": 1, "a_perm_2": 0, "b_perm_1": 0, "b_perm_2": 0, "b_perm_3": 1, "c_perm_1": 1, "c_perm_2": 1}
    write_open(tmp_path / "o", "llava_7b", base)
    write_open(tmp_path / "p", "llava_7b", perms)
    sets = rs.load_sets([f"original={tmp_path / 'o'}", f"permute={tmp_path / 'p'}"])
    report = analyse("permutation", sets, SETTINGS, [])
    (row,) = report.summary
    assert (row["n_pairs"], row["n_problems"], row["clustered"]) == (7, 3, True)
    assert row["accuracy_reference"] == pytest.approx(100 * 4 / 7)  # each perm row paired with its base
    assert row["accuracy_variant"] == pytest.approx(100 * 4 / 7)
    assert (row["gained"], row["lost"]) == (1, 1)
    # row-weighted (issue #20, the default): per base problem S = gained - lost: a -1, b +1, c 0;
    # the score test's X² = (-1 + 1)² / (1 + 1) = 0, p = 1 (p_score); issue #31: sign flips of a and b over
    # base problems, |t| = 0 in 2 of 4 patterns: mid-p ½·2/4 + 2/4 = 3/4
    assert row["p_score"] == pytest.approx(1.0)
    assert row["p_method"].startswith("sign-flip randomisation over base problems, mid-p (exact, 4 patterns")
    rows = [(perms[pid], base[pid.split("_perm_")[0]], pid.split("_perm_")[0]) for pid in perms]
    assert row["p_value"] == pytest.approx(family([unit_values(*zip(*rows))])[0][0], abs=1e-12) == 3 / 4
    (by_problem,) = analyse("permutation", sets, {**SETTINGS, "weight": "problem"}, []).summary
    # Durkalski: per base problem d = (gained - lost) / orders: a -1/2, b +1/3, c 0
    # X² = (-1/2 + 1/3)² / (1/4 + 1/9) = 1/13; p = P(χ²₁ ≥ 1/13) = P(|Z| ≥ √(1/13))
    assert by_problem["p_score"] == pytest.approx(2 * (1 - NormalDist().cdf((1 / 13) ** 0.5)), abs=1e-12)
    # the sign flips of a (-1/2) and b (+1/3): |t| ∈ {1/√13 (2 patterns), 5/√13 (2)}: mid-p 2/4 + ½·2/4 = 3/4
    assert by_problem["p_value"] == pytest.approx(family([unit_values(*zip(*rows), weight="problem")])[0][0],
                                                  abs=1e-12) == 3 / 4
    assert by_problem["difference"] == pytest.approx(100 * (-1 / 2 + 1 / 3 + 0) / 3)
    (cons,) = report.extra["consistency"]
    assert (cons["n_base"], cons["order_sensitive"]) == (3, 2)
    by = {r["base_problem_id"]: r for r in report.extra["by_problem"]}
    assert by["b"]["correct_orders"] == 1 and by["b"]["n_orders"] == 3 and by["c"]["accuracy_orders"] == 100


def test_labels_come_from_run_manifests(tmp_path, demo_dir):
    ds = tmp_path / "ds"
    ds.mkdir()
    (ds / "variant_manifest.json").write_text(json.dumps({"kind": "order-last", "transform": "order-last"}))
    recorded = {"kind": "local", "id": str(ds), "variant": {"kind": "noise-targeted"}}  # what the run recorded
    legacy = {"kind": "local", "id": str(ds)}  # a run from before variants were recorded: the folder, checked
    for folder, dataset in (("o", {"kind": "demo", "id": "/x"}), ("v", recorded), ("w", legacy)):
        write_open(tmp_path / folder, "random", ORIGINAL)
        (tmp_path / folder / "result_random_ICL.manifest.json").write_text(json.dumps({"dataset": dataset}))
    assert list(rs.load_sets([str(tmp_path / f) for f in "ovw"])) == ["original", "noise-targeted", "order-last"]
    assert rs.variant_kind({**recorded, "variant": None}) == "original"
    assert rs.variant_kind({"kind": "hub", "id": "smmile/SMMILE-plusplus", "variant": None}) == "permute"
    with pytest.raises(UserError, match="malformed variant"):
        rs.variant_kind({**recorded, "variant": {"kind": "../../etc/passwd"}})
    (ds / "variant_manifest.json").write_text("[]")
    with pytest.raises(UserError, match="variant_manifest.json"):
        rs.variant_kind(legacy)
    assert list(rs.load_sets([f"mine={tmp_path / 'v'}"])) == ["mine"]
    assert rs.variant_kind({"kind": "hub", "id": "smmile/SMMILE-augmented-050825"}) == "permute"
    assert rs.variant_kind({"kind": "hub", "id": "smmile/SMMILE"}) == "original"
    assert rs.variant_kind({"kind": "demo", "id": str(demo_dir / "plusplus")}) == "permute"
    assert rs.variant_kind({"kind": "demo", "id": str(demo_dir / "smmile")}) == "original"
    with pytest.raises(UserError, match="labelled"):
        rs.load_sets([str(tmp_path / "o"), str(tmp_path / "o")])


def test_bad_inputs_are_user_errors(tmp_path, capsys):
    write_open(tmp_path / "o", "random", ORIGINAL)
    with pytest.raises(UserError, match="original"):
        analyse("noise", rs.load_sets([f"noise-random={tmp_path / 'o'}"]), SETTINGS, [])
    with pytest.raises(UserError, match="order-first"):
        analyse("order", rs.load_sets([f"original={tmp_path / 'o'}"]), SETTINGS, [])
    assert analyze_main(["noise", str(tmp_path / "missing"), "--out", str(tmp_path / "a")]) == 2
    assert "not found" in capsys.readouterr().err


def test_cli_writes_json_and_csv(tmp_path, capsys):
    write_open(tmp_path / "o", "random", ORIGINAL)
    write_open(tmp_path / "v", "random", NOISY)
    out = tmp_path / "out"
    assert analyze_main(["noise", f"original={tmp_path / 'o'}", f"noise-random={tmp_path / 'v'}",
                         "--out", str(out), "--n-boot", "200"]) == 0
    assert "noise-random" in capsys.readouterr().out
    payload = json.loads((out / "noise.json").read_text())
    assert set(payload) >= {"analysis", "settings", "sets", "summary", "averages", "flips", "warnings"}
    summary = pd.read_csv(out / "noise_summary.csv")
    assert summary.loc[0, "difference"] == pytest.approx(-20.0)
    assert len(pd.read_csv(out / "noise_flips.csv")) == 10
