"""A fixed tiny problem set for the token and pixel references (pure PIL: imports neither smmile nor transformers).

`record.py` runs the original scripts' code path on these inputs with the paper's pinned transformers versions;
the tests run ours on the same inputs and compare. Images cover every mode SMMILE's hub images come in (RGB, L,
RGBA, P with a transparent index, LA), a JPEG whose EXIF orientation tag says "rotate 90° clockwise", and an
image with a side under 28 pixels (which transformers 4.51's Qwen2-VL image processor refused).
"""

from __future__ import annotations

import io

QUESTION = "What color can be seen in the abnormal lesion?"
MODES = ("rgb", "l", "rgba", "p", "la", "exif", "small")  # image names; "small" is RGB with a side under 28 px
# ICL problem: four examples then the query, each image in another mode (LA only 0-shot: LLaVA-Med cannot pad it)
ICL_ROWS = (("rgb", "Red."), ("l", "Blue."), ("rgba", "Red."), ("p", "Black."), ("exif", "Red."))


def _gradient(w: int, h: int):
    from PIL import Image

    img = Image.new("RGB", (w, h))
    img.putdata([((x * 251) // w, (y * 241) // h, ((x + y) * 97) % 256) for y in range(h) for x in range(w)])
    return img


def _encode(img, fmt: str = "PNG", **kw) -> bytes:
    buf = io.BytesIO()
    img.save(buf, format=fmt, **kw)
    return buf.getvalue()


def encoded(name: str) -> bytes:
    """The image as a dataset would store it (encoded bytes)."""
    from PIL import Image

    if name == "rgb":
        return _encode(_gradient(64, 48))
    if name == "l":
        return _encode(_gradient(48, 75).convert("L"))
    if name == "rgba":
        img = _gradient(70, 44).convert("RGBA")
        img.putalpha(Image.linear_gradient("L").resize((70, 44)))  # alpha 0 at the top to 255 at the bottom
        return _encode(img)
    if name == "p":
        img = _gradient(52, 32).quantize(colors=16)
        return _encode(img, transparency=0)
    if name == "la":
        img = _gradient(42, 64).convert("L")
        alpha = Image.linear_gradient("L").rotate(90).resize((42, 64))
        return _encode(Image.merge("LA", (img, alpha)))
    if name == "small":
        return _encode(_gradient(40, 20))
    if name == "exif":  # stored 64x40, shown 40x64 once orientation 6 is applied
        exif = Image.Exif()
        exif[0x0112] = 6
        return _encode(_gradient(64, 40), "JPEG", quality=95, exif=exif.tobytes())
    raise KeyError(name)


def decoded(name: str):
    """What `datasets`' Image feature hands the original scripts (datasets 3.5.1 and 5.x): the file opened and
    loaded, then `ImageOps.exif_transpose` when an orientation tag is present; the mode is left as stored."""
    from PIL import Image, ImageOps

    img = Image.open(io.BytesIO(encoded(name)))
    img.load()
    if img.getexif().get(0x0112) is not None:
        img = ImageOps.exif_transpose(img)
    return img
