"""Test set-up: offline, the demo dataset built once per session, paths to shared data, and a whole-run check
that the suite left the shared published outputs untouched."""

from __future__ import annotations

import hashlib
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


def published_changes(root: Path, before: dict[str, tuple[int, int]] | None = None) -> list[str]:
    """What differs under `root` from its SHA256SUMS files (content, files missing or added) and, given a
    `before` snapshot, which files were rewritten at all (a test rewriting a file with the same bytes
    would otherwise go unseen)."""
    listed: dict[Path, str] = {}
    for sums in root.rglob("SHA256SUMS"):
        for line in sums.read_text().splitlines():
            if line.strip():
                digest, name = line.split(maxsplit=1)
                listed[sums.parent / name.lstrip("*")] = digest
    problems = []
    for path, digest in sorted(listed.items()):
        if not path.is_file():
            problems.append(f"missing: {path}")
        elif hashlib.sha256(path.read_bytes()).hexdigest() != digest:
            problems.append(f"changed: {path}")
    for path in sorted(p for p in root.rglob("*") if not p.is_dir()):
        if path.name != "SHA256SUMS" and path not in listed:
            problems.append(f"appeared: {path}")
    now = file_stamps(root)
    for name, stamp in sorted((before or {}).items()):
        if name in now and now[name] != stamp and f"changed: {name}" not in problems:
            problems.append(f"rewritten: {name}")
    return problems


def file_stamps(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


@pytest.fixture(scope="session", autouse=True)
def _shared_published_untouched():
    """Fail the run if any test wrote under ../shared/published (tests must copy inputs to tmp_path)."""
    root = PUBLISHED.parent
    if not root.is_dir():
        yield
        return
    before = file_stamps(root)
    yield
    problems = published_changes(root, before)
    if problems:
        pytest.fail(f"the test run wrote under {root} (tests must copy published inputs to tmp_path first):\n  "
                    + "\n  ".join(problems[:20]), pytrace=False)


@pytest.fixture(autouse=True)
def _library_log_lines():
    """The library's log lines on stderr as the command line sets them up (tests that call library functions
    read its notes and warnings from capsys); reset per test, since a command run with -q changes the level."""
    from smmile.cli.common import configure_logging

    configure_logging()


@pytest.fixture(scope="session", autouse=True)
def demo_dir(tmp_path_factory) -> Path:
    """Every test (and subprocess) sees the same generated demo data, built once."""
    root = tmp_path_factory.mktemp("demo")
    os.environ["SMMILE_DEMO_DIR"] = str(root)
    from smmile.data.demo import write_demo

    write_demo(root)
    return root


@pytest.fixture(scope="module")
def reports(tmp_path_factory, demo_dir) -> dict:
    """The demo reports of ``report_fixtures.demo_reports`` (built once per session)."""
    from report_fixtures import demo_reports

    return demo_reports(tmp_path_factory)


@pytest.fixture(scope="module")
def browser():
    """A headless system Chromium (``report_fixtures.system_chromium``; skips, saying why, without one)."""
    from report_fixtures import system_chromium

    with system_chromium() as launched:
        yield launched


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
