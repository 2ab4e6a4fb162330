"""States said, not implied (issue #36, deliverable 3): journaled responses under other settings are counted and named
at the start; a first judge run says no "cache hits"; a judge with no parseable reply exits 1 naming the count; the
report names why each input was skipped, as stats does; `smmile env` says what a run will use (flash-attn or sdpa)."""

from __future__ import annotations

import importlib.util
import json

from smmile import cli
from smmile.cli import judge as judge_cli
from test_data_malformed_datasets import ORIGINAL, write_open
from test_judge_unit import _results_dir, fake_judge  # noqa: F401 (a fixture)


def run_random(dataset, out, *extra) -> int:
    return cli.main(["run", "--model", "random", "--dataset", str(dataset), "--output-dir", str(out), *extra])


def test_journaled_responses_under_other_settings_are_counted_and_named(tmp_path, capsys):
    assert run_random("demo", tmp_path, "--max-new-tokens", "8") == 0
    first = capsys.readouterr().err
    assert "other settings" not in first
    assert run_random("demo", tmp_path, "--max-new-tokens", "16") == 0
    err = capsys.readouterr().err
    (line,) = [x for x in err.splitlines() if "other settings" in x]
    n = len([x for x in (tmp_path / "result_random_ICL_open.csv").read_text().splitlines()[1:] if x])
    assert f"holds {n} response(s)" in line and "max_new_tokens 8 (now 16)" in line
    assert f"0/{n} problems are done" in line
    assert err.index(line) < err.index("problems done") if "problems done" in err else True


def test_a_first_judge_run_says_no_cache_hits(tmp_path, fake_judge, capsys):  # noqa: F811
    fake_judge(lambda p: "1")
    assert judge_cli.main([str(_results_dir(tmp_path))]) == 0
    out = capsys.readouterr().out
    assert "Judge requests sent: 2; unparseable" in out and "cache hits" not in out
    assert judge_cli.main([str(tmp_path)]) == 0
    assert "Judge requests sent: 0; cache hits: 2" in capsys.readouterr().out


def test_a_judge_with_no_parseable_reply_exits_1_naming_the_count(tmp_path, fake_judge, capsys):  # noqa: F811
    fake_judge(lambda p: "I think the answer is correct.")
    assert judge_cli.main([str(_results_dir(tmp_path))]) == 1
    err = capsys.readouterr().err
    lines = [x for x in err.splitlines() if "no parseable judge reply" in x]
    assert len(lines) == 2 and all("2 of 2 unparseable" in x for x in lines)


def test_the_report_names_why_each_input_was_skipped_as_stats_does(tmp_path, capsys):
    res = tmp_path / "res"
    write_open(res, "qwen7B", ORIGINAL)
    path = res / "result_qwen7B_ICL_open.csv"
    path.write_bytes(path.read_bytes().replace(b"q?", b"caf\xe9?"))  # Latin-1, not UTF-8
    assert cli.main(["stats", str(res), "--out", str(tmp_path / "stats")]) == 2
    stats_err = capsys.readouterr().err
    assert cli.main(["report", str(res), "--out", str(tmp_path / "report")]) == 2
    report_err = capsys.readouterr().err
    reason = [x for x in stats_err.splitlines() if "result_qwen7B_ICL_open.csv" in x]
    assert reason, stats_err
    said = reason[0].removeprefix("warning: ").split(": ", 1)[1].split(";")[0]
    assert "result_qwen7B_ICL_open.csv" in report_err and said in report_err, (said, report_err)


def test_beside_a_scorable_result_the_report_still_names_why_the_other_was_skipped(tmp_path, capsys):
    res = tmp_path / "res"
    write_open(res, "qwen7B", ORIGINAL)
    write_open(res, "qwen3B", ORIGINAL)
    path = res / "result_qwen3B_ICL_open.csv"
    path.write_bytes(path.read_bytes().replace(b"q?", b"caf\xe9?"))  # Latin-1, not UTF-8
    assert cli.main(["report", str(res), "--out", str(tmp_path / "report"), "--n-boot", "50"]) == 0
    (line,) = [x for x in capsys.readouterr().err.splitlines() if "result_qwen3B_ICL_open.csv" in x]
    assert "utf-8" in line and "skipped" in line
    page = (tmp_path / "report" / "index.html").read_text(encoding="utf-8")
    assert "result_qwen3B_ICL_open.csv: cannot read CSV" in page  # in the page's warnings too


def test_env_says_what_a_run_uses_for_attention(capsys):
    assert cli.main(["env"]) == 0
    out = capsys.readouterr().out
    (row,) = [x for x in out.splitlines() if x.startswith("flash-attn ")]
    (used,) = [x for x in out.splitlines() if x.startswith("attention of the presets")]
    if importlib.util.find_spec("flash_attn") is None:
        assert "same as the paper" not in row and "sdpa" in row
        assert used.endswith("sdpa (flash-attn is not installed)")
    assert cli.main(["env", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["attention"] == used.split(": ", 1)[1]
