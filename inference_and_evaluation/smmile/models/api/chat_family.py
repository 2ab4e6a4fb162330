"""GPT-4o (spec §3.13), Claude 3.7 Sonnet (§3.12) and any chat model served behind an API.

The conversation is the canonical one; the scripts differ in layout only: system prompt, text before
image, ICL answers as `system` content parts (GPT-4o, paper protocol) or plain `assistant` strings (Claude).
MCQA uses Template A and extractor E2; a failed extraction is stored literally as `EXTRACTION_FAILED`.
"""

from __future__ import annotations

from ...generation import GenerationSettings
from ...protocol.conversation import MessageStyle, build_conversation, render_messages
from ...protocol.extract import EXTRACTION_FAILED, extract_e2
from ...protocol.items import Item
from ...protocol.templates import API_SYSTEM
from ..base import Family, Response, base_row, mcqa_fields
from .request import ChatRequest, image_part

API_ERROR = "ERROR: API Request Failed - {e}"


class ApiChatFamily(Family):
    """`answer_role="protocol"`: `system` under --protocol paper (GPT-4o's bug), `assistant` under corrected."""

    name = "api-chat"
    mcqa_template = "A"
    SETTINGS = ("protocol",)
    GENERATION = GenerationSettings(max_new_tokens=512, temperature=0.0)

    def __init__(self, answer_role: str = "assistant", answer_as_parts: bool = False, options: dict | None = None,
                 protocol: str = "paper"):
        if answer_role == "protocol":
            answer_role = "system" if protocol == "paper" else "assistant"
        self.style = MessageStyle(system=API_SYSTEM, image_first=False, answer_role=answer_role,
                                  answer_as_parts=answer_as_parts)
        self.options = dict(options or {})

    def request(self, item: Item) -> ChatRequest:
        turns = build_conversation(item.problem, item.mode, item.target)
        return ChatRequest.from_settings(render_messages(turns, self.style, image_part), self.generation,
                                         options=self.options, error_format=API_ERROR)

    def row(self, item: Item, response: Response) -> dict:
        row = base_row(item)
        text = response.text
        if item.fmt == "mcqa":
            selected = extract_e2(text, item.options)
            if selected == EXTRACTION_FAILED:
                row.update(correct_option=item.correct, selected_option=selected, is_correct=False,
                           generated_answer=EXTRACTION_FAILED)
            else:
                row.update(mcqa_fields(item, selected))
            row["full_response"] = text
        else:
            row["generated_answer"] = row["full_response"] = text
        return self.select(item, row)
