"""Front doors of the API / ollama scripts (spec §3.9, §3.10, §3.12, §3.13) and the API flags of `smmile run`."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from ..runner.run import RunSpec, parse_shard, run
from . import common as fd

API_FLAGS = ("concurrency", "max_retries", "timeout", "max_cost", "price", "base_url", "api_model",
             "max_image_side", "max_tokens", "max_consecutive_failures", "batch", "poll_interval")


def add_api_flags(p: argparse.ArgumentParser) -> None:
    """Transport and accounting flags shared by the API front doors and `smmile run`."""
    g = p.add_argument_group("API / server models")
    g.add_argument("--concurrency", type=fd.positive_int, default=None,
                   help="requests in flight at once (default 8)")
    g.add_argument("--max-retries", type=fd.non_negative_int, default=None,
                   help="retries per request on 429/5xx/timeouts/connection errors (default 5; exponential "
                        "backoff with jitter, Retry-After honoured)")
    g.add_argument("--timeout", type=fd.positive_number, default=None, help="seconds per request (default 120)")
    g.add_argument("--max-cost", type=fd.non_negative_number, default=None,
                   help="stop launching new requests once the estimated cost (USD) reaches this")
    g.add_argument("--max-consecutive-failures", type=fd.positive_int, default=None, metavar="N",
                   help="stop launching requests after N problems in a row failed on transient errors even after "
                        "all retries (server down); nothing final is written and a rerun resumes (default 8)")
    g.add_argument("--price", type=price, default=None, metavar="IN:OUT",
                   help="USD per million input:output tokens (default: the table in smmile/models/api/accounting.py)")
    g.add_argument("--base-url", default=None,
                   help="server URL (OpenAI-compatible: e.g. http://127.0.0.1:8000/v1; ollama: http://host:11434); "
                        "keys come from the environment, never from flags")
    g.add_argument("--api-model", default=None, help="model / deployment name sent to the server (default: the preset's)")
    g.add_argument("--max-image-side", type=fd.positive_int, default=None,
                   help="--protocol corrected only: downscale images whose longer side exceeds this (default: "
                        "1568 for Claude, 2048 for OpenAI); provider size limits are checked before sending")
    g.add_argument("--max-tokens", type=fd.positive_int, default=None,
                   help="override the preset's output-token limit (the ollama scripts used server defaults)")
    add_batch_flags(g)


def add_batch_flags(g) -> None:
    """--batch and --poll-interval (the API front doors, `smmile run`, the judge)."""
    g.add_argument("--batch", action="store_true", default=None,
                   help="OpenAI, Azure OpenAI, Anthropic: send the requests through the provider's batch API (half "
                        "price, results within 24 h); batches in flight are recorded beside the journal, and a rerun "
                        "after a crash or Ctrl-C picks them up instead of submitting again")
    g.add_argument("--poll-interval", type=fd.positive_number, default=None, metavar="SECONDS",
                   help="--batch: seconds between status checks of batches in flight (default 60)")


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


def api_settings(args: argparse.Namespace) -> dict:
    """The API flags that were given, as RunSpec.settings."""
    if getattr(args, "batch", None):
        from ..models.api.batch import show_progress

        show_progress()
    return {k: getattr(args, k) for k in API_FLAGS if getattr(args, k, None) is not None}


def _hf_cache(path: str | None) -> None:
    if path:  # as the original scripts: exported before the dataset is loaded
        os.environ.update(HF_HOME=path, TRANSFORMERS_CACHE=f"{path}/transformers", HF_DATASETS_CACHE=f"{path}/datasets")


def _parser(description: str, *, fmt_default: str, fmt_choices=("open", "mcqa"), output_dir_flag: str = "smmile"):
    p = fd.parser(description)
    p.add_argument("--inference_mode", choices=["0-shot", "ICL"], default="ICL", help=fd.MODE_HELP)
    if fmt_choices:
        p.add_argument("--task_format", choices=list(fmt_choices), default=fmt_default, help=fd.FORMAT_HELP)
    fd.add_dataset_flag(p)
    p.add_argument("--image-dir", default="../missing_images", help="folder of manually downloaded images "
                   "(unused by the original; used under --protocol corrected)")
    return p


def _go(p, argv, preset: str, *, open_suffix=True, summary=None, backend=None, pre=None):
    def go() -> int:
        a = p.parse_args(argv)
        _hf_cache(getattr(a, "hf_cache_dir", None))
        dataset, augmented, out = fd.dataset_and_output(a.dataset, a.output_dir)
        spec = RunSpec(model=preset, mode=a.inference_mode, fmt=getattr(a, "task_format", "open"), dataset=dataset,
                       revision=a.revision, augmented=augmented, output_dir=out, protocol=a.protocol,
                       open_suffix=open_suffix, image_dir=Path(a.image_dir), shard=parse_shard(a.shard),
                       backend=backend(a) if callable(backend) else backend, settings=api_settings(a), summary=summary)
        return run(spec).exit_code

    return fd.guarded(go, interrupted=fd.INTERRUPTED_RUN)


def _fixed_output(p) -> None:
    p.add_argument("--hf_cache_dir", default=None, help="exports HF_HOME, TRANSFORMERS_CACHE, HF_DATASETS_CACHE")
    fd.add_run_flags(p)
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
        provider = a.provider
        if provider == "auto":
            provider = "openai" if not os.environ.get("AZURE_OPENAI_API_KEY") and os.environ.get("OPENAI_API_KEY") else "azure"
        from ..models.presets_api import BACKENDS

        return BACKENDS[provider]

    return _go(p, argv, "gpt-4o", backend=backend)


def anthropic_main(argv: list[str] | None = None) -> int:
    p = _parser("Claude 3.7 Sonnet on SMMILE via the Anthropic Messages API (ANTHROPIC_API_KEY).", fmt_default="open")
    _fixed_output(p)
    return _go(p, argv, "claude-3-7-sonnet")


def _textonly_parser(description: str, fmt_choices, fmt_default: str):
    p = _parser(description, fmt_default=fmt_default, fmt_choices=fmt_choices)
    p.add_argument("--output-dir", default="../results", help="with --dataset augmented: <output-dir>_augmented")
    fd.add_run_flags(p)
    add_api_flags(p)
    return p


def textonly_main(argv: list[str] | None = None) -> int:
    p = _textonly_parser("Llama 3.3 text-only baseline via ollama (model llama3.3; OLLAMA_HOST or --base-url): "
                         "the questions without their images, open format.", None, "open")
    return _go(p, argv, "llama33textonly", open_suffix=False)


def textonly_mcqa_main(argv: list[str] | None = None) -> int:
    p = _textonly_parser("Llama 3.3 text-only baseline via ollama, open or MCQA (with the follow-up turn when no "
                         "letter can be extracted).", ("open", "mcqa"), "mcqa")
    p.add_argument("--max_new_tokens", type=int, default=512, help="accepted and unused, as in the original")
    return _go(p, argv, "llama33textonly_mcqa", summary=("llama33textonly", "llama33textonly"))
