"""The Llama 3.3 text-only baseline (ollama): images omitted, one user message (spec §3.9, §3.10).

`script="open"`: inference_llama33textonly.py (open only); `script="mcqa"`: inference_llama33textonly_mcqa.py
(Template A, E1 and the follow-up turn when extraction fails, except for the last problem). MCQA under "open" uses
the _mcqa script's prompts: the open-only script has none.
"""

from __future__ import annotations

from ...generation import GenerationSettings
from ...protocol import templates as T
from ...protocol.extract import EXTRACTION_FAILED, extract_e1
from ...protocol.items import Item, Rngs
from ..base import Family
from .request import ChatRequest


class TextOnlyFamily(Family):
    name = "llama33textonly"
    output_key = "llama33textonly"
    mcqa_template = "A"
    GENERATION = GenerationSettings()  # nothing passed: the server's defaults, as the original

    def __init__(self, script: str = "open"):
        self.script = script
        self._last_index = -1

    def plan(self, item: Item, rngs: Rngs) -> None:
        super().plan(item, rngs)
        self._last_index = max(self._last_index, item.index)  # every problem is planned before any request

    def prompt(self, item: Item) -> str:
        if self.script == "open" and item.fmt == "open":
            return T.textonly_open_prompt(item.problem, item.mode)
        return T.textonly_mcqa_prompt(item.problem, item.mode, item.fmt, item.target)

    def request(self, item: Item) -> ChatRequest:
        prompt = self.prompt(item)
        req = ChatRequest.from_settings([{"role": "user", "content": prompt}], self.generation,
                                        error_format=self.output.errors["other"])
        if item.fmt == "mcqa" and item.index < self._last_index:  # spec §9.29: never for the last problem
            req.followup = lambda first: self.followup(item, prompt, first)
        return req

    def followup(self, item: Item, prompt: str, first: str) -> ChatRequest | None:
        if extract_e1(first, item.options) != EXTRACTION_FAILED:
            return None
        messages = [{"role": "user", "content": prompt}, {"role": "assistant", "content": first},
                    {"role": "user", "content": T.TEXTONLY_FOLLOW_UP}]
        return ChatRequest.from_settings(messages, self.generation, error_format=self.output.errors["other"])
