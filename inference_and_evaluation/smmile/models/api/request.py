"""The provider-neutral chat request a family hands to an API backend.

Messages are OpenAI-shaped (`role`, `content` as a string or typed parts); an image is the abstract part
`{"type": "image", "ref": ImageRef}` that each backend encodes in its own wire format.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

from ...protocol.problem import ImageRef


def image_part(ref: ImageRef) -> dict:
    return {"type": "image", "ref": ref}


@dataclass
class ChatRequest:
    messages: list[dict]
    max_tokens: int | None = None  # None: the server's default (ollama scripts)
    temperature: float | None = None
    top_p: float | None = None
    seed: int | None = None
    stop: tuple[str, ...] = ()
    options: dict = field(default_factory=dict)  # provider extras, e.g. {"logprobs": True}
    error_format: str = "ERROR: {e}"  # how the original script wrote a failed request
    # A second turn asked after the first reply (text-only MCQA follow-up, spec §3.10): reply -> request|None
    followup: Optional[Callable[[str], Optional["ChatRequest"]]] = None

    @classmethod
    def from_settings(cls, messages: list[dict], gen, **kwargs) -> "ChatRequest":
        """A request carrying the run's GenerationSettings `gen` (fields left None are not sent)."""
        return cls(messages, max_tokens=gen.max_new_tokens, temperature=gen.temperature, top_p=gen.top_p,
                   seed=gen.seed, stop=tuple(gen.stop), **kwargs)

    def images(self) -> list[ImageRef]:
        return [p["ref"] for m in self.messages if isinstance(m["content"], list)
                for p in m["content"] if p.get("type") == "image"]
