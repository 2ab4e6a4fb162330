"""A jury of LLM judges (``--jury BACKEND:MODEL[@BASE_URL] ...``), each with its own journal.

A row's verdict is the strict majority of the parseable verdicts; a row without one (a tie, or no parseable
verdict) is never broken by the order of the judges: it is scored as the original scores an unparseable reply
(0, counted in ``llm_err_count``). A jury of one is that judge alone.
"""

from __future__ import annotations

import math
from dataclasses import replace

from smmile.errors import UserError
from smmile.runner.executor import digest
from smmile.scoring.kappa import majority
from smmile.scoring.judge import NO_MAJORITY, OK, Judgement, JudgeSettings

RULE = ("strict majority of the parseable verdicts; a tie or no parseable verdict is no verdict: judged 0 and "
        "counted in llm_err_count")
MAJORITY, TIE, NO_VERDICT = "majority", "tie", "no verdict"


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
    return replace(base, backend=backend, model=model.strip(), base_url=url.strip() or None)


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
                    "status": j.status, "cached": j.cached, "cache_key": j.cache_key, "error": j.error}
                   for name, j in zip(labels, row)]
        out.append(Judgement(first.row, first.problem_id, first.prompt_sha256, digest([j.cache_key for j in row]),
                             value=0 if verdict is None else verdict, status=OK if verdict is not None else NO_MAJORITY,
                             cached=all(j.cached for j in row),
                             meta={"backend": "jury", "model": ", ".join(labels),
                                   "protocol": first.meta.get("protocol"), "jury_outcome": how, "jury": members}))
    return out


def verdicts(per_judge: list[list[Judgement]], labels: list[str]) -> list[Judgement]:
    return per_judge[0] if len(per_judge) == 1 else combine(per_judge, labels)


def tally(judged: list[Judgement]) -> dict:
    counts = {MAJORITY: 0, TIE: 0, NO_VERDICT: 0}
    for j in judged:
        counts[j.meta.get("jury_outcome", MAJORITY)] += 1
    return counts


def jury_identity(panel: list[JudgeSettings], identities: list[dict]) -> dict:
    """The jury as one judge identity (``backend: jury`` so the report's runs table names it)."""
    return {"backend": "jury", "model": ", ".join(label(s) for s in panel), "protocol": panel[0].protocol,
            "jury": identities, "rule": RULE}
