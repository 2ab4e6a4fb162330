"""Images: the missing-image folder lookup and the check that every image decodes."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

from ..errors import UserError
from ..protocol.problem import ImageRef, Problem

_UNSAFE = re.compile(r'[\\/*?:"<>|]')
_TRAVERSAL = re.compile(r"(^|[\\/])\.\.([\\/]|$)")


def sanitized_name(url: str) -> str:
    """The original's file name for a URL: the part after the last '/', minus `\\ / * ? : " < > |` (spec §1.4)."""
    return _UNSAFE.sub("", url.split("/")[-1])


def missing_image_path(problem_id: str, url: str | None, image_dir: Path) -> Path | None:
    """Where a missing image would lie in `image_dir`, or None when the URL gives no usable name.

    Raises UserError when the URL tries to leave the folder (`..` segments), so a crafted dataset
    can never make us read outside `image_dir`.
    """
    if not url:
        return None
    for form in (url, unquote(url)):
        if _TRAVERSAL.search(form):
            raise UserError(f"problem {problem_id}: image_url {url!r} tries to leave the missing-images folder")
    name = sanitized_name(url)
    if name in ("", ".", ".."):
        return None
    path = (image_dir / name).resolve()
    if path.parent != image_dir.resolve():
        raise UserError(f"problem {problem_id}: image_url {url!r} does not name a file inside {image_dir}")
    return path


def recover(problem_id: str, url: str | None, image_dir: Path) -> ImageRef | None:
    path = missing_image_path(problem_id, url, image_dir)
    if path is None or not path.is_file():
        return None
    return ImageRef(path.read_bytes(), name=path.name)


def verify_images(problems: list[Problem]) -> None:
    """Decode every image once; a corrupt one stops the run before anything is written."""
    from PIL import Image, UnidentifiedImageError
    import io

    for problem in problems:
        for row in problem.rows:
            if row.image is None:
                continue
            try:
                with Image.open(io.BytesIO(row.image.data)) as img:
                    img.verify()
            except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
                raise UserError(
                    f"problem {problem.problem_id}: image of row order={row.order} cannot be decoded ({exc})"
                ) from None
