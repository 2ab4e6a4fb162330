"""A checkpoint nobody registered, from `smmile run --model hf:<path>` to `smmile report`, no code and no name
table touched: every scoring command takes its results, under the name the run recorded."""

from __future__ import annotations

import json
import shutil

import pytest

pytest.importorskip("transformers")

import tiny_generic as tg  # noqa: E402
import tiny_models  # noqa: E402
from smmile import cli  # noqa: E402
from test_anymodel_runs import local_tag, smmile_run  # noqa: E402

pytestmark = pytest.mark.slow

DISPLAY = "Tiny Idefics3 (v1)"


def test_run_score_report(tmp_path, capsys):
    model = tmp_path / DISPLAY
    shutil.copytree(tg.cached("idefics3"), model)
    KEY = local_tag(model)  # noqa: N806 (Tiny-Idefics3-v1-<6 hex of the folder's path>)
    results, dataset = tmp_path / "results", str(tiny_models.demo_subset(4))
    for mode in ("0-shot", "ICL"):
        for fmt in ("open", "mcqa"):
            assert smmile_run(f"hf:{model}", results, mode, fmt) == 0, capsys.readouterr().err
    assert sorted(p.name for p in results.glob("*.csv")) == [f"result_{KEY}_{m}_{f}.csv" for m in ("0-shot", "ICL")
                                                             for f in ("mcqa", "open")]
    capsys.readouterr()
    assert cli.main(["em", str(results)]) == 0
    assert cli.main(["stratify", str(results), "--eval_type", "em", "--dataset", dataset]) == 0
    assert cli.main(["variance", str(results), "--generate_table"]) == 0
    assert cli.main(["stats", str(results)]) == 0
    out = capsys.readouterr().out
    assert "Skipping" not in out
    assert f"EXACT MATCH EVALUATION RESULTS FOR {KEY} (ICL)" in out
    assert json.loads((results / f"result_{KEY}_ICL_open_evaluation.json").read_text())["model"] == KEY
    assert list(json.loads((results / "model_stratification_em.json").read_text())) == [f"{KEY}:0-shot", f"{KEY}:ICL"]
    table = (results / "evaluation_results.txt").read_text().split("\n")
    assert table[2].startswith(f"{KEY} & - & - & ") and table[2].count(" ± ") == 4  # EM and MCQA, both modes
    estimates = json.loads((results / "stats_estimates.json").read_text())["rows"]
    assert {(e["model"], e["metric"], e["mode"]) for e in estimates} == {
        (KEY, metric, mode) for metric in ("EM", "MCQA", "NOANS") for mode in ("0-shot", "ICL")}
    assert cli.main(["report", str(results), "--out", str(tmp_path / "report")]) == 0
    page = (tmp_path / "report" / "index.html").read_text()
    assert DISPLAY in page
