"""Adaptive concurrency against a rate-limited endpoint (issue #21 item 4; issue 32 finding 10).

A fake OpenAI-compatible server (tests/api_server.py, 127.0.0.1 only, in a forked process) serves at most LIMIT
requests in flight, LATENCY seconds each, and answers one more at once with 429 and `Retry-After: 1`. The benchmark
sends REQUESTS requests through the OpenAI-compatible backend with `--concurrency auto` (the default), once per
limit, and prints the wall time against the ideal REQUESTS / LIMIT x LATENCY, and the share of requests answered
429. Pass: at most 1.5 x ideal and at most 10 % answered 429, at every limit.

Run:  python benchmarks/bench_api_concurrency.py [--requests 111] [--limits 2 4 16 32] [--latency 5]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "inference_and_evaluation")]

from api_server import ForkedFakeApi  # noqa: E402
from smmile.generation import GenerationSettings, RunSettings  # noqa: E402
from smmile.models.api.openai_backend import OpenAICompatibleBackend  # noqa: E402
from smmile.models.api.request import ChatRequest  # noqa: E402


def run(n: int, limit: int, latency: float, concurrency: str) -> dict:
    with ForkedFakeApi(latency=latency, limit=limit, limit_retry_after="1") as api:
        backend = OpenAICompatibleBackend(settings=RunSettings(base_url=api.url + "/v1", api_model="fake",
                                                               concurrency=concurrency, max_retries=10),
                                          generation=GenerationSettings())
        work = [(i, ChatRequest([{"role": "user", "content": f"question {i}"}], max_tokens=8)) for i in range(n)]
        answered: list = []
        t0 = time.monotonic()
        backend.generate(work, lambda item, response: answered.append(response))
        seconds = time.monotonic() - t0
        actions = [r["action"] for r in api.requests()]
    ok = sum(r.error is None for r in answered)
    return {"seconds": seconds, "ideal": n / limit * latency, "requests": len(actions),
            "throttled": actions.count(429), "answered": ok, "last_level": int(backend.limiter.level)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--requests", type=int, default=111)
    p.add_argument("--limits", type=int, nargs="+", default=[2, 4, 16, 32])
    p.add_argument("--latency", type=float, default=5.0)
    p.add_argument("--concurrency", default="auto")
    a = p.parse_args()
    run(8, 4, 0.01, a.concurrency)  # warm-up: imports, the SDK's first connection
    failed = 0
    for limit in a.limits:
        r = run(a.requests, limit, a.latency, a.concurrency)
        share = r["throttled"] / a.requests
        ok = r["seconds"] <= 1.5 * r["ideal"] and share <= 0.10 and r["answered"] == a.requests
        failed += not ok
        print(f"{a.requests} requests, server limit {limit} in flight at {a.latency:g} s, --concurrency "
              f"{a.concurrency}: {r['seconds']:.2f} s (ideal {r['ideal']:.2f} s, ratio {r['seconds'] / r['ideal']:.2f}); "
              f"{r['throttled']} answered 429 ({100 * share:.1f} % of {a.requests}); {r['answered']} answered; "
              f"final level {r['last_level']} -> {'PASS' if ok else 'FAIL'}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
