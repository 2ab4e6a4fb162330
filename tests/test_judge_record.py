"""Issue #19 item 1: scoring reads the judge's verdicts from its journal (the run record), keyed to the content
judged; the ``_evaluationllm.json`` is only their export. Loopback judges of test_jury.py (127.0.0.1)."""

import json

import pytest

from api_server import FakeApi
from smmile.cli import judge as judge_cli
from smmile.cli import stats as stats_cli
from smmile.record.result_csv import ResultFileError
from smmile.scoring.metrics import metric_scores
from smmile.record.run_record import scan as load_results
from smmile.scoring.scores import records_of
from test_jury import STEM, folder, jury, reply  # noqa: F401 (folder: the fixture)

pytestmark = pytest.mark.server


def llm(folder) -> dict:
    return {pid: v for r in records_of(folder) if r.metric == "LLM" for pid, v in r.scores.items()}


def exported(folder) -> dict:
    stats = json.loads((folder / f"{STEM}_evaluationllm.json").read_text())
    return {pid: v / 100 for pid, v in stats["problem_accuracies"].items()}


def judge(folder, url) -> None:
    assert judge_cli.main([str(folder), "--judge-backend", "openai-compatible", "--judge-model", "em",
                           "--judge-base-url", f"{url}/v1"]) == 0


def test_stats_score_the_judge_from_its_journal_without_the_export(folder, tmp_path):
    with FakeApi(reply=reply) as api:
        judge(folder, api.url)
    assert stats_cli.main([str(folder), "--out", str(tmp_path / "a"), "--n-boot", "200"]) == 0
    (folder / f"{STEM}_evaluationllm.json").unlink()
    assert stats_cli.main([str(folder), "--out", str(tmp_path / "b"), "--n-boot", "200"]) == 0
    before, after = ((tmp_path / d / "stats_estimates.csv").read_text() for d in "ab")
    assert ",LLM," in before and after == before


def test_an_edited_journal_reply_changes_the_score_once_the_judge_records_it(folder):
    """The verdicts are recorded when judged (``.smmile/<stem>.verdicts.json``); an edited journal reply reaches
    the score and the export when ``smmile judge`` records them again, without a request."""
    with FakeApi(reply=reply) as api:
        judge(folder, api.url)
        export = (folder / f"{STEM}_evaluationllm.json").read_text()
        assert llm(folder) == exported(folder) and llm(folder)["a_perm_0"] == 1.0
        (journal,) = (folder / ".smmile" / "judge").glob("*.journal.jsonl")
        lines = [json.loads(x) for x in journal.read_text().splitlines()]
        for rec in lines:
            if rec["problem_id"] == "a_perm_0":
                rec["response"]["text"] = "0"
        journal.write_text("".join(json.dumps(rec) + "\n" for rec in lines))
        assert llm(folder) == exported(folder)  # the record holds the verdicts as judged
        assert (folder / f"{STEM}_evaluationllm.json").read_text() == export
        judge(folder, api.url)  # the journal answers: the record and the export follow it
        assert len(api.requests()) == 6
    assert exported(folder)["a_perm_0"] == 0.0 and llm(folder)["a_perm_0"] == 0.0


def test_the_verdicts_are_read_as_recorded_not_by_rebuilding_prompts(folder, monkeypatch):
    """A judge prompt changed after judging (today's JUDGE_PROMPT differs) does not lose the recorded verdicts."""
    from smmile.scoring import judge as judge_mod

    with FakeApi(reply=reply) as api:
        judge(folder, api.url)
    expected = exported(folder)
    (folder / f"{STEM}_evaluationllm.json").unlink()
    monkeypatch.setattr(judge_mod, "JUDGE_PROMPT", "Is {response} the answer to {question}? ({answer})")
    assert llm(folder) == expected


def test_a_csv_edited_after_judging_is_not_scored_from_the_journal(folder):
    with FakeApi(reply=reply) as api:
        judge(folder, api.url)
    export = folder / f"{STEM}_evaluationllm.json"
    expected, text = exported(folder), export.read_text()
    export.unlink()
    assert llm(folder) == expected
    csv = folder / f"{STEM}.csv"
    csv.write_text(csv.read_text().replace(",x\n", ",y\n", 1))  # not the judged columns: the same journal keys
    assert llm(folder) == {}
    export.write_text(text)
    with pytest.raises(ResultFileError, match="judged other content"):
        metric_scores(load_results(folder)[0], "LLM")


def test_a_jury_of_three_from_the_journals_is_the_exported_majority(folder):
    with FakeApi(reply=reply) as api:
        assert judge_cli.main([str(folder), "--jury", *jury(api.url)]) == 0
    expected = exported(folder)
    assert expected == {"a_perm_0": 1.0, "a_perm_1": 1.0, "b_perm_0": 0.0, "b_perm_1": 0.0, "c_perm_0": 0.0,
                        "c_perm_1": 0.0}
    (folder / f"{STEM}_evaluationllm.json").unlink()
    assert llm(folder) == expected
