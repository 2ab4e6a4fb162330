"""LLM-as-a-judge scoring (spec §5): the verbatim prompt, the strict parse (exactly ``1`` or ``0``, no stripping),
the judge's settings (``paper``: the server's defaults; ``corrected``: temperature 0 and a seed), one request per row
keyed by the content judged, the verdicts from the judge's journal. A jury's row verdict is the strict majority of
the parseable verdicts; a tie or no parseable verdict is never broken by the judges' order: it is scored as an
unparseable reply (0, counted in ``llm_err_count``). A jury of one is that judge alone.
"""

from __future__ import annotations

import json
import math
from collections import Counter
import re
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from urllib.parse import urlsplit

from smmile.errors import UserError
from smmile.record.naming import question_column
from smmile.record.result_csv import content_sha256
from smmile.runner.executor import digest
from smmile.scoring.exact_match import plain
from smmile.scoring.kappa import majority

JUDGE_PROMPT = (
    'A medical AI model is provided with an image and asked the question "{question}". '
    'The correct answer to this question is: "{answer}". '
    'The AI model outputs "{response}" as its response. Is the AI model correct? '
    "Please output your answer as a single digit, where 1 indicates that the AI model is correct "
    "and 0 indicates that the AI model is incorrect with respect to the correct answer. "
    "Do not provide anything other than the digit in your response."
)
DEFAULT_JUDGE_MODEL = "llama3.3"
PARSE_RULE = "strict: exactly '1' or '0', anything else judged 0 and counted in llm_err_count"
OK, UNPARSEABLE, FAILED = "ok", "unparseable", "failed"
NO_MAJORITY = "no majority"  # a jury's row without a strict majority: scored like UNPARSEABLE
NOT_SENT = "not sent: the judge stopped launching requests (see above)"
RULE = ("strict majority of the parseable verdicts; a tie or no parseable verdict is no verdict: judged 0 and "
        "counted in llm_err_count")
MAJORITY, TIE, NO_VERDICT = "majority", "tie", "no verdict"


def build_prompt(row, question_col: str) -> str:
    """``str.format`` of pandas values (NaN renders as ``nan``)."""
    return JUDGE_PROMPT.format(question=row[question_col], answer=row["true_answer"],
                               response=row["generated_answer"])


def parse_reply(reply: str | None) -> tuple[int, str]:
    return (int(reply), OK) if reply in ("1", "0") else (0, UNPARSEABLE)


@dataclass(frozen=True)
class JudgeSettings:
    """Everything that decides which judge answers and how its requests are sent."""

    backend: str = "ollama"  # a short name of judge_run.judge_backends()
    model: str = DEFAULT_JUDGE_MODEL
    base_url: str | None = None
    protocol: str = "paper"
    seed: int = 0
    max_tokens: int | None = None
    concurrency: int | str | None = None  # N, "auto", or None: the backend's default (auto; ollama 8)
    retries: int = 3
    timeout: float = 120.0
    max_consecutive_failures: int = 8
    batch: bool = False  # --batch: the provider's batch API (how requests are sent: not in identity())
    poll_interval: float | None = None  # --poll-interval, seconds (None: the batch module's default)
    price: str | None = None  # --price IN:OUT, USD per million tokens (None: the dated table, prices.py)
    allow_key_for_host: tuple[str, ...] = ()  # --allow-key-for-host: hosts an environment key may go to

    def options(self) -> dict:
        """Generation options of every request (``paper``: none, the server's defaults)."""
        opts: dict = {"temperature": 0.0, "seed": self.seed} if self.protocol == "corrected" else {}
        if self.max_tokens is not None:
            opts["max_tokens"] = self.max_tokens
        return opts

    def identity(self) -> dict:
        """What changes a reply (every key, the journal's name); not the transport (URL, retries, timeout)."""
        return {"backend": self.backend, "model": self.model, "options": self.options()}

    def key(self, judged: dict, prompt: str) -> str:
        """The journal key of one request: the content judged, the prompt, this judge (not the file name)."""
        return digest({"judge": self.identity(), "judged": judged, "prompt": prompt})

    def journal_path(self, results_dir) -> Path:
        slug = re.sub(r"[^A-Za-z0-9._-]+", "_", f"{self.backend}-{self.model}")
        return Path(results_dir) / ".smmile" / "judge" / f"{slug}-{digest(self.identity(), 8)}.journal.jsonl"


def judge_identity(settings: JudgeSettings, endpoint: str | None) -> dict:
    """Who judged: recorded beside each ``_evaluationllm.json``; a different identity is a different judge."""
    return {"backend": settings.backend, "model": settings.model, "endpoint": endpoint,
            "protocol": settings.protocol, "options": settings.options(),
            "prompt_sha256": content_sha256(JUDGE_PROMPT.encode()), "parse": PARSE_RULE}


@dataclass
class Judgement:
    """One judged row, as saved in ``<stem>_judgements.jsonl``."""

    row: int
    problem_id: object
    prompt_sha256: str
    journal_key: str
    reply: str | None = None
    value: int | None = None
    status: str = FAILED
    cached: bool = False
    lenient_value: int | None = None
    error: str | None = None
    meta: dict = field(default_factory=dict)

    def to_json(self) -> str:
        record = asdict(self)
        record["problem_id"] = plain(record["problem_id"])
        record.update(record.pop("meta"))
        return json.dumps(record)


@dataclass(frozen=True)
class PlannedFrame:
    """The requests of one result frame in CSV order: per row its problem id, the content judged (question, gold
    and model answer, as the prompt shows them), the prompt and the key."""

    problem_ids: list
    judged: list[dict]
    prompts: list[str]
    keys: list[str]


def plan_frame(frame, settings: JudgeSettings) -> PlannedFrame:
    qcol = question_column(frame.columns)
    judged = [{"question": str(row[qcol]), "true_answer": str(row["true_answer"]),
               "generated_answer": str(row["generated_answer"])} for _, row in frame.iterrows()]
    prompts = [build_prompt(row, qcol) for _, row in frame.iterrows()]
    return PlannedFrame(list(frame["problem_id"]), judged, prompts,
                        [settings.key(j, p) for j, p in zip(judged, prompts)])


def judgements(planned: PlannedFrame, records: dict[str, dict], fresh: set[str], settings: JudgeSettings,
               sent_earlier: set[str]) -> list[Judgement]:
    """Per-row verdicts from the journal ``records`` (no record: never sent). A row is cached when its record
    is not ``fresh`` or its key is in ``sent_earlier`` (an identical earlier row in this run; it grows)."""
    meta = {"backend": settings.backend, "model": settings.model, "protocol": settings.protocol}
    out = []
    for index, (pid, prompt, key) in enumerate(zip(planned.problem_ids, planned.prompts, planned.keys)):
        rec = records.get(key)
        j = Judgement(index, pid, content_sha256(prompt.encode()), key, meta=meta,
                      cached=(rec is not None and key not in fresh) or key in sent_earlier)
        if rec is None:
            j.error = NOT_SENT
        elif rec["status"] != "ok":
            j.error = rec["response"].get("error")
        else:
            j.reply = rec["response"].get("text")
            j.value, j.status = parse_reply(j.reply)
            text = (j.reply or "").strip()  # what a whitespace-tolerant parser would read (for analysis only)
            j.lenient_value = int(text) if text in ("1", "0") else None
        out.append(j)
        sent_earlier.add(key)
    return out


def label(settings: JudgeSettings) -> str:
    return f"{settings.backend}:{settings.model}"


def parse_judge(spec: str, base: JudgeSettings, backends: tuple[str, ...]) -> JudgeSettings:
    """``base`` with the spec's backend, model (which may hold ``:``, e.g. ``ollama:llama3.3:70b``) and URL."""
    backend, colon, rest = spec.partition(":")
    model, at, url = rest.partition("@")
    if not colon or not backend or not model.strip() or (at and not url.strip()):
        raise UserError(f"--jury {spec!r}: write each judge as BACKEND:MODEL[@BASE_URL], e.g. ollama:llama3.3 or "
                        "openai-compatible:qwen2.5-72b@http://127.0.0.1:8000/v1")
    if backend not in backends:
        raise UserError(f"--jury {spec!r}: unknown backend {backend!r} (one of {', '.join(backends)})")
    why = url_problem(url.strip()) if at else None
    if why:
        raise UserError(f"--jury {masked(spec)!r}: {why}; write the URL as http(s)://HOST[:PORT]/PATH, e.g. "
                        "http://127.0.0.1:8000/v1")
    return replace(base, backend=backend, model=model.strip(), base_url=url.strip() or None)


def url_problem(url: str) -> str | None:
    """Why `url` cannot be a server's base URL (None: it can): an http(s) scheme, a host and a port in range."""
    parts, shown = urlsplit(url), repr(masked(url))
    if parts.scheme not in ("http", "https"):
        return f"{shown} is not an http:// or https:// URL"
    try:
        port = parts.port  # ValueError: out of range or not a number
    except ValueError:
        port = 0
    if port is not None and not 1 <= port <= 65535:
        return f"{shown} has no valid port (1-65535)"
    if not parts.hostname or " " in url:
        return f"{shown} names no host"
    return None


def masked(url: str) -> str:
    """`url` (or a --jury spec holding one) with its user info and query masked: what an error line may show."""
    return re.sub(r"\?.*", "?***", re.sub(r"^([^/]*//)[^/@]*@", r"\1***@", url))


def check_panel(panel: list[JudgeSettings]) -> None:
    """Two members with the same backend and model would share a journal and vote twice: refused."""
    seen = set()
    for s in panel:
        if label(s) in seen:
            raise UserError(f"--jury names {label(s)} twice; each judge votes once (a model served at two URLs is "
                            "the same judge)")
        seen.add(label(s))


def outcome(values: list[int]) -> tuple[int | None, str]:
    """(verdict, how) of the parseable ``values`` (0/1)."""
    if not values:
        return None, NO_VERDICT
    verdict = majority(values)
    return (None, TIE) if math.isnan(verdict) else (int(verdict), MAJORITY)


def combine(per_judge: list[list[Judgement]], labels: list[str]) -> list[Judgement]:
    """One Judgement per row: the jury's verdict, each judge's reply, value and status under ``jury``."""
    out = []
    for row in zip(*per_judge):
        first = row[0]
        verdict, how = outcome([j.value for j in row if j.status == OK])
        members = [{"judge": name, "reply": j.reply, "value": j.value if j.status == OK else None,
                    "status": j.status, "cached": j.cached, "journal_key": j.journal_key, "error": j.error}
                   for name, j in zip(labels, row)]
        out.append(Judgement(first.row, first.problem_id, first.prompt_sha256, digest([j.journal_key for j in row]),
                             value=0 if verdict is None else verdict, status=OK if verdict is not None else NO_MAJORITY,
                             cached=all(j.cached for j in row),
                             meta={"backend": "jury", "protocol": first.meta.get("protocol"), "jury_outcome": how,
                                   "jury": members}))
    return out


def jury_judgements(per_judge: list[list[Judgement]], labels: list[str]) -> list[Judgement]:
    return per_judge[0] if len(per_judge) == 1 else combine(per_judge, labels)


def tally(judged: list[Judgement]) -> dict:
    counts = Counter(j.meta.get("jury_outcome", MAJORITY) for j in judged)
    return {how: counts[how] for how in (MAJORITY, TIE, NO_VERDICT)}


def jury_identity(panel: list[JudgeSettings], identities: list[dict]) -> dict:
    """The jury as what it is: ``backend: jury``, its members' identities (``jury``) and the ``rule`` combining them."""
    return {"backend": "jury", "protocol": panel[0].protocol, "jury": identities, "rule": RULE}
