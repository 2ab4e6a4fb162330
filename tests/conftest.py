"""Test set-up: offline, the demo dataset built once per session, paths to shared data."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FRONT = REPO / "inference_and_evaluation"
PUBLISHED = REPO.parent / "shared" / "published" / "smmile"

if str(FRONT) not in sys.path:
    sys.path.insert(0, str(FRONT))

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(scope="session", autouse=True)
def demo_dir(tmp_path_factory) -> Path:
    """Every test (and subprocess) sees the same generated demo data, built once."""
    root = tmp_path_factory.mktemp("demo")
    os.environ["SMMILE_DEMO_DIR"] = str(root)
    from smmile.data.demo import write_demo

    write_demo(root)
    return root


@pytest.fixture
def published() -> Path:
    if not PUBLISHED.is_dir():
        pytest.skip("published SMMILE outputs (../shared/published/smmile) not available")
    return PUBLISHED


@pytest.fixture(autouse=True)
def _restore_cuda_visible_devices():
    """Front doors export their GPU flag as CUDA_VISIBLE_DEVICES, as the originals did; undo it per test."""
    before = os.environ.get("CUDA_VISIBLE_DEVICES")
    yield
    if before is None:
        os.environ.pop("CUDA_VISIBLE_DEVICES", None)
    else:
        os.environ["CUDA_VISIBLE_DEVICES"] = before
