"""The prompt as sent, for the problem explorer: per problem of a run that has a journal, the messages its
family rendered (system prompt, ICL turns, the query turn with its options) with each image an index
into the explorer's images, and the MCQA options in the order the model saw them.

A run's manifest (``<stem>.manifest.json``) names its journal (``<results>/.smmile/<stem>.journal.jsonl``)
and its preset, settings and protocol; each journal record holds the planned item (mode, format, the
query turn's text as rendered, the display-ordered options, the correct letter, family extras). The
family is rebuilt from the manifest as the runner built it and asked for the item's request
(``Family.request``), so what is shown is what the current code sends for that item; the problem (its
examples and images) comes from the dataset. A generic checkpoint (``hf:``/``vllm:``) whose chat template
refused the canonical layout was sent the messages in the layout its capability probe chose (system prompt
folded into the first user turn, examples in one turn): the layout its response journaled (else the
manifest's ``backend.capabilities.layout``) is applied to the family's messages, as the backend applied it.
Without the dataset, or when the family cannot be rebuilt, only the query turn's text and the options are
shown. When a journal holds several configurations of a problem, the record read last is shown.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from smmile.errors import UserError


@dataclass
class Prompt:
    """``messages``: ``[(role, [text | ("image", ref)])]`` or None (only the query turn is known);
    ``target``: the query turn's text; ``options``: ``[(letter, answer)]`` as displayed (MCQA), else [];
    ``note``: what else to say (a baseline sends nothing)."""

    messages: list | None
    target: str
    options: list
    note: str = ""


def family_of(manifest: dict):
    """The run's family as the runner built it (preset, family arguments, the settings it accepts), or None."""
    from smmile.models import registry

    model = manifest.get("model") or {}
    try:
        preset = registry.get(str(model.get("preset")))
        cls = registry.load_symbol(model.get("family") or preset.family)
        accepted = getattr(cls, "SETTINGS", ())
        settings = {**(manifest.get("settings") or {}), "protocol": manifest.get("protocol", "paper")}
        return cls(**preset.family_args, **{k: v for k, v in settings.items() if k in accepted})
    except Exception:  # an unknown preset or a family of another version: the query turn alone
        return None


def journal_records(results_dir: str, manifest: dict) -> dict:
    """problem_id -> the run's journal record of it (the one read last), {} without a readable journal."""
    from smmile.runner.journal import RESPONSES_FORMAT, Journal

    name = (manifest.get("journal") or {}).get("file")
    if not isinstance(name, str) or not name:
        return {}
    path = os.path.normpath(os.path.join(results_dir, name))
    if not path.startswith(os.path.normpath(results_dir) + os.sep) or not os.path.isfile(path):
        return {}
    try:
        records = Journal(path, version=RESPONSES_FORMAT).records()
    except (UserError, OSError):
        return {}
    return {rec["problem_id"]: rec for rec in records.values()}


def run_layout(rec: dict, manifest: dict):
    """The probed layout (``models.hf.probe.Layout``) the backend applied to this record's messages, or None."""
    from smmile.models.hf.probe import Layout

    extra = (rec.get("response") or {}).get("extra") or {}
    found = extra.get("layout") if isinstance(extra, dict) else None
    if not isinstance(found, dict):
        found = (((manifest.get("backend") or {}).get("capabilities") or {}).get("layout"))
    if not isinstance(found, dict):
        return None
    try:
        return Layout(**found)
    except TypeError:  # a layout of another version: the family's own messages
        return None


def _parts(content, images: list) -> list:
    """A message's content as text and ("image", ref) parts; ``images``: the request's images in prompt order
    (consumed by placeholders that carry no reference)."""
    if isinstance(content, str):
        return [content]
    out = []
    for part in content or []:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text":
            out.append(str(part.get("text", "")))
        elif kind in ("image", "image_url"):
            ref = part.get("ref") or (images.pop(0) if images else None)
            out.append(("image", ref))
    return out


def rendered(request, layout=None) -> tuple[list | None, str]:
    """(messages, note) of a family's request: chat messages (API or HF; a generic checkpoint's in the probed
    ``layout``), a pre-rendered prompt with its images (LLaVA-Med), or nothing (a baseline's planned choice)."""
    from smmile.models.hf.generic import RENDER

    if isinstance(request, str):
        return None, "a baseline: no model is asked; its answer was drawn from the examples when the run was planned"
    images = list(getattr(request, "images", None) or []) if not callable(getattr(request, "images", None)) else []
    messages = getattr(request, "messages", None)
    note = ""
    if messages and layout is not None and getattr(request, "render", None) == RENDER:
        messages = layout.apply(messages)
        changes = (["the system prompt opens the first user turn"] if layout.system == "first-user-turn" else []) + \
            (["the examples and the query are one user turn"] if layout.examples == "one-turn" else [])
        if changes:
            note = "laid out as the capability probe chose (the chat template refused the canonical turns): " + \
                "; ".join(changes)
    if messages:
        return [(str(m.get("role", "")), _parts(m.get("content"), images)) for m in messages], note
    prompt = getattr(request, "prompt", None)
    if isinstance(prompt, str):
        return [("prompt", [prompt] + [("image", ref) for ref in images])], \
            "one pre-rendered prompt; its image tokens take the images below, in order"
    return None, ""


def run_prompts(results_dir: str, manifest: dict | None, problems: dict) -> dict:
    """problem_id -> Prompt for the run of ``manifest`` (None or no journal: {}); ``problems``: the dataset's
    problems by id (may be empty)."""
    from smmile.protocol.items import Item

    if not manifest:
        return {}
    records = journal_records(results_dir, manifest)
    family = family_of(manifest) if records and problems else None
    out = {}
    for pid, rec in records.items():
        it = rec.get("item") or {}
        options = list((it.get("options") or {}).items())
        messages, note = None, ""
        problem = problems.get(pid)
        if family is not None and problem is not None and problem.query.answer == it.get("true_answer"):
            item = Item(rec.get("index", 0), problem, it.get("mode", ""), it.get("format", ""), it.get("target", ""),
                        it.get("options"), it.get("correct"), dict(it.get("extra") or {}))
            try:
                messages, note = rendered(family.request(item), run_layout(rec, manifest))
            except Exception:  # a family that needs what the journal lacks: the query turn alone
                messages, note = None, ""
        out[pid] = Prompt(messages, str(it.get("target") or ""), options, note)
    return out
