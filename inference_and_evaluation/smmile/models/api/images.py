"""Image encoding for the API scripts (spec §3.12): RGB unless RGB/RGBA, PNG, base64; optional downscale."""

from __future__ import annotations

import base64
import io
from dataclasses import dataclass

from ...protocol.problem import ImageRef


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
    """The original's encoding; `max_side` (corrected protocol only) shrinks the longer side, keeping aspect."""
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
