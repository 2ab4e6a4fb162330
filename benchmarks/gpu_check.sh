#!/usr/bin/env bash
# One command, under 8 minutes on one H200: random-weight models with the real 7B-class configs
# (Qwen2.5-VL-7B, LLaVA-1.5-7B), the demo problems through HF batch 1, HF batched and vLLM (if importable),
# output agreement and tokens/s for each; then, per architecture, the image processor the PIL and torchvision
# backends give and their largest pixel difference on the demo images (issue #15). Needs CUDA torch + transformers
# (+ accelerate, torchvision for the backend comparison); vLLM optional (requirements-vllm.txt); flash-attn optional
# (requirements-gpu.txt). Nothing is downloaded.
#   bash benchmarks/gpu_check.sh [--archs qwen2_5_vl,llava] [--max-new-tokens 32] [--batch-size 8]
#   bash benchmarks/gpu_check.sh --tiny     # the same pipeline on the tiny test checkpoints (CPU smoke)
# Then benchmarks/gpu_check_anymodel.py: a SmolVLM-256M-class Idefics3 (random weights) through --model hf:<path>
# and vllm:<path>; SMMILE_GENERIC_MODELS=ID,... (cached hub ids or folders) runs real checkpoints instead.
# Last, benchmarks/bench_ray.py: the tiny LLaVA on the demo set through the local engine and --engine ray with two
# workers sharing the GPU (--gpus-per-worker 0.5), CSVs byte-identical (needs ray[data], in the locks).
set -euo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
python -m smmile.cli env >&2 || python -c "import torch, sys; print('torch', torch.__version__, 'cuda', torch.cuda.is_available(), file=sys.stderr)"
status=0
python benchmarks/gpu_check.py "$@" || status=1
# any checkpoint, no code: --model hf:<path> (batch 1, batched) and vllm:<path> (LLM.chat), probe recorded
python benchmarks/gpu_check_anymodel.py "$@" || status=1
# --engine ray: two workers on the one GPU, the same CSV as the local engine
python benchmarks/bench_ray.py --workers 2 --gpus-per-worker 0.5 --repeat 1 || status=1
exit $status
