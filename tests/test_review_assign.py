"""Several reviewers (issue #33, deliverable 3): `smmile review assign` writes each reviewer's seeded, stratified
list with a share double-coded; the lists load into the report's review queue; the answers two reviewers
labelled differently are adjudicated side by side; `smmile agreement --reviews` compares the reviewers per model
and per stratum, and the judge against the adjudicated label. Counts below are made by hand from the lists."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from smmile.cli import main as smmile
from smmile.scoring import scores as stats
from test_explorer_review import open_page
from test_review_queue import export, name


def lists(folder) -> dict:
    return {json.loads(p.read_text())["reviewer"]: json.loads(p.read_text()) for p in sorted(folder.glob("assignment_*.json"))}


def key(item) -> tuple:
    return item["problem_id"], item["model"], item["mode"], item["format"]


def test_assign_is_seeded_stratified_and_double_codes_a_share(reports, tmp_path, capsys):
    argv = ["review", "assign", str(reports["res"]), "--reviewers", "ann", "bob", "cy", "--size", "8", "--double", "0.25",
            "--seed", "3"]
    assert smmile(argv + ["--out", str(tmp_path / "a")]) == 0
    assert "ann: 8 answers (2 double-coded)" in capsys.readouterr().out
    found = lists(tmp_path / "a")
    assert set(found) == {"ann", "bob", "cy"} and all(f["format"] == "smmile-assignment/1" for f in found.values())
    seen = Counter(key(i) for f in found.values() for i in f["items"])
    doubles = {key(i) for f in found.values() for i in f["items"] if i["double"]}
    # round(0.25 x 8 x 3 / 2) = 3 answers in two lists each, the other 24 - 6 = 18 in one
    assert all(len(f["items"]) == len({key(i) for i in f["items"]}) == 8 for f in found.values())
    assert len(doubles) == 3 and all(seen[k] == 2 for k in doubles) and sum(v == 1 for v in seen.values()) == 18
    records = stats.load_records(str(reports["res"]))
    answers = {(str(p), r.model, r.mode, "mcqa" if r.metric == "MCQA" else "open") for r in records
               if r.metric in ("EM", "MCQA") for p in r.scores.index}
    assert set(seen) <= answers
    strata = Counter((i["model"], i["mode"]) for f in found.values() for i in f["items"])
    assert max(strata.values()) - min(strata.values()) <= 3, "spread over model x mode"
    assert smmile(argv + ["--out", str(tmp_path / "b")]) == 0 and lists(tmp_path / "b") == found
    assert smmile(argv[:-1] + ["4", "--out", str(tmp_path / "c")]) == 0 and lists(tmp_path / "c") != found
    assert smmile(argv + ["--double", "1.5", "--out", str(tmp_path / "d")]) == 2
    assert "--double 1.5" in capsys.readouterr().err


@pytest.mark.slow
def test_assignments_reviewed_adjudicated_and_counted(browser, reports, tmp_path):
    assert smmile(["review", "assign", str(reports["res"]), "--reviewers", "ann", "bob", "--size", "6", "--double", "0.5",
                   "--seed", "5", "--out", str(tmp_path / "lists")]) == 0
    found = lists(tmp_path / "lists")
    shared = {key(i) for i in found["ann"]["items"]} & {key(i) for i in found["bob"]["items"]}
    assert len(shared) == 3  # round(0.5 x 6 x 2 / 2)
    page, errors = open_page(browser, reports["main"] / "index.html", "#problems")
    page.click(".rqbox > summary")
    files = []
    for who, press in (("ann", "1"), ("bob", "0")):
        page.set_input_files("#rq-assign", str(next((tmp_path / "lists").glob(f"assignment_{who}.json"))))
        page.wait_for_function(f"document.getElementById('rq-said').textContent.includes('assignment of {who}')")
        assert "6 of 6 answers in this report" in page.inner_text("#rq-said")
        assert page.input_value("#ex-reviewer") == who
        for _ in range(6):
            page.keyboard.press(press)
            page.keyboard.press("j")
        files.append(tmp_path / f"{who}.json")
        exported = export(page, files[-1])
        assert {key(r) for r in exported} == {key(i) for i in found[who]["items"]}
    name(page, "adj")
    page.set_input_files("#rq-adjudicate", [str(f) for f in files])
    page.wait_for_function("document.getElementById('rq-said').textContent.includes('disputed')")
    assert page.inner_text("#rq-said").startswith("3 disputed answer(s) from 2 file(s)")
    decided = []
    for i in range(3):
        side = page.inner_text("#rq-item table.answers")
        assert "ann\tcorrect" in side and "bob\tincorrect" in side, "the reviews side by side"
        page.keyboard.press("1" if i == 0 else "0")
        decided.append(1 if i == 0 else 0)
        page.keyboard.press("j")
    adjudicated = export(page, tmp_path / "adj.json")
    assert len(adjudicated) == 3 and all(r["adjudicated"] and not r["blind"] for r in adjudicated)
    assert all(r["strata"] for r in adjudicated), "the problem's strata travel with each review"
    assert not errors

    out = tmp_path / "agreement"
    assert smmile(["agreement", str(reports["res"]), "--reviews", *map(str, files), str(tmp_path / "adj.json"),
                   "--out", str(out), "--n-boot", "50"]) == 0
    data = json.loads((out / "agreement.json").read_text())
    pairs = [r for r in data["reviews"] if r["comparison"] == "reviewer pair"]
    assert all({r["rater_a"], r["rater_b"]} == {"ann", "bob"} for r in pairs), "the adjudicator is no third reviewer"
    ann_bob = pairs
    assert [r for r in ann_bob if r["by"] == "all"][0]["n"] == 3 and [r for r in ann_bob if r["by"] == "all"][0]["percent"] == 0
    by_model = Counter(k[1] for k in shared)
    if len(by_model) > 1:
        assert {(r["stratum"], r["n"]) for r in ann_bob if r["by"] == "model"} == set(by_model.items())
    assert {r["by"] for r in pairs} - {"all", "model"}, "kappa per stratum (speciality, flags) of the problems"
    cells = {(c["problem_id"], c["model"], c["mode"], c["format"]): c for c in data["reviewed_cells"]}
    labels = {key(r): {"correct": 1.0, "incorrect": 0.0}[r["review"]] for r in adjudicated}
    assert {k: cells[k]["reviewed"] for k in labels} == labels and all(cells[k]["adjudicated"] for k in labels)
