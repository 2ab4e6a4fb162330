"""Front doors of the API / ollama scripts (spec §3.9, §3.10, §3.12, §3.13) and the API flags of `smmile run`."""

from __future__ import annotations

import argparse
import os
from dataclasses import replace

from ..errors import UserError
from ..generation import MAX_NEW_TOKENS, RunSettings
from ..runner.run import RunSpec, run
from . import common as fd


def add_api_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("API / server models")
    g.add_argument("--concurrency", type=concurrency, default=None, metavar="N|auto",
                   help="requests in flight at once (at most 512); auto (the default, ollama: 8) starts at 16, doubles "
                        "each round trip until the first 429/503, then adds one per round trip and backs off on "
                        "429/503, Retry-After and the providers' rate-limit headers")
    add_estimate_and_key_flags(g)
    g.add_argument("--max-retries", type=fd.non_negative_int, default=None,
                   help="retries per request on 429/5xx/timeouts/connection errors (default 5; exponential "
                        "backoff with jitter, Retry-After honoured)")
    g.add_argument("--timeout", type=fd.positive_number, default=None, help="seconds per request (default 120)")
    g.add_argument("--max-cost", type=fd.non_negative_number, default=None,
                   help="budget in USD for this output, reruns included (the journal records what was spent): a "
                        "request is launched only while its estimated cost (input + whole output cap) still fits")
    g.add_argument("--max-consecutive-failures", type=fd.positive_int, default=None, metavar="N",
                   help="stop launching requests after N problems in a row failed on transient errors even after "
                        "all retries (server down); nothing final is written and a rerun resumes (default 8)")
    g.add_argument("--base-url", type=fd.http_url, default=None,
                   help="server URL (OpenAI-compatible: e.g. http://127.0.0.1:8000/v1; ollama: http://host:11434); "
                        "keys come from the environment, never from flags")
    g.add_argument("--api-model", default=None,
                   help="model / deployment name sent to the server (default: the preset's)")
    g.add_argument("--max-image-side", type=fd.positive_int, default=None,
                   help="--protocol corrected only: downscale images whose longer side exceeds this (default: "
                        "1568 for Claude, 2048 for OpenAI); provider size limits are checked before sending")
    g.add_argument("--max-tokens", type=fd.positive_int, default=None,
                   help="override the preset's output-token limit (the ollama scripts used server defaults)")
    add_batch_flags(g)
    g.add_argument("--batch-deployment", default=None, metavar="NAME",
                   help="--batch on Azure OpenAI: the Global Batch or Data Zone Batch deployment of the model (Azure "
                        "runs batches on those only); priced as the model (default: the synchronous deployment)")
    g.add_argument("--deadline", type=duration, default=None, metavar="DURATION",
                   help="--batch with a deadline (e.g. 8h, 90m, 1h30m; implies --batch): when it nears (its last "
                        "tenth), the batches in flight are canceled and their unfinished problems sent synchronously, "
                        "within --max-cost")
    g.add_argument("--prices", default=None, metavar="FILE",
                   help="a price table (JSON: {\"date\": ..., \"models\": {model: [input, output]}}, USD per "
                        "million tokens) over the dated one shipped with smmile (models/api/prices.json)")


def add_estimate_and_key_flags(g, url_flag: str = "--base-url") -> None:
    """--dry-run, --allow-key-for-host and --price (the API front doors, `smmile run`, the judge)."""
    g.add_argument("--dry-run", action="store_true", default=None,
                   help="send nothing, write nothing: print the requests, images, estimated tokens and cost "
                        "(synchronous and batch) of what this command would send")
    g.add_argument("--allow-key-for-host", action="append", default=None, metavar="HOST",
                   help=f"send the provider's API key (from the environment) to {url_flag} on HOST, which is not the "
                        f"provider's official endpoint (repeatable); otherwise such a {url_flag} is refused")
    g.add_argument("--price", type=price, default=None, metavar="IN:OUT",
                   help="USD per million input:output tokens (default: the dated table shipped in "
                        "smmile/models/api/prices.json, or --prices FILE)")


def add_batch_flags(g) -> None:
    """--batch and --poll-interval (the API front doors, `smmile run`, the judge)."""
    g.add_argument("--batch", action="store_true", default=None,
                   help="OpenAI, Azure OpenAI, Anthropic: send the requests through the provider's batch API (half "
                        "price, results within 24 h); batches in flight are recorded beside the journal, and a rerun "
                        "after a crash or Ctrl-C picks them up instead of submitting again")
    g.add_argument("--poll-interval", type=poll_interval, default=None, metavar="SECONDS",
                   help="--batch only: seconds between status checks of batches in flight (default 60, "
                        f"{POLL_BOUNDS[0]:g} to {POLL_BOUNDS[1]:g})")


def price(text: str) -> str:
    """argparse type of --price: `IN:OUT` (or one price for both), USD per million tokens, kept as written."""
    parts = text.split(":")
    try:
        if len(parts) > 2:
            raise argparse.ArgumentTypeError()
        for part in parts:
            fd.non_negative_number(part)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"{text!r} is not IN:OUT, two prices in USD per million input and output "
                                         "tokens, such as 2.5:10") from None
    return text


MAX_CONCURRENCY = 512  # requests in flight at once: beyond any provider tier's limit
POLL_BOUNDS = (0.01, 3600.0)  # seconds between batch status checks


def concurrency(text: str) -> int | str:
    if text == "auto":
        return text
    value = fd.positive_int(text)
    if value > MAX_CONCURRENCY:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_CONCURRENCY}, not {value}")
    return value


def duration(text: str) -> float:
    """argparse type of --deadline: seconds, or a duration such as 8h, 90m, 1h30m, 45s."""
    from ..models.api.limiter import parse_reset

    try:
        value = parse_reset(text) if text.strip() else None
    except ValueError:
        value = None
    if not value or value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration such as 8h, 90m, 1h30m or 3600 (seconds)")
    return value


def poll_interval(text: str) -> float:
    value = fd.positive_number(text)
    if not POLL_BOUNDS[0] <= value <= POLL_BOUNDS[1]:
        raise argparse.ArgumentTypeError(f"must be between {POLL_BOUNDS[0]:g} and {POLL_BOUNDS[1]:g} seconds, not {text}")
    return value


def run_settings(args: argparse.Namespace) -> RunSettings:
    """The settings flags that were given (each read by its field's name). A --base-url carrying credentials is
    refused here, before anything (manifest, report, journal) could write it; --deadline implies --batch."""
    from ..models.api.secrets import url_has_credentials

    settings = RunSettings.from_flags(args)
    if settings.base_url and url_has_credentials(settings.base_url):
        raise UserError("--base-url must not carry credentials (user:password@ or ?query); API keys come from the "
                        "environment only")
    batch = settings.batch or settings.deadline is not None
    if settings.poll_interval is not None and not batch:
        raise UserError("--poll-interval is for --batch runs only (it sets how often their batches are checked)")
    return replace(settings, batch=True) if batch else settings


def openai_provider() -> str:
    """`--provider auto` of inference_openai.py, and `smmile run --model gpt-4o`: Azure when AZURE_OPENAI_API_KEY
    is set, else OpenAI when OPENAI_API_KEY is set (else Azure, whose error names both)."""
    return "openai" if not os.environ.get("AZURE_OPENAI_API_KEY") and os.environ.get("OPENAI_API_KEY") else "azure"


def dry_run(spec: RunSpec) -> int:
    """--dry-run: plan the run with the runner's own planning (`Runner.prepare`), and print what the requests it
    would send cost; send nothing, write nothing."""
    from ..models import registry
    from ..models.api.backend import ApiBackend
    from ..runner.run import Runner

    runner = Runner(spec)
    if not issubclass(registry.backend_class(runner.backend_path), ApiBackend):
        raise UserError("--dry-run estimates API requests only; this backend runs a local model")
    _, items, _, executor = runner.prepare()
    backend = runner.build_backend()
    print(format_estimate(backend.estimate([executor.work[k].request for k in executor.pending]),
                          planned=len(items), unit="problems"))
    return 0


def format_estimate(est: dict, planned: int, unit: str) -> str:
    def usd(v):
        return "unknown (no price for this model: --price IN:OUT)" if v is None else f"${v:,.4f}"

    sizes = ", ".join(f"{k} x{n}" for k, n in list(est["image_sizes"].items())[:6])
    more = len(est["image_sizes"]) - 6
    price, capped = est["price"], None not in est["max_tokens"]
    lines = [
        f"dry run: nothing sent. {est['model']} ({est['provider']}) at {est['endpoint']}",
        f"  requests: {est['requests']} ({planned} {unit} planned, "
        f"{planned - est['requests'] - est['not_sent_too_large']} already journaled"
        + (f", {est['not_sent_too_large']} too large to send" if est["not_sent_too_large"] else "") + ")",
        f"  images: {est['images']}, {est['image_b64_bytes'] / 1e6:.1f} MB as base64; sizes as sent: {sizes or '-'}"
        + (f" and {more} more" if more > 0 else ""),
        f"  estimated input tokens: {est['input_tokens']:,} (text {est['text_tokens']:,} at ~4 characters a token; "
        f"images {est['image_tokens']:,}: {est['image_rule']})",
        f"  output tokens: at most {est['output_tokens_cap']:,} (max_tokens {', '.join(map(str, est['max_tokens']))} "
        "per request)" if capped else
        "  output tokens: not capped (no max_tokens sent: the server decides), counted as 0 in the cost",
        f"  estimated cost, {'at most' if capped else 'input only'}: "
        f"{usd(est['cost_sync_usd'])} synchronous, {usd(est['cost_batch_usd'])} batch"
        + (f" (USD {price[0]:g} / {price[1]:g} per million input / output tokens, prices of "
           f"{est.get('prices_date') or 'the --price flag'} or --price)" if price else ""),
    ]
    return "\n".join(lines)


def _parser(description: str, *, fmt_default: str, fmt_choices=("open", "mcqa")):
    p = fd.parser(description)
    p.add_argument("--inference_mode", choices=["0-shot", "ICL"], default="ICL", help=fd.MODE_HELP)
    if fmt_choices:
        p.add_argument("--task_format", choices=list(fmt_choices), default=fmt_default, help=fd.FORMAT_HELP)
    fd.add_dataset_flag(p)
    p.add_argument("--image-dir", default=fd.MISSING_IMAGES, help="folder of manually downloaded images "
                   "(unused by the original; used under --protocol corrected)")
    return p


def _go(p, argv, preset: str, *, open_suffix=True, summary=None, backend=None):
    def go() -> int:
        a = p.parse_args(argv)
        path = getattr(a, "hf_cache_dir", None)
        if path:  # as the original scripts: exported before the dataset is loaded
            os.environ.update(HF_HOME=path, TRANSFORMERS_CACHE=f"{path}/transformers",
                              HF_DATASETS_CACHE=f"{path}/datasets")
        spec = fd.run_spec(a, preset, getattr(a, "task_format", "open"), a.dataset, open_suffix=open_suffix,
                           backend=backend(a) if callable(backend) else backend, settings=run_settings(a),
                           summary=summary)
        return dry_run(spec) if a.dry_run else run(spec).exit_code

    return fd.guarded(go, interrupted=fd.INTERRUPTED_RUN)


def _fixed_output(p) -> None:
    p.add_argument("--hf_cache_dir", default=None, help="exports HF_HOME, TRANSFORMERS_CACHE, HF_DATASETS_CACHE")
    fd.add_run_flags(p, model=False)  # an API model has no weights to load or batch
    p.add_argument("--output-dir", default="../results", help="smmile addition: the original wrote to ../results "
                   "(../results_augmented with --dataset augmented)")
    add_api_flags(p)


def openai_main(argv: list[str] | None = None) -> int:
    p = _parser("GPT-4o on SMMILE via Azure OpenAI (AZURE_OPENAI_API_KEY, AZURE_OPENAI_ENDPOINT, "
                "AZURE_OPENAI_API_VERSION) or, with --provider openai or only OPENAI_API_KEY set, OpenAI.",
                fmt_default="open")
    p.add_argument("--model", required=True, choices=["gpt-4o"], help="the only model the original ran")
    p.add_argument("--provider", choices=["auto", "azure", "openai"], default="auto",
                   help="auto: Azure when AZURE_OPENAI_API_KEY is set, else OpenAI when OPENAI_API_KEY is set")
    _fixed_output(p)

    def backend(a) -> str:
        return openai_provider() if a.provider == "auto" else a.provider

    return _go(p, argv, "gpt-4o", backend=backend)


def anthropic_main(argv: list[str] | None = None) -> int:
    p = _parser("Claude 3.7 Sonnet on SMMILE via the Anthropic Messages API (ANTHROPIC_API_KEY).", fmt_default="open")
    _fixed_output(p)
    return _go(p, argv, "claude-3-7-sonnet")


def _textonly_parser(description: str, fmt_choices, fmt_default: str):
    p = _parser(description, fmt_default=fmt_default, fmt_choices=fmt_choices)
    p.add_argument("--output-dir", default="../results", help="with --dataset augmented: <output-dir>_augmented")
    fd.add_run_flags(p, model=False)
    add_api_flags(p)
    return p


def textonly_main(argv: list[str] | None = None) -> int:
    p = _textonly_parser("Llama 3.3 text-only baseline via ollama (model llama3.3; OLLAMA_HOST or --base-url): "
                         "the questions without their images, open format.", None, "open")
    return _go(p, argv, "llama33textonly", open_suffix=False)


def textonly_mcqa_main(argv: list[str] | None = None) -> int:
    p = _textonly_parser("Llama 3.3 text-only baseline via ollama, open or MCQA (with the follow-up turn when no "
                         "letter can be extracted).", ("open", "mcqa"), "mcqa")
    p.add_argument("--max_new_tokens", dest="unused_max_new_tokens", metavar="MAX_NEW_TOKENS", type=int,
                   default=MAX_NEW_TOKENS, help="accepted and unused, as in the original")
    return _go(p, argv, "llama33textonly_mcqa", summary=("llama33textonly", "llama33textonly"))
