"""The provider-neutral chat request a family hands to an API backend, and its images as the API scripts encoded them.

Messages are OpenAI-shaped; an image is the part `{"type": "image", "ref": ImageRef}` each backend encodes itself.
A request beyond a provider's limit is not sent (`TooLarge`).
"""

from __future__ import annotations

import base64
import io
from dataclasses import dataclass, field
from typing import Callable, Optional

from ...errors import MissingDependency
from ...protocol.problem import ImageRef


class TooLarge(Exception):
    """The request exceeds a documented provider limit even after downscaling; it is not sent."""


def import_sdk(name: str, why: str):
    try:
        return __import__(name)
    except ImportError:
        raise MissingDependency(name, extra="api", why=why) from None


def image_part(ref: ImageRef) -> dict:
    return {"type": "image", "ref": ref}


def sent_content(content, images: dict[int, Encoded], image: Callable[[Encoded], dict]):
    """A message's content as a backend sends it: each image part replaced by `image(its encoding)`."""
    if not isinstance(content, list):
        return content
    return [image(images[id(p["ref"])]) if p.get("type") == "image" else p for p in content]


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

    def sampling(self, max_tokens_key: str) -> dict:
        """The generation fields that are set, in the order the scripts sent them (`max_tokens` as named)."""
        out = {k: v for k, v in (("temperature", self.temperature), (max_tokens_key, self.max_tokens),
                                 ("top_p", self.top_p), ("seed", self.seed)) if v is not None}
        if self.stop:
            out["stop"] = list(self.stop)
        return out

    def images(self) -> list[ImageRef]:
        return [p["ref"] for m in self.messages if isinstance(m["content"], list)
                for p in m["content"] if p.get("type") == "image"]


@dataclass(frozen=True)
class Encoded:
    b64: str
    media_type: str
    size: tuple[int, int]  # sent size (w, h)
    original: tuple[int, int]

    @property
    def downscaled(self) -> bool:
        return self.size != self.original


def encode_png(ref: ImageRef, max_side: int | None = None) -> Encoded:
    """The API scripts' encoding (spec §3.12): RGB unless RGB/RGBA, PNG, base64; `max_side` (corrected protocol
    only) shrinks the longer side, keeping aspect."""
    from PIL import Image

    img = ref.load()
    if img.mode not in ("RGB", "RGBA"):
        img = img.convert("RGB")
    original = img.size
    if max_side and max(img.size) > max_side:
        scale = max_side / max(img.size)
        img = img.resize((max(1, round(img.width * scale)), max(1, round(img.height * scale))), Image.LANCZOS)
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return Encoded(base64.b64encode(buf.getvalue()).decode("ascii"), "image/png", img.size, original)
