"""The run manifest: how a result file was produced (never secrets)."""

from __future__ import annotations

import json
import subprocess
from importlib import metadata
from pathlib import Path

from ..environment import command_line, package_versions  # noqa: F401  (`smmile env` shows the same packages)


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


def smmile_version() -> str | None:
    try:
        return metadata.version("smmile")
    except metadata.PackageNotFoundError:
        return None


def read(path: Path) -> dict:
    """An existing manifest, or {} when there is none or it cannot be read."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
