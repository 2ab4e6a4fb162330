"""Checks before a local model is loaded, so that a mistake costs one line, not a GPU hour: libraries,
`--model-path`, CUDA where the original required it, and the hub for a hub id (else the local cache)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from ...errors import MissingDependency, UserError

# front doors whose original script could not run without a CUDA GPU: llama32v and medr1 checked and exited at once,
# qwen and both LLaVA-Med scripts moved their inputs (and LLaVA-Med its model) to "cuda" explicitly
CUDA_SCRIPTS = ("inference_qwen.py", "inference_llama32v.py", "inference_medr1.py", "inference_llavamed.py",
                "inference_llavamed_mcqa.py")


def require_stack(why: str = "local models") -> None:
    for package in ("torch", "transformers"):
        if importlib.util.find_spec(package) is None:
            raise MissingDependency(package, "hf", why=why)


def check_model_path(model_path: str | None) -> None:
    if model_path is None:
        return
    path = Path(model_path).expanduser()
    if not path.exists():
        raise UserError(f"--model-path {model_path}: no such folder")
    if not path.is_dir():
        raise UserError(f"--model-path {model_path}: not a folder (give the checkpoint's folder)")


def require_cuda(script: str, allow_cpu: bool) -> None:
    """The original `script` needed a CUDA GPU: say so before anything is loaded, unless `--allow-cpu`."""
    if allow_cpu or script not in CUDA_SCRIPTS:
        return
    require_stack(script)
    import torch

    if not torch.cuda.is_available():
        raise UserError(f"{script} needs a CUDA GPU (the original script did) and none is visible; "
                        "pass --allow-cpu to run on the CPU anyway (slow)")


def hub_down(model: str) -> str | None:
    """Why the hub cannot be used for `model` right now (None: a local folder, or the hub answers)."""
    from ... import hub

    if Path(model).expanduser().is_dir():
        return None
    if hub.offline_requested():
        return "offline mode (HF_HUB_OFFLINE) is on"
    return hub.unreachable()


def local_checkpoint_advice(spec) -> str:
    """How to point this run at a checkpoint on disk: `--model hf:/folder` for a model given by id, else
    --model-path DIR (a preset)."""
    name = getattr(spec, "model", "") or ""
    if name.startswith(("hf:", "vllm:")):
        return f"pass --model {name.split(':', 1)[0]}:/path/to/folder with a local checkpoint"
    return "pass --model-path DIR with a local checkpoint"


def not_cached_message(model: str, why: str, spec=None) -> str:
    return (f"cannot load model {model}: {why} and it is not in the Hugging Face cache; download it where the hub "
            f"is reachable, or {local_checkpoint_advice(spec)}")
