"""What the original scripts' code path did to an image before its model saw it (docs/images.md has the table).

The paper's transformers (4.46.3, 4.51.0) made images RGB with `convert("RGB")` (alpha dropped); transformers 5
composites transparency onto white (as Mllama's converter and qwen-vl-utils did). `--protocol paper` hands each
processor what the pinned path produced; `--protocol corrected` composites on white for every family.
"""

from __future__ import annotations

import math

# how a family's pinned processor turned non-RGB images into RGB
DROP_ALPHA = "drop-alpha"  # transformers <= 4.51 convert_to_rgb / load_image: convert("RGB")
WHITE = "white"  # composited on white: Mllama's converter in 4.51, transformers 5, `--protocol corrected`


def drop_alpha(img):
    """convert("RGB") as transformers <= 4.51 did; the transparency note PIL keeps is dropped, as 4.x ignored it."""
    out = img if img.mode == "RGB" else img.convert("RGB")
    if out.info.get("transparency") is not None:
        out = out.copy()
        out.info.pop("transparency", None)
    return out


def on_white(img):
    """Transparent pixels composited onto white (transformers 5's convert_to_rgb); other images unchanged."""
    from PIL import Image

    if "A" not in img.getbands() and img.info.get("transparency") is None:
        return img
    rgba = img.convert("RGBA")
    return Image.alpha_composite(Image.new("RGBA", rgba.size, (255, 255, 255, 255)), rgba).convert("RGB")


def drop_alpha_step(_index: int, img):
    return drop_alpha(img)


def on_white_step(_index: int, img):
    return on_white(img)


def rgb_first_step(_index: int, img):
    """A script's own convert("RGB") before anything else (inference_llavamed_mcqa.py)."""
    return img.convert("RGB")


def qwen_4_51_step(_index: int, img):
    """Qwen2.5-VL under `paper`: transformers 4.51's Qwen2-VL image processor refused an image with a side under
    28 px (transformers 5 scales it up), with this message, which became the problem's error row."""
    if img.width < 28 or img.height < 28:
        raise ValueError(f"height:{img.height} and width:{img.width} must be larger than factor:28")
    return drop_alpha(img)


def smart_resize(height: int, width: int, factor: int = 28, min_pixels: int = 4 * 28 * 28,
                 max_pixels: int = 16384 * 28 * 28) -> tuple[int, int]:
    """qwen-vl-utils 0.0.11: sides to multiples of `factor`, pixel count within [min_pixels, max_pixels]."""
    if max(height, width) / min(height, width) > 200:
        ratio = max(height, width) / min(height, width)
        raise ValueError(f"absolute aspect ratio must be smaller than 200, got {ratio}")
    h_bar = max(factor, round(height / factor) * factor)
    w_bar = max(factor, round(width / factor) * factor)
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = math.floor(height / beta / factor) * factor
        w_bar = math.floor(width / beta / factor) * factor
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def qwen_vl_utils_rgb(img):
    """qwen-vl-utils 0.0.11 `to_rgb`: an RGBA image pasted onto white through its alpha, anything else
    convert("RGB") (LA and transparent palette images lose their transparency)."""
    from PIL import Image

    if img.mode != "RGBA":
        return drop_alpha(img)
    out = Image.new("RGB", img.size, (255, 255, 255))
    out.paste(img, mask=img.split()[3])
    return out


def _fetch(img):
    h, w = smart_resize(img.height, img.width)
    return img.resize((w, h))


def qwen_vl_utils_fetch(_index: int, img):
    """qwen-vl-utils' `fetch_image` on a PIL image: `to_rgb`, then resized to the smart size (PIL's default filter)."""
    return _fetch(qwen_vl_utils_rgb(img))


def qwen_vl_utils_fetch_on_white(_index: int, img):
    """`--protocol corrected`: the same, with every kind of transparency composited on white first."""
    return _fetch(on_white(img).convert("RGB"))
