"""Speed and size benchmark: ``smmile report`` on the published SMMILE outputs and on a SMMILE++-sized folder.

Three runs of the real command (``python -m smmile.cli report``, default settings: 10,000 resamples,
PNG + SVG, one worker per core, at most 4), each into a new temporary folder:

1. the paper's published SMMILE outputs (``../shared/published/smmile``, copied to a temporary folder
   first), without the problem explorer;
2. the same with the explorer: ``--dataset`` is a stand-in built from the demo generator (111
   problems, the published problem ids, demo images and questions; the real dataset is on the hub);
   2b. the same with every stand-in image enlarged to a 1024 px photo-like JPEG (``--image-size``), as
   the real dataset's images are large: the thumbnails then cost what they would on SMMILE;
3. a synthetic SMMILE++ folder: the demo generator's 111 problems permuted (``smmile.data.variants``)
   and cut to 1038 problems, with 32 result files (7 models × 2 modes × open + MCQA, 2 baselines × ICL
   × open + MCQA: ``bench_variance.file_plan(32)``; judge JSONs for the open files), scored by evaluate_EM and stratified (EM and judge) first,
   report with ``--dataset`` (explorer included).

For each run: wall time, the stage lines of the command, the page size, the explorer's payload size,
images and thumbnail bytes, and a check that every image is embedded once. The machine's load
average is printed before and after (the numbers depend on it).

Run:  python benchmarks/bench_report.py [--only 1,2,3] [--published DIR] [--image-size 1024]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FRONT = ROOT / "inference_and_evaluation"
sys.path.insert(0, str(FRONT))
PUBLISHED = ROOT.parent / "shared" / "published" / "smmile"
N_PLUSPLUS = 1038


def _bench_variance():
    spec = importlib.util.spec_from_file_location("bench_variance", ROOT / "benchmarks" / "bench_variance.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_parquet(records: list[dict], out: Path) -> Path:
    from smmile.data.parquet import write_dataset

    return write_dataset(records, out, force=True)


def enlarged(data: bytes, size: int) -> bytes:
    """A demo image scaled to ``size`` px (longest side) as a JPEG, with noise so it compresses like a photo."""
    import io

    import numpy as np
    from PIL import Image

    img = Image.open(io.BytesIO(data)).convert("RGB")
    img = img.resize((size, round(size * img.height / img.width)))
    noise = np.random.default_rng(len(data)).integers(0, 24, (img.height, img.width, 3), dtype=np.uint8)
    img = Image.fromarray(np.asarray(img, dtype=np.uint8) // 2 + noise)
    buffer = io.BytesIO()
    img.save(buffer, format="JPEG", quality=90)
    return buffer.getvalue()


def standin_dataset(ids: list[str], out: Path, image_size: int = 0) -> Path:
    """Demo problems (questions, answers, images, flags) renamed to the published problem ids; with
    ``image_size``, every image enlarged to a photo-like JPEG of that size (real SMMILE images are large)."""
    from smmile.data.demo import generate_records

    records = generate_records(seed=7, n_problems=len(ids))
    renamed = dict(zip(sorted(dict.fromkeys(r["problem_id"] for r in records)), sorted(ids)))
    if image_size:
        records = [{**r, "image": {"bytes": enlarged(r["image"]["bytes"], image_size), "path": r["image"]["path"]}}
                   for r in records]
    return write_parquet([{**r, "problem_id": renamed[r["problem_id"]]} for r in records], out)


def plusplus_dataset(out: Path) -> list:
    """The demo generator's 111 problems permuted, cut to N_PLUSPLUS problems; returns the problems."""
    from smmile.data.demo import generate_records
    from smmile.data.load import group
    from smmile.data.parquet import problems_to_records
    from smmile.data.variants import permute

    problems = permute(group(generate_records(seed=7, n_problems=111)), seed=42)[:N_PLUSPLUS]
    write_parquet(problems_to_records(problems), out)
    return problems


def plusplus_results(problems: list, out: Path) -> int:
    """32 result files on ``problems`` (bench_variance's generators), judge JSONs for the open ones."""
    import numpy as np

    bv = _bench_variance()
    rng = np.random.default_rng(0)
    ids = [p.problem_id for p in problems]
    truth = [p.query.answer for p in problems]
    suffix = dict(bv.MODELS)
    plan = bv.file_plan(32)
    out.mkdir(parents=True, exist_ok=True)
    for tag, mode, kind in plan:
        p = float(rng.uniform(0.05, 0.6))
        name = f"result_{tag}_{mode}" + ("_mcqa" if kind == "mcqa" else suffix.get(tag, "")) + ".csv"
        if kind == "mcqa":
            bv._mcqa_frame(ids, truth, bv._correct(ids, p, rng)).to_csv(out / name, index=False)
            continue
        em, llm = bv._correct(ids, p, rng), bv._correct(ids, min(0.9, p + 0.1), rng)
        bv._open_frame(ids, truth, em, rng).to_csv(out / name, index=False)
        (out / (name[:-4] + "_evaluationllm.json")).write_text(json.dumps(bv._judge_json(ids, llm)))
    return len(plan)


def score_and_stratify(results: Path, dataset: Path) -> None:
    """evaluate_EM and stratify (EM and judge), as a user would before the report (not timed)."""
    import contextlib
    import io

    from smmile.cli.em import main as evaluate_em
    from smmile.cli.stratify import main as stratify

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        evaluate_em([str(results)])
        for kind in ("em", "llm"):
            stratify([str(results), "--eval_type", kind, "--dataset", str(dataset)])


def run_report(args: list[str], env: dict) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "smmile.cli", "report", *args], cwd=FRONT, env=env,
                          capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"smmile report failed ({done.returncode}):\n{done.stderr}")
    return elapsed, done.stderr


def page_facts(page: Path) -> dict:
    text = page.read_text(encoding="utf-8")
    facts = {"page_mb": len(text.encode()) / 1e6}
    found = re.search(r'<script type="application/json" id="explorer-data">(.*?)</script>', text, re.S)
    if found:
        from smmile.report.explorer_page import unpacked

        payload = unpacked(json.loads(found.group(1).replace("<\\/", "</")))
        images = payload["images"]
        facts.update(explorer_mb=len(found.group(1).encode()) / 1e6, problems=len(payload["problems"]),
                     results=len(payload["results"]), images=len(images),
                     image_mb=sum(len(i) for i in images) / 1e6,
                     each_image_once=len(set(images)) == len(images) and all(text.count(i) == 1 for i in images[:50]),
                     full_images=sum(1 for name in payload.get("full", []) if name),
                     full_mb=sum((page.parent / name).stat().st_size for name in payload.get("full", []) if name) / 1e6)
    return facts


def report(name: str, elapsed: float, stderr: str, page: Path) -> None:
    print(f"\n== {name}: {elapsed:.1f} s wall")
    for line in stderr.splitlines():
        if line.startswith("smmile report ["):
            print("   " + line)
    print("   " + ", ".join(f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}" for k, v in page_facts(page).items()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="1,2,3", help="which runs (1: published, 2: + explorer, 3: SMMILE++)")
    parser.add_argument("--published", default=str(PUBLISHED), help="the published SMMILE outputs")
    parser.add_argument("--image-size", type=int, default=1024,
                        help="also run 2 with every stand-in image enlarged to this many px (0: skip)")
    args = parser.parse_args(argv)
    runs = {int(x) for x in args.only.split(",")}
    env = {**os.environ, "PYTHONPATH": str(FRONT)}
    print(f"load average before: {os.getloadavg()}; {os.cpu_count()} CPU(s)")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        if runs & {1, 2}:
            published = root / "published"
            shutil.copytree(args.published, published)
            if 1 in runs:
                elapsed, err = run_report([str(published), "--out", str(root / "r1")], env)
                report("1. published SMMILE outputs", elapsed, err, root / "r1" / "index.html")
            if 2 in runs:
                import pandas as pd

                ids = sorted({str(i) for f in published.glob("result_*.csv") for i in pd.read_csv(f)["problem_id"]})
                standin_dataset(ids, root / "standin")
                elapsed, err = run_report([str(published), "--dataset", str(root / "standin"), "--out", str(root / "r2")], env)
                report("2. published SMMILE outputs + explorer (demo-image stand-in dataset)", elapsed, err,
                       root / "r2" / "index.html")
                if args.image_size:
                    standin_dataset(ids, root / "standin-large", args.image_size)
                    elapsed, err = run_report([str(published), "--dataset", str(root / "standin-large"),
                                               "--out", str(root / "r2b")], env)
                    report(f"2b. as 2, every image a {args.image_size} px photo-like JPEG", elapsed, err,
                           root / "r2b" / "index.html")
        if 3 in runs:
            problems = plusplus_dataset(root / "pp-data")
            n_files = plusplus_results(problems, root / "pp-results")
            score_and_stratify(root / "pp-results", root / "pp-data")
            print(f"\nSMMILE++ synthetic: {len(problems)} problems, {n_files} result files (scored and stratified)")
            elapsed, err = run_report([str(root / "pp-results"), "--dataset", str(root / "pp-data"),
                                       "--out", str(root / "r3")], env)
            report("3. synthetic SMMILE++ + explorer", elapsed, err, root / "r3" / "index.html")
    print(f"\nload average after: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
