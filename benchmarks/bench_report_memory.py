"""Memory benchmark: peak RSS of ``smmile report`` at SMMILE++ scale with images.

A stand-in for SMMILE++ is built in a temporary folder: the published SMMILE problem ids
(``../shared/published/smmile``, 111 base problems), questions, answers and flags of the demo generator,
permuted as SMMILE++ is (``<uuid>_perm_<k>``, ``smmile.data.variants.permute``) and cut to 1038 problems;
every image replaced by a photo-like JPEG (``bench_report.enlarged``) whose size is drawn so that the
parquet comes to about ``--dataset-mb`` (632 MB by default: what the published ids and answers with
generated images came to when the issue was measured; the real SMMILE++ stores each permutation's
images again, as this one does). The results folder is ``bench_report``'s SMMILE++ one (32 files on
these problems, scored and stratified). Then the real command runs in a child process, under
``/usr/bin/time -v`` where it exists (else ``getrusage(RUSAGE_CHILDREN)`` of a wrapper process):

    python -m smmile.cli report RESULTS --dataset DATASET --out OUT

The figure is the largest resident set of any one process of the command (the report or one of its
forked workers), as the kernel reports it. Also printed: wall time, parquet and page size, and the
sha256 of the page and of its problem explorer section (equal before and after a change: byte-identical
at this scale).
Exit status 1 when the peak exceeds ``--limit-mb``.

Run:  python benchmarks/bench_report_memory.py [--problems 1038] [--dataset-mb 632] [--limit-mb 1024]
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import math
import os
import random
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
CALIBRATION_SIDE = 512


def _bench_report():
    spec = importlib.util.spec_from_file_location("bench_report", ROOT / "benchmarks" / "bench_report.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def published_ids(published: Path) -> list[str]:
    import pandas as pd

    return sorted({str(i) for f in published.glob("result_*.csv") for i in pd.read_csv(f)["problem_id"]})


def standin_plusplus(ids: list[str], n_problems: int, dataset_mb: float, out: Path) -> list:
    """The SMMILE++ stand-in (see the module docstring) written to ``out``; returns its problems (with the
    demo's small images, enough for the results and their scoring)."""
    from smmile.data.demo import generate_records
    from smmile.data.load import group
    from smmile.data.parquet import problems_to_records
    from smmile.data.variants import permute

    bench = _bench_report()
    records = generate_records(seed=7, n_problems=len(ids))
    renamed = dict(zip(sorted(dict.fromkeys(r["problem_id"] for r in records)), ids))
    problems = permute(group([{**r, "problem_id": renamed[r["problem_id"]]} for r in records]), seed=42)[:n_problems]
    rows = problems_to_records(problems)
    multiplicity: dict[bytes, int] = {}
    for rec in rows:
        if rec["image"] is not None:
            data = rec["image"]["bytes"]
            multiplicity[data] = multiplicity.get(data, 0) + 1
    # sizes: a log-normal spread (sigma 0.6) around a mean that brings the parquet to dataset_mb; the
    # bytes per pixel are calibrated on one image, then every side is corrected by the parquet size it gave (JPEG
    # bytes do not grow in proportion to the pixels: a few rounds, until within 3 %)
    rng = random.Random(11)
    factors = {data: math.exp(rng.gauss(0.0, 0.6)) for data in multiplicity}
    target = dataset_mb * 1e6
    mean = target / sum(factors[d] * n for d, n in multiplicity.items())
    first = next(iter(multiplicity))
    per_px = len(bench.enlarged(first, CALIBRATION_SIDE)) / (CALIBRATION_SIDE ** 2 / aspect(first))
    scale = 1.0
    for _ in range(5):
        photos = {data: bench.enlarged(data, max(64, round(scale * math.sqrt(mean * factors[data] * aspect(data) / per_px))))
                  for data in multiplicity}
        bench.write_parquet([rec if rec["image"] is None else {**rec, "image": {**rec["image"], "bytes": photos[rec["image"]["bytes"]]}}
                             for rec in rows], out)
        total = sum(f.stat().st_size for f in out.rglob("*.parquet"))
        if abs(total / target - 1) < 0.03:
            break
        scale *= (target / total) ** 0.75
    return problems


def aspect(data: bytes) -> float:
    """width / height of an encoded image."""
    import io

    from PIL import Image

    with Image.open(io.BytesIO(data)) as img:
        return img.width / img.height


def measured(command: list[str], env: dict) -> tuple[float, float, str]:
    """(peak RSS in MB of the largest process of ``command`` and its children, wall seconds, stderr)."""
    timed = os.path.exists("/usr/bin/time")
    wrapper = (["/usr/bin/time", "-v"] if timed else
               [sys.executable, "-c", "import resource, subprocess, sys; rc = subprocess.run(sys.argv[1:]).returncode; "
                "sys.stderr.write('\\nMaximum resident set size (kbytes): %d\\n' % "
                "resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); sys.exit(rc)"])
    start = time.perf_counter()
    done = subprocess.run(wrapper + command, cwd=FRONT, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"smmile report failed ({done.returncode}):\n{done.stderr[-4000:]}")
    found = re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr)
    return int(found.group(1)) / 1024, elapsed, done.stderr


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", type=int, default=1038, help="SMMILE++ problems (default 1038)")
    parser.add_argument("--dataset-mb", type=float, default=632.0, help="size the stand-in parquet is made to reach")
    parser.add_argument("--limit-mb", type=float, default=1024.0, help="fail (exit 1) above this peak RSS")
    parser.add_argument("--published", default=str(PUBLISHED), help="the published SMMILE outputs (for the ids)")
    parser.add_argument("--keep", help="also copy the page here (a new folder)")
    args = parser.parse_args(argv)
    env = {**os.environ, "PYTHONPATH": str(FRONT)}
    bench = _bench_report()
    print(f"load average before: {os.getloadavg()}; {os.cpu_count()} CPU(s)")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        start = time.perf_counter()
        problems = standin_plusplus(published_ids(Path(args.published)), args.problems, args.dataset_mb, root / "data")
        bench.plusplus_results(problems, root / "results")
        bench.score_and_stratify(root / "results", root / "data")
        parquet_mb = sum(f.stat().st_size for f in (root / "data").rglob("*.parquet")) / 1e6
        print(f"stand-in SMMILE++: {len(problems)} problems, {sum(len(p.rows) for p in problems)} rows, "
              f"parquet {parquet_mb:.0f} MB; 32 result files ({time.perf_counter() - start:.0f} s to build)")
        peak, elapsed, err = measured([sys.executable, "-m", "smmile.cli", "report", str(root / "results"),
                                       "--dataset", str(root / "data"), "--out", str(root / "out")], env)
        for line in err.splitlines():
            if line.startswith("smmile report ["):
                print("   " + line)
        page = root / "out" / "index.html"
        text = page.read_bytes()
        section = re.search(rb'<section id="problems">.*?</section>', text, re.S).group(0)
        print(f"peak RSS {peak:.0f} MB, wall {elapsed:.1f} s, page {len(text) / 1e6:.1f} MB, sha256 "
              f"{hashlib.sha256(text).hexdigest()}; explorer section {len(section) / 1e6:.1f} MB, sha256 "
              f"{hashlib.sha256(section).hexdigest()}")
        if args.keep:
            Path(args.keep).mkdir(parents=True)
            shutil.copy2(page, Path(args.keep) / "index.html")
    print(f"load average after: {os.getloadavg()}")
    if peak > args.limit_mb:
        print(f"FAIL: peak RSS {peak:.0f} MB > {args.limit_mb:.0f} MB")
        return 1
    print(f"PASS: peak RSS {peak:.0f} MB <= {args.limit_mb:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
