"""Dataset variants (smmile.data.variants): permute, noise-random/targeted, order-first/last."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from smmile.data import variant_datasets, variants
from smmile.cli.data import main as data_main
from smmile.data.demo import write_demo
from smmile.data.load import load_for_run, load_problems, read_records, resolve
from smmile.data.schema import MANIFEST, base_id
from smmile.errors import UserError
from smmile.protocol.problem import ImageRef, Problem, Row

PARQUET = Path("data") / "train-00000-of-00001.parquet"


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> str:
    return str(write_demo(tmp_path_factory.mktemp("demo"))["smmile"])


@pytest.fixture(scope="module")
def problems(demo):
    return load_problems(demo)


def key(row: Row) -> tuple:
    """Content identity of a row (ids and order numbers change in variants)."""
    return (row.question, row.answer, row.image.data if row.image else None, row.image_url)


def by_id(problems):
    return {p.problem_id: p for p in problems}


# -- permute ------------------------------------------------------------------------------------------
def test_permute_counts_and_distinct_orders(problems):
    out, notes = variants.permute_recorded(problems, seed=42)
    out_ids = by_id(out)
    sizes = {len(p.examples) for p in problems}
    assert {2, 3, 4} <= sizes and max(sizes) > 4  # the demo covers every case
    for p, note in zip(problems, notes):
        n = len(p.examples)
        expected = math.factorial(n) if n <= 4 else 24
        assert note["n_orders"] == expected
        assert note["ids"] == [f"{p.problem_id}_perm_{k}" for k in range(1, expected + 1)]
        seen = set()
        for pid, order in zip(note["ids"], note["orders"]):
            q = out_ids[pid]
            assert [key(r) for r in q.examples] == [key(p.examples[j]) for j in order]
            assert key(q.query) == key(p.query)
            assert [r.order for r in q.rows] == list(range(n + 1))
            seen.add(tuple(key(r) for r in q.examples))
        assert len(seen) == expected  # no duplicate orders
    assert [p.problem_id for p in out] == [pid for n in notes for pid in n["ids"]]


def test_permute_matches_the_demo_plusplus(demo, problems):
    plus = load_problems(str(Path(demo).parent / "plusplus"))
    assert [(p.problem_id, [key(r) for r in p.rows]) for p in plus] == \
           [(p.problem_id, [key(r) for r in p.rows]) for p in variants.permute(problems, seed=42)]


# -- noise --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["noise-random", "noise-targeted"])
def test_noise_adds_exactly_one_foreign_example(problems, kind):
    out, notes = variants.transform(kind, problems, seed=7)
    source = by_id(problems)
    assert [p.problem_id for p in out] == [p.problem_id for p in problems]
    for q, note in zip(out, notes):
        p = source[q.problem_id]
        assert len(q.examples) == len(p.examples) + 1
        assert 0 <= note["position"] <= len(p.examples)
        rest = [key(r) for i, r in enumerate(q.examples) if i != note["position"]]
        assert rest == [key(r) for r in p.examples] and key(q.query) == key(p.query)
        donor = source[note["donor_problem_id"]]
        assert donor.problem_id != p.problem_id
        assert key(q.examples[note["position"]]) == key(donor.examples[note["donor_example_index"]])
        assert q.examples[note["position"]].answer != p.query.answer or not note["irrelevant"]
        assert [r.order for r in q.rows] == list(range(len(q.rows)))
        assert all(r.problem_id == p.problem_id for r in q.rows)


def test_noise_targeted_prefers_the_same_speciality(problems):
    _, notes = variants.transform("noise-targeted", problems, seed=3)
    source = by_id(problems)
    for note in notes:
        mine, donor = source[note["problem_id"]].query.fields, source[note["donor_problem_id"]].query.fields
        if note["match"] == "speciality":
            assert donor["speciality"] == mine["speciality"]
        else:  # no other problem of that speciality
            assert not [p for p in problems if p.problem_id != note["problem_id"]
                        and p.query.fields["speciality"] == mine["speciality"]]


def _problem(pid: str, speciality: str, image_type: str, answers: list[str]) -> Problem:
    fields = {"speciality": speciality, "flag_image_type": image_type}
    rows = tuple(Row(pid, i, f"q{i}", a, ImageRef(f"{pid}{i}".encode()), None, dict(fields))
                 for i, a in enumerate(answers))
    return Problem(pid, rows)


def test_noise_targeted_falls_back_to_image_type_then_random():
    ps = [_problem("a", "derm", "CT", ["x", "y", "z"]), _problem("b", "derm", "MRI", ["u", "v", "w"]),
          _problem("c", "eye", "CT", ["s", "t", "r"]), _problem("d", "lung", "EEG", ["k", "l", "m"])]
    notes = {n["problem_id"]: n for n in variants.transform("noise-targeted", ps, seed=1)[1]}
    assert (notes["a"]["match"], notes["a"]["donor_problem_id"]) == ("speciality", "b")
    assert (notes["c"]["match"], notes["c"]["donor_problem_id"]) == ("image_type", "a")
    assert notes["d"]["match"] == "random" and notes["d"]["donor_problem_id"] != "d"


def test_noise_avoids_examples_with_the_query_answer():
    ps = [_problem("a", "derm", "CT", ["x", "y", "x"]), _problem("b", "derm", "CT", ["x", "x", "x"]),
          _problem("c", "derm", "CT", ["x", "q", "x"])]
    for seed in range(20):
        for q, note in zip(*variants.transform("noise-random", ps, seed=seed)):
            assert note["irrelevant"] and q.examples[note["position"]].answer != q.query.answer


def test_noise_needs_two_problems():
    with pytest.raises(UserError):
        variants.transform("noise-random", [_problem("a", "derm", "CT", ["x", "y"])], seed=1)


def test_noise_draws_do_not_depend_on_other_problems(problems):
    full = {n["problem_id"]: n for n in variants.transform("noise-random", problems, seed=5)[1]}
    half = variants.transform("noise-random", problems[: len(problems) // 2], seed=5)[1]
    assert all(n["position"] == full[n["problem_id"]]["position"] for n in half)


# -- order --------------------------------------------------------------------------------------------
def test_order_first_and_last_move_the_relevant_example(problems):
    first, first_notes = variants.transform("order-first", problems)
    last, _ = variants.transform("order-last", problems)
    eligible = [p for p in problems if any(r.answer == p.query.answer for r in p.examples)]
    assert [p.problem_id for p in first] == [p.problem_id for p in last] == [p.problem_id for p in eligible]
    assert len(eligible) < len(problems)  # the demo has a problem without a matching example
    for p, f, l, note in zip(eligible, first, last, [n for n in first_notes if n["kept"]]):
        index = note["moved_from"]
        assert p.examples[index].answer == p.query.answer
        assert all(r.answer != p.query.answer for r in p.examples[:index])
        others = [key(r) for i, r in enumerate(p.examples) if i != index]
        assert [key(r) for r in f.examples] == [key(p.examples[index])] + others
        assert [key(r) for r in l.examples] == others + [key(p.examples[index])]
        assert key(f.query) == key(l.query) == key(p.query)
    assert all(not n["matches"] for n in first_notes if not n["kept"])


# -- writing ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", variants.OPTION_VARIANTS)
def test_written_variant_is_byte_identical_and_loadable(demo, tmp_path, kind):
    a = variant_datasets.write_variant(demo, kind, tmp_path / "a", seed=11)
    b = variant_datasets.write_variant(demo, kind, tmp_path / "b", seed=11)
    assert (a / PARQUET).read_bytes() == (b / PARQUET).read_bytes()
    assert (a / MANIFEST).read_bytes() == (b / MANIFEST).read_bytes()
    manifest = json.loads((a / MANIFEST).read_text())
    assert manifest["kind"] == kind and manifest["seed"] == 11
    assert manifest["source"]["fingerprint"] and manifest["counts"]["source_problems"] == 24
    loaded = load_for_run(str(a))
    assert len(loaded.problems) == manifest["counts"]["problems"]
    expected = variants.transform(kind, load_problems(demo), seed=11)[0]
    assert [(p.problem_id, [key(r) for r in p.rows]) for p in loaded.problems] == \
           [(p.problem_id, [key(r) for r in p.rows]) for p in expected]
    assert set(read_records(resolve(str(a)))[0]) >= {"speciality", "flag_image_type", "image_url"}


def test_another_seed_gives_another_noise(demo, tmp_path):
    a = variant_datasets.write_variant(demo, "noise-random", tmp_path / "a", seed=1)
    b = variant_datasets.write_variant(demo, "noise-random", tmp_path / "b", seed=2)
    assert (a / PARQUET).read_bytes() != (b / PARQUET).read_bytes()


def test_noisy_dataset_maps_the_original_flag_and_caches(demo, tmp_path, monkeypatch):
    monkeypatch.setenv("SMMILE_VARIANT_DIR", str(tmp_path / "cache"))
    path = variant_datasets.noisy_dataset(demo, "AddOneExample-BySpeciality", seed=42)
    manifest = json.loads((Path(path) / MANIFEST).read_text())
    assert manifest["kind"] == "noise-targeted" and Path(path).parent == tmp_path / "cache"
    stamp = (Path(path) / PARQUET).stat().st_mtime_ns
    assert variant_datasets.noisy_dataset(demo, "noise-targeted", seed=42) == path
    assert (Path(path) / PARQUET).stat().st_mtime_ns == stamp  # built once
    other = variant_datasets.noisy_dataset(demo, "AddOneExample", seed=42)
    assert json.loads((Path(other) / MANIFEST).read_text())["kind"] == "noise-random"
    assert variant_datasets.noisy_output_dir("../results", "AddOneExample") == Path("../results_noise-random")
    with pytest.raises(UserError):
        variants.canonical_kind("AddTwoExamples")


def test_cli_writes_a_variant(demo, tmp_path, capsys):
    assert data_main(["variant", "order-last", "--dataset", demo, "--out", str(tmp_path / "v"), "--seed", "3"]) == 0
    assert "order-last (seed 3)" in capsys.readouterr().out
    assert (tmp_path / "v" / PARQUET).is_file()
    assert data_main(["variant", "order-last", "--dataset", str(tmp_path / "nope"), "--out", str(tmp_path / "w")]) == 2


def test_noise_relaxes_irrelevance_only_when_it_must():
    ps = [_problem("a", "derm", "CT", ["x", "x", "x"]), _problem("b", "derm", "CT", ["x", "x", "x"])]
    out, notes = variants.transform("noise-random", ps, seed=4)
    assert [n["irrelevant"] for n in notes] == [False, False]
    assert [n["donor_problem_id"] for n in notes] == ["b", "a"]


def test_noise_on_a_permuted_set_takes_donors_from_other_base_problems(problems):
    plus = variants.permute(problems[:3], seed=1)
    for note in variants.transform("noise-random", plus, seed=2)[1]:
        assert base_id(note["donor_problem_id"]) != base_id(note["problem_id"])
