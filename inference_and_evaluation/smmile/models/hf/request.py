"""The payload a local family hands to the HF / vLLM backends (no heavy imports here)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from ...protocol.outputs import ERRORS_PLAIN
from ...protocol.problem import ImageRef

PAD_FROM_TOKENIZER = "<tokenizer pad id>"  # generation kwarg placeholder resolved by the backend


@dataclass
class HFRequest:
    """One problem's model input, as the original script built it."""

    render: str  # "chat": chat template -> text, then processor(text, images); "chat_tokenize": template
    #              tokenizes with images embedded (MedGemma); "llavamed": `prompt` via tokenizer_image_token
    images: list[ImageRef]  # images the model sees, in prompt order
    messages: list[dict] | None = None  # chat messages with {"type": "image"} placeholders
    prompt: str | None = None  # pre-rendered prompt (LLaVA-Med)
    prep: Callable[[int, Any], Any] | None = None  # (image index, PIL image) -> PIL image, before the processor
    gen: dict = field(default_factory=dict)  # generate() keyword arguments
    decode: dict = field(default_factory=dict)  # extra decode() keyword arguments
    processor_kwargs: dict = field(default_factory=dict)  # extra processor / apply_chat_template kwargs
    nested_images: bool = False  # images as one list per conversation (Mllama needs it for batches); else flat
    single_bos: bool = False  # a template that starts with BOS gets no second one from the tokenizer
    errors: dict = field(default_factory=lambda: dict(ERRORS_PLAIN))

    def load_images(self) -> list:
        return [self.prep(i, ref.load()) if self.prep else ref.load() for i, ref in enumerate(self.images)]

    def size_hint(self) -> int:
        """Cheap prompt-length estimate for sorting a batch window (text chars + per-image weight)."""
        text = self.prompt or "".join(str(m.get("content")) for m in self.messages or [])
        return len(text) + 1000 * len(self.images)
