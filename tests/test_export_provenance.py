"""Issue #35 deliverables 4 and 5: the dataset a result was read from (the hub commit resolved, beside the
revision requested) and warnings when compared results read different versions; tokens and dollars per correct
answer in ``smmile stats``, missing (never zero) where no usage was reported."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from smmile import cli
from smmile.data.load import Source, hub_commit

SHA_A, SHA_B = "a" * 40, "0123456789abcdef0123456789abcdef01234567"


def test_hub_commit_is_read_from_the_hub_cache_ref(tmp_path, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path))
    refs = tmp_path / "datasets--smmile--SMMILE" / "refs"
    refs.mkdir(parents=True)
    (refs / "main").write_text(SHA_B)
    (refs / "v1").write_text(SHA_A + "\n")
    assert Source("hub", "smmile/SMMILE").describe() == {"kind": "hub", "id": "smmile/SMMILE", "revision": None,
                                                         "resolved_revision": SHA_B}
    assert hub_commit(Source("hub", "smmile/SMMILE", "v1")) == SHA_A
    assert hub_commit(Source("hub", "smmile/SMMILE", SHA_B)) == SHA_B  # a commit asked for is the one read
    assert hub_commit(Source("hub", "smmile/SMMILE-plusplus")) is None  # never loaded here
    assert hub_commit(Source("local", str(tmp_path))) is None  # local folders: the fingerprint


def test_a_run_records_the_revision_read(demo_dir, tmp_path):
    from smmile.cli.baselines import main as baselines

    assert baselines(["--baseline", "random", "--task_format", "mcqa", "--dataset", "demo",
                      "--output-dir", str(tmp_path)]) == 0
    dataset = json.loads((tmp_path / "result_random_ICL_mcqa.manifest.json").read_text())["dataset"]
    assert dataset["resolved_revision"] is None and len(dataset["fingerprint"]) == 16  # a local folder


def _two_runs(tmp_path, demo_dir) -> Path:
    from smmile.cli.baselines import main as baselines

    res = tmp_path / "res"
    for baseline in ("random", "majority"):
        assert baselines(["--baseline", baseline, "--task_format", "mcqa", "--dataset", "demo",
                          "--output-dir", str(res)]) == 0
    return res


def _edit(path: Path, change) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def test_stats_warns_naming_both_commits_when_compared_results_read_different_ones(demo_dir, tmp_path, capsys):
    res = _two_runs(tmp_path, demo_dir)
    for name, sha in (("random", SHA_A), ("majority", SHA_B)):
        _edit(res / f"result_{name}_ICL_mcqa.manifest.json",
              lambda m: m["dataset"].update(kind="hub", id="smmile/SMMILE", revision=None, resolved_revision=sha))
    assert cli.main(["stats", str(res), "--out", str(tmp_path / "s"), "--n-boot", "10", "--compare", "models"]) == 0
    err = capsys.readouterr().err
    assert "read smmile/SMMILE at 2 different commits" in err and SHA_A in err and SHA_B in err
    assert "result_random_ICL_mcqa.csv" in err and "result_majority_ICL_mcqa.csv" in err and "--revision" in err


def test_stats_is_quiet_when_compared_results_read_the_same_version(demo_dir, tmp_path, capsys):
    res = _two_runs(tmp_path, demo_dir)
    assert cli.main(["stats", str(res), "--out", str(tmp_path / "s"), "--n-boot", "10", "--compare", "none"]) == 0
    assert "different" not in capsys.readouterr().err


def test_stats_reports_tokens_and_dollars_per_correct_answer(demo_dir, tmp_path, capsys):
    res = _two_runs(tmp_path, demo_dir)
    _edit(res / "result_random_ICL_mcqa.manifest.json", lambda m: m.update(
        usage={"input_tokens": 24000, "output_tokens": 480, "cost_usd": 0.066},
        backend={"accounting": {"prices_date": "2025-06-01"}}))
    assert cli.main(["stats", str(res), "--out", str(tmp_path / "s"), "--n-boot", "10", "--compare", "none"]) == 0
    out = capsys.readouterr().out
    rows = pd.read_csv(tmp_path / "s" / "stats_estimates.csv").query("metric == 'MCQA'").set_index("model")
    correct = pd.read_csv(res / "result_random_ICL_mcqa.csv")["is_correct"].astype(str).str.lower().eq("true").sum()
    assert correct > 0
    assert rows.loc["random", "input_tokens_per_correct"] == pytest.approx(24000 / correct)
    assert rows.loc["random", "output_tokens_per_correct"] == pytest.approx(480 / correct)
    assert rows.loc["random", "usd_per_correct"] == pytest.approx(0.066 / correct)
    assert rows.loc["random", "prices_date"] == "2025-06-01"
    assert pd.isna(rows.loc["majority", "input_tokens_per_correct"])  # no usage reported: missing, not 0
    assert "tokens and cost per correct answer" in out and f"{24000 / correct:.1f}" in out and "2025-06-01" in out


def test_report_shows_the_cost_per_correct_answer(demo_dir, tmp_path):
    res = _two_runs(tmp_path, demo_dir)
    _edit(res / "result_random_ICL_mcqa.manifest.json", lambda m: m.update(
        usage={"input_tokens": 2400, "output_tokens": 48}, backend={"accounting": {"prices_date": "2025-06-01"}}))
    assert cli.main(["report", str(res), "--out", str(tmp_path / "r"), "--n-boot", "10"]) == 0
    page = (tmp_path / "r" / "index.html").read_text()
    assert "Tokens and cost per correct answer" in page and "missing" in page  # no cost_usd: missing, not 0


def test_report_and_analyze_warn_naming_both_commits(demo_dir, tmp_path, capsys):
    res = _two_runs(tmp_path, demo_dir)
    for name, sha in (("random", SHA_A), ("majority", SHA_B)):
        _edit(res / f"result_{name}_ICL_mcqa.manifest.json",
              lambda m: m["dataset"].update(kind="hub", id="smmile/SMMILE", revision=None, resolved_revision=sha))
    assert cli.main(["report", str(res), "--out", str(tmp_path / "r"), "--n-boot", "10"]) == 0
    page = (tmp_path / "r" / "index.html").read_text()
    assert "2 different commits" in page and SHA_A in page and SHA_B in page
    other = tmp_path / "other"
    other.mkdir()
    for path in res.glob("result_random_*"):
        (other / path.name).write_bytes(path.read_bytes())
    _edit(other / "result_random_ICL_mcqa.manifest.json", lambda m: m["dataset"].update(resolved_revision=SHA_B))
    capsys.readouterr()
    cli.main(["analyze", "noise", f"orig={res}", f"noisy={other}", "--out", str(tmp_path / "a"), "--n-boot", "10"])
    err = capsys.readouterr().err
    assert "2 different commits" in err and SHA_A in err and SHA_B in err
