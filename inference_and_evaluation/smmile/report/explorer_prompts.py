"""The prompt as sent, for the problem explorer: per problem of a run with a journal, the messages of the request
the run recorded when it sent it (``runner.executor``; images as indexes into the explorer's images) and the MCQA
options in the order the model saw them: what was sent, not what today's code would send. A generic checkpoint
(``hf:``/``vllm:``) gets the layout its capability probe chose (journaled, else the manifest's
``backend.capabilities.layout``). Without the dataset, or for a journal that recorded no request (written before
requests were recorded), only the query turn's text and the options are shown; of several records of a problem,
the one read last.
"""

from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass

StoredImage = namedtuple("StoredImage", "digest")  # an image as the explorer keeps it (the bytes stay in the dataset)


@dataclass
class Prompt:
    """``messages``: ``[(role, [text | ("image", ref)])]`` or None (only the query turn is known);
    ``options``: ``[(letter, answer)]`` as displayed (MCQA)."""

    messages: list | None
    target: str
    options: list
    note: str = ""


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
    """(messages, note) of a recorded request (``stored``): chat messages, a pre-rendered prompt with its images
    (LLaVA-Med), or nothing (a baseline: its text)."""
    from smmile.models.hf.generic import RENDER

    if isinstance(request, str):
        return None, "a baseline: no model is asked; its answer was drawn from the examples when the run was planned"
    request = request if isinstance(request, dict) else {}
    images, messages, note = list(request.get("images") or []), request.get("messages"), ""
    if messages and layout is not None and request.get("render") == RENDER:
        messages = layout.apply(messages)
        changes = (["the system prompt opens the first user turn"] if layout.system == "first-user-turn" else []) + \
            (["the examples and the query are one user turn"] if layout.examples == "one-turn" else [])
        if changes:
            note = "laid out as the capability probe chose (the chat template refused the canonical turns): " + \
                "; ".join(changes)
    if messages:
        return [(str(m.get("role", "")), _parts(m.get("content"), images)) for m in messages], note
    prompt = request.get("prompt")
    if isinstance(prompt, str):
        return [("prompt", [prompt] + [("image", ref) for ref in images])], \
            "one pre-rendered prompt; its image tokens take the images below, in order"
    return None, ""


def stored(obj):
    """A recorded request (``runner.executor.canonical``) with its images (content digests) as ``StoredImage``s."""
    if isinstance(obj, dict):
        if set(obj) == {"image_sha256"}:
            return StoredImage(bytes.fromhex(obj["image_sha256"]))
        return {k: stored(v) for k, v in obj.items()}
    return [stored(v) for v in obj] if isinstance(obj, list) else obj


def run_prompts(result, problems: dict) -> dict:
    """problem_id -> Prompt for the run of ``result`` (a ``RunRecord``); ``problems``: the dataset's problems by
    id."""
    manifest = result.manifest
    if not manifest or not result.journal:
        return {}
    records = {pid: found[-1] for pid, found in result.journal.items()}
    out = {}
    for pid, rec in records.items():
        it = rec.get("item") or {}
        options = list((it.get("options") or {}).items())
        messages, note = None, ""
        problem = problems.get(pid)
        if "request" in rec and problem is not None and problem.query.answer == it.get("true_answer"):
            messages, note = rendered(stored(rec["request"]), run_layout(rec, manifest))
        out[pid] = Prompt(messages, str(it.get("target") or ""), options, note)
    return out
