"""The report renders in a real browser from disk (headless Chromium): a non-blank page, and every
figure it refers to exists. Skipped where no chromium binary is installed (Debian: apt-get install chromium)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from urllib.parse import unquote

import pytest

from report_fixtures import build_results
from smmile.cli import main as smmile

BROWSERS = ("chromium", "chromium-browser")
WINDOW = (1280, 2000)


def browser() -> str:
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    pytest.skip("no chromium/chromium-browser binary (Debian package: chromium)")


def screenshot(page: Path, png: Path, profile: Path) -> None:
    command = [browser(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               f"--user-data-dir={profile}", f"--screenshot={png}", f"--window-size={WINDOW[0]},{WINDOW[1]}",
               page.resolve().as_uri()]
    subprocess.run(command, capture_output=True, timeout=120, check=False)
    assert png.is_file(), "chromium wrote no screenshot"


def test_headless_render(tmp_path, demo_dir):
    res, an = build_results(tmp_path)
    out = tmp_path / "out"
    assert smmile(["report", str(res), "--analyses", str(an), "--out", str(out), "--n-boot", "200"]) == 0
    page = out / "index.html"
    text = page.read_text(encoding="utf-8")
    linked = [unquote(h) for h in re.findall(r'href="([^"#][^"]*)"', text)]
    assert linked and all((out / h).is_file() for h in linked)
    png = tmp_path / "shot.png"
    screenshot(page, png, tmp_path / "profile")
    from PIL import Image
    image = Image.open(png).convert("RGB")
    assert image.size == WINDOW
    colours = image.getcolors(maxcolors=1 << 20)
    assert colours is not None and len(colours) > 50, "page looks blank"
    white = sum(count for count, rgb in colours if min(rgb) >= 250)
    assert white < 0.97 * WINDOW[0] * WINDOW[1], "page is almost all white"


def test_skips_without_browser(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(pytest.skip.Exception):
        browser()
