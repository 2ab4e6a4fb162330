"""The problem explorer's "prompt as sent" (report/explorer_prompts.py), end to end, against what the model was
actually given: `smmile run` of a served chat model on the fake OpenAI-compatible server (MCQA ICL, open ICL,
open 0-shot), `smmile report RESULTS --dataset demo`, the explorer's data read back from the page, and for every
problem each shown prompt compared with the request body the server logged for that problem (the system prompt,
every turn's role and text in order, the images' number, order and pixels, and for MCQA the options in the order
sent), also after the system prompt changed (the runs recorded their requests). Then a tiny `hf:` checkpoint whose chat template refuses a system turn (the run folds the system prompt into
the first user turn): the shown messages, rendered by the checkpoint's own chat template, must be the text its
processor was given for that problem, with the same images."""

from __future__ import annotations

import base64
import csv
import io
import json
import re
from pathlib import Path

import numpy as np
import pytest

from api_server import FakeApi
from smmile.cli import main as smmile
from smmile.report.explorer_page import unpacked

pytestmark = pytest.mark.slow

RUNS = (("ICL", "mcqa"), ("ICL", "open"), ("0-shot", "open"))
REQUEST = re.compile(r"<think>request (\d+)</think>")


def reply(record: dict) -> str:
    """The request's number in the reply: the result CSV's full_response then names the body of each problem."""
    return f"<think>request {record['n']}</think>\n<answer>A</answer>"


# -- reading the page --------------------------------------------------------------------------------------
def explorer_data(page: Path) -> dict:
    found = re.search(r'<script type="application/json" id="explorer-data">(.*?)</script>', page.read_text(), re.S)
    return unpacked(json.loads(found.group(1).replace("<\\/", "</")))


def on_white(img) -> np.ndarray:
    """An image's RGB pixels with any transparency composited on white (as the explorer's thumbnails are)."""
    from PIL import Image

    img = img.convert("RGBA")
    flat = Image.new("RGBA", img.size, (255, 255, 255, 255))
    flat.alpha_composite(img)
    return np.asarray(flat.convert("RGB"), dtype=np.float32)


def decoded(uri_or_b64: str):
    from PIL import Image

    data = uri_or_b64.split(",", 1)[1] if uri_or_b64.startswith("data:") else uri_or_b64
    return Image.open(io.BytesIO(base64.b64decode(data)))


class Thumbnails:
    """The page's images (JPEG thumbnails, each no smaller than the demo's images), to find which one a picture is."""

    def __init__(self, uris: list[str]):
        self.pixels = [on_white(decoded(u)) if u else None for u in uris]

    def diff(self, index: int, picture: np.ndarray) -> float:
        shown = self.pixels[index]
        return float("inf") if shown is None or shown.shape != picture.shape else float(np.abs(shown - picture).mean())

    def check(self, index: int, img, where: str) -> None:
        """The picture `img` is the page's image `index`: close to it (JPEG loss only) and closer than to any other."""
        picture = on_white(img)
        diffs = [self.diff(i, picture) for i in range(len(self.pixels))]
        assert diffs[index] < 6.0, f"{where}: the image shown (#{index}) is not the one sent (mean diff {diffs[index]:.1f})"
        assert int(np.argmin(diffs)) == index or diffs[int(np.argmin(diffs))] == diffs[index], where


def shown_prompt(data: dict, problem: dict, result: int) -> dict:
    """A problem's prompt for result `result` as the page holds it: messages [(role, [("text", s) | ("image", i)])],
    the query turn and the options, texts resolved."""
    strings = data["strings"]
    entry = problem["pr"][str(result)]
    messages = [(strings[role], [("image", part[0]) if isinstance(part, list) else ("text", strings[part])
                                 for part in parts]) for role, parts in entry.get("m", [])]
    return {"messages": messages, "target": strings[entry["t"]],
            "options": [(strings[a], strings[b]) for a, b in entry.get("o", [])],
            "note": strings[entry["n"]] if "n" in entry else ""}


def result_index(data: dict, mode: str, fmt: str) -> int:
    found = [i for i, r in enumerate(data["results"]) if (r["mode"], r["fmt"]) == (mode, fmt)]
    assert len(found) == 1, data["results"]
    return found[0]


# -- what was sent -----------------------------------------------------------------------------------------
def wire_turns(body: dict) -> list:
    """An OpenAI chat body as [(role, [("text", s) | ("image", PIL image)])]."""
    out = []
    for m in body["messages"]:
        content = m["content"]
        if isinstance(content, str):
            parts = [("text", content)]
        else:
            parts = [("text", p["text"]) if p["type"] == "text" else ("image", decoded(p["image_url"]["url"]))
                     for p in content]
        out.append((m["role"], parts))
    return out


def sent_options(text: str) -> list[tuple[str, str]]:
    """The MCQA options in the order the query turn lists them."""
    block = re.search(r"following options:\n(.*?)\n\n", text, re.S)
    assert block, text
    return [tuple(line.split(". ", 1)) for line in block.group(1).splitlines()]


def bodies_by_problem(csv_path: Path, api: FakeApi) -> dict[str, dict]:
    bodies = {r["n"]: r["body"] for r in api.requests("openai")}
    out = {}
    with open(csv_path, newline="") as f:
        for row in csv.DictReader(f):
            n = int(REQUEST.search(row["full_response"]).group(1))
            out[row["problem_id"]] = bodies[n]
    return out


@pytest.fixture(scope="module")
def served(tmp_path_factory, demo_dir):
    """Three runs of `my-model` on the fake server, the report of their folder, and the bodies it received."""
    import os

    root = tmp_path_factory.mktemp("explorer-prompts")
    results = root / "results"
    saved = os.environ.pop("OPENAI_API_KEY", None)
    try:
        with FakeApi(reply=reply) as api:
            for mode, fmt in RUNS:
                assert smmile(["run", "--backend", "openai-compatible", "--base-url", f"{api.url}/v1",
                               "--model", "my-model", "--dataset", "demo", "--output-dir", str(results),
                               "--inference_mode", mode, "--task_format", fmt]) == 0
            assert len(api.requests()) == len(api.requests("openai")) == 3 * 24  # one request per problem and run
            sent = {(mode, fmt): bodies_by_problem(results / f"result_my-model_{mode}_{fmt}.csv", api)
                    for mode, fmt in RUNS}
    finally:
        if saved is not None:
            os.environ["OPENAI_API_KEY"] = saved
    with pytest.MonkeyPatch.context() as patch:  # the prompt template changed after the runs: shown as sent
        patch.setattr("smmile.models.api.chat_family.API_SYSTEM", "A system prompt written after the runs.")
        assert smmile(["report", str(results), "--dataset", "demo", "--out", str(root / "report"),
                       "--n-boot", "50"]) == 0
    return explorer_data(root / "report" / "index.html"), sent


@pytest.mark.server
@pytest.mark.parametrize("mode,fmt", RUNS)
def test_the_prompt_shown_is_the_request_the_server_received(served, mode, fmt):
    data, sent = served
    bodies = sent[(mode, fmt)]
    assert len(bodies) == 24
    result = result_index(data, mode, fmt)
    thumbs = Thumbnails(data["images"])
    problems = {p["id"]: p for p in data["problems"]}
    assert set(bodies) <= set(problems)
    assert all(str(result) in problems[pid].get("pr", {}) for pid in bodies), "a prompt for every problem of the run"
    for pid, body in bodies.items():
        shown, wire = shown_prompt(data, problems[pid], result), wire_turns(body)
        where = f"{mode} {fmt} {pid}"
        assert body["model"] == "my-model"
        assert shown["note"] == ""
        # the system prompt, then every turn's role and its parts (text and images) in order
        assert wire[0][0] == "system" and shown["messages"][0] == ("system", wire[0][1]), where
        assert [role for role, _ in shown["messages"]] == [role for role, _ in wire], where
        assert len(wire) == (2 + 2 * len(problems[pid]["ex"]) if mode == "ICL" else 2), where
        for (_, shown_parts), (_, wire_parts) in zip(shown["messages"], wire):
            assert [kind for kind, _ in shown_parts] == [kind for kind, _ in wire_parts], where
            assert [t for k, t in shown_parts if k == "text"] == [t for k, t in wire_parts if k == "text"], where
        shown_images = [i for _, parts in shown["messages"] for k, i in parts if k == "image"]
        wire_images = [img for _, parts in wire for k, img in parts if k == "image"]
        assert len(shown_images) == len(wire_images) == (1 + len(problems[pid]["ex"]) if mode == "ICL" else 1), where
        for k, (index, img) in enumerate(zip(shown_images, wire_images)):
            thumbs.check(index, img, f"{where} image {k}")
        assert shown_images[-1] == problems[pid]["img"], "the last image is the problem's query image"
        # the query turn and, for MCQA, the options in the order the model saw them
        query = [t for k, t in wire[-1][1] if k == "text"]
        assert wire[-1][0] == "user" and query == [shown["target"]], where
        if fmt == "mcqa":
            assert shown["options"] == sent_options(shown["target"]) and shown["options"], where
            gold = data["strings"][problems[pid]["gold"]]
            assert gold in dict(shown["options"]).values(), where
        else:
            assert shown["options"] == [], where
    if fmt == "mcqa":  # the options are shuffled per problem: not all of them in letter order
        orders = [[a for a, _ in shown_prompt(data, problems[pid], result)["options"]] for pid in bodies]
        assert any(o != sorted(o) for o in orders)


# -- a generic hf: checkpoint ------------------------------------------------------------------------------
def hf_messages(messages: list) -> list[dict]:
    """The shown messages as chat-template input (typed parts; an image a placeholder)."""
    return [{"role": role, "content": [{"type": "image"} if k == "image" else {"type": "text", "text": v}
                                       for k, v in parts]} for role, parts in messages]


def test_a_generic_checkpoint_shows_the_layout_its_template_was_given(tmp_path, monkeypatch, capsys):
    pytest.importorskip("transformers")
    import tiny_generic as tg
    import tiny_models
    from transformers import AutoProcessor

    from smmile.models.hf.generic_backend import GenericHFBackend
    from test_anymodel_runs import smmile_run

    path = tg.cached("idefics3_no_system")  # its template raises on a system turn: the run folds it
    processor_class = type(AutoProcessor.from_pretrained(path))
    given, encoding = [], []
    original_call, original_encode = processor_class.__call__, GenericHFBackend.encode

    def call(self, *args, **kwargs):  # what the processor is given while the problems are encoded
        if encoding:
            given.extend(zip(kwargs["text"], kwargs.get("images") or [[]] * len(kwargs["text"])))
        return original_call(self, *args, **kwargs)

    def encode(self, reqs):
        encoding.append(True)
        try:
            return original_encode(self, reqs)
        finally:
            encoding.pop()

    monkeypatch.setattr(processor_class, "__call__", call)
    monkeypatch.setattr(GenericHFBackend, "encode", encode)
    results, dataset = tmp_path / "results", tiny_models.demo_subset(4)
    assert smmile_run(f"hf:{path}", results, "ICL", "mcqa") == 0, capsys.readouterr().err
    monkeypatch.undo()
    assert len(given) == 4
    (manifest,) = results.glob("*.manifest.json")
    assert json.loads(manifest.read_text())["backend"]["capabilities"]["layout"] == {"system": "first-user-turn",
                                                                                      "examples": "turns"}
    assert smmile(["report", str(results), "--dataset", str(dataset), "--out", str(tmp_path / "report"),
                   "--n-boot", "50"]) == 0
    data = explorer_data(tmp_path / "report" / "index.html")
    thumbs, template = Thumbnails(data["images"]), AutoProcessor.from_pretrained(path)
    by_text = {text: images for text, images in given}
    assert len(by_text) == 4, "one distinct prompt per problem"
    for problem in data["problems"]:
        shown = shown_prompt(data, problem, result_index(data, "ICL", "mcqa"))
        assert shown["messages"][0][0] == "user" and "system prompt opens the first user turn" in shown["note"]
        text = template.apply_chat_template(hf_messages(shown["messages"]), tokenize=False, add_generation_prompt=True)
        assert text in by_text, f"{problem['id']}: the shown messages render a text the processor was not given"
        images = [i for _, parts in shown["messages"] for k, i in parts if k == "image"]
        assert len(images) == len(by_text[text]) == 1 + len(problem["ex"])
        for k, (index, img) in enumerate(zip(images, by_text[text])):
            thumbs.check(index, img, f"{problem['id']} image {k}")
        assert shown["options"] == sent_options(shown["target"])
        assert shown["target"] in text


def test_a_sideways_stored_photo_is_shown_upright(tmp_path):
    """An image stored sideways with an EXIF orientation tag (as the demo's first query image is) reaches the model
    upright (ImageRef.load); its thumbnail and its re-encoded full-resolution file show it the same way."""
    import hashlib

    from PIL import Image

    from smmile.data.demo import exif_rotated_jpeg
    from smmile.protocol.problem import ImageRef
    from smmile.report.explorer import thumbnails

    wide = Image.new("RGB", (2200, 900), (30, 60, 220))
    wide.paste((220, 30, 30), (0, 0, 1100, 900))  # red left half, blue right half
    buffer = io.BytesIO()
    wide.save(buffer, format="PNG")
    data = exif_rotated_jpeg(buffer.getvalue())
    assert Image.open(io.BytesIO(data)).size == (900, 2200)  # stored sideways
    assert ImageRef(data).load().size == (2200, 900)  # as the model gets it
    [(uri, full)] = thumbnails([(hashlib.sha256(data).digest(), data)], str(tmp_path))
    for img in (decoded(uri), Image.open(tmp_path / full)):
        assert img.width > 2 * img.height, img.size
        left, right = on_white(img)[:, : img.width // 4].mean((0, 1)), on_white(img)[:, -img.width // 4:].mean((0, 1))
        assert left[0] > 150 > left[2] and right[2] > 150 > right[0]
