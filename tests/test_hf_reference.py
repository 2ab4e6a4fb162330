"""Faithful to the pixel and the token: what every local family feeds its model for a fixed problem set
(hf_reference/problems.py: RGB, L, RGBA, P, LA images and an EXIF-rotated JPEG; 0-shot and ICL) equals what the
original script's code path produced with the paper's pinned transformers (hf_reference/pinned.json, recorded by
hf_reference/record.py with transformers 4.51.0 / 4.46.3, which this suite never runs). A change to a prompt,
tokenisation, BOS, image conversion, padding or tiling path fails the test named after its family.
"""

from __future__ import annotations

import functools
import json
import os
import types
from dataclasses import replace
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
pytest.importorskip("transformers")
pytestmark = pytest.mark.paper_env  # run in each paper lock's environment (scripts/check_paper_envs.sh)

import tiny_models  # noqa: E402
from hf_reference.problems import ICL_ROWS, MODES, QUESTION, decoded, encoded  # noqa: E402
from smmile.models import registry  # noqa: E402
from smmile.models.hf.compat import image_token_id, transformers_version  # noqa: E402
from smmile.protocol.items import Item, Rngs  # noqa: E402
from smmile.protocol.problem import ImageRef, Problem, Row  # noqa: E402

PINNED = json.loads((Path(__file__).parent / "hf_reference" / "pinned.json").read_text())
# reference key -> (preset, family settings, tiny checkpoint)
ARCHS = {"qwen2_5_vl": ("qwen3B", {}, "qwen2_5_vl"), "qwen2_vl": ("MedVLM-R1", {}, "qwen2_vl"),
         "mllama": ("llama32_vision_90b", {}, "mllama"), "gemma3": ("medgemma_4b", {}, "gemma3"),
         "llava": ("llava_7b", {}, "llava"), "llava_next": ("llavanext_7b", {}, "llava_next"),
         "llava_onevision": ("llavaonevision_0.5b", {}, "llava_onevision"),
         "llavamed": ("llavamed", {"script": "open"}, "llavamed"),
         "llavamed_mcqa": ("llavamed", {"script": "mcqa"}, "llavamed")}
CASES = ["icl"] + [f"0-shot/{m}" for m in MODES]
# transformers 4.46.3 padded an anyres canvas symmetrically, one pixel short when the padding is odd, and stretched
# the last tiles back to size; transformers 5 pads exactly (docs/deviations.md L3). Tokens and every other tile match.
ODD_ANYRES_PADDING = {("llava_next", "0-shot/rgb"), ("llava_next", "0-shot/p"), ("llava_next", "icl"),
                      ("llava_onevision", "0-shot/rgb"), ("llava_onevision", "0-shot/p"), ("llava_onevision", "icl")}


def reference_problem(case: str) -> Problem:
    rows = list(ICL_ROWS) if case == "icl" else [(case.split("/")[1], "Red.")]
    return Problem("p", tuple(Row("p", i, QUESTION, a, ImageRef(encoded(n))) for i, (n, a) in enumerate(rows)))


def family(arch: str, protocol: str):
    preset, extra, _ = ARCHS[arch]
    p = registry.get(preset)
    return registry.build_family(p, replace(p.settings, **extra), protocol)


@functools.lru_cache(maxsize=None)
def loaded(checkpoint: str):
    """(processor, a model stand-in with the checkpoint's config) as the HF backend loads them (paper default)."""
    from transformers import AutoConfig

    from smmile.models.hf.processor import load_processor
    from test_hf_frontdoors import model_path

    folder = str(model_path(checkpoint))
    return load_processor(folder, image_backend="pil"), types.SimpleNamespace(config=AutoConfig.from_pretrained(folder))


def request(arch: str, case: str, protocol: str = "paper", problem: Problem | None = None):
    fam = family(arch, protocol)
    item = Item(0, problem or reference_problem(case), "ICL" if case == "icl" else "0-shot", "open")
    fam.plan(item, Rngs())
    if "pad_offsets" in item.extra:  # LLaVA-Med draws offset or offset + 1; the reference used the centred one
        item.extra["pad_offsets"] = [None if w == h else (max(w, h) - min(w, h)) // 2
                                     for w, h in (ref.size for ref in item.problem.images(item.mode))]
    return fam.request(item)


def our_inputs(arch: str, case: str, protocol: str = "paper", problem: Problem | None = None) -> dict:
    from smmile.models.hf.encode import encode

    tiny_models.skip_unless_served(arch)
    proc, model = loaded(ARCHS[arch][2])
    inputs = dict(encode(proc, model, [request(arch, case, protocol, problem)]))
    mask = inputs["attention_mask"][0].tolist()
    inputs["ids"] = [t for t, m in zip(inputs["input_ids"][0].tolist(), mask) if m]
    return inputs


def pinned_ids(arch: str, case: str) -> list[int]:
    tiny_models.skip_unless_served(arch)
    ids = PINNED[arch]["cases"][case]["input_ids"]
    if not arch.startswith("llavamed"):
        return ids
    from smmile.models.hf.encode import image_tokens_per_image

    _, model = loaded("llavamed")
    out = []
    for t in ids:  # LLaVA-Med's generate expands its -200 placeholder; our ids carry the expansion
        out.extend([image_token_id(model.config)] * image_tokens_per_image(model) if t == -200 else [t])
    return out


def summary(tensor) -> dict:
    import numpy as np

    a = np.asarray(tensor, dtype=np.float64)
    flat = a.reshape(-1)
    idx = [int(i * (flat.size - 1) / 15) for i in range(16)]
    blocks = a.reshape(-1, *a.shape[-3:]) if a.ndim >= 4 else a
    return {"shape": list(a.shape), "sum": float(flat.sum()), "abs": float(np.abs(flat).sum()),
            "sq": float((flat ** 2).sum()), "probe": [float(flat[i]) for i in idx],
            "blocks": [float(b.sum()) for b in blocks]}


def assert_same_pixels(ours, ref: dict, *, tiles_only: bool = False) -> None:
    got = summary(ours)
    assert got["shape"] == ref["shape"]
    if tiles_only:  # the first tile of each image (the whole image resized) must still match
        per_image = len(ref["blocks"]) // ref["shape"][0]
        for k in range(0, len(ref["blocks"]), per_image):
            assert got["blocks"][k] == pytest.approx(ref["blocks"][k], abs=2e-3)
        return
    for key in ("sum", "abs", "sq"):
        assert got[key] == pytest.approx(ref[key], rel=1e-6, abs=2e-3), key
    assert got["probe"] == pytest.approx(ref["probe"], abs=1e-5)
    assert got["blocks"] == pytest.approx(ref["blocks"], abs=2e-3)


def check_against_pinned(arch: str, case: str) -> None:
    ref = PINNED[arch]["cases"][case]
    if "error" in ref:  # the original raised (e.g. Pillow refusing LLaVA-Med's fill colour): so do we
        with pytest.raises(Exception) as exc:
            our_inputs(arch, case)
        assert f"{type(exc.value).__name__}: {exc.value}" == ref["error"]
        return
    ours = our_inputs(arch, case)
    assert ours["ids"] == pinned_ids(arch, case)
    for key, value in ref["ints"].items():
        if key in ours and key != "token_type_ids":
            assert ours[key].tolist() == value, key
    for key, value in ref["pixels"].items():
        odd = (arch, case) in ODD_ANYRES_PADDING and transformers_version() >= (5, 0)  # 4.46.3 itself: exact
        assert_same_pixels(ours[key], value, tiles_only=odd)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("arch", list(ARCHS))
def test_matches_pinned_transformers(arch, case):
    check_against_pinned(arch, case)


# -- the five places issue #11 found, one named test each ----------------------------------------------------------
def test_onevision_icl_tiles_every_image_as_transformers_4_46_did():
    """A flat image list: every image of an ICL prompt gets its anyres tiles (not the multi-image mode)."""
    check_against_pinned("llava_onevision", "icl")
    ours = our_inputs("llava_onevision", "icl")
    assert ours["pixel_values"].shape[1] > 1  # 4.46.3 has no multi-image mode (nor batch_num_images)
    assert list(ours.get("batch_num_images", [1] * len(ICL_ROWS))) == [1] * len(ICL_ROWS)


def test_medvlm_r1_rgba_is_pasted_on_white_as_qwen_vl_utils_did():
    check_against_pinned("qwen2_vl", "0-shot/rgba")
    from PIL import Image

    from smmile.models.hf.imageprep import qwen_vl_utils_rgb

    img = Image.new("RGBA", (2, 1), (200, 30, 30, 0))
    img.putpixel((1, 0), (200, 30, 30, 255))
    assert qwen_vl_utils_rgb(img).getpixel((0, 0)) == (255, 255, 255)  # transparent -> white, not (200, 30, 30)
    assert qwen_vl_utils_rgb(img).getpixel((1, 0)) == (200, 30, 30)


@pytest.mark.parametrize("case", CASES)
def test_medgemma_pads_to_a_multiple_of_8_as_the_original(case):
    """inference_medgemma.py asked apply_chat_template for padding "longest" to a multiple of 8 (spec §3.4): left pad
    tokens in front of the pinned ids, whichever way the installed transformers takes the two arguments (compat)."""
    ours, n = our_inputs("gemma3", case), len(pinned_ids("gemma3", case))
    width = -(-n // 8) * 8
    assert list(ours["input_ids"].shape) == [1, width]
    assert ours["attention_mask"][0].tolist() == [0] * (width - n) + [1] * n


def test_llavamed_pads_grey_images_with_the_mean_of_the_mean():
    check_against_pinned("llavamed", "0-shot/l")
    from smmile.models.hf.llavamed import pad_colour

    assert pad_colour("L", (0.48145466, 0.4578275, 0.40821073)) == 114  # int(255 * 0.44916) - LLaVA-Med mm_utils
    assert pad_colour("RGB", (0.48145466, 0.4578275, 0.40821073)) == (122, 116, 104)


@pytest.mark.parametrize("arch", list(ARCHS))
def test_exif_rotated_jpeg_is_upright_for_every_local_family(arch):
    check_against_pinned(arch, "0-shot/exif")


def test_exif_orientation_applied_where_images_are_decoded():
    ref = ImageRef(encoded("exif"))
    assert ref.size == ref.load().size == decoded("exif").size == (40, 64)
    assert ref.load().tobytes() == decoded("exif").tobytes()
    assert ref.load().getexif().get(0x0112) is None  # nothing left for a processor to rotate a second time


def test_llama32_bos_doubled_under_paper_single_under_corrected():
    tiny_models.skip_unless_served("mllama")
    proc, _ = loaded("mllama")
    bos = proc.tokenizer.bos_token_id
    check_against_pinned("mllama", "icl")
    paper = our_inputs("mllama", "icl")["ids"]
    corrected = our_inputs("mllama", "icl", "corrected")["ids"]
    assert paper[:2] == [bos, bos] and paper.count(bos) == 2
    assert corrected[0] == bos and corrected[1] != bos and corrected == paper[1:]


@pytest.mark.parametrize("arch", [a for a in ARCHS if a != "mllama"])
def test_bos_count_is_the_same_under_both_protocols(arch):
    """Only Llama-3.2's template starts with BOS and meets a tokenizer that adds another one (see docs L4)."""
    assert our_inputs(arch, "icl", "corrected")["ids"] == pinned_ids(arch, "icl")


# -- `--protocol corrected`: every transparent image composited on white, the same for every family --------------
@pytest.mark.parametrize("arch", list(ARCHS))
@pytest.mark.parametrize("mode", ["rgba", "p", "la"])
def test_corrected_composites_transparency_on_white(arch, mode):
    from PIL import Image

    white = Image.new("RGBA", decoded(mode).size, (255, 255, 255, 255))
    flat = Image.alpha_composite(white, decoded(mode).convert("RGBA")).convert("RGB")
    import io

    buf = io.BytesIO()
    flat.save(buf, format="PNG")
    flat_problem = Problem("p", (Row("p", 0, QUESTION, "Red.", ImageRef(buf.getvalue())),))
    corrected = our_inputs(arch, f"0-shot/{mode}", "corrected")
    expected = our_inputs(arch, f"0-shot/{mode}", "paper", problem=flat_problem)
    assert corrected["ids"][-20:] == expected["ids"][-20:]
    got, want = summary(corrected["pixel_values"]), summary(expected["pixel_values"])
    assert got.keys() == want.keys() and got["shape"] == want["shape"]
    for key in ("sum", "abs", "sq", "probe", "blocks"):  # flat values and lists: approx takes no nested dict
        assert got[key] == pytest.approx(want[key], abs=1e-4), key
