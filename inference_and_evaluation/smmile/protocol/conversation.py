"""The canonical conversation every model sees, and its generic message renderer: 0-shot is one user turn (query
image + target text); ICL is a user turn per example (image + question) and an assistant turn with its answer,
then the query turn. Families differ only in how they render it (image position, system prompt, answer role...)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .problem import ImageRef, Problem


@dataclass(frozen=True)
class Turn:
    role: str  # "user" | "assistant"
    text: str
    image: ImageRef | None = None


def build_conversation(problem: Problem, mode: str, target: str) -> list[Turn]:
    """Canonical turns for `mode` ("0-shot" | "ICL"); `target` is the query's text (question or MCQA prompt)."""
    turns: list[Turn] = []
    if mode == "ICL":
        for row in problem.examples:
            turns.append(Turn("user", row.question, row.image))
            turns.append(Turn("assistant", row.answer))
    turns.append(Turn("user", target, problem.query.image))
    return turns


@dataclass(frozen=True)
class MessageStyle:
    """How one original script laid out its chat messages (spec §3)."""

    system: str | None = None  # system prompt text, or None for none
    system_as_parts: bool = False  # system content as [{"type": "text"}] instead of a string
    image_first: bool = True  # user content order: [image, text] or [text, image]
    answer_role: str = "assistant"  # GPT-4o (paper protocol) sends ICL answers as "system"
    answer_as_parts: bool = False  # assistant content as [{"type": "text"}] instead of a string
    answer_suffix: str = ""  # Llama-3.2 appends "\n" to every ICL answer


def render_messages(turns: list[Turn], style: MessageStyle,
                    image_part: Callable[[ImageRef], dict] = lambda ref: {"type": "image"}) -> list[dict]:
    """Render canonical turns as chat messages with typed content parts (HF / OpenAI shape)."""
    messages: list[dict] = []
    if style.system is not None:
        content = [{"type": "text", "text": style.system}] if style.system_as_parts else style.system
        messages.append({"role": "system", "content": content})
    for turn in turns:
        if turn.role == "user":
            text = {"type": "text", "text": turn.text}
            parts = [text] if turn.image is None else [image_part(turn.image), text]
            messages.append({"role": "user", "content": parts if style.image_first else parts[::-1]})
        else:
            answer = turn.text + style.answer_suffix
            content = [{"type": "text", "text": answer}] if style.answer_as_parts else answer
            messages.append({"role": style.answer_role, "content": content})
    return messages


def user_images(turns: list[Turn]) -> list[ImageRef]:
    return [t.image for t in turns if t.role == "user" and t.image is not None]
