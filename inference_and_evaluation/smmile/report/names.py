"""What the report and the figures call things: models (display names, never internal keys), metrics, modes
and problem flags. Model names are ``smmile.identity``'s, so the analyses name models alike; the report
``learn``s the identity of every result it reads, so models outside the paper keep the name their run recorded."""

from __future__ import annotations

import re
from html import escape

from smmile.identity import display, key_for_scoring, learn  # model names: kept with the identities
from smmile.scoring import tables
from smmile.record.run_record import MODES  # 0-shot, ICL
from smmile.scoring.metrics import METRICS as METRIC_TABLE

METRICS = tuple(METRIC_TABLE)  # LLM, EM, MCQA: the tables' column order (smmile.scoring.metrics)
BASELINES = tables.PRIORITY_MODELS
MARKER_NOTES = {
    "*": "text-only baseline: Llama 3.3 70B answers from the questions (and, with ICL, the example "
         "questions and answers) without seeing any image",
    "**": "LLaVA-Med v1.5 (Mistral 7B), run with its own conversation template and image padding; "
          "marked as in the paper's table",
}
FLAGS = {  # the names flag() does not derive from the column
    "flag_difficulty_llms": "difficulty for LLMs",
    "flag_num_ICL": "number of ICL examples",
    "flag_first_ICL_match_problem": "first example has the query's answer",
    "flag_last_ICL_match_problem": "last example has the query's answer",
}
_MARKER = re.compile(r"(\*+)$")


def html(key: str) -> str:
    """Display name for the page, escaped, a trailing marker (``*``, ``**``) as a superscript."""
    name = display(key)
    marker = _MARKER.search(name)
    if not marker:
        return escape(name)
    return escape(name[: marker.start()]) + f"<sup>{escape(marker.group(1))}</sup>"


def markers(keys) -> list[tuple[str, str]]:
    """(marker, explanation) for every marker the display names of ``keys`` carry."""
    found = {m.group(1) for m in (_MARKER.search(display(k)) for k in keys) if m}
    return [(marker, MARKER_NOTES.get(marker, "")) for marker in sorted(found, key=len)]


def flag(name: str) -> str:
    return FLAGS.get(name, name.removeprefix("flag_").replace("_", " "))


def metric(name: str) -> str:
    return METRIC_TABLE[name].display if name in METRIC_TABLE else str(name)


def rater(label) -> str:
    """A judge's rater label, ``backend:model``, as the explorer shows it: ``model (backend)``; reviewers as named."""
    from smmile.models.registry import BACKENDS

    backend, sep, model = str(label).partition(":")
    return f"{model.split('@')[0]} ({backend})" if sep and backend in BACKENDS else str(label)
