"""`smmile analyze`: inputs that cannot be compared are refused, clustered rows get the clustered test (sign flips of
base problems, issue #31), relative change is a ratio of means, output folders are checked first (issues #12, #10)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from smmile.analysis import result_sets as rs
from smmile.cli.analyze import main as analyze_main
from smmile.analysis.variants import analyse
from stats_fixtures import base_of, correlated, plusplus_ids, write_mcqa, write_open

IDS = [f"p{i:02d}" for i in range(10)]
TRUTH = ["Yes"] * 10


def _one_line_error(capsys, needle: str) -> None:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0] and "Traceback" not in err[0]


def test_sets_that_share_no_problem_are_refused(tmp_path, capsys):
    write_mcqa(tmp_path / "o", "qwen7B", "ICL", IDS, TRUTH, [1] * 10)
    write_mcqa(tmp_path / "v", "qwen7B", "ICL", [f"q{i}" for i in range(10)], TRUTH, [0] * 10)
    out = tmp_path / "out"
    assert analyze_main(["noise", f"original={tmp_path / 'o'}", f"noise-random={tmp_path / 'v'}",
                         "--out", str(out), "--n-boot", "50"]) == 2
    _one_line_error(capsys, "share no problem")
    assert not (out / "noise.json").exists()


def test_permutation_refuses_a_noise_variant_and_unpermuted_sets(tmp_path, capsys):
    write_mcqa(tmp_path / "o", "qwen7B", "ICL", IDS, TRUTH, [1] * 10)
    write_mcqa(tmp_path / "v", "qwen7B", "ICL", IDS, TRUTH, [0] * 10)
    args = ["--out", str(tmp_path / "out"), "--n-boot", "50"]
    assert analyze_main(["permutation", f"original={tmp_path / 'o'}", f"noise-random={tmp_path / 'v'}", *args]) == 2
    _one_line_error(capsys, "is a noise-random variant")
    assert analyze_main(["permutation", f"original={tmp_path / 'o'}", f"permute={tmp_path / 'v'}", *args]) == 2
    _one_line_error(capsys, "no <id>_perm_<k> rows")
    write_mcqa(tmp_path / "p", "qwen7B", "ICL", [f"{i}_perm_1" for i in IDS], TRUTH, [0] * 10)
    assert analyze_main(["noise", f"original={tmp_path / 'o'}", f"noise-random={tmp_path / 'p'}", *args]) == 2
    _one_line_error(capsys, "analyze permutation")


def test_relative_change_is_a_ratio_of_means(tmp_path):
    """One model going from 1 % to 10 % is +900 %; averaged with another's −10 % that is a mean of
    ratios of +445 %, while the mean accuracy moved from 25.5 % to 27.5 %: +7.8 %."""
    ids = [f"p{i:03d}" for i in range(100)]
    truth = ["Yes"] * 100
    for label, low, high in (("original", 1, 50), ("noise-random", 10, 45)):
        write_mcqa(tmp_path / label, "llava_7b", "ICL", ids, truth, [1] * low + [0] * (100 - low))
        write_mcqa(tmp_path / label, "qwen72B", "ICL", ids, truth, [1] * high + [0] * (100 - high))
    sets = rs.load_sets([f"original={tmp_path / 'original'}", f"noise-random={tmp_path / 'noise-random'}"])
    (average,) = analyse("noise", sets, {"n_boot": 100, "seed": 0, "level": 0.95}, []).averages
    assert average["relative_change"] == pytest.approx((27.5 - 25.5) / 25.5 * 100)
    assert average["mean_of_relative_changes"] == pytest.approx((900 - 10) / 2)
    assert (average["mean_accuracy_reference"], average["mean_accuracy_variant"]) == pytest.approx((25.5, 27.5))


def test_clustered_rows_get_the_clustered_test_in_every_analysis(tmp_path):
    """Noise applied to SMMILE++ keeps the <id>_perm_<k> ids: the rows are still clusters."""
    ids = plusplus_ids()
    truth = ["Yes"] * len(ids)
    rng = np.random.default_rng(4)
    original, noisy = correlated(ids, 0.4, rng), correlated(ids, 0.3, rng)
    write_mcqa(tmp_path / "o", "qwen7B", "ICL", ids, truth, original)
    write_mcqa(tmp_path / "v", "qwen7B", "ICL", ids, truth, noisy)
    sets = rs.load_sets([f"original={tmp_path / 'o'}", f"noise-random={tmp_path / 'v'}"])
    (row,) = analyse("noise", sets, {"n_boot": 500, "seed": 0, "level": 0.95}, []).summary
    assert (row["n_pairs"], row["n_problems"], row["clustered"]) == (1038, 86, True)
    from statistics import NormalDist
    s = pd.Series(noisy - original).groupby(base_of(ids)).sum()  # issue #20: row-weighted cluster score test
    score = 2 * (1 - NormalDist().cdf(abs(s.sum()) / np.sqrt((s ** 2).sum())))
    assert abs(row["p_score"] - score) < 1e-9
    # issue #31: the sign flips of the base problems (Monte Carlo: more than 2^20 patterns); the flipped statistic
    # has variance 1 and, over this many base problems, is close to normal: the score test's p approximates it
    assert row["p_method"].startswith("sign-flip randomisation over base problems, mid-p (Monte Carlo, seed 0")
    assert abs(row["p_value"] - score) < 0.02 and row["n_problems"] == 86 and (s != 0).sum() > 20
    (alt,) = analyse("noise", sets, {"n_boot": 500, "seed": 0, "level": 0.95, "weight": "problem"}, []).summary
    d = pd.Series(noisy - original).groupby(base_of(ids)).mean()
    reference = 2 * (1 - NormalDist().cdf(abs(d.sum()) / np.sqrt((d ** 2).sum())))  # Durkalski (2003)
    assert abs(alt["p_score"] - reference) < 1e-9 and abs(alt["p_value"] - reference) < 0.02
    for r in (row, alt):  # one comparison: its family's adjusted p is its own
        assert r["p_adjusted"] == r["p_value"]
        assert r["significant"] == (r["p_adjusted"] < 0.05) == (r["ci_low"] > 0 or r["ci_high"] < 0)


def test_permutation_pairs_with_base_problems_and_checks_gold(tmp_path, capsys):
    write_open(tmp_path / "o", "llava_7b", "ICL", ["a", "b"], ["Yes", "No"], [1, 0])
    perm_ids = ["a_perm_1", "a_perm_2", "b_perm_1", "b_perm_2"]
    write_open(tmp_path / "p", "llava_7b", "ICL", perm_ids, ["Yes", "Yes", "Maybe", "Maybe"], [1, 0, 1, 1])
    out = tmp_path / "out"
    assert analyze_main(["permutation", f"original={tmp_path / 'o'}", f"permute={tmp_path / 'p'}",
                         "--out", str(out), "--n-boot", "100"]) == 0
    assert "2 paired problem(s) have different gold answers (first: b_perm_1)" in capsys.readouterr().err
    summary = json.loads((out / "permutation.json").read_text())["summary"][0]
    assert (summary["n_pairs"], summary["n_problems"], summary["gold_mismatches"]) == (2, 1, 2)  # excluded (#20)
    assert analyze_main(["permutation", f"original={tmp_path / 'o'}", f"permute={tmp_path / 'p'}",
                         "--out", str(out), "--n-boot", "100", "--include-gold-mismatch"]) == 0
    summary = json.loads((out / "permutation.json").read_text())["summary"][0]
    assert (summary["n_pairs"], summary["n_problems"], summary["gold_mismatches"]) == (4, 2, 2)


def test_output_folder_is_checked_before_loading(tmp_path, capsys, monkeypatch):
    write_mcqa(tmp_path / "o", "qwen7B", "ICL", IDS, TRUTH, [1] * 10)
    write_mcqa(tmp_path / "v", "qwen7B", "ICL", IDS, TRUTH, [0] * 10)
    sets = [f"original={tmp_path / 'o'}", f"noise-random={tmp_path / 'v'}"]
    loaded = []
    real = rs.load_sets
    monkeypatch.setattr("smmile.analysis.analyze_run.load_sets", lambda *a: loaded.append(1) or real(*a))
    (tmp_path / "file").write_text("x")
    assert analyze_main(["noise", *sets, "--out", str(tmp_path / "file")]) == 2
    _one_line_error(capsys, "is a file")
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "keep.txt").write_text("mine")
    assert analyze_main(["noise", *sets, "--out", str(foreign)]) == 2
    _one_line_error(capsys, "not empty")
    assert not loaded and [p.name for p in foreign.iterdir()] == ["keep.txt"]
    for _ in range(2):  # a folder this command made is reused
        assert analyze_main(["noise", *sets, "--out", str(tmp_path / "mine"), "--n-boot", "50"]) == 0
    assert loaded == [1, 1]


def test_a_second_run_into_the_same_folder_is_refused(tmp_path, capsys):
    from smmile import fsguard
    from smmile.cli.agreement import main as agreement_main
    from smmile.cli.stats import main as stats_main

    write_open(tmp_path / "o", "qwen7B", "ICL", IDS, TRUTH, [1] * 10, [1] * 10)
    write_open(tmp_path / "v", "qwen7B", "ICL", IDS, TRUTH, [0] * 10, [0] * 10)
    commands = {"an": lambda out: analyze_main(["noise", f"original={tmp_path / 'o'}",
                                                f"noise-random={tmp_path / 'v'}", "--out", out, "--n-boot", "50"]),
                "ag": lambda out: agreement_main([str(tmp_path / "o"), "--out", out]),
                "st": lambda out: stats_main([str(tmp_path / "o"), "--out", out, "--n-boot", "50"])}
    for name, command in commands.items():
        out = tmp_path / name
        assert command(str(out)) == 0
        capsys.readouterr()
        with fsguard.OutputLock(out, "a running command"):
            assert command(str(out)) == 2
            _one_line_error(capsys, "is being written by process")
        assert command(str(out)) == 0
