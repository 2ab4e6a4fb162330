"""Front doors of the local-model scripts (spec §3.1-§3.8): the original flags, mapped onto RunSpec."""

from __future__ import annotations

import argparse
import os
from dataclasses import replace

from ..data.variant_datasets import refuse_dropped_images
from ..errors import UserError
from ..generation import MAX_NEW_TOKENS, RunSettings
from ..models.hf import preflight
from ..models.hf.processor import IMAGE_BACKENDS
from ..models.presets_hf import LLAVA_MODELS
from ..protocol.items import Rngs
from ..runner.run import RunSpec, run
from . import common as fd
from .api_models import run_settings

MODES = ["0-shot", "ICL"]
FORMATS = ["open", "mcqa"]
LLAVA_NAMES = list(LLAVA_MODELS)  # the --model_name choices of the LLaVA scripts (spec §3.5)
NOISY = ["AddOneExample-BySpeciality", "AddOneExample"]
CACHE_HELP = "cache_dir for model and processor (the original's default was /home/.cache/; unset = HF default)"
TOKENS_HELP = "generation length limit (original: 512)"
CPU_HELP = "run without a CUDA GPU (inference_qwen/llama32v/medr1/llavamed*: the original required one)"
IMAGE_BACKEND_HELP = ("image processor backend: pil (the slow processors the paper's transformers used), torchvision "
                      "(faster; slightly different resizing), auto (transformers' choice). Default: pil under "
                      "--protocol paper, auto under --protocol corrected")


def add_local_flags(p: argparse.ArgumentParser, *, qwen_pixels: bool = False, vllm: bool = True,
                    max_new_tokens: bool = True, output_dir: bool = False) -> None:
    fd.add_run_flags(p, image_dir=None if "--image_dir" in p._option_string_actions else "--image-dir")
    add_engine_flags(p)
    g = p.add_argument_group("local model settings (smmile additions)")
    if output_dir:
        g.add_argument("--output-dir", default="../results",
                       help="the original wrote to ../results (../results_augmented with --dataset augmented)")
    if max_new_tokens:
        g.add_argument("--max-new-tokens", type=int, default=MAX_NEW_TOKENS, help=TOKENS_HELP)
    model_flags(g, pixels=qwen_pixels)
    if vllm:
        g.add_argument("--backend", choices=["hf", "vllm"], default="hf",
                       help="hf: transformers (faithful); vllm: one batched vLLM call (pip install -r "
                            "requirements-vllm.txt)")
        g.add_argument("--tensor-parallel-size", type=int, default=1, help="vLLM tensor parallelism")


def model_flags(g, *, pixels: bool, cpu_help: str = CPU_HELP) -> None:
    """How the model is loaded, for the front doors and `smmile run` (unset: the preset's, i.e. the original's)."""
    g.add_argument("--model-revision", default=None,
                   help="hub revision (commit, tag, branch) of the model; the resolved commit goes in the manifest")
    g.add_argument("--dtype", default=None, help="bfloat16 | float16 | float32 | auto (default: the original's)")
    g.add_argument("--device-map", default=None, help="accelerate device map (default auto, as the original; "
                   "'none' loads on one device)")
    g.add_argument("--attn-implementation", default=None, help="eager | sdpa | flash_attention_2 (default: "
                   "flash_attention_2 where the original used it and flash-attn is importable, else sdpa)")
    g.add_argument("--image-backend", choices=IMAGE_BACKENDS, default=None, help=IMAGE_BACKEND_HELP)
    g.add_argument("--allow-cpu", action="store_true", help=cpu_help)
    if pixels:
        g.add_argument("--min-pixels", type=int, default=None, help="Qwen image processor min_pixels")
        g.add_argument("--max-pixels", type=int, default=None, help="Qwen image processor max_pixels (less memory)")


def preflight_checks(a: argparse.Namespace, script: str) -> None:
    """Before any work: the GPU flag exported as CUDA_VISIBLE_DEVICES (as the originals did), a variant the script
    cannot represent, the libraries, the --model-path folder, and CUDA where the original required it (on this
    machine; with --engine ray, in the cluster)."""
    export_gpu_devices(a)
    refuse_dropped_images(getattr(a, "dataset", None), script)
    preflight.require_stack(script)
    preflight.check_model_path(a.model_path)
    if getattr(a, "engine", "local") != "ray":
        preflight.require_cuda(script, a.allow_cpu)
    elif script in preflight.CUDA_SCRIPTS and not a.allow_cpu and a.gpus_per_worker is None:
        a.gpus_per_worker = 1.0  # the workers hold the GPUs: the cluster must have one per worker


def spec_for(a: argparse.Namespace, model: str, fmt: str, *, dataset=None, augmented_flag=False, open_suffix=True,
             summary=None, script: str | None = None) -> RunSpec:
    vllm = getattr(a, "backend", "hf") == "vllm"
    settings = replace(run_settings(a), script=script, tensor_parallel_size=a.tensor_parallel_size if vllm else None)
    return fd.run_spec(a, model, fmt, dataset, augmented_flag, open_suffix=open_suffix, summary=summary,
                       backend="vllm" if vllm else None, **engine_fields(a, settings, vllm))


def _common(p, *, mode_default="ICL", fmt_default="open", fmt=True) -> None:
    p.add_argument("--inference_mode", choices=MODES, default=mode_default, help=fd.MODE_HELP)
    if fmt:
        p.add_argument("--task_format", choices=FORMATS, default=fmt_default, help=fd.FORMAT_HELP)


def qwen_main(argv: list[str] | None = None) -> int:
    p = fd.parser("Qwen2.5-VL 3B/7B/32B/72B on SMMILE (spec §3.1).")
    _common(p)
    p.add_argument("--models", nargs="+", choices=["3B", "7B", "32B", "72B", "all"], default=["all"],
                   help="'all' anywhere runs 3B, 7B, 32B, 72B in order, sharing one random stream")
    p.add_argument("--output-dir", default="../results", help=fd.OUTPUT_HELP)
    p.add_argument("--gpu_devices", default="0,1", help="exported as CUDA_VISIBLE_DEVICES")
    p.add_argument("--hf_cache_dir", dest="cache_dir", metavar="HF_CACHE_DIR", default=None, help=CACHE_HELP)
    fd.add_dataset_flag(p)
    add_local_flags(p, qwen_pixels=True)

    def go() -> int:
        a = p.parse_args(argv)
        preflight_checks(a, "inference_qwen.py")
        sizes = ["3B", "7B", "32B", "72B"] if "all" in a.models else a.models
        rngs, code = Rngs(), 0
        for size in sizes:
            code = max(code, run(spec_for(a, f"qwen{size}", a.task_format, dataset=a.dataset), rngs).exit_code)
        return code

    return fd.guarded(go)


def _fixed_dir_main(argv, *, script: str, description: str, model: str, mode_default="ICL", fmt_default="open",
                    gpu_default="0,1", vllm=True, vllm_note="", qwen_pixels=False) -> int:
    p = fd.parser(description + vllm_note)
    _common(p, mode_default=mode_default, fmt_default=fmt_default)
    fd.add_dataset_flag(p)
    p.add_argument("--image_dir", default=fd.MISSING_IMAGES, help="folder of manually downloaded images "
                   "(the original's recovery had no effect; used under --protocol corrected)")
    p.add_argument("--gpu_devices", default=gpu_default, help="exported as CUDA_VISIBLE_DEVICES")
    p.add_argument("--hf_cache_dir", dest="cache_dir", metavar="HF_CACHE_DIR", default=None, help=CACHE_HELP)
    add_local_flags(p, qwen_pixels=qwen_pixels, vllm=vllm, output_dir=True)

    def go() -> int:
        a = p.parse_args(argv)
        preflight_checks(a, script)
        return run(spec_for(a, model, a.task_format, dataset=a.dataset)).exit_code

    return fd.guarded(go)


def llama32v_main(argv: list[str] | None = None) -> int:
    return _fixed_dir_main(argv, script="inference_llama32v.py",
                           description="Llama-3.2-90B-Vision-Instruct on SMMILE (spec §3.2).",
                           model="llama32_vision_90b", vllm=False,
                           vllm_note=" Runs on transformers only: vLLM's Mllama support has been broken or removed "
                                     "across versions, so --backend vllm is not offered here.")


def medr1_main(argv: list[str] | None = None) -> int:
    return _fixed_dir_main(argv, script="inference_medr1.py",
                           description="MedVLM-R1 (Qwen2-VL based) on SMMILE (spec §3.3).", model="MedVLM-R1",
                           mode_default="0-shot", fmt_default="mcqa", qwen_pixels=True)


def medgemma_main(argv: list[str] | None = None) -> int:
    return _fixed_dir_main(argv, script="inference_medgemma.py",
                           description="MedGemma 4B on SMMILE (spec §3.4).", model="medgemma_4b",
                           gpu_default="0")


def _llava_parser(description: str, *, mcqa_script: bool, llava: bool) -> argparse.ArgumentParser:
    p = fd.parser(description)
    _common(p, fmt_default="mcqa", fmt=mcqa_script)
    if llava:
        p.add_argument("--model_name", required=True, choices=LLAVA_NAMES, help="which LLaVA checkpoint (spec §3.5)")
    p.add_argument("--output-dir", default="../results", help=fd.OUTPUT_HELP)
    p.add_argument("--gpu-devices", default="0", help="exported as CUDA_VISIBLE_DEVICES")
    p.add_argument("--hf_cache_dir", dest="cache_dir", metavar="HF_CACHE_DIR", default=None, help=CACHE_HELP)
    if mcqa_script:
        p.add_argument("--max_new_tokens", "--max-new-tokens", dest="max_new_tokens", type=int, default=MAX_NEW_TOKENS,
                       help="generation budget per problem (the original's flag)")
        p.add_argument("--augmented", choices=["augmented"], default=None, help="SMMILE++ (this script's switch)")
        fd.add_dataset_flag(p)  # smmile addition: demo / local datasets
    else:
        fd.add_dataset_flag(p)
        if llava:
            p.add_argument("--noisy", choices=NOISY, default=None,
                           help="run on the noise variant of the dataset (the original parsed this flag only)")
    add_local_flags(p, max_new_tokens=not mcqa_script)
    return p


LLAVAMED_NOTE = (" Needs an HF-format LLaVA-Med checkpoint: convert the original with "
                 "`smmile convert llava-med SRC DST` and pass --model-path DST.")


def _llava_main(argv, *, script: str, description: str, mcqa_script: bool, llavamed: bool = False) -> int:
    """The four LLaVA / LLaVA-Med scripts: open-only or `_mcqa`; LLaVA picks its checkpoint with --model_name."""
    p = _llava_parser(description + (LLAVAMED_NOTE if llavamed else ""), mcqa_script=mcqa_script, llava=not llavamed)

    def go() -> int:
        a = p.parse_args(argv)
        preflight_checks(a, script)
        model = "llavamed" if llavamed else a.model_name
        fmt = a.task_format if mcqa_script else "open"
        dataset = a.dataset
        if getattr(a, "noisy", None):  # run on the noise variant; results go to <output-dir>_<variant>
            from ..data.variant_datasets import noisy_dataset, noisy_output_dir

            augmented = dataset == "augmented"
            dataset = noisy_dataset(None if augmented else dataset, a.noisy, augmented=augmented, revision=a.revision)
            a.output_dir = str(noisy_output_dir(a.output_dir + ("_augmented" if augmented else ""), a.noisy))
        summary = (model, "LLaVA-Med" if llavamed else model) if mcqa_script else None
        spec = spec_for(a, model, fmt, dataset=dataset, augmented_flag=bool(getattr(a, "augmented", None)),
                        open_suffix=mcqa_script, summary=summary, script="mcqa" if mcqa_script else "open")
        return run(spec).exit_code

    return fd.guarded(go)


def llava_main(argv: list[str] | None = None) -> int:
    return _llava_main(argv, script="inference_llava.py", mcqa_script=False,
                       description="LLaVA family on SMMILE, open format (spec §3.5).")


def llava_mcqa_main(argv: list[str] | None = None) -> int:
    return _llava_main(argv, script="inference_llava_mcqa.py", mcqa_script=True,
                       description="LLaVA family on SMMILE, open + MCQA (spec §3.6).")


def llavamed_main(argv: list[str] | None = None) -> int:
    return _llava_main(argv, script="inference_llavamed.py", mcqa_script=False, llavamed=True,
                       description="LLaVA-Med v1.5 on SMMILE, open format (spec §3.7).")


def llavamed_mcqa_main(argv: list[str] | None = None) -> int:
    return _llava_main(argv, script="inference_llavamed_mcqa.py", mcqa_script=True, llavamed=True,
                       description="LLaVA-Med v1.5 on SMMILE, open + MCQA (spec §3.8).")


# `smmile run`
def add_local_model_flags(p: argparse.ArgumentParser) -> None:
    """Local-model settings for `smmile run` (unset = the preset's, i.e. the original's)."""
    g = p.add_argument_group("local models (transformers / vLLM; --backend hf|vllm)")
    g.add_argument("--max-new-tokens", type=int, default=None, help=TOKENS_HELP)
    model_flags(g, pixels=True, cpu_help="accepted as the front doors take it: smmile run never requires a "
                "GPU (runs on CPU without)")
    g.add_argument("--tensor-parallel-size", type=int, default=None, help="vLLM tensor parallelism")
    g.add_argument("--gpu-devices", default=None, help="exported as CUDA_VISIBLE_DEVICES, as the front doors' "
                   "--gpu_devices (unset: left as it is)")
    g.add_argument("--hf-cache-dir", dest="cache_dir", metavar="HF_CACHE_DIR", default=None, help=CACHE_HELP)
    g.add_argument("--script", choices=["open", "mcqa"], default=None,
                   help="LLaVA / LLaVA-Med: behave as the open-only script or the _mcqa script (default open)")


def export_gpu_devices(a: argparse.Namespace) -> None:
    """The GPU flag exported as CUDA_VISIBLE_DEVICES, as the originals did: before any model or CUDA context."""
    if a.gpu_devices:
        os.environ["CUDA_VISIBLE_DEVICES"] = a.gpu_devices


def add_engine_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("scale-out on Ray (docs/scale-out.md)")
    g.add_argument("--engine", choices=["local", "ray"], default="local",
                   help="local: this process runs the model; ray: Ray workers run it, this process plans and "
                        "journals (same answers, same files)")
    g.add_argument("--ray-address", default=None, metavar="auto|HOST:PORT",
                   help="with --engine ray: 'auto' joins the cluster this node belongs to (`ray start`, a Ray job), "
                        "HOST:PORT the cluster whose head runs there (with its token where it asks for one); unset: "
                        "start a Ray for this run only")
    g.add_argument("--num-cpus", type=fd.positive_int, default=None,
                   help="with --engine ray and no --ray-address: CPUs of the Ray this run starts (default: all)")
    g.add_argument("--workers", type=fd.positive_int, default=None,
                   help="with --engine ray: Ray workers, each loading the model once (default 1)")
    g.add_argument("--gpus-per-worker", type=fd.non_negative_number, default=None, metavar="G",
                   help="with --engine ray: GPUs per worker (fractions share a GPU; vLLM: tensor parallelism G). "
                        "Default: 1 where the cluster has GPUs, else 0")


def engine_fields(a: argparse.Namespace, settings: RunSettings, vllm: bool) -> dict:
    """RunSpec's settings and engine fields from the flags. With vLLM, --gpus-per-worker G is tensor parallelism G
    inside each worker (set in `settings`, so it is keyed and recorded as --tensor-parallel-size G would be)."""
    ray_flags = {"--ray-address": a.ray_address, "--workers": a.workers, "--gpus-per-worker": a.gpus_per_worker,
                 "--num-cpus": a.num_cpus}
    if a.engine != "ray":
        given = [flag for flag, value in ray_flags.items() if value is not None]
        if given:
            raise UserError(f"{', '.join(given)} only apply with --engine ray")
        return {"settings": settings}
    from ..runner.ray_engine import RaySettings

    gpus = a.gpus_per_worker
    if vllm and gpus is not None and gpus >= 1:
        if gpus != int(gpus):
            raise UserError(f"--gpus-per-worker {gpus:g}: vLLM needs whole GPUs (tensor parallelism)")
        tp = settings.tensor_parallel_size
        if tp not in (None, 1, int(gpus)):
            raise UserError(f"--tensor-parallel-size {tp} and --gpus-per-worker {gpus:g} disagree: with --engine "
                            "ray, each worker's tensor parallelism is its GPU count")
        if gpus > 1:
            settings = replace(settings, tensor_parallel_size=int(gpus))
    return {"settings": settings, "engine": "ray", "ray": RaySettings(address=a.ray_address, workers=a.workers or 1,
                                                gpus_per_worker=gpus, num_cpus=a.num_cpus)}
