"""The prompt as sent, for the problem explorer: per problem of a run with a journal, the messages its family
rendered (images as indexes into the explorer's images) and the MCQA options in the order the model saw them.

The family is rebuilt from the run's manifest as the runner built it and asked for the journaled item's request,
so what is shown is what the current code sends. A generic checkpoint (``hf:``/``vllm:``) gets the layout its
capability probe chose (journaled, else the manifest's ``backend.capabilities.layout``). Without the dataset, or
when the family cannot be rebuilt, only the query turn's text and the options are shown; of several records of
a problem, the one read last.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from smmile.errors import UserError


@dataclass
class Prompt:
    """``messages``: ``[(role, [text | ("image", ref)])]`` or None (only the query turn is known);
    ``options``: ``[(letter, answer)]`` as displayed (MCQA)."""

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
    """problem_id -> the run's journal record of it (the one read last)."""
    from smmile.runner.executor import RESPONSES_FORMAT, Journal

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
    """A message's content as text and ("image", ref) parts; placeholders without a reference take ``images``
    in order."""
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
    """(messages, note) of a family's request: chat messages, a pre-rendered prompt with its images (LLaVA-Med),
    or nothing (a baseline)."""
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
    """problem_id -> Prompt for the run of ``manifest``; ``problems``: the dataset's problems by id."""
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
