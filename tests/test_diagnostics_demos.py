"""Input conditions and demonstration policies (issue #34, deliverables 3 and 4) on the demo data, checked against
the source read independently: images swapped, filled or taken from another problem with questions kept and flagged;
the experts', random and retrieved demonstrations (a tiny random CLIP built locally), leave one problem out, same
seed same bytes, scores in the manifest."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from smmile.cli import main as smmile
from smmile.data.load import load_for_run, load_problems
from smmile.data.schema import MANIFEST

pytest.importorskip("transformers")


def variant(tmp_path: Path, name: str, *args: str, seed: int = 42) -> Path:
    out = tmp_path / name
    assert smmile(["data", "variant", *args, "--dataset", "demo", "--out", str(out), "--seed", str(seed)]) == 0
    return out


def manifest(path: Path) -> dict:
    return json.loads((path / MANIFEST).read_text())


@pytest.fixture(scope="module")
def source(demo_dir):
    return {p.problem_id: p for p in load_problems(str(demo_dir / "smmile"))}


@pytest.fixture(scope="module")
def encoder(tmp_path_factory):
    import os

    import tiny_encoder

    os.environ["SMMILE_EMBEDDING_DIR"] = str(tmp_path_factory.mktemp("embeddings"))
    return str(tiny_encoder.cached_clip())


def test_swapped_and_other_images_come_from_another_problem(tmp_path, source):
    for kind in ("swap-example-images", "other-query-image"):
        path = variant(tmp_path, kind, kind)
        notes = {n["problem_id"]: n for n in manifest(path)["problems"]}
        for p in load_problems(str(path)):
            original, donor = source[p.problem_id], source[notes[p.problem_id]["from_problem_id"]]
            assert donor.problem_id != p.problem_id
            assert [(r.question, r.answer) for r in p.rows] == [(r.question, r.answer) for r in original.rows]
            if kind == "other-query-image":
                assert p.query.image == donor.query.image and p.examples == original.examples
            else:
                assert p.query.image == original.query.image
                assert [r.image for r in p.examples] == [donor.examples[i % len(donor.examples)].image
                                                         for i in range(len(p.examples))]


@pytest.mark.parametrize("fill", ["blank", "noise"])
def test_blank_or_noise_images_in_place_of_deletion(tmp_path, source, fill):
    from PIL import Image
    import io

    path = variant(tmp_path, fill, "no-example-images", "--fill", fill)
    assert manifest(path)["images_dropped"] is None and manifest(path)["kind"] == f"no-example-images-{fill}"
    loaded = load_for_run(str(path))
    assert len(loaded.problems) == len(source) and not loaded.skipped
    for p in loaded.problems:
        assert p.query.image == source[p.problem_id].query.image
        for new, old in zip(p.examples, source[p.problem_id].examples):
            img = Image.open(io.BytesIO(new.image.data))
            assert img.size == old.image.size and new.image != old.image
            assert (len(set(img.getdata())) == 1) == (fill == "blank")
            refers = re.search(r"\b(this|the)\s+(\w+\s+)?(image|picture|photo|x-ray|scan)\b", new.question, re.I)
            assert (new.fields.get("image_referenced") == "true") == bool(refers), new.question


@pytest.mark.parametrize("policy", ["experts", "random", "leave-one-out"])
def test_policies_without_an_encoder(tmp_path, source, policy):
    args = ["--index", "1"] if policy == "leave-one-out" else []
    path = variant(tmp_path, policy, "demos", "--policy", policy, *args)
    assert manifest(path)["kind"] == f"demos-{policy}" + ("-1" if args else "")
    notes = {n["problem_id"]: n for n in manifest(path)["problems"]}
    for p in load_problems(str(path)):
        original = source[p.problem_id]
        assert (p.query.question, p.query.answer, p.query.image) == (original.query.question,
                                                                     original.query.answer, original.query.image)
        shown = [(r.question, r.answer, r.image) for r in p.examples]
        own = [(r.question, r.answer, r.image) for r in original.examples]
        if policy == "experts":
            assert shown == own
        elif policy == "leave-one-out":
            assert shown == own[:1] + own[2:]
        else:
            assert len(shown) == min(len(own), len(shown)) and not set(shown) & set(own)
            for s in notes[p.problem_id]["shown"]:
                donor = source[s["problem_id"]]
                assert donor.problem_id != p.problem_id
                assert donor.query.fields["speciality"] == original.query.fields["speciality"]


def test_retrieved_leave_one_problem_out_and_scores(tmp_path, source, encoder):
    import numpy as np
    from smmile.data.retrieval import Encoder

    last = variant(tmp_path, "last", "demos", "--policy", "retrieved-last", "--encoder", encoder)
    first = variant(tmp_path, "first", "demos", "--policy", "retrieved-first", "--encoder", encoder)
    info = manifest(last)
    assert info["retrieval"]["embed"] == "image" and info["retrieval"]["encoder"] == encoder
    model = Encoder(encoder)
    notes_first = {n["problem_id"]: n for n in manifest(first)["problems"]}
    for note, p in zip(info["problems"], load_problems(str(last))):
        own = source[p.problem_id]
        donors = [(s["problem_id"], s["example_index"]) for s in note["shown"]]
        assert all(pid != p.problem_id for pid, _ in donors)  # leave one problem out
        assert len(donors) == len(own.examples) and note["scores"] == sorted(note["scores"])  # most similar last
        assert notes_first[p.problem_id]["shown"] == note["shown"][::-1]
        # the best candidate outside the query's own problem is the one shown last, by an independent ranking
        q = model.embed("image", [own.query.image])[0]
        pool = [(pid, j, r) for pid, other in source.items() if pid != p.problem_id
                for j, r in enumerate(other.examples) if r.image.digest != own.query.image.digest]
        sims = np.array([float(q @ model.embed("image", [r.image])[0]) for _, _, r in pool])
        best = pool[int(np.argmax(sims))]
        assert note["scores"][-1] == pytest.approx(sims.max(), abs=1e-5)
        assert (best[0], best[1]) == donors[-1] or sims.max() - note["scores"][-1] < 1e-5
        assert [r.image for r in p.examples][-1] == source[donors[-1][0]].examples[donors[-1][1]].image


def test_retrieved_same_seed_same_bytes(tmp_path, encoder):
    a = variant(tmp_path / "a", "x", "demos", "--policy", "retrieved-last", "--encoder", encoder, "--embed", "both")
    b = variant(tmp_path / "b", "x", "demos", "--policy", "retrieved-last", "--encoder", encoder, "--embed", "both")
    files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    assert files and all((a / f).read_bytes() == (b / f).read_bytes() for f in files)


def test_bad_policy_parameters_are_one_line(tmp_path, capsys):
    for args in (["demos"], ["demos", "--policy", "retrieved-last"], ["demos", "--policy", "random", "--index", "1"],
                 ["demos", "--policy", "leave-one-out"], ["k-shot", "--k", "1", "--policy", "random"],
                 ["demos", "--policy", "retrieved-last", "--encoder", str(tmp_path / "nowhere")]):
        out = tmp_path / "x"
        assert smmile(["data", "variant", *args, "--dataset", "demo", "--out", str(out)]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("error:") and "\n" not in err and not out.exists(), err


def test_a_text_encoder_and_a_missing_open_clip(tmp_path, capsys):
    """Any transformers text encoder (mean pooled; a tiny BERT built here) retrieves by question; open_clip, an
    optional install, is one line naming the package when absent."""
    import importlib.util

    import tiny_models
    from transformers import BertConfig, BertModel

    tiny_models._seed()
    tok = tiny_models.build_tokenizer(["[UNK]", "[PAD]"], pad="[PAD]", unk="[UNK]", vocab_size=200)
    BertModel(BertConfig(vocab_size=len(tok), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                         intermediate_size=32)).save_pretrained(tmp_path / "bert")
    tok.save_pretrained(tmp_path / "bert")
    path = variant(tmp_path, "text", "demos", "--policy", "retrieved-first", "--encoder", str(tmp_path / "bert"))
    info = manifest(path)
    assert info["retrieval"]["embed"] == "text" and all(n["scores"] == sorted(n["scores"], reverse=True)
                                                        for n in info["problems"])
    assert smmile(["data", "variant", "demos", "--policy", "retrieved-last", "--encoder", str(tmp_path / "bert"),
                   "--embed", "image", "--dataset", "demo", "--out", str(tmp_path / "img")]) == 2
    assert "embeds text only" in capsys.readouterr().err
    if importlib.util.find_spec("open_clip") is None:
        assert smmile(["data", "variant", "demos", "--policy", "retrieved-last", "--encoder", "open_clip:ViT-B-32",
                       "--dataset", "demo", "--out", str(tmp_path / "oc")]) == 2
        err = capsys.readouterr().err.strip()
        assert "open_clip_torch" in err and "\n" not in err
