"""LLM-as-a-judge scoring of open-format results (spec §5).

* ``JUDGE_PROMPT`` / ``build_prompt`` — the verbatim prompt, filled from a pandas row.
* ``parse_reply`` — strict: the reply must be exactly ``1`` or ``0`` (no stripping).
* ``JudgeSettings`` — backend, model, protocol (``paper``: server defaults; ``corrected``:
  temperature 0 and a fixed seed), request options and the cache key derived from them.
* ``judge_frame`` — judges every row (bounded thread pool, cache first) → ``Judgement`` list.
* ``judge_stats`` — the ``*_evaluationllm.json`` dict in the original key order.
"""

from __future__ import annotations

import hashlib
import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Callable

from smmile.scoring.exact_match import summarize
from smmile.scoring.naming import question_column

JUDGE_PROMPT = (
    'A medical AI model is provided with an image and asked the question "{question}". '
    'The correct answer to this question is: "{answer}". '
    'The AI model outputs "{response}" as its response. Is the AI model correct? '
    "Please output your answer as a single digit, where 1 indicates that the AI model is correct "
    "and 0 indicates that the AI model is incorrect with respect to the correct answer. "
    "Do not provide anything other than the digit in your response."
)
DEFAULT_JUDGE_MODEL = "llama3.3"
OK, UNPARSEABLE, FAILED = "ok", "unparseable", "failed"


def build_prompt(row, question_col: str) -> str:
    """Fill the prompt with ``str.format`` from pandas values (NaN renders as ``nan``)."""
    return JUDGE_PROMPT.format(question=row[question_col], answer=row["true_answer"],
                               response=row["generated_answer"])


def parse_reply(reply: str | None) -> tuple[int, str]:
    """Exactly ``"1"``/``"0"`` → (value, ``ok``); anything else → (0, ``unparseable``)."""
    if reply in ("1", "0"):
        return int(reply), OK
    return 0, UNPARSEABLE


def lenient_value(reply: str | None) -> int | None:
    """What a whitespace-tolerant parser would have read (recorded for analysis only)."""
    text = (reply or "").strip()
    return int(text) if text in ("1", "0") else None


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class JudgeSettings:
    """Everything that decides which judge answers and how."""

    backend: str = "ollama"
    model: str = DEFAULT_JUDGE_MODEL
    base_url: str | None = None
    protocol: str = "paper"
    seed: int = 0
    max_tokens: int | None = None
    concurrency: int = 4
    retries: int = 3
    retry_wait: float = 1.0
    timeout: float = 120.0

    def options(self) -> dict:
        """Generation options sent with every request (``paper``: none, server defaults)."""
        opts: dict = {"temperature": 0.0, "seed": self.seed} if self.protocol == "corrected" else {}
        if self.max_tokens is not None:
            opts["max_tokens"] = self.max_tokens
        return opts

    def cache_key(self, prompt: str) -> str:
        """sha256 over (prompt, backend, model, options): equal keys mean an equal request."""
        payload = {"prompt": prompt, "backend": self.backend, "model": self.model, "options": self.options()}
        return sha256(json.dumps(payload, sort_keys=True))


@dataclass
class Judgement:
    """One judged row, as saved in ``<stem>_judgements.jsonl``."""

    row: int
    problem_id: object
    prompt_sha256: str
    cache_key: str
    reply: str | None = None
    value: int | None = None
    status: str = FAILED
    cached: bool = False
    lenient_value: int | None = None
    error: str | None = None
    meta: dict = field(default_factory=dict)

    def to_json(self) -> str:
        record = asdict(self)
        record["problem_id"] = _plain(record["problem_id"])
        record.update(record.pop("meta"))
        return json.dumps(record)


def _plain(value):
    return value.item() if hasattr(value, "item") else value


@dataclass(frozen=True)
class _Fetched:
    reply: str | None
    cached: bool
    error: str | None = None


def _fetch(key: str, prompt: str, settings: JudgeSettings, ask: Callable[[str], str], cache) -> _Fetched:
    """Reply for one distinct request: from the cache, else from the judge (stored if non-empty)."""
    reply = cache.get(key) if cache is not None else None
    if reply is not None:
        return _Fetched(reply, True)
    try:
        reply = ask(prompt)
    except Exception as exc:  # reported per row; never cached
        return _Fetched(None, False, f"{type(exc).__name__}: {exc}".splitlines()[0])
    if cache is not None and reply:
        cache.put(key, reply, settings)
    return _Fetched(reply, False)


def _judgement(index: int, problem_id, prompt: str, key: str, fetched: _Fetched, repeated: bool) -> Judgement:
    judgement = Judgement(index, problem_id, sha256(prompt), key, cached=fetched.cached or repeated,
                          error=fetched.error)
    if fetched.error is None:
        judgement.reply = fetched.reply
        judgement.value, judgement.status = parse_reply(fetched.reply)
        judgement.lenient_value = lenient_value(fetched.reply)
    return judgement


def judge_frame(frame, settings: JudgeSettings, ask: Callable[[str], str], cache=None) -> list[Judgement]:
    """Judge every row (CSV order kept). Identical requests are sent once; at most
    ``settings.concurrency`` requests are in flight."""
    qcol = question_column(frame.columns)
    prompts = [build_prompt(row, qcol) for _, row in frame.iterrows()]
    keys = [settings.cache_key(p) for p in prompts]
    distinct = dict(zip(keys, prompts))
    with ThreadPoolExecutor(max_workers=max(1, settings.concurrency)) as pool:
        futures = {k: pool.submit(_fetch, k, p, settings, ask, cache) for k, p in distinct.items()}
        fetched = {k: f.result() for k, f in futures.items()}
    meta = {"backend": settings.backend, "model": settings.model, "protocol": settings.protocol}
    judgements, seen = [], set()
    for index, (pid, prompt, key) in enumerate(zip(frame["problem_id"], prompts, keys)):
        judgement = _judgement(index, pid, prompt, key, fetched[key], key in seen)
        judgement.meta = meta
        judgements.append(judgement)
        seen.add(key)
    return judgements


def judge_stats(frame, judgements: list[Judgement], model: str, mode: str, original_count: int,
                excluded_count: int) -> dict:
    """The ``*_evaluationllm.json`` dict (key order of spec §5); unparseable → judged 0."""
    matches = [j.value == 1 for j in judgements]
    unparseable = sum(j.status == UNPARSEABLE for j in judgements)
    return summarize(frame, matches, model, mode, original_count, excluded_count,
                     extra={"llm_err_count": unparseable})
