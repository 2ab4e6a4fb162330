"""API backend benchmark: concurrency speed-up, transient and permanent failures, secret scan.

Runs `inference_openai.py --model gpt-4o` (Azure path, the official `openai` SDK) in-process against the
local fake server of the tests (tests/api_server.py, 127.0.0.1 only, in a forked process) on a generated 111-problem dataset
in the SMMILE schema, and prints:

1. wall time of the whole run with 200 ms server latency per request, --concurrency 1 vs 16, and the ratio;
2. a run where 20% of requests fail transiently (429 with Retry-After / 500): problems answered, duplicates;
3. a run where one problem fails permanently: exit status, the problem named, then the rerun's request count;
4. a scan of every file the runs wrote (CSVs, manifests, journals) and of the console for the API key.

Run:  python benchmarks/bench_api.py [--problems 111] [--latency 0.2]
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "inference_and_evaluation")]

from api_server import ForkedFakeApi as FakeApi, permanent_failure, transient_failures  # noqa: E402
from smmile.cli import api_models  # noqa: E402
from smmile.data.demo import generate_records  # noqa: E402
from smmile.data.parquet import write_dataset  # noqa: E402

SENTINEL = "sk-BENCH-SENTINEL-0c9d8e7f6a5b"
STEM = "result_gpt-4o_ICL_open"


def gpt4o(api: FakeApi, data: Path, out: Path, *extra: str) -> tuple[int, float, str]:
    os.environ["AZURE_OPENAI_ENDPOINT"] = api.url
    console = io.StringIO()
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(console), contextlib.redirect_stderr(console):
        rc = api_models.openai_main(["--model", "gpt-4o", "--dataset", str(data), "--output-dir", str(out), *extra])
    return rc, time.perf_counter() - t0, console.getvalue()


def rows(out: Path) -> list[dict]:
    with open(out / f"{STEM}.csv", newline="") as fh:
        return list(csv.DictReader(fh))


def speed(data: Path, tmp: Path, latency: float, n: int) -> str:
    with FakeApi() as api:  # warm-up: imports and first connection, not measured
        gpt4o(api, data, tmp / "warm", "--shard", f"1/{n}")
    times = {}
    for c in (1, 16):
        with FakeApi(latency=latency) as api:
            rc, times[c], _ = gpt4o(api, data, tmp / f"c{c}", "--concurrency", str(c))
            assert rc == 0 and len(api.requests()) == n and api.max_in_flight == c
    assert [r["problem_id"] for r in rows(tmp / "c1")] == [r["problem_id"] for r in rows(tmp / "c16")]
    ratio = times[1] / times[16]
    return (f"1. {n} problems, {latency * 1000:.0f} ms per request: --concurrency 1 {times[1]:.2f} s, "
            f"--concurrency 16 {times[16]:.2f} s, speed-up {ratio:.1f}x ({'PASS' if ratio >= 10 else 'FAIL'} >= 10x)")


def transient(data: Path, tmp: Path, n: int) -> str:
    with FakeApi(latency=0.02, script=transient_failures(rate=0.2)) as api:
        rc, secs, _ = gpt4o(api, data, tmp / "transient", "--concurrency", "16")
        actions = [r["action"] for r in api.requests()]
    got = rows(tmp / "transient")
    ids = [r["problem_id"] for r in got]
    errors = sum(r["generated_answer"].startswith("ERROR") for r in got)
    failed = actions.count(429) + actions.count(500)
    ok = rc == 0 and len(ids) == n and len(set(ids)) == n and errors == 0
    return (f"2. transient failures: {failed}/{len(actions)} requests failed ({actions.count(429)} x 429 + "
            f"{actions.count(500)} x 500); exit {rc}; {len(ids)} rows, {len(set(ids))} distinct problems, "
            f"{errors} error rows, {len(ids) - len(set(ids))} duplicates in {secs:.2f} s ({'PASS' if ok else 'FAIL'})")


def permanent(data: Path, tmp: Path) -> str:
    script = permanent_failure(500)
    with FakeApi(script=script) as api:
        rc, _, console = gpt4o(api, data, tmp / "permanent", "--concurrency", "16", "--max-retries", "2")
        doomed = {r["key"] for r in api.requests() if r.get("doomed")}
    failed = [r["problem_id"] for r in rows(tmp / "permanent") if r["generated_answer"].startswith("ERROR")]
    named = len(failed) == 1 and failed[0] in console
    with FakeApi() as api:
        rc2, _, _ = gpt4o(api, data, tmp / "permanent", "--concurrency", "16")
        again = api.requests()
    only = len(again) == 1 and len(doomed) == 1 and again[0]["key"] in doomed
    ok = rc != 0 and named and rc2 == 0 and only
    return (f"3. permanent failure: exit {rc}, failing problem named on the console: {named} ({failed[0][:8]}...); "
            f"rerun sent {len(again)} request(s), only for that problem: {only}; rerun exit {rc2} "
            f"({'PASS' if ok else 'FAIL'})")


def scan(tmp: Path, consoles: str) -> str:
    files = [p for p in tmp.rglob("*") if p.is_file() and "data" not in p.relative_to(tmp).parts[:1]]
    hits = [p for p in files if SENTINEL in p.read_text(errors="replace")]
    ok = not hits and SENTINEL not in consoles
    return (f"4. sentinel API key: found in {len(hits)} of {len(files)} files written (CSVs, manifests, journals) "
            f"and {int(SENTINEL in consoles)} console outputs ({'PASS' if ok else 'FAIL'})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problems", type=int, default=111)
    ap.add_argument("--latency", type=float, default=0.2)
    a = ap.parse_args()
    os.environ["AZURE_OPENAI_API_KEY"] = SENTINEL
    for var in ("OPENAI_API_KEY", "AZURE_OPENAI_API_VERSION"):
        os.environ.pop(var, None)
    with tempfile.TemporaryDirectory(prefix="bench_api.") as d:
        tmp = Path(d)
        data = write_dataset(generate_records(seed=7, n_problems=a.problems), tmp / "data")
        console = io.StringIO()
        with contextlib.redirect_stderr(console):
            lines = [speed(data, tmp, a.latency, a.problems), transient(data, tmp, a.problems), permanent(data, tmp)]
        lines.append(scan(tmp, console.getvalue()))
    print("\n".join(lines))
    return 0 if all(line.endswith("(PASS)") or "PASS" in line.rsplit("(", 1)[-1] for line in lines) else 1


if __name__ == "__main__":
    sys.exit(main())
