"""The run manifest: how a result file was produced (never secrets)."""

from __future__ import annotations

import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path

PACKAGES = ("smmile", "numpy", "pandas", "pyarrow", "pillow", "datasets", "torch", "transformers", "accelerate",
            "vllm", "openai", "anthropic", "ollama", "flash-attn")


def package_versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


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


def command_line() -> list[str]:
    return [Path(sys.argv[0]).name, *sys.argv[1:]]
