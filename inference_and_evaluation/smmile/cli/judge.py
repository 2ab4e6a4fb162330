"""``evaluate_LLMJudge.py`` / ``smmile judge``: LLM-as-a-judge scoring (the work is ``smmile.scoring.judge_run``)."""

from __future__ import annotations

import argparse

from ..errors import UserError
from ..scoring.judge import DEFAULT_JUDGE_MODEL, JudgeSettings, parse_judge
from ..scoring.judge_run import judge_backends, run_judge
from . import common as fd
from .api_models import add_batch_flags, add_estimate_and_key_flags, concurrency, format_estimate

INTERRUPTED = ("interrupted: replies received so far are kept in the judge's journal under the results folder's "
               ".smmile/judge/ and no file was left half-written; rerun the same command to continue")


def build_parser() -> argparse.ArgumentParser:
    p = fd.parser("LLM-as-a-judge evaluation of SMMILE open-format results (spec §5): one request per row to a "
                  "judge model, reply exactly 1 (correct) or 0; writes <stem>_evaluationllm.json and "
                  "model_comparison_llm.txt")
    p.add_argument("results_dir", nargs="?", default="../results", help="directory with result_*.csv files")
    p.add_argument("--model", default=None, help="file-name model token, e.g. qwen72B")
    p.add_argument("--inference-mode", default=None, help="0-shot or ICL: only files of this mode")
    p.add_argument("--visualize-only", action="store_true",
                   help="no judging: report the existing *_evaluationllm.json files")
    g = p.add_argument_group("judge (smmile additions)")
    g.add_argument("--judge-backend", choices=judge_backends(), default="ollama",
                   help="ollama (the original); openai (OpenAI's endpoint, OPENAI_API_KEY); openai-compatible (any "
                        "server at --judge-base-url: vLLM, llama.cpp, ollama /v1; key OPENAI_COMPATIBLE_API_KEY, "
                        "optional); azure (AZURE_OPENAI_API_KEY, AZURE_OPENAI_ENDPOINT; --judge-model = deployment); "
                        "anthropic (ANTHROPIC_API_KEY). openai with a --judge-base-url that is not api.openai.com is "
                        "treated as openai-compatible, unless --allow-key-for-host (or OPENAI_BASE_URL) lets "
                        "OPENAI_API_KEY go to its host")
    g.add_argument("--judge-base-url", type=fd.http_url, default=None,
                   help="server URL (ollama: default $OLLAMA_HOST or http://127.0.0.1:11434; openai-compatible: "
                        "e.g. http://127.0.0.1:8000/v1)")
    g.add_argument("--judge-model", default=DEFAULT_JUDGE_MODEL, help="judge model name on that server")
    g.add_argument("--protocol", choices=("paper", "corrected"), default="paper",
                   help="paper: no sampling options sent, the server's own (as published); corrected: temperature 0 "
                        "and --judge-seed")
    g.add_argument("--judge-seed", type=int, default=0, help="seed sent under --protocol corrected (default: 0)")
    g.add_argument("--judge-max-tokens", type=fd.positive_int, default=None,
                   help="cap on reply tokens (unset: the server decides)")
    g.add_argument("--judge-concurrency", type=concurrency, default=None, metavar="N|auto",
                   help="judge requests in flight at once; auto (the default, ollama: 8) adapts as inference's "
                        "--concurrency auto does (climbs while requests succeed, backs off on 429/503 and "
                        "rate-limit headers)")
    g.add_argument("--judge-retries", type=fd.non_negative_int, default=3,
                   help="retries per request on 429/5xx/timeouts/connection errors (exponential backoff with jitter, "
                        "Retry-After honoured)")
    g.add_argument("--judge-timeout", type=float, default=120.0, help="seconds per request")
    g.add_argument("--judge-max-consecutive-failures", type=fd.positive_int, default=8, metavar="N",
                   help="stop sending after N requests in a row failed even after all retries (judge unreachable)")
    g.add_argument("--jury", nargs="+", metavar="JUDGE", default=None,
                   help="several judges, each BACKEND:MODEL[@BASE_URL] (e.g. ollama:llama3.3 "
                        "openai-compatible:qwen2.5-72b@http://127.0.0.1:8000/v1 anthropic:claude-sonnet-4-5): each is "
                        "journaled as a judge of its own; a row's verdict is the strict majority of the parseable "
                        "verdicts, a tie or no parseable verdict is judged 0 and counted (llm_err_count). The other "
                        "--judge-* settings apply to every judge. Put RESULTS_DIR before --jury")
    add_estimate_and_key_flags(g, "--judge-base-url")
    add_batch_flags(g)
    g.add_argument("--no-cache", action="store_true",
                   help="do not read or write the judge's journal, <results_dir>/.smmile/judge/"
                        "<backend>-<model>-<digest>.journal.jsonl (every row is sent)")
    g.add_argument("--overwrite", action="store_true",
                   help="replace *_evaluationllm.json files written by another judge (or by an unrecorded one, such "
                        "as the published outputs), or holding problems the result file no longer has")
    return p


def settings_from(args: argparse.Namespace) -> JudgeSettings:
    return JudgeSettings(
        backend=args.judge_backend, model=args.judge_model, base_url=args.judge_base_url, protocol=args.protocol,
        seed=args.judge_seed, max_tokens=args.judge_max_tokens, concurrency=args.judge_concurrency,
        retries=args.judge_retries, timeout=args.judge_timeout,
        max_consecutive_failures=args.judge_max_consecutive_failures, batch=bool(args.batch),
        poll_interval=args.poll_interval, price=args.price, allow_key_for_host=tuple(args.allow_key_for_host or ()))


def panel_from(args: argparse.Namespace, settings: JudgeSettings) -> list[JudgeSettings] | None:
    """The jury of ``--jury`` (None without it); a spec that cannot be read is one line, exit 2."""
    if args.jury is None:
        return None
    given = [flag for flag, value, default in (("--judge-backend", args.judge_backend, "ollama"),
                                               ("--judge-model", args.judge_model, DEFAULT_JUDGE_MODEL),
                                               ("--judge-base-url", args.judge_base_url, None)) if value != default]
    if given:
        raise UserError(f"--jury names each judge's backend, model and URL; drop {', '.join(given)}")
    return [parse_judge(spec, settings, judge_backends()) for spec in args.jury]


def print_estimates(estimates: list) -> None:
    """--dry-run: inference's report (``format_estimate``) per judge, and a jury's total."""
    for _member, est, planned in estimates:
        print(format_estimate(est, planned=planned, unit="judge requests"))
    if len(estimates) > 1:
        def total(key):
            values = [est[key] for _m, est, _p in estimates]
            return None if None in values else sum(values)

        usd = {k: "unknown" if total(k) is None else f"${total(k):,.4f}" for k in ("cost_sync_usd", "cost_batch_usd")}
        print(f"jury of {len(estimates)}: {total('requests')} requests, {total('input_tokens'):,} estimated input "
              f"tokens, {usd['cost_sync_usd']} synchronous, {usd['cost_batch_usd']} batch")


def _run(a: argparse.Namespace) -> int:
    settings = settings_from(a)
    panel = panel_from(a, settings)
    if panel is not None and len(panel) == 1:  # a jury of one is that judge alone
        settings, panel = panel[0], None
    if a.dry_run and a.visualize_only:
        raise UserError("--dry-run estimates what judging would send; --visualize-only sends nothing")
    estimates = [] if a.dry_run else None
    code = run_judge(a.results_dir, settings, model=a.model, mode=a.inference_mode, visualize_only=a.visualize_only,
                     cache=not a.no_cache, overwrite=a.overwrite, panel=panel, estimates=estimates)
    if estimates:
        print_estimates(estimates)
    return code


def main(argv: list[str] | None = None) -> int:
    return fd.guarded(lambda: fd.parsed_main(build_parser(), argv, _run), interrupted=INTERRUPTED)
