"""GPU check of the local-model backends (driven by benchmarks/gpu_check.sh; < 8 minutes on one H200).

Builds random-weight models with the real 7B-class configurations (Qwen2.5-VL-7B-Instruct, LLaVA-1.5-7B; the
vocabulary is shrunk to the offline test tokenizer, nothing is downloaded), then runs the same demo problems with
HF batch 1, HF batched, and vLLM when importable; checks output agreement and prints tokens/s for each. Then, for
every architecture (tiny checkpoints, plus the 7B-class ones), it prints the image processor the PIL and the
torchvision backends give and the largest pixel difference between them on the demo problems (issue #15: the size
of the effect `--image-backend` pins). `--tiny` runs the same pipeline on the tiny test checkpoints (CPU smoke).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import tiny_models as tm  # noqa: E402

PRESETS = {"qwen2_5_vl": "qwen7B", "llava": "llava_7b"}
ALL_PRESETS = {**PRESETS, "qwen2_vl": "MedVLM-R1", "mllama": "llama32_vision_90b", "gemma3": "medgemma_4b",
               "llava_next": "llavanext_7b", "llava_onevision": "llavaonevision_0.5b"}
QWEN7B_TEXT = dict(hidden_size=3584, intermediate_size=18944, num_hidden_layers=28, num_attention_heads=28,
                   num_key_value_heads=4, max_position_embeddings=32768, rms_norm_eps=1e-6,
                   rope_parameters={"rope_type": "default", "mrope_section": [16, 24, 24], "rope_theta": 1e6})
QWEN7B_VISION = dict(depth=32, hidden_size=1280, intermediate_size=3420, num_heads=16, out_hidden_size=3584,
                     patch_size=14, spatial_merge_size=2, temporal_patch_size=2, window_size=112,
                     fullatt_block_indexes=[7, 15, 23, 31])
LLAVA7B_TEXT = dict(model_type="llama", hidden_size=4096, intermediate_size=11008, num_hidden_layers=32,
                    num_attention_heads=32, num_key_value_heads=32, max_position_embeddings=4096, rms_norm_eps=1e-5)
CLIP_L336 = dict(model_type="clip_vision_model", hidden_size=1024, intermediate_size=4096, num_hidden_layers=24,
                 num_attention_heads=16, image_size=336, patch_size=14, projection_dim=768)


def _init(cls, config):
    import torch

    torch.manual_seed(0)
    with torch.device("cuda" if torch.cuda.is_available() else "cpu"):
        model = cls(config)
    return model.to(torch.bfloat16).eval()


def build_qwen7b(out: Path) -> Path:
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    tok = tm._qwen_tokenizer()
    text = {**tm._qwen_text(tok), **QWEN7B_TEXT}
    cfg = Qwen2_5_VLConfig(text_config=text, vision_config=QWEN7B_VISION, **tm._qwen_ids(tok))
    model = _init(Qwen2_5_VLForConditionalGeneration, cfg)
    return tm._save(model, out, parts=[tok, Qwen2VLImageProcessorPil()], chat_template=tm.QWEN_TEMPLATE,
                    processor_config={"processor_class": "Qwen2_5_VLProcessor"})


def build_llava7b(out: Path) -> Path:
    from transformers import LlavaConfig, LlavaForConditionalGeneration, LlavaProcessor

    tok = tm._llama_tokenizer(tm.LLAVA_TEMPLATE)
    ids = tok.convert_tokens_to_ids
    cfg = LlavaConfig(vision_config=CLIP_L336, text_config={
        **LLAVA7B_TEXT, "vocab_size": len(tok), "bos_token_id": ids("<s>"), "eos_token_id": ids("</s>"),
        "pad_token_id": ids("<pad>")}, image_token_index=ids("<image>"), image_seq_length=576,
        vision_feature_layer=-2, vision_feature_select_strategy="default")
    model = _init(LlavaForConditionalGeneration, cfg)
    from transformers.models.clip.image_processing_pil_clip import CLIPImageProcessorPil

    improc = CLIPImageProcessorPil(size={"shortest_edge": 336}, crop_size={"height": 336, "width": 336})
    proc = LlavaProcessor(improc, tok, patch_size=14, vision_feature_select_strategy="default",
                          num_additional_image_tokens=1, chat_template=tm.LLAVA_TEMPLATE)
    return tm._save(model, out, processor=proc)


BUILD = {"qwen2_5_vl": build_qwen7b, "llava": build_llava7b}


def checkpoint(arch: str, root: Path, tiny: bool) -> Path:
    if tiny:
        return tm.cached(arch)
    out = root / f"{arch}-7b-random"
    if not (out / "config.json").exists():
        t0 = time.time()
        out.mkdir(parents=True, exist_ok=True)
        BUILD[arch](out)
        print(f"built {out} in {time.time() - t0:.0f} s", flush=True)
    return out


def one_run(model: str, out, *, batch, dtype, tokens, dataset, model_path=None, backend=None):
    """The demo problems in ICL through `model` (a preset with `model_path`, or `hf:`/`vllm:<path>`): the result,
    seconds, output tokens and the manifest's backend entry."""
    from smmile.generation import GenerationSettings, RunSettings
    from smmile.runner.run import RunSpec, run

    spec = RunSpec(model=model, mode="ICL", fmt="open", dataset=dataset, output_dir=out, quiet=True,
                   model_path=model_path, batch_size=batch, backend=backend,
                   settings=RunSettings(dtype=dtype, max_model_len=16384, enforce_eager=True, gpu_memory_utilization=0.6),
                   generation=GenerationSettings(max_new_tokens=tokens))
    t0 = time.perf_counter()
    result = run(spec)
    seconds = time.perf_counter() - t0
    manifest = json.loads(result.csv_path.with_name(result.csv_path.stem + ".manifest.json").read_text())
    return result, seconds, manifest["usage"].get("output_tokens", 0), manifest["backend"]


def agreement(a, b) -> float:
    same = sum(x["generated_answer"] == y["generated_answer"] for x, y in zip(a.rows, b.rows))
    return same / max(1, len(a.rows))


def agreements_ok(label: str, results: dict, tiny: bool) -> bool:
    """Each run's answers against HF batch 1's, printed; all equal on the tiny fp32 models, half in bf16."""
    base, ok = results.get("hf-b1"), True
    for name, res in results.items():
        if base is not None and name != "hf-b1":
            agree = agreement(base, res)
            print(f"{label} agreement {name} vs hf-b1: {agree:.2%}", flush=True)
            ok &= agree >= (1.0 if tiny else 0.5)  # bf16 batched kernels may flip near-ties of random weights
    return ok


def check_arch(arch: str, a, root: Path, dataset: str) -> bool:
    dtype = "float32" if a.tiny else "bfloat16"
    path = checkpoint(arch, root, a.tiny)
    runs = {"hf-b1": dict(batch=1, backend=None), f"hf-b{a.batch_size}": dict(batch=a.batch_size, backend=None)}
    if importlib.util.find_spec("vllm") and not a.tiny:
        runs["vllm"] = dict(batch=1, backend="vllm_backend:VLLMBackend")
    results, ok = {}, True
    for name, kw in runs.items():
        try:
            res, sec, toks, info = one_run(PRESETS[arch], root / "out" / arch / name, model_path=str(path), dtype=dtype,
                                           tokens=a.max_new_tokens, dataset=dataset, **kw)
        except Exception as exc:  # noqa: BLE001 - report and go on with the other backends
            print(f"{arch:12s} {name:8s} FAILED: {exc!r}", flush=True)
            ok = False
            continue
        results[name] = res
        print(f"{arch:12s} {name:8s} {sec:7.1f} s  {toks / sec:8.1f} tok/s  computed={res.computed}  "
              f"failures={len(res.failures)}  "
              f"attn={info.get('attn_implementation')}  image_processor={info.get('image_processor')}", flush=True)
        ok &= not res.failures
    return agreements_ok(f"{arch:12s}", results, a.tiny) and ok


def image_backends(arch: str, path: Path, dataset: str) -> bool:
    """The image processor each backend gives this checkpoint, and the largest |PIL - torchvision| pixel difference
    over the demo problems' ICL inputs (as the runs build them)."""
    import numpy as np

    from smmile.data.load import load_for_run
    from smmile.models.hf.encode import encode
    from smmile.models.hf.processor import describe_image_processor, load_processor
    from smmile.runner.run import RunSpec, Runner

    runner = Runner(RunSpec(model=ALL_PRESETS[arch], mode="ICL", dataset=dataset, model_path=str(path)))
    requests = [runner.family.request(it) for it in runner.plan(load_for_run(dataset))]
    pixels, used = {}, {}
    for backend in ("pil", "torchvision"):
        proc = load_processor(str(path), image_backend=backend)
        used[backend] = describe_image_processor(proc.image_processor, backend)
        pixels[backend] = [np.asarray(encode(proc, None, [r])["pixel_values"], dtype=np.float64) for r in requests]
    names = "; ".join(f"{b} -> {u['class']} ({u['backend']})" for b, u in used.items())
    if used["torchvision"]["backend"] != "torchvision":
        print(f"{arch:16s} image backends: {names}; torchvision is not installed: nothing to compare", flush=True)
        return True
    pairs = list(zip(pixels["pil"], pixels["torchvision"]))
    same_shape = [(a, b) for a, b in pairs if a.shape == b.shape]
    worst = max((float(np.abs(a - b).max()) for a, b in same_shape), default=float("nan"))
    mean = float(np.mean([np.abs(a - b).mean() for a, b in same_shape])) if same_shape else float("nan")
    print(f"{arch:16s} image backends: {names}; max |pil - torchvision| = {worst:.4g} (mean {mean:.3g}, normalised "
          f"units) over {len(same_shape)} demo problems; {len(pairs) - len(same_shape)} with different shapes",
          flush=True)
    return True


def check_image_backends(a, root: Path, dataset: str) -> bool:
    ok = True
    targets = [(f"{arch} (tiny)", arch, tm.cached(arch)) for arch in ALL_PRESETS]
    if not a.tiny:
        targets += [(f"{arch} (7B)", arch, checkpoint(arch, root, False)) for arch in a.archs.split(",")]
    for label, arch, path in targets:
        try:
            ok &= image_backends(arch, path, dataset)
        except Exception as exc:  # noqa: BLE001 - report and go on with the other architectures
            print(f"{label:16s} image backends FAILED: {exc!r}", flush=True)
            ok = False
    return ok


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--archs", default="qwen2_5_vl,llava")
    p.add_argument("--max-new-tokens", type=int, default=32)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--root", default="/tmp/smmile-gpu-check")
    p.add_argument("--tiny", action="store_true", help="tiny test checkpoints instead of 7B-class ones (CPU smoke)")
    a = p.parse_args()
    from smmile.data.demo import demo_path

    dataset, root = str(demo_path()), Path(a.root)
    ok = all([check_arch(arch, a, root, dataset) for arch in a.archs.split(",")])
    ok = check_image_backends(a, root, dataset) and ok
    print("GPU CHECK", "PASSED" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
