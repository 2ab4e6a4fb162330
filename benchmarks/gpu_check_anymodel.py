"""GPU check of `--model hf:<id>` / `vllm:<id>` (driven by benchmarks/gpu_check.sh after gpu_check.py).

Builds a random-weight Idefics3 checkpoint with SmolVLM-256M's configuration (SmolLM2 text model, SigLIP 512 px
tiles; the vocabulary is shrunk to the offline test tokenizer, nothing is downloaded) and runs the demo problems
in ICL through `hf:` batch 1, `hf:` batched and `vllm:` (when importable): the capability probe, the layout,
output agreement with hf batch 1 and tokens/s of each. `--generic-models ID,...` (or SMMILE_GENERIC_MODELS) runs
real checkpoints (hub ids in the local cache, or folders) instead. `--tiny` runs the tiny test checkpoints on the
HF path (CPU smoke).
Flags of gpu_check.py that this script does not know are ignored.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import tiny_generic as tg  # noqa: E402
import tiny_models as tm  # noqa: E402
from gpu_check import _init, agreements_ok, one_run  # noqa: E402

SMOLVLM_TEXT = dict(model_type="llama", hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
                    num_attention_heads=9, num_key_value_heads=3, max_position_embeddings=8192, rms_norm_eps=1e-5,
                    rope_parameters={"rope_type": "default", "rope_theta": 100000.0})
SMOLVLM_VISION = dict(hidden_size=768, intermediate_size=3072, num_hidden_layers=12, num_attention_heads=12,
                      image_size=512, patch_size=16)


def build_smolvlm_class(out: Path) -> Path:
    from transformers import Idefics3Config, Idefics3ForConditionalGeneration, Idefics3Processor
    from transformers.models.idefics3.image_processing_pil_idefics3 import Idefics3ImageProcessorPil

    rowcol = [f"<row_{i + 1}_col_{j + 1}>" for i in range(6) for j in range(6)]
    tok = tm.build_tokenizer(["<|begin_of_text|>", "<|end_of_text|>", "<end_of_utterance>",
                              "<fake_token_around_image>", "<image>", "<global-img>", "<pad>", *rowcol],
                             bos="<|begin_of_text|>", eos="<end_of_utterance>", pad="<pad>",
                             chat_template=tg.IDEFICS3_TEMPLATE)
    ids = tok.convert_tokens_to_ids
    cfg = Idefics3Config(vision_config=SMOLVLM_VISION, text_config={
        **SMOLVLM_TEXT, "vocab_size": len(tok), "bos_token_id": ids("<|begin_of_text|>"),
        "eos_token_id": ids("<end_of_utterance>"), "pad_token_id": ids("<pad>")},
        scale_factor=4, image_token_id=ids("<image>"))
    model = _init(Idefics3ForConditionalGeneration, cfg)
    improc = Idefics3ImageProcessorPil(size={"longest_edge": 1024}, max_image_size={"longest_edge": 512},
                                       do_image_splitting=True)
    proc = Idefics3Processor(improc, tok, image_seq_len=64, chat_template=tg.IDEFICS3_TEMPLATE)
    return tm._save(model, out, processor=proc)


def check_model(name: str, path: str, a, root: Path, dataset: str) -> bool:
    dtype = "float32" if a.tiny else "bfloat16"
    runs = {"hf-b1": (f"hf:{path}", 1), f"hf-b{a.batch_size}": (f"hf:{path}", a.batch_size)}
    if importlib.util.find_spec("vllm") and not a.tiny:
        runs["vllm"] = (f"vllm:{path}", 1)
    results, ok = {}, True
    for run_name, (model, batch) in runs.items():
        try:
            res, sec, toks, info = one_run(model, root / "out-generic" / name / run_name, batch=batch, dtype=dtype,
                                           tokens=a.max_new_tokens, dataset=dataset)
        except BaseException as exc:  # noqa: BLE001 - report (a UserError exits too) and go on
            print(f"{name:16s} {run_name:8s} FAILED: {exc!r}", flush=True)
            ok = False
            continue
        results[run_name] = res
        caps = info.get("capabilities") or {}
        print(f"{name:16s} {run_name:8s} {sec:7.1f} s  {toks / sec:8.1f} tok/s  failures={len(res.failures)}  "
              f"layout={caps.get('layout')}  checks={ {k: v['ok'] for k, v in caps.get('checks', {}).items()} }",
              flush=True)
        ok &= not res.failures
    return agreements_ok(f"{name:16s}", results, a.tiny) and ok


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--generic-models", default=os.environ.get("SMMILE_GENERIC_MODELS"),
                   help="hub ids (cached) or folders, comma-separated (env SMMILE_GENERIC_MODELS); default: the "
                        "SmolVLM-256M-class random checkpoint built here")
    p.add_argument("--max-new-tokens", type=int, default=32)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--root", default="/tmp/smmile-gpu-check")
    p.add_argument("--tiny", action="store_true", help="the tiny test checkpoints, HF path only (CPU smoke)")
    a, _ = p.parse_known_args()
    from smmile.data.demo import demo_path

    root = Path(a.root)
    if a.generic_models:
        models = {m.rstrip("/").split("/")[-1]: m for m in a.generic_models.split(",")}
    elif a.tiny:
        models = {arch: str(tg.cached(arch)) for arch in tg.MULTI_IMAGE}
    else:
        out = root / "smolvlm-256m-class-random"
        if not (out / "config.json").exists():
            out.mkdir(parents=True, exist_ok=True)
            build_smolvlm_class(out)
        models = {"smolvlm-256m-class": str(out)}
    ok = all([check_model(name, path, a, root, str(demo_path())) for name, path in models.items()])
    print("GENERIC GPU CHECK", "PASSED" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
