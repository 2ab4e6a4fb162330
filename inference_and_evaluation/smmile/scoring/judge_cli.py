"""``evaluate_LLMJudge.py`` / ``smmile judge``: LLM-as-a-judge scoring (spec §5).

Faithful default: ollama, model ``llama3.3``, the verbatim prompt, strict ``1``/``0`` parsing,
``<stem>_evaluationllm.json`` and ``model_comparison_llm.txt``. Additions: openai-compatible
backend, ``--protocol corrected`` (temperature 0 + seed), bounded concurrency, retries, a
persistent reply cache, and ``<stem>_judgements.jsonl`` with every raw reply.
"""

from __future__ import annotations

import argparse
import json
import os
import threading

from smmile.scoring import comparison
from smmile.scoring.exact_match import (REQUIRED_COLUMNS, ResultFileError, exclude_problems, read_result_csv,
                                        write_json)
from smmile.scoring.judge import DEFAULT_JUDGE_MODEL, FAILED, UNPARSEABLE, JudgeSettings, judge_frame, judge_stats
from smmile.scoring.judge_cache import JudgeCache
from smmile.scoring.naming import (evaluationllm_json_path, get_model_info, judge_patterns, judgements_path,
                                   question_column)
from smmile.scoring.runs import Outcome, check_results_dir, find_files, run_main

TITLE, LABEL = "LLM AS A JUDGE", "LLM as a Judge"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description="LLM-as-a-judge evaluation of SMMILE open-format results")
    p.add_argument("results_dir", nargs="?", default="../results", help="directory with result_*.csv files")
    p.add_argument("--model", default=None, help="file-name model token, e.g. qwen72B")
    p.add_argument("--inference-mode", dest="inference_mode", default=None, help="0-shot or ICL")
    p.add_argument("--visualize-only", dest="visualize_only", action="store_true",
                   help="no judging: report the existing *_evaluationllm.json files")
    p.add_argument("--judge-backend", choices=("ollama", "openai"), default="ollama",
                   help="ollama (the original) or any OpenAI-compatible server (vLLM, llama.cpp, ollama /v1, OpenAI)")
    p.add_argument("--judge-base-url", default=None,
                   help="server URL (ollama: default $OLLAMA_HOST; openai: e.g. http://127.0.0.1:8000/v1)")
    p.add_argument("--judge-model", default=DEFAULT_JUDGE_MODEL, help="judge model name on that server")
    p.add_argument("--protocol", choices=("paper", "corrected"), default="paper",
                   help="paper: server-default sampling (as published); corrected: temperature 0 + fixed seed")
    p.add_argument("--judge-seed", type=int, default=0, help="seed for --protocol corrected")
    p.add_argument("--judge-max-tokens", type=int, default=None, help="cap on reply tokens (default: unset)")
    p.add_argument("--judge-concurrency", type=_positive, default=4, help="requests in flight (default 4)")
    p.add_argument("--judge-retries", type=int, default=3, help="retries of transient errors (default 3)")
    p.add_argument("--judge-timeout", type=float, default=120.0, help="seconds per request")
    p.add_argument("--no-cache", dest="no_cache", action="store_true",
                   help="do not read or write <results_dir>/.smmile/judge_cache.jsonl")
    return p


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be >= 1")
    return value


def settings_from_args(args) -> JudgeSettings:
    return JudgeSettings(backend=args.judge_backend, model=args.judge_model, base_url=args.judge_base_url,
                         protocol=args.protocol, seed=args.judge_seed, max_tokens=args.judge_max_tokens,
                         concurrency=args.judge_concurrency, retries=args.judge_retries,
                         timeout=args.judge_timeout)


class CountingAsker:
    """Counts the requests that really leave this process (cache hits never reach it) and stops
    sending once the judge proved unreachable (all retries of a request failed transiently)."""

    def __init__(self, ask):
        self._ask, self._lock, self.sent, self.down = ask, threading.Lock(), 0, None

    def __call__(self, prompt: str) -> str:
        from smmile.scoring.judge_backends import JudgeRequestError, JudgeUnavailable

        with self._lock:
            if self.down is not None:
                raise JudgeRequestError(f"not sent, judge unreachable: {self.down}")
            self.sent += 1
        try:
            return self._ask(prompt)
        except JudgeUnavailable as exc:
            with self._lock:
                self.down = self.down or str(exc)
            raise


def _load_frame(csv_path):
    raw = read_result_csv(csv_path, REQUIRED_COLUMNS)
    try:
        question_column(raw.columns)
    except KeyError as exc:
        raise ResultFileError(f"{csv_path}: {exc.args[0]}") from None
    frame, excluded = exclude_problems(raw)
    return raw, frame, excluded


def _write_judgements(csv_path, judgements) -> None:
    path = judgements_path(csv_path)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.writelines(j.to_json() + "\n" for j in judgements)
    os.replace(tmp, path)


def judge_file(csv_path, settings, asker, cache, outcome: Outcome) -> dict | None:
    """Judge one CSV; write its judgements and (if no request failed) its JSON."""
    info = get_model_info(csv_path)
    if not info.known:
        print(f"Skipping: {csv_path}")
        return None
    try:
        raw, frame, excluded = _load_frame(csv_path)
        sent_before = asker.sent
        judgements = judge_frame(frame, settings, asker, cache)
        _write_judgements(csv_path, judgements)
        failed = [j for j in judgements if j.status == FAILED]
        if failed:
            outcome.fail(f"{csv_path}: {len(failed)} of {len(judgements)} judge request(s) failed "
                         f"({failed[0].error}); results not written, rerun to retry")
            return None
        stats = judge_stats(frame, judgements, info.model, info.mode, len(raw), excluded)
        write_json(stats, evaluationllm_json_path(csv_path))
    except ResultFileError as exc:
        outcome.fail(str(exc))
        return None
    except OSError as exc:
        outcome.fail(f"{csv_path}: cannot write results ({exc.strerror or exc})")
        return None
    _print_report(stats, judgements, asker.sent - sent_before)
    return stats


def _print_report(stats, judgements, sent: int) -> None:
    extra = [f"Number of correct answers (judge): {stats['correct_examples']}",
             f"Number of badly formatted judge replies: {stats['llm_err_count']}"]
    print(comparison.format_file_report(stats, TITLE, LABEL, extra))
    unparseable = sum(j.status == UNPARSEABLE for j in judgements)
    cached = sum(j.cached for j in judgements)
    print(f"Judge requests sent: {sent}; cache hits: {cached}; "
          f"unparseable replies: {unparseable} (counted as incorrect)")


def visualize_file(csv_path, outcome: Outcome) -> dict | None:
    """Load ``<stem>_evaluationllm.json``; a missing/invalid one is reported and skipped."""
    if not get_model_info(csv_path).known:
        print(f"Skipping: {csv_path}")
        return None
    path = evaluationllm_json_path(csv_path)
    try:
        with open(path) as handle:
            stats = json.load(handle)
        if not {"model", "inference_mode", "accuracy", "problem_accuracies"} <= set(stats):
            raise KeyError("required keys missing")
    except FileNotFoundError:
        outcome.fail(f"{path}: no LLM-judge results (run without --visualize-only first)")
        return None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        outcome.fail(f"{path}: cannot read LLM-judge results ({type(exc).__name__})")
        return None
    print(comparison.format_file_report(stats, TITLE, LABEL))
    return stats


def _run(args) -> int:
    check_results_dir(args.results_dir)
    files = find_files(args.results_dir, judge_patterns(args.model, args.inference_mode),
                       args.model, args.inference_mode)
    if not files:
        return 1
    outcome, results = Outcome(), {}
    if args.visualize_only:
        score = lambda f: visualize_file(f, outcome)  # noqa: E731
    else:
        from smmile.scoring.judge_backends import make_asker

        settings = settings_from_args(args)
        asker = CountingAsker(make_asker(settings))
        cache = None if args.no_cache else JudgeCache.for_results_dir(args.results_dir)
        score = lambda f: judge_file(f, settings, asker, cache, outcome)  # noqa: E731
    for csv_path in files:
        stats = score(csv_path)
        if stats is not None:
            results[f"{stats['model']}:{stats['inference_mode']}"] = stats
    comparison.report_comparison(results, args.results_dir, "model_comparison_llm.txt", LABEL)
    if outcome.summary():
        print(outcome.summary())
    return outcome.exit_code


def main(argv: list[str] | None = None) -> int:
    """Entry point (``smmile judge``); returns the exit status."""
    return run_main(_run, argv, build_parser())
