"""A small but complete results folder for the report tests, built with smmile's own commands, and
helpers that read the figures back (SVG text and font sizes).

Real runs (baselines on the demo data, with manifests), EM scoring, stratification and one
`smmile analyze noise`, plus a hand-made open-format model ``toy`` with 0-shot and ICL files and judge
outputs (no manifest: it stands for a result produced outside smmile). ``build_plusplus`` adds the
baselines on the demo's SMMILE++ (permuted) data. ``demo_reports`` builds the reports once per test
session (in the session's temporary folder) for every test module that needs them.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
from pathlib import Path
from xml.etree import ElementTree

import pandas as pd

from smmile.cli.baselines import main as baselines
from smmile.cli import main as smmile
from smmile.cli.em import main as evaluate_em
from smmile.cli.stratify import main as stratify

RUNS = [("random", "open"), ("random", "mcqa"), ("majority", "open"), ("majority", "mcqa")]
N_BOOT = "300"


def _baselines(dataset: str, out: Path, runs=RUNS) -> None:
    for baseline, fmt in runs:
        assert baselines(["--baseline", baseline, "--task_format", fmt, "--dataset", dataset,
                          "--output-dir", str(out)]) == 0


def _toy(res: Path) -> None:
    """``toy`` 0-shot and ICL open results derived from the random baseline, judged by hand."""
    frame = pd.read_csv(res / "result_random_ICL.csv")
    for mode, keep_every in (("0-shot", 3), ("ICL", 2)):
        toy = frame.copy()
        right = [i % keep_every == 0 for i in range(len(toy))]
        toy["generated_answer"] = [t if ok else "something else" for t, ok in zip(toy["true_answer"], right)]
        toy["full_response"] = toy["generated_answer"]
        stem = res / f"result_toy_{mode}_open"
        toy.to_csv(f"{stem}.csv", index=False)
        accuracies = {str(p): 100.0 if ok else 0.0 for p, ok in zip(toy["problem_id"], right)}
        (Path(f"{stem}_evaluationllm.json")).write_text(json.dumps({"problem_accuracies": accuracies}))
        lines = [json.dumps({"row": i, "problem_id": str(p), "status": "ok", "reply": "1" if ok else "0",
                             "backend": "ollama", "model": "llama3.3", "protocol": "corrected"})
                 for i, (p, ok) in enumerate(zip(toy["problem_id"], right))]
        Path(f"{stem}_judgements.jsonl").write_text("\n".join(lines) + "\n")


def build_results(root: Path) -> tuple[Path, Path]:
    """(results folder, analyses folder) under ``root``."""
    res, noisy, an = root / "res", root / "res-noise", root / "an"
    _baselines("demo", res)
    _toy(res)
    assert evaluate_em([str(res)]) == 0
    assert stratify([str(res), "--eval_type", "em", "--dataset", "demo"]) == 0
    assert smmile(["variance", str(res)]) == 0
    assert smmile(["data", "variant", "noise-random", "--dataset", "demo", "--out", str(root / "ds-noise")]) == 0
    _baselines(str(root / "ds-noise"), noisy, [("random", "open"), ("majority", "mcqa")])
    original = root / "res-orig"
    _baselines("demo", original, [("random", "open"), ("majority", "mcqa")])
    assert smmile(["analyze", "noise", str(original), str(noisy), "--out", str(an), "--n-boot", "200"]) == 0
    return res, an


def build_plusplus(root: Path) -> Path:
    """The baselines on the demo's SMMILE++ data (``<id>_perm_<k>`` problems), EM-scored and stratified."""
    res = root / "res-pp"
    _baselines("demo-plusplus", res)
    assert evaluate_em([str(res)]) == 0
    assert stratify([str(res), "--eval_type", "em", "--dataset", "demo-plusplus"]) == 0
    return res


def demo_reports(tmp_path_factory) -> dict:
    """Built once per session: ``res``, ``an``, ``pp`` (inputs) and the reports ``main`` (demo results
    with analyses and --dataset demo), ``plain`` (no dataset) and ``sets`` (--plusplus, --dataset demo)."""
    root = tmp_path_factory.getbasetemp() / "report-demo"
    done = root / "built.json"
    if done.is_file():
        return {k: Path(v) for k, v in json.loads(done.read_text()).items()}
    root.mkdir(exist_ok=True)
    res, an = build_results(root)
    pp = build_plusplus(root)
    paths = {"root": root, "res": res, "an": an, "pp": pp, "main": root / "main", "plain": root / "plain",
             "sets": root / "sets"}
    common = ["--n-boot", N_BOOT]
    assert smmile(["report", str(res), "--analyses", str(an), "--dataset", "demo", "--out", str(paths["main"])]
                  + common) == 0
    assert smmile(["report", str(res), "--out", str(paths["plain"]), "--formats", "svg"] + common) == 0
    assert smmile(["report", str(res), "--plusplus", str(pp), "--dataset", "demo", "--out", str(paths["sets"]),
                   "--formats", "svg"] + common) == 0
    done.write_text(json.dumps({k: str(v) for k, v in paths.items()}))
    return paths


# -- reading figures back --------------------------------------------------------------------------------
SVG_NS = "{http://www.w3.org/2000/svg}"


def svg_width_pt(svg: str) -> float:
    return float(re.search(r'<svg[^>]*\swidth="([0-9.]+)pt"', svg).group(1))


def svg_texts(svg: str) -> list[tuple[str, float]]:
    """(text, font size in the SVG's user units = pt at natural size) of every text element."""
    found = []
    for node in ElementTree.fromstring(svg.encode()).iter(f"{SVG_NS}text"):
        size = re.search(r"font-size:\s*([0-9.]+)px", node.get("style", ""))
        text = "".join(node.itertext()).strip()
        if text:
            found.append((text, float(size.group(1)) if size else 0.0))
    return found


def rendered_pt(svg: str, width_px: float) -> float:
    """The smallest text of the figure in pt when shown ``width_px`` CSS pixels wide (96 px = 72 pt)."""
    scale = width_px / (svg_width_pt(svg) * 96 / 72)
    return min(size for _, size in svg_texts(svg)) * scale


# -- the system browser ---------------------------------------------------------------------------------
CHROMIUM = ("/usr/bin/chromium", "/usr/bin/chromium-browser")


@contextlib.contextmanager
def system_chromium():
    """A headless Chromium from the system (Playwright's ``executable_path``; nothing is downloaded).
    Skips the test, saying why, without Playwright or a chromium binary."""
    import pytest

    sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright is not installed (pip install playwright)")
    executable = next((p for p in CHROMIUM if os.path.exists(p)), None)
    executable = executable or shutil.which("chromium") or shutil.which("chromium-browser")
    if not executable:
        pytest.skip("no chromium binary (Debian package: chromium); the report was not rendered")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, args=["--no-sandbox", "--disable-gpu"])
        try:
            yield browser
        finally:
            browser.close()
