"""A jury of three loopback judges (tests/api_server.py, 127.0.0.1): one always says correct, one always
incorrect, one agrees with exact match (and answers "maybe" on questions marked hard). Every expected number
below is counted by hand from the six rows, not produced by the suite."""

import json
import re

import pytest

from api_server import FakeApi
from smmile.cli import agreement as agreement_cli
from smmile.cli import judge as judge_cli
from smmile.report import manifests

pytestmark = pytest.mark.server
HEADER = "problem_id,final_question,true_answer,generated_answer,full_response\n"
# problem, question, gold, answer: exact match = [1, 1, 0, 0, 0, 1]; SMMILE++ ids, base problems a, b, c
ROWS = [("a_perm_0", "q0", "Red", "red"), ("a_perm_1", "q1", "Blue", "blue"), ("b_perm_0", "q2", "Green", "pink"),
        ("b_perm_1", "q3", "Cyan", "gray"), ("c_perm_0", "hard q4", "Gold", "black"),
        ("c_perm_1", "hard q5", "White", "white")]
STEM = "result_llava_7b_ICL"


def reply(rec) -> str:
    body = rec["body"]
    prompt = body["messages"][0]["content"]
    if body["model"] == "yes":
        return "1"
    if body["model"] == "no":
        return "0"
    if "hard" in prompt:
        return "maybe"
    gold, answer = re.search(r'correct answer to this question is: "(.*?)"\. The AI model outputs "(.*?)"', prompt).groups()
    return "1" if gold.lower() == answer.lower() else "0"


@pytest.fixture
def folder(tmp_path, monkeypatch):
    for var in ("OPENAI_API_KEY", "OPENAI_COMPATIBLE_API_KEY", "OLLAMA_HOST"):
        monkeypatch.delenv(var, raising=False)
    d = tmp_path / "results"
    d.mkdir()
    (d / f"{STEM}.csv").write_text(HEADER + "".join(f"{p},{q},{g},{a},x\n" for p, q, g, a in ROWS))
    return d


def jury(url: str) -> list[str]:
    return [f"openai-compatible:{m}@{url}/v1" for m in ("yes", "no", "em")]


def test_jury_majority_ties_and_kappas(folder, tmp_path, capsys):
    with FakeApi(reply=reply) as api:
        assert judge_cli.main([str(folder), "--jury", *jury(api.url)]) == 0
        assert len(api.requests()) == 18  # 3 judges x 6 rows
        assert judge_cli.main([str(folder), "--jury", *jury(api.url)]) == 0
        assert len(api.requests()) == 18  # every judge's journal answers again
    out = capsys.readouterr().out
    assert "Jury of 3: 4 row(s) with a strict majority, 2 tie(s), 0 without a parseable verdict" in out
    stats = json.loads((folder / f"{STEM}_evaluationllm.json").read_text())
    # votes (yes, no, em): 1,0,1 | 1,0,1 | 1,0,0 | 1,0,0 | 1,0,- (tie) | 1,0,- (tie)
    assert stats["problem_accuracies"] == {"a_perm_0": 100.0, "a_perm_1": 100.0, "b_perm_0": 0.0,
                                           "b_perm_1": 0.0, "c_perm_0": 0.0, "c_perm_1": 0.0}
    assert stats["correct_examples"] == 2 and stats["llm_err_count"] == 2
    assert stats["accuracy"] == pytest.approx(200 / 6)
    record = json.loads((folder / f"{STEM}_evaluationllm.manifest.json").read_text())
    assert record["counts"]["jury"] == {"majority": 4, "tie": 2, "no verdict": 0}
    assert record["counts"]["jury_unparseable"] == {"openai-compatible:yes": 0, "openai-compatible:no": 0,
                                                    "openai-compatible:em": 2}
    assert record["judge"]["backend"] == "jury" and len(record["judge"]["jury"]) == 3
    assert "model" not in record["judge"] and record["judge"]["rule"].startswith("strict majority")  # no fake judge
    info = manifests.run_info(str(folder / f"{STEM}.csv")).judge
    assert manifests.judge_text(info).startswith(
        "scored by jury:openai-compatible:yes, openai-compatible:no, openai-compatible:em (paper); 6 rows")
    # the report's record of the replies names the members, not the first row's votes
    assert info["replies"]["jury"] == [{"judge": f"openai-compatible:{m}"} for m in ("yes", "no", "em")]
    rows = [json.loads(x) for x in (folder / f"{STEM}_judgements.jsonl").read_text().splitlines()]
    assert [r["jury_outcome"] for r in rows] == ["majority"] * 4 + ["tie"] * 2
    assert [m["reply"] for m in rows[4]["jury"]] == ["1", "0", "maybe"]
    assert len(list((folder / ".smmile" / "judge").glob("*.journal.jsonl"))) == 3

    out_dir = tmp_path / "agreement"
    assert agreement_cli.main([str(folder), "--judges", "--out", str(out_dir), "--n-boot", "200"]) == 0
    table = json.loads((out_dir / "agreement.json").read_text())["judges"]
    got = {(r["comparison"], r["rater_a"], r["rater_b"]): r for r in table if r["mode"] == "*"}
    assert {r["mode"] for r in table} == {"*", "ICL"}  # over all and per mode/format (one here)
    y, n, e = (f"openai-compatible:{m}" for m in ("yes", "no", "em"))
    expect = {  # (comparison, a, b): (n, percent, kappa, base problems)
        ("judge pair", y, n): (6, 0.0, 0.0, 3), ("judge pair", y, e): (4, 50.0, 0.0, 2),
        ("judge pair", n, e): (4, 50.0, 0.0, 2),
        ("vs exact match", y, "exact match"): (6, 50.0, 0.0, 3), ("vs exact match", n, "exact match"): (6, 50.0, 0.0, 3),
        ("vs exact match", e, "exact match"): (4, 100.0, 1.0, 2),
        ("vs exact match", "jury", "exact match"): (4, 100.0, 1.0, 2)}
    for key, (count, pct, kappa, clusters) in expect.items():
        r = got[key]
        assert (r["n"], r["n_clusters"]) == (count, clusters), key
        assert r["percent"] == pytest.approx(pct) and r["cohen_kappa"] == pytest.approx(kappa), key
        assert r["percent_low"] <= r["percent"] <= r["percent_high"]
    # Fleiss: P_i = 1/3 on the four 3-vote rows, 0 on the two 2-vote rows: P = 2/9; p_1 = 8/16: P_e = 1/2
    fleiss = got[("Fleiss", "3 judges", "")]
    assert fleiss["n"] == 6 and fleiss["fleiss_kappa"] == pytest.approx((2 / 9 - 0.5) / 0.5)
    assert fleiss["kappa_low"] <= fleiss["fleiss_kappa"] <= fleiss["kappa_high"]
    assert (out_dir / "agreement_judges.png").stat().st_size > 0


def test_a_jury_recorded_before_its_members_were_is_the_same_jury(folder, capsys):
    """Until 2026-12-03 a jury's record named it by a comma-joined "model"; that folder is judged again from the
    journals, and a different judge is told what differs."""
    with FakeApi(reply=reply) as api:
        assert judge_cli.main([str(folder), "--jury", *jury(api.url)]) == 0
        record = folder / f"{STEM}_evaluationllm.manifest.json"
        data = json.loads(record.read_text())
        data["judge"]["model"] = ", ".join(member["backend"] + ":" + member["model"] for member in data["judge"]["jury"])
        record.write_text(json.dumps(data))
        assert judge_cli.main([str(folder), "--jury", *jury(api.url)]) == 0
        assert len(api.requests()) == 18  # nothing sent again
        capsys.readouterr()
        assert judge_cli.main([str(folder), "--jury", *jury(api.url)[:2]]) == 2
    said = capsys.readouterr().err
    assert "was written by another judge (jury [" in said and "--overwrite" in said


def test_a_jury_of_one_is_that_judge(folder, tmp_path):
    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / f"{STEM}.csv").write_bytes((folder / f"{STEM}.csv").read_bytes())
    with FakeApi(reply=reply) as api:
        assert judge_cli.main([str(folder), "--jury", f"openai-compatible:em@{api.url}/v1"]) == 0
        assert judge_cli.main([str(alone), "--judge-backend", "openai-compatible", "--judge-model", "em",
                               "--judge-base-url", f"{api.url}/v1"]) == 0
    for name in (f"{STEM}_evaluationllm.json", f"{STEM}_judgements.jsonl"):
        assert (folder / name).read_text() == (alone / name).read_text()
    stats = json.loads((folder / f"{STEM}_evaluationllm.json").read_text())
    assert stats["correct_examples"] == 2 and stats["llm_err_count"] == 2  # two "maybe" replies


def test_jury_batch_sends_each_judge_through_the_batch_api(folder, tmp_path, monkeypatch):
    """Issue #22: --batch applies to every judge of a jury (one batch each), a rerun sends nothing, and the
    verdicts are the synchronous jury's."""
    from batch_fakes import FakeBatchApi

    sync = tmp_path / "sync"
    sync.mkdir()
    (sync / f"{STEM}.csv").write_bytes((folder / f"{STEM}.csv").read_bytes())
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-jury-test")

    def judges(url):
        return [f"anthropic:{m}@{url}" for m in ("yes", "em")]

    with FakeBatchApi(reply=reply, polls=2) as api:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)  # names the key's endpoint
        argv = [str(folder), "--batch", "--poll-interval", "0.02", "--jury", *judges(api.url)]
        assert judge_cli.main(argv) == 0
        created = api.created()
        assert [len(b["custom_ids"]) for b in created] == [6, 6] and {b["kind"] for b in created} == {"anthropic"}
        assert sorted(body["model"] for body in api.bodies().values()) == ["em"] * 6 + ["yes"] * 6
        assert judge_cli.main(argv) == 0
        assert len(api.created()) == 2  # every judge's journal answers: no new batch
    assert len(list((folder / ".smmile" / "judge").glob("*.batches.jsonl"))) == 2
    with FakeApi(reply=reply) as api:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
        assert judge_cli.main([str(sync), "--jury", *judges(api.url)]) == 0
        assert len(api.requests()) == 12
    assert (folder / f"{STEM}_evaluationllm.json").read_text() == (sync / f"{STEM}_evaluationllm.json").read_text()

    def replies(d):  # the batch folder's were read from the journal by the rerun (cached)
        return [[(m["judge"], m["reply"], m["value"]) for m in json.loads(x)["jury"]]
                for x in (d / f"{STEM}_judgements.jsonl").read_text().splitlines()]

    assert replies(folder) == replies(sync)


@pytest.mark.parametrize("spec, says", [("ollama", "BACKEND:MODEL"), ("nosuch:m", "unknown backend"),
                                        ("ollama:", "BACKEND:MODEL"), ("ollama:m@", "BACKEND:MODEL")])
def test_malformed_judge_spec_is_one_line_exit_2(folder, capsys, spec, says):
    assert judge_cli.main([str(folder), "--jury", spec]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and says in err and spec in err
    assert not (folder / f"{STEM}_evaluationllm.json").exists()


def test_same_judge_twice_and_mixed_flags_refused(folder, capsys):
    assert judge_cli.main([str(folder), "--jury", "ollama:a", "ollama:a@http://127.0.0.1:9"]) == 2
    assert "twice" in capsys.readouterr().err
    assert judge_cli.main([str(folder), "--judge-model", "x", "--jury", "ollama:a", "ollama:b"]) == 2
    assert "--judge-model" in capsys.readouterr().err


def test_outcome_counts_no_verdict_and_ties():
    from smmile.scoring.judge import outcome

    assert outcome([]) == (None, "no verdict")
    assert outcome([1, 0]) == (None, "tie")
    assert outcome([0, 1, 1]) == (1, "majority") and outcome([0, 0, 1, 1]) == (None, "tie")
    assert outcome([0]) == (0, "majority")


def test_agreement_without_matplotlib_writes_tables_and_warns(folder, tmp_path, monkeypatch, caplog):
    """matplotlib is an optional extra: without it the judges' figure is left out with a warning, the tables are
    written and the command succeeds (it exited 2 once the tables were written)."""
    from smmile import plotting
    from smmile.errors import MissingDependency

    with FakeApi(reply=reply) as api:
        assert judge_cli.main([str(folder), "--jury", *jury(api.url)]) == 0

    def missing():
        raise MissingDependency("matplotlib", "plots", why="figures")

    monkeypatch.setattr(plotting, "pyplot", missing)
    out_dir = tmp_path / "agreement"
    assert agreement_cli.main([str(folder), "--judges", "--out", str(out_dir), "--n-boot", "50"]) == 0
    assert json.loads((out_dir / "agreement.json").read_text())["judges"]
    assert not [p for p in out_dir.glob("agreement_judges.*") if p.suffix in (".png", ".svg")]
    assert "the judges' figure was not drawn" in caplog.text and "matplotlib" in caplog.text
