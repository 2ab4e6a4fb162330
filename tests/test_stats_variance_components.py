"""``smmile analyze variance-components`` (issue #31, deliverable 6): method-of-moments components recover known
ones, order sensitivity by hand, and the command on a SMMILE++-shaped folder."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from smmile.analysis import variance_components as vc
from smmile.cli.analyze import main as analyze_main
from stats_fixtures import CLUSTER_SIZES, build_plusplus, plusplus_ids


def gaussian(sigmas: dict, n_models: int, repeat: int, seed: int) -> pd.DataFrame:
    """y = model mean + problem + model×problem + order + residual, each normal with the given variance."""
    rng = np.random.default_rng(seed)
    ids = plusplus_ids(CLUSTER_SIZES * repeat)
    problems = np.unique([i.rsplit("_perm_", 1)[0] for i in ids], return_inverse=True)[1]
    k = problems.max() + 1
    sd = {c: math.sqrt(v) for c, v in sigmas.items()}
    shared = rng.normal(0, sd["problem"], k)[problems] + rng.normal(0, sd["order"], len(ids))
    rows = [rng.normal() + shared + rng.normal(0, sd["model_x_problem"], k)[problems]
            + rng.normal(0, sd["residual"], len(ids)) for _ in range(n_models)]
    return pd.DataFrame(rows, columns=ids, index=[f"m{i}" for i in range(n_models)])


def test_method_of_moments_recovers_known_components():
    truth = {"problem": 1.0, "model_x_problem": 0.5, "order": 0.3, "residual": 0.2}
    estimates = [vc.components(gaussian(truth, 6, 5, seed)) for seed in range(4)]
    for name, value in truth.items():
        mean = np.mean([e[f"var_{name}"] for e in estimates])
        assert mean == pytest.approx(value, rel=0.15), name
    e = estimates[0]
    assert e["share_problems"] + e["share_orders"] == pytest.approx(1.0)


def test_order_sensitivity_is_the_chance_two_orders_differ():
    ids = ["a_perm_1", "a_perm_2", "a_perm_3", "b_perm_1", "b_perm_2"]
    y = pd.DataFrame([[1, 0, 0, 1, 1], [1, 1, 1, 0, 1]], columns=ids, index=["m1", "m2"], dtype=float)
    # model 1: problem a 1 of 3 right -> 2·1·2/(3·2) = 2/3, b: 0; model 2: a: 0, b: 2·1·1/(2·1) = 1
    got = vc.order_sensitivity(y, 200, 0, 0.95)
    assert got.estimate == pytest.approx(np.mean([(2 / 3 + 0) / 2, (0 + 1) / 2]))


def test_mdd_is_the_80_percent_power_difference():
    parts = {"var_model_x_problem": 0.02, "var_residual": 0.1, "weights_sq": 0.02, "n_rows": 1038}
    se = math.sqrt(2 * 0.02 * 0.02 + 2 * 0.1 / 1038)
    assert vc.mdd(parts, 0.95) == pytest.approx((1.959964 + 0.841621) * se, rel=1e-5)


def test_command_on_a_plusplus_folder(tmp_path, capsys):
    build_plusplus(tmp_path / "r")
    assert analyze_main(["variance-components", str(tmp_path / "r"), "--out", str(tmp_path / "o"),
                         "--n-boot", "200"]) == 0
    out = capsys.readouterr().out
    rows = json.loads((tmp_path / "o" / "variance_components.json").read_text())["rows"]
    assert {(r["metric"], r["mode"]) for r in rows} >= {("EM", "ICL"), ("MCQA", "0-shot")}
    for r in rows:
        assert 0 <= r["share_problems"] <= 1 and r["mdd_pp"] > 0
        assert r["order_sensitivity_low"] <= r["order_sensitivity"] <= r["order_sensitivity_high"]
    em = next(r for r in rows if (r["metric"], r["mode"]) == ("EM", "ICL"))
    assert em["share_problems"] > 0.3  # the fixture has a strong per-base-problem effect
    assert "order sensitivity" in out and "MDD" in out
    assert analyze_main(["variance-components", str(tmp_path / "r"), str(tmp_path / "r"), "--out",
                         str(tmp_path / "x")]) == 2


def test_the_report_shows_the_variance_components_in_their_own_section(tmp_path):
    from smmile.report import analyses

    build_plusplus(tmp_path / "r")
    assert analyze_main(["variance-components", str(tmp_path / "r"), "--out", str(tmp_path / "o"),
                         "--n-boot", "100"]) == 0
    views = analyses.load_analyses([str(tmp_path / "o")])
    sections = {v.section for v in views if v.path.endswith(".json")}
    assert sections == {"variance_components"}
    table = next(t for v in views for t in v.tables if t.title == "rows")
    assert "order_sensitivity" in {c.header for c in table.columns}
