"""Image decoding and the API / vLLM image paths against the original's (docs/images.md): EXIF orientation applied
where an image is decoded, the API scripts' PNG encoding byte for byte, the demo data's EXIF-rotated JPEG."""

from __future__ import annotations

import base64
import io

import pytest

from hf_reference.problems import MODES, decoded, encoded
from smmile.protocol.problem import ImageRef


def original_api_png(name: str) -> str:
    """inference_openai.py / inference_anthropic.py (spec §3.12) on the image `datasets` decoded: RGB unless RGB or
    RGBA, PNG, base64."""
    img = decoded(name)
    if img.mode not in ("RGB", "RGBA"):
        img = img.convert("RGB")
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return base64.b64encode(buf.getvalue()).decode("ascii")


@pytest.mark.parametrize("name", MODES)
def test_api_request_image_bytes_equal_the_originals(name):
    from smmile.models.api.request import encode_png

    enc = encode_png(ImageRef(encoded(name)))
    assert enc.b64 == original_api_png(name)
    assert enc.size == decoded(name).size


def test_exif_jpeg_is_sent_upright_to_the_apis():
    from PIL import Image

    from smmile.models.api.request import encode_png

    enc = encode_png(ImageRef(encoded("exif")))
    sent = Image.open(io.BytesIO(base64.b64decode(enc.b64)))
    stored = Image.open(io.BytesIO(encoded("exif")))
    assert sent.size == (stored.height, stored.width) == (40, 64)


def test_vllm_gets_upright_images(tmp_path):
    pytest.importorskip("transformers")
    import tiny_models
    from smmile.models.hf.processor import load_processor
    from smmile.models.vllm_backend import VLLMBackend
    from test_hf_reference import request

    proc = load_processor(str(tiny_models.cached("llava")))
    backend = VLLMBackend.__new__(VLLMBackend)
    for arch in ("llava", "llavamed"):
        req = request(arch, "0-shot/exif")
        image = backend.build_requests([(None, req)], proc)[0]["multi_modal_data"]["image"][0]
        if arch == "llava":
            assert image.size == (40, 64) and image.tobytes() == decoded("exif").tobytes()
        else:  # LLaVA-Med: padded to a square around the upright image
            assert image.size == (64, 64)


def test_demo_data_holds_an_exif_rotated_jpeg():
    from PIL import Image, ImageOps

    from smmile.data.demo import demo_path
    from smmile.data.load import load_problems

    problems = load_problems(str(demo_path()))
    jpegs = [r.image for p in problems for r in p.rows if r.image.data[:2] == b"\xff\xd8"]
    assert len(jpegs) == 1 and problems[0].query.image is jpegs[0]  # the first problem's query (0-shot sees it)
    raw = Image.open(io.BytesIO(jpegs[0].data))
    assert raw.getexif().get(0x0112) == 6
    upright = ImageOps.exif_transpose(raw)
    assert jpegs[0].size == jpegs[0].load().size == upright.size == (raw.height, raw.width)
    assert jpegs[0].load().tobytes() == upright.tobytes()
    assert {r.image.load().mode for p in problems for r in p.rows} >= {"RGB", "L", "RGBA"}


def test_every_row_of_the_images_table_names_a_test_that_exists():
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    doc = (root / "docs" / "images.md").read_text()
    table = doc.split("## The table")[1].split("\n## ")[0]
    rows = [line for line in table.splitlines() if line.startswith("| ") and not line.startswith("| family")]
    sources = "\n".join(p.read_text() for p in (root / "tests").glob("test_*.py"))
    for row in rows:
        cell = row.rstrip(" |").rsplit("|", 1)[1].strip()
        if cell == "—":
            continue
        name = re.match(r"`(\w+)", cell).group(1)
        assert f"def {name}(" in sources, row
    from test_hf_reference import ARCHS

    for arch in ARCHS:
        assert f"test_matches_pinned_transformers[{arch}-*]" in table
