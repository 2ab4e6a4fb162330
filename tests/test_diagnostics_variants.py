"""ICL diagnostic variants (issue #23) on the demo data: structure of each variant checked against the source
dataset read independently, same seed same bytes, images dropped exactly where intended, and the refusal of a
preset whose original script cannot represent a missing image."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from smmile.cli import main as smmile
from smmile.data.load import load_for_run, load_problems
from smmile.data.schema import MANIFEST


def variant(tmp_path: Path, kind: str, *flags: str, seed: int = 42) -> Path:
    out = tmp_path / "-".join((kind, *flags, str(seed))).replace("--", "")
    assert smmile(["data", "variant", kind, *flags, "--dataset", "demo", "--out", str(out), "--seed", str(seed)]) == 0
    return out


@pytest.fixture(scope="module")
def source(demo_dir):
    return {p.problem_id: p for p in load_problems(str(demo_dir / "smmile"))}


def manifest(path: Path) -> dict:
    return json.loads((path / MANIFEST).read_text())


def norm(text: str) -> str:
    return re.sub(r"[\W_]+", " ", text).strip().lower()


def test_k_shot_keeps_the_first_k_and_nests(tmp_path, source):
    kept = {}
    for k in (1, 2, 3):
        path = variant(tmp_path, "k-shot", "--k", str(k))
        assert manifest(path)["kind"] == f"k-shot-{k}"
        problems = load_problems(str(path))
        assert [p.problem_id for p in problems] == list(source)
        for p in problems:
            original = source[p.problem_id]
            assert p.query == original.query and p.examples == original.examples[:k]
        kept[k] = {p.problem_id: p.examples for p in problems}
        short = {n["problem_id"] for n in manifest(path)["problems"] if n["short"]}
        assert short == {pid for pid, p in source.items() if len(p.examples) < k}
    for pid in source:  # nested: k=1 is inside k=2, k=2 inside k=3
        assert kept[2][pid][:1] == kept[1][pid] and kept[3][pid][:2] == kept[2][pid]


def test_flip_answers_is_a_consistent_flip_of_the_problems_own_answers(tmp_path, source, capsys):
    """Binary: yes <-> no; otherwise a derangement of the problem's distinct example answers (each answer maps to
    another of them, the same one every time); what could not be flipped is counted and printed."""
    path = variant(tmp_path, "flip-answers")
    info = manifest(path)
    unchanged = 0
    for p in load_problems(str(path)):
        original = source[p.problem_id]
        assert p.query.answer == original.query.answer and len(p.examples) == len(original.examples)
        own = {norm(r.answer) for r in original.examples}
        mapping: dict = {}
        for new, old in zip(p.examples, original.examples):
            assert (new.question, new.image) == (old.question, old.image)
            mapping.setdefault(norm(old.answer), set()).add(norm(new.answer))
            if norm(old.answer) in ("yes", "no"):
                assert norm(new.answer) == {"yes": "no", "no": "yes"}[norm(old.answer)]
            elif len(own) > 1:
                assert norm(new.answer) in own and norm(new.answer) != norm(old.answer)
            else:
                unchanged += 1
        assert all(len(v) == 1 for v in mapping.values())  # consistent within the problem
        if len(own) > 1 and not own <= {"yes", "no"}:
            assert sorted(next(iter(v)) for v in mapping.values()) == sorted(own)  # a permutation of its answers
    assert info["counts"]["not_changed"] == unchanged == sum(n["not_changed"] for n in info["problems"])
    shown = {p.problem_id: p for p in load_problems(str(path))}
    gold = [pid for pid, p in shown.items() if any(norm(r.answer) == norm(p.query.answer) for r in p.examples)]
    assert info["counts"]["gold_among_examples"] == gold


@pytest.mark.parametrize("kind", ["random-labels", "unrelated-labels", "no-answers"])
def test_other_label_conditions(tmp_path, source, kind):
    path = variant(tmp_path, kind)
    for p in load_problems(str(path)):
        original = source[p.problem_id]
        fmt, spec = original.query.fields["flag_answer_format"], original.query.fields["speciality"]
        others = [q for pid, q in source.items() if pid != p.problem_id]
        mapping: dict = {}
        for new, old in zip(p.examples, original.examples):
            if kind == "no-answers":
                assert new.answer == ""
                continue
            assert norm(new.answer) != norm(p.query.answer)  # never the gold answer
            if new.answer == old.answer:
                continue
            pool = [q for q in others if (q.query.fields["flag_answer_format"] == fmt if kind == "random-labels"
                                          else q.query.fields["speciality"] != spec)]
            assert any(new.answer in q.answers() for q in pool)
            mapping.setdefault(norm(old.answer), set()).add(new.answer)
        if kind == "unrelated-labels":
            assert all(len(v) == 1 for v in mapping.values())


def test_a_label_fraction_changes_a_share(tmp_path, source, capsys):
    info = manifest(variant(tmp_path, "random-labels", "--fraction", "0.5"))
    assert info["kind"] == "random-labels-0.5"
    for note in info["problems"]:
        n = len(source[note["problem_id"]].examples)
        assert note["chosen"] == int(n * 0.5 + 0.5) and note["changed"] <= note["chosen"]


def test_unflipped_examples_are_printed(tmp_path, capsys):
    capsys.readouterr()
    info = manifest(variant(tmp_path, "flip-answers"))
    out = capsys.readouterr().out
    assert info["counts"]["not_changed"] > 0  # the demo has problems with one distinct answer
    assert f"{info['counts']['not_changed']} chosen example(s) could not be changed" in out


@pytest.mark.parametrize("kind, whose", [("no-example-images", "examples"), ("no-query-image", "query")])
def test_images_dropped_exactly_where_intended(tmp_path, source, kind, whose):
    path = variant(tmp_path, kind)
    assert manifest(path)["images_dropped"] == whose
    loaded = load_for_run(str(path))
    assert [p.problem_id for p in loaded.problems] == list(source) and loaded.skipped == []
    for p in loaded.problems:
        original = source[p.problem_id]
        for i, (new, old) in enumerate(zip(p.rows, original.rows)):
            drop = (i < len(p.rows) - 1) == (whose == "examples")
            assert (new.question, new.answer) == (old.question, old.answer)
            assert new.image == (None if drop else old.image)
            assert (new.fields.get("image_dropped") == "true") == drop


def test_an_unmarked_missing_image_still_drops_the_problem(tmp_path):
    import pyarrow.parquet as pq

    path = variant(tmp_path, "no-query-image")
    parquet = next(path.rglob("*.parquet"))
    table = pq.read_table(parquet)
    rows = table.to_pylist()
    rows[0]["image_dropped"] = None  # an empty image cell without the marker: a missing download
    rows[0]["image"] = None
    pq.write_table(table.from_pylist(rows, schema=table.schema), parquet)
    loaded = load_for_run(str(path))
    assert rows[0]["problem_id"] in {pid for pid, _ in loaded.skipped}


@pytest.mark.parametrize("kind, flags", [("k-shot", ("--k", "2")), ("k-shot", ("--k", "2", "--draw", "3")),
                                         ("flip-answers", ()), ("random-labels", ("--fraction", "0.5")),
                                         ("unrelated-labels", ()), ("no-example-images", ("--fill", "noise")),
                                         ("no-query-image", ()), ("swap-example-images", ()),
                                         ("other-query-image", ())])
def test_same_seed_same_bytes(tmp_path, kind, flags):
    a, b = variant(tmp_path / "a", kind, *flags), variant(tmp_path / "b", kind, *flags)
    files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    assert files and all((a / f).read_bytes() == (b / f).read_bytes() for f in files)
    if kind in ("random-labels", "swap-example-images"):
        c = variant(tmp_path / "c", kind, *flags, seed=7)
        assert manifest(c)["problems"] != manifest(a)["problems"]


def test_bad_parameters_are_one_line(tmp_path, capsys):
    for args in (["k-shot"], ["k-shot", "--k", "0"], ["no-query-image", "--k", "2"], ["flip-answers", "--fraction", "2"]):
        out = tmp_path / "x"
        assert smmile(["data", "variant", *args, "--dataset", "demo", "--out", str(out)]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("error:") and "\n" not in err and not out.exists()


@pytest.mark.parametrize("front", ["run", "script"])
def test_a_preset_that_cannot_represent_a_missing_image_refuses(tmp_path, capsys, front):
    from smmile.cli.local_models import qwen_main

    path = variant(tmp_path, "no-example-images")
    out = tmp_path / "results"
    if front == "run":
        code = smmile(["run", "--model", "qwen3B", "--dataset", str(path), "--output-dir", str(out)])
    else:
        code = qwen_main(["--dataset", str(path), "--output_dir", str(out)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err and "inference_qwen.py" in err
    assert not out.exists()


def test_who_may_run_a_variant_without_images(tmp_path):
    """hf:/vllm: (generic), the API chat models, the text-only Llama 3.3 baseline and random/majority run it; every
    local-model preset's family refuses, naming its original script."""
    from smmile.data.variant_datasets import refuse_dropped_images
    from smmile.errors import UserError
    from smmile.models import registry
    from smmile.runner.run import Runner, RunSpec

    path = str(variant(tmp_path, "no-query-image"))
    for name in registry.names():
        family = Runner(RunSpec(model=name, dataset=path)).family
        if name in ("random", "majority") or family.output_key in ("api", "llama33textonly"):
            refuse_dropped_images(path, output_key=family.output_key)
        elif family.output_key != "generic":
            with pytest.raises(UserError, match=f"inference_{family.output_key}.py"):
                refuse_dropped_images(path, output_key=family.output_key)
    refuse_dropped_images(path, output_key=Runner(RunSpec(model="hf:some/model", dataset=path)).family.output_key)
    refuse_dropped_images(str(tmp_path), output_key="qwen")  # not a variant: nothing to refuse
