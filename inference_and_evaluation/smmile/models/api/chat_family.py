"""GPT-4o (spec §3.13), Claude 3.7 Sonnet (§3.12) and any chat model served behind an API.

The canonical conversation; the scripts differ in layout only (system prompt, text before image, ICL answers as
`system` content parts for GPT-4o under paper, plain `assistant` strings for Claude). Template A; output spec "api".
"""

from __future__ import annotations

from ...generation import MAX_NEW_TOKENS, GenerationSettings
from ...protocol.conversation import MessageStyle, build_conversation, render_messages
from ...protocol.items import Item
from ...protocol.templates import API_SYSTEM
from ..base import Family
from .request import ChatRequest, image_part


class ApiChatFamily(Family):
    """`answer_role="protocol"`: `system` under --protocol paper (GPT-4o's bug), `assistant` under corrected."""

    name = "api-chat"
    mcqa_template = "A"
    SETTINGS = ("protocol",)
    GENERATION = GenerationSettings(max_new_tokens=MAX_NEW_TOKENS, temperature=0.0)

    def __init__(self, answer_role: str = "assistant", answer_as_parts: bool = False, options: dict | None = None,
                 protocol: str = "paper"):
        self.protocol = protocol
        if answer_role == "protocol":
            answer_role = "system" if protocol == "paper" else "assistant"
        self.style = MessageStyle(system=API_SYSTEM, image_first=False, answer_role=answer_role,
                                  answer_as_parts=answer_as_parts)
        self.options = dict(options or {})

    def request(self, item: Item) -> ChatRequest:
        turns = build_conversation(item.problem, item.mode, item.target)
        return ChatRequest.from_settings(render_messages(turns, self.style, image_part), self.generation,
                                         options=self.options, error_format=self.output.errors["other"])
