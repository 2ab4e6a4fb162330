"""Record what the ORIGINAL scripts' code path produces on the fixed problem set (problems.py) with the paper's
pinned transformers, from the tiny test checkpoints, into pinned.json (read by tests/test_hf_reference.py).

This file does not import smmile: it re-states each original script's inputs from the spec (§3.1-§3.8) and calls
the pinned library the way the script did. It needs a virtual environment with the old transformers, e.g.

    python -m venv --system-site-packages /tmp/venv451
    /tmp/venv451/bin/pip install transformers==4.51.0 'tokenizers>=0.21,<0.22' 'huggingface_hub>=0.30,<1'
    /tmp/venv451/bin/python tests/hf_reference/record.py qwen2_5_vl qwen2_vl mllama gemma3
    python -m venv --system-site-packages /tmp/venv446
    /tmp/venv446/bin/pip install transformers==4.46.3 'tokenizers>=0.20,<0.21' 'huggingface_hub>=0.23,<1'
    /tmp/venv446/bin/python tests/hf_reference/record.py llava llava_next llava_onevision llavamed llavamed_mcqa

The tiny checkpoints must exist first (run the test suite once, or `python -c "import tiny_models as t;
t.cached('llava')"` from tests/). LLaVA-Med's own repository pinned transformers 4.36.2; its CLIP image processor
is recorded with 4.46.3, whose CLIPImageProcessor handles images the same way (convert("RGB"), resize, crop):
recorded again with transformers 4.36.2 + tokenizers 0.15.2 (the tiny tokenizer.json's merges rewritten as "a b"
strings for 0.15), all 16 LLaVA-Med cases were identical (issue #29; docs/reproducing-the-paper.md §9).
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from hf_reference.problems import ICL_ROWS, MODES, QUESTION, decoded  # noqa: E402

OUT = HERE / "pinned.json"
MEDGEMMA_SYSTEM = ("You are an expert medical professional with extensive knowledge in medical imaging, diagnosis, "
                   "and clinical practice.")
MEDR1_OPEN = "\n        {Question}\n\n        Please provide your response to this question.\n        "
PROBES = 16


def pixel_summary(tensor) -> dict:
    """Shape, sums and evenly spaced probe values of a float tensor (enough to tell pixel paths apart)."""
    import numpy as np

    a = np.asarray(tensor, dtype=np.float64)
    flat = a.reshape(-1)
    idx = [int(i * (flat.size - 1) / (PROBES - 1)) for i in range(PROBES)]
    blocks = a.reshape(-1, *a.shape[-3:]) if a.ndim >= 4 else a  # one sum per tile (per patch row for Qwen)
    return {"shape": list(a.shape), "sum": round(float(flat.sum()), 4), "abs": round(float(np.abs(flat).sum()), 4),
            "sq": round(float((flat ** 2).sum()), 4), "probe": [round(float(flat[i]), 6) for i in idx],
            "blocks": [round(float(b.sum()), 4) for b in blocks]}


def summarize(inputs) -> dict:
    """Token ids (padding removed: MedGemma's pad_to_multiple_of=8), integer tensors, float tensor summaries."""
    ids = [int(t) for t in inputs["input_ids"][0]]
    mask = [int(m) for m in inputs["attention_mask"][0]] if "attention_mask" in inputs else [1] * len(ids)
    out = {"input_ids": [t for t, m in zip(ids, mask) if m], "ints": {}, "pixels": {}}
    for key, value in inputs.items():
        if key in ("input_ids", "attention_mask") or not hasattr(value, "dtype"):
            continue
        if value.is_floating_point():
            out["pixels"][key] = pixel_summary(value)
        else:
            out["ints"][key] = value.tolist()
    return out


# -- building the pinned processors from the tiny checkpoint folders ----------------------------------------------
def _json(folder: Path, name: str) -> dict:
    path = folder / name
    return json.loads(path.read_text()) if path.is_file() else {}


def _improc_config(folder: Path) -> dict:
    cfg = _json(folder, "preprocessor_config.json") or _json(folder, "processor_config.json").get("image_processor", {})
    return {k: v for k, v in cfg.items() if k not in ("image_processor_type", "processor_class")}


def _tokenizer(folder: Path, cls=None):
    from transformers import PreTrainedTokenizerFast

    cfg = _json(folder, "tokenizer_config.json")
    named = {k: cfg[k] for k in ("bos_token", "eos_token", "pad_token", "unk_token") if cfg.get(k)}
    extra = {k: cfg[k] for k in ("boi_token", "eoi_token", "image_token") if cfg.get(k)}
    kwargs = {"extra_special_tokens": extra} if extra else {}
    return (cls or PreTrainedTokenizerFast)(tokenizer_file=str(folder / "tokenizer.json"), **named, **kwargs)


def _template(folder: Path) -> str:
    return (folder / "chat_template.jinja").read_text()


def processor(arch: str, folder: Path):
    import transformers as tf

    cfg, extra = _improc_config(folder), _json(folder, "processor_config.json")
    if arch in ("qwen2_5_vl", "qwen2_vl"):  # the hub configs of the time carried min_pixels / max_pixels
        size = cfg.pop("size")
        ip = tf.Qwen2VLImageProcessor(**cfg, min_pixels=size["shortest_edge"], max_pixels=size["longest_edge"])
        cls = tf.Qwen2_5_VLProcessor if arch == "qwen2_5_vl" else tf.Qwen2VLProcessor
        return cls(image_processor=ip, tokenizer=_tokenizer(folder, tf.Qwen2TokenizerFast),
                   chat_template=_template(folder))
    if arch == "mllama":
        return tf.MllamaProcessor(tf.MllamaImageProcessor(**cfg), _tokenizer(folder), chat_template=_template(folder))
    if arch == "gemma3":
        return tf.Gemma3Processor(tf.Gemma3ImageProcessor(**cfg), _tokenizer(folder), chat_template=_template(folder),
                                  image_seq_length=extra["image_seq_length"])
    llava_kw = {k: extra[k] for k in ("patch_size", "vision_feature_select_strategy") if k in extra}
    if arch == "llava":
        return tf.LlavaProcessor(tf.CLIPImageProcessor(**cfg), _tokenizer(folder), chat_template=_template(folder),
                                 **llava_kw)
    if arch == "llava_next":
        return tf.LlavaNextProcessor(tf.LlavaNextImageProcessor(**cfg), _tokenizer(folder),
                                     chat_template=_template(folder), **llava_kw)
    if arch == "llava_onevision":
        return tf.LlavaOnevisionProcessor(tf.LlavaOnevisionImageProcessor(**cfg), _tokenizer(folder),
                                          video_processor=tf.LlavaOnevisionVideoProcessor(),
                                          chat_template=_template(folder), num_image_tokens=extra["num_image_tokens"],
                                          vision_feature_select_strategy=extra["vision_feature_select_strategy"])
    if arch.startswith("llavamed"):
        return tf.CLIPImageProcessor(**cfg), _tokenizer(folder)
    raise KeyError(arch)


# -- the original scripts' input construction (spec §3) -------------------------------------------------------------
def _rows(case: str) -> list:
    """(image name, answer) rows of a case: 'icl' = the ICL problem, '0-shot/<mode>' = one query image."""
    return list(ICL_ROWS) if case == "icl" else [(case.split("/")[1], None)]


def messages(arch: str, rows, with_images: bool = False) -> list[dict]:
    """The chat messages each original script built (answers as strings or parts, image before or after text)."""
    msgs = [{"role": "system", "content": [{"type": "text", "text": MEDGEMMA_SYSTEM}]}] if arch == "gemma3" else []
    for i, (name, answer) in enumerate(rows):
        image = {"type": "image", "image": decoded(name)} if with_images else {"type": "image"}
        text = {"type": "text", "text": QUESTION}
        msgs.append({"role": "user", "content": [text, image] if arch == "gemma3" else [image, text]})
        if i == len(rows) - 1:
            break
        if arch == "mllama":
            msgs.append({"role": "assistant", "content": answer + "\n"})
        elif arch == "qwen2_5_vl":
            msgs.append({"role": "assistant", "content": answer})
        else:
            msgs.append({"role": "assistant", "content": [{"type": "text", "text": answer}]})
    return msgs


def qwen_vl_utils_fetch(img):
    """qwen-vl-utils 0.0.11 fetch_image for a PIL image: RGBA pasted on white with its alpha as mask, any other mode
    convert("RGB"); then resized (PIL default resample) to the smart size (multiples of 28, 4..16384 x 28 x 28 px)."""
    from PIL import Image

    if img.mode == "RGBA":
        rgb = Image.new("RGB", img.size, (255, 255, 255))
        rgb.paste(img, mask=img.split()[3])
    else:
        rgb = img.convert("RGB")
    w, h = rgb.size
    factor, lo, hi = 28, 4 * 28 * 28, 16384 * 28 * 28
    h_bar, w_bar = max(factor, round(h / factor) * factor), max(factor, round(w / factor) * factor)
    if h_bar * w_bar > hi:
        beta = math.sqrt(h * w / hi)
        h_bar, w_bar = math.floor(h / beta / factor) * factor, math.floor(w / beta / factor) * factor
    elif h_bar * w_bar < lo:
        beta = math.sqrt(lo / (h * w))
        h_bar, w_bar = math.ceil(h * beta / factor) * factor, math.ceil(w * beta / factor) * factor
    return rgb.resize((w_bar, h_bar))


def llavamed_inputs(proc, rows, rgb_first: bool) -> dict:
    """LLaVA-Med: mistral_instruct prompt, tokenizer_image_token, process_images with pad-to-square (centred offset,
    the lower of the two LLaVA-Med draws from); the `_mcqa` script converts to RGB first, the open script does not."""
    import torch
    from PIL import Image

    improc, tok = proc
    prompt = ""
    for i, (name, answer) in enumerate(rows):
        prompt += f"[INST] <image>\n{QUESTION} [/INST]"
        if i < len(rows) - 1:
            prompt += f" {answer} </s>"
    chunks = [tok(c).input_ids for c in prompt.split("<image>")]
    ids = [chunks[0][0]] if chunks[0] and chunks[0][0] == tok.bos_token_id else []
    offset = len(ids)
    for k, chunk in enumerate(chunks):
        ids += ([-200] if k else []) + chunk[offset:]
    pixels = []
    for name, _ in rows:
        img = decoded(name).convert("RGB") if rgb_first else decoded(name)
        mean = improc.image_mean
        fill = int(255 * sum(mean) / len(mean)) if img.mode == "L" else tuple(int(x * 255) for x in mean)
        w, h = img.size
        if w != h:
            side = max(w, h)
            square = Image.new(img.mode, (side, side), fill)
            square.paste(img, (0, (w - h) // 2) if w > h else ((h - w) // 2, 0))
            img = square
        pixels.append(improc.preprocess(img, return_tensors="pt")["pixel_values"][0])
    return {"input_ids": torch.tensor([ids]), "pixel_values": torch.stack(pixels)}


def original_inputs(arch: str, proc, folder: Path, case: str) -> dict:
    rows = _rows(case)
    images = [decoded(name) for name, _ in rows]
    if arch.startswith("llavamed"):
        return llavamed_inputs(proc, rows, rgb_first=arch == "llavamed_mcqa")
    if arch == "gemma3":  # apply_chat_template tokenizes, images inside the messages (spec §3.4)
        return proc.apply_chat_template(messages(arch, rows, with_images=True), add_generation_prompt=True,
                                        tokenize=True, return_dict=True, return_tensors="pt", padding="longest",
                                        pad_to_multiple_of=8)
    if arch == "qwen2_vl":  # MedVLM-R1: one user turn, query image only (examples as text), via qwen-vl-utils
        context = "".join(f"Example {i}:\nQuestion: {QUESTION}\nAnswer: {a}\n\n" for i, (_, a) in enumerate(rows[:-1], 1))
        qtext = context + "Now answer this question:\n" + QUESTION if len(rows) > 1 else QUESTION
        msgs = [{"role": "user", "content": [{"type": "image"},
                                             {"type": "text", "text": MEDR1_OPEN.replace("{Question}", qtext)}]}]
        text = proc.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
        return proc(text=[text], images=[qwen_vl_utils_fetch(images[-1])], videos=None, padding=True,
                    return_tensors="pt")
    text = proc.apply_chat_template(messages(arch, rows), tokenize=False, add_generation_prompt=True)
    if arch == "qwen2_5_vl":
        return proc(text=[text], images=images, padding=True, return_tensors="pt")
    if arch == "mllama":
        return proc(images=images, text=text, return_tensors="pt")
    # LLaVA family: a single image for 0-shot, the list of the conversation's images for ICL
    return proc(images=images if case == "icl" else images[0], text=text, return_tensors="pt")


def record_case(arch: str, proc, folder: Path, case: str) -> dict:
    """The case's summary, or the error the original path raised (e.g. Pillow refusing a fill colour)."""
    try:
        return summarize(original_inputs(arch, proc, folder, case))
    except Exception as exc:  # noqa: BLE001 - the original script recorded such errors as the problem's row
        return {"error": f"{type(exc).__name__}: {exc}"}


def main(archs: list[str]) -> None:
    import transformers

    sys.path.insert(0, str(HERE.parent))
    from tiny_models import cache_root

    root = cache_root()
    data = json.loads(OUT.read_text()) if OUT.is_file() else {}
    for arch in archs:
        folder = root / ("llavamed-hf" if arch.startswith("llavamed") else arch)
        if not (folder / "config.json").is_file():
            raise SystemExit(f"{folder} is missing: build the tiny checkpoints first")
        proc = processor(arch, folder)
        cases = {case: record_case(arch, proc, folder, case) for case in ["icl"] + [f"0-shot/{m}" for m in MODES]}
        data[arch] = {"transformers": transformers.__version__, "cases": cases}
        print(f"{arch}: recorded with transformers {transformers.__version__}")
    OUT.write_text("{\n" + ",\n".join(f"{json.dumps(k)}: {json.dumps(data[k], sort_keys=True)}" for k in sorted(data))
                   + "\n}\n")


if __name__ == "__main__":
    main(sys.argv[1:])
