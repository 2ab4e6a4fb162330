"""``smmile report`` streams the dataset's images: the page is the one the earlier (all images in memory)
code wrote, byte for byte, and the report never holds every image of the dataset at once.

Inputs are made here, deterministically (numpy noise drawn into PNG/JPEG by Pillow): a SMMILE-style
dataset and its SMMILE++-style permutations (``<id>_perm_<k>``, sharing the base problem's images), file
rows shuffled so file order is not problem order, a missing image, an undecodable one and RGBA/L/JPEG
images; results with open answers, judge scores and replies, MCQA letters and an id the dataset lacks.
"""

from __future__ import annotations

import hashlib
import io
import json
import random
import re
import tracemalloc
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from smmile.cli import main as smmile
from smmile.data.parquet import write_dataset
from smmile.errors import MissingDependency
from smmile.report.explorer_page import unpacked
from smmile import plotting

# sha256 of the problem explorer's section of the page (``<section id="problems">…</section>``: its markup and
# the JSON with every thumbnail) and of its JSON alone. First recorded from the code before streaming (git
# fdb5079: 1ac643a8…/6c4b33fa…), which the streamed code matched byte for byte; recorded again when issue #22
# changed the explorer on purpose (reviews, packed texts, full-resolution images, pages without a dataset), from
# that code with --jobs 1 (thumbnails in this process) and --jobs 2 (in workers), which agree (Pillow 13.0.0,
# numpy 2.4.6, pandas 3.1.1, pyarrow 26.0.1). Recomputed only when the explorer is meant to change: again for
# issue #33 (each result's CSV sha256 and the result set's review key in the JSON; the review queue's markup),
# --jobs 1 and 2 agreeing.
SECTION_SHA256 = "8549fa628c9464364d4f8146e5cfd338f6143c18fdba896221fb2694fae3c743"
PAYLOAD_SHA256 = "9f626f13ad1327d3c790025eebd9c7ca74386611f773141098be1e50d29bcfb1"
ANSWERS = ["Red.", "Blue.", "Left", "Right", "3"]
FLAGS = {"flag_answer_format": ["free response", "numerical"], "flag_rarity": ["common", "uncommon"],
         "speciality": ["radiology", "pathology"]}


def image_bytes(seed: int, side: int, mode: str = "RGB", fmt: str = "PNG") -> bytes:
    """A noise image (incompressible: its PNG is about side² × channels bytes)."""
    from PIL import Image

    rng = np.random.default_rng(seed)
    pixels = rng.integers(0, 256, (side, side + seed % 7, 3), dtype=np.uint8)
    img = Image.fromarray(pixels).convert(mode)
    buffer = io.BytesIO()
    img.save(buffer, format=fmt, **({"quality": 90} if fmt == "JPEG" else {}))
    return buffer.getvalue()


def base_id(i: int) -> str:
    return f"{i:08x}-5eed-4000-8000-{i * 7919:012x}"


def base_problems(n: int, rows: int, side: int, special: bool) -> dict[str, list[dict]]:
    """``{base id: [record per order]}``; with ``special``, a missing, an undecodable, an RGBA, an L and a
    JPEG image among them."""
    problems = {}
    for b in range(n):
        pid = base_id(b + 1)
        flags = {name: values[b % len(values)] for name, values in FLAGS.items()}
        records = []
        for order in range(rows):
            image: bytes | None = image_bytes(100 * b + order, side)
            if special and (b, order) == (0, 1):
                image = None
            elif special and (b, order) == (1, 0):
                image = b"not an image"
            elif special and b == 2:
                image = image_bytes(100 * b + order, side, *[("RGBA", "PNG"), ("L", "PNG"), ("RGB", "JPEG")][order % 3])
            records.append({"problem_id": pid, "order": order, "question": f"Question {b}?",
                            "answer": ANSWERS[(b + order) % len(ANSWERS)],
                            "image": None if image is None else {"bytes": image, "path": f"{pid[:8]}_{order}.png"},
                            "image_url": f"https://example.org/{pid[:8]}_{order}.png", **flags})
        problems[pid] = records
    return problems


def permuted(problems: dict[str, list[dict]], perms: int) -> list[dict]:
    """SMMILE++-style records: ``<id>_perm_<k>`` with the examples rotated by k, the query last."""
    out = []
    for pid, records in problems.items():
        examples, query = records[:-1], records[-1]
        for k in range(1, perms + 1):
            turned = examples[k % len(examples):] + examples[:k % len(examples)] + [query]
            out += [{**r, "problem_id": f"{pid}_perm_{k}", "order": i} for i, r in enumerate(turned)]
    return out


def shuffled(records: list[dict], seed: int) -> list[dict]:
    records = list(records)
    random.Random(seed).shuffle(records)
    return records


def results(folder: Path, ids: list[str], truth: dict[str, str], extra: bool) -> Path:
    """gpt-4o open 0-shot and ICL (judge scores and replies) and an MCQA file; ``extra``: an id the dataset lacks."""
    folder.mkdir(parents=True)
    ids = ids + (["not-in-the-dataset"] if extra else [])
    for mode, every in (("0-shot", 3), ("ICL", 2)):
        rows = [{"problem_id": p, "final_question": "Q?", "true_answer": truth.get(p, "Here"),
                 "generated_answer": truth.get(p, "Here") if i % every == 0 else "no idea", "full_response": "x"}
                for i, p in enumerate(ids)]
        stem = folder / f"result_gpt-4o_{mode}_open"
        pd.DataFrame(rows).to_csv(f"{stem}.csv", index=False)
        judged = {p: (100.0 if i % every == 0 else 0.0) for i, p in enumerate(ids)}
        Path(f"{stem}_evaluationllm.json").write_text(json.dumps({"problem_accuracies": judged}))
        replies = [{"row": i, "problem_id": p, "status": "ok" if i % 5 else "error", "reply": f"reply {i} </script>"}
                   for i, p in enumerate(ids)]
        Path(f"{stem}_judgements.jsonl").write_text("".join(json.dumps(r) + "\n" for r in replies))
    mcqa = [{"problem_id": p, "original_question": "Q?", "correct_letter": "?", "correct_answer": truth.get(p, "Here"),
             "extracted_answer": "AB"[i % 2], "is_correct": i % 2 == 0, "full_response": "<answer>A</answer>"}
            for i, p in enumerate(ids)]
    pd.DataFrame(mcqa).to_csv(folder / "result_gpt-4o_ICL_mcqa.csv", index=False)
    return folder


def truth_of(records: list[dict]) -> dict[str, str]:
    last = {}
    for r in records:
        if r["order"] >= last.get(r["problem_id"], (-1, ""))[0]:
            last[r["problem_id"]] = (r["order"], r["answer"])
    return {p: a for p, (_, a) in last.items()}


@pytest.fixture
def no_figures(monkeypatch):
    """Figures left out (the page then depends on no matplotlib version)."""
    def missing():
        raise MissingDependency("matplotlib", "plots", why="figures")

    monkeypatch.setattr(plotting, "pyplot", missing)


def payload_text(page: bytes) -> str:
    return re.search(r'<script type="application/json" id="explorer-data">(.*?)</script>', page.decode(), re.S).group(1)


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_page_is_the_one_the_earlier_code_wrote(tmp_path, no_figures, jobs):
    base = base_problems(6, 4, 24, special=True)
    plain = [r for records in base.values() for r in records]
    plus = permuted(base, 3)
    write_dataset(shuffled(plain, 1), tmp_path / "ds", force=True)
    write_dataset(shuffled(plus, 2), tmp_path / "ds-pp", force=True)
    res = results(tmp_path / "res", list(base), truth_of(plain), extra=True)
    pp = results(tmp_path / "res-pp", sorted({r["problem_id"] for r in plus}), truth_of(plus), extra=False)
    out = tmp_path / "out"
    assert smmile(["report", str(res), "--plusplus", str(pp), "--dataset", f"SMMILE={tmp_path / 'ds'}",
                   "--dataset", f"SMMILE++={tmp_path / 'ds-pp'}", "--out", str(out), "--n-boot", "50",
                   "--jobs", jobs]) in (0, 1)  # warnings (figures left out, the extra problem): 1, or 0 since issue #20
    page = (out / "index.html").read_bytes()
    data = unpacked(json.loads(payload_text(page).replace("<\\/", "</")))
    assert len(data["problems"]) == 6 + 1 + 18 and "" in data["images"]  # the undecodable image: no thumbnail
    assert hashlib.sha256(payload_text(page).encode()).hexdigest() == PAYLOAD_SHA256
    section = re.findall(rb'<section id="problems">.*?</section>', page, re.S)
    assert len(section) == 1 and hashlib.sha256(section[0]).hexdigest() == SECTION_SHA256
    assert page.startswith(b"<!DOCTYPE html>\n") and page.endswith(b"</body>\n</html>\n") and b"<!--smmile" not in page
    assert str(tmp_path).encode() not in section[0], "no path of this machine in the explorer"


def test_the_images_are_never_all_in_memory(tmp_path, no_figures):
    """With every image read and thumbnailed in this process (``--jobs 1``), the report's peak of Python
    allocations stays under a quarter of the dataset's image bytes (the earlier code held them all)."""
    plus = permuted(base_problems(10, 3, 180, special=False), 24)
    total = sum(len(r["image"]["bytes"]) for r in plus)
    assert total > 60e6
    write_dataset(plus, tmp_path / "ds", force=True)
    res = results(tmp_path / "res", sorted({r["problem_id"] for r in plus}), truth_of(plus), extra=False)
    del plus
    tracemalloc.start()
    try:
        assert smmile(["report", str(res), "--dataset", str(tmp_path / "ds"), "--out", str(tmp_path / "out"),
                       "--n-boot", "50", "--jobs", "1"]) in (0, 1)  # figures left out: a warning
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < total / 4, f"peak {peak / 1e6:.1f} MB of Python allocations for {total / 1e6:.1f} MB of images"
