"""The installed versions that can change results (every run manifest, `smmile env`), the accelerator, and the
paper's pins with what `--protocol paper` does when another version is installed. torch is imported only if asked."""

from __future__ import annotations

import importlib.util
import platform
import subprocess
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

# distributions whose version a run records (manifest "packages"), in the order `smmile env` lists them
PACKAGES = ("smmile", "torch", "transformers", "tokenizers", "qwen-vl-utils", "pillow", "torchvision", "accelerate",
            "datasets", "numpy", "pandas", "pyarrow", "vllm", "flash-attn", "openai", "anthropic", "ollama")


def command_line() -> list[str]:
    """The command as typed, for the records: the program's name without its folder, then the arguments ([] if none)."""
    argv = getattr(sys, "argv", None) or [""]
    return [Path(argv[0]).name, *argv[1:]] if argv[0] else []


def git_revision() -> str | None:
    here = Path(__file__).resolve().parent
    try:
        rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=5)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=here,
                               capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    if rev.returncode != 0:
        return None
    return rev.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


@dataclass(frozen=True)
class Pin:
    package: str
    paper: str  # the version the original harness pinned (its README / requirements.txt / script headers)
    under_paper: str  # what `--protocol paper` does when another version is installed


# The original's pins (spec §8); requirements-paper.txt pins the same versions (tests/test_locks.py checks it).
PAPER_PINS = (
    Pin("python", "3.10", "nothing to compensate: no result depends on the Python version"),
    Pin("torch", "2.5.1", "not compensated: kernels and bf16/fp16 arithmetic may differ in the last bits, which can "
                          "flip a near-tie in greedy decoding; use requirements-paper.lock for the paper's build"),
    Pin("transformers", "4.51.0", "each family re-states 4.51.0's image steps (docs/images.md: alpha dropped, not "
                                  "composited) and Llama-3.2's double BOS; token ids and pixel values are checked "
                                  "against 4.51.0 recordings (tests/test_hf_reference.py); the LLaVA scripts' 4.46.3 "
                                  "anyres padding differs by a pixel on odd padding (docs/deviations.md L3). The LLaVA "
                                  "scripts pinned 4.46.3 with torch 2.2.0: requirements-paper-llava.lock"),
    Pin("tokenizers", "0.21.1", "nothing needed: token ids are checked against the 4.51.0/0.21.1 recordings"),
    Pin("qwen-vl-utils", "0.0.11", "not imported: MedVLM-R1's to_rgb and smart resize of 0.0.11 are re-stated in "
                                   "smmile/models/hf/imageprep.py"),
    Pin("accelerate", "1.6.0", "nothing needed: it places weights on devices only"),
    Pin("datasets", "3.5.1", "its image decoding (EXIF orientation, mode kept) is re-stated in ImageRef.load"),
    Pin("torchvision", "0.20.1", "not used: the PIL image processors the paper's transformers used are loaded "
                                 "whatever is installed (--image-backend pil)"),
    Pin("flash-attn", "any", "used where installed with a GPU by the presets that asked for flash_attention_2 "
                             "(Qwen2.5-VL, MedVLM-R1); else sdpa, recorded in the manifest"),
)


def version(package: str) -> str | None:
    if package == "python":
        return platform.python_version()
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def package_versions() -> dict[str, str]:
    """Python and every installed package of PACKAGES: the manifest's record."""
    return {name: v for name in ("python", *PACKAGES) if (v := version(name)) is not None}


def accelerator() -> dict:
    """torch's CUDA build and the GPUs it sees ({} without torch)."""
    if importlib.util.find_spec("torch") is None:
        return {}
    import torch

    cuda = torch.cuda.is_available()
    return {"torch_cuda": torch.version.cuda, "cuda_available": cuda,
            "gpus": [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())] if cuda else []}


def flash_attn_unusable() -> str:
    """Why flash_attention_2 cannot run on this machine ("" when it can): models/hf/backend.py falls back to sdpa."""
    if importlib.util.find_spec("flash_attn") is None:
        return "flash-attn is not installed"
    if not accelerator().get("cuda_available"):
        return "flash-attn is installed, but no CUDA GPU is visible"
    return ""


def attention_in_use() -> str:
    """What the presets that asked for flash_attention_2 run with on this machine."""
    why = flash_attn_unusable()
    return f"sdpa ({why})" if why else f"flash_attention_2 (flash-attn {version('flash-attn')})"


def same_release(installed: str, pinned: str) -> bool:
    """2.13.0+cpu is release 2.13.0; a pin of "3.10" matches any 3.10.x."""
    release = installed.split("+")[0].split(".")
    return release[:len(pinned.split("."))] == pinned.split(".")


def torchvision_usable() -> bool:
    """transformers' own test: a torchvision that imports (a CUDA-only build beside a CPU torch does not)."""
    try:
        import torchvision  # noqa: F401
    except Exception:  # absent, or a broken build (RuntimeError/ImportError/OSError on import)
        return False
    return True
