"""The local engine vs `--engine ray --workers N` on a tiny random-weight checkpoint (CPU is fine).

    python benchmarks/bench_ray.py [--arch llava] [--problems 24] [--max-new-tokens 16] [--workers 2] [--repeat 2]
    python benchmarks/bench_ray.py --gpus-per-worker 0.5    # two workers sharing one GPU (benchmarks/gpu_check.sh)
    ray start --head --num-cpus 4 --port 6390 && python benchmarks/bench_ray.py --ray-address 127.0.0.1:6390

Runs the same front-door pipeline (RunSpec -> runner) on the demo set with the local engine and with the Ray
engine, each from an empty output folder; checks the CSVs are byte-identical and prints wall times (best of
--repeat interleaved runs). The Ray runs join one local Ray started first (`ray.init(num_cpus=...)`, not timed,
as a cluster would already be up), or with --ray-address the cluster there (each run joins it, token authentication
as `smmile run --ray-address` decides it); each Ray run still pays for creating its workers and loading the model in
each, and for shipping the work into the object store once.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

PRESETS = {"qwen2_5_vl": "qwen3B", "llava": "llava_7b", "gemma3": "medgemma_4b", "llava_onevision": "llavaonevision_0.5b"}


def timed_run(arch: str, out: Path, dataset: str, tokens: int, workers: int | None,
              gpus: float | None = None, address: str | None = None) -> tuple[float, bytes]:
    import tiny_models
    from smmile.generation import GenerationSettings, RunSettings
    from smmile.runner.ray_engine import RaySettings
    from smmile.runner.run import RunSpec, run

    engine = {"engine": "ray", "ray": RaySettings(address, workers, gpus)} if workers else {}
    spec = RunSpec(model=PRESETS[arch], mode="ICL", fmt="open", dataset=dataset, output_dir=out, quiet=True,
                   model_path=str(tiny_models.cached(arch)), settings=RunSettings(dtype="float32"),
                   generation=GenerationSettings(max_new_tokens=tokens), **engine)
    t0 = time.perf_counter()
    result = run(spec)
    seconds = time.perf_counter() - t0
    assert result.exit_code == 0
    return seconds, result.csv_path.read_bytes()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--arch", choices=list(PRESETS), default="llava")
    p.add_argument("--problems", type=int, default=24, help="demo problems (the demo set has 24)")
    p.add_argument("--max-new-tokens", type=int, default=16)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--gpus-per-worker", type=float, default=None, help="default: 1 with GPUs, else 0")
    p.add_argument("--num-cpus", type=int, default=os.cpu_count(), help="CPUs of the local Ray")
    p.add_argument("--ray-address", default=None, help="HOST:PORT of a running cluster (`ray start --head`) to join")
    p.add_argument("--repeat", type=int, default=2, help="interleaved repetitions; the best time of each is kept")
    a = p.parse_args()
    import ray
    import tiny_models

    dataset = str(tiny_models.demo_subset(a.problems))
    if a.ray_address is None:
        ray.init(num_cpus=a.num_cpus, include_dashboard=False, _node_ip_address="127.0.0.1", logging_level="WARNING")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            timed_run(a.arch, Path(tmp) / "warm", dataset, 2, None)  # imports, checkpoint build, caches
            local = best = float("inf")
            for r in range(a.repeat):  # fresh output folders: nothing is resumed
                t, csv_local = timed_run(a.arch, Path(tmp) / f"local{r}", dataset, a.max_new_tokens, None)
                local = min(local, t)
                t, csv_ray = timed_run(a.arch, Path(tmp) / f"ray{r}", dataset, a.max_new_tokens, a.workers,
                                       a.gpus_per_worker, a.ray_address)
                best = min(best, t)
                assert csv_ray == csv_local, "the Ray engine's CSV differs from the local engine's"
    finally:
        ray.shutdown()
    print(f"{a.arch}, {a.problems} problems, {a.max_new_tokens} new tokens, {os.cpu_count()} CPUs, "
          f"ray {ray.__version__}")
    print(f"local engine:               {local:7.2f} s")
    print(f"--engine ray --workers {a.workers}:   {best:7.2f} s  ({local / best:.2f}x)")
    print("CSVs byte-identical: yes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
