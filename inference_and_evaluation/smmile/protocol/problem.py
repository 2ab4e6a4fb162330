"""The canonical problem: one query row plus its ordered in-context examples."""

from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

ORIENTATION = 0x0112  # EXIF tag


@dataclass(frozen=True)
class ImageRef:
    """An image as stored in the dataset (encoded bytes), decoded on demand: resumed runs never decode finished
    problems, and SMMILE++'s permutations share one copy of each image."""

    data: bytes
    name: str = ""

    def load(self):
        """The image as `datasets`' Image feature gave it to the original scripts: turned upright when an EXIF
        orientation tag is present; mode unchanged."""
        from PIL import Image, ImageOps

        img = Image.open(io.BytesIO(self.data))
        img.load()
        if img.getexif().get(ORIENTATION) is not None:
            img = ImageOps.exif_transpose(img)
        return img

    @cached_property
    def digest(self) -> bytes:
        """sha256 of the encoded bytes, computed once."""
        return hashlib.sha256(self.data).digest()

    @property
    def size(self) -> tuple[int, int]:
        """(width, height) as `load()` returns it (EXIF orientations 5-8 swap the stored sides), without decoding."""
        from PIL import Image

        with Image.open(io.BytesIO(self.data)) as img:
            w, h = img.size
            return (h, w) if img.getexif().get(ORIENTATION) in (5, 6, 7, 8) else (w, h)


@dataclass(frozen=True)
class Row:
    problem_id: str
    order: Any
    question: str
    answer: str
    image: ImageRef | None
    image_url: str | None = None
    fields: dict = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class Problem:
    """All rows sharing a problem_id, sorted by `order` (stable); the query is the last row."""

    problem_id: str
    rows: tuple[Row, ...]

    @property
    def query(self) -> Row:
        return self.rows[-1]

    @property
    def examples(self) -> tuple[Row, ...]:
        return self.rows[:-1]

    def images(self, mode: str) -> list[ImageRef]:
        """Images a model sees, in order: only the query's for 0-shot, every row's for ICL."""
        return [r.image for r in (self.rows if mode == "ICL" else (self.query,))]

    def answers(self) -> list[str]:
        return [r.answer for r in self.rows]
