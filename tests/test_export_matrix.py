"""``smmile export matrix`` (issue #35): a models x items table per metric whose row means are the accuracies
``smmile stats`` reports, with a sidecar naming the scorer, the judge, the dataset and the failure rule."""

from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest

from smmile import cli
from smmile.scoring import metrics


def _copy(published, tmp_path, pattern="result_*"):
    root = tmp_path / "results"
    root.mkdir()
    for path in published.glob(pattern):
        shutil.copy(path, root)
    return root


def _stats(results, tmp_path, *flags):
    out = tmp_path / ("stats" + "-".join(flags))
    assert cli.main(["stats", str(results), "--out", str(out), "--n-boot", "10", "--compare", "none", *flags]) == 0
    return pd.read_csv(out / "stats_estimates.csv")


@pytest.mark.slow
def test_row_means_equal_stats_accuracies_on_the_published_outputs(published, tmp_path, capsys):
    results = _copy(published, tmp_path)
    assert cli.main(["export", "matrix", str(results), "--out", str(tmp_path / "m")]) == 0
    stats = _stats(results, tmp_path)
    seen = 0
    for metric in stats["metric"].unique():
        table = pd.read_csv(tmp_path / "m" / f"matrix_{metric}.csv")
        cells = table.drop(columns=["model", "mode", "format"])
        assert set(cells.stack().dropna().unique()) <= {0.0, 1.0}
        assert cells.shape[1] == 111  # SMMILE's problems are the columns
        sidecar = json.loads((tmp_path / "m" / f"matrix_{metric}.json").read_text())
        means = dict(zip([r["source"] for r in sidecar["rows"]], 100 * cells.mean(axis=1)))
        expected = stats[stats["metric"] == metric]
        assert len(expected) == len(table) == len(means) > 10
        for row in expected.itertuples():
            assert means[row.source] == pytest.approx(row.accuracy, abs=1e-9), (metric, row.source)
            seen += 1
        assert {r["scorer"] for r in sidecar["rows"]} == {{"EM": "Exact match", "LLM": "LLM-as-a-judge",
                                                          "MCQA": "MCQA"}.get(metric, metrics.METRICS[metric].display)}
        assert all("transport failures" in r["failure_rule"] and "left out" in r["failure_rule"]
                   for r in sidecar["rows"])  # smmile stats' default rule, named
        if metric == "LLM":
            assert all("llama3.3" in r["judge"] for r in sidecar["rows"])  # the published outputs' judge
    assert seen == len(stats) and {"EM", "LLM", "MCQA"} <= set(stats["metric"])
    assert not list(results.glob("matrix*"))  # nothing written into the results folder


def test_failure_rules_match_stats(published, tmp_path):
    results = _copy(published, tmp_path, "result_claude-3-7-sonnet_*open*")  # 10 and 21 failed requests
    for rule in ("wrong", "exclude"):
        out = tmp_path / f"m-{rule}"
        assert cli.main(["export", "matrix", str(results), "--failures", rule, "--out", str(out)]) == 0
        table = pd.read_csv(out / "matrix_EM.csv")
        stats = _stats(results, tmp_path, "--failures", rule)
        cells = table.drop(columns=["model", "mode", "format"])
        assert cells.isna().sum().sum() == (31 if rule == "exclude" else 0)  # failures missing, not wrong
        for row in stats[stats["metric"] == "EM"].itertuples():
            got = 100 * cells[(table["model"] == row.model) & (table["mode"] == row.mode)].mean(axis=1).iloc[0]
            assert got == pytest.approx(row.accuracy)


def test_parquet_copy_reads_back_equal(published, tmp_path):
    pytest.importorskip("pyarrow", reason="pyarrow is not installed: the Parquet copy is left out")
    results = _copy(published, tmp_path, "result_gpt-4o_*mcqa*")
    assert cli.main(["export", "matrix", str(results), "--out", str(tmp_path / "m")]) == 0
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "m" / "matrix_MCQA.parquet"),
                                  pd.read_csv(tmp_path / "m" / "matrix_MCQA.csv"), check_dtype=False)


def test_user_mistakes_are_one_line_exit_2(tmp_path, capsys):
    assert cli.main(["export", "matrix", str(tmp_path / "absent")]) == 2
    assert capsys.readouterr().err.strip().count("\n") == 0
    (tmp_path / "empty").mkdir()
    assert cli.main(["export", "matrix", str(tmp_path / "empty")]) == 2
    assert "no scorable result files" in capsys.readouterr().err
