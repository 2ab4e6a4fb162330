"""Batch 8 vs batch 1 on the demo set with a tiny random-weight local model (CPU is fine).

    python benchmarks/bench_hf_batch.py [--arch llava] [--max-new-tokens 16] [--batch-size 8] [--repeat 3]

Builds (or reuses) the tiny checkpoint of tests/tiny_models.py, runs the same front-door pipeline (RunSpec ->
HF backend) on the 24-problem demo set at batch size 1 and N, checks the result rows are identical, and prints
wall times (best of --repeat interleaved runs), tokens/s and the speed-up ratio. Model loading is excluded (a warm-up run loads everything first).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

PRESETS = {"qwen2_5_vl": "qwen3B", "qwen2_vl": "MedVLM-R1", "mllama": "llama32_vision_90b", "gemma3": "medgemma_4b",
           "llava": "llava_7b", "llava_next": "llavanext_7b", "llava_onevision": "llavaonevision_0.5b"}


def timed_run(arch: str, batch: int, tokens: int, out: Path, dataset: str):
    from smmile.generation import GenerationSettings, RunSettings
    from smmile.runner.run import RunSpec, run

    import tiny_models

    spec = RunSpec(model=PRESETS[arch], mode="ICL", fmt="open", dataset=dataset, output_dir=out, quiet=True,
                   model_path=str(tiny_models.cached(arch)), batch_size=batch,
                   settings=RunSettings(dtype="float32"), generation=GenerationSettings(max_new_tokens=tokens))
    t0 = time.perf_counter()
    result = run(spec)
    seconds = time.perf_counter() - t0
    manifest = json.loads(result.csv_path.with_name(result.csv_path.stem + ".manifest.json").read_text())
    return result, seconds, manifest["usage"].get("output_tokens", 0)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--arch", choices=list(PRESETS), default="llava")
    p.add_argument("--max-new-tokens", type=int, default=16)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    p.add_argument("--repeat", type=int, default=3, help="interleaved repetitions; the best time of each is kept")
    a = p.parse_args()
    import torch

    from smmile.data.demo import demo_path

    if a.threads:
        torch.set_num_threads(a.threads)
    dataset = str(demo_path())
    with tempfile.TemporaryDirectory() as tmp:
        timed_run(a.arch, a.batch_size, 2, Path(tmp) / "warm", dataset)  # imports, checkpoint build, caches
        t1 = tn = float("inf")
        for r in range(a.repeat):  # fresh output folders: nothing is resumed
            one, s1, toks = timed_run(a.arch, 1, a.max_new_tokens, Path(tmp) / f"b1-{r}", dataset)
            many, sn, _ = timed_run(a.arch, a.batch_size, a.max_new_tokens, Path(tmp) / f"bn-{r}", dataset)
            t1, tn = min(t1, s1), min(tn, sn)
            assert one.computed == many.computed == len(one.rows)
    same = one.rows == many.rows
    n = len(one.rows)
    print(f"arch={a.arch} preset={PRESETS[a.arch]} problems={n} max_new_tokens={a.max_new_tokens} new tokens={toks} "
          f"threads={torch.get_num_threads()}")
    print(f"batch 1: {t1:.2f} s ({toks / t1:.1f} tok/s)")
    print(f"batch {a.batch_size}: {tn:.2f} s ({toks / tn:.1f} tok/s)")
    print(f"speed-up batch {a.batch_size} vs 1: {t1 / tn:.2f}x; identical rows: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
