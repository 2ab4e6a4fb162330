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
    """Decode every image once; a corrupt one, or one PIL refuses as a decompression bomb (more pixels than
    ``PIL.Image.MAX_IMAGE_PIXELS`` allows), stops the run before anything is written or a model loads: an
    input error (exit 2) naming the problem and the row, like a missing column, rather than a problem
    counted as failed (a rerun would fail it again; the dataset has to change). PIL's warning for an image
    between one and two times the limit stays a warning unless warnings are errors (``-W error``)."""
    from PIL import Image, UnidentifiedImageError
    import io

    for problem in problems:
        for position, row in enumerate(problem.rows):
            if row.image is None:
                continue
            where = (f"problem {problem.problem_id}, row order {row.order} "
                     f"({'the query' if position == len(problem.rows) - 1 else f'ICL example {position + 1}'})")
            try:
                with Image.open(io.BytesIO(row.image.data)) as img:
                    img.verify()
            except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
                raise UserError(f"{where}: the image is too large to decode safely ({_first_line(exc)}); replace "
                                "it with a smaller copy in the dataset") from None
            except UnidentifiedImageError:
                raise UserError(f"{where}: the image cell holds {len(row.image.data)} bytes that are not an image PIL "
                                f"can read (starting {row.image.data[:16]!r}); fix that row of the dataset") from None
            except (OSError, SyntaxError, ValueError) as exc:
                raise UserError(f"{where}: the image cannot be decoded ({_first_line(exc)}); fix that row of the "
                                "dataset") from None


def _first_line(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return re.sub(r"<_io\.BytesIO object at 0x[0-9a-f]+>", "the image", text)
